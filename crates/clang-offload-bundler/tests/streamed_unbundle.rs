//! Compressed binary bundles are listed and unbundled while they are
//! decompressed (`src/stream.rs`), and every case that path cannot plan on
//! goes back to the buffered path. Whichever path runs, the result must be
//! the one the plain (uncompressed) bundle gives: same exit status, same
//! messages, same outputs. These bundles are laid out by hand to reach the
//! odd cases: entries out of file order, overlapping, inside the header,
//! empty, repeated IDs, damaged headers.

use std::fs;
use std::path::Path;
use std::process::Output;

use offload_format::bundle::MAGIC;
use offload_format::ccob::{self, CompressOptions};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const HOST_STORED: &str = "host-x86_64-unknown-linux-gnu-";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";
const GFX90A: &str = "hip-amdgcn-amd-amdhsa--gfx90a";

fn run(dir: &Path, args: &[&str]) -> Output {
    test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), dir)
        .args(args)
        .output()
        .unwrap()
}

/// Bytes that compress, but not to nothing.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed)
        .map(|b| if b % 5 == 0 { seed } else { b })
        .collect()
}

/// A binary bundle with the header entries given as (ID, offset, size), and
/// `body` placed after the header (offsets are absolute, so they may point
/// anywhere).
fn raw_bundle(entries: &[(&str, u64, u64)], body: &[u8]) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (id, offset, size) in entries {
        b.extend_from_slice(&offset.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&(id.len() as u64).to_le_bytes());
        b.extend_from_slice(id.as_bytes());
    }
    b.extend_from_slice(body);
    b
}

/// Header length of `raw_bundle` for these IDs.
fn header_len(ids: &[&str]) -> u64 {
    32 + ids.iter().map(|i| 24 + i.len() as u64).sum::<u64>()
}

/// Runs the same command on the plain bundle and on its CCOB, in two
/// directories, and asserts identical results.
fn same_both_ways(name: &str, plain: &[u8], args: &[&str], outputs: &[&str]) -> Output {
    let ccob = ccob::compress(plain, &CompressOptions::default())
        .unwrap()
        .bytes;
    let mut results = Vec::new();
    for input in [plain, &ccob[..]] {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("in.bndl"), input).unwrap();
        let o = run(d.path(), args);
        let files: Vec<Option<Vec<u8>>> = outputs
            .iter()
            .map(|f| fs::read(d.path().join(f)).ok())
            .collect();
        results.push((o, files));
    }
    let (plain_run, compressed_run) = (&results[0], &results[1]);
    assert_eq!(
        plain_run.0.status.code(),
        compressed_run.0.status.code(),
        "{name}"
    );
    assert_eq!(
        String::from_utf8_lossy(&plain_run.0.stderr),
        String::from_utf8_lossy(&compressed_run.0.stderr),
        "{name}"
    );
    assert_eq!(plain_run.0.stdout, compressed_run.0.stdout, "{name}");
    assert!(plain_run.1 == compressed_run.1, "{name}: outputs differ");
    results.swap_remove(1).0
}

fn unbundle_args<'a>(targets: &'a str, outputs: &'a [&'a str], extra: &[&'a str]) -> Vec<String> {
    let mut a = vec![
        "-type=bc".to_string(),
        "-unbundle".to_string(),
        "-input=in.bndl".to_string(),
        format!("-targets={targets}"),
    ];
    a.extend(outputs.iter().map(|o| format!("-output={o}")));
    a.extend(extra.iter().map(|e| e.to_string()));
    a
}

