//! Entries large enough that inputs are memory-mapped and their bytes are
//! copied by the kernel into the outputs (offload_cli::fsio): the bytes
//! must come out exactly as the format library lays them out, at odd
//! offsets and alignments, to files and to stdout, and with text bundles.

use std::fs;
use std::path::Path;
use std::process::Output;

use offload_format::{bundle, text_bundle};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";
const GFX908: &str = "hip-amdgcn-amd-amdhsa--gfx908";
/// The host ID as the bundler stores it (standardised: an empty environment
/// piece gives a trailing dash).
const HOST_STORED: &str = "host-x86_64-unknown-linux-gnu-";

fn run(dir: &Path, args: &[&str]) -> Output {
    test_support::run_ok(
        test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), dir).args(args),
        args,
    )
}

/// Deterministic bytes that differ at every offset of interest.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn binary_bundles_of_large_entries_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // Sizes around the mapping and copy thresholds, one not a page multiple.
    let host = pattern(70_001, 1);
    let dev_a = pattern(1 << 20, 2);
    let dev_b = pattern(300_007, 3);
    fs::write(p.join("h"), &host).unwrap();
    fs::write(p.join("a"), &dev_a).unwrap();
    fs::write(p.join("b"), &dev_b).unwrap();
    let targets = format!("-targets={HOST},{GFX906},{GFX908}");
    for align in ["1", "4096", "3"] {
        let align_opt = format!("-bundle-align={align}");
        run(
            p,
            &[
                "-type=bc",
                &targets,
                &align_opt,
                "-input=h",
                "-input=a",
                "-input=b",
                "-output=fat",
            ],
        );
        let entries: [(&[u8], &[u8]); 3] = [
            (HOST_STORED.as_bytes(), &host),
            (GFX906.as_bytes(), &dev_a),
            (GFX908.as_bytes(), &dev_b),
        ];
        let mut want = Vec::new();
        bundle::write(&mut want, &entries, align.parse().unwrap()).unwrap();
        let got = fs::read(p.join("fat")).unwrap();
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert!(
            got == want,
            "align {align}: {} vs {} bytes, first difference at {first:?}",
            got.len(),
            want.len()
        );

        run(
            p,
            &[
                "-type=bc",
                &targets,
                "-unbundle",
                "-input=fat",
                "-output=h2",
                "-output=a2",
                "-output=b2",
            ],
        );
        assert!(fs::read(p.join("h2")).unwrap() == host);
        assert!(fs::read(p.join("a2")).unwrap() == dev_a);
        assert!(fs::read(p.join("b2")).unwrap() == dev_b);

        // Two entries to stdout (a pipe here), whole, in the order LLVM 22
        // writes them: the bundle's entry order (its map order: gfx906
        // first), not the order of -targets.
        let o = run(
            p,
            &[
                "-type=bc",
                &format!("-targets={GFX908},{GFX906}"),
                "-unbundle",
                "-input=fat",
                "-output=-",
                "-output=-",
            ],
        );
        let mut both = dev_a.clone();
        both.extend_from_slice(&dev_b);
        assert!(o.stdout == both, "stdout order and bytes, align {align}");
    }
}

#[test]
fn text_bundles_of_large_entries_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let line = |i: usize| format!("  %{i} = add i32 %{i}, 1 ; {}\n", i * 7919);
    let host: String = (0..5000).map(line).collect();
    let dev: String = (5000..20000).map(line).collect();
    fs::write(p.join("h.ll"), &host).unwrap();
    fs::write(p.join("d.ll"), &dev).unwrap();
    let targets = format!("-targets={HOST},{GFX906}");
    run(
        p,
        &[
            "-type=ll",
            &targets,
            "-input=h.ll",
            "-input=d.ll",
            "-output=fat.ll",
        ],
    );
    let entries: [(&[u8], &[u8]); 2] = [
        (HOST_STORED.as_bytes(), host.as_bytes()),
        (GFX906.as_bytes(), dev.as_bytes()),
    ];
    let mut want = Vec::new();
    text_bundle::write(
        &mut want,
        text_bundle::comment_for_type("ll").unwrap(),
        &entries,
    )
    .unwrap();
    assert!(fs::read(p.join("fat.ll")).unwrap() == want);
    run(
        p,
        &[
            "-type=ll",
            &targets,
            "-unbundle",
            "-input=fat.ll",
            "-output=h2",
            "-output=d2",
        ],
    );
    assert!(fs::read(p.join("h2")).unwrap() == host.as_bytes());
    assert!(fs::read(p.join("d2")).unwrap() == dev.as_bytes());
}
