//! `cargo xtask realcheck`: what `offload thin` saves where users install
//! code (issue 31), on real wheels from PyPI. Needs the network and
//! several GB of disk, so CI does not run it.
//!
//! Inputs, downloaded with `pip download --no-deps` into
//! `$OFFLOAD_REALCHECK_DIR` (default `target/realcheck`) and reused:
//! bitsandbytes 0.50.2 (43 MB) and PyTorch 2.11.0 (531 MB; PyPI's Linux
//! build is the CUDA 13.0 one). Per wheel:
//!
//! - `wheel`: `offload thin --keep sm_90 -o` of the wheel; the original and
//!   the thinned wheel installed with `pip install --no-deps --target`;
//!   `du -sk` of both. Goal: the installed size drops by at least 90% of
//!   the bytes thin reports freed.
//! - `tree`: the original install thinned `--in-place`, then copied with
//!   `tar` (as container layers are); `du -sk` of the thinned tree and of
//!   the copy, against the original install. Same goal, for the copy.
//!
//! With `--import` (several GB more), a virtual environment gets
//! `pip install torch==2.11.0` with its dependencies, its `torch/lib` and
//! `nvidia/*/lib` are thinned `--in-place`, and `import torch` with a CPU
//! tensor operation must still work (CPU-only machines import the CUDA
//! build).
//!
//! `--skip-torch` checks bitsandbytes alone, `--import-only` the
//! environment alone. Prints one line per check
//! with the figures, and fails if a goal is missed or a step fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{our_bin_dir, run_checked as sh, workspace_root};

const USAGE: &str = "cargo xtask realcheck [--skip-torch] [--import] [--import-only]";

/// The wheels checked: pip requirement.
const WHEELS: &[&str] = &["bitsandbytes==0.50.2", "torch==2.11.0"];

/// The GPU the wheels are thinned for.
const KEEP: &str = "sm_90";

/// The share of the freed bytes the installed size must drop by.
const GOAL: f64 = 0.9;

/// `du -sk` of a path, in bytes.
fn du(path: &Path) -> Result<u64, String> {
    let o = sh(Command::new("du").arg("-sk").arg(path))?;
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .and_then(|k| k.parse::<u64>().ok())
        .map(|k| k * 1024)
        .ok_or_else(|| format!("du -sk {}: no figure", path.display()))
}

