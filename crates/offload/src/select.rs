//! The selection grammar of `extract --target` and `thin --keep/--drop`,
//! and the one rule for "this entry runs on that GPU" that both use, as do
//! `ls --summary` and the suggestions (docs/tools/offload.md, "Selecting
//! entries").
//!
//! A value is read once ([`Selector::parse`]) into a typed selector;
//! entries are matched on the typed facts of [`crate::model::Entry`]:
//!
//! - `gfx90a`: every entry for that processor, any xnack/sramecc setting;
//! - `gfx90a:xnack-`: the entries that run on a gfx90a with xnack off:
//!   built with `xnack-` or without an xnack setting (features the value
//!   leaves out may be anything);
//! - `sm_90`, `90`: what a GPU of capability 9.0 can use, by CUDA's rules
//!   ([`CudaArch::cubin_runs_on`], [`CudaArch::ptx_runs_on`]): the cubins
//!   it runs and the PTX and NVVM IR it compiles; `compute_90`: that PTX
//!   only;
//!   `sm_90a`, `sm_100f`: the code built for exactly that variant
//!   (`compute_90a`: its PTX);
//! - an entry ID: its kind (`hip` and `hipv4` alike), its triple, and its
//!   target by the rules above; `hip-amdgcn-amd-amdhsa` (a kind and a
//!   triple): those entries, any target; a triple: entries for it;
//! - anything else (`spir64`, a fat binary entry's ID `sm_90.cubin`):
//!   spelt as the entry's target, triple or ID.
//!
//! A value that looks like a GPU but names none (`gfx999`, `sm_95`) is
//! refused when read.
//!
//! [`Selection`] applies `thin`'s `--keep` and `--drop` values per vendor
//! (a `--keep` names what stays of its vendor's code; other vendors are
//! left alone), and [`preflight`] says whether a file may be thinned.

use offload_format::entry_id::{self, EntryId};
use offload_format::nvidia::fatbin::EntryKind;
use offload_format::nvidia::{CudaArch, Isa, Variant};
use offload_format::payload::Payload;
use offload_format::target_id::{TargetId, TargetIdError, AMDGCN_PROCESSORS};
use offload_format::triple::Triple;

use crate::cli::KNOWN_KINDS;
use crate::model::{Entry, Node, Vendor};
use crate::present::{all_entries, nearest, spellings_present, targets_present};

/// One selection value, read.
#[derive(Clone, Debug)]
pub enum Selector {
    /// An AMDGPU target ID (`gfx90a`, `gfx90a:xnack-`).
    Amd(TargetId),
    /// A CUDA architecture (`sm_90`, `sm_90a`, `compute_90`, `90`).
    Cuda(Isa, CudaArch),
    /// A whole entry ID.
    EntryId {
        /// The offload kind.
        kind: String,
        /// The triple.
        triple: Triple,
        /// The target: `None` for an ID without one.
        target: Option<Box<Selector>>,
        /// The ID, standardised.
        id: EntryId,
    },
    /// An offload kind and a triple (`hipv4-amdgcn-amd-amdhsa`,
    /// `sycl-spir64`): entries of that kind for that triple.
    KindTriple {
        /// The offload kind.
        kind: String,
        /// The triple.
        triple: Triple,
    },
    /// A triple.
    Triple(Triple),
    /// Anything else: the entry's target, triple or ID spelt so.
    Exact(String),
}

/// Why a value is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    /// The value.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::fmt::Display for SelectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.value, self.why)
    }
}

fn amdgcn() -> Triple {
    Triple::new("amdgcn-amd-amdhsa")
}

/// Whether a value is spelt like an AMDGPU processor (`gfx…`).
fn looks_amd(text: &str) -> bool {
    text.strip_prefix("gfx")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_alphanumeric()))
}

/// Whether a value is spelt like a CUDA architecture.
fn looks_cuda(text: &str) -> bool {
    text.starts_with("sm_")
        || text.starts_with("compute_")
        || (text.len() <= 4 && text.starts_with(|c: char| c.is_ascii_digit()))
}

