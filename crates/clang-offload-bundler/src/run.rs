//! The three modes: bundle, list and unbundle, in LLVM 22's order of work
//! (so that the first error reported is the same), with every output
//! committed all-or-nothing.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;

use offload_cli::diag::{write_stderr, Diag};
use offload_cli::env;
use offload_cli::fsio::{Input, Outputs, ReadThrough};
use offload_format::ccob;
use offload_format::hash::xxh3::StringMapOrder;
use offload_format::object_bundle::{self, Pieces, HOST_PLACEHOLDER};
use offload_format::{bundle, text_bundle};

use crate::command::{self, make_temp_file, objcopy_path, print_command};
use crate::handler::{self, Handler, Reader};
use crate::job::{file_fail, Fail, Job, Mode};
use crate::unbundle::{
    buffered_listing, claim, decompress, finish_unbundle, lossy, read, work_list,
};
use offload_format::entry_id::EntryId;

/// Runs a validated job.
pub fn run(job: &Job) -> Result<(), Fail> {
    match job.mode {
        Mode::Bundle => bundle_files(job),
        Mode::List => list(job),
        Mode::Unbundle if job.file_type == "a" => crate::archive::unbundle(job),
        Mode::Unbundle => unbundle(job),
    }
}

/// What `-compress` asks for: zstd (the only method LLVM 22 writes) at the
/// job's level, in the job's header version.
fn compress_options(job: &Job) -> ccob::CompressOptions {
    let version = ccob::Version::from_number(job.format_version).unwrap_or(ccob::Version::V3);
    ccob::CompressOptions {
        method: ccob::Method::Zstd,
        level: job.compression_level,
        version,
    }
}

/// Compresses a serialized bundle as `-compress` asks, printing the
/// `-verbose` report.
fn compress(job: &Job, bundle: &[u8]) -> Result<Vec<u8>, Fail> {
    let c = ccob::compress(bundle, &compress_options(job)).map_err(|e| Fail::msg(e.to_string()))?;
    if job.verbose {
        write_stderr(ccob::report::format_compress_report(&c.info).as_bytes());
    }
    Ok(c.bytes)
}

/// `-compress` for binary and text bundles: the bundle is serialized
/// straight into the compressor, reading mapped inputs with `pread` (so
/// they do not become resident), and the CCOB goes straight to the output
/// file, its header filled in at the end. About one zstd window of the
/// bundle is held, or all of it where the codec must run in one call (zlib,
/// libzstd 1.5.7 and later; see [`ccob::Writer`]). Outputs that cannot seek
/// (stdout, FIFOs) get the CCOB built in memory first.
fn bundle_compressed(
    job: &Job,
    entries: &[(&[u8], &[u8])],
    text_comment: Option<&str>,
) -> Result<(), Fail> {
    let out_path = &job.outputs[0];
    let size = match text_comment {
        None => bundle::written_size(entries, job.align)
            .map_err(|e| Fail::msg(format!("invalid -bundle-align: {e}")))?,
        Some(c) => text_bundle::written_size(c, entries),
    };
    let options = compress_options(job);
    // Errors of the compressor itself are reported like LLVM's; anything
    // else is an I/O error, put on the output.
    let fail = |e: io::Error| match ccob::CcobError::from_io(&e) {
        Some(c) => Fail::msg(c.to_string()),
        None => file_fail(out_path, &e),
    };
    let stream = |out: &mut dyn WriteSeek| -> io::Result<ccob::CompressInfo> {
        let mut w = ReadThrough::new(ccob::Writer::new(out, size, &options)?);
        match text_comment {
            None => bundle::write(&mut w, entries, job.align),
            Some(c) => text_bundle::write(&mut w, c, entries),
        }?;
        Ok(w.into_inner().finish()?.1)
    };
    let in_memory = || -> Result<(Vec<u8>, ccob::CompressInfo), Fail> {
        let mut out = io::Cursor::new(Vec::new());
        let info = stream(&mut out).map_err(fail)?;
        Ok((out.into_inner(), info))
    };
    let report = |info: &ccob::CompressInfo| {
        if job.verbose {
            write_stderr(ccob::report::format_compress_report(info).as_bytes());
        }
    };
    // 22 opens the output before compressing: an unusable output fails
    // without a report.
    let mut outs = Outputs::new();
    let idx = outs
        .create(out_path, true)
        .map_err(|e| file_fail(out_path, &e))?;
    let seekable = outs
        .file(idx)
        .seekable_file()
        .map_err(|e| file_fail(out_path, &e))?;
    let info = match seekable {
        Some(file) => stream(file).map_err(fail)?,
        None => {
            let (bytes, info) = in_memory()?;
            outs.file(idx)
                .write_all(&bytes)
                .map_err(|e| file_fail(out_path, &e))?;
            info
        }
    };
    report(&info);
    outs.commit().map_err(|e| file_fail(out_path, &e))
}

