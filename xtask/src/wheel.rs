//! `cargo xtask wheel [--out DIR] [--check]`: the Python wheel of the tools
//! (`pip install offload-tools`), built by maturin from pyproject.toml:
//! `bindings = "bin"` over crates/offload-tools, whose binaries are the six
//! tools built from their own crates' sources, with the bundled zstd and
//! pure-Rust deflate, in Cargo's `wheel` profile (target/wheel/). maturin's
//! manylinux policy check runs on every build (`auditwheel = "check"`): a
//! binary that needs a library outside the policy fails it, and the
//! platform tag is the oldest policy its glibc symbol versions allow.
//!
//! maturin comes from a virtual environment under target/ that this makes
//! with `python3 -m venv` and fills with pip, at the pinned versions below
//! (so a fresh clone needs only Python 3 with venv and the network);
//! `MATURIN=/path/to/maturin` uses another.
//!
//! `--check` (CI's `wheel` step) then shows `auditwheel show`'s verdict,
//! checks that the source distribution (`maturin sdist`) holds every
//! binary's source, and runs `wheel.sh`: the README's `cargo install` commands, then, with no
//! Rust on PATH, `pip install offload-tools` into a fresh virtual
//! environment (timed), the tools from its bin/ (ldd, --version, `offload
//! ls` and `thin --dry-run` of a fixture wheel, `clang-offload-bundler
//! -list` of fixture bundles, `clang-22 -B "$VIRTUAL_ENV/bin"` on the HIP
//! example) and `uv tool install offload-tools`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::workspace_root;

/// The Python tools, pinned: maturin builds and checks the wheel,
/// auditwheel shows the policy verdict, uv runs the README's `uv tool
/// install`.
const PYTHON_TOOLS: &[&str] = &["maturin==1.16.0", "auditwheel==6.8.2", "uv==0.13.9"];

/// The repository files `wheel.sh` uses, at their own paths.
const FILES: &[&str] = &[
    "docs/examples/k.hip",
    "tests/fixtures/wheel/demo-1.0-py3-none-any.whl",
    "tests/fixtures/ccob/medium.v3.ccob",
    "tests/fixtures/ccob/medium.bundle",
];

struct Options {
    out: PathBuf,
    check: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut out = workspace_root().join("target/wheels");
    let mut check = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(it.next().ok_or("--out needs a directory")?),
            "--check" => check = true,
            _ => {
                return Err(format!(
                    "unknown argument {a} (usage: wheel [--out DIR] [--check])"
                ))
            }
        }
    }
    let out = std::path::absolute(&out).map_err(|e| e.to_string())?;
    Ok(Options { out, check })
}

/// The virtual environment of the pinned Python tools (made or refreshed
/// when the pins change); its bin/.
fn python_tools() -> Result<PathBuf, String> {
    let venv = workspace_root().join("target/wheel-tools");
    let bin = venv.join("bin");
    let stamp = venv.join("pinned");
    let want = PYTHON_TOOLS.join("\n");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == want) {
        return Ok(bin);
    }
    eprintln!(
        "wheel: installing {} into {}",
        PYTHON_TOOLS.join(" "),
        venv.display()
    );
    let st = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("python3 -m venv: {e} (is Python 3 installed?)"))?;
    if !st.success() {
        return Err(format!(
            "python3 -m venv {} failed (Debian: apt-get install python3-venv)",
            venv.display()
        ));
    }
    let st = Command::new(bin.join("pip"))
        .args(["install", "-q", "--disable-pip-version-check"])
        .args(PYTHON_TOOLS)
        .status()
        .map_err(|e| format!("pip: {e}"))?;
    if !st.success() {
        return Err(format!("pip install {} failed", PYTHON_TOOLS.join(" ")));
    }
    fs::write(&stamp, want).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(bin)
}

