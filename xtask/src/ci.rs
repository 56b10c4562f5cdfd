//! `cargo xtask ci`: every check CI makes, in order. `.ci/run` only
//! installs what these need (the LLVM reference tools, cargo-fuzz, the
//! declared minimum Rust) and calls this, so a local run and CI are the
//! same thing.
//!
//! The steps stop at the first failure, except the two differential
//! suites (conformance and e2e), which both run so that one CI run shows
//! all their differences.

use std::process::Command;

use crate::harness::workspace_root;
use crate::{bench, conformance, e2e, fuzz, identity, install, wheel};

/// One step: its name (for `--from` / `--only`), what it checks, and how.
struct Step {
    name: &'static str,
    what: &'static str,
    run: fn() -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        what: "format and lints: rustfmt",
        run: || cargo(&["fmt", "--all", "--", "--check"], &[]),
    },
    Step {
        name: "clippy",
        what: "format and lints: clippy, warnings denied",
        run: || {
            cargo(
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--locked",
                    "--",
                    "-D",
                    "warnings",
                ],
                &[],
            )
        },
    },
    Step {
        name: "test",
        what: "unit and integration tests (the README's test command)",
        run: || cargo(&["test", "--workspace", "--locked"], &[]),
    },
    Step {
        name: "bundled-compression",
        what: "bundled-compression fallback (no system libzstd/zlib: --no-default-features)",
        run: bundled_compression,
    },
    Step {
        name: "features",
        what: "offload-format's features: none (no C compiler), each alone checked, a few tested",
        run: features,
    },
    Step {
        name: "compress-identity",
        what: "compression byte-identical to LLVM 22 (1 KiB to 256 MiB, clang-22 -B), peak memory",
        run: || identity::run(&[]),
    },
    Step {
        name: "install",
        what: "install into a clean prefix",
        run: || {
            let prefix = tempfile::tempdir().map_err(|e| format!("a temporary prefix: {e}"))?;
            let prefix = prefix.path().to_string_lossy().into_owned();
            install::run(&args(&["--prefix", &prefix, "--check"]))
        },
    },
    Step {
        name: "wheel",
        what: "the Python wheel: built by maturin (manylinux policy), pip- and uv-installed and used without Rust; cargo install",
        run: || wheel::run(&args(&["--check"])),
    },
    Step {
        name: "differential",
        what: "conformance and end-to-end suites",
        run: || {
            // Both, even when the first fails.
            let results = [conformance::run(&[]), e2e::run(&[])];
            let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
            if errors.is_empty() {
                Ok(())
            } else {
                Err(errors.join("; "))
            }
        },
    },
    Step {
        name: "fuzz",
        what: "fuzz smoke (every target for a few seconds; the long runs are in docs/fuzzing.md)",
        // The debug profile (--dev) builds in a third of the time; a smoke
        // run only has to show that every target builds, runs its seeds
        // and mutates them without a finding.
        // A fixed seed: a finding here is found again by the same command.
        run: || fuzz::run(&args(&["--dev", "--seconds", "4", "--seed", "1"])),
    },
    Step {
        name: "bench",
        what: "benchmark smoke (proves the suite runs; figures are not judged here)",
        run: || bench::run(&args(&["--smoke"])),
    },
    Step {
        name: "doc",
        what: "documentation: cargo doc with rustdoc warnings denied",
        run: || {
            cargo(
                &["doc", "--workspace", "--no-deps", "--locked"],
                &[("RUSTDOCFLAGS", "-D warnings")],
            )
        },
    },
    Step {
        name: "msrv",
        what: "the declared minimum Rust (rust-version in Cargo.toml) builds everything",
        run: msrv,
    },
];

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Runs `cargo <args>` in the workspace with extra environment.
fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root()).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    status(cmd, &format!("cargo {}", args.join(" ")))
}

fn status(mut cmd: Command, shown: &str) -> Result<(), String> {
    let st = cmd.status().map_err(|e| format!("running {shown}: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({st})"))
    }
}

