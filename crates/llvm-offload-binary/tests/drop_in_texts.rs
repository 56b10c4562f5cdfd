//! Where LLVM 22's llvm-offload-binary fails cleanly, we print exactly its
//! text (our own explanation only with `OFFLOAD_TOOLS_EXPLAIN`): cases
//! found by `cargo xtask mutate`, each checked against
//! llvm-offload-binary-22 when it is installed, else against the recorded
//! text (`tests/fixtures/drop_in_texts/`).

use std::fs;
use std::path::Path;

use offload_format::offload_binary::{ImageEntry, ImageKind, OffloadKind};
use test_support::llvm_text::{check, Case};

fn case(recorded: &'static str, args: &'static [&'static str]) -> Case<'static> {
    Case {
        ours: env!("CARGO_BIN_EXE_llvm-offload-binary"),
        llvm: "llvm-offload-binary-22",
        arg0: "llvm-offload-binary",
        args,
        recorded,
    }
}

/// One binary holding `image` for `arch`, its image size replaced by
/// `size` when given.
fn binary(arch: &'static [u8], image: &'static [u8], size: Option<u64>) -> Vec<u8> {
    let mut bin = ImageEntry {
        image_kind: ImageKind::OBJECT,
        offload_kind: OffloadKind::OPENMP,
        flags: 0,
        strings: vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", arch)],
        image,
    }
    .to_v1();
    if let Some(size) = size {
        bin[64..72].copy_from_slice(&size.to_le_bytes());
    }
    bin
}

/// Offset plus size wraps past 2^64.
const WRAPS: u64 = u64::MAX - 15;
/// No wrap, but more than a file's signed size can hold.
const ABOVE_OFF_T: u64 = 1 << 63;

#[test]
fn an_image_size_that_wraps_fails_as_creating_its_file_does() {
    let bin = binary(b"gfx90a", b"image", Some(WRAPS));
    let setup = |d: &Path| fs::write(d.join("in.bin"), &bin).unwrap();
    let out = check(
        &case("packager-image-size-wraps", &["in.bin", "--image=file=o1"]),
        &setup,
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.ends_with(&format!(
            "llvm-offload-binary: note: 'in.bin': offload binary at offset 0: image at offset \
             {} of size 18446744073709551600 extends past the end of the offload binary (size {})\n",
            u64::from_le_bytes(bin[56..64].try_into().unwrap()),
            bin.len()
        )),
        "{text}"
    );
    // Without filters LLVM 22 writes nothing and never meets the image.
    let out = check(
        &case("packager-image-size-wraps-no-filter", &["in.bin"]),
        &setup,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with("(size 152); it was not written\n"),
        "{out:?}"
    );
}

/// LLVM 22 reads an entry without looking at its image range, and touches
/// the image only when a filter writes it: an image past the end that no
/// filter writes is no error, in any position.
#[test]
fn an_image_past_the_end_is_an_error_only_when_written() {
    let broken = binary(b"gfx90a", b"image", Some(WRAPS));
    let good = binary(b"gfx942", b"other", None);
    let one = broken.clone();
    let setup = |d: &Path| fs::write(d.join("in.bin"), &one).unwrap();
    // A filter that selects nothing.
    check(
        &case(
            "packager-image-past-end-not-selected",
            &["in.bin", "--image=file=o1,arch=gfx942"],
        ),
        &setup,
    );
    // Two binaries in one file; a filter that selects the other one.
    for (name, blob) in [
        (
            "packager-image-past-end-first-of-two",
            [broken.as_slice(), &good],
        ),
        (
            "packager-image-past-end-second-of-two",
            [good.as_slice(), &broken],
        ),
    ] {
        let both = blob.concat();
        let setup = |d: &Path| fs::write(d.join("in.bin"), &both).unwrap();
        check(
            &case(name, &["in.bin", "--image=file=o1,arch=gfx942"]),
            &setup,
        );
        let d = tempfile::tempdir().unwrap();
        setup(d.path());
        let o = test_support::run_as(
            env!("CARGO_BIN_EXE_llvm-offload-binary"),
            "llvm-offload-binary",
            d.path(),
            &["in.bin", "--image=file=o1,arch=gfx942"],
        );
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        assert_eq!(fs::read(d.path().join("o1")).unwrap(), b"other");
    }
    // Both selected for one file: only the last is written, so only the
    // last can fail.
    let first = [broken.as_slice(), &good].concat();
    let setup = |d: &Path| fs::write(d.join("in.bin"), &first).unwrap();
    check(
        &case(
            "packager-image-past-end-not-last",
            &["in.bin", "--image=file=o1,kind=openmp"],
        ),
        &setup,
    );
    let last = [good.as_slice(), &broken].concat();
    let setup = |d: &Path| fs::write(d.join("in.bin"), &last).unwrap();
    check(
        &case(
            "packager-image-past-end-last",
            &["in.bin", "--image=file=o1,kind=openmp"],
        ),
        &setup,
    );
    // Each selected image gets its own file: the broken one fails (LLVM
    // leaves the first image written; we write nothing, compat policy 2).
    check(
        &case(
            "packager-image-past-end-each-to-its-file",
            &["in.bin", "--image=kind=openmp"],
        ),
        &setup,
    );
}

/// Where LLVM 22 asks for an output of the image's size and the system
/// refuses it, its message is the OS's (or the archive writer's).
#[test]
fn an_image_too_large_for_its_output_fails_as_llvm_does() {
    let bin = binary(b"gfx90a", b"image", Some(ABOVE_OFF_T));
    let setup = |d: &Path| fs::write(d.join("in.bin"), &bin).unwrap();
    // A file: `ftruncate` takes a signed size.
    check(
        &case("packager-image-above-off-t", &["in.bin", "--image=file=o1"]),
        &setup,
    );
    // Standard output: memory of that size.
    check(
        &case(
            "packager-image-above-off-t-stdout",
            &["in.bin", "--image=file=-"],
        ),
        &setup,
    );
    let wraps = binary(b"gfx90a", b"image", Some(WRAPS));
    let setup = |d: &Path| fs::write(d.join("in.bin"), &wraps).unwrap();
    check(
        &case(
            "packager-image-size-wraps-stdout",
            &["in.bin", "--image=file=-"],
        ),
        &setup,
    );
    // An archive member of that size.
    let out = check(
        &case(
            "packager-image-size-wraps-archive",
            &["in.bin", "--archive", "--image=file=o1"],
        ),
        &setup,
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("note: 'in.bin': offload binary at offset 0"),
        "{out:?}"
    );
}

#[test]
fn archive_header_bytes_that_are_not_utf8_are_quoted_as_stored() {
    let mut lib = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/archive/hip-input.a"),
    )
    .unwrap();
    let at = lib.windows(8).position(|w| w == b"k1.o/   ").unwrap();
    lib[at + 1] = 0xFF;
    lib[at + 58] = 0xFF;
    let setup = |d: &Path| fs::write(d.join("in.a"), &lib).unwrap();
    let out = check(
        &case(
            "packager-member-name-not-utf8",
            &["in.a", "--archive", "--image=file=o1,kind=openmp"],
        ),
        &setup,
    );
    assert!(out.stderr.windows(6).any(|w| w == b"k\xFF.o)\n"));
}

/// A member cut by the end of its archive: LLVM 22 reads it (the rest from
/// beyond its buffer) before it reports the archive, so the member's own
/// error comes first where the bytes the file has decide it. Here a COFF
/// header with a long section name and no string table, 60 of its recorded
/// 200 bytes present.
#[test]
fn a_cut_member_whose_error_its_bytes_decide_is_reported_first() {
    let mut coff = Vec::new();
    for half in [0x8664u16, 1] {
        coff.extend_from_slice(&half.to_le_bytes());
    }
    coff.resize(20, 0);
    coff.extend_from_slice(b"/4\0\0\0\0\0\0");
    coff.resize(60, 0);
    let mut lib = b"!<arch>\n".to_vec();
    lib.extend_from_slice(&test_support::ar::member_header("m.o/", 200));
    lib.extend_from_slice(&coff);
    let setup = |d: &Path| fs::write(d.join("in.a"), &lib).unwrap();
    check(
        &case("packager-cut-member-decided", &["in.a", "--image=file=o1"]),
        &setup,
    );
}
