//! A bundle larger than zstd's streaming buffer (2^27 + 2^17 bytes),
//! compressed by clang-offload-bundler-22 and by our streaming writer: the
//! same bytes. Needs the system libzstd LLVM links (`--features
//! system-compression`, which the workspace test run has through the tools' default features) and LLVM 22's
//! bundler; skips without either.

use std::io::{Cursor, Write};
use std::path::Path;
use std::process::Command;

use offload_format::ccob::{decompress, CompressOptions, Writer, ZSTD_STREAM_MAX};

const BUNDLER: &str = "/usr/lib/llvm-22/bin/clang-offload-bundler";

/// About `len` bytes that compress like real device code: 4 KiB pieces of
/// noise, of text, and copies of earlier pieces from anywhere before (near
/// ones and ones further back than zstd's window).
fn semi_compressible(len: usize) -> Vec<u8> {
    const PIECE: usize = 4096;
    let mut next = test_support::xorshift(0x2545_f491_4f6c_dd1du64);
    let text = b"s_load_dwordx4 s[0:3], s[4:5], 0x0\nv_mad_u32_u24 v1, s6, v0, v1\n";
    let mut out = Vec::with_capacity(len + PIECE);
    while out.len() < len {
        let r = next();
        match r % 4 {
            0 => {
                for _ in 0..PIECE / 8 {
                    out.extend_from_slice(&next().to_le_bytes());
                }
            }
            1 => {
                let start = (r >> 8) as usize % text.len();
                let mut n = 0;
                while n < PIECE {
                    let t = &text[start.min(n % text.len())..];
                    out.extend_from_slice(t);
                    n += t.len();
                }
            }
            _ if out.len() >= PIECE => {
                let from = (r >> 8) as usize % (out.len() - PIECE + 1);
                out.extend_from_within(from..from + PIECE);
                // A few altered bytes, as in a modified copy.
                let at = out.len() - 1 - (r >> 40) as usize % PIECE;
                out[at] ^= 0x5a;
            }
            _ => out.resize(out.len() + PIECE, 0),
        }
    }
    out.truncate(len);
    out
}

#[test]
fn larger_than_zstd_streaming_buffer_equals_llvm() {
    if !cfg!(feature = "system-zstd") {
        eprintln!("skipped: needs --features system-compression (LLVM's libzstd)");
        return;
    }
    if !Path::new(BUNDLER).exists() {
        eprintln!("skipped: {BUNDLER} is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("code.bin");
    let output = dir.path().join("bundle.ccob");
    // 150 MiB of input: a bundle well past the limit.
    std::fs::write(&input, semi_compressible(150 << 20)).unwrap();
    let status = Command::new(BUNDLER)
        .arg("-type=bc")
        .arg("-targets=host-x86_64-unknown-linux-gnu")
        .arg(format!("-input={}", input.display()))
        .arg(format!("-output={}", output.display()))
        .arg("-compress")
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(&input).unwrap();
    let llvm = std::fs::read(&output).unwrap();
    let bundle = decompress(&llvm).unwrap().data;
    assert!(bundle.len() as u64 > ZSTD_STREAM_MAX);

    let options = CompressOptions::default();
    let mut w = Writer::new(Cursor::new(Vec::new()), bundle.len() as u64, &options).unwrap();
    for piece in bundle.chunks((1 << 20) + 17) {
        w.write_all(piece).unwrap();
    }
    let ours = w.finish().unwrap().0.into_inner();
    assert_eq!(ours.len(), llvm.len(), "CCOB sizes");
    assert!(
        ours == llvm,
        "CCOB bytes differ from clang-offload-bundler-22's"
    );
}
