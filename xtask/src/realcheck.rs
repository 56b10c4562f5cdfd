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
//!
//! With `--more` (about 1.2 GB more), the wheels of [`MORE`] (libraries
//! from other projects, none of them used to build `thin`) get the wheel
//! check, and each library the thinned wheel changed is compared with the
//! original: the same defined dynamic symbols (`nm -D`), no complaint of
//! `eu-elflint --gnu-ld` the original does not have (segment numbers
//! aside: a split segment renumbers those after it), and, where
//! cuobjdump is found (`$CUOBJDUMP`, else `PATH`), only cubins an sm_90
//! runs listed, every ELF and PTX it extracts from the thinned library
//! byte-identical to one it extracts from the original.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{our_bin_dir, run_checked as sh, workspace_root};

const USAGE: &str = "cargo xtask realcheck [--skip-torch] [--import] [--import-only] [--more]";

/// The wheels `--more` adds: CUDA libraries built by other projects.
const MORE: &[&str] = &[
    "vllm==0.33.0",
    "sgl-kernel==0.3.21",
    "cupy-cuda12x==14.2.0",
    "ctranslate2==4.8.5",
    "xformers==0.0.35",
    "torchvision==0.29.2",
    "jax-cuda12-plugin==0.7.0",
];

/// The cubin architectures an sm_90 runs, as cuobjdump names them.
const RUNS_ON_KEEP: &[&str] = &["sm_90", "sm_90a"];

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

/// What one `thin` run reports: the bytes freed, and how many files it
/// shrank.
#[derive(Clone, Copy)]
struct Thinned {
    freed: u64,
    shrunk: u64,
}

/// What shrinking a file cannot take out, at most: the partial pages at
/// either end of the freed space. What follows keeps its address, so its
/// file offset moves by whole pages, and the page holding the end of
/// the kept bytes and the one where the next contents start stay.
/// (A jax plugin library freeing 9,784 bytes shrinks by 4,096.)
const PAGE_ROUNDING: u64 = 2 * 4096;