/// The wheel maturin wrote into `out` (the only offload_tools one: older
/// ones are removed before the build).
fn built_wheel(out: &Path) -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("offload_tools-") && n.ends_with(".whl"))
        })
        .collect();
    match (found.pop(), found.is_empty()) {
        (Some(w), true) => Ok(w),
        (None, _) => Err(format!("maturin wrote no wheel into {}", out.display())),
        (Some(_), false) => Err(format!("more than one wheel in {}", out.display())),
    }
}

/// The platform tag of a wheel's file name (`offload_tools-0.1.0-py3-none-
/// manylinux_2_34_x86_64.whl`: `manylinux_2_34_x86_64`).
fn platform_tag(wheel: &Path) -> Option<&str> {
    let name = wheel.file_name()?.to_str()?.strip_suffix(".whl")?;
    name.rsplit('-').next()
}

/// Builds the wheel into `out`; its path.
fn build(tools: &Path, out: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Ok(old) = built_wheel(out) {
        fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
    }
    let maturin = std::env::var_os("MATURIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| tools.join("maturin"));
    let st = Command::new(&maturin)
        .current_dir(workspace_root())
        .args(["build", "--locked", "--out"])
        .arg(out)
        .status()
        .map_err(|e| format!("{}: {e}", maturin.display()))?;
    if !st.success() {
        return Err("maturin build failed".into());
    }
    built_wheel(out)
}

/// PATH without the directories that hold cargo, rustc or rustup.
fn path_without_rust() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).filter(|d| {
        !["cargo", "rustc", "rustup"]
            .iter()
            .any(|p| d.join(p).exists())
    });
    std::env::join_paths(dirs).unwrap_or_default()
}

/// The `path`s of crates/offload-tools' binaries (its `[[bin]]` tables).
fn bin_paths() -> Result<Vec<String>, String> {
    let manifest = workspace_root().join("crates/offload-tools/Cargo.toml");
    let toml = fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let paths: Vec<String> = toml
        .split("[[bin]]")
        .skip(1)
        .filter_map(|t| {
            let line = t.lines().find(|l| l.starts_with("path = "))?;
            Some(
                line.trim_start_matches("path = ")
                    .trim_matches('"')
                    .to_string(),
            )
        })
        .collect();
    if paths.len() != 6 {
        return Err(format!(
            "{}: {} binaries, not 6",
            manifest.display(),
            paths.len()
        ));
    }
    Ok(paths)
}

/// The source distribution (`maturin sdist`, which `pip install` builds
/// where no wheel fits) holds every binary's source: `cargo package`,
/// which maturin uses, silently drops a binary whose file it does not
/// package.
fn check_sdist(tools: &Path, tmp: &Path) -> Result<(), String> {
    let out = tmp.join("sdist");
    let st = Command::new(tools.join("maturin"))
        .current_dir(workspace_root())
        .args(["sdist", "--out"])
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("maturin sdist: {e}"))?;
    if !st.success() {
        return Err("maturin sdist failed".into());
    }
    let sdist = fs::read_dir(&out)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "gz"))
        .ok_or("maturin sdist wrote no .tar.gz")?;
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&sdist)
        .output()
        .map_err(|e| format!("tar: {e}"))?;
    let listing = String::from_utf8_lossy(&listing.stdout);
    for path in bin_paths()? {
        let want = format!("/crates/offload-tools/{path}");
        if !listing.lines().any(|l| l.ends_with(&want)) {
            return Err(format!("the source distribution lacks {want}"));
        }
    }
    println!("wheel: ok the source distribution holds every binary's source");
    Ok(())
}

