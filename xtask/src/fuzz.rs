//! `cargo xtask fuzz`: runs the cargo-fuzz targets of `fuzz/` for a fixed
//! time each, one after another, and reports per target the executions run
//! and the crashes found; `--write-docs` records the figures in
//! `docs/fuzzing.md`; `--seed-corpus` rewrites the committed seed corpus
//! from the fixtures and our own writers.
//!
//! The targets are built once (`cargo fuzz build`), with debug assertions
//! so arithmetic overflow is a finding. No nightly toolchain is needed:
//! cargo-fuzz's instrumentation flags are stable codegen options, and
//! `RUSTC_BOOTSTRAP=1` (always set, so switching sanitizers is the only
//! thing that rebuilds) lets a stable compiler take the `-Zsanitizer`
//! flag of `--sanitizer address`. Each target reads its committed seeds
//! from `fuzz/corpus/<target>/` and grows a scratch corpus under
//! `fuzz/target/corpus/<target>/`, so a run never changes tracked files;
//! crash inputs land in `fuzz/artifacts/<target>/`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::harness::workspace_root;

mod docs;
mod seeds;

struct Options {
    targets: Vec<String>,
    seconds: u64,
    sanitizer: String,
    /// A rustup toolchain name (`cargo +NAME fuzz`); the default one if unset.
    toolchain: Option<String>,
    /// The debug profile (`cargo fuzz --dev`): builds in about a third of
    /// the CPU time and runs about ten times slower; for smoke runs.
    dev: bool,
    seed_corpus: bool,
    /// libFuzzer's random seed (`-seed=N`); libFuzzer picks one if unset.
    seed: Option<u64>,
    list: bool,
    write_docs: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        seconds: 60,
        sanitizer: "none".into(),
        toolchain: None,
        dev: false,
        seed_corpus: false,
        seed: None,
        list: false,
        write_docs: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--seconds" => {
                let v = value("--seconds")?;
                o.seconds = v
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("--seconds: not a positive number: {v}"))?;
            }
            "--sanitizer" => o.sanitizer = value("--sanitizer")?,
            "--toolchain" => o.toolchain = Some(value("--toolchain")?),
            "--dev" => o.dev = true,
            "--seed-corpus" => o.seed_corpus = true,
            "--seed" => {
                let v = value("--seed")?;
                o.seed = Some(
                    v.parse()
                        .map_err(|_| format!("--seed: not a number: {v}"))?,
                );
            }
            "--list" => o.list = true,
            "--write-docs" => o.write_docs = true,
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            s => o.targets.push(s.to_string()),
        }
    }
    Ok(o)
}

/// The fuzz targets, read from `fuzz/Cargo.toml` (`[[bin]]` names).
pub fn targets() -> Result<Vec<String>, String> {
    let manifest = fuzz_dir().join("Cargo.toml");
    let text = fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin {
            if let Some(rest) = line.strip_prefix("name") {
                let name = rest.trim_start().trim_start_matches('=').trim();
                names.push(name.trim_matches('"').to_string());
            }
        }
    }
    Ok(names)
}

fn fuzz_dir() -> PathBuf {
    workspace_root().join("fuzz")
}

pub fn run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let all = targets()?;
    if o.list {
        for t in &all {
            println!("{t}");
        }
        return Ok(());
    }
    let chosen: Vec<String> = if o.targets.is_empty() {
        all.clone()
    } else {
        for t in &o.targets {
            if !all.contains(t) {
                return Err(format!("no fuzz target '{t}' (have: {})", all.join(", ")));
            }
        }
        o.targets.clone()
    };
    if o.seed_corpus {
        return seeds::write_all(&chosen);
    }
    let versions = check_tools(&o)?;
    let started = Instant::now();
    build(&o)?;
    let build_seconds = started.elapsed().as_secs();
    eprintln!("fuzz: targets built in {build_seconds} s ({versions})");
    let mut results = Vec::new();
    for t in &chosen {
        let r = run_target(t, &o)?;
        eprintln!(
            "fuzz {t}: {} executions in {} s, {} crashes: {}",
            r.executions,
            r.seconds,
            r.crashes,
            r.outcome_text()
        );
        results.push(r);
    }
    print_table(&results);
    eprintln!(
        "fuzz: {} targets, {} executions, {} crashes, {} s in all (build {build_seconds} s)",
        results.len(),
        results.iter().map(|r| r.executions).sum::<u64>(),
        results.iter().map(|r| r.crashes).sum::<usize>(),
        started.elapsed().as_secs()
    );
    if o.write_docs {
        let page = docs::write(&all, &results, &o, &versions)?;
        eprintln!("fuzz: wrote {}", page.display());
    }
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| !r.clean)
        .map(|r| r.target.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        for r in results.iter().filter(|r| !r.clean) {
            eprintln!(
                "fuzz {}: log in {}{}",
                r.target,
                r.log.display(),
                r.artifact
                    .as_ref()
                    .map(|a| format!("; replay: {}", replay_command(&r.target, a, &o)))
                    .unwrap_or_default()
            );
        }
        Err(format!("findings in: {}", failed.join(", ")))
    }
}

