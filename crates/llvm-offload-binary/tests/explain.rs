//! Opt-in explanations (`OFFLOAD_TOOLS_EXPLAIN=1`, docs/compat.md): LLVM's
//! text first, unchanged, then the explanation; without the variable,
//! exactly LLVM's text.

use std::path::Path;
use std::process::Output;

const TOOL: &str = env!("CARGO_BIN_EXE_llvm-offload-binary");

fn run(dir: &Path, explain: bool, args: &[&str]) -> Output {
    let cmd = &mut test_support::tool_explained(TOOL, dir, explain);
    cmd.args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `args` both ways; returns (plain stderr, explained stderr) after
/// checking that status and stdout agree.
fn both(dir: &Path, args: &[&str]) -> (String, String, Option<i32>) {
    let plain = run(dir, false, args);
    let explained = run(dir, true, args);
    assert_eq!(plain.status.code(), explained.status.code());
    assert_eq!(plain.stdout, explained.stdout);
    (stderr(&plain), stderr(&explained), plain.status.code())
}

fn package(dir: &Path) {
    std::fs::write(dir.join("a.o"), b"image a").unwrap();
    std::fs::write(dir.join("b.o"), b"image b").unwrap();
    let o = run(
        dir,
        false,
        &[
            "-o",
            "pkg.bin",
            "--image=file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=hip",
            "--image=file=b.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn an_image_filter_that_matches_nothing_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    package(d.path());
    // A typo'd key: LLVM extracts nothing and says nothing.
    let (plain, explained, status) = both(d.path(), &["pkg.bin", "--image=arhc=gfx90a"]);
    assert_eq!(status, Some(0));
    assert_eq!(plain, "");
    assert_eq!(
        explained,
        format!(
            "{TOOL}: warning: --image=arhc=gfx90a matches no image of 'pkg.bin', so nothing is \
             extracted for it; a filter selects the images whose keys all equal its values \
             ('file' names the output), and the images are: \
             [kind=hip,arch=gfx906,triple=amdgcn-amd-amdhsa] \
             [kind=hip,arch=gfx90a,triple=amdgcn-amd-amdhsa]\n"
        )
    );
    // A filter that matches, and `--image=` (every image): no warning.
    let o = run(
        d.path(),
        true,
        &["pkg.bin", "--image=arch=gfx90a", "--image="],
    );
    assert_eq!(stderr(&o), "");
    assert!(d.path().join("pkg-amdgcn-amd-amdhsa-gfx90a.0.o").exists());
    assert!(d.path().join("pkg-amdgcn-amd-amdhsa-gfx906.0.o").exists());
}

#[test]
fn os_errors_that_name_no_file_are_followed_by_the_file() {
    let d = tempfile::tempdir().unwrap();
    package(d.path());
    let llvm = format!("{TOOL}: error: No such file or directory\n");
    for (args, note) in [
        (
            &["-o", "out.bin", "--image=file=missing.o,triple=x"][..],
            "the file is 'missing.o' (an --image input)",
        ),
        (
            &["-o", "no-dir/out.bin", "--image=file=a.o,triple=x"][..],
            "the file is 'no-dir/out.bin' (the -o output)",
        ),
        (
            &["pkg.bin", "--image=arch=gfx90a,file=no-dir/x.o"][..],
            "the file is 'no-dir/x.o' (an extracted image)",
        ),
    ] {
        let (plain, explained, status) = both(d.path(), args);
        assert_eq!(status, Some(1));
        assert_eq!(plain, llvm, "{args:?}");
        assert_eq!(
            explained,
            format!("{llvm}{TOOL}: note: {note}\n"),
            "{args:?}"
        );
    }
    assert!(!d.path().join("out.bin").exists());
}
