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
use offload_format::archive::{
    write_archive, ArchiveWriteError, NewMember, WriteOptions, MAX_MEMBER_SIZE,
};
use offload_format::offload_binary::extract::{self, ExtractError, Found};
use offload_format::offload_binary::path;
use offload_format::offload_binary::spec::ImageArgs;
use offload_format::offload_binary::{
    ImageEntry, ImageKind, Images, OffloadKind, ReadError, ReadErrorKind,
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

/// Our text for an image that runs past the end of its binary.
fn own_image_error(f: &Found<'_>, error: &ReadError, input: &OsStr, source: &[u8]) -> Vec<u8> {
    let e = ExtractError::Binary {
        source: f.source.clone(),
        error: error.clone(),
    };
    own_extraction_error(&e, input, source)
}

/// The recorded size of an image past the end of its binary.
fn recorded_size(error: &ReadError) -> Option<u64> {
    match error.kind {
        ReadErrorKind::ImagePastEnd { len, .. } => Some(len),
        _ => None,
    }
}

/// Writes `f`'s image to `name` (`-` is stdout).
///
/// LLVM 22 reads an entry without checking that its image lies inside the
/// binary, and touches the image only here: it asks for an output of the
/// image's size, then copies the bytes. Where the system refuses that size
/// (an OS error LLVM prints as is), so do we, with LLVM's text; where it
/// would grant it, LLVM goes on to read past its buffer and we refuse with
/// ours (docs/compat.md, policy 1).
///
/// The image's range is known to be bad before any output exists, so no
/// output is ever sized from it: the refusal is worked out by asking, not
/// by making a file of that size (a 1 TiB sparse file, or death by
/// `SIGXFSZ` under `ulimit -f`, as LLVM 22 dies). The output made here is
/// the unnamed staging file, dropped with the error.
fn write_image(
    outs: &mut Outputs,
    name: &[u8],
    f: &Found<'_>,
    input: &OsStr,
    source: &[u8],
) -> Result<(), Failure> {
    let explain = || about(name, "an extracted image");
    let Some(error) = &f.binary.image_error else {
        return outs
            .write(OsStr::from_bytes(name), true, &f.binary.image)
            .map_err(|e| Failure::io(&e).explained(explain()));
    };
    let ours = own_image_error(f, error, input, source);
    let Some(len) = recorded_size(error) else {
        return Err(Failure::bytes(ours));
    };
    let index = outs
        .create(OsStr::from_bytes(name), true)
        .map_err(|e| Failure::io(&e).explained(explain()))?;
    let refused = match outs.file(index).seekable_file() {
        Ok(Some(file)) => file_refuses(file, len),
        // Standard output or a device: a buffer in memory of the size
        // rounded up to pages (a size that wraps to zero for the last page
        // of 2^64), which the system may refuse; it is never touched.
        Ok(None) if len > u64::MAX - (PAGE_SIZE - 1) => Some(einval()),
        Ok(None) => usize::try_from(len)
            .map_or(true, |n| Vec::<u8>::new().try_reserve_exact(n).is_err())
            .then(|| std::io::Error::from_raw_os_error(ENOMEM)),
        Err(e) => Some(e),
    };
    Err(match refused {
        Some(e) => Failure::io(&e).explained(ours),
        None => Failure::bytes(ours),
    })
}

/// The error LLVM 22's `ftruncate` of `file` to `len` bytes would meet,
/// found without changing the file: `EINVAL` above a signed `off_t`,
/// `EFBIG` above the largest file the file system holds. A seek to `len`
/// is refused (`EINVAL`) exactly where the file system's limit is passed,
/// and neither writes nor sizes anything, so a file-size limit
/// (`RLIMIT_FSIZE`) is never met here. `None`: the size would be granted.
fn file_refuses(file: &mut std::fs::File, len: u64) -> Option<std::io::Error> {
    use std::io::{Seek, SeekFrom};
    if len > i64::MAX as u64 {
        return Some(einval());
    }
    match file.seek(SeekFrom::Start(len)) {
        Ok(_) => None,
        Err(e) if e.raw_os_error() == Some(EINVAL) => {
            Some(std::io::Error::from_raw_os_error(EFBIG))
        }
        Err(e) => Some(e),
    }
}

/// The OS error numbers LLVM 22's refusals print (Linux values).
const EINVAL: i32 = 22;
const EFBIG: i32 = 27;
const ENOMEM: i32 = 12;

fn einval() -> std::io::Error {
    std::io::Error::from_raw_os_error(EINVAL)
}

/// The page size LLVM 22 rounds an in-memory output buffer up to.
const PAGE_SIZE: u64 = 4096;

/// The `--archive` members: the chosen images, in order. An image past the
/// end of its binary fails as LLVM 22's archive writer meets it: a size
/// beyond the member header's is refused by name, before any byte is read;
/// a smaller one LLVM reads past its buffer, and we refuse with our text.
fn archive_members<'f>(
    chosen: &[&'f Found<'f>],
    input: &OsStr,
    source: &[u8],
) -> Result<Vec<NewMember<'f>>, Failure> {
    let mut members = Vec::with_capacity(chosen.len());
    for f in chosen {
        if let Some(error) = &f.binary.image_error {
            let ours = own_image_error(f, error, input, source);
            return Err(match recorded_size(error) {
                Some(len) if len > MAX_MEMBER_SIZE => Failure::bytes(
                    ArchiveWriteError::TooLarge {
                        name: f.source.clone(),
                    }
                    .to_bytes(),
                )
                .explained(ours),
                _ => Failure::bytes(ours),
            });
        }
        members.push(NewMember {
            name: &f.source,
            data: &f.binary.image,
        });
    }
    Ok(members)
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
    // Images past the end of their binaries are errors only when written,
    // as in LLVM 22 (see `write_image`).
    let found = extract::extract_with_thin_members(
        &data,
        source,
        &mut fsio::read_member_file,
        Images::Deferred,
    )
    .map_err(|e| extraction_error(&e, input, source))?;
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
            let options = WriteOptions::default()
                .with_sym64_env(offload_cli::env::get().var_str("SYM64_THRESHOLD"));
            // LLVM creates the output before it reads member symbols, so a
            // bad path fails before any symbol warning. A file named "-" is
            // created rather than using stdout.
            let index = outs
                .create(OsStr::from_bytes(file), false)
                .map_err(|e| Failure::io(&e).explained(about(file, "the --archive output")))?;
            let members = archive_members(&chosen, input, source)?;
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
            write_image(outs, file, last, input, source)?;
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
                write_image(outs, &name, f, input, source)?;
            }
        }
    }
    // What LLVM 22 passes over without a word: images it never wrote.
    for f in &found {
        if let Some(error) = &f.binary.image_error {
            let mut text = own_image_error(f, error, input, source);
            text.extend_from_slice(b"; it was not written");
            diag.explain_warning(text);
        }
    }
    Ok(())
}