/// The command that replays one input through a target (for reports).
fn replay_command(target: &str, input: &Path, o: &Options) -> String {
    let toolchain = o
        .toolchain
        .as_ref()
        .map(|t| format!(" +{t}"))
        .unwrap_or_default();
    let rel = input.strip_prefix(workspace_root()).unwrap_or(input);
    format!(
        "RUSTC_BOOTSTRAP=1 cargo{toolchain} fuzz run {} {target} {}",
        profile_args(o).join(" "),
        rel.display()
    )
}

/// The build options shared by `cargo fuzz build` and `cargo fuzz run`
/// (which rebuilds when they differ).
fn profile_args(o: &Options) -> Vec<&str> {
    let mut args = vec!["--debug-assertions", "--sanitizer", &o.sanitizer];
    if o.dev {
        args.push("--dev");
    }
    args
}

/// Checks that cargo-fuzz runs; returns the compiler and cargo-fuzz
/// versions, for reports.
fn check_tools(o: &Options) -> Result<String, String> {
    let fuzz = fuzz_command(o)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .ok_or_else(|| {
            "cargo-fuzz does not run (install it with `cargo install cargo-fuzz --locked`)"
                .to_string()
        })?;
    let mut rustc = Command::new("rustc");
    if let Some(t) = &o.toolchain {
        rustc.arg(format!("+{t}"));
    }
    let rustc = rustc
        .env_remove("RUSTUP_TOOLCHAIN")
        .arg("--version")
        .output()
        .map_err(|e| format!("running rustc: {e}"))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    Ok(format!("{}, {}", text(&rustc.stdout), text(&fuzz.stdout)))
}

fn fuzz_command(o: &Options) -> Command {
    let mut cmd = Command::new("cargo");
    // Run from the repository root: cargo-fuzz finds `fuzz/` there. The
    // `cargo xtask` alias sets variables for the main workspace that must
    // not leak into the build of the other one.
    cmd.current_dir(workspace_root())
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO_MANIFEST_DIR")
        .env("RUSTC_BOOTSTRAP", "1");
    if let Some(t) = &o.toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.arg("fuzz");
    cmd
}

