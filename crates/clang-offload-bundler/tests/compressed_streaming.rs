//! `-compress` streams the serialized bundle into the compressor (mapped
//! inputs read with pread) and the CCOB into the output file, filling the
//! header in at the end; stdout and other unseekable outputs get it built
//! in memory. Either way the bytes must be those of the one-shot library
//! call on the serialized bundle, and unbundling must give the inputs back.

use std::fs;
use std::path::Path;
use std::process::Output;

use offload_format::ccob::{self, CompressOptions, Version};
use offload_format::{bundle, text_bundle};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";
const HOST_STORED: &str = "host-x86_64-unknown-linux-gnu-";

/// Runs the bundler with a clean compression environment, the header
/// version set through its environment variable.
fn run(dir: &Path, args: &[&str], version: &str) -> Output {
    test_support::run_ok(
        test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), dir)
            .args(args)
            .env("COMPRESSED_BUNDLE_FORMAT_VERSION", version),
        args,
    )
}

/// Compressible bytes (code-like repeats with noise).
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 3 == 0 {
            out.extend_from_slice(&x.to_le_bytes());
        } else {
            out.extend_from_slice(&b"v_mov_b32 v1, s2\n"[..(x % 17) as usize]);
        }
    }
    out.truncate(len);
    out
}

#[test]
fn compressed_bundles_equal_the_one_shot_bytes() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // The host is small (read), the device entry large (mapped).
    let host = data(5000, 1);
    let dev = data(1_500_001, 2);
    fs::write(p.join("h"), &host).unwrap();
    fs::write(p.join("g"), &dev).unwrap();
    let targets = format!("-targets={HOST},{GFX906}");
    let entries: [(&[u8], &[u8]); 2] = [(HOST_STORED.as_bytes(), &host), (GFX906.as_bytes(), &dev)];
    for (file_type, version, level) in [("bc", 3, None), ("bc", 2, Some(1)), ("s", 3, Some(5))] {
        let mut serialized = Vec::new();
        match text_bundle::comment_for_type(file_type) {
            Some(c) if file_type != "bc" => text_bundle::write(&mut serialized, c, &entries),
            _ => bundle::write(&mut serialized, &entries, 1),
        }
        .unwrap();
        let options = CompressOptions {
            version: Version::from_number(version).unwrap(),
            level,
            ..CompressOptions::default()
        };
        let expected = ccob::compress(&serialized, &options).unwrap().bytes;
        let type_opt = format!("-type={file_type}");
        let version_env = version.to_string();
        let mut args = vec![
            type_opt.as_str(),
            "-compress",
            &targets,
            "-input=h",
            "-input=g",
        ];
        let level_opt = level.map(|l| format!("--compression-level={l}"));
        if let Some(l) = &level_opt {
            args.push(l);
        }
        let what = format!("{args:?} v{version}");
        // To a file (streamed) and to stdout (in memory).
        run(p, &[&args[..], &["-output=fat"]].concat(), &version_env);
        let file = fs::read(p.join("fat")).unwrap();
        assert!(file == expected, "{what}: file output differs");
        let out = run(p, &[&args[..], &["-output=-"]].concat(), &version_env);
        assert!(out.stdout == expected, "{what}: stdout output differs");
        // And back.
        let unbundle = [
            type_opt.as_str(),
            &targets,
            "-unbundle",
            "-input=fat",
            "-output=h.out",
            "-output=g.out",
        ];
        run(p, &unbundle, &version_env);
        assert_eq!(fs::read(p.join("h.out")).unwrap(), host, "{what}");
        assert!(fs::read(p.join("g.out")).unwrap() == dev, "{what}");
    }
    let names: Vec<_> = fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 5, "no temporary files left: {names:?}");
}
