//! Inputs found by `cargo xtask mutate`, kept with clang-offload-bundler-22's
//! outcome on them (`tests/fixtures/object_bundle/mutate/cases.txt`): our
//! bundler must give the same exit status, error text and output bytes.
//! Where LLVM 22 is installed, it is run too, so a recorded outcome that is
//! not LLVM's fails the test.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/object_bundle/mutate")
}

struct Case {
    file: String,
    args: String,
    exit: i32,
    stderr: Option<String>,
    outputs: Vec<String>,
}

fn cases() -> Vec<Case> {
    let text = fs::read_to_string(dir().join("cases.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split(" | ").map(str::trim).collect();
            assert_eq!(f.len(), 6, "malformed case line: {l}");
            let dash = |s: &str| (s != "-").then(|| s.to_string());
            Case {
                file: f[0].to_string(),
                args: f[1].to_string(),
                exit: f[2].parse().unwrap(),
                stderr: dash(f[3]),
                outputs: dash(f[4])
                    .map(|s| s.split_whitespace().map(String::from).collect())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Runs `exe` (as `clang-offload-bundler`) on a case in a fresh directory;
/// returns its status, its stderr and the outputs it left.
fn run(exe: &Path, case: &Case) -> (i32, String, Vec<Option<Vec<u8>>>) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    fs::copy(dir().join(&case.file), &input).unwrap();
    let outs = [tmp.path().join("o1"), tmp.path().join("o2")];
    let args: Vec<String> = case
        .args
        .split_whitespace()
        .map(|a| {
            a.replace("{in}", input.to_str().unwrap())
                .replace("{o1}", outs[0].to_str().unwrap())
                .replace("{o2}", outs[1].to_str().unwrap())
        })
        .collect();
    let mut cmd = Command::new(exe);
    std::os::unix::process::CommandExt::arg0(&mut cmd, "clang-offload-bundler");
    let o = cmd.args(&args).current_dir(tmp.path()).output().unwrap();
    let files = outs.iter().map(|p| fs::read(p).ok()).collect();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        files,
    )
}

fn check(exe: &Path, case: &Case, who: &str) {
    let (status, stderr, files) = run(exe, case);
    let name = &case.file;
    assert_eq!(
        status, case.exit,
        "{who} on {name}: exit status; stderr {stderr}"
    );
    match &case.stderr {
        // Warnings are given whole, one per ` // `-separated line.
        Some(text) if text.starts_with("warning: ") => assert_eq!(
            stderr,
            format!("{}\n", text.replace(" // ", "\n")),
            "{who} on {name}: stderr"
        ),
        Some(text) => assert_eq!(
            stderr,
            format!("clang-offload-bundler: error: {text}\n"),
            "{who} on {name}: stderr"
        ),
        None => assert_eq!(stderr, "", "{who} on {name}: stderr"),
    }
    for (i, want) in case.outputs.iter().enumerate() {
        let want = fs::read(dir().join(want)).unwrap();
        assert!(
            files[i].as_ref() == Some(&want),
            "{who} on {name}: output {} differs from the recorded one",
            i + 1
        );
    }
    // Ours leaves nothing after an error (LLVM may leave partial outputs).
    if case.outputs.is_empty() && case.exit != 0 && who == "ours" {
        assert!(
            files.iter().all(Option::is_none),
            "{who} on {name}: an output was left behind"
        );
    }
}

const LLVM_BUNDLER: &str = "/usr/lib/llvm-22/bin/clang-offload-bundler";

/// Our bundler on a case whose outcome is ours alone (a documented
/// policy): LLVM 22's is checked by the caller.
fn check_ours(case: &Case) {
    check(
        Path::new(env!("CARGO_BIN_EXE_clang-offload-bundler")),
        case,
        "ours",
    );
}

#[test]
fn mutation_findings_match_llvm_22() {
    let ours = Path::new(env!("CARGO_BIN_EXE_clang-offload-bundler"));
    let llvm = Path::new("/usr/lib/llvm-22/bin/clang-offload-bundler");
    let cases = cases();
    assert!(cases.len() >= 4);
    for case in &cases {
        check(ours, case, "ours");
        if llvm.exists() {
            check(llvm, case, "LLVM 22");
        }
    }
}

/// A COFF section without raw data but with relocations: llvm-objcopy 22
/// writes the relocations over the file header (its data pointer is 0),
/// and clang-offload-bundler-22 exits 0 with a host object llvm-readobj-22
/// cannot open. We refuse (docs/compat.md, object bundles: no unreadable
/// host), leaving no output.
#[test]
fn coff_relocations_without_data_are_refused() {
    let case = Case {
        file: "coff-relocs-without-data.o".into(),
        args: "-unbundle -type=o -targets=hip-amdgcn-amd-amdhsa--gfx906,host-x86_64-w64-windows-gnu- -input={in} -output={o1} -output={o2}".into(),
        exit: 1,
        stderr: Some(
            "the object cannot be rewritten: the result would not be a readable object \
             (no usable section table, a layout that wraps around, or relocations of a \
             section without data, which llvm-objcopy writes over the file header)"
                .into(),
        ),
        outputs: Vec::new(),
    };
    check_ours(&case);
    let llvm = Path::new(LLVM_BUNDLER);
    let readobj = Path::new("/usr/lib/llvm-22/bin/llvm-readobj");
    if llvm.exists() && readobj.exists() {
        let (status, _, files) = run(llvm, &case);
        assert_eq!(status, 0);
        let host = files[1].as_ref().expect("LLVM 22 writes the host");
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("host.o");
        fs::write(&p, host).unwrap();
        let ok = Command::new(readobj)
            .arg("--file-headers")
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            !ok.status.success(),
            "LLVM 22's host output became readable"
        );
    }
}

/// A Control Flow Guard table (`.gfids$y`) of 5 bytes: llvm-objcopy 22
/// maps its one whole symbol index and writes the section's fifth byte
/// from beyond the 4 bytes it mapped into, so clang-offload-bundler-22
/// exits 0 with a byte from outside its buffer in the host. We refuse
/// (docs/compat.md, object bundles, policy 3), leaving no output.
#[test]
fn a_cfg_table_with_a_partial_entry_is_refused() {
    let case = Case {
        file: "coff-cfg-table-partial-entry.o".into(),
        args: "-unbundle -type=o -targets=host-x86_64-pc-windows-msvc- -input={in} -output={o1}"
            .into(),
        exit: 1,
        stderr: Some(
            "section '.gfids$y' holds symbol indexes but its size is not a multiple of 4".into(),
        ),
        outputs: Vec::new(),
    };
    check_ours(&case);
    let llvm = Path::new(LLVM_BUNDLER);
    if llvm.exists() {
        let (status, _, files) = run(llvm, &case);
        assert_eq!(status, 0);
        assert!(files[0].is_some(), "LLVM 22 writes the host");
    }
}