/// The AMDGPU processor whose name is nearest to `text`, if near enough
/// to be a typo of it.
fn nearest_processor(text: &str) -> Option<&'static str> {
    let names: Vec<String> = AMDGCN_PROCESSORS
        .iter()
        .map(|p| p.name.to_owned())
        .collect();
    let n = crate::present::nearest(text, &names)?;
    AMDGCN_PROCESSORS.iter().map(|p| p.name).find(|p| *p == n)
}

impl Selector {
    /// Reads a value.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let err = |why: String| SelectorError {
            value: text.to_owned(),
            why,
        };
        // A target ID first: `gfx90a:xnack-` has a '-' but is no triple.
        if let Ok(t) = TargetId::parse(text, &amdgcn()) {
            return Ok(Selector::Amd(t));
        }
        let amd_like = looks_amd(text) && !text.split(':').next().unwrap_or("").contains('-');
        let pieces = text.split('-').count();
        if pieces >= 5 && !amd_like {
            if let Ok(id) = EntryId::parse(text) {
                if id.is_kind_valid() || !id.kind().is_empty() {
                    // Compared in the standardised spelling, as the
                    // bundler compares its -targets.
                    let id = id
                        .standardised()
                        .ok()
                        .and_then(|s| EntryId::parse(&s).ok())
                        .unwrap_or(id);
                    let target = match id.raw_target_id().filter(|t| !t.is_empty()) {
                        None => None,
                        Some(t) if id.triple().is_amdgcn() => Some(Box::new(Selector::Amd(
                            TargetId::parse(t, id.triple())
                                .map_err(|e| err(format!("the target ID of this entry ID: {e}")))?,
                        ))),
                        Some(t) if id.triple().is_nvptx() => match CudaArch::parse(t) {
                            Ok((isa, arch)) => Some(Box::new(Selector::Cuda(isa, arch))),
                            Err(_) => Some(Box::new(Selector::Exact(t.to_owned()))),
                        },
                        Some(t) => Some(Box::new(Selector::Exact(t.to_owned()))),
                    };
                    return Ok(Selector::EntryId {
                        kind: id.kind().to_owned(),
                        triple: id.triple().clone(),
                        target,
                        id,
                    });
                }
            }
        }
        if pieces >= 2 && !amd_like {
            let (kind, rest) = text.split_once('-').unwrap_or((text, ""));
            if KNOWN_KINDS.contains(&kind) && !rest.is_empty() {
                return Ok(Selector::KindTriple {
                    kind: kind.to_owned(),
                    triple: Triple::new(rest),
                });
            }
            return Ok(Selector::Triple(Triple::new(text)));
        }
        if let Ok((isa, arch)) = CudaArch::parse(text) {
            if !arch.is_known() {
                return Err(err(format!(
                    "no CUDA GPU has compute capability {}.{}{} (sm_50 to sm_121; \
                     `a` from sm_90, `f` from sm_100)",
                    arch.major(),
                    arch.minor(),
                    arch.variant().suffix()
                )));
            }
            return Ok(Selector::Cuda(isa, arch));
        }
        if looks_cuda(text)
            && !text.contains('.')
            && !text.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(err("not a CUDA architecture (sm_NN, compute_NN or NN, \
                            optionally followed by a or f)"
                .to_owned()));
        }
        match TargetId::parse(text, &amdgcn()) {
            Ok(t) => Ok(Selector::Amd(t)),
            Err(e) if looks_amd(text) => {
                let processor = text.split(':').next().unwrap_or(text);
                let mean = nearest_processor(processor)
                    .filter(|p| *p != processor)
                    .map(|p| format!(" (did you mean {}?)", text.replacen(processor, p, 1)))
                    .unwrap_or_default();
                let what = match e {
                    TargetIdError::UnknownProcessor { .. } => "not an AMD GPU",
                    _ => "not an AMD target ID",
                };
                Err(err(format!("{what}: {e}{mean}")))
            }
            Err(_) => Ok(Selector::Exact(text.to_owned())),
        }
    }

    /// The vendor whose code it is about; `None`: any.
    pub fn vendor(&self) -> Option<Vendor> {
        match self {
            Selector::Amd(_) => Some(Vendor::Amd),
            Selector::Cuda(..) => Some(Vendor::Nvidia),
            Selector::EntryId { triple, .. }
            | Selector::KindTriple { triple, .. }
            | Selector::Triple(triple) => match Vendor::of_triple(triple) {
                Vendor::Other => None,
                v => Some(v),
            },
            Selector::Exact(_) => None,
        }
    }

    /// The GPU it names, for thin's check that a kept GPU still has code
    /// it can use: a plain CUDA capability.
    pub fn cuda_device(&self) -> Option<CudaArch> {
        match self {
            Selector::Cuda(_, arch) if arch.variant() == Variant::Plain => Some(*arch),
            _ => None,
        }
    }

    /// Whether it takes `e` (`hip_openmp`: `hip` and `openmp` entries
    /// serve each other's requests, as the bundler's
    /// `-hip-openmp-compatible`).
    pub fn matches(&self, e: &Entry, hip_openmp: bool) -> bool {
        match self {
            Selector::Amd(want) => e.amd_target().is_some_and(|have| amd_runs_on(have, want)),
            Selector::Cuda(isa, want) => cuda_matches(*isa, *want, e),
            Selector::EntryId {
                kind,
                triple,
                target,
                id,
            } => {
                if e.id == id.as_str() || e.standardised.as_deref() == Some(id.as_str()) {
                    return true;
                }
                kind_matches(e, kind, hip_openmp)
                    && e.triple
                        .as_ref()
                        .is_some_and(|t| t.is_compatible_with(triple))
                    && match target {
                        None => e.target.is_none(),
                        Some(t) => t.matches(e, hip_openmp),
                    }
            }
            Selector::KindTriple { kind, triple } => {
                kind_matches(e, kind, hip_openmp)
                    && e.triple
                        .as_ref()
                        .is_some_and(|t| t.is_compatible_with(triple))
            }
            Selector::Triple(want) => e
                .triple
                .as_ref()
                .is_some_and(|t| t.is_compatible_with(want)),
            Selector::Exact(want) => {
                e.target_text().is_some_and(|t| t == want.as_str())
                    || e.triple.as_ref().is_some_and(|t| t.as_str() == want)
                    || e.id == *want
            }
        }
    }

    /// Whether it names a GPU (a processor, a CUDA architecture, an entry
    /// ID for one): another GPU is no spelling to suggest for it.
    pub fn names_gpu(&self) -> bool {
        match self {
            Selector::Amd(_) | Selector::Cuda(..) => true,
            Selector::EntryId { target, .. } => target.as_ref().is_some_and(|t| t.names_gpu()),
            _ => false,
        }
    }

    /// The AMDGPU processor it names, if any.
    pub fn amd_processor(&self) -> Option<&str> {
        match self {
            Selector::Amd(t) => Some(t.processor()),
            Selector::EntryId {
                target: Some(t), ..
            } => t.amd_processor(),
            _ => None,
        }
    }
}

