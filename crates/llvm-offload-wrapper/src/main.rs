//! `llvm-offload-wrapper`: wraps device images in a host LLVM bitcode module
//! that registers them with the OpenMP, CUDA or HIP runtime, as LLVM 22's
//! tool of the same name does.

use clap::Parser;
use offload_cli::cl::{self, HelpKind, Spec};
use offload_cli::diag::{os_error_text, Diag};
use offload_cli::error::quoted;
use offload_cli::fsio::{read_input, Outputs};
use offload_format::wrapper::{self, OffloadKind, WrapError};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Offload kind.
    #[arg(long = "kind", required = true, value_parser = ["openmp", "cuda", "hip"])]
    kind: String,
    /// Output file (LLVM's default is the empty name, which cannot be opened).
    #[arg(long = "o")]
    output: Option<OsString>,
    /// Target triple of the module.
    #[arg(long = "triple")]
    triple: Option<OsString>,
    /// Hidden alias of --help-list, acted on after a successful parse.
    #[arg(long = "h", action = clap::ArgAction::SetTrue)]
    h: bool,
    /// Input images.
    #[arg(required = true)]
    inputs: Vec<OsString>,
}

fn help(kind: HelpKind, prog: &str) -> String {
    let text = match kind {
        HelpKind::Help => include_str!("help/help.txt"),
        HelpKind::HelpHidden => include_str!("help/help-hidden.txt"),
        HelpKind::HelpList => include_str!("help/help-list.txt"),
        HelpKind::HelpListHidden => include_str!("help/help-list-hidden.txt"),
    };
    text.replacen("{prog}", prog, 1)
}

fn version() -> String {
    "Debian LLVM version 22.1.8\n  Optimized build.\n".to_string()
}

const SPEC: Spec = Spec {
    help,
    version,
    // Order of LLVM 22's option map for this tool, as observed through
    // equal-distance suggestions. `-h` is not suggested: it is outside the
    // tool's option category, which hides it completely.
    suggest: &[
        "help",
        "triple",
        "help-hidden",
        "version",
        "help-list",
        "help-list-hidden",
        "o",
        "kind",
        "print-options",
        "print-all-options",
    ],
    llvm14: false,
};

fn main() -> ExitCode {
    let parsed = match cl::parse::<Args>(&SPEC, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let args = parsed.args;
    if args.h {
        print!(
            "{}",
            help(HelpKind::HelpList, &cl::program_name(&parsed.argv0))
        );
        return ExitCode::SUCCESS;
    }
    let diag = Diag::new(&parsed.argv0);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}

/// `'<file>': <message>`, LLVM's file-error form.
fn file_error(file: &OsString, msg: &str) -> Vec<u8> {
    quoted(file.as_bytes(), msg.as_bytes())
}

/// The default `--triple`: LLVM's default target triple as Debian and
/// Ubuntu build it for the host this tool runs on.
fn default_target_triple() -> String {
    let arch = std::env::consts::ARCH;
    match (arch, std::env::consts::OS) {
        ("x86_64" | "x86", "linux") => {
            let a = if arch == "x86" { "i686" } else { arch };
            format!("{a}-pc-linux-gnu")
        }
        ("powerpc64", "linux") => "powerpc64le-unknown-linux-gnu".to_string(),
        (_, "linux") => format!("{arch}-unknown-linux-gnu"),
        ("aarch64", "macos") => "arm64-apple-darwin".to_string(),
        (_, "macos") => format!("{arch}-apple-darwin"),
        (_, "windows") => format!("{arch}-pc-windows-msvc"),
        (_, os) => format!("{arch}-unknown-{os}"),
    }
}

fn run(args: &Args) -> Result<(), offload_cli::Error> {
    let kind = match args.kind.as_str() {
        "openmp" => OffloadKind::OpenMp,
        "cuda" => OffloadKind::Cuda,
        _ => OffloadKind::Hip,
    };
    let mut buffers = Vec::with_capacity(args.inputs.len());
    for input in &args.inputs {
        let data = read_input(input)
            .map_err(|e| offload_cli::Error::bytes(file_error(input, &os_error_text(&e))))?;
        buffers.push(data);
    }
    let images: Vec<&[u8]> = buffers.iter().map(|b| &b[..]).collect();
    let triple = match &args.triple {
        Some(t) => String::from_utf8_lossy(t.as_bytes()).into_owned(),
        None => default_target_triple(),
    };
    let module = wrapper::wrap_llvm22(kind, &triple, &images).map_err(|e| match e {
        WrapError::TruncatedOffloadBinary { input, .. } => {
            offload_cli::Error::bytes(file_error(&args.inputs[input], &e.to_string()))
        }
        other => offload_cli::Error::msg(other.to_string()),
    })?;
    let bitcode = module
        .to_bitcode()
        .map_err(|e| offload_cli::Error::msg(e.to_string()))?;

    // LLVM opens the output only now, and names no file when that fails.
    let output = args.output.clone().unwrap_or_default();
    let mut outputs = Outputs::new();
    let write = |outputs: &mut Outputs| -> io::Result<()> {
        if output.is_empty() {
            return Err(io::Error::from_raw_os_error(2));
        }
        let i = outputs.create(&output, false)?;
        bitcode.write_to(outputs.file(i))
    };
    // LLVM's message names no file; the explanation does.
    let about = || {
        if output.is_empty() {
            b"no output file was given: -o <file> is required".to_vec()
        } else {
            let mut v = b"the file is '".to_vec();
            v.extend_from_slice(output.as_bytes());
            v.extend_from_slice(b"' (the -o output)");
            v
        }
    };
    write(&mut outputs).map_err(|e| offload_cli::Error::io(&e).explained(about()))?;
    outputs
        .commit()
        .map_err(|e| offload_cli::Error::io(&e).explained(about()))
}
