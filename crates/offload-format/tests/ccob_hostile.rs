//! Hostile and malformed CCOB inputs: every header field of every version,
//! truncations, impossible sizes, corrupt payloads. Nothing may panic, and
//! nothing may be accepted unless it decompresses to bytes whose hash is the
//! stored one.

use std::path::PathBuf;

use offload_format::ccob::{
    compress, decompress, decompress_unverified, detect, segments, truncated_md5, CcobError,
    CompressOptions, Detection, Header, Method, Segment, V2Field, Version,
};

fn read(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ccob");
    std::fs::read(p.join(name)).unwrap()
}

/// One valid file per version and method.
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    [
        "small.v3.ccob",
        "small.v2.ccob",
        "small.zstd-v1-forged.ccob",
        "small.zlib-v1-forged.ccob",
        "small.zlib-v2-forged.ccob",
        "small.zlib-v3-forged.ccob",
    ]
    .into_iter()
    .map(|n| (n, read(n)))
    .collect()
}

fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

#[test]
fn detection_follows_22() {
    assert_eq!(detect(b""), Detection::TooShort);
    assert_eq!(detect(b"CCOB\x03\x00\x01"), Detection::TooShort);
    assert_eq!(detect(b"CCOB\x03\x00\x01\x00"), Detection::Compressed);
    assert_eq!(detect(b"__CLANG_OFFLOAD_BUNDLE__"), Detection::Uncompressed);
    assert_eq!(detect(b"xCCOB\x03\x00\x01\x00"), Detection::Uncompressed);
}

#[test]
fn every_truncation_of_every_header_fails_cleanly() {
    for (name, file) in samples() {
        let h = Header::parse(&file).unwrap();
        for cut in 0..file.len() {
            let r = decompress(&file[..cut]);
            let err = r.expect_err(&format!("{name} cut at {cut}"));
            if cut < 4 {
                assert_eq!(err, CcobError::NotCompressed, "{name} {cut}");
            } else if cut < h.len() {
                assert!(
                    matches!(err, CcobError::HeaderTooSmall { .. }),
                    "{name} {cut}: {err:?}"
                );
                assert_eq!(err.to_string(), "Compressed bundle header size too small");
            } else if h.total_size.is_some() {
                assert!(
                    matches!(err, CcobError::TotalSizeBeyondInput { .. }),
                    "{name} {cut}: {err:?}"
                );
            } else {
                // v1 runs to the end of the input: the codec sees the cut.
                assert!(
                    matches!(
                        err,
                        CcobError::Codec { .. } | CcobError::SizeMismatch { .. }
                    ),
                    "{name} {cut}: {err:?}"
                );
            }
        }
    }
}

#[test]
fn unknown_versions_and_methods() {
    for (name, file) in samples() {
        for version in [0u16, 4, 5, 0x100, 0xffff] {
            let mut f = file.clone();
            put(&mut f, 4, &version.to_le_bytes());
            let err = decompress(&f).unwrap_err();
            assert_eq!(err, CcobError::UnknownVersion(version), "{name}");
            // 22's words for it.
            assert_eq!(err.to_string(), "Compressed bundle header size too small");
        }
        for method in [2u16, 3, 0x100, 0xffff] {
            let mut f = file.clone();
            put(&mut f, 6, &method.to_le_bytes());
            assert_eq!(
                decompress(&f).unwrap_err(),
                CcobError::UnknownMethod(method),
                "{name}"
            );
        }
        // The wrong one of the two known methods: a codec error, never a panic.
        let mut f = file.clone();
        let other = if f[6] == 0 { 1u16 } else { 0 };
        put(&mut f, 6, &other.to_le_bytes());
        assert!(matches!(
            decompress(&f).unwrap_err(),
            CcobError::Codec { .. }
        ));
    }
}

/// Offsets of (total size, uncompressed size, hash) fields and their width.
fn fields(v: Version) -> (Option<(usize, usize)>, (usize, usize), usize) {
    match v {
        Version::V1 => (None, (8, 4), 12),
        Version::V2 => (Some((8, 4)), (12, 4), 16),
        Version::V3 => (Some((8, 8)), (16, 8), 24),
    }
}

fn put_int(f: &mut [u8], (offset, width): (usize, usize), value: u64) {
    let bytes = value.to_le_bytes();
    put(f, offset, &bytes[..width]);
}