fn kind_matches(e: &Entry, kind: &str, hip_openmp: bool) -> bool {
    e.kind
        .as_ref()
        .is_some_and(|k| entry_id::kinds_compatible(k.name(), kind, hip_openmp))
}

/// Whether a code object built for `have` runs on a GPU set up as `want`
/// says: the same processor, and for each feature `want` sets, `have`
/// sets it the same way or not at all (`xnack-` and no xnack setting both
/// run with xnack off). Features `want` leaves out may be anything.
pub fn amd_runs_on(have: &TargetId, want: &TargetId) -> bool {
    have.processor() == want.processor()
        && want
            .features()
            .iter()
            .all(|(name, on)| have.feature(name).is_none_or(|h| h == *on))
}

/// Whether an NVIDIA entry is PTX (a fat binary entry's kind, or an
/// offload binary's payload).
fn is_ptx(e: &Entry) -> bool {
    match &e.nvidia {
        Some(nv) => nv.kind == EntryKind::Ptx,
        None => matches!(e.payload.as_deref(), Some(Payload::Ptx)),
    }
}

/// Whether an NVIDIA entry (cubin, PTX or NVVM IR) can be used by a GPU
/// of capability `device`: CUDA's rules ([`CudaArch::cubin_runs_on`],
/// [`CudaArch::ptx_runs_on`]). NVVM IR (`lto_NN`, which a library links
/// for the GPU it finds at run time with nvJitLink, as cuFFT's callbacks
/// do) is compiled for a later GPU as PTX is, so it follows PTX's rule.
pub fn cuda_runs_on(e: &Entry, device: CudaArch) -> bool {
    let Some(arch) = e.cuda_arch() else {
        return false;
    };
    match &e.nvidia {
        Some(nv) if nv.kind == EntryKind::NvvmIr => arch.ptx_runs_on(device),
        Some(nv) if !matches!(nv.kind, EntryKind::Elf | EntryKind::Ptx) => false,
        _ if is_ptx(e) => arch.ptx_runs_on(device),
        _ => arch.cubin_runs_on(device),
    }
}

