//! `offload extract`: selecting entries and writing them out.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use offload_cli::error::Error;
use offload_cli::fsio::{self, Outputs};
use offload_format::entry_id;
use offload_format::hip_fatbin;
use offload_format::nvidia::fatbin;
use offload_format::nvidia::{Codec, DecodeError};

use crate::cli::ExtractArgs;
use crate::model::{Entry, Location, Node, NodeKind, Source};
use crate::present::{all_entries, file_list, nearest, spellings_present, targets_present};
use crate::select::Selector;

/// For a selection value naming an AMD GPU set up in a way no entry for
/// that processor runs on (`gfx90a:xnack-` where every gfx90a entry is
/// built with `xnack+`), a sentence saying which settings are present.
pub fn feature_hint(roots: &[Node], option: &str, text: &str) -> Option<String> {
    let request = Selector::parse(text).ok()?;
    let processor = request.amd_processor()?.to_owned();
    let mut matched = false;
    let mut present: Vec<String> = Vec::new();
    for e in all_entries(roots) {
        if request.matches(e, false) {
            matched = true;
        }
        if e.amd_target().is_some_and(|t| t.processor() == processor) {
            let t = e.target_text().unwrap_or_default().into_owned();
            if !present.contains(&t) {
                present.push(t);
            }
        }
    }
    if matched || present.is_empty() {
        return None;
    }
    present.sort();
    let (list, verb) = match present.len() {
        1 => (present[0].clone(), "is"),
        n => (
            format!("{} and {}", present[..n - 1].join(", "), present[n - 1]),
            "are",
        ),
    };
    Some(format!(
        "{option} {text}: no {processor} entry runs with those settings; {list} {verb} present"
    ))
}

/// Why a selection value selects nothing: the error (naming the value
/// and the inputs, with the nearest spelling present) and notes.
pub fn unmatched_value(
    option: &str,
    text: &str,
    roots: &[Node],
    files: &[PathBuf],
) -> (String, Vec<String>) {
    let entries = all_entries(roots);
    let present = spellings_present(&entries);
    let mut err = format!("{option} {text} matches no entry of {}", file_list(files));
    let hint = feature_hint(roots, option, text);
    // No other GPU is suggested for a GPU: it may not run that code.
    let gpu = Selector::parse(text).is_ok_and(|s| s.names_gpu());
    if let Some(n) = nearest(text, &present).filter(|_| hint.is_none() && !gpu) {
        err.push_str(&format!(" (did you mean {option} {n}?)"));
    }
    let mut notes = Vec::new();
    notes.extend(hint);
    notes.push(format!("targets present: {}", targets_present(&entries)));
    (err, notes)
}

/// Whether an entry is selected by the options.
pub fn selected(e: &Entry, requests: &[Selector], kind: Option<&str>, hip_openmp: bool) -> bool {
    if let Some(k) = kind {
        let Some(have) = &e.kind else {
            return false;
        };
        if !entry_id::kinds_compatible(have.name(), k, hip_openmp) {
            return false;
        }
    }
    requests.is_empty() || requests.iter().any(|r| r.matches(e, hip_openmp))
}

/// The output file name of an entry (see `offload extract --help`).
/// `raw`: NVIDIA entries are written as stored. `section`: the section
/// holding the entry, if any.
pub fn output_name(
    input: &Path,
    container: Option<usize>,
    e: &Entry,
    raw: bool,
    section: Option<&str>,
) -> String {
    // Standard input (`-`) is named `stdin`.
    let source = match input.file_name() {
        _ if input.as_os_str() == "-" => "stdin".to_owned(),
        Some(n) => n.to_string_lossy().into_owned(),
        None => "input".to_owned(),
    };
    if let Some(nv) = &e.nvidia {
        // cuobjdump's name: the input's name without its last extension,
        // spaces as '-', then the entry's number among those of its kind.
        let stem = match source.rfind('.') {
            Some(dot) if dot > 0 => &source[..dot],
            _ => source.as_str(),
        };
        let stem = stem.replace(' ', "-");
        let mut name = match section.filter(|_| nv.unlisted_in) {
            // A section cuobjdump does not list: its name tells the numbers
            // apart from cuobjdump's.
            Some(sec) => {
                let sec: String = sec
                    .trim_start_matches(['.', '_'])
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                format!("{stem}.{sec}.{}.{}", nv.number, nv.suffix())
            }
            None => format!("{stem}.{}.{}", nv.number, nv.suffix()),
        };
        if raw && nv.member.is_none() {
            match nv.codec {
                Some(Codec::Zstd) => name.push_str(".zst"),
                Some(Codec::Lz) => name.push_str(".nvlz"),
                None => {}
            }
        }
        return name;
    }
    let id: String =
        e.id.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._+:-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
    match container {
        Some(n) => format!("{source}.{n}.{id}"),
        None => format!("{source}.{id}"),
    }
}