#[test]
fn size_fields_are_checked() {
    for (name, file) in samples() {
        let h = Header::parse(&file).unwrap();
        let (total, usize_field, _) = fields(h.version);
        let real = h.uncompressed_size;
        let max = if usize_field.1 == 4 {
            u32::MAX as u64
        } else {
            u64::MAX
        };
        for claimed in [0, 1, real - 1, real + 1, real * 2, 1 << 31, max - 1, max] {
            let mut f = file.clone();
            put_int(&mut f, usize_field, claimed);
            let err = decompress(&f).unwrap_err();
            assert!(
                matches!(
                    err,
                    CcobError::SizeMismatch { .. } | CcobError::Codec { .. }
                ),
                "{name} claimed {claimed}: {err:?}"
            );
        }
        if let Some(total) = total {
            let max = if total.1 == 4 {
                u32::MAX as u64
            } else {
                u64::MAX
            };
            let len = file.len() as u64;
            for t in [0, 1, h.len() as u64 - 1, len + 1, max] {
                let mut f = file.clone();
                put_int(&mut f, total, t);
                let err = decompress(&f).unwrap_err();
                assert!(
                    matches!(
                        err,
                        CcobError::TotalSizeTooSmall { .. }
                            | CcobError::TotalSizeBeyondInput { .. }
                    ),
                    "{name} total {t}: {err:?}"
                );
                // Segments report the same problem once, then stop.
                let segs: Vec<_> = segments(&f).collect();
                assert_eq!(segs.len(), 1);
                assert!(segs[0].is_err());
            }
            // A total size that cuts the payload short: the codec notices.
            let mut f = file.clone();
            put_int(&mut f, total, len - 1);
            assert!(decompress(&f).is_err());
        }
    }
}

#[test]
fn hash_is_verified() {
    for (name, file) in samples() {
        let h = Header::parse(&file).unwrap();
        let (_, _, hash_at) = fields(h.version);
        for bit in 0..64 {
            let mut f = file.clone();
            let bad = h.hash ^ (1u64 << bit);
            put(&mut f, hash_at, &bad.to_le_bytes());
            let err = decompress(&f).unwrap_err();
            assert_eq!(
                err,
                CcobError::HashMismatch {
                    stored: bad,
                    computed: h.hash
                },
                "{name}"
            );
            // Unverified decoding still yields the data (for -verbose).
            let d = decompress_unverified(&f).unwrap();
            assert!(!d.hash_matches());
            assert_eq!(d.verify().unwrap_err(), err);
        }
    }
}

#[test]
fn corrupt_payloads_never_panic_or_pass_unverified() {
    for (name, file) in samples() {
        let h = Header::parse(&file).unwrap();
        let expected = decompress(&file).unwrap().data;
        for pos in h.len()..file.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut f = file.clone();
                f[pos] ^= flip;
                if let Ok(d) = decompress(&f) {
                    // Only harmless changes (e.g. in zlib's unused bits) may
                    // pass, and then the content is intact.
                    assert_eq!(d.data, expected, "{name} pos {pos} flip {flip:#x}");
                }
            }
        }
    }
}

#[test]
fn huge_claims_do_not_allocate_blindly() {
    // A 41-byte v3 file claiming 2^64-1 bytes: rejected without trying to
    // reserve that much (which would abort the process).
    let mut f = read("empty.zlib-v3-forged.ccob");
    put(&mut f, 16, &u64::MAX.to_le_bytes());
    let err = decompress(&f).unwrap_err();
    assert_eq!(
        err,
        CcobError::SizeMismatch {
            expected: u64::MAX,
            actual: 0
        }
    );
    let mut f = read("small.v3.ccob");
    put(&mut f, 16, &(u64::MAX / 2).to_le_bytes());
    assert!(matches!(
        decompress(&f).unwrap_err(),
        CcobError::SizeMismatch { .. }
    ));
    // Header-only file: no payload at all.
    let mut h = Header::parse(&read("small.v3.ccob")).unwrap();
    h.total_size = Some(32);
    let f = h.to_bytes().unwrap();
    assert!(matches!(
        decompress(&f).unwrap_err(),
        CcobError::SizeMismatch { actual: 0, .. }
    ));
}