/// The CUDA part of the grammar (see the module's documentation).
fn cuda_matches(isa: Isa, want: CudaArch, e: &Entry) -> bool {
    let Some(arch) = e.cuda_arch() else {
        return false;
    };
    let exact = want.variant() != Variant::Plain;
    match isa {
        Isa::Virtual if exact => is_ptx(e) && arch == want,
        Isa::Virtual => is_ptx(e) && cuda_runs_on(e, want),
        _ if exact => arch == want,
        _ => cuda_runs_on(e, want),
    }
}

// What `thin` keeps and drops: the `--keep` and `--drop` values applied
// per vendor, and what must hold before a file is thinned.

/// The `--keep` and `--drop` selections.
pub(crate) struct Selection {
    pub(crate) keep: Vec<(String, Selector)>,
    pub(crate) drop: Vec<Selector>,
    /// `--drop-ptx`: drop an NVIDIA container's PTX where, for every GPU a
    /// `--keep` names, a kept cubin runs.
    pub(crate) drop_ptx: bool,
}

/// Whether a `--keep` of `s` applies to an entry of `vendor`: its own
/// vendor's code (so that `--keep gfx942 --keep sm_90` thins both, and
/// `--keep sm_90` alone leaves AMD code alone); a value of no vendor (a
/// triple of another target, `spir64`) applies to all.
pub(crate) fn applies(s: &Selector, vendor: Vendor) -> bool {
    match s.vendor() {
        None => true,
        Some(v) => v == vendor || vendor == Vendor::Other,
    }
}

/// Whether an entry is for some target a `--keep` may name (not
/// `generic`, not the host's).
pub(crate) fn has_target(e: &Entry) -> bool {
    e.target_text()
        .is_some_and(|t| !t.is_empty() && t != "generic")
}

impl Selection {
    /// Reads the values of `--keep` and `--drop`.
    pub(crate) fn new(
        keep: &[String],
        drop: &[String],
        drop_ptx: bool,
    ) -> Result<Selection, (String, SelectorError)> {
        Ok(Selection {
            keep: read_values("--keep", keep, |k| {
                Selector::parse(k).map(|s| (k.to_owned(), s))
            })?,
            drop: read_values("--drop", drop, Selector::parse)?,
            drop_ptx,
        })
    }

    /// Whether `e` goes: host entries never; entries a `--drop` names;
    /// entries for a GPU that no `--keep` of their vendor names (a vendor
    /// no `--keep` names is left alone). Entries for no GPU (an OpenMP
    /// image for the host's triple, `generic`, SPIR-V) stay unless
    /// dropped.
    pub(crate) fn drops(&self, e: &Entry) -> bool {
        if e.is_host() {
            return false;
        }
        if self.drop.iter().any(|s| s.matches(e, false)) {
            return true;
        }
        let mut keeps = self
            .keep
            .iter()
            .filter(|(_, s)| applies(s, e.vendor))
            .peekable();
        has_target(e) && keeps.peek().is_some() && !keeps.any(|(_, s)| s.matches(e, false))
    }

    /// The GPUs the `--keep`s of CUDA capabilities name (`sm_90`, `90`,
    /// `compute_90`): what each thinned NVIDIA container is checked
    /// against.
    pub(crate) fn cuda_devices(&self) -> Vec<(&str, CudaArch)> {
        self.keep
            .iter()
            .filter_map(|(text, s)| s.cuda_device().map(|d| (text.as_str(), d)))
            .collect()
    }

