//! Runs the hostile-input corpus (`tests/hostile/`) against the tools.
//!
//! Shared: each CLI crate's `tests/hostile.rs` and `xtask hostile` use
//! this module (through the `test-support` crate).
//!
//! The index (`tests/hostile/index.txt`) has one case per line:
//!
//! ```text
//! file | tool | flags | arguments | what it breaks
//! ```
//!
//! * `file`: the hostile input, a file in `tests/hostile/` (or `-` when the
//!   case needs none, e.g. a hostile response file given as `{corpus:…}`).
//! * `tool`: the program name (`clang-offload-bundler`, `llvm-offload-binary`,
//!   `clang-offload-packager`, `llvm-offload-wrapper`, `clang-offload-wrapper`,
//!   or the inspector, `offload`).
//! * `flags`: `-`, or a comma list of
//!   * `ok`: the tool must succeed (the input is odd but valid for LLVM 22
//!     too); only crash, hang and memory checks apply;
//!   * `no-name`: LLVM 22 prints this error without a file name, and we
//!     print the same text, so the message need not name the input;
//!   * `cl`: a command-line error, printed like LLVM's option parser
//!     prints it, without `error:`;
//!   * `name=<text>`: the message must name `<text>` instead of the input;
//!   * `unnamed`: our own message (LLVM 22 crashes or accepts the input
//!     here) does not name the input; reported as a note for the tool's
//!     owner, not a failure;
//!   * `sparse=<size>`: the input is extended (sparse, no disk used) to
//!     `<size>` bytes (`5G`, `4097M`, a plain number);
//!   * `fsize=<size>`: the run is under a file-size limit
//!     (`prlimit --fsize`, as `ulimit -f`) of `<size>` bytes: a tool that
//!     sizes an output past it dies by `SIGXFSZ`, a failure; skipped
//!     without `prlimit`;
//!   * `endless`: the case reads an input without end (`/dev/zero`), so
//!     only the memory limit stops it: like `sparse`, skipped without
//!     `prlimit`;
//!   * `known-crash`: a crash found and not yet fixed; the case is run and
//!     reported, but does not fail the test suite;
//!   * `pending`: the tool does not handle this kind of input yet (the
//!     feature is being written); run and reported like `known-crash`;
//!   * `disputed`: the tool keeps LLVM 22's behaviour on purpose where it
//!     breaks a rule above (the case records the conflict for a decision);
//!     run and reported like `known-crash`.
//! * `arguments`: whitespace-separated; placeholders are replaced:
//!   `{in}` the input, `{out}` `{out2}` `{out3}` existing files whose
//!   contents must survive, `{new}` `{new2}` paths that must not be created,
//!   `{nodir}` a path in a directory that does not exist, `{link}` a
//!   symlink to an existing file (an `ok` case must replace the link, as a
//!   rename does, and leave its target alone),
//!   `{corpus:NAME}` another file of `tests/hostile/` copied beside the
//!   input.
//!
//! Each case runs in a fresh directory (also the working directory) under
//! an address-space limit (`prlimit --as`) and a time limit. Unless `ok`,
//! it must exit with status 1, print `error:` and the input's name, never
//! mention a panic, and leave every file in the directory exactly as it
//! was: no output created, no existing output changed, no temporary file
//! left behind.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The corpus directory.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("tests/hostile/index.txt").is_file())
        .map(|p| p.join("tests/hostile"))
        .expect("tests/hostile/index.txt above the crate")
}

/// Address-space limit for each run: far above what any tool needs for
/// these small inputs, far below what trusting a forged size would take.
pub const MEMORY_LIMIT: u64 = 512 << 20;
/// Wall-clock limit for each run.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);

/// One line of the index.
#[derive(Clone, Debug)]
pub struct Case {
    /// Line number in the index, for messages.
    pub line: usize,
    pub file: String,
    pub tool: String,
    pub ok: bool,
    pub no_name: bool,
    pub unnamed: bool,
    pub cl: bool,
    pub name: Option<String>,
    pub sparse: Option<u64>,
    pub fsize: Option<u64>,
    pub endless: bool,
    pub known_crash: bool,
    pub pending: bool,
    pub disputed: bool,
    pub args: Vec<String>,
    pub what: String,
}

