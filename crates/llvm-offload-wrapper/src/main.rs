//! `llvm-offload-wrapper`: wraps device images in a host LLVM bitcode module
//! that registers them with the OpenMP, CUDA or HIP runtime, as LLVM 22's
//! tool of the same name does.

use offload_cli::cl::tools::LLVM_WRAPPER;
use offload_cli::cl::{self, Parsed};
use offload_cli::diag::{os_error_text, Diag};
use offload_cli::error::quoted;
use offload_cli::fsio::{read_input, Outputs};
use offload_format::wrapper::{self, OffloadKind, WrapError};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match cl::parse(&LLVM_WRAPPER, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if parsed.flag("h") {
        return parsed.print_help_list();
    }
    let diag = Diag::new(&parsed.argv0);
    match run(&parsed) {
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

fn run(args: &Parsed) -> Result<(), offload_cli::Error> {
    let kind = match args.value("kind").and_then(|k| k.to_str()) {
        Some("openmp") => OffloadKind::OpenMp,
        Some("cuda") => OffloadKind::Cuda,
        _ => OffloadKind::Hip,
    };
    let inputs = &args.positionals;
    let mut buffers = Vec::with_capacity(inputs.len());
    for input in inputs {
        let data = read_input(input)
            .map_err(|e| offload_cli::Error::bytes(file_error(input, &os_error_text(&e))))?;
        buffers.push(data);
    }
    let images: Vec<&[u8]> = buffers.iter().map(|b| &b[..]).collect();
    let triple = match args.value("triple") {
        Some(t) => String::from_utf8_lossy(t.as_bytes()).into_owned(),
        None => default_target_triple(),
    };
    let module = wrapper::wrap_llvm22(kind, &triple, &images).map_err(|e| match e {
        WrapError::TruncatedOffloadBinary { input, .. } => {
            offload_cli::Error::bytes(file_error(&inputs[input], &e.to_string()))
        }
        other => offload_cli::Error::msg(other.to_string()),
    })?;
    let bitcode = module
        .to_bitcode()
        .map_err(|e| offload_cli::Error::msg(e.to_string()))?;

    // LLVM opens the output only now, and names no file when that fails.
    let output = args.value("o").unwrap_or_default().to_os_string();
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