    /// Which stored entries of an NVIDIA container stay (one flag per
    /// stored entry; a concatenated entry stays if any member does), and
    /// the `--keep`ed GPUs left with nothing in it they can use.
    pub(crate) fn fatbin_mask(&self, entries: &[Entry]) -> (Vec<bool>, Vec<String>) {
        let stored = entries
            .iter()
            .filter_map(|e| e.nvidia.map(|n| n.stored + 1))
            .max()
            .unwrap_or(0);
        let mut keep = vec![false; stored];
        let kept = |e: &Entry| !self.drops(e);
        for e in entries {
            if let (Some(nv), true) = (&e.nvidia, kept(e)) {
                keep[nv.stored] = true;
            }
        }
        let devices = self.cuda_devices();
        let usable = |e: &Entry, device: CudaArch, cubin_only: bool| {
            e.nvidia
                .is_some_and(|nv| !(cubin_only && nv.kind == EntryKind::Ptx))
                && cuda_runs_on(e, device)
        };
        if self.drop_ptx && !devices.is_empty() {
            let cubins_cover = devices.iter().all(|(_, d)| {
                entries
                    .iter()
                    .any(|e| e.nvidia.is_some_and(|nv| keep[nv.stored]) && usable(e, *d, true))
            });
            if cubins_cover {
                for e in entries {
                    if let Some(nv) = e.nvidia.filter(|nv| nv.kind == EntryKind::Ptx) {
                        keep[nv.stored] = false;
                    }
                }
            }
        }
        let bare: Vec<String> = devices
            .iter()
            .filter(|(_, d)| {
                !entries
                    .iter()
                    .any(|e| e.nvidia.is_some_and(|nv| keep[nv.stored]) && usable(e, *d, false))
            })
            .map(|(text, _)| (*text).to_owned())
            .collect();
        (keep, bare)
    }
}

/// Why a file (or zip member) is not thinned.
pub(crate) enum Unfit {
    /// It holds damage (the message says where).
    Damaged(String),
    /// A `--keep` names nothing in it, though it has code of that
    /// `--keep`'s vendor: left unchanged.
    NothingFor {
        /// The file as shown.
        shown: String,
        /// The `--keep` value.
        keep: String,
        /// ` (did you mean --keep X?)`, or empty.
        mean: String,
        /// The targets the file has.
        present: String,
    },
}

impl Unfit {
    /// The whole message, for an error.
    pub(crate) fn message(&self) -> String {
        match self {
            Unfit::Damaged(m) => m.clone(),
            Unfit::NothingFor {
                shown,
                keep,
                mean,
                present,
            } => format!(
                "--keep {keep} matches no entry of {shown}{mean}; targets present: {present} \
                 (`offload ls {shown}` lists them)"
            ),
        }
    }

    /// Why a file of a tree (or member of a wheel) is left unchanged, in
    /// a few words.
    pub(crate) fn reason(&self) -> String {
        match self {
            Unfit::Damaged(m) => m.clone(),
            // No "did you mean": in a tree or a wheel the value is a
            // GPU some other file has code for (or the run-wide check
            // catches it).
            Unfit::NothingFor { keep, present, .. } => {
                format!("nothing in it for --keep {keep}; targets present: {present}")
            }
        }
    }
}

/// What one `--keep` found in a file (or zip member), or in several.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeepMatch {
    /// There is code of the `--keep`'s vendor for some target: it could
    /// have matched.
    targeted: bool,
    /// It matches an entry.
    matched: bool,
}

impl KeepMatch {
    /// It names nothing where it could have named something.
    pub(crate) fn missed(self) -> bool {
        self.targeted && !self.matched
    }
}

/// What each `--keep` finds among `all`, the entries of a file.
pub(crate) fn keep_matches(all: &[&Entry], sel: &Selection) -> Vec<KeepMatch> {
    sel.keep
        .iter()
        .map(|(_, s)| KeepMatch {
            targeted: all.iter().any(|e| applies(s, e.vendor) && has_target(e)),
            matched: all.iter().any(|e| s.matches(e, false)),
        })
        .collect()
}

/// Adds what [`keep_matches`] found in one more file to `into`.
pub(crate) fn merge_matches(into: &mut Vec<KeepMatch>, more: &[KeepMatch]) {
    if into.len() < more.len() {
        into.resize(more.len(), KeepMatch::default());
    }
    for (a, b) in into.iter_mut().zip(more) {
        a.targeted |= b.targeted;
        a.matched |= b.matched;
    }
}

