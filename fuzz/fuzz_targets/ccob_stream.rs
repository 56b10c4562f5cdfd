//! Concatenated compressed bundles: splitting and decompressing hostile
//! input. The segments must tile the input in order, whatever
//! decompresses must have the size and hash the reader reports, and the
//! streaming decoder may only succeed where the buffered one does, with the
//! same bytes and figures.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::ccob::{
    decompress, decompress_streaming, decompress_unverified, segments, truncated_md5, Segment,
};

fuzz_target!(|data: &[u8]| {
    let mut expected_offset = 0usize;
    // Each segment consumes at least one byte, so this bound is never hit by
    // a correct splitter; it turns a loop into a failure instead of a hang.
    for (n, segment) in segments(data).enumerate() {
        assert!(n <= data.len(), "segments() does not advance");
        let Ok(segment) = segment else { break };
        match segment {
            Segment::Uncompressed(bytes) => {
                assert_eq!(n, 0);
                assert_eq!(bytes.len(), data.len());
                expected_offset = data.len();
            }
            Segment::Gap { offset, bytes } => {
                assert_eq!(offset, expected_offset);
                assert!(!bytes.is_empty());
                expected_offset = offset + bytes.len();
            }
            Segment::Ccob {
                offset,
                header,
                bytes,
            } => {
                assert_eq!(offset, expected_offset);
                assert!(bytes.len() >= header.len());
                expected_offset = offset + bytes.len();
                check(bytes);
            }
        }
    }
    assert!(expected_offset <= data.len());
    let _ = decompress(data);
});

fn check(ccob: &[u8]) {
    let buffered = decompress_unverified(ccob);
    if let Ok(out) = &buffered {
        assert_eq!(out.data.len() as u64, out.header.uncompressed_size);
        assert_eq!(out.computed_hash, truncated_md5(&out.data));
        assert!(out.ccob_len <= ccob.len());
        assert_eq!(out.verify().is_ok(), out.hash_matches());
    }
    let mut streamed_bytes = Vec::new();
    let streamed = decompress_streaming(ccob, None, &mut |b| {
        streamed_bytes.extend_from_slice(b);
        true
    });
    if let Some(s) = streamed {
        let out = buffered.expect("streaming succeeded where buffering failed");
        assert!(streamed_bytes == out.data);
        assert_eq!(s.computed_hash, out.computed_hash);
        assert_eq!((s.ccob_len, s.payload_len), (out.ccob_len, out.payload_len));
        assert_eq!(s.verify().is_ok(), out.verify().is_ok());
    }
}
