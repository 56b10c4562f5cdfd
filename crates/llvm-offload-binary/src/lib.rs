//! `llvm-offload-binary` (also installed as `clang-offload-packager`): packs
//! device images into offload binaries, or extracts them again.
//!
//! Both binaries call [`main`]; they differ only in `argv[0]`, which decides
//! whether the deprecation warning of the old name is printed. Everything
//! about the format lives in `offload_format::offload_binary`; this crate
//! maps the command line onto it and prints LLVM 22's messages.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use offload_cli::cl;
use offload_cli::cl::tools::OFFLOAD_BINARY;
use offload_cli::diag::Diag;
use offload_cli::error::quoted;
use offload_cli::fsio::{self, Outputs};
use offload_format::archive::{write_archive, NewMember, WriteOptions};
use offload_format::offload_binary::extract::{self, ExtractError, Found};
use offload_format::offload_binary::path;
use offload_format::offload_binary::spec::ImageArgs;
use offload_format::offload_binary::{
    ImageEntry, ImageKind, OffloadKind, ReadError, ReadErrorKind,
};

/// An error already worded for the user: printed as `<argv0>: error: <text>`
/// (the tools' one error type).
type Failure = offload_cli::Error;

/// Entry point shared by both binary names.
pub fn main() -> ExitCode {
    let parsed = match cl::parse(&OFFLOAD_BINARY, cl::os_args()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let argv0 = &parsed.argv0;
    let diag = Diag::new(argv0);
    if path::stem(argv0.as_bytes()).ends_with(b"clang-offload-packager") {
        diag.bare_warning(
            "'clang-offload-packager' is deprecated. Use 'llvm-offload-binary' instead.",
        );
    }
    // LLVM treats an empty value like an absent option.
    let output = parsed.value("o").filter(|o| !o.is_empty());
    let input = parsed.positionals.first().filter(|i| !i.is_empty());
    if parsed.flag("h") || (output.is_none() && input.is_none()) {
        return parsed.print_help_list();
    }
    let images = parsed.values("image");
    let result = match (&output, &input) {
        (Some(_), Some(_)) => Err(Failure::bytes(
            "Packaging to an output file and extracting from an input file are mutually exclusive.",
        )),
        (Some(o), None) => package(o, &images),
        (None, Some(i)) => unpack(i, &images, parsed.flag("archive"), &diag),
        (None, None) => unreachable!("help was printed"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}

/// One image read from disk, with what the binary will say about it.
struct Loaded {
    kind: ImageKind,
    offload: OffloadKind,
    strings: Vec<(Vec<u8>, Vec<u8>)>,
    data: fsio::Input,
}

/// `-o`: every `--image` (and every file of each) becomes one binary; the
/// binaries are concatenated into the output.
fn package(output: &OsStr, images: &[OsString]) -> Result<(), Failure> {
    let mut loaded = Vec::new();
    for image in images {
        let args = ImageArgs::parse(image.as_bytes());
        let files = args
            .files()
            .ok_or_else(|| Failure::bytes("'file' is a required image arguments"))?;
        let strings: Vec<(Vec<u8>, Vec<u8>)> = args
            .strings()
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        for file in files {
            let data = fsio::read_input(OsStr::from_bytes(file))
                .map_err(|e| Failure::io(&e).explained(about(file, "an --image input")))?;
            loaded.push(Loaded {
                kind: ImageKind::infer(file, &data),
                offload: args.offload_kind(),
                strings: strings.clone(),
                data,
            });
        }
    }
    let mut outs = Outputs::new();
    let write = |outs: &mut Outputs| -> std::io::Result<()> {
        let i = outs.create(output, true)?;
        for l in &loaded {
            let entry = ImageEntry {
                image_kind: l.kind,
                offload_kind: l.offload,
                flags: 0,
                strings: l
                    .strings
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_slice()))
                    .collect(),
                image: &l.data,
            };
            entry.write_v1(outs.file(i))?;
        }
        Ok(())
    };
    write(&mut outs)
        .map_err(|e| Failure::io(&e).explained(about(output.as_bytes(), "the -o output")))?;
    outs.commit().map_err(|e| Failure::io(&e))
}

/// The explanation of an OS error whose message, as LLVM prints it, names
/// no file.
fn about(file: &[u8], role: &str) -> Vec<u8> {
    let mut v = b"the file is '".to_vec();
    v.extend_from_slice(file);
    v.extend_from_slice(format!("' ({role})").as_bytes());
    v
}

/// The explanation of an `--image` filter that matched nothing: the
/// images there are, with their keys.
fn no_match(filter: &OsStr, input: &OsStr, found: &[Found<'_>]) -> Vec<u8> {
    let mut v = b"--image=".to_vec();
    v.extend_from_slice(filter.as_bytes());
    v.extend_from_slice(b" matches no image of '");
    v.extend_from_slice(input.as_bytes());
    v.extend_from_slice(b"', so nothing is extracted for it");
    if found.is_empty() {
        v.extend_from_slice(b"; it holds no offload images");
        return v;
    }
    v.extend_from_slice(b"; a filter selects the images whose keys all equal its values (");
    v.extend_from_slice(b"'file' names the output), and the images are:");
    for f in found {
        v.extend_from_slice(b" [kind=");
        v.extend_from_slice(f.binary.offload_kind.name().as_bytes());
        for (k, val) in &f.binary.strings {
            v.push(b',');
            v.extend_from_slice(k);
            v.push(b'=');
            v.extend_from_slice(val);
        }
        v.push(b']');
    }
    v
}

/// The message for a failed extraction: LLVM's text where LLVM 22 reports
/// the problem itself; otherwise ours, naming the input (and the archive
/// member, when the problem is inside one). `source` is the name the input
/// was read under (`<stdin>` for `-`).
fn extraction_error(e: &ExtractError, input: &OsStr, source: &[u8]) -> Failure {
    if image_size_wraps(e) {
        // LLVM 22 reads the binary, then asks for an output file of the
        // image's size: above 2^63 bytes, `ftruncate` fails with EINVAL
        // and it prints the bare OS text. Ours goes in the explanation.
        return Failure::bytes("Invalid argument")
            .explained(own_extraction_error(e, input, source));
    }
    match e.llvm_message() {
        Some(m) => Failure::bytes(m),
        None => Failure::bytes(own_extraction_error(e, input, source)),
    }
}

/// Our text for `e`: `'<input>': [member '<m>': ]<what is wrong>`.
fn own_extraction_error(e: &ExtractError, input: &OsStr, source: &[u8]) -> Vec<u8> {
    let mut what = Vec::new();
    if e.source() != source {
        what.extend_from_slice(b"member ");
        what.extend_from_slice(&quoted(e.source(), b""));
    }
    what.extend_from_slice(e.to_string().as_bytes());
    quoted(input.as_bytes(), &what)
}

/// An image whose offset plus size wraps past 2^64 (so its size is above
/// 2^63 for any input): LLVM 22 accepts the binary and fails only when it
/// creates the image's output file.
fn image_size_wraps(e: &ExtractError) -> bool {
    matches!(
        e,
        ExtractError::Binary {
            error: ReadError {
                kind: ReadErrorKind::ImagePastEnd { offset, len, .. },
                ..
            },
            ..
        } if offset.checked_add(*len).is_none()
    )
}

fn matches(args: &ImageArgs<'_>, found: &Found<'_>) -> bool {
    args.iter().all(|(k, v)| match k {
        b"file" => true,
        b"kind" => found.binary.offload_kind == OffloadKind::from_name(v),
        _ => found.binary.string(k) == v,
    })
}

/// A positional input: find every image, then apply each `--image` filter in
/// order. Without filters nothing is written. Outputs are committed together
/// at the end: a filter that fails leaves no output of earlier filters
/// behind (LLVM 22 keeps them; see docs/compat.md#llvm-offload-binary--clang-offload-packager).
fn unpack(input: &OsStr, filters: &[OsString], archive: bool, diag: &Diag) -> Result<(), Failure> {
    let mut outs = Outputs::new();
    unpack_into(&mut outs, input, filters, archive, diag)?;
    outs.commit().map_err(|e| Failure::io(&e))
}

fn unpack_into(
    outs: &mut Outputs,
    input: &OsStr,
    filters: &[OsString],
    archive: bool,
    diag: &Diag,
) -> Result<(), Failure> {
    let data = fsio::read_input(input).map_err(|e| Failure::file_io(input.as_bytes(), &e))?;
    let source: &[u8] = if input == "-" {
        b"<stdin>"
    } else {
        input.as_bytes()
    };
    let found = match extract::extract_with_thin_members(&data, source, &mut fsio::read_member_file)
    {
        Ok(found) => found,
        // LLVM 22 writes nothing without filters, so it never meets the
        // image it cannot write.
        Err(e) if filters.is_empty() && image_size_wraps(&e) => {
            diag.explain_warning(own_extraction_error(&e, input, source));
            return Ok(());
        }
        Err(e) => return Err(extraction_error(&e, input, source)),
    };
    for filter in filters {
        let args = ImageArgs::parse(filter.as_bytes());
        let chosen: Vec<&Found<'_>> = found.iter().filter(|f| matches(&args, f)).collect();
        let Some(last) = chosen.last() else {
            diag.explain_warning(no_match(filter, input, &found));
            continue;
        };
        if archive {
            let file = args
                .get(b"file")
                .ok_or_else(|| Failure::bytes("Image must have a 'file' argument."))?;
            let members: Vec<NewMember<'_>> = chosen
                .iter()
                .map(|f| NewMember {
                    name: &f.source,
                    data: &f.binary.image,
                })
                .collect();
            let options = WriteOptions::default()
                .with_sym64_env(offload_cli::env::get().var_str("SYM64_THRESHOLD"));
            // LLVM creates the output before it reads member symbols, so a
            // bad path fails before any symbol warning. A file named "-" is
            // created rather than using stdout.
            let index = outs
                .create(OsStr::from_bytes(file), false)
                .map_err(|e| Failure::io(&e).explained(about(file, "the --archive output")))?;
            let report = write_archive(&members, &options, outs.file(index))
                .map_err(|e| Failure::bytes(e.to_bytes()))?;
            for w in &report.warnings {
                diag.bare_warning(w.to_bytes());
            }
            if let Some(name) = report.module_asm_members.first() {
                // LLVM 22 crashes on these; refuse instead of guessing.
                return Err(Failure::file(
                    name,
                    "bitcode with module-level inline assembly cannot be archived \
                     (LLVM 22 crashes here)",
                ));
            }
        } else if let Some(file) = args.get(b"file") {
            if chosen.len() > 1 {
                let mut msg = b"Multiple inputs match to a single file, '".to_vec();
                msg.extend_from_slice(file);
                msg.extend_from_slice(b"'");
                diag.warning(msg);
            }
            outs.write(OsStr::from_bytes(file), true, &last.binary.image)
                .map_err(|e| Failure::io(&e).explained(about(file, "an extracted image")))?;
        } else {
            for (i, f) in chosen.iter().enumerate() {
                let mut name = path::stem(input.as_bytes()).to_vec();
                name.push(b'-');
                name.extend_from_slice(f.binary.triple());
                name.push(b'-');
                name.extend_from_slice(f.binary.arch());
                name.extend_from_slice(
                    format!(".{i}.{}", f.binary.image_kind.extension()).as_bytes(),
                );
                outs.write(OsStr::from_bytes(&name), true, &f.binary.image)
                    .map_err(|e| Failure::io(&e).explained(about(&name, "an extracted image")))?;
            }
        }
    }
    Ok(())
}