fn check(tools: &Path, wheel: &Path) -> Result<(), String> {
    let tag = platform_tag(wheel).ok_or("a wheel name without a platform tag")?;
    if !tag.starts_with("manylinux_") {
        return Err(format!("the platform tag {tag} is not a manylinux one"));
    }
    // auditwheel's verdict on the wheel as built (maturin's own check
    // passed, or the build would have failed).
    let shown = Command::new(tools.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .output()
        .map_err(|e| format!("auditwheel: {e}"))?;
    let text = String::from_utf8_lossy(&shown.stdout);
    println!("{}", text.trim_end());
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let verdict = format!("is consistent with the following platform tag: \"{tag}\"");
    if !shown.status.success() || !words.contains(&verdict) {
        return Err(format!("auditwheel show does not say the wheel {verdict}"));
    }

    let root = workspace_root();
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    check_sdist(tools, tmp.path())?;
    let dir = tmp.path().join("sandbox");
    for f in FILES {
        let to = dir.join(f);
        fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        fs::copy(root.join(f), &to).map_err(|e| format!("{f}: {e}"))?;
    }
    // uv alone, for the part without Rust.
    let uv_dir = tmp.path().join("uv");
    fs::create_dir_all(&uv_dir).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(tools.join("uv"), uv_dir.join("uv")).map_err(|e| e.to_string())?;
    let mut no_rust = std::env::split_paths(&path_without_rust()).collect::<Vec<_>>();
    no_rust.insert(0, uv_dir);
    let no_rust = std::env::join_paths(no_rust).map_err(|e| e.to_string())?;

    let script = root.join("xtask/src/wheel.sh");
    let wheels = wheel.parent().ok_or("a wheel without a directory")?;
    let mut cmd = Command::new("bash");
    // HOME moves into the sandbox (uv's ~/.local/bin); cargo and rustup
    // keep theirs.
    if let Some(home) = std::env::var_os("HOME") {
        for (var, dir) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
            if std::env::var_os(var).is_none() {
                cmd.env(var, Path::new(&home).join(dir));
            }
        }
    }
    let cmd = cmd
        .args(["-euo", "pipefail"])
        .arg(&script)
        .current_dir(&dir)
        .env("HOME", &dir)
        .env("OFFLOAD_TOOLS_REPO", &root)
        .env("WHEELS", wheels)
        .env("NO_RUST_PATH", no_rust)
        .env("CARGO_INSTALL_ROOT", tmp.path().join("cargo"))
        // Its own target directory, kept between runs; a quick profile
        // (the commands are under test, not the optimiser).
        .env("CARGO_TARGET_DIR", root.join("target/cargo-install"))
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        // Cargo.lock's crates are downloaded by now (the wheel's build
        // resolved them all).
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("VIRTUAL_ENV")
        .status()
        .map_err(|e| format!("bash: {e}"))?;
    if !cmd.success() {
        return Err(format!("{} failed ({cmd})", script.display()));
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let tools = python_tools()?;
    let wheel = build(&tools, &o.out)?;
    let size = fs::metadata(&wheel)
        .map_err(|e| format!("{}: {e}", wheel.display()))?
        .len();
    println!(
        "wheel: {} ({:.1} MB)",
        wheel.display(),
        size as f64 / 1_000_000.0
    );
    if o.check {
        check(&tools, &wheel)?;
        println!(
            "wheel --check: all good ({}, {:.1} MB)",
            wheel.file_name().unwrap_or_default().to_string_lossy(),
            size as f64 / 1_000_000.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_tag_is_the_last_part_of_the_name() {
        let w = Path::new("/x/offload_tools-0.1.0-py3-none-manylinux_2_34_x86_64.whl");
        assert_eq!(platform_tag(w), Some("manylinux_2_34_x86_64"));
    }

    #[test]
    fn the_six_binaries_are_found() {
        let paths = bin_paths().unwrap();
        assert!(
            paths.contains(&"tools/offload/main.rs".to_string()),
            "{paths:?}"
        );
        for p in paths {
            assert!(
                workspace_root()
                    .join("crates/offload-tools")
                    .join(&p)
                    .is_file(),
                "{p}"
            );
        }
    }

    /// Every pin names one version.
    #[test]
    fn python_tools_are_pinned() {
        for p in PYTHON_TOOLS {
            let (name, version) = p.split_once("==").unwrap();
            assert!(!name.is_empty() && version.split('.').count() == 3, "{p}");
        }
    }
}
