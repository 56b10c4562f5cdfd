//! Command-line behaviour of our clang-offload-wrapper that needs no LLVM.
//! (`cargo xtask conformance wrapper` compares it with LLVM 14's tool, and
//! `cargo xtask e2e wrapper` runs its output.)

use std::path::Path;
use std::process::Output;

fn run(dir: &Path, args: &[&str]) -> Output {
    test_support::tool(env!("CARGO_BIN_EXE_clang-offload-wrapper"), dir)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn dash_output_is_stdout() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("img"), b"DEVICE").unwrap();
    let o = run(
        d.path(),
        &["-target", "x86_64-pc-linux-gnu", "-o", "-", "img"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&o.stdout[..4], b"BC\xC0\xDE");
    assert!(o.stdout.windows(6).any(|w| w == b"DEVICE"));
    assert!(!d.path().join("-").exists());
}

#[test]
fn offload_arch_records_are_embedded() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a"), b"A").unwrap();
    std::fs::write(d.path().join("b"), b"B").unwrap();
    let o = run(
        d.path(),
        &[
            "--target=x86_64-pc-linux-gnu",
            "--offload-arch=gfx906",
            "-o",
            "w.bc",
            "a",
            "--offload-arch=gfx90a:xnack+",
            "b",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let bc = std::fs::read(d.path().join("w.bc")).unwrap();
    for s in [
        &b"gfx906\0"[..],
        b"gfx90a:xnack+\0",
        b"__tgt_register_image_info",
    ] {
        assert!(bc.windows(s.len()).any(|w| w == s));
    }
    // Without --offload-arch the module is LLVM 14's: no image infos.
    let o = run(
        d.path(),
        &["--target=x86_64-pc-linux-gnu", "-o", "p.bc", "a"],
    );
    assert!(o.status.success());
    let bc = std::fs::read(d.path().join("p.bc")).unwrap();
    assert!(!bc.windows(16).any(|w| w == b"__tgt_register_i"));
}

#[test]
fn errors() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("a"), b"A").unwrap();
    std::fs::write(p.join("b"), b"B").unwrap();
    std::fs::write(p.join("w.bc"), b"keep me").unwrap();
    let argv0 = env!("CARGO_BIN_EXE_clang-offload-wrapper");
    for (args, msg) in [
        (
            &["--target=foo-bar-baz", "a", "-o", "w.bc"][..],
            format!("{argv0}: error: 'foo-bar-baz': unsupported target triple\n"),
        ),
        (
            &["--target=x86_64-pc-linux-gnu", "missing", "-o", "w.bc"][..],
            format!("{argv0}: error: 'missing': No such file or directory\n"),
        ),
        (
            &["--target=x86_64-pc-linux-gnu", "a", "-o", "no/dir/w.bc"][..],
            format!("{argv0}: error: 'no/dir/w.bc': No such file or directory\n"),
        ),
        (
            &[
                "--target=x86_64-pc-linux-gnu",
                "--offload-arch=gfx906",
                "a",
                "b",
                "-o",
                "w.bc",
            ][..],
            format!(
                "{argv0}: error: 1 --offload-arch value given for 2 input images; \
                 give one per image, in input order\n"
            ),
        ),
        (
            &["--target=x86_64", "--target=x86_64", "a", "-o", "w.bc"][..],
            "clang-offload-wrapper: for the --target option: must occur exactly one time!\n"
                .to_string(),
        ),
        (
            &["a"][..],
            "clang-offload-wrapper: for the -o option: must be specified at least once!\n\
             clang-offload-wrapper: for the --target option: must be specified at least once!\n"
                .to_string(),
        ),
    ] {
        let o = run(p, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), msg, "{args:?}");
        assert_eq!(std::fs::read(p.join("w.bc")).unwrap(), b"keep me");
    }
}

#[test]
fn notes_warn_for_non_elf_images() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a"), b"not an ELF file").unwrap();
    let o = run(
        d.path(),
        &[
            "--target=x86_64-pc-linux-gnu",
            "--add-omp-offload-notes",
            "a",
            "-o",
            "w.bc",
        ],
    );
    assert!(o.status.success());
    let e = stderr(&o);
    // Either llvm-objcopy is missing (one warning) or the image is refused.
    assert!(
        e.ends_with(": warning: a is not an ELF image, so notes cannot be added to it.\n")
            || e.ends_with(
                ": warning: cannot find llvm-objcopy[.exe] in PATH; ELF notes cannot be added.\n"
            ),
        "{e}"
    );
}

#[test]
fn version_text() {
    let d = tempfile::tempdir().unwrap();
    let o = run(d.path(), &["--version"]);
    assert_eq!(o.stdout, b"Debian clang-offload-wrapper version 14.0.6\n");
}