/// Runs `offload thin` with `args`; returns what it reports, and prints
/// how many files it shrank and why the others were not.
fn thin(offload: &Path, args: &[&Path], extra: &[&str]) -> Result<Thinned, String> {
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
    Ok(Thinned {
        freed: freed(&report)?,
        shrunk: shrunk as u64,
    })
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

/// Whether a run met the goal: at least [`GOAL`] of the freed bytes
/// left the installed size (`dropped`), or all but the page rounding
/// ([`PAGE_ROUNDING`] per shrunk file) did, which decides only where a
/// wheel frees a few KiB per file. Returns the share and the verdict.
fn judge(thinned: Thinned, dropped: u64) -> (f64, Option<&'static str>) {
    let freed = thinned.freed;
    let share = if freed == 0 {
        0.0
    } else {
        dropped as f64 / freed as f64
    };
    let rounding = freed.saturating_sub(dropped) <= thinned.shrunk * PAGE_ROUNDING;
    let verdict = if share >= GOAL {
        Some("met")
    } else if rounding && thinned.shrunk > 0 {
        Some("met: the rest is page rounding")
    } else {
        None
    };
    (share, verdict)
}

/// One line of figures, and whether the goal was met ([`judge`]).
fn report(what: &str, thinned: Thinned, before: u64, after: u64, missed: &mut Vec<String>) {
    let dropped = before.saturating_sub(after);
    let (share, verdict) = judge(thinned, dropped);
    eprintln!(
        "  {what}: thin freed {}; du {} -> {} (dropped {}, {:.1}% of freed; goal {:.0}%: {})",
        mb(thinned.freed),
        mb(before),
        mb(after),
        mb(dropped),
        share * 100.0,
        GOAL * 100.0,
        verdict.unwrap_or("MISSED")
    );
    if verdict.is_none() {
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

/// The wheel check and the tree check of one wheel; with `libraries`,
/// each library the thinned wheel changed compared with the original too.
fn check_wheel(
    offload: &Path,
    wheel: &Path,
    work: &Path,
    libraries: bool,
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
    if libraries {
        compare_libraries(wheel, &thinned, work, missed)?;
    }
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

/// `wheel` and `thinned` unpacked side by side; every shared library that
/// differs is checked as the module documentation says.
fn compare_libraries(
    wheel: &Path,
    thinned: &Path,
    work: &Path,
    missed: &mut Vec<String>,
) -> Result<(), String> {
    let (a, b) = (
        work.join("unpacked-original"),
        work.join("unpacked-thinned"),
    );
    for (zip, dir) in [(wheel, &a), (thinned, &b)] {
        let _ = fs::remove_dir_all(dir);
        sh(Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(zip)
            .arg(dir))?;
    }
    let cuobjdump = crate::harness::external_tool("CUOBJDUMP", "cuobjdump");
    let mut libs = Vec::new();
    collect_libraries(&a, &mut libs);
    libs.sort();
    let (mut changed, mut failed) = (0usize, Vec::new());
    for original in &libs {
        let rel = original.strip_prefix(&a).map_err(|e| e.to_string())?;
        let new = b.join(rel);
        let (x, y) = (fs::read(original), fs::read(&new));
        if matches!((&x, &y), (Ok(x), Ok(y)) if x == y) {
            continue;
        }
        changed += 1;
        let name = rel.display().to_string();
        let mut problems = Vec::new();
        let nm = |f: &Path| {
            sh(Command::new("nm").args(["-D", "--defined-only"]).arg(f)).map(|o| o.stdout)
        };
        if nm(original)? != nm(&new)? {
            problems.push("nm -D differs".to_owned());
        }
        let lint = |f: &Path| -> Vec<String> {
            let o = Command::new("eu-elflint").arg("--gnu-ld").arg(f).output();
            let text = o
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout).into_owned()
                        + &String::from_utf8_lossy(&o.stderr)
                })
                .unwrap_or_default();
            let path = f.display().to_string();
            let mut lines: Vec<String> = text
                .lines()
                .map(|l| normalize_lint(&l.replace(&path, "")))
                .collect();
            lines.sort();
            lines.dedup();
            lines
        };
        let before = lint(original);
        let added: Vec<String> = lint(&new)
            .into_iter()
            .filter(|l| !before.contains(l))
            .collect();
        if !added.is_empty() {
            problems.push(format!("eu-elflint: {}", added.join(" | ")));
        }
        if let Some(cuo) = &cuobjdump {
            let listed = sh(Command::new(cuo).arg("-lelf").arg(&new))
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let foreign: Vec<&str> = listed
                .lines()
                .filter(|l| {
                    !RUNS_ON_KEEP
                        .iter()
                        .any(|arch| l.contains(&format!(".{arch}.cubin")))
                })
                .collect();
            if !foreign.is_empty() {
                problems.push(format!("cuobjdump lists {}", foreign.join(", ")));
            }
            let extracted = |f: &Path, into: &Path| -> Result<Vec<Vec<u8>>, String> {
                let _ = fs::remove_dir_all(into);
                fs::create_dir_all(into).map_err(|e| e.to_string())?;
                let _ = Command::new(cuo)
                    .args(["-xelf", "all", "-xptx", "all"])
                    .arg(f)
                    .current_dir(into)
                    .output();
                let mut all: Vec<Vec<u8>> = fs::read_dir(into)
                    .map_err(|e| e.to_string())?
                    .flatten()
                    .filter_map(|e| fs::read(e.path()).ok())
                    .collect();
                all.sort();
                Ok(all)
            };
            let from_original = extracted(original, &work.join("x-original"))?;
            let from_thinned = extracted(&new, &work.join("x-thinned"))?;
            let strangers = from_thinned
                .iter()
                .filter(|t| from_original.binary_search(t).is_err())
                .count();
            if strangers > 0 {
                problems.push(format!(
                    "{strangers} of the {} images cuobjdump extracts are not the original's",
                    from_thinned.len()
                ));
            }
        }
        if !problems.is_empty() {
            failed.push(format!("{name}: {}", problems.join("; ")));
        }
    }
    let tools = if cuobjdump.is_some() {
        "nm -D, eu-elflint, cuobjdump"
    } else {
        "nm -D, eu-elflint (no cuobjdump found)"
    };
    eprintln!(
        "  {changed} libraries changed; {} of them as the original by {tools}",
        changed - failed.len()
    );
    for f in &failed {
        eprintln!("    {f}");
    }
    missed.extend(failed);
    for d in [&a, &b, &work.join("x-original"), &work.join("x-thinned")] {
        let _ = fs::remove_dir_all(d);
    }
    Ok(())
}

/// Every file under `dir` named like a shared library (`.so`, `.so.N`).
fn collect_libraries(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => collect_libraries(&p, out),
            Ok(t) if t.is_file() => {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                if name.ends_with(".so") || name.contains(".so.") {
                    out.push(p);
                }
            }
            _ => {}
        }
    }
}