/// The workspace run linked the system libraries; here the format library
/// and the bundler with the bundled zstd and pure-Rust deflate, and the
/// build says so loudly: a build warning (the build script reruns when
/// touched) and the identification line of `--version`.
fn bundled_compression() -> Result<(), String> {
    cargo(
        &[
            "test",
            "-p",
            "offload-format",
            "-p",
            "zstd-stable-in",
            "--locked",
        ],
        &[],
    )?;
    cargo(
        &[
            "test",
            "-p",
            "clang-offload-bundler",
            "--no-default-features",
            "--locked",
        ],
        &[],
    )?;
    let root = workspace_root();
    std::fs::File::options()
        .append(true)
        .open(root.join("crates/clang-offload-bundler/build.rs"))
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .map_err(|e| format!("touching the bundler's build.rs: {e}"))?;
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo_bin)
        .current_dir(&root)
        .args([
            "build",
            "-p",
            "clang-offload-bundler",
            "--no-default-features",
            "--locked",
        ])
        .output()
        .map_err(|e| format!("running cargo build: {e}"))?;
    let log = String::from_utf8_lossy(&built.stderr);
    eprint!("{log}");
    if !built.status.success() {
        return Err("cargo build --no-default-features failed".into());
    }
    if !log.lines().any(|l| {
        l.starts_with("warning: clang-offload-bundler@")
            && l.contains("built with the bundled zstd")
    }) {
        return Err("no build warning saying the bundler is built with the bundled zstd".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let version = Command::new(target.join("debug/clang-offload-bundler"))
        .arg("--version")
        .env("OFFLOAD_TOOLS_VERSION", "1")
        .output()
        .map_err(|e| format!("running clang-offload-bundler --version: {e}"))?;
    let text = String::from_utf8_lossy(&version.stdout);
    eprint!("{text}");
    if !text.contains("zstd 1.5.7 (bundled)") {
        return Err("--version does not say zstd 1.5.7 (bundled)".into());
    }
    Ok(())
}

/// offload-format's features (`[features]` of its Cargo.toml), but
/// `default` and the `system-*` ones, which choose the linked libraries
/// and are built by every other step.
fn format_features() -> Result<Vec<String>, String> {
    let path = workspace_root().join("crates/offload-format/Cargo.toml");
    let toml = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let section = toml
        .split("\n[features]\n")
        .nth(1)
        .ok_or("no [features] in offload-format's Cargo.toml")?;
    let section = section.split("\n[").next().unwrap_or(section);
    Ok(section
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(name, _)| name.trim()))
        .filter(|n| {
            !n.is_empty()
                && !n.starts_with('#')
                && !n.starts_with(' ')
                && *n != "default"
                && !n.starts_with("system-")
        })
        .map(str::to_string)
        .collect())
}

/// The format library as a dependency: without features it builds with no
/// C compiler (none is in its build graph, and one that fails is given),
/// every feature alone builds with its tests (`cargo hack --each-feature`
/// without cargo-hack), and the tests run with none and with the two the
/// smallest tools use. In its own target directory, so that the main
/// build's artifacts stay.
fn features() -> Result<(), String> {
    let target = workspace_root().join("target/features");
    let target = target.to_string_lossy().into_owned();
    let env = [("CARGO_TARGET_DIR", target.as_str())];
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = Command::new(&cargo_bin)
        .current_dir(workspace_root())
        .args(["tree", "-p", "offload-format", "--no-default-features"])
        .args(["-e", "normal,build", "--prefix", "none", "--locked"])
        .output()
        .map_err(|e| format!("running cargo tree: {e}"))?;
    let tree = String::from_utf8_lossy(&tree.stdout);
    let native: Vec<&str> = tree
        .lines()
        .filter(|l| {
            l.starts_with("cc ") || l.split(' ').next().is_some_and(|n| n.ends_with("-sys"))
        })
        .collect();
    if !tree.contains("offload-format") || !native.is_empty() {
        return Err(format!(
            "--no-default-features builds native code: {native:?}"
        ));
    }
    cargo(
        &[
            "build",
            "-p",
            "offload-format",
            "--no-default-features",
            "--locked",
        ],
        &[env[0], ("CC", "false"), ("CXX", "false")],
    )?;
    let base = ["-p", "offload-format", "--no-default-features", "--locked"];
    for feature in format_features()? {
        let mut args = vec!["check", "--all-targets"];
        args.extend(base);
        args.extend(["--features", &feature]);
        cargo(&args, &env)?;
    }
    for features in ["", "wrapper", "offload-binary"] {
        let mut args = vec!["test"];
        args.extend(base);
        args.extend(["--features", features]);
        cargo(&args, &env)?;
    }
    Ok(())
}

