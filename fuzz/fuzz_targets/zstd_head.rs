//! The first bytes of zstd-compressed fat binary entries
//! (`StoredPayload::head`, which decodes them natively as far as they
//! need and asks libzstd when the native decoder declines), against
//! libzstd decoding the same stream: whenever libzstd decodes the first
//! `n` bytes, the head is exactly those bytes. Never a panic.
//!
//! The first byte picks the input's form: even, the rest is a zstd stream
//! as it is; odd, the rest is content that is compressed here (at a level
//! from the second byte) and then damaged at the places the last bytes
//! name, so that the fuzzer reaches deep into valid frames. Bytes 2 and 3
//! give `n`.

#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use offload_format::nvidia::fatbin::StoredPayload;
use offload_format::nvidia::Codec;

fuzz_target!(|data: &[u8]| run(data));

fn run(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let n = usize::from(u16::from_le_bytes([data[2], data[3]])) + 1;
    let rest = &data[4..];
    let stream = if data[0] & 1 == 0 {
        rest.to_vec()
    } else {
        // The last byte counts the damages (at most 3) before it, each
        // three bytes: a place (of the first 64 KiB) and a mask.
        let damages = rest.last().map_or(0, |&k| usize::from(k % 4));
        let cut = rest.len().saturating_sub(1 + 3 * damages);
        let (content, tail) = rest.split_at(cut);
        let level = i32::from(data[1] % 28) - 5;
        let Ok(mut frame) = zstd::bulk::compress(content, level) else {
            return;
        };
        for d in tail.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([d[0], d[1]]));
            if !frame.is_empty() {
                let len = frame.len();
                frame[at % len] ^= d[2];
            }
        }
        frame
    };
    let recorded = zstd::zstd_safe::get_frame_content_size(&stream)
        .ok()
        .flatten()
        .unwrap_or(1 << 20);
    let payload = StoredPayload {
        codec: Some(Codec::Zstd),
        payload: &stream,
        uncompressed_size: recorded,
    };
    let head = payload.head(n);
    // libzstd's first `n` bytes, if it decodes that far without an error
    // (as the entry's own decoding does: within the recorded size).
    let mut reference = Vec::new();
    let ok = match zstd::stream::read::Decoder::new(&stream[..]) {
        Ok(d) => d
            .take(n.min(recorded as usize) as u64)
            .read_to_end(&mut reference)
            .is_ok(),
        Err(_) => false,
    };
    if ok && reference.len() == n {
        if let Ok(h) = head {
            assert_eq!(h.as_ref(), &reference[..], "head differs from libzstd's");
        }
    }
}
