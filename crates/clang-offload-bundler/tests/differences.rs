//! The deliberate differences from LLVM 22 (docs/compat.md#clang-offload-bundler): where
//! 22 crashes, reads out of bounds, loops or writes corrupt or partial
//! output, we exit 1 with a clear error and leave no output behind.

use std::fs;
use std::path::Path;
use std::process::Output;
use test_support::{assert_error, file_names as names};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";

/// Runs the bundler in `dir` with the command line `line` (split at white
/// space).
fn run(dir: &Path, line: &str) -> Output {
    test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), dir)
        .args(line.split_whitespace())
        .output()
        .unwrap()
}

fn bundle_two(dir: &Path, ty: &str) -> Vec<u8> {
    fs::write(dir.join("h"), b"host\n").unwrap();
    fs::write(dir.join("d"), b"device\n").unwrap();
    let o = run(
        dir,
        &format!("-type={ty} -targets={HOST},{GFX906} -input=h -input=d -output=b"),
    );
    assert!(o.status.success());
    fs::read(dir.join("b")).unwrap()
}

#[test]
fn zero_alignment_is_an_error_not_sigfpe() {
    let d = tempfile::tempdir().unwrap();
    bundle_two(d.path(), "bc");
    let o = run(
        d.path(),
        &format!(
            "-type=bc -targets={HOST},{GFX906} -input=h -input=d -output=zero -bundle-align=0"
        ),
    );
    assert_error(&o, "bundle alignment must be at least 1");
    assert!(!d.path().join("zero").exists());
    // Text bundles do not use the alignment: fine as in LLVM.
    let o = run(
        d.path(),
        &format!("-type=ll -targets={HOST},{GFX906} -input=h -input=d -output=t -bundle-align=0"),
    );
    assert!(o.status.success());
}

#[test]
fn bad_entry_after_a_good_one_is_an_error_not_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let mut b = bundle_two(d.path(), "bc");
    // Claim a third entry that is not there.
    b[24..32].copy_from_slice(&3u64.to_le_bytes());
    fs::write(d.path().join("bad"), &b).unwrap();
    let o = run(d.path(), "-type=bc -list -input=bad");
    assert_error(&o, "'bad': truncated offload bundle header: entry 3 of 3");
    let o = run(
        d.path(),
        &format!("-type=bc -unbundle -targets={GFX906} -input=bad -output=out"),
    );
    assert_error(&o, "'bad': truncated offload bundle header");
    assert!(!d.path().join("out").exists());
}

/// An entry whose offset + size wraps past 2^64 passes LLVM 22's range
/// check (its sum wraps too): LLVM lists it and unbundles the other
/// entries, and reads out of bounds only for that entry, which is our
/// error (each outcome checked against clang-offload-bundler-22; mutation
/// findings). An ID length that wraps is an error at once (LLVM reads the
/// ID out of bounds).
#[test]
fn wrapping_header_sums_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let good = bundle_two(d.path(), "bc");
    // First entry's size so large that offset + size wraps to a small value.
    let mut b = good.clone();
    b[40..48].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    fs::write(d.path().join("bad"), &b).unwrap();
    let o = run(d.path(), "-type=bc -list -input=bad");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{GFX906}\n{HOST}-\n")
    );
    let o = run(
        d.path(),
        &format!("-type=bc -unbundle -targets={GFX906} -input=bad -output=o1"),
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(fs::read(d.path().join("o1")).unwrap(), b"device\n");
    let o = run(
        d.path(),
        &format!("-type=bc -unbundle -targets={HOST} -input=bad -output=o2"),
    );
    assert_error(
        &o,
        "'bad': malformed offload bundle: entry 1 has a size or ID length beyond 64 bits",
    );
    assert!(!d.path().join("o2").exists());
    // The first entry's ID length wraps.
    let mut b = good;
    b[48..56].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    fs::write(d.path().join("bad"), &b).unwrap();
    let o = run(d.path(), "-type=bc -list -input=bad");
    assert_error(&o, "beyond 64 bits");
}

