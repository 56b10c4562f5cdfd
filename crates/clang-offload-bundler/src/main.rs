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
mod job;
mod objcopy;
mod run;
mod stream;
mod unbundle;

use std::process::ExitCode;

use offload_cli::cl;
use offload_cli::cl::tools::BUNDLER;
use offload_cli::diag::Diag;

fn main() -> ExitCode {
    let parsed = match cl::parse(&BUNDLER, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if parsed.flag("h") {
        // `-h` is the tool's own alias, read after parsing (so it needs
        // `-type`), and prints the flat option list.
        return parsed.print_help_list();
    }
    let args = args::Args::new(&parsed);
    let diag = Diag::new(&parsed.argv0);
    let env = job::Env::read();
    match job::validate(&args, &env, &diag).and_then(|j| run::run(&j)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}