impl Case {
    /// A short label: `file (tool, line N)`.
    pub fn label(&self) -> String {
        format!("{} ({}, index line {})", self.file, self.tool, self.line)
    }

    /// The command line with placeholders, as written in the index.
    pub fn command_line(&self) -> String {
        format!("{} {}", self.tool, self.args.join(" "))
    }
}

fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.as_bytes().last()? {
        b'G' => (&text[..text.len() - 1], 1u64 << 30),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'K' => (&text[..text.len() - 1], 1 << 10),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Reads and checks the index.
pub fn load_index() -> Result<Vec<Case>, String> {
    let dir = corpus_dir();
    let text = fs::read_to_string(dir.join("index.txt")).map_err(|e| format!("index.txt: {e}"))?;
    let mut cases = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = trimmed.splitn(5, " | ").map(str::trim).collect();
        if cols.len() != 5 {
            return Err(format!(
                "index.txt:{line}: expected 5 columns separated by ' | '"
            ));
        }
        let mut case = Case {
            line,
            file: cols[0].to_string(),
            tool: cols[1].to_string(),
            ok: false,
            no_name: false,
            unnamed: false,
            cl: false,
            name: None,
            sparse: None,
            fsize: None,
            endless: false,
            known_crash: false,
            pending: false,
            disputed: false,
            args: cols[3].split_whitespace().map(str::to_string).collect(),
            what: cols[4].to_string(),
        };
        if cols[2] != "-" {
            for flag in cols[2].split(',') {
                match flag.split_once('=') {
                    None if flag == "ok" => case.ok = true,
                    None if flag == "no-name" => case.no_name = true,
                    None if flag == "cl" => case.cl = true,
                    None if flag == "unnamed" => case.unnamed = true,
                    None if flag == "endless" => case.endless = true,
                    None if flag == "known-crash" => case.known_crash = true,
                    None if flag == "pending" => case.pending = true,
                    None if flag == "disputed" => case.disputed = true,
                    Some(("name", v)) => case.name = Some(v.to_string()),
                    Some(("sparse", v)) => {
                        case.sparse =
                            Some(parse_size(v).ok_or(format!("index.txt:{line}: bad size '{v}'"))?)
                    }
                    Some(("fsize", v)) => {
                        case.fsize =
                            Some(parse_size(v).ok_or(format!("index.txt:{line}: bad size '{v}'"))?)
                    }
                    _ => return Err(format!("index.txt:{line}: unknown flag '{flag}'")),
                }
            }
        }
        if case.file != "-" && !dir.join(&case.file).is_file() {
            return Err(format!(
                "index.txt:{line}: no file tests/hostile/{}",
                case.file
            ));
        }
        for a in &case.args {
            if let Some(rest) = a.split("{corpus:").nth(1) {
                let name = rest.split('}').next().unwrap_or("");
                if !dir.join(name).is_file() {
                    return Err(format!("index.txt:{line}: no file tests/hostile/{name}"));
                }
            }
        }
        if case.args.iter().any(|a| a.contains("/dev/zero")) && !case.endless {
            return Err(format!(
                "index.txt:{line}: a case reading /dev/zero needs the 'endless' flag"
            ));
        }
        if case.what.is_empty() {
            return Err(format!("index.txt:{line}: say what the case breaks"));
        }
        cases.push(case);
    }
    Ok(cases)
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut => write!(f, "timed out after {TIME_LIMIT:?}"),
        }
    }
}

/// The result of one run of one case.
#[derive(Clone, Debug)]
pub struct Run {
    pub exit: Exit,
    pub stderr: String,
    /// Everything wrong with the run; empty when the case passed.
    pub problems: Vec<String>,
    /// The run was not made (e.g. no `prlimit` for a sparse case).
    pub skipped: Option<String>,
}

type Snapshot = BTreeMap<String, (u64, Option<Vec<u8>>)>;

