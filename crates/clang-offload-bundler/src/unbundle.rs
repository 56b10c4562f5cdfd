//! What listing and unbundling share, whether the input is read whole
//! (`run`) or streamed (`stream`): its bundles read (CCOBs expanded, with
//! the `-verbose` report and the hash check), and its entries assigned to
//! the requested targets up to the missing-bundle check and the commit.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::Write;

use offload_cli::diag::{os_error_text, write_stderr};
use offload_cli::explain;
use offload_cli::fsio::{self, read_input, Input, Outputs};
use offload_format::ccob::{self, Detection};
use offload_format::entry_id::{EntryId, INVALID_ID_IN_BUNDLE};
use offload_format::hash::xxh3::StringMapOrder;

use crate::handler::{self, Reader};
use crate::job::{file_fail, named_fail, Fail, Job};

pub(crate) fn read(path: &OsStr) -> Result<Input, Fail> {
    read_input(path).map_err(|e| file_fail(path, &e))
}

pub(crate) fn lossy(p: &OsStr) -> String {
    p.to_string_lossy().into_owned()
}

/// The step LLVM takes on an input before choosing its handler when
/// reading: a compressed bundle (CCOB) is expanded, with `-verbose` its
/// report is printed, and plain inputs are reported as such.
///
/// Unlike LLVM 22 the stored hash is verified (after the report, which shows
/// both hashes), and a v2/v3 CCOB ends at its recorded total size: further
/// CCOBs after it (device libraries concatenate one per translation unit,
/// with zero padding between them) are expanded too, each giving one bundle,
/// and other bytes between or after them are skipped. 22 fails on both
/// with a zstd error. A v1 CCOB, which records no size, runs to the end of
/// the input, as in 22.
///
/// Errors keep 22's `Failed to decompress input: ` form; those of checks 22
/// does not make (sizes, hash, memory) also name `name`, the input.
pub(crate) fn decompress<'d>(
    verbose: bool,
    name: &OsStr,
    data: &'d [u8],
) -> Result<Vec<Cow<'d, [u8]>>, Fail> {
    let fail = |e: ccob::CcobError| ccob_fail(name, e);
    let expand = |bytes: &[u8]| -> Result<Vec<u8>, Fail> {
        // A mapped input's payload is read with pread, so that only the
        // decompressed bundle becomes resident.
        let d =
            ccob::decompress_unverified_with(bytes, Some(&mut fsio::read_into)).map_err(fail)?;
        report_and_verify(verbose, name, &d.report(), d.verify())?;
        Ok(d.data)
    };
    match ccob::detect(data) {
        Detection::TooShort => Ok(vec![Cow::Borrowed(data)]),
        Detection::Uncompressed => {
            if verbose {
                write_stderr(b"Uncompressed bundle.\n");
            }
            Ok(vec![Cow::Borrowed(data)])
        }
        Detection::Compressed => {
            if ccob::Header::parse(data).map_err(fail)?.version == ccob::Version::V1 {
                return Ok(vec![Cow::Owned(expand(data)?)]);
            }
            let mut out = Vec::new();
            for seg in ccob::segments(data) {
                match seg.map_err(fail)? {
                    ccob::Segment::Ccob { bytes, .. } => out.push(Cow::Owned(expand(bytes)?)),
                    ccob::Segment::Gap { .. } | ccob::Segment::Uncompressed(_) => {}
                }
            }
            Ok(out)
        }
    }
}

/// After a CCOB is expanded: the `-verbose` report (which shows both
/// hashes), then the outcome of the hash check.
pub(crate) fn report_and_verify(
    verbose: bool,
    name: &OsStr,
    report: &ccob::DecompressReport,
    verified: Result<(), ccob::CcobError>,
) -> Result<(), Fail> {
    if verbose {
        write_stderr(ccob::report::format_decompress_report(report).as_bytes());
    }
    verified.map_err(|e| ccob_fail(name, e))
}

/// A CCOB error of input `name` as the bundler reports it (see
/// [`decompress`]).
fn ccob_fail(name: &OsStr, e: ccob::CcobError) -> Fail {
    let text = format!("Failed to decompress input: {e}");
    if e.is_own_check() {
        named_fail(name, &text)
    } else {
        Fail::msg(text)
    }
}

