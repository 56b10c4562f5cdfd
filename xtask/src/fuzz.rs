//! `cargo xtask fuzz`: runs the cargo-fuzz targets of `fuzz/` for a fixed
//! time each and reports executions and crashes; `--seed-corpus` rewrites
//! the committed seed corpus from the fixtures and our own writers.
//!
//! The targets are built once (nightly, `cargo fuzz build`), with debug
//! assertions so arithmetic overflow is a finding. Each target reads its
//! committed seeds from `fuzz/corpus/<target>/` and grows a scratch corpus
//! under `fuzz/target/corpus/<target>/`, so a run never changes tracked
//! files; crash inputs land in `fuzz/artifacts/<target>/`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::workspace_root;

mod seeds;

struct Options {
    targets: Vec<String>,
    seconds: u64,
    sanitizer: String,
    seed_corpus: bool,
    list: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        targets: Vec::new(),
        seconds: 60,
        sanitizer: "none".into(),
        seed_corpus: false,
        list: false,
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
                    .map_err(|_| format!("--seconds: not a number: {v}"))?;
            }
            "--sanitizer" => o.sanitizer = value("--sanitizer")?,
            "--seed-corpus" => o.seed_corpus = true,
            "--list" => o.list = true,
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
    check_tools()?;
    build(&o.sanitizer)?;
    let mut results = Vec::new();
    for t in &chosen {
        let r = run_target(t, &o)?;
        eprintln!(
            "fuzz {t}: {} executions, {}",
            r.executions,
            r.outcome_text()
        );
        results.push(r);
    }
    print_table(&results, o.seconds);
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.artifact.is_some() || !r.clean)
        .map(|r| r.target.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("findings in: {}", failed.join(", ")))
    }
}

fn check_tools() -> Result<(), String> {
    let ok = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err("needs a nightly toolchain and cargo-fuzz \
             (rustup toolchain install nightly; cargo install cargo-fuzz --locked)"
            .into())
    }
}

fn fuzz_command() -> Command {
    let mut cmd = Command::new("cargo");
    // Run from the repository root: cargo-fuzz finds `fuzz/` there. The
    // `cargo xtask` alias sets variables for the main workspace that must
    // not leak into the nightly build of the other one.
    cmd.current_dir(workspace_root())
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO_MANIFEST_DIR")
        .args(["+nightly", "fuzz"]);
    cmd
}

fn build(sanitizer: &str) -> Result<(), String> {
    let status = fuzz_command()
        .args(["build", "--debug-assertions", "--sanitizer", sanitizer])
        .status()
        .map_err(|e| format!("running cargo fuzz build: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("cargo fuzz build failed".into())
    }
}

struct TargetResult {
    target: String,
    executions: u64,
    /// The run ended normally (time limit reached, no finding).
    clean: bool,
    /// The crash / timeout / out-of-memory input libFuzzer wrote.
    artifact: Option<PathBuf>,
    /// libFuzzer's one-line summary of a finding.
    finding: Option<String>,
    corpus_files: usize,
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

fn run_target(target: &str, o: &Options) -> Result<TargetResult, String> {
    let root = workspace_root();
    let seeds = fuzz_dir().join("corpus").join(target);
    let work = fuzz_dir().join("target/corpus").join(target);
    let artifacts = fuzz_dir().join("artifacts").join(target);
    for d in [&seeds, &work, &artifacts] {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut artifact_prefix = artifacts.as_os_str().to_owned();
    artifact_prefix.push("/");
    let out = fuzz_command()
        .args([
            "run",
            "--debug-assertions",
            "--sanitizer",
            &o.sanitizer,
            target,
        ])
        .arg(&work)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={}", o.seconds))
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
        .current_dir(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("running cargo fuzz run {target}: {e}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    let log_path = fuzz_dir().join("target").join(format!("{target}.log"));
    let _ = fs::write(&log_path, log.as_bytes());
    let executions = log
        .lines()
        .filter_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .unwrap_or(0);
    let artifact = log
        .lines()
        .filter_map(|l| l.split_once("Test unit written to "))
        .map(|(_, p)| PathBuf::from(p.trim()))
        .next_back();
    let finding = log
        .lines()
        .find(|l| {
            l.contains("==ERROR: libFuzzer:")
                || l.contains("panicked at")
                || l.starts_with("SUMMARY:")
        })
        .map(|l| l.trim().to_string());
    let corpus_files = fs::read_dir(&work).map(|d| d.count()).unwrap_or(0);
    Ok(TargetResult {
        target: target.to_string(),
        executions,
        clean: out.status.success() && finding.is_none(),
        artifact,
        finding,
        corpus_files,
    })
}

fn print_table(results: &[TargetResult], seconds: u64) {
    let seeds = corpus_sizes();
    println!("\n| target | seconds | executions | seeds (files/bytes) | corpus after | result |");
    println!("|---|---:|---:|---:|---:|---|");
    for r in results {
        let (n, bytes) = seeds.get(&r.target).copied().unwrap_or((0, 0));
        println!(
            "| {} | {} | {} | {n}/{bytes} | {} | {} |",
            r.target,
            seconds,
            r.executions,
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
