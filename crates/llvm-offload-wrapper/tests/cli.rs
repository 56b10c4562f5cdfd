//! Command-line behaviour of our llvm-offload-wrapper that needs no LLVM:
//! messages, exit codes, and that failures leave no output behind. (The
//! differential suite, `cargo xtask conformance wrapper`, compares all of
//! this with LLVM 22's tool.)

use std::path::Path;
use std::process::{Command, Output};

fn tool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_llvm-offload-wrapper"))
}

fn run(dir: &Path, args: &[&str]) -> Output {
    tool().current_dir(dir).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn packaged(entry_at: u64, image_at: u64, image_size: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    v[..4].copy_from_slice(&[0x10, 0xFF, 0x10, 0xAD]);
    v[4] = 1;
    v[16..24].copy_from_slice(&entry_at.to_le_bytes());
    let e = entry_at as usize;
    if e + 40 <= len {
        v[e + 24..e + 32].copy_from_slice(&image_at.to_le_bytes());
        v[e + 32..e + 40].copy_from_slice(&image_size.to_le_bytes());
    }
    v
}

#[test]
fn writes_bitcode_and_dash_is_a_file_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("img"), b"DEVICE").unwrap();
    let o = run(d.path(), &["--kind=openmp", "img", "-o", "out.bc"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bc = std::fs::read(d.path().join("out.bc")).unwrap();
    assert_eq!(&bc[..4], b"BC\xC0\xDE");
    assert!(bc.windows(6).any(|w| w == b"DEVICE"));
    // `-o -` is a file literally named "-", as in LLVM 22.
    let o = run(d.path(), &["--kind", "hip", "-o", "-", "img"]);
    assert!(o.status.success());
    assert!(o.stdout.is_empty());
    assert!(d.path().join("-").exists());
}

#[test]
fn failures_name_the_problem_and_leave_no_output() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("a"), b"A").unwrap();
    std::fs::write(p.join("b"), b"B").unwrap();
    std::fs::write(p.join("out.bc"), b"keep me").unwrap();
    let argv0 = env!("CARGO_BIN_EXE_llvm-offload-wrapper");
    for (args, msg) in [
        (
            &["--kind=cuda", "a", "b", "-o", "out.bc"][..],
            "error: CUDA / HIP offloading uses a single fatbinary or offload bundle\n",
        ),
        (
            &["--kind=openmp", "a", "missing", "-o", "out.bc"][..],
            "error: 'missing': No such file or directory\n",
        ),
        (
            &["--kind=openmp", "a"][..],
            "error: No such file or directory\n",
        ),
        (
            &["--kind=openmp", "a", "-o", "no/dir/x.bc"][..],
            "error: No such file or directory\n",
        ),
        (
            &["--kind=openmp", ".", "-o", "out.bc"][..],
            "error: '.': Is a directory\n",
        ),
    ] {
        let o = run(p, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), format!("{argv0}: {msg}"), "{args:?}");
        assert_eq!(std::fs::read(p.join("out.bc")).unwrap(), b"keep me");
    }
    let names: Vec<_> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "no stray files: {names:?}");
}

#[test]
fn truncated_packaged_inputs_are_errors() {
    // LLVM 22 reads the entry and image offsets without bounds checks and
    // embeds pointers outside the image; we stop with an error instead.
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("out.bc"), b"keep me").unwrap();
    for (bytes, what) in [
        (
            vec![0x10, 0xFF, 0x10, 0xAD],
            "the header (32 bytes at offset 0)",
        ),
        (
            packaged(1000, 0, 0, 64),
            "the first entry (40 bytes at offset 1000)",
        ),
        (
            packaged(32, 100, 100, 112),
            "the device image (100 bytes at offset 100)",
        ),
    ] {
        std::fs::write(p.join("bad.ob"), &bytes).unwrap();
        let o = run(p, &["--kind=openmp", "bad.ob", "-o", "out.bc"]);
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(&o);
        assert!(
            e.ends_with(&format!(
                ": error: 'bad.ob': truncated offload binary: {what} extends past the end of the file ({} bytes)\n",
                bytes.len()
            )),
            "{e}"
        );
        assert_eq!(std::fs::read(p.join("out.bc")).unwrap(), b"keep me");
    }
    // CUDA and HIP embed packaged inputs raw and never look inside.
    let o = run(p, &["--kind=cuda", "bad.ob", "-o", "out.bc"]);
    assert!(o.status.success());
}

#[test]
fn help_version_and_option_errors() {
    let d = tempfile::tempdir().unwrap();
    let o = run(d.path(), &["--help"]);
    assert!(o.status.success());
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(help.starts_with(
        "OVERVIEW: Generate runtime registration code for a device binary image\n\n\
         USAGE: llvm-offload-wrapper [options] Wrap input from <file>\n"
    ));
    assert!(help.contains("  --kind=<value>    - Wrap for offload kind:\n    =openmp "));
    let o = run(d.path(), &["--version"]);
    assert_eq!(
        o.stdout,
        b"Debian LLVM version 22.1.8\n  Optimized build.\n"
    );
    // -h is acted on only after a successful parse; then it is --help-list.
    let o = run(d.path(), &["-h"]);
    assert_eq!(o.status.code(), Some(1));
    std::fs::write(d.path().join("a"), b"A").unwrap();
    let o = run(d.path(), &["--kind=openmp", "-h", "a"]);
    assert!(o.status.success());
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("OPTIONS:\n  --help            - Display available options"));
    assert!(!d.path().join("-").exists());
    // A bad --kind value counts as given: only the value is reported.
    let o = run(d.path(), &["--kind=OpenMP", "a"]);
    assert_eq!(
        stderr(&o),
        "llvm-offload-wrapper: for the --kind option: Cannot find option named 'OpenMP'!\n"
    );
    // A failed one-letter group: the suggestion is made for the remainder.
    let o = run(d.path(), &["--kind=openmp", "a", "--hdlthldln"]);
    assert!(stderr(&o).ends_with("llvm-offload-wrapper: Did you mean '--help'?\n"));
}
