//! Compress-then-read: every bundle our writer compresses must come back
//! unchanged through the reader, alone and concatenated with another one.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::ccob::{
    compress, decompress, segments, CompressOptions, Method, Segment, Version,
};

#[derive(Arbitrary, Debug)]
struct Input {
    data: Vec<u8>,
    second: Vec<u8>,
    zlib: bool,
    v2: bool,
    /// Levels are kept low: high zstd levels take seconds per input and
    /// test the library, not our code.
    level: Option<i8>,
}

fuzz_target!(|input: Input| {
    let options = CompressOptions {
        method: if input.zlib {
            Method::Zlib
        } else {
            Method::Zstd
        },
        level: input.level.map(|l| i32::from(l % 10)),
        version: if input.v2 { Version::V2 } else { Version::V3 },
    };
    if let (Method::Zlib, Some(level)) = (options.method, options.level) {
        if !(-1..=9).contains(&level) {
            assert!(
                compress(&input.data, &options).is_err(),
                "zlib level {level} accepted"
            );
            return;
        }
    }
    let first = compress(&input.data, &options).expect("compressing a small input");
    let out = decompress(&first.bytes).expect("our own CCOB reads back");
    assert_eq!(out.data, input.data);
    assert_eq!(out.ccob_len, first.bytes.len());
    assert_eq!(out.header.hash, first.info.hash);

    let second = compress(&input.second, &options).expect("compressing a small input");
    let mut both = first.bytes.clone();
    both.extend_from_slice(&second.bytes);
    let parts: Vec<_> = segments(&both).collect::<Result<_, _>>().expect("split");
    assert_eq!(parts.len(), 2);
    for (part, original) in parts.iter().zip([&input.data, &input.second]) {
        let Segment::Ccob { bytes, .. } = part else {
            panic!("not a CCOB segment: {part:?}");
        };
        assert_eq!(
            &decompress(bytes).expect("segment reads back").data,
            original
        );
    }
});
