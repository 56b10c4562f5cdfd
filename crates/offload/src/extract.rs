//! `offload extract`: selecting entries and writing them out.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use offload_cli::error::Error;
use offload_cli::fsio::{self, Outputs};
use offload_format::entry_id::{self, EntryId};
use offload_format::hip_fatbin;
use offload_format::nvidia::fatbin::{self, EntryKind};
use offload_format::nvidia::{Codec, CudaArch, DecodeError, Isa, Variant};
use offload_format::target_id::TargetId;
use offload_format::triple::Triple;

use crate::cli::{ExtractArgs, KNOWN_KINDS};
use crate::model::{Entry, Location, Node, NodeKind, Source};

/// One `--target` request.
#[derive(Debug)]
pub enum Request {
    /// A whole entry ID, matched as the bundler's unbundling does.
    EntryId(EntryId),
    /// An AMDGPU target ID (`gfx90a`, `gfx90a:xnack+`).
    TargetId(String),
    /// A triple.
    Triple(Triple),
    /// An offload kind and a triple (`sycl-spir64`,
    /// `hipv4-amdgcn-amd-amdhsa`): entries of that kind (as `--kind`
    /// matches) for that triple, any target.
    KindTriple {
        /// The offload kind.
        kind: String,
        /// The triple.
        triple: Triple,
    },
    /// A CUDA architecture (`sm_90`, `sm_90a`, `compute_90`, `90`): see
    /// [`Request::cuda_matches`].
    Cuda(Isa, CudaArch),
    /// Anything else (`spir64`): the entry's target, triple or ID must be
    /// spelt the same.
    Exact(String),
}

impl Request {
    /// Reads a `--target` value.
    pub fn parse(text: &str) -> Request {
        let pieces = text.split('-').count();
        if pieces >= 5 {
            if let Ok(id) = EntryId::parse(text) {
                if id.is_kind_valid() || !id.kind().is_empty() {
                    // Requests are compared in their standardised spelling,
                    // as the bundler compares its -targets.
                    let std = id.standardised().ok().and_then(|s| EntryId::parse(&s).ok());
                    return Request::EntryId(std.unwrap_or(id));
                }
            }
        }
        if pieces >= 2 {
            // `sycl-spir64`, `hip-amdgcn-amd-amdhsa`: an offload kind and a
            // triple, any target.
            let (kind, rest) = text.split_once('-').unwrap_or((text, ""));
            if KNOWN_KINDS.contains(&kind) && !rest.is_empty() {
                return Request::KindTriple {
                    kind: kind.to_owned(),
                    triple: Triple::new(rest),
                };
            }
            return Request::Triple(Triple::new(text));
        }
        if let Ok((isa, arch)) = CudaArch::parse(text) {
            return Request::Cuda(isa, arch);
        }
        if TargetId::parse(text, &amdgcn()).is_ok() {
            return Request::TargetId(text.to_owned());
        }
        Request::Exact(text.to_owned())
    }

    pub(crate) fn matches(&self, e: &Entry, hip_openmp: bool) -> bool {
        match self {
            Request::EntryId(want) => {
                let lenient = entry_id::parse_lenient(&e.id);
                lenient
                    .id
                    .is_some_and(|have| have.is_compatible_code_object(want, hip_openmp))
            }
            Request::TargetId(want) => {
                let Some(have) = e.target_id.as_deref() else {
                    return false;
                };
                match (
                    TargetId::parse(have, &amdgcn()),
                    TargetId::parse(want, &amdgcn()),
                ) {
                    (Ok(h), Ok(w)) => h.is_compatible_code_object(&w),
                    _ => false,
                }
            }
            Request::Triple(want) => e
                .triple
                .as_deref()
                .is_some_and(|t| Triple::new(t).is_compatible_with(want)),
            Request::KindTriple { kind, triple } => {
                e.kind
                    .as_deref()
                    .is_some_and(|k| entry_id::kinds_compatible(k, kind, hip_openmp))
                    && e.triple
                        .as_deref()
                        .is_some_and(|t| Triple::new(t).is_compatible_with(triple))
            }
            Request::Cuda(isa, arch) => Request::cuda_matches(*isa, *arch, e),
            // The architecture-only triple of a SYCL entry (`spir64`) or its
            // whole ID.
            Request::Exact(want) => {
                e.target_id.as_deref() == Some(want.as_str())
                    || e.triple.as_deref() == Some(want.as_str())
                    || e.id == *want
            }
        }
    }
}

