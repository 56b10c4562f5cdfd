//! CCOB reading and writing checked against files made by LLVM 22's
//! clang-offload-bundler (tests/fixtures/ccob, see gen.sh there).
//!
//! `results.tsv` records what 22 did with every fixture; each row is checked
//! against our behaviour: the same decompressed bytes, the same message where
//! both fail, and the deliberate differences listed in docs/compat.md#compressed-bundles-ccob.

use std::collections::BTreeMap;
use std::path::PathBuf;

use offload_format::ccob::report::{format_compress_report, format_decompress_report};
use offload_format::ccob::{
    compress, decompress, decompress_unverified, segments, CcobError, CompressOptions, Header,
    Method, Segment, Version,
};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ccob")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// results.tsv: name -> (exit status, "=bundle" or 22's message).
fn results() -> BTreeMap<String, (i32, String)> {
    let text = String::from_utf8(read("results.tsv")).unwrap();
    text.lines()
        .map(|line| {
            let mut f = line.splitn(3, '\t');
            let name = f.next().unwrap().to_string();
            let rc = f.next().unwrap().parse().unwrap();
            let res = f.next().unwrap().to_string();
            (name, (rc, res))
        })
        .collect()
}

/// Where we deliberately differ from 22 (docs/compat.md#compressed-bundles-ccob).
enum Deliberate {
    /// 22 accepts, we reject with this error.
    Reject(fn(&CcobError) -> bool),
    /// 22 fails on the whole input; we decompress the first CCOB (the rest
    /// is handled by `segments`).
    FirstOnly(&'static str),
}

fn deliberate(name: &str) -> Option<Deliberate> {
    use Deliberate::*;
    Some(match name {
        "small.bad-hash-forged.ccob" => Reject(|e| matches!(e, CcobError::HashMismatch { .. })),
        "small.usize-large-forged.ccob" | "small.zlib-usize-large-forged.ccob" => {
            Reject(|e| matches!(e, CcobError::SizeMismatch { .. }))
        }
        "small.total-zero-forged.ccob" => {
            Reject(|e| matches!(e, CcobError::TotalSizeTooSmall { total: 0, .. }))
        }
        "small.total-short-forged.ccob" => {
            // Cutting the payload short by one byte breaks the zstd frame.
            Reject(|e| matches!(e, CcobError::Codec { .. }))
        }
        "small.total-long-forged.ccob" | "small.v2-total-long-forged.ccob" => {
            Reject(|e| matches!(e, CcobError::TotalSizeBeyondInput { .. }))
        }
        "small.trailing-bytes-forged.ccob" => FirstOnly("small.bundle"),
        "concat.v3-v2-forged.ccob" => FirstOnly("small.bundle"),
        "concat.mixed-padded-forged.ccob" => FirstOnly("medium.bundle"),
        "concat.magic-in-payload-forged.ccob" => FirstOnly("small.bundle"),
        _ => return None,
    })
}

#[test]
fn every_fixture_matches_22_or_a_documented_difference() {
    let results = results();
    assert!(
        results.len() >= 40,
        "results.tsv has {} rows",
        results.len()
    );
    for (name, (rc, res)) in &results {
        let input = read(name);
        let ours = decompress(&input);
        match (deliberate(name), rc) {
            (Some(Deliberate::Reject(is_expected)), _) => {
                let err = ours.expect_err(name);
                assert!(is_expected(&err), "{name}: unexpected error {err:?}");
            }
            (Some(Deliberate::FirstOnly(bundle)), _) => {
                assert_eq!(*rc, 1, "{name}: 22 was expected to fail");
                let out = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(out.data, read(bundle), "{name}");
                assert!(out.ccob_len < input.len(), "{name}: no bytes left over");
            }
            (None, 0) => {
                let out = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
                let expected = match res.strip_prefix('=').unwrap() {
                    "(empty)" => Vec::new(),
                    bundle => read(bundle),
                };
                assert_eq!(out.data, expected, "{name}");
                assert_eq!(out.ccob_len, input.len(), "{name}");
                assert!(out.hash_matches());
            }
            (None, _) => {
                let err = ours.expect_err(name);
                assert_eq!(err.to_string(), *res, "{name}: message differs from 22");
            }
        }
    }
}

#[test]
fn headers_of_22_files() {
    let small = read("small.bundle");
    let v3 = read("small.v3.ccob");
    let h = Header::parse(&v3).unwrap();
    assert_eq!(h.version, Version::V3);
    assert_eq!(h.method, Method::Zstd);
    assert_eq!(h.total_size, Some(v3.len() as u64));
    assert_eq!(h.uncompressed_size, small.len() as u64);
    assert_eq!(h.hash, offload_format::ccob::truncated_md5(&small));
    // The file holds the first 8 MD5 bytes verbatim.
    assert_eq!(&v3[24..32], &h.hash.to_le_bytes());
    assert_eq!(h.to_bytes().unwrap(), &v3[..32]);

    let v2 = read("small.v2.ccob");
    let h2 = Header::parse(&v2).unwrap();
    assert_eq!(h2.version, Version::V2);
    assert_eq!(h2.total_size, Some(v2.len() as u64));
    assert_eq!(h2.to_bytes().unwrap(), &v2[..24]);
    // Same payload in both versions; only the header differs.
    assert_eq!(&v2[24..], &v3[32..]);

    let v1 = read("small.zstd-v1-forged.ccob");
    let h1 = Header::parse(&v1).unwrap();
    assert_eq!(h1.version, Version::V1);
    assert_eq!(h1.total_size, None);
    assert_eq!(h1.to_bytes().unwrap(), &v1[..20]);
}

/// Level encoded in a fixture name ("small.v3-l-5.ccob" -> Some(-5)).
fn level_of(name: &str) -> Option<i32> {
    let variant = name.split('.').nth(1)?;
    variant.split_once("-l").map(|(_, l)| l.parse().unwrap())
}

/// Whether this build links the same libzstd / zlib as LLVM 22 on Debian 12.
const SYSTEM_ZSTD: bool = cfg!(feature = "system-zstd");
const SYSTEM_ZLIB: bool = cfg!(feature = "system-zlib");

#[test]
fn compression_matches_22() {
    let mut identical = 0;
    let mut checked = 0;
    for (name, _) in results() {
        let forged = name.contains("forged");
        // Our writer is compared with every file 22 wrote, and with the zlib
        // files made by the system zlib's compress2 (what a zlib-only LLVM
        // writes).
        let zlib = name.contains(".zlib-v") || name.contains(".zlib-l9");
        let zlib_reference = zlib && !name.starts_with("empty");
        if forged && !zlib_reference {
            continue;
        }
        let reference = read(&name);
        let header = Header::parse(&reference).unwrap();
        if header.version == Version::V1 {
            continue;
        }
        let bundle = read(&format!("{}.bundle", name.split('.').next().unwrap()));
        let level = if zlib {
            name.contains("-l9").then_some(9)
        } else {
            level_of(&name)
        };
        let options = CompressOptions {
            method: header.method,
            level,
            version: header.version,
        };
        let ours = compress(&bundle, &options).unwrap();
        checked += 1;
        let system = if zlib { SYSTEM_ZLIB } else { SYSTEM_ZSTD };
        if ours.bytes == reference {
            identical += 1;
        } else {
            assert!(
                !system,
                "{name}: not byte-identical in a system-library build"
            );
            // Headers agree except for the payload-dependent total size.
            let mut ours_header = Header::parse(&ours.bytes).unwrap();
            assert_eq!(ours_header.total_size, Some(ours.bytes.len() as u64));
            ours_header.total_size = header.total_size;
            assert_eq!(ours_header, header, "{name}");
        }
        assert_eq!(decompress(&ours.bytes).unwrap().data, bundle, "{name}");
    }
    println!(
        "compression: {identical} of {checked} byte-identical to LLVM 22 \
         (system zstd: {SYSTEM_ZSTD}, system zlib: {SYSTEM_ZLIB})"
    );
    assert!(checked >= 16, "only {checked} fixtures checked");
    if SYSTEM_ZSTD && SYSTEM_ZLIB {
        assert_eq!(identical, checked);
    } else {
        // The empty-ish and tiny inputs come out the same with any zstd 1.5.x.
        assert!(identical >= 1, "only {identical} identical");
    }
}

fn mask_speed(report: &str) -> String {
    report
        .lines()
        .map(|l| match l.split_once("speed: ") {
            Some((head, _)) => format!("{head}speed: X MB/s\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn verbose_reports_match_22() {
    let cases = [
        ("verbose-compress.small.v3.txt", "small", None, Version::V3),
        (
            "verbose-compress.medium.v2-l-5.txt",
            "medium",
            Some(-5),
            Version::V2,
        ),
    ];
    for (file, bundle, level, version) in cases {
        let bundle = read(&format!("{bundle}.bundle"));
        let c = compress(
            &bundle,
            &CompressOptions {
                method: Method::Zstd,
                level,
                version,
            },
        )
        .unwrap();
        let expected = String::from_utf8(read(file)).unwrap();
        let mut info = c.info;
        if !SYSTEM_ZSTD {
            // Another libzstd compresses to other sizes; take 22's figures
            // (from its report) so that the layout is still checked.
            let figure = |key: &str| -> u64 {
                let line = expected.lines().find(|l| l.starts_with(key)).unwrap();
                let digits: String = line[key.len()..]
                    .chars()
                    .filter(char::is_ascii_digit)
                    .collect();
                digits.parse().unwrap()
            };
            info.total_len = figure("Total file size (including headers): ");
            info.payload_len = figure("Binary size after compression: ");
        }
        let c = offload_format::ccob::Compressed {
            bytes: c.bytes,
            info,
        };
        assert_eq!(
            mask_speed(&format_compress_report(&c.info)),
            expected,
            "{file}"
        );
    }
    for f in [
        "small.v3",
        "medium.v2",
        "small.zstd-v1-forged",
        "small.zlib-v2-forged",
        "empty.zlib-v3-forged",
        "small.bad-hash-forged",
    ] {
        let d = decompress_unverified(&read(&format!("{f}.ccob"))).unwrap();
        let expected = String::from_utf8(read(&format!("verbose-decompress.{f}.txt"))).unwrap();
        assert_eq!(
            mask_speed(&format_decompress_report(&d.report())),
            expected,
            "{f}"
        );
    }
}

#[test]
fn concatenations_split_by_total_size() {
    let small = read("small.bundle");
    let medium = read("medium.bundle");
    let datas = |name: &str| -> Vec<(usize, Option<Vec<u8>>)> {
        let input = read(name);
        segments(&input)
            .map(|s| match s.unwrap() {
                Segment::Ccob { offset, bytes, .. } => {
                    let d = decompress(bytes).unwrap();
                    assert_eq!(d.ccob_len, bytes.len());
                    (offset, Some(d.data))
                }
                Segment::Gap { offset, bytes } => {
                    assert!(bytes.iter().all(|&b| b == 0));
                    (offset, None)
                }
                Segment::Uncompressed(_) => panic!("{name}: uncompressed"),
            })
            .collect()
    };

    let v3 = read("small.v3.ccob");
    let got = datas("concat.v3-v2-forged.ccob");
    assert_eq!(
        got,
        vec![(0, Some(small.clone())), (v3.len(), Some(medium.clone()))]
    );

    let m3 = read("medium.v3.ccob").len();
    let z2 = read("small.zlib-v2-forged.ccob").len();
    let got = datas("concat.mixed-padded-forged.ccob");
    assert_eq!(
        got,
        vec![
            (0, Some(medium.clone())),
            (m3, None),
            (m3 + 7, Some(small.clone())),
            (m3 + 7 + z2, Some(small.clone())),
        ]
    );

    // "CCOB" inside the payload (a skippable zstd frame) does not split it.
    let single = read("small.magic-in-payload-forged.ccob");
    let fake = single[32..].windows(4).position(|w| w == b"CCOB");
    assert!(fake.is_some(), "fixture lost its embedded magic");
    let got = datas("concat.magic-in-payload-forged.ccob");
    assert_eq!(got, vec![(0, Some(small)), (single.len(), Some(medium))]);

    // Trailing garbage after a CCOB is a gap, not an error.
    let input = read("small.trailing-bytes-forged.ccob");
    let segs: Vec<_> = segments(&input).map(Result::unwrap).collect();
    assert_eq!(segs.len(), 2);
    assert_eq!(
        segs[1],
        Segment::Gap {
            offset: v3.len(),
            bytes: b"\0\0\0\0garbage"
        }
    );
}

#[test]
fn plain_bundles_are_one_uncompressed_segment() {
    let small = read("small.bundle");
    let segs: Vec<_> = segments(&small).collect();
    assert_eq!(segs, vec![Ok(Segment::Uncompressed(&small[..]))]);
    // Even if "CCOB" appears later in it.
    let mut with_magic = small.clone();
    with_magic.extend_from_slice(&read("small.v3.ccob"));
    assert_eq!(segments(&with_magic).count(), 1);
}