/// An `eu-elflint` line with its segment numbers taken out: a split
/// segment renumbers the ones after it, and the complaint is the same.
fn normalize_lint(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("segment [") {
        let after = &rest[i + "segment [".len()..];
        match after.find(']') {
            Some(j) if after[..j].bytes().all(|b| b.is_ascii_digit() || b == b' ') => {
                out.push_str(&rest[..i]);
                out.push_str("segment [N]");
                rest = &after[j + 1..];
            }
            _ => {
                out.push_str(&rest[..i + "segment [".len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
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
    let mut more = false;
    for a in args {
        match a.as_str() {
            "--more" => more = true,
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
    let mut wanted: Vec<&str> = WHEELS
        .iter()
        .copied()
        .filter(|w| !(skip_torch && w.starts_with("torch")))
        .collect();
    if more {
        wanted.extend(MORE);
    }
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
        let libraries = MORE.contains(w);
        check_wheel(
            &offload,
            &find_wheel(&wheels_dir, w)?,
            &work,
            libraries,
            &mut missed,
        )?;
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
    use super::{freed, judge, normalize_lint, Thinned};

    #[test]
    fn page_rounding_excuses_kilobytes_not_megabytes() {
        let t = |freed, shrunk| Thinned { freed, shrunk };
        // jax-cuda12-plugin 0.7.0: 124,752 bytes freed in 4 files, 106,496
        // of them left the installed size.
        assert_eq!(
            judge(t(124_752, 4), 106_496).1,
            Some("met: the rest is page rounding")
        );
        assert_eq!(judge(t(100_000_000, 7), 99_900_000).1, Some("met"));
        // Megabytes kept are a miss, however many files shrank.
        assert_eq!(judge(t(100_000_000, 7), 70_000_000).1, None);
        // Nothing shrunk: no rounding to excuse.
        assert_eq!(judge(t(9_784, 0), 0).1, None);
    }

    #[test]
    fn lint_lines_lose_their_segment_numbers_only() {
        assert_eq!(
            normalize_lint("loadable segment [13] is writable but contains no writable sections"),
            "loadable segment [N] is writable but contains no writable sections"
        );
        assert_eq!(
            normalize_lint("section [26] '.symtab': segment [x] and segment [2]"),
            "section [26] '.symtab': segment [x] and segment [N]"
        );
        assert_eq!(normalize_lint("segment [7"), "segment [7");
    }

    #[test]
    fn the_freed_figure_is_read_from_the_last_report_line() {
        let report = "  lib.so\n    1 of 2 containers rewritten, 3 entries dropped, 100 bytes freed (1.0% of 9 bytes)\n  \
                      7 of 15 members with device code thinned, 319 entries dropped, 100154184 bytes freed \
                      (77.9% of 128579384 bytes decoded); the archive is 13990992 bytes, was 43139553\n";
        assert_eq!(freed(report), Ok(100_154_184));
        assert!(freed("nothing here").is_err());
    }
}