#[test]
fn text_start_without_end() {
    let d = tempfile::tempdir().unwrap();
    let mut b = bundle_two(d.path(), "s");
    b.extend_from_slice(
        b"\n# __CLANG_OFFLOAD_BUNDLE____START__ openmp-nvptx64-nvidia-cuda--sm_70\nno end\n",
    );
    fs::write(d.path().join("bad.s"), &b).unwrap();
    // LLVM 22 loops forever listing this file.
    let o = run(d.path(), "-type=s -list -input=bad.s");
    assert_error(&o, "has no END marker");
    // Asking for that entry: LLVM reads past its buffer.
    let o = run(d.path(), "-type=s -unbundle -targets=openmp-nvptx64-nvidia-cuda--sm_70,host-x86_64-unknown-linux-gnu -input=bad.s -output=o1 -output=o2");
    assert_error(
        &o,
        "'bad.s': malformed text bundle: entry 'openmp-nvptx64-nvidia-cuda--sm_70'",
    );
    assert_eq!(names(d.path()), ["b", "bad.s", "d", "h"]);
    // Entries before it are unaffected, as in LLVM.
    let o = run(
        d.path(),
        &format!("-type=s -unbundle -targets={GFX906} -input=bad.s -output=o1"),
    );
    assert!(o.status.success());
    assert_eq!(fs::read(d.path().join("o1")).unwrap(), b"device\n");
}

#[test]
fn targets_that_standardise_alike_are_rejected() {
    let d = tempfile::tempdir().unwrap();
    bundle_two(d.path(), "bc");
    let o = run(d.path(), "-type=bc -targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-unknown-gfx906 -input=h -input=d -input=d -output=dup");
    assert_error(
        &o,
        "targets 'hip-amdgcn-amd-amdhsa--gfx906' and 'hip-amdgcn-amd-amdhsa-unknown-gfx906' would both be stored as 'hip-amdgcn-amd-amdhsa--gfx906'",
    );
    assert!(!d.path().join("dup").exists());
    // Unbundling: LLVM would silently not write one of the two outputs.
    let o = run(d.path(), "-type=bc -unbundle -targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-gnu-gfx906 -input=b -output=o1 -output=o2");
    assert_error(&o, "both select the bundle entry 'hip-amdgcn-amd-amdhsa--gfx906': one entry cannot be unbundled into two outputs");
}

/// `-type=a`: LLVM 22 silently writes only one of two archives for
/// targets that select the same entry, but what it reports while reading
/// the input comes first (mutation finding: a damaged archive).
#[test]
fn archive_targets_that_select_one_entry_are_refused_after_the_input_is_read() {
    let d = tempfile::tempdir().unwrap();
    let lib = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hda/inputs/libgnu.a"),
    )
    .unwrap();
    fs::write(d.path().join("lib.a"), &lib).unwrap();
    fs::write(d.path().join("small.a"), &lib[..6]).unwrap();
    let line = |input: &str| {
        format!(
            "-type=a -unbundle -targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-unknown-gfx906 \
             -input={input} -output=o1 -output=o2 -allow-missing-bundles"
        )
    };
    let o = run(d.path(), &line("small.a"));
    assert_error(&o, "error: file too small to be an archive");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("both select"));
    let o = run(d.path(), &line("lib.a"));
    assert_error(&o, "both select the bundle entry 'hip-amdgcn-amd-amdhsa--gfx906': one entry cannot be unbundled into two outputs");
    assert_eq!(names(d.path()), ["lib.a", "small.a"]);
}

#[test]
fn no_partial_outputs_after_an_error() {
    let d = tempfile::tempdir().unwrap();
    bundle_two(d.path(), "bc");
    fs::write(d.path().join("o1"), b"keep me").unwrap();
    // gfx906 is found (LLVM writes o1), gfx1030 is not.
    let o = run(d.path(), "-type=bc -unbundle -targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx1030 -input=b -output=o1 -output=o2");
    assert_error(&o, "Can't find bundles for hip-amdgcn-amd-amdhsa--gfx1030");
    assert_eq!(fs::read(d.path().join("o1")).unwrap(), b"keep me");
    assert!(!d.path().join("o2").exists());
    assert_eq!(
        names(d.path()),
        ["b", "d", "h", "o1"],
        "no temporary files left"
    );
}

#[test]
fn bundling_into_an_input_works() {
    let d = tempfile::tempdir().unwrap();
    let want = bundle_two(d.path(), "bc");
    let o = run(
        d.path(),
        &format!("-type=bc -targets={HOST},{GFX906} -input=h -input=d -output=h"),
    );
    assert!(o.status.success());
    assert_eq!(fs::read(d.path().join("h")).unwrap(), want);
}