/// Every file under `dir`: size, and contents unless large (sparse inputs
/// are compared by size only).
fn snapshot(dir: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(dir)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            let Ok(md) = fs::symlink_metadata(&p) else {
                continue;
            };
            if md.is_dir() {
                out.insert(format!("{rel}/"), (0, None));
                stack.push(p);
            } else if md.file_type().is_symlink() {
                let target = fs::read_link(&p).unwrap_or_default();
                let text = format!("-> {}", target.display());
                out.insert(rel, (0, Some(text.into_bytes())));
            } else if md.len() <= 16 << 20 {
                out.insert(rel, (md.len(), fs::read(&p).ok()));
            } else {
                out.insert(rel, (md.len(), None));
            }
        }
    }
    out
}

fn has_prlimit() -> bool {
    Command::new("prlimit")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn scratch_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("offload-hostile-{}-{n}-{tag}", std::process::id()))
}

/// Runs one case with the program at `program` (`argv[0]` is that path).
pub fn run_case(case: &Case, program: &Path) -> Run {
    let work = scratch_dir(&case.line.to_string());
    let result = run_in(case, program, &work);
    let _ = fs::remove_dir_all(&work);
    result.unwrap_or_else(|e| Run {
        exit: Exit::Code(-1),
        stderr: String::new(),
        problems: vec![format!("could not run the case: {e}")],
        skipped: None,
    })
}

fn run_in(case: &Case, program: &Path, work: &Path) -> Result<Run, String> {
    let corpus = corpus_dir();
    let prlimit = has_prlimit();
    if (case.sparse.is_some() || case.fsize.is_some() || case.endless) && !prlimit {
        return Ok(Run {
            exit: Exit::Code(0),
            stderr: String::new(),
            problems: Vec::new(),
            skipped: Some("needs prlimit (util-linux) to bound memory or file size".into()),
        });
    }
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    if case.file != "-" {
        let dest = work.join(&case.file);
        fs::copy(corpus.join(&case.file), &dest).map_err(|e| format!("{}: {e}", case.file))?;
        if let Some(size) = case.sparse {
            let f = fs::OpenOptions::new()
                .write(true)
                .open(&dest)
                .map_err(|e| e.to_string())?;
            f.set_len(size).map_err(|e| format!("sparse {size}: {e}"))?;
        }
    }
    let mut args: Vec<OsString> = Vec::new();
    for a in &case.args {
        let mut s = a.replace("{in}", &case.file);
        for (ph, name) in [("{out}", "out"), ("{out2}", "out2"), ("{out3}", "out3")] {
            if s.contains(ph) {
                s = s.replace(ph, name);
                let p = work.join(name);
                fs::write(&p, format!("sentinel {name}: must survive\n"))
                    .map_err(|e| e.to_string())?;
            }
        }
        if s.contains("{link}") {
            s = s.replace("{link}", "link");
            fs::write(
                work.join("link-target"),
                "sentinel link-target: must survive\n",
            )
            .map_err(|e| e.to_string())?;
            std::os::unix::fs::symlink("link-target", work.join("link"))
                .map_err(|e| e.to_string())?;
        }
        s = s
            .replace("{new}", "new")
            .replace("{new2}", "new2")
            .replace("{nodir}", "no-such-dir/new");
        while let Some(start) = s.find("{corpus:") {
            let end = s[start..]
                .find('}')
                .map(|e| start + e)
                .ok_or("unclosed {corpus:")?;
            let name = s[start + 8..end].to_string();
            fs::copy(corpus.join(&name), work.join(&name)).map_err(|e| format!("{name}: {e}"))?;
            s.replace_range(start..=end, &name);
        }
        args.push(s.into());
    }
    let before = snapshot(work);

    let mut cmd = if prlimit {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={MEMORY_LIMIT}"))
            .arg("--cpu=60")
            .arg("--core=0");
        if let Some(size) = case.fsize {
            c.arg(format!("--fsize={size}"));
        }
        c.arg("--").arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(&args)
        .current_dir(work)
        .env_remove("RUST_BACKTRACE")
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_COMPRESSION_LEVEL")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", program.display()))?;
    let mut pipe = child.stderr.take().ok_or("no stderr pipe")?;
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        // Enough to judge the message; a tool printing without end must
        // not fill memory here.
        let _ = (&mut pipe).take(1 << 20).read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let exit = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            use std::os::unix::process::ExitStatusExt;
            break match (st.code(), st.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(s)) => Exit::Signal(s),
                (None, None) => Exit::Code(-1),
            };
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break Exit::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let after = snapshot(work);

    let mut problems = Vec::new();
    for bad in [
        "panicked",
        "RUST_BACKTRACE",
        "memory allocation of",
        "stack overflow",
        "overflowed its stack",
    ] {
        if stderr.contains(bad) {
            problems.push(format!("stderr mentions '{bad}'"));
        }
    }
    if case.ok {
        if exit != Exit::Code(0) {
            problems.push(format!("{exit}, expected success"));
        }
        // An output written through a temporary file and a rename replaces
        // a symlink at its path; writing in place would go through it.
        if case.args.iter().any(|a| a.contains("{link}")) {
            if before.get("link-target") != after.get("link-target") {
                problems.push("wrote through the symlink at the output path".into());
            }
            let replaced = fs::symlink_metadata(work.join("link")).is_ok_and(|m| m.is_file());
            if !replaced {
                problems.push("the output did not replace the symlink (no rename)".into());
            }
        }
    } else {
        if exit != Exit::Code(1) {
            problems.push(format!("{exit}, expected exit 1"));
        }
        if !case.cl && !stderr.contains("error:") {
            problems.push("no 'error:' on stderr".into());
        }
        let name = case.name.clone().unwrap_or_else(|| case.file.clone());
        if !case.no_name && !case.unnamed && !stderr.contains(&name) {
            problems.push(format!("the message does not name '{name}'"));
        }
        if before != after {
            problems.push(describe_change(&before, &after));
        }
    }
    Ok(Run {
        exit,
        stderr,
        problems,
        skipped: None,
    })
}