/// A selected entry with where it goes.
pub struct Job<'a> {
    /// The node holding it (for its file).
    pub file: Source,
    /// The input it comes from, as given.
    pub input: PathBuf,
    /// The `#k` of the container holding it.
    pub container: Option<usize>,
    /// The entry.
    pub entry: &'a Entry,
    /// Output name.
    pub name: String,
}

/// Collects the selected entries of the trees, in listing order.
pub fn jobs<'a>(roots: &'a [Node], args: &ExtractArgs, requests: &[Selector]) -> Vec<Job<'a>> {
    let mut out = Vec::new();
    let mut names = HashSet::new();
    for (root, input) in roots.iter().zip(&args.files) {
        root.visit(&mut Vec::new(), &mut |path| {
            let node = path[path.len() - 1];
            if !args.bundle.is_empty() && !node.index.is_some_and(|k| args.bundle.contains(&k)) {
                return;
            }
            for e in &node.entries {
                if !selected(
                    e,
                    requests,
                    args.kind.as_deref(),
                    args.hip_openmp_compatible,
                ) {
                    continue;
                }
                let section = path
                    .iter()
                    .rev()
                    .find(|n| n.kind == NodeKind::Section)
                    .map(|n| n.name.as_str());
                // A zip member's entries are named as those of the
                // unpacked file.
                let named = match &node.file {
                    Source::ZipMember { name, .. } => Path::new(name),
                    Source::File(_) => input.as_path(),
                };
                let base = output_name(named, node.index, e, args.raw, section);
                let mut name = base.clone();
                let mut k = 1;
                while !names.insert(name.clone()) {
                    name = format!("{base}.{k}");
                    k += 1;
                }
                out.push(Job {
                    file: node.file.clone(),
                    input: input.clone(),
                    container: node.index,
                    entry: e,
                    name,
                });
            }
        });
    }
    out
}

/// Writes one entry's bytes (`stored`: as the container stores them): an
/// NVIDIA entry decoded as cuobjdump writes it, unless `raw`; anything
/// else as stored. A failed write is [`DecodeError::Write`].
fn write_entry(
    out: &mut dyn Write,
    e: &Entry,
    stored: &[u8],
    raw: bool,
) -> Result<(), DecodeError> {
    match &e.nvidia {
        // A member of a concatenated entry has no stored form of its own.
        Some(nv) if nv.member.is_some() => {
            let (offset, size) = nv.member.unwrap_or_default();
            let recorded = nv.uncompressed_size.unwrap_or(0);
            fatbin::write_range(nv.codec, recorded, stored, offset, size, out).map(drop)
        }
        Some(nv) if !raw => {
            let recorded = nv.uncompressed_size.unwrap_or(0);
            fatbin::write_content(nv.kind, nv.codec, recorded, stored, out).map(drop)
        }
        _ => out
            .write_all(stored)
            .map_err(|err| DecodeError::Write(err.into())),
    }
}

/// What [`write()`] produced.
pub struct Written {
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// With `-o -`: the entry's bytes, for standard output (written by the
    /// caller once everything has succeeded, so a failure writes nothing).
    pub stdout: Option<Vec<u8>>,
}

/// Inputs already read, by where they came from.
pub type Opened = HashMap<Source, std::rc::Rc<fsio::Input>>;

