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

#[test]
fn an_image_size_that_wraps_fails_as_creating_its_file_does() {
    let mut bin = ImageEntry {
        image_kind: ImageKind::OBJECT,
        offload_kind: OffloadKind::OPENMP,
        flags: 0,
        strings: vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")],
        image: b"image",
    }
    .to_v1();
    // The image size: offset plus size wraps past 2^64.
    bin[64..72].copy_from_slice(&(u64::MAX - 15).to_le_bytes());
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
    check(
        &case("packager-image-size-wraps-no-filter", &["in.bin"]),
        &setup,
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
