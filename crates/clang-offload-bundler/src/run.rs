//! The three modes: bundle, list and unbundle, in LLVM 22's order of work
//! (so that the first error reported is the same), with every output
//! committed all-or-nothing.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;

use offload_cli::diag::{os_error_text, write_stderr};
use offload_cli::fsio::{read_input, Outputs};
use offload_format::hash::xxh3::StringMapOrder;
use offload_format::{bundle, text_bundle};

use crate::handler::{self, Handler, Reader};
use crate::job::{Fail, Job, Mode};
use offload_format::entry_id::{EntryId, INVALID_ID_IN_BUNDLE};

/// `'<path>': <OS error text>`, LLVM's file error form.
fn file_fail(path: &OsStr, e: &io::Error) -> Fail {
    let mut m = b"'".to_vec();
    m.extend_from_slice(path.as_bytes());
    m.extend_from_slice(b"': ");
    m.extend_from_slice(os_error_text(e).as_bytes());
    Fail::bytes(m)
}

fn read(path: &OsStr) -> Result<Vec<u8>, Fail> {
    read_input(path).map_err(|e| file_fail(path, &e))
}

fn lossy(p: &OsStr) -> String {
    p.to_string_lossy().into_owned()
}

/// Runs a validated job.
pub fn run(job: &Job) -> Result<(), Fail> {
    match job.mode {
        Mode::Bundle => bundle_files(job),
        Mode::List => list(job),
        Mode::Unbundle if job.file_type == "a" => crate::archive::unbundle(job),
        Mode::Unbundle => unbundle(job),
    }
}

/// The checks LLVM makes on an input before choosing its handler when
/// reading: compressed bundles are expanded (not integrated yet), and
/// `-verbose` reports plain ones.
fn decompress<'a>(job: &Job, data: &'a [u8]) -> Result<&'a [u8], Fail> {
    if data.len() < 8 {
        return Ok(data);
    }
    if data.starts_with(b"CCOB") {
        return Err(Fail::msg(
            "compressed offload bundles (CCOB) are not supported yet",
        ));
    }
    if job.verbose {
        write_stderr(b"Uncompressed bundle.\n");
    }
    Ok(data)
}

fn bundle_files(job: &Job) -> Result<(), Fail> {
    let inputs: Vec<Vec<u8>> = job
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
        .map(|(t, d)| (t.id.as_bytes(), d.as_slice()))
        .collect();
    // The container to write; object bundles are not integrated yet.
    let text_comment = match handler {
        Handler::Binary => {
            // LLVM 22 divides by the alignment (and dies of SIGFPE at 0).
            bundle::written_size(&entries, job.align)
                .map_err(|e| Fail::msg(format!("invalid -bundle-align: {e}")))?;
            None
        }
        Handler::Text(c) => Some(c),
        Handler::Object => return Err(handler::object_unsupported()),
    };
    if job.compress {
        return Err(Fail::msg(
            "compressed offload bundles (-compress) are not supported yet",
        ));
    }
    let out_path = &job.outputs[0];
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

fn list(job: &Job) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let data = read(name)?;
    let data = decompress(job, &data)?;
    let handler = handler::select(&job.file_type, data)?;
    let mut reader = Reader::new(handler, data, &lossy(name))?;
    let mut out = Vec::new();
    while let Some(id) = reader.next_id() {
        out.extend_from_slice(id);
        out.push(b'\n');
        reader.skip_listed(&lossy(name))?;
    }
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(&out)
        .and_then(|()| stdout.flush())
        .map_err(|e| file_fail(OsStr::new("-"), &e))
}

fn unbundle(job: &Job) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let raw = read(name)?;
    let data = decompress(job, &raw)?;
    let handler = handler::select(&job.file_type, data)?;
    let mut reader = Reader::new(handler, data, &lossy(name))?;

    // The work list: standardised target -> output, in LLVM's map order.
    let mut worklist = StringMapOrder::new();
    let mut requested = Vec::with_capacity(job.targets.len());
    for t in &job.targets {
        worklist.insert(t.id.as_bytes());
        // A standardised ID always has 5 or 6 pieces.
        requested.push(EntryId::parse(&t.id).map_err(|e| Fail::msg(e.to_string()))?);
    }
    let output_of = |key: usize| &job.outputs[key];
    let mut outs = Outputs::new();
    while !worklist.is_empty() {
        let Some(id) = reader.next_id() else { break };
        let Ok(entry) = EntryId::parse(&String::from_utf8_lossy(id)) else {
            return Err(Fail::msg(INVALID_ID_IN_BUNDLE));
        };
        let found = worklist
            .iter()
            .find(|&k| entry.is_compatible_code_object(&requested[k], job.hip_openmp_compatible));
        let Some(k) = found else { continue };
        let path = output_of(k);
        let i = outs.create(path, true).map_err(|e| file_fail(path, &e))?;
        let content = reader.content(&lossy(name))?;
        // Flushed at once so that several `-` outputs reach stdout whole and
        // in order, as LLVM writes them.
        let f = outs.file(i);
        f.write_all(&content)
            .and_then(|()| f.flush())
            .map_err(|e| file_fail(path, &e))?;
        worklist.remove(job.targets[k].id.as_bytes());
    }
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
        return Err(Fail::msg(m));
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
    outs.commit()
        .map_err(|e| Fail::msg(format!("writing outputs: {}", os_error_text(&e))))
}