/// Writes the jobs to `outputs` (those of the `-d` directory, or plain
/// durable ones); all outputs or none. `inputs` are the files the walk
/// read (the same bytes are extracted, and standard input is read once);
/// zip members are decoded again as needed.
pub fn write(
    jobs: &[Job<'_>],
    args: &ExtractArgs,
    mut inputs: Opened,
    mut outputs: Outputs,
) -> Result<Written, Error> {
    let mut written = Vec::new();
    let to_stdout = args.output.as_deref() == Some(Path::new("-"));
    let mut buffer: Vec<u8> = Vec::new();
    for job in jobs {
        let target = match (&args.output, &args.output_dir) {
            (Some(o), _) => o.clone(),
            (None, Some(d)) => d.join(&job.name),
            (None, None) => PathBuf::from(&job.name),
        };
        let target_name = target.display().to_string();
        let e = job.entry;
        let index = if to_stdout {
            None
        } else {
            Some(
                outputs
                    .create(target.as_os_str(), false)
                    .map_err(|err| Error::file_io(&target_name, &err))?,
            )
        };
        let sink: &mut dyn Write = match index {
            Some(i) => outputs.file(i),
            None => &mut buffer,
        };
        // Damage in the entry is the input's; a failed write the output's.
        let fail = |err: DecodeError| match err {
            DecodeError::Write(err) => Error::file(&target_name, err.to_string()),
            other => Error::file(job.file.to_string(), format!("entry {}: {other}", e.id)),
        };
        match &e.location {
            Location::Derived => {
                let bytes = e.data.as_deref().unwrap_or_default();
                write_entry(sink, e, bytes, args.raw).map_err(fail)?;
            }
            Location::File { offset, size }
            | Location::Ccob {
                ccob_offset: offset,
                ccob_size: size,
                ..
            } => {
                if !inputs.contains_key(&job.file) {
                    let input = match &job.file {
                        Source::File(p) => crate::walk::open(p)
                            .map_err(|err| Error::file_io(p.display().to_string(), &err))?,
                        zipped => {
                            let archive = match zipped {
                                Source::ZipMember { zip, .. } => {
                                    inputs.get(&Source::File(zip.clone())).cloned()
                                }
                                Source::File(_) => None,
                            };
                            crate::zipped::open(zipped, archive.as_deref())
                        }
                        .map(std::rc::Rc::new)
                        .map_err(|err| Error::file(zipped.to_string(), err))?,
                    };
                    inputs.insert(job.file.clone(), input);
                }
                let input = &inputs[&job.file];
                let range = usize::try_from(*offset)
                    .ok()
                    .zip(usize::try_from(*offset + *size).ok())
                    .and_then(|(a, b)| input.get(a..b))
                    .ok_or_else(|| {
                        Error::file(job.file.to_string(), "the file changed while being read")
                    })?;
                match &e.location {
                    Location::Ccob { offset, size, .. } => {
                        let bytes =
                            hip_fatbin::ccob_entry(range, *offset, *size).map_err(|err| {
                                Error::file(job.file.to_string(), format!("entry {}: {err}", e.id))
                            })?;
                        sink.write_all(&bytes)
                            .map_err(|err| Error::file_io(&target_name, &err))?;
                    }
                    _ => write_entry(sink, e, range, args.raw).map_err(fail)?,
                }
                // Done with those input pages: extracting a large library
                // does not end up holding all of it. The kernel maps pages
                // around each one read (fault-around, 64 KiB aligned), so
                // the neighbourhood goes too.
                const AROUND: usize = 64 << 10;
                if let (Ok(a), Ok(b)) = (usize::try_from(*offset), usize::try_from(*offset + *size))
                {
                    input.release(a.saturating_sub(AROUND)..b.saturating_add(AROUND));
                }
            }
        }
        if let Some(i) = index {
            outputs
                .finish(i)
                .map_err(|err| Error::file_io(&target_name, &err))?;
            written.push(target);
        }
    }
    outputs.commit().map_err(|err| commit_error(&err))?;
    Ok(Written {
        files: written,
        stdout: to_stdout.then_some(buffer),
    })
}

/// An error committing the outputs, naming the output (or the new `-d`
/// directory) it is about.
fn commit_error(err: &std::io::Error) -> Error {
    match fsio::failed_output(err) {
        Some(path) => Error::file(
            path.display().to_string(),
            offload_cli::diag::os_error_text(err),
        ),
        None => Error::io(err),
    }
}

/// A place `ls` names by URI: `file://PATH#offset=N&size=M`, the path
/// a file or `ARCHIVE!/MEMBER` (a zip member, its offsets those of its
/// decoded bytes), as [`crate::render::uri`] writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uri {
    /// The file.
    pub path: PathBuf,
    /// The zip member, if any.
    pub member: Option<String>,
    /// Where the bytes start.
    pub offset: u64,
    /// How many.
    pub size: u64,
}

