//! A real input past 4 GiB, as a sparse file: a bundle whose device entry
//! lies 4 GiB into the file, with a decoy where the entry's offset modulo
//! 2^32 points. The tool maps its input, so only the pages it reads cost
//! memory; the file costs a few blocks of disk. Skipped (with a note)
//! where the file system does not keep the file sparse.

use std::fs;

use test_support::sparse_file;

const FOUR_GIB: u64 = 1 << 32;
const HOST: &[u8] = b"host-x86_64-unknown-linux-gnu-";
const GFX906: &[u8] = b"hip-amdgcn-amd-amdhsa--gfx906";

#[test]
fn bundle_entry_past_4gib_in_a_sparse_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let header_len = (32 + (24 + HOST.len()) + (24 + GFX906.len())) as u64;
    let far = FOUR_GIB + 4096;
    let mut h = offload_format::bundle::MAGIC.to_vec();
    h.extend_from_slice(&2u64.to_le_bytes());
    for (offset, size, id) in [(header_len, 8u64, HOST), (far, 4, GFX906)] {
        h.extend_from_slice(&offset.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.extend_from_slice(&(id.len() as u64).to_le_bytes());
        h.extend_from_slice(id);
    }
    let input = p.join("big.bc");
    if !sparse_file(
        &input,
        far + 4,
        &[
            (0, &h),
            (header_len, b"HOSTDATA"),
            (far - FOUR_GIB, b"BAD!"),
            (far, b"DEV1"),
        ],
    ) {
        return;
    }
    let run = |args: &[&str]| {
        test_support::run_ok(
            test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), p).args(args),
            args,
        )
    };
    // Listed in LLVM's hash-table order, not file order.
    let listed = run(&["-list", "-type=bc", "-input=big.bc"]);
    let mut ids: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "hip-amdgcn-amd-amdhsa--gfx906",
            "host-x86_64-unknown-linux-gnu-"
        ]
    );
    run(&[
        "-unbundle",
        "-type=bc",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906,host-x86_64-unknown-linux-gnu",
        "-input=big.bc",
        "-output=dev.bc",
        "-output=host.bc",
    ]);
    assert_eq!(fs::read(p.join("dev.bc")).unwrap(), b"DEV1");
    assert_eq!(fs::read(p.join("host.bc")).unwrap(), b"HOSTDATA");
}