/// The bytes `offload thin` reports freed: the figure before "bytes
/// freed" on its last report line that has one.
fn freed(report: &str) -> Result<u64, String> {
    report
        .lines()
        .rev()
        .find_map(|l| {
            let (before, _) = l.split_once(" bytes freed")?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .ok_or_else(|| format!("no 'bytes freed' in thin's report:\n{report}"))
}

/// Runs `offload thin` with `args`; returns the bytes it reports freed,
/// and prints how many files it shrank and why the others were not.
fn thin(offload: &Path, args: &[&Path], extra: &[&str]) -> Result<u64, String> {
    let o = sh(Command::new(offload)
        .args(["thin", "--keep", KEEP])
        .args(extra)
        .args(args))?;
    let report =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let shrunk = report
        .lines()
        .filter(|l| l.trim_start().starts_with("shrunk:"))
        .count();
    // Each "not shrunk (why)" line, with the file it is about: the last
    // line before it that is indented less.
    let lines: Vec<&str> = report.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut not_shrunk = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(r) = l.trim_start().strip_prefix("not shrunk (") else {
            continue;
        };
        let why = r.split_once("): ").map_or(r, |(why, _)| why);
        let file = lines[..i]
            .iter()
            .rev()
            .find(|f| indent(f) < indent(l))
            .map_or("?", |f| f.trim());
        not_shrunk.push(format!("{file}: {why}"));
    }
    eprintln!(
        "  thin {extra:?}: {shrunk} files shrunk, {} rewritten in place",
        not_shrunk.len()
    );
    for n in not_shrunk {
        eprintln!("    not shrunk: {n}");
    }
    freed(&report)
}

fn pip_install(wheel: &Path, target: &Path) -> Result<(), String> {
    let _ = fs::remove_dir_all(target);
    sh(Command::new("python3")
        .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
        .args(["--no-compile", "--target"])
        .arg(target)
        .arg(wheel))?;
    Ok(())
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// One line of figures, and whether the goal was met.
fn report(what: &str, freed: u64, before: u64, after: u64, missed: &mut Vec<String>) {
    let dropped = before.saturating_sub(after);
    let share = if freed == 0 {
        0.0
    } else {
        dropped as f64 / freed as f64
    };
    let verdict = if share >= GOAL { "met" } else { "MISSED" };
    eprintln!(
        "  {what}: thin freed {}; du {} -> {} (dropped {}, {:.1}% of freed; goal {:.0}%: {verdict})",
        mb(freed),
        mb(before),
        mb(after),
        mb(dropped),
        share * 100.0,
        GOAL * 100.0
    );
    if share < GOAL {
        missed.push(format!("{what}: {:.1}% of the freed bytes", share * 100.0));
    }
}

fn find_wheel(dir: &Path, requirement: &str) -> Result<PathBuf, String> {
    let (name, version) = requirement.split_once("==").unwrap_or((requirement, ""));
    let prefix = format!("{}-{version}-", name.replace('-', "_"));
    fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| format!("no wheel for {requirement} in {}", dir.display()))
}

/// The wheel check and the tree check of one wheel.
fn check_wheel(
    offload: &Path,
    wheel: &Path,
    work: &Path,
    missed: &mut Vec<String>,
) -> Result<(), String> {
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    eprintln!("{name}:");
    // pip wants the wheel's own file name.
    let thinned_dir = work.join("thinned");
    let _ = fs::remove_dir_all(&thinned_dir);
    fs::create_dir_all(&thinned_dir).map_err(|e| e.to_string())?;
    let thinned = thinned_dir.join(&name);
    let freed_wheel = thin(offload, &[wheel], &["-o", &thinned.to_string_lossy()])?;
    let original = work.join("original");
    let installed = work.join("installed");
    pip_install(wheel, &original)?;
    pip_install(&thinned, &installed)?;
    let before = du(&original)?;
    eprintln!(
        "  wheel: {} -> {}",
        mb(fs::metadata(wheel).map_err(|e| e.to_string())?.len()),
        mb(fs::metadata(&thinned).map_err(|e| e.to_string())?.len())
    );
    report(
        "pip install of the thinned wheel",
        freed_wheel,
        before,
        du(&installed)?,
        missed,
    );
    fs::remove_dir_all(&installed).map_err(|e| e.to_string())?;
    fs::remove_file(&thinned).map_err(|e| e.to_string())?;

    // The installed tree thinned in place, then copied with tar.
    let freed_tree = thin(offload, &[&original], &["--in-place"])?;
    report(
        "tree thinned --in-place",
        freed_tree,
        before,
        du(&original)?,
        missed,
    );
    let copy = work.join("copy");
    let _ = fs::remove_dir_all(&copy);
    fs::create_dir_all(&copy).map_err(|e| e.to_string())?;
    sh(Command::new("sh").arg("-c").arg(format!(
        "tar -C '{}' -cf - . | tar -C '{}' -xf -",
        original.display(),
        copy.display()
    )))?;
    report(
        "that tree copied with tar",
        freed_tree,
        before,
        du(&copy)?,
        missed,
    );
    fs::remove_dir_all(&copy).map_err(|e| e.to_string())?;
    fs::remove_dir_all(&original).map_err(|e| e.to_string())?;
    Ok(())
}

/// `import torch` and a CPU tensor operation in a virtual environment
/// whose torch/lib and nvidia/*/lib were thinned in place.
fn check_import(offload: &Path, dir: &Path, missed: &mut Vec<String>) -> Result<(), String> {
    // A fresh environment each run: the last one is thinned already.
    let venv = dir.join("venv");
    let python = venv.join("bin/python");
    let _ = fs::remove_dir_all(&venv);
    sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--no-compile"])
        .arg("--find-links")
        .arg(dir.join("wheels"))
        .arg("torch==2.11.0"))?;
    let o =
        sh(Command::new(&python).args(["-c", "import site; print(site.getsitepackages()[0])"]))?;
    let site = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    let mut libs = vec![site.join("torch/lib")];
    if let Ok(rd) = fs::read_dir(site.join("nvidia")) {
        for e in rd.flatten() {
            let lib = e.path().join("lib");
            if lib.is_dir() {
                libs.push(lib);
            }
        }
    }
    let before: u64 = libs.iter().map(|l| du(l).unwrap_or(0)).sum();
    let refs: Vec<&Path> = libs.iter().map(PathBuf::as_path).collect();
    let freed_venv = thin(offload, &refs, &["--in-place"])?;
    let after: u64 = libs.iter().map(|l| du(l).unwrap_or(0)).sum();
    report(
        "venv torch/lib and nvidia/*/lib thinned --in-place",
        freed_venv,
        before,
        after,
        missed,
    );
    // Those directories copied with tar, as a container layer holds them.
    let copy = dir.join("venv-copy");
    let _ = fs::remove_dir_all(&copy);
    fs::create_dir_all(&copy).map_err(|e| e.to_string())?;
    // sh -c SCRIPT SITE COPY DIR...: $0 is the site directory, $1 the
    // copy, then the library directories relative to the site directory.
    let mut script = String::from("tar -C \"$0\" -cf -");
    for i in 0..libs.len() {
        script += &format!(" \"${{{}}}\"", i + 2);
    }
    script += " | tar -C \"$1\" -xf -";
    let mut tar = Command::new("sh");
    tar.arg("-c").arg(&script).arg(&site).arg(&copy);
    for l in &libs {
        tar.arg(l.strip_prefix(&site).map_err(|e| e.to_string())?);
    }
    sh(&mut tar)?;
    report(
        "those directories copied with tar",
        freed_venv,
        before,
        du(&copy)?,
        missed,
    );
    fs::remove_dir_all(&copy).map_err(|e| e.to_string())?;
    // x @ x.T of [[0, 1, 2], [3, 4, 5]] is [[5, 14], [14, 50]].
    let script = "import torch; x = torch.arange(6.0).reshape(2, 3); \
                  y = (x @ x.T).sum().item(); assert y == 83.0, y; \
                  print(torch.__version__, torch.version.cuda, y)";
    match sh(Command::new(&python).args(["-c", script])) {
        Ok(o) => eprintln!(
            "  import torch and a CPU tensor op: ok ({})",
            String::from_utf8_lossy(&o.stdout).trim()
        ),
        Err(e) => missed.push(format!("import torch after thinning: {e}")),
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut skip_torch = false;
    let mut import = false;
    let mut import_only = false;
    for a in args {
        match a.as_str() {
            "--skip-torch" => skip_torch = true,
            "--import" => import = true,
            "--import-only" => (import, import_only) = (true, true),
            _ => return Err(format!("unknown argument {a}; usage: {USAGE}")),
        }
    }
    let dir = std::env::var_os("OFFLOAD_REALCHECK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/realcheck"));
    let wheels_dir = dir.join("wheels");
    fs::create_dir_all(&wheels_dir).map_err(|e| e.to_string())?;
    let wanted: Vec<&str> = WHEELS
        .iter()
        .copied()
        .filter(|w| !(skip_torch && w.starts_with("torch")))
        .collect();
    for w in &wanted {
        if find_wheel(&wheels_dir, w).is_err() {
            sh(Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
                .arg(&wheels_dir)
                .arg(w))?;
        }
    }
    let offload = our_bin_dir()?.join("offload");
    let work = dir.join("work");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let mut missed = Vec::new();
    for w in wanted.iter().filter(|_| !import_only) {
        check_wheel(&offload, &find_wheel(&wheels_dir, w)?, &work, &mut missed)?;
    }
    if import && !skip_torch {
        check_import(&offload, &dir, &mut missed)?;
    }
    let _ = fs::remove_dir_all(&work);
    if missed.is_empty() {
        eprintln!("realcheck: every goal met");
        Ok(())
    } else {
        Err(format!("goals missed: {}", missed.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::freed;

    #[test]
    fn the_freed_figure_is_read_from_the_last_report_line() {
        let report = "  lib.so\n    1 of 2 containers rewritten, 3 entries dropped, 100 bytes freed (1.0% of 9 bytes)\n  \
                      7 of 15 members with device code thinned, 319 entries dropped, 100154184 bytes freed \
                      (77.9% of 128579384 bytes decoded); the archive is 13990992 bytes, was 43139553\n";
        assert_eq!(freed(report), Ok(100_154_184));
        assert!(freed("nothing here").is_err());
    }
}