impl Uri {
    /// Reads a URI; `None` for text that is not one (a file name).
    pub fn parse(text: &str) -> Option<Result<Uri, String>> {
        let rest = text.strip_prefix("file://")?;
        let bad = || {
            Err(format!(
                "{text}: not a URI of `offload ls` (file://PATH#offset=N&size=M)"
            ))
        };
        let Some((path, fragment)) = rest.rsplit_once('#') else {
            return Some(bad());
        };
        let (mut offset, mut size) = (None, None);
        for field in fragment.split('&') {
            match field.split_once('=') {
                Some(("offset", n)) => offset = n.parse::<u64>().ok(),
                Some(("size", n)) => size = n.parse::<u64>().ok(),
                _ => return Some(bad()),
            }
        }
        let (Some(offset), Some(size)) = (offset, size) else {
            return Some(bad());
        };
        let (path, member) = match path.split_once("!/") {
            Some((zip, member)) => (zip, Some(member.to_owned())),
            None => (path, None),
        };
        if path.is_empty() {
            return Some(bad());
        }
        Some(Ok(Uri {
            path: PathBuf::from(path),
            member,
            offset,
            size,
        }))
    }

    /// The output name: `<file name>-offset<N>-size<M>.co`, as
    /// roc-obj-extract names what it writes for a URI.
    pub fn output_name(&self) -> String {
        let name = match &self.member {
            Some(m) => Path::new(m).file_name(),
            None => self.path.file_name(),
        }
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".to_owned());
        format!("{name}-offset{}-size{}.co", self.offset, self.size)
    }

    /// Reads the bytes it names.
    pub fn read(&self) -> Result<Vec<u8>, Error> {
        let shown = match &self.member {
            Some(m) => format!("{}!/{m}", self.path.display()),
            None => self.path.display().to_string(),
        };
        let input = crate::walk::open(&self.path).map_err(|e| Error::file_io(&shown, &e))?;
        let input = match &self.member {
            None => input,
            Some(m) => {
                let archive = offload_format::zip::Archive::parse(&input)
                    .map_err(|e| Error::file(self.path.display().to_string(), e.to_string()))?;
                let index = archive
                    .members
                    .iter()
                    .position(|x| x.name_lossy() == *m)
                    .ok_or_else(|| Error::file(&shown, "no such member in the archive"))?;
                let source = Source::ZipMember {
                    zip: self.path.clone(),
                    index,
                    name: m.clone(),
                };
                std::rc::Rc::new(
                    crate::zipped::open(&source, Some(&input))
                        .map_err(|e| Error::file(&shown, e))?,
                )
            }
        };
        usize::try_from(self.offset)
            .ok()
            .zip(usize::try_from(self.offset.saturating_add(self.size)).ok())
            .and_then(|(a, b)| input.get(a..b))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                Error::file(
                    &shown,
                    format!(
                        "offset {} and size {} lie outside the file ({} bytes)",
                        self.offset,
                        self.size,
                        input.len()
                    ),
                )
            })
    }
}

/// `offload extract URI...`: the bytes each URI names, each to its file
/// (or `-o`), through `outputs` as [`write()`]; all or none. Returns the files written, or with `-o -` the
/// bytes for standard output.
pub fn write_uris(
    uris: &[Uri],
    args: &ExtractArgs,
    mut outputs: Outputs,
) -> Result<Written, Error> {
    let mut files = Vec::new();
    let to_stdout = args.output.as_deref() == Some(Path::new("-"));
    let mut stdout = None;
    for u in uris {
        let bytes = u.read()?;
        if to_stdout {
            stdout = Some(bytes);
            continue;
        }
        let target = match (&args.output, &args.output_dir) {
            (Some(o), _) => o.clone(),
            (None, Some(d)) => d.join(u.output_name()),
            (None, None) => PathBuf::from(u.output_name()),
        };
        let shown = target.display().to_string();
        let i = outputs
            .create(target.as_os_str(), false)
            .map_err(|e| Error::file_io(&shown, &e))?;
        outputs
            .file(i)
            .write_all(&bytes)
            .map_err(|e| Error::file_io(&shown, &e))?;
        outputs.finish(i).map_err(|e| Error::file_io(&shown, &e))?;
        files.push(target);
    }
    outputs.commit().map_err(|e| commit_error(&e))?;
    Ok(Written { files, stdout })
}