impl Request {
    /// Whether a CUDA request takes the entry. For NVIDIA fat binary
    /// entries, by what a GPU can use:
    ///
    /// - `sm_90`: every cubin that runs on a GPU of capability 9.0
    ///   (`sm_90` and `sm_90a` cubins; `sm_80` cubins run on 8.x only);
    /// - `sm_90a`, `sm_100f`: the cubins of exactly that variant;
    /// - `compute_90`: every PTX a 9.0 GPU can compile (`compute_80` PTX
    ///   too); `compute_90a`: exactly that PTX;
    /// - `90`: both, everything a 9.0 GPU can use.
    ///
    /// Other entries (offload binaries, bundles) whose target is a CUDA
    /// architecture are taken when it is spelt the same.
    fn cuda_matches(isa: Isa, want: CudaArch, e: &Entry) -> bool {
        let Some(nv) = &e.nvidia else {
            let have = e.target_id.as_deref().and_then(|t| CudaArch::parse(t).ok());
            return have.is_some_and(|(_, have)| have == want);
        };
        let ptx = nv.kind == EntryKind::Ptx;
        let cubin = nv.kind == EntryKind::Elf;
        let exact = want.variant() != Variant::Plain;
        match isa {
            Isa::Real if exact => cubin && nv.arch == want,
            Isa::Real => cubin && nv.arch.cubin_runs_on(want),
            Isa::Virtual if exact => ptx && nv.arch == want,
            Isa::Virtual => ptx && nv.arch.ptx_runs_on(want),
            Isa::Bare if exact => nv.arch == want,
            Isa::Bare => {
                (cubin && nv.arch.cubin_runs_on(want)) || (ptx && nv.arch.ptx_runs_on(want))
            }
        }
    }
}

impl Request {
    /// The AMDGPU processor a target ID or entry ID request names.
    fn processor(&self) -> Option<String> {
        let text = match self {
            Request::TargetId(t) => t.as_str(),
            Request::EntryId(id) => id.raw_target_id()?,
            _ => return None,
        };
        TargetId::parse(text, &amdgcn())
            .ok()
            .map(|t| t.processor().to_owned())
    }
}

/// For a `--target` that selects no entry of any input while entries for
/// the same processor with other feature settings exist, a sentence saying
/// which: the bundler's rule (which `--target` follows) hands an entry
/// built with `xnack+` only to a request for `xnack+`, which surprises.
/// Looks at the target alone, so that it never contradicts `--kind` or
/// `--bundle`.
pub fn feature_hint(roots: &[Node], text: &str) -> Option<String> {
    let request = Request::parse(text);
    let processor = request.processor()?;
    let mut matched = false;
    let mut present: Vec<String> = Vec::new();
    for e in all_entries(roots) {
        if request.matches(e, false) {
            matched = true;
        }
        let same = e
            .target_id
            .as_deref()
            .filter(|t| TargetId::parse(t, &amdgcn()).is_ok_and(|t| t.processor() == processor));
        if let Some(t) = same {
            if !present.iter().any(|p| p == t) {
                present.push(t.to_owned());
            }
        }
    }
    if matched || present.is_empty() {
        return None;
    }
    present.sort();
    let (list, verb, them) = match present.len() {
        1 => (present[0].clone(), "is", "it by its full target ID"),
        n => (
            format!("{} and {}", present[..n - 1].join(", "), present[n - 1]),
            "are",
            "them by their full target IDs",
        ),
    };
    Some(format!(
        "--target {text}: no entry for {text}; {list} {verb} present (ask for {them})"
    ))
}