/// A seekable output, as [`ccob::Writer`] needs.
trait WriteSeek: Write + io::Seek {}
impl<T: Write + io::Seek> WriteSeek for T {}

fn bundle_files(job: &Job) -> Result<(), Fail> {
    let inputs: Vec<Input> = job
        .inputs
        .iter()
        .map(|p| read(p))
        .collect::<Result<_, _>>()?;
    let reference = if job.hip_only {
        0
    } else {
        job.host_index.unwrap_or(0)
    };
    let handler = handler::select(&job.file_type, &inputs[reference])?;
    let entries: Vec<(&[u8], &[u8])> = job
        .targets
        .iter()
        .zip(&inputs)
        .map(|(t, d)| (t.id.as_bytes(), &d[..]))
        .collect();
    let out_path = &job.outputs[0];
    let text_comment = match handler {
        Handler::Binary => {
            // LLVM 22 divides by the alignment (and dies of SIGFPE at 0).
            bundle::written_size(&entries, job.align)
                .map_err(|e| Fail::msg(format!("invalid -bundle-align: {e}")))?;
            None
        }
        Handler::Text(c) => Some(c),
        Handler::Object => return bundle_object(job, &inputs, &entries),
    };
    if job.compress {
        return bundle_compressed(job, &entries, text_comment);
    }
    let mut outs = Outputs::new();
    let idx = outs
        .create(out_path, true)
        .map_err(|e| file_fail(out_path, &e))?;
    let w = outs.file(idx);
    let written = match text_comment {
        None => bundle::write(w, &entries, job.align),
        Some(c) => text_bundle::write(w, c, &entries),
    };
    written
        .and_then(|()| outs.commit())
        .map_err(|e| file_fail(out_path, &e))
}

/// `-type=o` with an object as reference input: the host object gains one
/// section per entry (the host's holds one zero byte), as LLVM 22 has
/// llvm-objcopy do. `-bundle-align` does not apply. With `-compress`, 22
/// compresses its (empty) bundle buffer and reports it, then lets objcopy
/// overwrite the output, so the object is never compressed.
fn bundle_object(job: &Job, inputs: &[Input], entries: &[(&[u8], &[u8])]) -> Result<(), Fail> {
    let out_path = &job.outputs[0];
    let Some(host) = job.host_index.filter(|_| !job.hip_only) else {
        // 22 dereferences a missing host input and crashes (SIGSEGV).
        return Err(Fail::bytes(
            [
                b"'".as_slice(),
                job.inputs[0].as_bytes(),
                b"': bundling object files (-type=o) needs a host target and its object; \
                  only offload targets were given"
                    .as_slice(),
            ]
            .concat(),
        ));
    };
    let empty = if job.compress {
        compress(job, &[])?
    } else {
        Vec::new()
    };
    // 22 writes the host placeholder to a temporary file for objcopy; we
    // need none, but make (and remove) it all the same so that an unusable
    // temporary directory fails as it does in 22.
    let temp = make_temp_file()?;
    let mut outs = Outputs::new();
    if job.print_commands {
        // 22 prints the objcopy command instead of running it; the output
        // keeps what was written before objcopy would have run.
        let files: Vec<(&[u8], &[u8])> = job
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let file = if i == host {
                    temp.as_slice()
                } else {
                    job.inputs[i].as_bytes()
                };
                (t.id.as_bytes(), file)
            })
            .collect();
        print_command(&command::bundle_command_line(
            &objcopy_path(),
            &files,
            job.inputs[host].as_bytes(),
            out_path.as_bytes(),
        ));
        return outs
            .write(out_path, true, &empty)
            .and_then(|()| outs.commit())
            .map_err(|e| file_fail(out_path, &e));
    }
    let with_placeholder: Vec<(&[u8], &[u8])> = entries
        .iter()
        .enumerate()
        .map(|(i, &(id, data))| (id, if i == host { HOST_PLACEHOLDER } else { data }))
        .collect();
    let fat = object_bundle::add_bundle_sections_pieces(&inputs[host], &with_placeholder).map_err(
        |e| {
            Fail::bytes(
                [
                    b"'".as_slice(),
                    job.inputs[host].as_bytes(),
                    b"': ",
                    e.to_string().as_bytes(),
                ]
                .concat(),
            )
        },
    )?;
    // Streamed: the host's section data and the device images go from the
    // inputs to the output without being assembled in memory.
    let idx = outs
        .create(out_path, true)
        .map_err(|e| file_fail(out_path, &e))?;
    fat.write_to(outs.file(idx))
        .and_then(|()| outs.commit())
        .map_err(|e| file_fail(out_path, &e))
}