fn build(o: &Options) -> Result<(), String> {
    let status = fuzz_command(o)
        .arg("build")
        .args(profile_args(o))
        .status()
        .map_err(|e| format!("running cargo fuzz build: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("cargo fuzz build failed".into())
    }
}

/// What one target's run gave.
struct TargetResult {
    target: String,
    /// Wall-clock seconds of the run (libFuzzer's limit plus start-up).
    seconds: u64,
    executions: u64,
    /// libFuzzer's `stat::average_exec_per_sec`.
    exec_per_sec: u64,
    /// libFuzzer's `stat::peak_rss_mb`.
    peak_rss_mb: u64,
    /// Crash, timeout and out-of-memory inputs written by this run
    /// (libFuzzer stops at the first, so 0 or 1).
    crashes: usize,
    /// The run ended normally (time limit reached, no finding).
    clean: bool,
    /// The crash / timeout / out-of-memory input libFuzzer wrote.
    artifact: Option<PathBuf>,
    /// libFuzzer's one-line summary of a finding.
    finding: Option<String>,
    /// Files in the scratch corpus after the run.
    corpus_files: usize,
    /// The run's full libFuzzer output.
    log: PathBuf,
}

impl TargetResult {
    fn outcome_text(&self) -> String {
        match (&self.finding, &self.artifact) {
            (Some(f), Some(a)) => format!("{f} (input: {})", a.display()),
            (Some(f), None) => f.clone(),
            (None, _) if self.clean => "no findings".into(),
            (None, _) => "fuzzer failed".into(),
        }
    }
}

/// The input files libFuzzer wrote for findings in `dir`.
fn artifact_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// The last value of a `stat::NAME:` line of libFuzzer's final statistics.
fn stat(log: &str, name: &str) -> Option<u64> {
    let key = format!("stat::{name}:");
    log.lines()
        .filter_map(|l| l.strip_prefix(key.as_str()))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
}

fn run_target(target: &str, o: &Options) -> Result<TargetResult, String> {
    let seeds = fuzz_dir().join("corpus").join(target);
    let work = fuzz_dir().join("target/corpus").join(target);
    let artifacts = fuzz_dir().join("artifacts").join(target);
    for d in [&seeds, &work, &artifacts] {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let before = artifact_files(&artifacts);
    let mut artifact_prefix = artifacts.as_os_str().to_owned();
    artifact_prefix.push("/");
    let started = Instant::now();
    let out = fuzz_command(o)
        .arg("run")
        .args(profile_args(o))
        .arg(target)
        .arg(&work)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={}", o.seconds))
        .args(o.seed.map(|s| format!("-seed={s}")))
        .arg("-print_final_stats=1")
        // A single input taking seconds is a hang for these parsers.
        .arg("-timeout=10")
        // Every allocation above this is a finding: hostile headers must
        // never drive allocation.
        .arg("-malloc_limit_mb=512")
        .arg("-rss_limit_mb=1536")
        .arg({
            let mut a = std::ffi::OsString::from("-artifact_prefix=");
            a.push(&artifact_prefix);
            a
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("running cargo fuzz run {target}: {e}"))?;
    let seconds = started.elapsed().as_secs();
    let log = String::from_utf8_lossy(&out.stderr);
    let log_path = fuzz_dir().join("target").join(format!("{target}.log"));
    let _ = fs::write(&log_path, log.as_bytes());
    let new_artifacts: Vec<PathBuf> = artifact_files(&artifacts)
        .into_iter()
        .filter(|a| !before.contains(a))
        .collect();
    let artifact = log
        .lines()
        .filter_map(|l| l.split_once("Test unit written to "))
        .map(|(_, p)| PathBuf::from(p.trim()))
        .next_back()
        .or_else(|| new_artifacts.last().cloned());
    let finding = log
        .lines()
        .find(|l| {
            l.contains("==ERROR: libFuzzer:")
                || l.contains("panicked at")
                || l.starts_with("SUMMARY:")
        })
        .map(|l| l.trim().to_string());
    let corpus_files = fs::read_dir(&work).map(|d| d.count()).unwrap_or(0);
    let executions = stat(&log, "number_of_executed_units").unwrap_or(0);
    Ok(TargetResult {
        target: target.to_string(),
        seconds,
        executions,
        exec_per_sec: stat(&log, "average_exec_per_sec").unwrap_or(0),
        peak_rss_mb: stat(&log, "peak_rss_mb").unwrap_or(0),
        crashes: new_artifacts.len(),
        // A run that printed no final statistics did not fuzz at all
        // (failed build, bad flag): not clean either.
        clean: out.status.success()
            && finding.is_none()
            && new_artifacts.is_empty()
            && executions > 0,
        artifact,
        finding,
        corpus_files,
        log: log_path,
    })
}

fn print_table(results: &[TargetResult]) {
    let seeds = corpus_sizes();
    println!(
        "\n| target | seconds | executions | exec/s | crashes | peak RSS MB | seeds (files/bytes) | corpus after | result |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in results {
        let (n, bytes) = seeds.get(&r.target).copied().unwrap_or((0, 0));
        println!(
            "| {} | {} | {} | {} | {} | {} | {n}/{bytes} | {} | {} |",
            r.target,
            r.seconds,
            r.executions,
            r.exec_per_sec,
            r.crashes,
            r.peak_rss_mb,
            r.corpus_files,
            r.outcome_text()
        );
    }
}

/// Number of seed files and total bytes per target, for reports.
fn corpus_sizes() -> BTreeMap<String, (usize, u64)> {
    let mut sizes = BTreeMap::new();
    let base = fuzz_dir().join("corpus");
    if let Ok(dirs) = fs::read_dir(&base) {
        for d in dirs.flatten() {
            let (mut n, mut bytes) = (0, 0);
            if let Ok(files) = fs::read_dir(d.path()) {
                for f in files.flatten() {
                    n += 1;
                    bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
            sizes.insert(d.file_name().to_string_lossy().into_owned(), (n, bytes));
        }
    }
    sizes
}

/// The fixture directory of an area.
fn fixtures(area: &str) -> PathBuf {
    workspace_root().join("tests/fixtures").join(area)
}

/// Regular files of a fixture area, sorted, no larger than `max` bytes.
fn fixture_files(area: &str, max: u64, keep: impl Fn(&str) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir(fixtures(area)) else {
        return out;
    };
    let mut entries: Vec<_> = dir.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(md) = e.metadata() else { continue };
        if !md.is_file() || md.len() > max || !keep(&name) {
            continue;
        }
        if let Ok(bytes) = fs::read(e.path()) {
            out.push((format!("{}-{name}", area.replace('/', "-")), bytes));
        }
    }
    out
}

fn write_dir(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Generated seeds are replaced; `regress-*` files (inputs that once
    // crashed a target, added by hand) stay.
    for e in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        if !e.file_name().to_string_lossy().starts_with("regress-") {
            fs::remove_file(e.path()).map_err(|err| format!("{}: {err}", e.path().display()))?;
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (name, bytes) in files {
        // Identical seeds only cost time.
        if !seen.insert(bytes.clone()) {
            continue;
        }
        let p = dir.join(name);
        fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
