//! The command line, declared for `offload_cli::cl` (LLVM names and kinds).

use std::ffi::OsString;

use clap::{ArgAction, Parser};

/// LLVM 22 clang-offload-bundler options.
#[derive(Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    /// `-type=<t>`, required.
    #[arg(long = "type", required = true)]
    pub file_type: String,
    /// `-targets=a,b,...`: comma list, occurrences append.
    #[arg(long = "targets", value_delimiter = ',', action = ArgAction::Append)]
    pub targets: Vec<String>,
    /// `-input=<f>`: one file per occurrence.
    #[arg(long = "input", action = ArgAction::Append)]
    pub input: Vec<OsString>,
    /// `-inputs=a,b` (deprecated).
    #[arg(long = "inputs", value_delimiter = ',', action = ArgAction::Append)]
    pub inputs: Vec<OsString>,
    /// `-output=<f>`.
    #[arg(long = "output", action = ArgAction::Append)]
    pub output: Vec<OsString>,
    /// `-outputs=a,b` (deprecated).
    #[arg(long = "outputs", value_delimiter = ',', action = ArgAction::Append)]
    pub outputs: Vec<OsString>,
    #[arg(long = "unbundle", action = ArgAction::SetTrue)]
    pub unbundle: bool,
    #[arg(long = "list", action = ArgAction::SetTrue)]
    pub list: bool,
    #[arg(long = "###", action = ArgAction::SetTrue)]
    pub print_commands: bool,
    #[arg(long = "allow-missing-bundles", action = ArgAction::SetTrue)]
    pub allow_missing_bundles: bool,
    #[arg(long = "bundle-align", default_value_t = 1)]
    pub bundle_align: u32,
    #[arg(long = "check-input-archive", action = ArgAction::SetTrue)]
    pub check_input_archive: bool,
    #[arg(long = "hip-openmp-compatible", action = ArgAction::SetTrue)]
    pub hip_openmp_compatible: bool,
    /// `Some` only when given on the command line (it then beats the
    /// environment).
    #[arg(long = "compress")]
    pub compress: Option<bool>,
    #[arg(long = "compression-level")]
    pub compression_level: Option<i32>,
    /// As `compress`.
    #[arg(long = "verbose")]
    pub verbose: Option<bool>,
    /// Hidden alias of `--help`, read after parsing.
    #[arg(long = "h", action = ArgAction::SetTrue)]
    pub h: bool,
}
