//! A real input past 4 GiB, as a sparse file: two offload binaries, the
//! first with an image of a little more than 4 GiB (a hole), so the second
//! starts past 4 GiB; a decoy binary sits where the second one's offset
//! modulo 2^32 points. Extraction must take the second binary from its
//! full offset. The tool maps its input, so only the pages it reads cost
//! memory; the file costs a few blocks of disk. Skipped (with a note)
//! where the file system does not keep the file sparse.

use std::fs;

use test_support::sparse_file;

use offload_format::offload_binary::{ImageEntry, ImageKind, OffloadKind};

const FOUR_GIB: u64 = 1 << 32;

fn entry<'a>(arch: &'a [u8], image: &'a [u8]) -> ImageEntry<'a> {
    ImageEntry {
        image_kind: ImageKind::OBJECT,
        offload_kind: OffloadKind(3),
        flags: 0,
        strings: vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", arch)],
        image,
    }
}

#[test]
fn offload_binary_past_4gib_in_a_sparse_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // The first binary's header, entry and strings, laid out by our writer
    // for an empty image; then its size and image size are set for an
    // image of 4 GiB + 24 bytes (the hole).
    let big_len = FOUR_GIB + 24;
    let (mut first, layout) = entry(b"gfx908", &[]).v1_prefix();
    let size = (layout.image + big_len).next_multiple_of(8);
    first[8..16].copy_from_slice(&size.to_le_bytes());
    first[32 + 32..32 + 40].copy_from_slice(&big_len.to_le_bytes());
    let second = entry(b"gfx906", b"DEV2").to_v1();
    let decoy = entry(b"gfx906", b"BAD!").to_v1();
    let input = p.join("big.bin");
    if !sparse_file(
        &input,
        size + second.len() as u64,
        &[
            (0, &first),
            (layout.image, b"BIGIMAGE"),
            (size - FOUR_GIB, &decoy),
            (size, &second),
        ],
    ) {
        return;
    }
    assert!(
        size - FOUR_GIB >= layout.image,
        "the decoy lies in the image"
    );
    let args = ["big.bin", "--image=arch=gfx906,file=dev.o"];
    test_support::run_ok(
        test_support::tool(env!("CARGO_BIN_EXE_llvm-offload-binary"), p).args(args),
        args,
    );
    assert_eq!(fs::read(p.join("dev.o")).unwrap(), b"DEV2");
}