fn describe_change(before: &Snapshot, after: &Snapshot) -> String {
    let mut parts = Vec::new();
    for (name, v) in after {
        match before.get(name) {
            None => parts.push(format!("created '{name}'")),
            Some(old) if old != v => parts.push(format!("changed '{name}'")),
            _ => {}
        }
    }
    for name in before.keys() {
        if !after.contains_key(name) {
            parts.push(format!("removed '{name}'"));
        }
    }
    format!("files touched: {}", parts.join(", "))
}

/// Runs every case of `tool` with `program` and panics with a list of the
/// failures. Known crashes are reported but do not fail.
pub fn check_tool(tool: &str, program: &Path) {
    let cases = load_index().unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in cases.iter().filter(|c| c.tool == tool) {
        let run = run_case(case, program);
        if let Some(why) = &run.skipped {
            eprintln!("skipped {}: {why}", case.label());
            continue;
        }
        ran += 1;
        if case.unnamed {
            eprintln!(
                "note: {}: the message names no file: {}",
                case.label(),
                run.stderr.lines().next().unwrap_or("")
            );
        }
        let excused = if case.known_crash {
            Some("known crash")
        } else if case.pending {
            Some("pending feature")
        } else if case.disputed {
            Some("disputed")
        } else {
            None
        };
        match (excused, run.problems.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!(
                "{}: {}\n    command: {}\n    what: {}\n    stderr: {}",
                case.label(),
                run.problems.join("; "),
                case.command_line(),
                case.what,
                run.stderr.trim_end().replace('\n', "\n            ")
            )),
            (Some(why), false) => eprintln!(
                "{why}, still failing: {}: {}",
                case.label(),
                run.problems.join("; ")
            ),
            (Some(why), true) => eprintln!(
                "{why} case passes now: {} (remove the flag from the index)",
                case.label()
            ),
        }
    }
    eprintln!(
        "hostile corpus, {tool}: {ran} cases run, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} hostile inputs mishandled by {tool}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
