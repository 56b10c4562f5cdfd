//! `clang-offload-wrapper`: wraps OpenMP device images in a host LLVM
//! bitcode module with typed pointers, as LLVM 14's tool does, plus the AMD
//! `--offload-arch` extension that records each image's target ID.

mod notes;

use offload_cli::cl::tools::CLANG_WRAPPER;
use offload_cli::cl::{self, Parsed};
use offload_cli::diag::{os_error_text, Diag};
use offload_cli::error::quoted;
use offload_cli::fsio::{read_input, Outputs};
use offload_format::wrapper::{self, triple};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match cl::parse(&CLANG_WRAPPER, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if parsed.flag("h") {
        return parsed.print_help_list();
    }
    let diag = Diag::new(&parsed.argv0);
    match run(&parsed, &diag) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            diag.error(msg);
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Parsed, diag: &Diag) -> Result<(), Vec<u8>> {
    // Both are required: the parse made sure they are there.
    let target_arg = args.value("target").unwrap_or_default();
    let output = args.value("o").unwrap_or_default();
    let target = String::from_utf8_lossy(target_arg.as_bytes()).into_owned();
    if !triple::llvm14_knows_arch_of(&target) {
        return Err(quoted(target_arg.as_bytes(), b"unsupported target triple"));
    }

    let mut notes = args
        .flag("add-omp-offload-notes")
        .then(|| notes::Notes::new(diag, args.flag("save-temps")));
    let mut buffers = Vec::with_capacity(args.positionals.len());
    for input in &args.positionals {
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
        .values("offload-arch")
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

    let out_err = |e: std::io::Error| quoted(output.as_bytes(), os_error_text(&e).as_bytes());
    if output.is_empty() {
        return Err(out_err(std::io::Error::from_raw_os_error(2)));
    }
    let mut outputs = Outputs::new();
    let i = outputs.create(output, true).map_err(out_err)?;
    bitcode.write_to(outputs.file(i)).map_err(out_err)?;
    outputs.commit().map_err(out_err)?;
    drop(notes);
    Ok(())
}
