//! Opt-in explanations (`OFFLOAD_TOOLS_EXPLAIN=1`, docs/compat.md): each
//! case prints LLVM's text unchanged and then the explanation; without the
//! variable the output is exactly LLVM's (the fixtures and the conformance
//! suite check that as a whole; here the same command is run both ways).

use std::path::Path;
use std::process::Output;

const TOOL: &str = env!("CARGO_BIN_EXE_clang-offload-bundler");

fn run(dir: &Path, explain: bool, args: &[&str]) -> Output {
    let cmd = &mut test_support::tool_explained(TOOL, dir, explain);
    cmd.args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The same command with and without explanations: same status and stdout,
/// and the explained stderr is the plain one plus `extra` lines.
fn both(dir: &Path, args: &[&str]) -> (Output, Output) {
    let plain = run(dir, false, args);
    let explained = run(dir, true, args);
    assert_eq!(plain.status.code(), explained.status.code());
    assert_eq!(plain.stdout, explained.stdout);
    (plain, explained)
}

fn bundle(dir: &Path, target: &str) {
    std::fs::write(dir.join("h"), b"host").unwrap();
    std::fs::write(dir.join("d"), b"device").unwrap();
    let targets = format!("-targets=host-x86_64-unknown-linux-gnu,{target}");
    let o = run(
        dir,
        false,
        &["-type=bc", &targets, "-input=h", "-input=d", "-output=b.bc"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_target_not_found_is_followed_by_what_the_bundle_holds() {
    let d = tempfile::tempdir().unwrap();
    bundle(d.path(), "hipv4-amdgcn-amd-amdhsa--gfx906");
    let args = [
        "-type=bc",
        "-unbundle",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
        "-input=b.bc",
        "-output=x",
    ];
    let (plain, explained) = both(d.path(), &args);
    let llvm = format!("{TOOL}: error: Can't find bundles for hipv4-amdgcn-amd-amdhsa--gfx90a\n");
    assert_eq!(stderr(&plain), llvm);
    let text = stderr(&explained);
    assert!(text.starts_with(&llvm), "{text}");
    assert!(
        text[llvm.len()..].starts_with(&format!(
            "{TOOL}: note: the bundle holds 'hipv4-amdgcn-amd-amdhsa--gfx906', \
             'host-x86_64-unknown-linux-gnu-'"
        )),
        "{text}"
    );
    assert!(!d.path().join("x").exists());
}

#[test]
fn a_gpu_name_lost_to_standardisation_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("h"), b"host").unwrap();
    std::fs::write(d.path().join("d"), b"device").unwrap();
    let args = [
        "-type=bc",
        "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa-gfx906",
        "-input=h",
        "-input=d",
        "-output=b.bc",
    ];
    let (plain, explained) = both(d.path(), &args);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(stderr(&plain), "");
    assert_eq!(
        stderr(&explained),
        format!(
            "{TOOL}: warning: target 'hipv4-amdgcn-amd-amdhsa-gfx906' is stored as \
             'hipv4-amdgcn-amd-amdhsa--': 'gfx906' was read as the triple's environment and \
             dropped, so the entry names no GPU; for a GPU, write \
             'hipv4-amdgcn-amd-amdhsa--gfx906' (kind-arch-vendor-os-environment-gpu, the \
             environment empty)\n"
        )
    );
    // The four-dash spelling and the host's three-part triple: no warning.
    let args = [
        "-type=bc",
        "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx906",
        "-input=h",
        "-input=d",
        "-output=c.bc",
    ];
    assert_eq!(stderr(&run(d.path(), true, &args)), "");
}

#[test]
fn listing_a_file_that_is_no_bundle_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("plain.bc"), b"just bytes, no bundle").unwrap();
    let (plain, explained) = both(d.path(), &["-list", "-type=bc", "-input=plain.bc"]);
    assert_eq!(plain.status.code(), Some(0));
    assert!(plain.stdout.is_empty());
    assert_eq!(stderr(&plain), "");
    let text = stderr(&explained);
    assert!(
        text.starts_with(&format!(
            "{TOOL}: warning: 'plain.bc' holds no bundle entries of -type=bc: it is not an \
             offload bundle of that type"
        )),
        "{text}"
    );
    // A real bundle lists its entries and warns about nothing.
    bundle(d.path(), "hipv4-amdgcn-amd-amdhsa--gfx906");
    let o = run(d.path(), true, &["-list", "-type=bc", "-input=b.bc"]);
    assert_eq!(stderr(&o), "");
    assert!(!o.stdout.is_empty());
}

#[test]
fn unbundling_two_targets_for_one_entry_says_so_in_unbundling_terms() {
    let d = tempfile::tempdir().unwrap();
    bundle(d.path(), "hip-amdgcn-amd-amdhsa--gfx906");
    for explain in [false, true] {
        let o = run(
            d.path(),
            explain,
            &[
                "-type=bc",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-unknown-gfx906",
                "-input=b.bc",
                "-output=o1",
                "-output=o2",
            ],
        );
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            stderr(&o),
            format!(
                "{TOOL}: error: targets 'hip-amdgcn-amd-amdhsa--gfx906' and \
                 'hip-amdgcn-amd-amdhsa-unknown-gfx906' both select the bundle entry \
                 'hip-amdgcn-amd-amdhsa--gfx906': one entry cannot be unbundled into two \
                 outputs\n"
            )
        );
        assert!(!d.path().join("o1").exists() && !d.path().join("o2").exists());
    }
}