#[test]
fn random_garbage_after_magic() {
    // A small deterministic generator: arbitrary bytes after "CCOB" with
    // each known version and method in turn.
    let mut next = test_support::xorshift(0x2545_f491_4f6c_dd1du64);
    for i in 0..3000 {
        let len = (next() % 80) as usize;
        let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        f.splice(0..0, *b"CCOB");
        if f.len() >= 8 {
            f[4] = (i % 4) as u8;
            f[5] = 0;
            f[6] = (i % 2) as u8;
            f[7] = 0;
        }
        if let Ok(d) = decompress(&f) {
            assert_eq!(truncated_md5(&d.data), d.header.hash);
        }
        for s in segments(&f) {
            if s.is_err() {
                break;
            }
        }
    }
}

#[test]
fn round_trips() {
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"x".to_vec(),
        read("small.bundle"),
        b"CCOB".repeat(1000),
        (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect(),
    ];
    for input in &inputs {
        for method in [Method::Zstd, Method::Zlib] {
            for version in [Version::V2, Version::V3] {
                for level in [None, Some(1), Some(9)] {
                    let o = CompressOptions {
                        method,
                        level,
                        version,
                    };
                    let c = compress(input, &o).unwrap();
                    let h = Header::parse(&c.bytes).unwrap();
                    assert_eq!(h.version, version);
                    assert_eq!(h.method, method);
                    assert_eq!(h.total_size, Some(c.bytes.len() as u64));
                    assert_eq!(c.info.total_len, c.bytes.len() as u64);
                    assert_eq!(c.info.level, o.effective_level());
                    let d = decompress(&c.bytes).unwrap();
                    assert_eq!(&d.data, input);
                    // Concatenated copies split back apart.
                    let mut two = c.bytes.clone();
                    two.extend_from_slice(&c.bytes);
                    let parts: Vec<_> = segments(&two).map(Result::unwrap).collect();
                    assert_eq!(parts.len(), 2);
                    for p in parts {
                        let Segment::Ccob { bytes, .. } = p else {
                            panic!("not a CCOB")
                        };
                        assert_eq!(&decompress(bytes).unwrap().data, input);
                    }
                }
            }
        }
    }
}

#[test]
fn writer_limits() {
    let o = CompressOptions {
        version: Version::V1,
        ..CompressOptions::default()
    };
    assert_eq!(
        compress(b"abc", &o).unwrap_err(),
        CcobError::UnsupportedWriteVersion(Version::V1)
    );
    for level in [-2, 10, 100] {
        let o = CompressOptions {
            method: Method::Zlib,
            level: Some(level),
            version: Version::V3,
        };
        assert!(matches!(
            compress(b"abc", &o).unwrap_err(),
            CcobError::InvalidLevel { .. }
        ));
    }
    // zstd clamps any level, like 22.
    for level in [i32::MIN, -200_000, 0, 23, i32::MAX] {
        let o = CompressOptions {
            level: Some(level),
            ..CompressOptions::default()
        };
        let c = compress(b"abcabcabc", &o).unwrap();
        assert_eq!(c.info.level, level);
        assert_eq!(decompress(&c.bytes).unwrap().data, b"abcabcabc");
    }
    // v2 fields are 32 bits: larger values are refused, never truncated.
    let mut h = Header {
        version: Version::V2,
        method: Method::Zstd,
        total_size: Some(u32::MAX as u64 + 1),
        uncompressed_size: 5,
        hash: 0,
    };
    assert_eq!(
        h.to_bytes().unwrap_err(),
        CcobError::Version2Limit(V2Field::TotalSize)
    );
    assert_eq!(
        CcobError::Version2Limit(V2Field::TotalSize).to_string(),
        "Total file size exceeds version 2 limit"
    );
    h.total_size = Some(100);
    h.uncompressed_size = u32::MAX as u64 + 1;
    assert_eq!(
        h.to_bytes().unwrap_err(),
        CcobError::Version2Limit(V2Field::UncompressedSize)
    );
    assert_eq!(
        CcobError::Version2Limit(V2Field::UncompressedSize).to_string(),
        "Uncompressed size exceeds version 2 limit"
    );
    h.uncompressed_size = 5;
    h.total_size = None;
    assert_eq!(h.to_bytes().unwrap_err(), CcobError::MissingTotalSize);
}
