//! `clang-offload-wrapper`: wraps OpenMP device images in a host LLVM
//! bitcode module with typed pointers, as LLVM 14's tool does, plus the AMD
//! `--offload-arch` extension that records each image's target ID.

mod notes;

use clap::Parser;
use offload_cli::cl::{self, HelpKind, Spec};
use offload_cli::diag::{os_error_text, Diag};
use offload_cli::error::quoted;
use offload_cli::fsio::{read_input, Outputs};
use offload_format::wrapper::{self, triple};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Output file; `-` is standard output.
    #[arg(long = "o", required = true)]
    output: OsString,
    /// Target triple of the module.
    #[arg(long = "target", required = true)]
    target: OsString,
    /// Target ID of the image at the same position (AMD extension).
    #[arg(long = "offload-arch", action = clap::ArgAction::Append)]
    offload_arch: Vec<OsString>,
    /// Keep the temporary files of --add-omp-offload-notes.
    #[arg(long = "save-temps", action = clap::ArgAction::SetTrue)]
    save_temps: bool,
    /// Add LLVMOMPOFFLOAD ELF notes to ELF images (with llvm-objcopy).
    #[arg(long = "add-omp-offload-notes", action = clap::ArgAction::SetTrue)]
    add_notes: bool,
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
    "Debian clang-offload-wrapper version 14.0.6\n".to_string()
}

const SPEC: Spec = Spec {
    help,
    version,
    // Order of LLVM 14's option map for this tool, as observed through
    // equal-distance suggestions. The hidden options outside the tool's
    // category (-h, --save-temps, --add-omp-offload-notes) are never
    // suggested, nor is our --offload-arch extension.
    suggest: &[
        "o",
        "print-all-options",
        "help-list",
        "help",
        "help-list-hidden",
        "print-options",
        "target",
        "help-hidden",
        "version",
    ],
    llvm14: true,
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
    match run(&args, &diag) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            diag.error(msg);
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args, diag: &Diag) -> Result<(), Vec<u8>> {
    let target = String::from_utf8_lossy(args.target.as_bytes()).into_owned();
    if !triple::llvm14_knows_arch_of(&target) {
        return Err(quoted(args.target.as_bytes(), b"unsupported target triple"));
    }

    let mut notes = args
        .add_notes
        .then(|| notes::Notes::new(diag, args.save_temps));
    let mut buffers = Vec::with_capacity(args.inputs.len());
    for input in &args.inputs {
        let mut data = read_input(input)
            .map_err(|e| quoted(input.as_bytes(), os_error_text(&e).as_bytes()))?;
        if let Some(n) = notes.as_mut() {
            if input != "-" {
                data = n.add(input, data);
            }
        }
        buffers.push(data);
    }
    let images: Vec<&[u8]> = buffers.iter().map(|b| &b[..]).collect();
    let archs: Vec<String> = args
        .offload_arch
        .iter()
        .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
        .collect();
    let archs: Vec<&str> = archs.iter().map(String::as_str).collect();
    let module = wrapper::wrap_clang14(&target, &images, &archs).map_err(|e| match e {
        // The library counts architectures; the option gave them.
        wrapper::WrapError::ArchCountMismatch { archs, images } => format!(
            "{archs} --offload-arch value{} given for {images} input image{}; \
                 give one per image, in input order",
            if archs == 1 { "" } else { "s" },
            if images == 1 { "" } else { "s" },
        )
        .into_bytes(),
        other => other.to_string().into_bytes(),
    })?;
    let bitcode = module
        .to_bitcode()
        .map_err(|e| e.to_string().into_bytes())?;

    let out_err = |e: std::io::Error| quoted(args.output.as_bytes(), os_error_text(&e).as_bytes());
    if args.output.is_empty() {
        return Err(out_err(std::io::Error::from_raw_os_error(2)));
    }
    let mut outputs = Outputs::new();
    let i = outputs.create(&args.output, true).map_err(out_err)?;
    bitcode.write_to(outputs.file(i)).map_err(out_err)?;
    outputs.commit().map_err(out_err)?;
    drop(notes);
    Ok(())
}
