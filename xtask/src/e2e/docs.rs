//! The documentation's recipes that need LLVM 22 (and 14): the page blocks
//! marked `<!-- doc-test: e2e -->`, quoted in `docs.sh` and run as written
//! (crates/doc-tests checks that each such command is there; the commands
//! that need only our tools run in `cargo test`, docs/README.md says how).
//!
//! The script runs in a fresh directory holding the repository's example
//! files at their paths, with `HOME` there and our release tools in
//! `~/.local/bin` (where the README installs them) first on `PATH`.

use crate::harness::{llvm22, our_bin_dir, workspace_root};
use std::fs;
use std::process::Command;

/// The repository files the recipes use, at their own paths.
const FILES: &[&str] = &[
    "docs/examples/k.hip",
    "docs/examples/omp.c",
    "tests/fixtures/offload/lib.so",
    "tests/fixtures/nvidia/concat.o",
    "tests/fixtures/thin/verify.py",
];

/// `~/.local/bin` as `cargo xtask install` fills it: name, binary.
const TOOLS: &[(&str, &str)] = &[
    ("clang-offload-bundler", "clang-offload-bundler"),
    ("llvm-offload-binary", "llvm-offload-binary"),
    ("clang-offload-packager", "llvm-offload-binary"),
    ("llvm-offload-wrapper", "llvm-offload-wrapper"),
    ("clang-offload-wrapper", "clang-offload-wrapper"),
    ("offload", "offload"),
];

pub fn run() -> Result<(), String> {
    if llvm22("clang").is_none() {
        eprintln!("e2e docs: clang-22 is not installed; skipped");
        return Ok(());
    }
    let ours = our_bin_dir()?;
    let root = workspace_root();
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path();
    for f in FILES {
        let to = dir.join(f);
        fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        // fs::copy keeps the mode: verify.py stays executable.
        fs::copy(root.join(f), &to).map_err(|e| format!("{f}: {e}"))?;
    }
    let bin = dir.join(".local/bin");
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    for (name, exe) in TOOLS {
        std::os::unix::fs::symlink(ours.join(exe), bin.join(name)).map_err(|e| e.to_string())?;
    }
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .map_err(|e| e.to_string())?;
    let script = root.join("xtask/src/e2e/docs.sh");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-x"])
        .arg(&script)
        .current_dir(dir)
        .env("HOME", dir)
        .env("PATH", path)
        .output()
        .map_err(|e| format!("running bash: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}); its last lines:\n{}",
            script.display(),
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr), 30)
        ));
    }
    Ok(())
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
