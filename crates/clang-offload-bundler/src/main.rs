//! `clang-offload-bundler`: a drop-in replacement for LLVM 22's tool.
//!
//! Bundles per-target files of one source into one file, lists the entries
//! of a bundle and unbundles it. The command line, messages, exit codes and
//! output bytes are LLVM 22's; deliberate differences are listed in
//! `docs/compat.md#clang-offload-bundler`.

mod archive;
mod args;
mod command;
mod handler;
mod help;
mod job;
mod run;
mod stream;

use std::process::ExitCode;

use offload_cli::cl::{self, HelpKind, Spec};
use offload_cli::diag::Diag;

/// Option names that "Did you mean" may propose, in the order LLVM 22 walks
/// its option map: on equal distance the earlier name wins. The map also
/// holds every option of libLLVM, so the order cannot be computed from the
/// hash alone; it was measured on clang-offload-bundler-22 with probes
/// equidistant from two names and farther from all others, and agrees with
/// it on about 1,300 random typos of these names.
const SUGGEST: &[&str] = &[
    "help",
    "list",
    "check-input-archive",
    "help-hidden",
    "help-list",
    "output",
    "###",
    "print-options",
    "unbundle",
    "type",
    "version",
    "compression-level",
    "allow-missing-bundles",
    "help-list-hidden",
    "bundle-align",
    "inputs",
    "input",
    "outputs",
    "targets",
    "compress",
    "print-all-options",
    "verbose",
    "hip-openmp-compatible",
];

const SPEC: Spec = Spec {
    help: help::help,
    version: help::version,
    suggest: SUGGEST,
    llvm14: false,
};

fn main() -> ExitCode {
    let parsed = match cl::parse::<args::Args>(&SPEC, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if parsed.args.h {
        // `-h` is the tool's own alias, read after parsing (so it needs
        // `-type`), and prints the flat option list.
        let prog = cl::program_name(&parsed.argv0);
        print!("{}", help::help(HelpKind::HelpList, &prog));
        return ExitCode::SUCCESS;
    }
    let diag = Diag::new(&parsed.argv0);
    let env = job::Env::read();
    match job::validate(&parsed.args, &env, &diag).and_then(|j| run::run(&j)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.llvm_fatal => {
            let mut line = b"LLVM ERROR: ".to_vec();
            line.extend_from_slice(&e.message);
            line.push(b'\n');
            offload_cli::diag::write_stderr(&line);
            ExitCode::FAILURE
        }
        Err(e) => {
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}