/// The `rust-version` the workspace declares.
fn declared_msrv() -> Result<String, String> {
    let toml = std::fs::read_to_string(workspace_root().join("Cargo.toml"))
        .map_err(|e| format!("reading Cargo.toml: {e}"))?;
    toml.lines()
        .find_map(|l| {
            let v = l.trim().strip_prefix("rust-version")?.trim_start();
            Some(v.strip_prefix('=')?.trim().trim_matches('"').to_string())
        })
        .ok_or_else(|| "no rust-version in Cargo.toml".to_string())
}

/// `cargo check` of every crate and target with the declared minimum
/// toolchain (which `.ci/run` installs with rustup), in its own target
/// directory so that it does not invalidate the main build.
fn msrv() -> Result<(), String> {
    let version = declared_msrv()?;
    // The toolchain comes from rustup's own server, which is not a package
    // registry: where `.ci/run` could not fetch it, say so loudly and go on
    // rather than fail every other check with it.
    let present = Command::new("rustup")
        .args(["run", &version, "rustc", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !present {
        println!("msrv: SKIPPED: the Rust {version} toolchain is not installed (rustup toolchain install {version} failed or was not run)");
        return Ok(());
    }
    let mut cmd = Command::new("rustup");
    cmd.current_dir(workspace_root())
        .args(["run", &version, "cargo", "check"])
        .args(["--workspace", "--all-targets", "--locked"])
        .env("CARGO_TARGET_DIR", workspace_root().join("target/msrv"))
        // What the outer cargo set for this process must not leak into
        // the other toolchain's.
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC_BOOTSTRAP");
    status(cmd, &format!("cargo {version} check"))
}

pub fn run(argv: &[String]) -> Result<(), String> {
    let mut from = None;
    let mut only = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--from" => from = Some(it.next().ok_or("--from needs a step")?.clone()),
            "--only" => only = Some(it.next().ok_or("--only needs a step")?.clone()),
            "--list" => {
                for s in STEPS {
                    println!("{:<20} {}", s.name, s.what);
                }
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    for name in from.iter().chain(&only) {
        if !STEPS.iter().any(|s| s.name == name) {
            return Err(format!("unknown step {name} (see --list)"));
        }
    }
    let mut started = from.is_none();
    for step in STEPS {
        started |= from.as_deref() == Some(step.name);
        if !started || only.as_deref().is_some_and(|o| o != step.name) {
            continue;
        }
        let clock = std::time::Instant::now();
        println!("\n=== {} ({})", step.what, step.name);
        (step.run)().map_err(|e| format!("step {}: {e}", step.name))?;
        println!("=== {} done in {:.0?}", step.name, clock.elapsed());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The declared MSRV is found (the msrv step checks that version).
    #[test]
    fn format_features_are_read() {
        let f = format_features().unwrap();
        for name in ["zstd", "ccob", "wrapper", "inspect", "object-edit"] {
            assert!(f.iter().any(|n| n == name), "{f:?}");
        }
        assert!(!f.iter().any(|n| n == "default" || n.starts_with("system-")));
    }

    #[test]
    fn msrv_is_declared() {
        let v = declared_msrv().unwrap();
        assert!(v.split('.').all(|p| p.parse::<u32>().is_ok()), "{v}");
    }

    /// `.ci/run` installs and calls `cargo xtask ci`; the checks themselves
    /// are the steps here, not lines of the script.
    #[test]
    fn ci_script_only_installs_and_calls_the_task() {
        let script = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
        let code: Vec<&str> = script
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert!(code.contains(&"cargo xtask ci"), "{code:?}");
        for l in &code {
            for check in [
                "cargo fmt",
                "cargo clippy",
                "cargo test",
                "cargo doc",
                "cargo xtask fuzz",
            ] {
                assert!(!l.starts_with(check), ".ci/run runs {l:?} itself");
            }
        }
    }
}
