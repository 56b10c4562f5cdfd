//! Records the git commit the tools are built from, for the identification
//! output (`OFFLOAD_TOOLS_VERSION=1 <tool> --version`). `OFFLOAD_TOOLS_COMMIT`
//! overrides it (for builds from a source archive); outside a git checkout,
//! or without git, it is "unknown", so a build from the same sources gives the
//! same binary wherever it runs.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env_path("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn env_path(name: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(name).unwrap_or_default())
}

fn main() {
    println!("cargo::rerun-if-env-changed=OFFLOAD_TOOLS_COMMIT");
    let commit = match std::env::var("OFFLOAD_TOOLS_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Rebuild when HEAD moves: HEAD itself (a branch switch) and the
            // file of the branch it names (a commit). A worktree's HEAD
            // lives in its own git dir, its branch refs in the common dir.
            // (Only files that exist: cargo reruns a script whose watched
            // file is missing every time.)
            let manifest = env_path("CARGO_MANIFEST_DIR");
            let mut watch = Vec::new();
            if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
                watch.push(manifest.join(dir).join("HEAD"));
            }
            if let Some(dir) = git(&["rev-parse", "--git-common-dir"]) {
                let dir = manifest.join(dir);
                watch.push(dir.join("packed-refs"));
                if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    watch.push(dir.join(head));
                }
            }
            for file in watch.iter().filter(|f| f.is_file()) {
                println!("cargo::rerun-if-changed={}", file.display());
            }
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo::rustc-env=OFFLOAD_TOOLS_COMMIT={commit}");
}
