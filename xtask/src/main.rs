//! Project automation: `cargo xtask <task>`.
//!
//! Every task CI runs is a task here, so a local run and CI do the same thing.

mod bench;
mod ci;
mod conformance;
mod cuobjdump;
mod e2e;
mod fixtures;
mod fuzz;
mod harness;
mod hostile;
mod identity;
mod install;
mod json;
mod man;
mod mutate;
mod pool;
mod realcheck;
mod tidy;
mod wheel;

use std::process::ExitCode;

type Task = fn(&[String]) -> Result<(), String>;

/// (name, entry point, one-line help)
pub(crate) const TASKS: &[(&str, Task, &str)] = &[
    (
        "fixtures",
        fixtures::run,
        "regenerate the committed reference fixtures with the LLVM 22 tools [AREA...]",
    ),
    (
        "conformance",
        conformance::run,
        "randomised differential runs against the installed LLVM tools [AREA...] [--cases N] [--seed S]",
    ),
    (
        "e2e",
        e2e::run,
        "real clang-22 builds that use our tools through -B; `realworld` (only when named: downloads) checks `offload` on real libraries [AREA...]",
    ),
    (
        "bench",
        bench::run,
        "time and memory against LLVM 22 and the floor (cp, cat, zstd) [SCENARIO...] [--smoke] [--sizes 1M,16M,256M,2G] [--reps N] [--write-docs] [--list]",
    ),
    (
        "fuzz",
        fuzz::run,
        "run the cargo-fuzz targets, report executions and crashes [TARGET...] [--seconds N] [--sanitizer none|address] [--toolchain NAME] [--dev] [--write-docs] [--list] [--seed-corpus]",
    ),
    (
        "hostile",
        hostile::run,
        "the hostile-input corpus against our tools [TOOL...] [--compare] [--bin-dir DIR] [--write-corpus]",
    ),
    (
        "mutate",
        mutate::run,
        "differential mutation testing against LLVM 22: crashes, hangs, differences [--seed N] [--seconds S | --cases N] [--jobs 1|2] [--findings DIR] [--replay DIR]",
    ),
    (
        "man",
        man::run,
        "write the tools' man pages (section 1) into a directory --out DIR",
    ),
    (
        "compress-identity",
        identity::run,
        "-compress and clang-22 --offload-compress against LLVM 22: identical bytes, peak memory [--sizes 1K,11K,1M,64M,256M] [--bin-dir DIR]",
    ),
    (
        "install",
        install::run,
        "build every tool in release mode and install bin/, man pages and completions under a prefix --prefix DIR [--vendored] [--check]",
    ),
    (
        "wheel",
        wheel::run,
        "build the Python wheel (maturin, manylinux policy checked) into target/wheels [--out DIR] [--check: install it without Rust and use it]",
    ),
    (
        "realcheck",
        realcheck::run,
        "issue 31's installed-size checks on PyPI's bitsandbytes 0.50.2 and torch 2.11.0 (downloads GBs; not in CI) [--skip-torch] [--import] [--import-only]",
    ),
    (
        "ci",
        ci::run,
        "everything CI runs, in order (.ci/run installs the reference tools, then calls this) [--from STEP] [--only STEP] [--list]",
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        usage();
        return ExitCode::from(2);
    };
    let Some((_, task, _)) = TASKS.iter().find(|(n, _, _)| n == name) else {
        eprintln!("xtask: unknown task '{name}'");
        usage();
        return ExitCode::from(2);
    };
    match task(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() {
    eprintln!("usage: cargo xtask <task> [args]\n");
    for (name, _, help) in TASKS {
        eprintln!("  {name:<12} {help}");
    }
}