/// Every entry of the trees, in listing order.
pub fn all_entries(roots: &[Node]) -> Vec<&Entry> {
    let mut out = Vec::new();
    for root in roots {
        root.visit(&mut Vec::new(), &mut |path| {
            out.extend(path[path.len() - 1].entries.iter());
        });
    }
    out
}

/// The input names, for messages: `a.so`, `a.so and b.o`, `a.so, b.o and
/// c.a`.
pub fn file_list(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    match names.len() {
        0 => String::new(),
        1 => names[0].clone(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// Edit distance (Levenshtein), by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The spellings of the targets present (target IDs, entry IDs, triples,
/// CUDA architectures), sorted, without repeats.
pub fn spellings_present(entries: &[&Entry]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in entries {
        let mut add = |s: &str| {
            if !s.is_empty() && !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        };
        add(&e.id);
        for s in [&e.target_id, &e.triple, &e.standardised]
            .into_iter()
            .flatten()
        {
            add(s);
        }
        if let Some(nv) = &e.nvidia {
            add(&nv.arch.cuobjdump_name(nv.kind == EntryKind::Ptx));
        }
    }
    out.sort();
    out
}

/// The spelling present nearest to `text`, if near enough to be a typo
/// of it (at most a third of its length away, and at least 1).
pub fn nearest<'a>(text: &str, present: &'a [String]) -> Option<&'a str> {
    let limit = (text.chars().count() / 3).max(1);
    present
        .iter()
        .map(|p| (edit_distance(text, p), p))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, p)| p.as_str())
}

/// The targets present, for a message: the target IDs (or, where entries
/// have none, their IDs), sorted.
pub fn targets_present(entries: &[&Entry]) -> String {
    let mut out: Vec<&str> = entries
        .iter()
        .filter(|e| e.kind.as_deref() != Some("host"))
        .map(|e| {
            e.target_id
                .as_deref()
                .filter(|t| !t.is_empty())
                .unwrap_or(&e.id)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        "none (no device code)".to_owned()
    } else {
        out.join(", ")
    }
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
    let hint = feature_hint(roots, text);
    if let Some(n) = nearest(text, &present).filter(|_| hint.is_none()) {
        err.push_str(&format!(" (did you mean {option} {n}?)"));
    }
    let mut notes = Vec::new();
    notes.extend(hint);
    notes.push(format!("targets present: {}", targets_present(&entries)));
    (err, notes)
}

fn amdgcn() -> Triple {
    Triple::new("amdgcn-amd-amdhsa")
}

/// Whether an entry is selected by the options.
pub fn selected(e: &Entry, requests: &[Request], kind: Option<&str>, hip_openmp: bool) -> bool {
    if let Some(k) = kind {
        let Some(have) = e.kind.as_deref() else {
            return false;
        };
        if !entry_id::kinds_compatible(have, k, hip_openmp) {
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
    let source = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".to_owned());
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
pub fn jobs<'a>(roots: &'a [Node], args: &ExtractArgs) -> Vec<Job<'a>> {
    let requests: Vec<Request> = args.target.iter().map(|t| Request::parse(t)).collect();
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
                    &requests,
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

/// Writes the jobs; all outputs or none. `inputs` are the files the walk
/// read (the same bytes are extracted, and standard input is read once);
/// zip members are decoded again as needed.
pub fn write(jobs: &[Job<'_>], args: &ExtractArgs, mut inputs: Opened) -> Result<Written, Error> {
    let mut outputs = Outputs::durable();
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
                        zipped => crate::zipped::open(zipped)
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
    outputs.commit().map_err(|err| Error::io(&err))?;
    Ok(Written {
        files: written,
        stdout: to_stdout.then_some(buffer),
    })
}
