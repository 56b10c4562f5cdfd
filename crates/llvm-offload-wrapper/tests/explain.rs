//! Opt-in explanations (`OFFLOAD_TOOLS_EXPLAIN=1`): LLVM's bare OS error
//! for the output, then the file it is about.

use std::process::Command;

const TOOL: &str = env!("CARGO_BIN_EXE_llvm-offload-wrapper");

#[test]
fn output_errors_are_followed_by_the_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("img"), b"image").unwrap();
    let llvm = format!("{TOOL}: error: No such file or directory\n");
    for (args, note) in [
        (
            &["--kind=openmp", "img"][..],
            "no output file was given: -o <file> is required",
        ),
        (
            &["--kind=openmp", "img", "-o", "no-dir/w.bc"][..],
            "the file is 'no-dir/w.bc' (the -o output)",
        ),
    ] {
        let mut texts = Vec::new();
        for explain in [false, true] {
            let mut cmd = Command::new(TOOL);
            cmd.args(args)
                .current_dir(d.path())
                .env_remove("OFFLOAD_TOOLS_EXPLAIN");
            if explain {
                cmd.env("OFFLOAD_TOOLS_EXPLAIN", "1");
            }
            let o = cmd.output().unwrap();
            assert_eq!(o.status.code(), Some(1));
            assert!(o.stdout.is_empty());
            texts.push(String::from_utf8_lossy(&o.stderr).into_owned());
        }
        assert_eq!(texts[0], llvm, "{args:?}");
        assert_eq!(
            texts[1],
            format!("{llvm}{TOOL}: note: {note}\n"),
            "{args:?}"
        );
    }
}