/// What must hold before a file (or zip member) is thinned: no damage,
/// and every `--keep` names something it has. Returns the vendors whose
/// code is left alone.
pub(crate) fn preflight(shown: &str, root: &Node, sel: &Selection) -> Result<Vec<Vendor>, Unfit> {
    let mut damage = Vec::new();
    root.visit(&mut Vec::new(), &mut |path| {
        for d in &path[path.len() - 1].damage {
            // Where, below the file: the section and container, as
            // `offload ls` says it (the message names the entry).
            let mut place: Vec<String> = path[1..].iter().map(|n| n.name.clone()).collect();
            place.extend(d.offset.map(|o| format!("at offset {o}")));
            place.push(d.message.clone());
            damage.push(place.join(": "));
        }
    });
    if let Some(first) = damage.first() {
        return Err(Unfit::Damaged(format!(
            "{shown}: not thinned, it holds damage ({first}; `offload ls` lists all {})",
            damage.len()
        )));
    }
    // Every --keep must name something the file has.
    let all = all_entries(std::slice::from_ref(root));
    for ((text, _), found) in sel.keep.iter().zip(keep_matches(&all, sel)) {
        if found.missed() {
            let present = spellings_present(&all);
            let gpu = sel.keep.iter().any(|(t, s)| t == text && s.names_gpu());
            let mean = nearest(text, &present)
                .filter(|_| !gpu)
                .map(|n| format!(" (did you mean --keep {n}?)"))
                .unwrap_or_default();
            return Err(Unfit::NothingFor {
                shown: shown.to_owned(),
                keep: text.clone(),
                mean,
                present: targets_present(&all),
            });
        }
    }
    // A vendor whose code is here but no --keep names is left alone.
    let mut alone: Vec<Vendor> = Vec::new();
    if !sel.keep.is_empty() && !sel.keep.iter().any(|(_, s)| s.vendor().is_none()) {
        for e in all {
            let v = e.vendor;
            if v != Vendor::Other
                && !alone.contains(&v)
                && !sel.keep.iter().any(|(_, s)| s.vendor() == Some(v))
                && !sel.drops(e)
                && !e.is_host()
            {
                alone.push(v);
            }
        }
    }
    Ok(alone)
}

/// Reads every value `values` of the option `option` with `parse`: all of
/// them, or the option with why the first refused value is refused.
pub fn read_values<T>(
    option: &str,
    values: &[String],
    parse: impl Fn(&str) -> Result<T, SelectorError>,
) -> Result<Vec<T>, (String, SelectorError)> {
    values
        .iter()
        .map(|v| parse(v).map_err(|e| (option.to_owned(), e)))
        .collect()
}

/// What an image of `offload size` was built for, read from its entry
/// once: the architecture its `--arch` selects by.
#[derive(Clone, Debug)]
pub enum ImageArch {
    /// NVIDIA: a cubin ([`Isa::Real`]) or PTX ([`Isa::Virtual`]) for this
    /// architecture.
    Cuda(Isa, CudaArch),
    /// An AMDGPU code object for this target ID.
    Amd(TargetId),
    /// Anything else (NVVM IR, other triples): only its label names it.
    Other,
}

impl ImageArch {
    /// The architecture of `e`'s image.
    pub fn of(e: &Entry) -> ImageArch {
        if let Some(id) = e.amd_target() {
            return ImageArch::Amd(id.clone());
        }
        match (e.nvidia.as_ref().map(|nv| nv.kind), e.cuda_arch()) {
            (Some(EntryKind::Ptx), Some(a)) => ImageArch::Cuda(Isa::Virtual, a),
            (Some(EntryKind::NvvmIr), _) | (_, None) => ImageArch::Other,
            (_, Some(a)) => ImageArch::Cuda(Isa::Real, a),
        }
    }
}

/// One value of `offload size --arch`, read once: the images of one
/// architecture (`sm_90`: its cubins and its PTX; `compute_90`: its PTX;
/// `gfx90a`: every `gfx90a` code object; `gfx90a:xnack-`: those with
/// exactly these features). Unlike `--keep`, it names what images were
/// built for, not a GPU they run on.
#[derive(Clone, Debug)]
pub enum ArchFilter {
    /// A CUDA architecture.
    Cuda(Isa, CudaArch),
    /// An AMDGPU target ID.
    Amd(TargetId),
    /// Anything else, compared with the image's label (`lto_90`,
    /// `x86_64`).
    Label(String),
}