/// What `-list` prints for `raw` (read in memory), and how the listing
/// ended (IDs seen before a broken section table are kept).
pub(crate) fn buffered_listing(
    job: &Job,
    verbose: bool,
    raw: &[u8],
) -> Result<(Vec<u8>, Result<(), Fail>), Fail> {
    let name = &job.inputs[0];
    let bundles = decompress(verbose, name, raw)?;
    let mut out = Vec::new();
    let mut end = Ok(());
    for data in &bundles {
        let handler = handler::select(&job.file_type, data)?;
        let mut reader = Reader::new(handler, data, &lossy(name))?;
        while let Some(id) = reader.next_id() {
            out.extend_from_slice(id);
            out.push(b'\n');
            reader.skip_listed(&lossy(name))?;
        }
        // IDs seen before a broken section table are printed, then the
        // error.
        end = reader.finish();
        if end.is_err() {
            break;
        }
    }
    Ok((out, end))
}

/// For the explanation after "Can't find bundles": the entry IDs of the
/// input, read again (quietly: no verbose report).
pub(crate) fn entries_held(job: &Job) -> String {
    let Ok(raw) = read(&job.inputs[0]) else {
        return "the input could not be read again".into();
    };
    match buffered_listing(job, false, &raw) {
        Ok((ids, _)) if !ids.is_empty() => {
            let ids: Vec<String> = String::from_utf8_lossy(&ids)
                .lines()
                .map(|l| format!("'{l}'"))
                .collect();
            format!("the bundle holds {}", ids.join(", "))
        }
        _ => format!(
            "the input holds no bundle entries of -type={}",
            job.file_type
        ),
    }
}

/// The work list (standardised target -> output, in LLVM's map order) and
/// each target's parsed ID.
pub(crate) fn work_list(job: &Job) -> Result<(StringMapOrder, Vec<EntryId>), Fail> {
    let mut worklist = StringMapOrder::new();
    let mut requested = Vec::with_capacity(job.targets.len());
    for t in &job.targets {
        worklist.insert(t.id.as_bytes());
        // A standardised ID always has 5 or 6 pieces.
        requested.push(EntryId::parse(&t.id).map_err(|e| Fail::msg(e.to_string()))?);
    }
    Ok((worklist, requested))
}

/// The requested target that takes the bundle entry with ID `id`, as LLVM
/// chooses it (the first compatible one in work-list order), taken off the
/// work list; `None` if no target wants the entry.
pub(crate) fn claim(
    job: &Job,
    worklist: &mut StringMapOrder,
    requested: &[EntryId],
    id: &[u8],
) -> Result<Option<usize>, Fail> {
    let Ok(entry) = EntryId::parse(&String::from_utf8_lossy(id)) else {
        return Err(Fail::msg(INVALID_ID_IN_BUNDLE));
    };
    let found = worklist
        .iter()
        .find(|&k| entry.is_compatible_code_object(&requested[k], job.hip_openmp_compatible));
    if let Some(k) = found {
        worklist.remove(job.targets[k].id.as_bytes());
    }
    Ok(found)
}

/// After every bundle was read: the missing-bundle error, or the remaining
/// outputs (empty, or the input itself for the host when nothing matched).
pub(crate) fn finish_unbundle(
    job: &Job,
    data: &[u8],
    worklist: StringMapOrder,
    mut outs: Outputs,
    refused_host: Option<Fail>,
) -> Result<(), Fail> {
    let output_of = |key: usize| &job.outputs[key];
    if !job.allow_missing && !worklist.is_empty() {
        let mut missing: Vec<&str> = worklist
            .iter()
            .map(|k| job.targets[k].id.as_str())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let mut m = String::from("Can't find bundles for");
        let last = missing.len() - 1;
        for (i, t) in missing.iter().enumerate() {
            if i != 0 && last > 1 {
                m.push(',');
            }
            m.push(' ');
            if i == last && i != 0 {
                m.push_str("and ");
            }
            m.push_str(t);
        }
        let mut e = Fail::msg(m);
        if explain::enabled() {
            e = e.explained(format!(
                "{} (an entry is taken for a target when its kind, triple and GPU \
                 are compatible; -allow-missing-bundles writes empty outputs instead)",
                entries_held(job)
            ));
        }
        return Err(e);
    }
    if let Some(e) = refused_host {
        return Err(e);
    }
    let nothing_found = worklist.len() == job.targets.len();
    let remaining: Vec<usize> = worklist.iter().collect();
    for k in remaining {
        let path = output_of(k);
        let i = outs.create(path, true).map_err(|e| file_fail(path, &e))?;
        // With no entry found at all, the input is taken to be the host's.
        if nothing_found && job.targets[k].kind == "host" {
            let f = outs.file(i);
            f.write_all(data)
                .and_then(|()| f.flush())
                .map_err(|e| file_fail(path, &e))?;
        }
    }
    outs.commit().map_err(|e| match Fail::io(&e) {
        fatal if fatal.llvm_fatal => fatal,
        _ => Fail::msg(format!("writing outputs: {}", os_error_text(&e))),
    })
}
