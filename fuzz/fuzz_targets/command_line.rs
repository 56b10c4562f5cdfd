//! LLVM-style command lines (`offload_cli::cl`) on arbitrary arguments,
//! under LLVM 22 and LLVM 14 rules: every option kind the tools use
//! (booleans with and without `=value`, `uint` and `int` in any radix,
//! comma lists, repeated options, choices, required options, positionals,
//! "Did you mean" suggestions). Each command line is parsed or refused
//! with a message, never a panic.
//!
//! Response files (`@file`) are not expanded here: the fuzzer would read
//! files of the machine; their tokenizer has a target of its own.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use arbitrary::Arbitrary;
use clap::{ArgAction, Parser};
use libfuzzer_sys::fuzz_target;
use offload_cli::cl::{parse_to, HelpKind, Spec};

/// The option kinds of the tools' own definitions.
#[derive(Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
#[allow(dead_code)]
struct Args {
    #[arg(long = "type", required = true)]
    file_type: String,
    #[arg(long = "targets", value_delimiter = ',', action = ArgAction::Append)]
    targets: Vec<String>,
    #[arg(long = "input", action = ArgAction::Append)]
    input: Vec<OsString>,
    #[arg(long = "o")]
    output: Option<OsString>,
    #[arg(long = "kind", value_parser = ["openmp", "cuda", "hip"])]
    kind: Option<String>,
    #[arg(long = "unbundle", action = ArgAction::SetTrue)]
    unbundle: bool,
    #[arg(long = "###", action = ArgAction::SetTrue)]
    print_commands: bool,
    #[arg(long = "bundle-align", default_value_t = 1)]
    bundle_align: u32,
    #[arg(long = "compress")]
    compress: Option<bool>,
    #[arg(long = "compression-level")]
    compression_level: Option<i32>,
    #[arg(long = "h", action = ArgAction::SetTrue)]
    h: bool,
    positional: Vec<OsString>,
}

fn help(_: HelpKind, prog: &str) -> String {
    format!("USAGE: {prog} [options]\n")
}

fn version() -> String {
    "fuzz version\n".into()
}

const SUGGEST: &[&str] = &[
    "help",
    "type",
    "targets",
    "input",
    "o",
    "kind",
    "unbundle",
    "###",
    "bundle-align",
    "compress",
    "compression-level",
    "version",
];

#[derive(Arbitrary, Debug)]
struct Input {
    llvm14: bool,
    args: Vec<Vec<u8>>,
}

fuzz_target!(|input: Input| {
    let spec = Spec {
        help,
        version,
        suggest: SUGGEST,
        llvm14: input.llvm14,
    };
    let mut argv = vec![OsString::from("tool")];
    for mut a in input.args {
        if a.first() == Some(&b'@') {
            a[0] = b'-';
        }
        argv.push(OsString::from_vec(a));
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    match parse_to::<Args>(&spec, argv, &mut out, &mut err) {
        Ok(_) => {}
        // Refused, or help / version printed: something was said.
        Err(_) => assert!(
            !out.is_empty() || !err.is_empty(),
            "a command line refused without a message"
        ),
    }
});
