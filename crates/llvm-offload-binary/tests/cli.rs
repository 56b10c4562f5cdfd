//! Output-file behaviour the recorded fixtures cannot show: symlinks are
//! replaced (LLVM writes a temporary file and renames it), devices are
//! written in place, failed runs leave outputs untouched.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

fn run(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_llvm-offload-binary");
    test_support::run_as(exe, "llvm-offload-binary", dir, args)
}

#[test]
fn output_symlink_is_replaced_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(p.join("dev.o"), b"ABC").unwrap();
    fs::write(p.join("target"), b"keep me").unwrap();
    std::os::unix::fs::symlink("target", p.join("out.bin")).unwrap();
    let out = run(p, &["-o", "out.bin", "--image=file=dev.o,triple=t"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!fs::symlink_metadata(p.join("out.bin"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(p.join("target")).unwrap(), b"keep me");
    let mode = fs::metadata(p.join("out.bin"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "not executable");
    assert_eq!(mode & 0o600, 0o600, "owner can read and write");
    // No temporary files left beside it.
    let mut names: Vec<_> = fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["dev.o", "out.bin", "target"]);
}

#[test]
fn dev_null_is_written_in_place() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("dev.o"), b"ABC").unwrap();
    let out = run(d.path(), &["-o", "/dev/null", "--image=file=dev.o"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn failed_packaging_leaves_the_old_output() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(p.join("dev.o"), b"ABC").unwrap();
    fs::write(p.join("out.bin"), b"old").unwrap();
    let out = run(
        p,
        &["-o", "out.bin", "--image=file=dev.o", "--image=file=gone.o"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "llvm-offload-binary: error: No such file or directory\n"
    );
    assert_eq!(fs::read(p.join("out.bin")).unwrap(), b"old");
    assert_eq!(fs::read_dir(p).unwrap().count(), 2);
}

#[test]
fn packaging_then_extraction_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let image: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(p.join("dev.o"), &image).unwrap();
    let out = run(
        p,
        &[
            "-o",
            "fat.bin",
            "--image=file=dev.o,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let out = run(p, &["fat.bin", "--image=kind=openmp"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        fs::read(p.join("fat-x86_64-pc-linux-gnu-generic.0.o")).unwrap(),
        image
    );
}

/// Images large enough that inputs are memory-mapped and copied into the
/// outputs by the kernel: packaging two of them (the second at an offset
/// that is not a page multiple) and extracting them again, to files and to
/// stdout, gives back the same bytes.
#[test]
fn large_images_round_trip_through_mapped_copies() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let image = |len: usize, seed: u8| -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 9) as u8)
            .collect()
    };
    let a = image(1 << 20, 1);
    let b = image(200_003, 2);
    fs::write(p.join("a.o"), &a).unwrap();
    fs::write(p.join("b.o"), &b).unwrap();
    let out = run(
        p,
        &[
            "-o",
            "out.bin",
            "--image=file=a.o,triple=x86_64-pc-linux-gnu,arch=a,kind=openmp",
            "--image=file=b.o,triple=x86_64-pc-linux-gnu,arch=b,kind=openmp",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let packaged = fs::read(p.join("out.bin")).unwrap();
    let find = |needle: &[u8]| {
        packaged
            .windows(needle.len())
            .position(|w| w == needle)
            .is_some()
    };
    assert!(find(&a[..4096]) && find(&b[b.len() - 4096..]));

    let out = run(
        p,
        &[
            "out.bin",
            "--image=file=a2,arch=a",
            "--image=file=b2,arch=b",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(fs::read(p.join("a2")).unwrap() == a);
    assert!(fs::read(p.join("b2")).unwrap() == b);

    let out = run(p, &["out.bin", "--image=file=-,arch=b"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout == b, "stdout");
}
