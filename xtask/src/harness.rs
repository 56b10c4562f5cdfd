//! Shared machinery for the differential suites: a seeded random generator,
//! locating our binaries and LLVM's, running both on identical sandboxes and
//! comparing everything a user could observe.

#![allow(dead_code)] // Helpers are used by area modules as they land.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to its end; fails, naming it and with its stderr, unless it
/// succeeds.
pub fn run_checked(cmd: &mut Command) -> Result<std::process::Output, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// Command-line options common to the suites.
pub struct Options {
    pub areas: Vec<String>,
    /// Multiplier on each area's default case count (`--cases N` sets an
    /// absolute count per area instead).
    pub cases: Option<usize>,
    pub seed: u64,
    pub keep: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            areas: Vec::new(),
            cases: None,
            seed: std::env::var("CONFORMANCE_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0x0ff1_0ad5),
            keep: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--cases" => {
                    o.cases = Some(
                        it.next()
                            .and_then(|v| v.parse().ok())
                            .ok_or("--cases needs a number")?,
                    )
                }
                "--seed" => {
                    o.seed = it
                        .next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("--seed needs a number")?
                }
                "--keep" => o.keep = true,
                s if s.starts_with('-') => return Err(format!("unknown option {s}")),
                s => o.areas.push(s.to_string()),
            }
        }
        Ok(o)
    }
}

/// SplitMix64: small, seedable and good enough for test-case generation.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num/den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// Builds the tools (`cargo build --bins`, release or debug) and returns
/// the directory that holds them.
pub fn build_tools(release: bool) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let profile: &[&str] = if release { &["--release"] } else { &[] };
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--quiet"])
        .args(profile)
        .args(["--bins", "--workspace", "--exclude", "xtask"])
        .status()
        .map_err(|e| format!("running cargo build: {e}"))?;
    if !status.success() {
        return Err("cargo build of the tools failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// clang's options for compiling a small HIP kernel for gfx906 with no GPU
/// headers or libraries (no ROCm needed) and a fixed compilation unit ID,
/// so that the output is the same on every run.
pub const HIP_GFX906_ARGS: &[&str] = &[
    "-x",
    "hip",
    "--offload-arch=gfx906",
    "-nogpuinc",
    "-nogpulib",
    "-cuid=k",
];

/// The workspace root (parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Builds our tool binaries once and returns the directory that holds them.
pub fn our_bin_dir() -> Result<PathBuf, String> {
    static DIR: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    // The tools' default features link the system zstd and zlib, as LLVM
    // does, so compressed output is byte-identical.
    DIR.get_or_init(|| build_tools(true)).clone()
}

/// A tool from outside LLVM (cuobjdump, cubloaty): the file `$var` names,
/// else `program` found on PATH; `None` when neither is a file.
pub fn external_tool(var: &str, program: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(program))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| p.is_file())
}

/// Where LLVM's version of `tool` lives, if installed.
pub fn reference_tool(tool: &str) -> Option<PathBuf> {
    let dir = if tool == "clang-offload-wrapper" {
        "/usr/lib/llvm-14/bin"
    } else {
        "/usr/lib/llvm-22/bin"
    };
    let p = Path::new(dir).join(tool);
    p.exists().then_some(p)
}

/// Path of an LLVM 22 program (clang, llvm-objdump, ...), if installed.
pub fn llvm22(program: &str) -> Option<PathBuf> {
    let p = Path::new("/usr/lib/llvm-22/bin").join(program);
    p.exists().then_some(p)
}

/// What one run of a tool showed the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code, or 128 + signal number.
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Every regular file under the working directory after the run, sorted
    /// by relative path, with its bytes; symlinks as `-> target`.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Outcome {
    /// Both runs failed (status 1) with the same stdout and stderr, and
    /// `self` left the working directory as it found it (`initial`): LLVM's
    /// partial outputs after an error are the only difference.
    pub fn same_error_without_outputs(
        &self,
        llvm: &Outcome,
        initial: &[(String, Vec<u8>)],
    ) -> bool {
        llvm.status == 1
            && self.status == 1
            && llvm.stderr == self.stderr
            && llvm.stdout == self.stdout
            && self.files == initial
    }
}