fn list(job: &Job) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let raw = read(name)?;
    let (out, end) = match crate::stream::list(job, &raw) {
        Some(listing) => (listing?, Ok(())),
        None => buffered_listing(job, job.verbose, &raw)?,
    };
    if out.is_empty() && end.is_ok() {
        Diag::new(env::get().argv0()).explain_warning(format!(
            "'{}' holds no bundle entries of -type={}: it is not an offload bundle of that \
             type (a HIP object keeps its device code in the .hip_fatbin section: \
             `llvm-objcopy --dump-section .hip_fatbin=FILE` and list FILE)",
            lossy(name),
            job.file_type
        ));
    }
    print_listing(&out, end)
}

/// Prints the IDs `list` found, then returns how the listing ended.
fn print_listing(out: &[u8], end: Result<(), Fail>) -> Result<(), Fail> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(out)
        .and_then(|()| stdout.flush())
        .map_err(|e| file_fail(OsStr::new("-"), &e))?;
    end
}

fn unbundle(job: &Job) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let raw = read(name)?;
    if let Some(done) = crate::stream::unbundle(job, &raw) {
        return done;
    }
    let bundles = decompress(job.verbose, name, &raw)?;
    let (mut worklist, requested) = work_list(job)?;
    let mut outs = Outputs::new();
    let mut refused_host = None;
    for data in &bundles {
        if worklist.is_empty() {
            break;
        }
        let data: &[u8] = data;
        let handler = handler::select(&job.file_type, data)?;
        let mut reader = Reader::new(handler, data, &lossy(name))?;
        take_entries(
            job,
            data,
            &mut reader,
            &mut worklist,
            &requested,
            &mut outs,
            &mut refused_host,
        )?;
    }
    let first = bundles.first().map_or(&[][..], |b| b);
    finish_unbundle(job, first, worklist, outs, refused_host)
}

/// Moves the entries `reader` yields that the work list asks for into their
/// outputs, in the reader's order. A host object we refuse where LLVM 22
/// writes it anyway (see [`host_object`]) is kept in `refused_host` and
/// reported after everything LLVM goes on to check.
fn take_entries(
    job: &Job,
    data: &[u8],
    reader: &mut Reader<'_>,
    worklist: &mut StringMapOrder,
    requested: &[EntryId],
    outs: &mut Outputs,
    refused_host: &mut Option<Fail>,
) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let output_of = |key: usize| &job.outputs[key];
    while !worklist.is_empty() {
        let Some(id) = reader.next_id() else { break };
        let Some(k) = claim(job, worklist, requested, id)? else {
            continue;
        };
        let path = output_of(k);
        let i = outs.create(path, true).map_err(|e| file_fail(path, &e))?;
        // Flushed at once so that several `-` outputs reach stdout whole and
        // in order, as LLVM writes them.
        let f = outs.file(i);
        let written = if reader.is_host_placeholder() {
            match host_object(job, data) {
                Ok(host) => host.write_to(f),
                Err(HostFail::LlvmGoesOn(e)) => {
                    refused_host.get_or_insert(e);
                    Ok(())
                }
                Err(HostFail::Now(e)) => return Err(e),
            }
        } else {
            f.write_all(&reader.content(&lossy(name))?)
        };
        written
            .and_then(|()| f.flush())
            .map_err(|e| file_fail(path, &e))?;
    }
    reader.finish()
}

/// The host object of an object bundle: the input without its bundle
/// sections, as llvm-objcopy writes it for 22, in pieces borrowing the
/// input's section data. Under `-###` 22 prints the objcopy command instead
/// and the output stays empty.
fn host_object<'a>(job: &Job, data: &'a [u8]) -> Result<Pieces<'a>, HostFail> {
    // As when bundling: the temporary file objcopy would write to is made
    // even though we do not need it, so an unusable TMPDIR fails alike.
    let temp = make_temp_file().map_err(HostFail::Now)?;
    if job.print_commands {
        print_command(&command::unbundle_host_command_line(
            &objcopy_path(),
            job.inputs[0].as_bytes(),
            &temp,
        ));
        return Ok(Pieces::default());
    }
    object_bundle::strip_bundle_sections_pieces(data).map_err(|e| {
        let fail = handler::object_fail(&e);
        // Where llvm-objcopy 22 writes an object it cannot read back, the
        // bundler 22 goes on (docs/compat.md, object bundles 3).
        let unreadable = matches!(
            e,
            object_bundle::Error::Unreadable
                | object_bundle::Error::Elf(object_bundle::ElfError::GroupSymbolRemoved { .. })
        );
        let input = job.inputs[0].as_bytes();
        if unreadable {
            return HostFail::LlvmGoesOn(fail);
        }
        HostFail::Now(crate::objcopy::refusal(&e, input, &temp, input).unwrap_or(fail))
    })
}

/// Why the host object was not made: an error LLVM 22 stops at, or a
/// refusal of ours where LLVM 22 writes an unreadable object and goes on
/// (reported once LLVM's later checks, such as missing bundles, passed).
enum HostFail {
    Now(Fail),
    LlvmGoesOn(Fail),
}
