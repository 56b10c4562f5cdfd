//! `cargo xtask hostile`: runs the hostile-input corpus (`tests/hostile/`)
//! against our tools (debug builds, so arithmetic overflow panics), and
//! with `--compare` also against LLVM's, to show what each case does to
//! the tools we replace. `--write-corpus` regenerates the forged files.
//!
//! The same corpus runs in `cargo test` through each CLI crate's
//! `tests/hostile.rs`; this task adds the LLVM column and a summary.

use std::path::PathBuf;

use crate::harness::{reference_tool, workspace_root};

use test_support::hostile as runner;

mod gen;

/// Our binaries by tool name.
const TOOLS: &[&str] = &[
    "clang-offload-bundler",
    "llvm-offload-binary",
    "clang-offload-packager",
    "llvm-offload-wrapper",
    "clang-offload-wrapper",
    "offload",
];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut tools = Vec::new();
    let mut compare = false;
    let mut bin_dir: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--compare" => compare = true,
            "--write-corpus" => {
                gen::write(&workspace_root().join("tests/hostile"))?;
                eprintln!("hostile: corpus files written");
                return runner::load_index().map(|_| ());
            }
            "--bin-dir" => {
                let dir = it.next().ok_or("--bin-dir needs a value")?;
                // Absolute: each case runs in a scratch directory of its own.
                let dir = std::fs::canonicalize(dir).map_err(|e| format!("{dir}: {e}"))?;
                bin_dir = Some(dir)
            }
            t if TOOLS.contains(&t) => tools.push(t.to_string()),
            other => {
                return Err(format!(
                    "unknown argument '{other}' (tools: {})",
                    TOOLS.join(", ")
                ))
            }
        }
    }
    let cases = runner::load_index()?;
    let bin_dir = match bin_dir {
        Some(d) => d,
        None => build()?,
    };
    println!("| case | tool | ours | LLVM |");
    println!("|---|---|---|---|");
    let (mut failed, mut known, mut ran) = (0, 0, 0);
    for case in &cases {
        if !tools.is_empty() && !tools.contains(&case.tool) {
            continue;
        }
        let ours = runner::run_case(case, &bin_dir.join(&case.tool));
        if ours.skipped.is_some() {
            continue;
        }
        ran += 1;
        let verdict = if ours.problems.is_empty() && case.unnamed {
            "ok (NOTE: our message names no file)".to_string()
        } else if ours.problems.is_empty() {
            "ok".to_string()
        } else if case.known_crash || case.pending || case.disputed {
            known += 1;
            let why = if case.known_crash {
                "KNOWN CRASH"
            } else if case.pending {
                "PENDING"
            } else {
                "DISPUTED"
            };
            format!("{why}: {}", ours.problems.join("; "))
        } else {
            failed += 1;
            format!("FAIL: {}", ours.problems.join("; "))
        };
        let llvm = if compare && case.tool == "offload" {
            "no LLVM counterpart".into()
        } else if compare {
            match llvm_program(&case.tool) {
                Some(p) => {
                    let run = runner::run_case(case, &p);
                    if run.problems.is_empty() {
                        summary(&run)
                    } else {
                        format!("{} [{}]", summary(&run), run.problems.join("; "))
                    }
                }
                None => "not installed".into(),
            }
        } else {
            String::new()
        };
        println!(
            "| {} `{}` | {} | {}: {} | {} |",
            case.file,
            case.args.join(" "),
            case.tool,
            verdict,
            summary(&ours),
            llvm
        );
    }
    eprintln!("hostile: {ran} cases, {failed} failed, {known} known crashes, pending features or disputed");
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} hostile cases mishandled"))
    }
}

/// Exit and the first error line of stderr (or its first line).
fn summary(run: &runner::Run) -> String {
    let mut lines = run.stderr.lines().filter(|l| !l.trim().is_empty());
    let first = lines
        .clone()
        .find(|l| l.contains("error"))
        .or_else(|| lines.next())
        .unwrap_or("")
        .replace('|', "\\|");
    let first: String = first.chars().take(140).collect();
    format!("{}, `{}`", run.exit, first)
}

fn llvm_program(tool: &str) -> Option<PathBuf> {
    match tool {
        "clang-offload-packager" => reference_tool("clang-offload-packager")
            .or_else(|| reference_tool("llvm-offload-binary")),
        t => reference_tool(t),
    }
}

/// Debug builds of the tools (overflow checks on).
fn build() -> Result<PathBuf, String> {
    crate::harness::build_tools(false)
}
