//! A stand-in with llvm-offload-binary's options, for checking the `cl`
//! layer against the real tool: prints what it parsed.
use clap::Parser;
use offload_cli::cl::{self, HelpKind, Spec};

#[derive(Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(long = "o")]
    output: Option<std::ffi::OsString>,
    #[arg(long = "image", action = clap::ArgAction::Append)]
    image: Vec<std::ffi::OsString>,
    #[arg(long = "archive", action = clap::ArgAction::SetTrue)]
    archive: bool,
    input: Option<std::ffi::OsString>,
}

fn help(_: HelpKind, prog: &str) -> String {
    format!("help for {prog}\n")
}
fn version() -> String {
    "version\n".into()
}

const SPEC: Spec = Spec {
    help,
    version,
    suggest: &[
        "help",
        "help-list",
        "version",
        "o",
        "image",
        "archive",
        "print-options",
        "print-all-options",
        "help-hidden",
        "help-list-hidden",
    ],
    llvm14: false,
};

fn main() -> std::process::ExitCode {
    match cl::parse::<Args>(&SPEC, cl::os_args()) {
        Ok(p) => {
            println!("{:?}", p.args);
            std::process::ExitCode::SUCCESS
        }
        Err(c) => c,
    }
}