/// One differential case: the same command line run by both tools in
/// identical fresh directories.
#[derive(Clone, Default)]
pub struct Case {
    /// Short description shown on failure.
    pub label: String,
    /// Program name as the user types it (`argv[0]`); both tools are run under
    /// this name so messages that quote `argv[0]` agree.
    pub tool: String,
    pub args: Vec<OsString>,
    /// Files created in the working directory before the run (relative paths).
    pub files: Vec<(String, Vec<u8>)>,
    pub stdin: Option<Vec<u8>>,
    pub env: Vec<(String, String)>,
}

impl Case {
    /// The files the case starts with, sorted by path as
    /// [`Outcome::files`] lists them.
    pub fn sorted_files(&self) -> Vec<(String, Vec<u8>)> {
        let mut v = self.files.clone();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    pub fn new(tool: &str) -> Case {
        Case {
            tool: tool.to_string(),
            ..Case::default()
        }
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Case {
        self.args.push(a.into());
        self
    }
    pub fn file(mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Case {
        self.files.push((name.to_string(), bytes.into()));
        self
    }
    /// The command line as a shell-ish string, for reports.
    pub fn command_line(&self) -> String {
        let mut s = self.tool.clone();
        for a in &self.args {
            s.push(' ');
            s.push_str(&shell_quote(&a.to_string_lossy()));
        }
        s
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Which implementation to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Ours,
    Llvm,
}

/// Runs `case` with one implementation in a fresh directory under `scratch`.
/// `bin_dir` holds a program named `case.tool`; it is put first on PATH and
/// the program is invoked by bare name.
pub fn run_case(case: &Case, bin_dir: &Path, work: &Path) -> Result<Outcome, String> {
    if work.exists() {
        fs::remove_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    }
    fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    for (name, bytes) in &case.files {
        let p = work.join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut new_path = OsString::from(bin_dir);
    new_path.push(":");
    new_path.push(path);
    let mut cmd = Command::new(&case.tool);
    cmd.args(&case.args)
        .current_dir(work)
        .env("PATH", new_path)
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_COMPRESSION_LEVEL")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_IGNORE_ENV_VAR")
        // Conformance is judged with explanations and identification off,
        // the default (docs/compat.md).
        .env_remove("OFFLOAD_TOOLS_EXPLAIN")
        .env_remove("OFFLOAD_TOOLS_VERSION")
        .stdin(if case.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &case.env {
        cmd.env(k, v);
    }
    let out = run_with_timeout(cmd, case.stdin.as_deref(), Duration::from_secs(60))?;
    let mut files = Vec::new();
    collect_files(work, work, &mut files)?;
    // The inputs the case created are part of the state too: a tool that
    // overwrote an input is a difference worth seeing.
    Ok(Outcome {
        status: out.0,
        stdout: out.1,
        stderr: out.2,
        files,
    })
}

/// Runs a command with optional stdin, killing it after `limit`.
/// Returns (status, stdout, stderr); a signal death is 128 + signal.
pub fn run_with_timeout(
    mut cmd: Command,
    stdin: Option<&[u8]>,
    limit: Duration,
) -> Result<(i32, Vec<u8>, Vec<u8>), String> {
    use std::os::unix::process::ExitStatusExt;
    let mut child = cmd.spawn().map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    let input = stdin.map(|s| s.to_vec());
    let mut child_stdin = child.stdin.take();
    let feeder = std::thread::spawn(move || {
        if let (Some(mut w), Some(data)) = (child_stdin.take(), input) {
            let _ = w.write_all(&data);
        }
    });
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = std::io::Read::read_to_end(p, &mut v);
        }
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = std::io::Read::read_to_end(p, &mut v);
        }
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("timed out after {limit:?}: {cmd:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = feeder.join();
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ok((code, stdout, stderr))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        let ft = e.file_type().map_err(|e| e.to_string())?;
        if ft.is_symlink() {
            let t = fs::read_link(&p).map_err(|e| e.to_string())?;
            out.push((rel, format!("-> {}", t.display()).into_bytes()));
        } else if ft.is_dir() {
            out.push((format!("{rel}/"), Vec::new()));
            collect_files(root, &p, out)?;
        } else {
            out.push((
                rel,
                fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?,
            ));
        }
    }
    Ok(())
}

/// Rewrites output that is random by design before comparing.
pub type Normaliser = fn(&[u8]) -> Vec<u8>;

/// Recognises a documented difference (see [`Suite::accept`]).
pub type Acceptor = fn(&Case, &Outcome, &Outcome) -> Option<&'static str>;

/// A suite of differential cases for one area, with its tallies.
pub struct Suite {
    pub area: String,
    pub rng: Rng,
    /// Requested number of cases (area default when the user gave none).
    cases: Option<usize>,
    keep: bool,
    scratch: tempfile::TempDir,
    ours: PathBuf,
    llvm: PathBuf,
    pub ran: usize,
    pub failed: usize,
    /// Applied to stdout and stderr of both sides before comparing, for
    /// output that is random by design (e.g. temporary file names).
    pub normalise: Option<Normaliser>,
    /// Applied to the contents of every file left in the working directory
    /// (inputs included) before comparing, for outputs that are compared by
    /// meaning rather than bytes (e.g. bitcode through `llvm-dis`).
    pub normalise_files: Option<Normaliser>,
    /// Decides whether a difference is a documented, deliberate one: given
    /// the case and both outcomes (LLVM's first), returns a short category
    /// name to count it under instead of failing.
    pub accept: Option<Acceptor>,
    /// Deliberate differences seen, by category.
    pub accepted: std::collections::BTreeMap<&'static str, usize>,
    report: PathBuf,
}

impl Suite {
    pub fn new(area: &str, opts: &Options) -> Result<Suite, String> {
        let scratch = tempfile::Builder::new()
            .prefix(&format!("conformance-{area}-"))
            .tempdir()
            .map_err(|e| e.to_string())?;
        let ours = scratch.path().join("bin-ours");
        let llvm = scratch.path().join("bin-llvm");
        fs::create_dir_all(&ours).map_err(|e| e.to_string())?;
        fs::create_dir_all(&llvm).map_err(|e| e.to_string())?;
        let report = workspace_root().join("target/xtask/conformance").join(area);
        let _ = fs::remove_dir_all(&report);
        // Mix the area name into the seed so areas don't share streams.
        let mut seed = opts.seed;
        for b in area.bytes() {
            seed = seed.rotate_left(5) ^ b as u64;
        }
        Ok(Suite {
            area: area.to_string(),
            rng: Rng::new(seed),
            cases: opts.cases,
            keep: opts.keep,
            scratch,
            ours,
            llvm,
            ran: 0,
            failed: 0,
            normalise: None,
            normalise_files: None,
            accept: None,
            accepted: Default::default(),
            report,
        })
    }

    /// The suite's scratch directory (removed at the end unless `--keep`),
    /// for inputs a suite builds once and reuses.
    pub fn scratch_dir(&self) -> &Path {
        self.scratch.path()
    }

    /// How many cases to run: the user's `--cases`, else `default`.
    pub fn count(&self, default: usize) -> usize {
        self.cases.unwrap_or(default)
    }

    /// Makes `tool` runnable by bare name for both sides. Returns false (and
    /// says why) when LLVM's version is not installed.
    pub fn provide(&mut self, tool: &str) -> Result<bool, String> {
        let Some(reference) = reference_tool(tool) else {
            eprintln!(
                "conformance {}: LLVM's {tool} is not installed; skipped",
                self.area
            );
            return Ok(false);
        };
        let ours = our_bin_dir()?.join(tool);
        if !ours.exists() {
            return Err(format!("our {tool} was not built ({})", ours.display()));
        }
        link(&reference, &self.llvm.join(tool))?;
        link(&ours, &self.ours.join(tool))?;
        Ok(true)
    }

    /// Like [`Suite::provide`], but makes both versions of `tool` runnable
    /// under another name too (for behaviour that depends on `argv[0]`).
    pub fn provide_as(&mut self, tool: &str, name: &str) -> Result<bool, String> {
        if !self.provide(tool)? {
            return Ok(false);
        }
        link(&self.llvm.join(tool), &self.llvm.join(name))?;
        link(&self.ours.join(tool), &self.ours.join(name))?;
        Ok(true)
    }

    /// Runs `case` on both sides; records and reports a difference.
    pub fn check(&mut self, case: &Case) -> bool {
        self.ran += 1;
        let n = self.ran;
        let base = self.scratch.path().join(format!("case{n}"));
        let llvm = run_case(case, &self.llvm, &base.join("llvm"));
        let ours = run_case(case, &self.ours, &base.join("ours"));
        let mut same = match (&llvm, &ours) {
            (Ok(a), Ok(b)) => self.norm(a) == self.norm(b),
            _ => false,
        };
        if !same {
            if let (Some(f), Ok(a), Ok(b)) = (self.accept, &llvm, &ours) {
                if let Some(kind) = f(case, &self.norm(a), &self.norm(b)) {
                    *self.accepted.entry(kind).or_default() += 1;
                    same = true;
                }
            }
        }
        if !same {
            self.failed += 1;
            self.record_failure(n, case, &llvm, &ours);
        }
        let _ = fs::remove_dir_all(&base);
        same
    }

    fn norm(&self, o: &Outcome) -> Outcome {
        let mut o = o.clone();
        if let Some(f) = self.normalise {
            o.stdout = f(&o.stdout);
            o.stderr = f(&o.stderr);
        }
        if let Some(f) = self.normalise_files {
            for file in &mut o.files {
                file.1 = f(&file.1);
            }
        }
        o
    }

    fn record_failure(
        &self,
        n: usize,
        case: &Case,
        llvm: &Result<Outcome, String>,
        ours: &Result<Outcome, String>,
    ) {
        let dir = self.report.join(format!("case{n}"));
        let _ = fs::create_dir_all(&dir);
        let mut summary = format!("{}\n$ {}\n", case.label, case.command_line());
        for (k, v) in &case.env {
            summary.push_str(&format!("env {k}={v}\n"));
        }
        match (llvm, ours) {
            (Ok(a), Ok(b)) => {
                let (a, b) = (self.norm(a), self.norm(b));
                if a.status != b.status {
                    summary.push_str(&format!("status: llvm {} ours {}\n", a.status, b.status));
                }
                for (what, x, y) in [
                    ("stdout", &a.stdout, &b.stdout),
                    ("stderr", &a.stderr, &b.stderr),
                ] {
                    if x != y {
                        summary.push_str(&format!(
                            "{what} differs:\n--- llvm\n{}\n--- ours\n{}\n",
                            String::from_utf8_lossy(&x[..x.len().min(2000)]),
                            String::from_utf8_lossy(&y[..y.len().min(2000)])
                        ));
                    }
                }
                let names = |o: &Outcome| o.files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
                if names(&a) != names(&b) {
                    summary.push_str(&format!(
                        "files: llvm {:?}\n       ours {:?}\n",
                        names(&a),
                        names(&b)
                    ));
                }
                for (fa, fb) in a.files.iter().zip(&b.files) {
                    if fa.0 == fb.0 && fa.1 != fb.1 {
                        let at = fa.1.iter().zip(&fb.1).position(|(x, y)| x != y);
                        summary.push_str(&format!(
                            "file {} differs: llvm {} bytes, ours {} bytes, first difference at {:?}\n",
                            fa.0,
                            fa.1.len(),
                            fb.1.len(),
                            at.or(Some(fa.1.len().min(fb.1.len())))
                        ));
                        let _ =
                            fs::write(dir.join(format!("llvm.{}", fa.0.replace('/', "_"))), &fa.1);
                        let _ =
                            fs::write(dir.join(format!("ours.{}", fb.0.replace('/', "_"))), &fb.1);
                    }
                }
            }
            (a, b) => {
                summary.push_str(&format!(
                    "llvm: {:?}\nours: {:?}\n",
                    a.as_ref().err(),
                    b.as_ref().err()
                ));
            }
        }
        for (name, bytes) in &case.files {
            let _ = fs::write(dir.join(format!("input.{}", name.replace('/', "_"))), bytes);
        }
        let _ = fs::write(dir.join("summary.txt"), &summary);
        if self.failed <= 5 {
            eprintln!(
                "conformance {}: DIFFERENCE in case {n}:\n{summary}",
                self.area
            );
        }
    }

    /// Prints the tally line and returns the number of differences.
    pub fn finish(self) -> usize {
        let deliberate: usize = self.accepted.values().sum();
        let detail = if deliberate > 0 {
            let kinds: Vec<String> = self
                .accepted
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            format!(
                " ({deliberate} deliberate, documented differences: {})",
                kinds.join(", ")
            )
        } else {
            String::new()
        };
        println!(
            "conformance {}: {} cases, {} differences{detail}{}",
            self.area,
            self.ran,
            self.failed,
            if self.failed > 0 {
                format!(" (details in {})", self.report.display())
            } else {
                String::new()
            }
        );
        if self.keep {
            let kept = self.scratch.keep();
            eprintln!("scratch kept at {}", kept.display());
        }
        self.failed
    }
}

fn link(target: &Path, at: &Path) -> Result<(), String> {
    let _ = fs::remove_file(at);
    std::os::unix::fs::symlink(target, at).map_err(|e| format!("{}: {e}", at.display()))
}