impl ArchFilter {
    /// Reads a value: refused where `--keep` would refuse it (a CUDA
    /// capability or an AMD processor that does not exist).
    pub fn parse(text: &str) -> Result<ArchFilter, SelectorError> {
        Ok(match Selector::parse(text)? {
            Selector::Cuda(isa, arch) => ArchFilter::Cuda(isa, arch),
            Selector::Amd(id) => ArchFilter::Amd(id),
            _ => ArchFilter::Label(text.to_owned()),
        })
    }

    /// Whether the image built for `arch`, labelled `label` in the
    /// profile, is one it selects.
    pub fn matches(&self, arch: &ImageArch, label: &str) -> bool {
        match (self, arch) {
            (ArchFilter::Cuda(Isa::Virtual, want), ImageArch::Cuda(Isa::Virtual, have)) => {
                have == want
            }
            (ArchFilter::Cuda(Isa::Virtual, _), _) => false,
            (ArchFilter::Cuda(_, want), ImageArch::Cuda(_, have)) => have == want,
            // Exactly the features named (a target ID names each once).
            (ArchFilter::Amd(want), ImageArch::Amd(have)) => {
                have.processor() == want.processor()
                    && (want.features().is_empty()
                        || have.features().len() == want.features().len()
                            && want
                                .features()
                                .iter()
                                .all(|(name, on)| have.feature(name) == Some(*on)))
            }
            (ArchFilter::Label(text), _) => label == text,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amd(t: &str) -> TargetId {
        TargetId::parse(t, &amdgcn()).unwrap()
    }

    /// An AMD entry runs on a GPU set up as asked when each feature asked
    /// for is set alike or not at all in the entry.
    #[test]
    fn amd_runs_on_table() {
        let cases = [
            ("gfx90a", "gfx90a", true),
            ("gfx90a:xnack+", "gfx90a", true),
            ("gfx90a:xnack-", "gfx90a", true),
            ("gfx90a", "gfx90a:xnack-", true),
            ("gfx90a:xnack-", "gfx90a:xnack-", true),
            ("gfx90a:xnack+", "gfx90a:xnack-", false),
            ("gfx90a:sramecc+:xnack-", "gfx90a:xnack-", true),
            ("gfx90a:sramecc+:xnack-", "gfx90a:sramecc-:xnack-", false),
            ("gfx90a:sramecc+", "gfx90a:sramecc+:xnack+", true),
            ("gfx906", "gfx90a", false),
        ];
        for (have, want, runs) in cases {
            assert_eq!(
                amd_runs_on(&amd(have), &amd(want)),
                runs,
                "{have} on {want}"
            );
        }
    }

    #[test]
    fn values_are_read_once_and_unknown_gpus_refused() {
        assert!(matches!(
            Selector::parse("gfx90a:xnack-"),
            Ok(Selector::Amd(_))
        ));
        assert!(matches!(
            Selector::parse("sm_90"),
            Ok(Selector::Cuda(Isa::Real, _))
        ));
        assert!(matches!(
            Selector::parse("compute_90a"),
            Ok(Selector::Cuda(Isa::Virtual, _))
        ));
        assert!(matches!(
            Selector::parse("sm_90.cubin"),
            Ok(Selector::Exact(_))
        ));
        assert!(matches!(Selector::parse("spir64"), Ok(Selector::Exact(_))));
        assert!(matches!(
            Selector::parse("hip-amdgcn-amd-amdhsa--gfx90a:xnack-"),
            Ok(Selector::EntryId { .. })
        ));
        assert!(matches!(
            Selector::parse("hipv4-amdgcn-amd-amdhsa"),
            Ok(Selector::KindTriple { .. })
        ));
        assert!(matches!(
            Selector::parse("x86_64-pc-linux-gnu"),
            Ok(Selector::Triple(_))
        ));
        for bad in [
            "sm_95",
            "compute_95",
            "sm_80a",
            "gfx999",
            "gfx9o6",
            "gfx1030:xnack+",
            "sm_9x",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
        let e = Selector::parse("gfx9o6").unwrap_err();
        assert!(e.why.ends_with("(did you mean gfx906?)"), "{e}");
    }
}