fn check(name: &str, plain: &[u8], targets: &str, extra: &[&str]) -> Output {
    let outputs: Vec<String> = (0..targets.split(',').count())
        .map(|i| format!("out{i}"))
        .collect();
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let args = unbundle_args(targets, &outputs, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = same_both_ways(name, plain, &args, &outputs);
    same_both_ways(
        &format!("{name} (list)"),
        plain,
        &["-type=bc", "-list", "-input=in.bndl"],
        &[],
    );
    o
}

#[test]
fn odd_layouts_unbundle_as_the_plain_bundle_does() {
    let ids = [HOST_STORED, GFX906];
    let h = header_len(&ids);
    let big = data(700_000, 7);
    let small = data(1000, 3);
    let body = [&small[..], &big].concat();
    let both = format!("{HOST},{GFX906}");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "in order",
            raw_bundle(
                &[(HOST_STORED, h, 1000), (GFX906, h + 1000, 700_000)],
                &body,
            ),
        ),
        (
            "device data before host data",
            raw_bundle(
                &[(HOST_STORED, h + 700_000, 1000), (GFX906, h, 700_000)],
                &[&big[..], &small].concat(),
            ),
        ),
        (
            "overlapping entries",
            raw_bundle(
                &[(HOST_STORED, h + 10, 500_000), (GFX906, h, 700_000)],
                &big,
            ),
        ),
        (
            "an entry inside the header",
            raw_bundle(&[(HOST_STORED, 1, 40), (GFX906, h, 1000)], &small),
        ),
        (
            "an empty entry",
            raw_bundle(&[(HOST_STORED, h, 0), (GFX906, h, 1000)], &small),
        ),
        (
            "a repeated ID keeps its last range",
            raw_bundle(
                &[
                    (GFX906, h + 1, 10),
                    (HOST_STORED, h, 1000),
                    (GFX906, h + 1000, 700_000),
                ],
                &body,
            ),
        ),
        (
            "second entry past the end",
            raw_bundle(
                &[(HOST_STORED, h, 1000), (GFX906, h + 1000, 900_000)],
                &body,
            ),
        ),
        (
            "count larger than the header",
            raw_bundle(&[(HOST_STORED, h + 24 + 29, 5)], &small)
                .into_iter()
                .enumerate()
                .map(|(i, b)| if i == 24 { 3 } else { b })
                .collect(),
        ),
        ("not a bundle", data(300_000, 9)),
        (
            "an ID that is not a target",
            raw_bundle(&[("nonsense", h, 1000), (GFX906, h + 1000, 700_000)], &body),
        ),
    ];
    for (name, plain) in &cases {
        check(name, plain, &both, &[]);
        check(name, plain, &both, &["-allow-missing-bundles"]);
        check(
            name,
            plain,
            &format!("{HOST},{GFX90A}"),
            &["-allow-missing-bundles"],
        );
        check(name, plain, GFX906, &[]);
    }
}

#[test]
fn planned_outputs_hold_the_entries() {
    let ids = [HOST_STORED, GFX906];
    let h = header_len(&ids);
    let big = data(3_000_000, 1);
    let plain = raw_bundle(
        &[(HOST_STORED, h + 3_000_000, 4), (GFX906, h, 3_000_000)],
        &[&big[..], b"host"].concat(),
    );
    let o = check("large", &plain, &format!("{HOST},{GFX906}"), &[]);
    assert!(o.status.success());
}

#[test]
fn a_wrong_hash_leaves_no_output() {
    let h = header_len(&[GFX906]);
    let big = data(500_000, 2);
    let plain = raw_bundle(&[(GFX906, h, big.len() as u64)], &big);
    let mut c = ccob::compress(&plain, &CompressOptions::default())
        .unwrap()
        .bytes;
    // The v3 hash field.
    c[24] ^= 0x40;
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("in.bndl"), &c).unwrap();
    fs::write(d.path().join("out0"), b"old").unwrap();
    let args = unbundle_args(GFX906, &["out0"], &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(d.path(), &args);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("hash"), "{err}");
    assert_eq!(fs::read(d.path().join("out0")).unwrap(), b"old");
    let names: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // With -verbose the report (both hashes) comes before the error.
    let mut verbose = args.clone();
    verbose.push("-verbose");
    let o = run(d.path(), &verbose);
    let err = String::from_utf8_lossy(&o.stderr);
    let report = err.find("Hashes match: No").expect("report");
    assert!(report < err.find("error").expect("error"), "{err}");
}
