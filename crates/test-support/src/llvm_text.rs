//! Drop-in texts: cases where LLVM 22 fails cleanly, so our tool must print
//! exactly what it prints. Each case is run against the installed LLVM 22
//! tool when there is one, and otherwise checked against the text recorded
//! from it (`tests/fixtures/drop_in_texts/<case>.expected`: `exit <N>`, a
//! newline, then stderr byte for byte, the random part of temporary names
//! masked; stdout is empty). With `RECORD_LLVM_TEXT=1` and LLVM 22
//! installed, the recording is rewritten.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One case: the inputs `setup` writes into an empty directory, the
/// command line, and the recording's name.
pub struct Case<'a> {
    /// Our binary (`env!("CARGO_BIN_EXE_…")`).
    pub ours: &'a str,
    /// LLVM 22's binary, looked up in `PATH`.
    pub llvm: &'a str,
    /// `argv[0]` for both, so that the messages name the same tool.
    pub arg0: &'a str,
    /// The arguments.
    pub args: &'a [&'a str],
    /// The recording's name under `tests/fixtures/drop_in_texts/`.
    pub recorded: &'a str,
}

fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/drop_in_texts")
        .join(format!("{name}.expected"))
}

fn as_recorded(o: &Output) -> Vec<u8> {
    let mut v = format!("exit {}\n", o.status.code().unwrap_or(-1)).into_bytes();
    v.extend_from_slice(&mask_temp_names(&o.stderr));
    v
}

/// `text` with the random part of the bundler's temporary names
/// (`clang-offload-bundler-XXXXXX.tmp`, which llvm-objcopy's messages can
/// name) made `XXXXXX`.
pub fn mask_temp_names(text: &[u8]) -> Vec<u8> {
    const STEM: &[u8] = b"clang-offload-bundler-";
    let mut out = text.to_vec();
    let mut at = 0;
    while let Some(i) = out[at..].windows(STEM.len()).position(|w| w == STEM) {
        let random = at + i + STEM.len();
        let name = out.get(random..random + 10);
        if name.is_some_and(|n| n[..6].iter().all(u8::is_ascii_alphanumeric) && &n[6..] == b".tmp")
        {
            out[random..random + 6].copy_from_slice(b"XXXXXX");
        }
        at = random;
    }
    out
}

fn run(exe: &str, case: &Case<'_>, setup: &dyn Fn(&Path), explain: bool) -> (Output, Vec<String>) {
    let d = tempfile::tempdir().unwrap();
    setup(d.path());
    let mut cmd = crate::tool_explained(exe, d.path(), explain);
    let out = std::os::unix::process::CommandExt::arg0(&mut cmd, case.arg0)
        .args(case.args)
        .output()
        .unwrap();
    (out, crate::file_names(d.path()))
}

/// Runs `case`: our stdout, stderr and exit status must be LLVM 22's (the
/// installed tool's, else the recording's). Returns our output with
/// explanations on, for the caller to check our own sentence; its status
/// and stdout are checked to be the same as without.
pub fn check(case: &Case<'_>, setup: &dyn Fn(&Path)) -> Output {
    let (ours, our_files) = run(case.ours, case, setup, false);
    let path = recording(case.recorded);
    let installed = Command::new(case.llvm).arg("--version").output().is_ok();
    let expected = if installed {
        let (llvm, _) = run(case.llvm, case, setup, false);
        assert!(
            llvm.stdout.is_empty(),
            "{}: LLVM 22 printed to stdout",
            case.recorded
        );
        let text = as_recorded(&llvm);
        if std::env::var_os("RECORD_LLVM_TEXT").is_some() {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, &text).unwrap();
        }
        assert_eq!(
            String::from_utf8_lossy(&fs::read(&path).unwrap()),
            String::from_utf8_lossy(&text),
            "{}: the recording is not what {} prints",
            case.recorded,
            case.llvm
        );
        text
    } else {
        println!(
            "{} is not installed: checked against the recording",
            case.llvm
        );
        fs::read(&path).unwrap()
    };
    assert!(ours.stdout.is_empty(), "{}: stdout", case.recorded);
    assert_eq!(
        String::from_utf8_lossy(&as_recorded(&ours)),
        String::from_utf8_lossy(&expected),
        "{}",
        case.recorded
    );
    assert_eq!(as_recorded(&ours), expected, "{}: bytes", case.recorded);
    let (explained, files) = run(case.ours, case, setup, true);
    assert_eq!(explained.status.code(), ours.status.code());
    assert_eq!(explained.stdout, ours.stdout);
    assert!(
        mask_temp_names(&explained.stderr).starts_with(&mask_temp_names(&ours.stderr)),
        "{}: explanations only add lines",
        case.recorded
    );
    assert_eq!(
        files, our_files,
        "{}: the same files either way",
        case.recorded
    );
    explained
}
