//! The commands of README.md and docs/, run as written (docs/README.md,
//! "Tested commands").
//!
//! `docs_commands` runs the trycmd case files of `tests/cases/`, each in a
//! fresh copy of the repository's example files, with our tools on `PATH`.
//! `every_page_command_is_tested` is the tidy side: every command line of
//! a page is quoted in a case file, in the e2e area's script
//! (`xtask/src/e2e/docs.sh`) when the page marks its block
//! `<!-- doc-test: e2e -->`, in the wheel step's script
//! (`xtask/src/wheel.sh`) when it marks it `<!-- doc-test: wheel -->`, or
//! its block is marked `<!-- doc-test: not run (why) -->`.
//!
//! `TRYCMD=overwrite cargo test -p doc-tests` writes the actual output
//! into the case files (then copy it into the page).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Our tools, as the pages call them.
const TOOLS: &[&str] = &[
    "offload",
    "clang-offload-bundler",
    "llvm-offload-binary",
    "llvm-offload-wrapper",
    "clang-offload-wrapper",
];

/// Repository directories every sandbox holds at their own paths (the
/// pages that say "from the repository root").
const REPO_DIRS: &[&str] = &[
    "tests/fixtures/offload",
    "tests/fixtures/wheel",
    "docs/examples",
];

/// Its files also sit at the top of each sandbox: docs/tools/offload.md's
/// `lib.so`, `hip.o`, `gnu.a`.
const TOP_DIR: &str = "tests/fixtures/offload";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory of the tools' binaries: the profile directory of this
/// test. `cargo test --workspace` builds them; under `cargo test -p
/// doc-tests` the missing ones are built here.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    if TOOLS.iter().any(|t| !dir.join(t).exists()) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.current_dir(root()).args(["build", "--bins"]);
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                c.arg("--release");
            }
            Some(p) => {
                c.args(["--profile", p]);
            }
            None => {}
        }
        for t in TOOLS {
            c.args(["-p", t]);
        }
        assert!(c.status().unwrap().success(), "building the tools failed");
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

#[test]
fn docs_commands() {
    let root = root();
    let cases = root.join("crates/doc-tests/tests/cases");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("doc-cases");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    let mut names = Vec::new();
    for e in fs::read_dir(&cases).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "trycmd") {
            let name = p.file_name().unwrap().to_owned();
            // The case runs in `<name>.in`, a fresh copy of the example
            // files (trycmd's convention), beside a copy of the case file.
            let sandbox = work.join(Path::new(&name).with_extension("in"));
            for d in REPO_DIRS {
                copy_dir(&root.join(d), &sandbox.join(d));
            }
            copy_dir(&root.join(TOP_DIR), &sandbox);
            fs::copy(&p, work.join(&name)).unwrap();
            names.push(name);
        }
    }
    assert!(!names.is_empty(), "no case files in {}", cases.display());

    let bins = bin_dir();
    let path = std::env::join_paths(std::iter::once(bins.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let t = trycmd::TestCases::new();
    t.env("PATH", path.to_str().unwrap())
        .register_bin("sh", Path::new("/bin/sh"));
    for tool in TOOLS {
        t.register_bin(*tool, bins.join(tool));
    }
    t.case(work.join("*.trycmd"));
    if !on_path("jq") {
        eprintln!("doc-tests: jq is not installed; skipping the cases that use it (*-jq.trycmd)");
        t.skip(work.join("*-jq.trycmd"));
    }
    t.run();

    // Blessed output goes back to the committed case files.
    if std::env::var_os("TRYCMD").is_some_and(|v| v == "overwrite") {
        for name in names {
            fs::copy(work.join(&name), cases.join(&name)).unwrap();
        }
    }
}

/// The pages whose commands are tested.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut v = vec![root.join("README.md"), root.join("docs/README.md")];
    for d in ["docs/tools", "docs/formats"] {
        let mut more: Vec<PathBuf> = fs::read_dir(root.join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        more.sort();
        v.extend(more);
    }
    v
}

/// How a page marks a block (an HTML comment on the line before it).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mark {
    /// Unmarked: a case file under tests/cases quotes it.
    Cargo,
    /// `<!-- doc-test: e2e -->`: xtask/src/e2e/docs.sh runs it.
    E2e,
    /// `<!-- doc-test: wheel -->`: xtask/src/wheel.sh (CI's wheel step)
    /// runs it.
    Wheel,
    /// `<!-- doc-test: not run (why) -->`.
    NotRun,
}

/// One code block of a page: its mark, its lines, where it starts.
struct Block {
    mark: Mark,
    line: usize,
    lines: Vec<String>,
}

