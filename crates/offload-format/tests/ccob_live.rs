//! Differential runs against the installed clang-offload-bundler-22 (skipped
//! with a message when it is absent): random inputs compressed by 22 and by
//! us, each side reading the other's output.

use std::path::Path;
use std::process::Command;

use offload_format::ccob::{compress, decompress, CompressOptions, Header, Method, Version};

const TOOL: &str = "clang-offload-bundler-22";

fn tool_present() -> bool {
    Command::new(TOOL).arg("--version").output().is_ok()
}

/// Run 22 with a clean compression environment.
fn run22(args: &[String], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(TOOL);
    for var in [
        "OFFLOAD_BUNDLER_COMPRESS",
        "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
        "OFFLOAD_BUNDLER_VERBOSE",
        "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
        "COMPRESSED_BUNDLE_FORMAT_VERSION",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(args).envs(env.iter().copied()).output().unwrap()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn differential_against_22() {
    if !tool_present() {
        println!("skipped: {TOOL} is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut next = test_support::xorshift(0x9e37_79b9_7f4a_7c15u64);
    let mut cases = 0;
    for (i, size) in [0usize, 1, 333, 4096, 60_000, 250_000]
        .into_iter()
        .enumerate()
    {
        // Repetitive bytes with some noise, like code objects.
        let mut entry = Vec::with_capacity(size);
        while entry.len() < size {
            let r = next();
            if r % 5 == 0 {
                entry.extend_from_slice(&r.to_le_bytes());
            } else {
                entry.extend_from_slice(b"v_add_f32 s_waitcnt ");
            }
        }
        entry.truncate(size);
        let input = dir.path().join(format!("in{i}"));
        std::fs::write(&input, &entry).unwrap();
        let plain = dir.path().join(format!("plain{i}"));
        let base = |out: &Path| {
            vec![
                "-type=bc".to_string(),
                "-targets=hip-amdgcn-amd-amdhsa--gfx906".to_string(),
                format!("-input={}", path(&input)),
                format!("-output={}", path(out)),
            ]
        };
        assert!(run22(&base(&plain), &[]).status.success());
        let bundle = std::fs::read(&plain).unwrap();
        for (version, level) in [("3", None), ("2", None), ("3", Some(1)), ("3", Some(12))] {
            let theirs = dir.path().join("theirs.ccob");
            let mut args = base(&theirs);
            args.push("-compress".to_string());
            if let Some(l) = level {
                args.push(format!("--compression-level={l}"));
            }
            let out = run22(&args, &[("COMPRESSED_BUNDLE_FORMAT_VERSION", version)]);
            assert!(out.status.success());
            let theirs = std::fs::read(&theirs).unwrap();
            let options = CompressOptions {
                method: Method::Zstd,
                level,
                version: if version == "2" {
                    Version::V2
                } else {
                    Version::V3
                },
            };
            let ours = compress(&bundle, &options).unwrap();
            if cfg!(feature = "system-zstd") {
                assert_eq!(ours.bytes, theirs, "size {size} v{version} level {level:?}");
            } else {
                let mut h = Header::parse(&ours.bytes).unwrap();
                h.total_size = Header::parse(&theirs).unwrap().total_size;
                assert_eq!(h, Header::parse(&theirs).unwrap());
            }
            // We read theirs.
            assert_eq!(decompress(&theirs).unwrap().data, bundle);
            // 22 reads ours: unbundling the entry gives the input back.
            let ours_path = dir.path().join("ours.ccob");
            std::fs::write(&ours_path, &ours.bytes).unwrap();
            let back = dir.path().join("back");
            let out = run22(
                &[
                    "-unbundle".to_string(),
                    "-type=bc".to_string(),
                    "-targets=hip-amdgcn-amd-amdhsa--gfx906".to_string(),
                    format!("-input={}", path(&ours_path)),
                    format!("-output={}", path(&back)),
                ],
                &[],
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(std::fs::read(&back).unwrap(), entry);
            cases += 1;
        }
    }
    println!(
        "differential: {cases} cases against {TOOL}, 0 differences (bytes compared: {})",
        cfg!(feature = "system-zstd")
    );
}