/// The code blocks (fenced, and indented by four spaces after a blank
/// line) of a page, with the mark each carries.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mark_before = |i: usize| -> Mark {
        let prev = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
        match prev.map(|l| l.trim()) {
            Some(l) if l.starts_with("<!-- doc-test: e2e") => Mark::E2e,
            Some(l) if l.starts_with("<!-- doc-test: wheel") => Mark::Wheel,
            Some(l) if l.starts_with("<!-- doc-test: not run") => Mark::NotRun,
            Some(l) if l.starts_with("<!-- doc-test") => panic!("unknown mark {l}"),
            _ => Mark::Cargo,
        }
    };
    while i < lines.len() {
        let l = lines[i];
        if let Some(info) = l.trim_start().strip_prefix("```") {
            let info = info.trim();
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                body.push(lines[i].to_string());
                i += 1;
            }
            // Fences of other languages (json, llvm, text) hold no commands.
            if matches!(info, "" | "console" | "sh" | "bash" | "shell") {
                out.push(Block {
                    mark: mark_before(start),
                    line: start + 1,
                    lines: body,
                });
            }
        } else if l.starts_with("    ")
            && !l.trim().is_empty()
            && (i == 0 || lines[i - 1].trim().is_empty())
        {
            let start = i;
            let mut body = Vec::new();
            while i < lines.len() && (lines[i].starts_with("    ") || lines[i].trim().is_empty()) {
                body.push(lines[i][lines[i].len().min(4)..].to_string());
                i += 1;
            }
            out.push(Block {
                mark: mark_before(start),
                line: start + 1,
                lines: body,
            });
            continue;
        }
        i += 1;
    }
    out
}

/// A command line without its trailing `# comment`.
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'#' if !single && !double && (i == 0 || b[i - 1].is_ascii_whitespace()) => {
                return &line[..i];
            }
            _ => {}
        }
    }
    line
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a line runs a program (rather than being output or a diagram).
fn is_command(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let first = loop {
        match words.next() {
            Some(w) if w.contains('=') && !w.starts_with('-') => continue,
            Some(w) => break w,
            None => return false,
        }
    };
    TOOLS.contains(&first)
        || first == "clang-offload-packager"
        || first.starts_with("clang-")
        || first.starts_with("llvm-")
        || first.starts_with("./")
        || first.starts_with("tests/")
        || [
            "cargo",
            "pip",
            "uv",
            "python3",
            "apt-get",
            "mkdir",
            "ln",
            "find",
            "head",
            "cuobjdump",
            "jq",
            "nvcc",
        ]
        .contains(&first)
}

/// The command lines of a block: continuation lines joined, comments
/// dropped; in a block that uses `$ ` prompts only the prompted lines
/// (the rest is output).
fn commands(b: &Block) -> Vec<String> {
    let prompted = b.lines.iter().any(|l| l.starts_with("$ "));
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in &b.lines {
        let l = if prompted {
            match l.strip_prefix("$ ").or_else(|| {
                (!cur.is_empty())
                    .then_some(l.as_str())
                    .and_then(|l| l.strip_prefix("> "))
            }) {
                Some(c) => c,
                None => continue,
            }
        } else {
            l.as_str()
        };
        let l = strip_comment(l).trim_end();
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(l);
        let c = squash(&cur);
        cur.clear();
        if is_command(&c) {
            out.push(c);
        }
    }
    out
}

/// Where the commands of each mark are quoted, as one squashed text.
fn quoted(paths: &[PathBuf]) -> String {
    let mut s = String::new();
    for p in paths {
        let text = fs::read_to_string(p).unwrap();
        // trycmd's `> ` continuation lines and the script's `\` ones.
        let text = text.replace("\\\n", " ").replace("\n> ", " ");
        s.push_str(&squash(&text));
        s.push('\n');
    }
    s
}

#[test]
fn every_page_command_is_tested() {
    let root = root();
    let cases: Vec<PathBuf> = fs::read_dir(root.join("crates/doc-tests/tests/cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "trycmd"))
        .collect();
    let in_cases = quoted(&cases);
    let in_e2e = quoted(&[root.join("xtask/src/e2e/docs.sh")]);
    let in_wheel = quoted(&[root.join("xtask/src/wheel.sh")]);
    let mut missing = Vec::new();
    let mut counted = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        let rel = page.strip_prefix(&root).unwrap().display().to_string();
        for b in blocks(&text) {
            let (quote, where_) = match b.mark {
                Mark::Cargo => (&in_cases, "case file of crates/doc-tests/tests/cases"),
                Mark::E2e => (&in_e2e, "line of xtask/src/e2e/docs.sh"),
                Mark::Wheel => (&in_wheel, "line of xtask/src/wheel.sh"),
                Mark::NotRun => continue,
            };
            for c in commands(&b) {
                counted += 1;
                if !quote.contains(&c) {
                    missing.push(format!("{rel}:{}: `{c}` is in no {where_}", b.line));
                }
            }
            // Output a page shows after `$ ` prompts is quoted as well.
            if b.mark == Mark::Cargo && b.lines.iter().any(|l| l.starts_with("$ ")) {
                for l in &b.lines {
                    let l = squash(l);
                    if !l.is_empty() && l != "..." && !l.starts_with("$ ") && !quote.contains(&l) {
                        missing.push(format!("{rel}:{}: output `{l}` is in no case file", b.line));
                    }
                }
            }
        }
    }
    assert!(counted > 20, "only {counted} commands found in the pages");
    assert!(
        missing.is_empty(),
        "page commands not tested (quote them in a case file, or mark the block; \
         docs/README.md, \"Tested commands\"):\n{}",
        missing.join("\n")
    );
}
