//! `offload thin`: rewriting every bundle of a file without the entries of
//! unwanted targets, in place (see docs/tools/offload.md, "Thinning").
//!
//! The walk of `offload ls` finds the containers and their entries; the
//! format library rewrites each one in its own space
//! ([`offload_format::thin`]); the output is the input with those ranges
//! replaced. Unchanged ranges are copied by the kernel from the mapped
//! input, the freed space is left as a hole (zero bytes), so the work is
//! about that of `cp` plus the rewritten bundles.

use std::collections::HashSet;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use offload_cli::diag::{os_error_text, Diag};
use offload_cli::fsio::{self, OutputFile, Outputs};
use offload_format::thin::{self as rewrite, Piece, ThinError, Thinned};

use crate::cli::ThinArgs;
use offload_format::nvidia::fatbin::EntryKind;
use offload_format::nvidia::{CudaArch, Isa, Variant};

use crate::extract::{nearest, spellings_present, targets_present, unmatched_value, Request};
use crate::model::{Entry, Linkage, Node, NodeKind};
use crate::walk::Walker;

/// One `--keep` / `--drop` value.
#[derive(Debug)]
enum Selector {
    /// A bare AMDGPU processor (`gfx90a`): every entry for it, whatever
    /// its features.
    Processor(String),
    /// A CUDA architecture: `sm_90` (or `90`) keeps what a GPU of
    /// capability 9.0 can use, cubins it runs and PTX it compiles;
    /// `sm_90a`, `sm_100f` exactly those entries; `compute_90` the PTX a
    /// 9.0 GPU compiles.
    Cuda(Isa, CudaArch),
    /// Anything else, matched as `offload extract --target` matches.
    Request(Request),
}

/// Whose device code an entry or a selector is about: `--keep` values
/// apply to their vendor's code only, so that `--keep gfx942 --keep sm_90`
/// thins both, and `--keep sm_90` alone leaves AMD code alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vendor {
    Amd,
    Nvidia,
    /// Neither, or a selector (a triple, an entry ID of another target)
    /// that may name either.
    Any,
}

impl Vendor {
    fn of_entry(e: &Entry) -> Vendor {
        let triple = e.triple.as_deref().unwrap_or("");
        if e.nvidia.is_some() || triple.starts_with("nvptx") {
            Vendor::Nvidia
        } else if triple.starts_with("amdgcn") {
            Vendor::Amd
        } else {
            Vendor::Any
        }
    }

    fn name(self) -> &'static str {
        match self {
            Vendor::Amd => "AMD",
            Vendor::Nvidia => "NVIDIA",
            Vendor::Any => "other",
        }
    }
}

impl Selector {
    fn parse(text: &str) -> Selector {
        match Request::parse(text) {
            Request::TargetId(t) if !t.contains(':') => Selector::Processor(t),
            Request::Cuda(isa, arch) => Selector::Cuda(isa, arch),
            r => Selector::Request(r),
        }
    }

    fn vendor(&self) -> Vendor {
        match self {
            Selector::Processor(_) | Selector::Request(Request::TargetId(_)) => Vendor::Amd,
            Selector::Cuda(..) => Vendor::Nvidia,
            Selector::Request(_) => Vendor::Any,
        }
    }

    fn matches(&self, e: &Entry) -> bool {
        match self {
            Selector::Processor(p) => e
                .target_id
                .as_deref()
                .is_some_and(|t| t.split(':').next() == Some(p.as_str())),
            Selector::Cuda(isa, want) => match &e.nvidia {
                Some(nv) => {
                    let ptx = nv.kind == EntryKind::Ptx;
                    let exact = want.variant() != Variant::Plain;
                    match isa {
                        _ if exact && *isa != Isa::Virtual => nv.arch == *want,
                        Isa::Virtual if exact => ptx && nv.arch == *want,
                        Isa::Virtual => ptx && nv.arch.ptx_runs_on(*want),
                        _ if ptx => nv.arch.ptx_runs_on(*want),
                        _ => nv.kind == EntryKind::Elf && nv.arch.cubin_runs_on(*want),
                    }
                }
                None => Request::Cuda(*isa, *want).matches(e, false),
            },
            Selector::Request(r) => r.matches(e, false),
        }
    }
}

/// The `--keep` and `--drop` selections.
struct Selection {
    keep: Vec<(String, Selector)>,
    drop: Vec<Selector>,
    /// `--drop-ptx`: drop an NVIDIA container's PTX where, for every GPU a
    /// `--keep` names, a kept cubin runs.
    drop_ptx: bool,
}

impl Selection {
    /// Whether `e` goes: host entries never; entries a `--drop` names;
    /// entries for a GPU that no `--keep` of their vendor names (a vendor
    /// no `--keep` names is left alone). Entries for no GPU (an OpenMP
    /// image for the host's triple, `generic`, SPIR-V) stay unless
    /// dropped.
    fn drops(&self, e: &Entry) -> bool {
        if e.kind.as_deref() == Some("host") {
            return false;
        }
        if self.drop.iter().any(|s| s.matches(e)) {
            return true;
        }
        let has_target = e
            .target_id
            .as_deref()
            .is_some_and(|t| !t.is_empty() && t != "generic");
        let vendor = Vendor::of_entry(e);
        let mut keeps = self
            .keep
            .iter()
            .filter(|(_, s)| {
                s.vendor() == vendor || s.vendor() == Vendor::Any || vendor == Vendor::Any
            })
            .peekable();
        has_target && keeps.peek().is_some() && !keeps.any(|(_, s)| s.matches(e))
    }

    /// The GPUs the `--keep`s of CUDA architectures name (`sm_90`, `90`):
    /// what each thinned NVIDIA container is checked against.
    fn cuda_devices(&self) -> Vec<(&str, CudaArch)> {
        self.keep
            .iter()
            .filter_map(|(text, s)| match s {
                Selector::Cuda(Isa::Real | Isa::Bare, arch) => Some((text.as_str(), *arch)),
                Selector::Cuda(Isa::Virtual, arch) => Some((text.as_str(), *arch)),
                _ => None,
            })
            .collect()
    }

    /// Which stored entries of an NVIDIA container stay (one flag per
    /// stored entry; a concatenated entry stays if any member does), and
    /// the `--keep`ed GPUs left with nothing in it they can use.
    fn fatbin_mask(&self, entries: &[Entry]) -> (Vec<bool>, Vec<String>) {
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
            e.nvidia.is_some_and(|nv| match nv.kind {
                EntryKind::Elf => nv.arch.cubin_runs_on(device),
                EntryKind::Ptx => !cubin_only && nv.arch.ptx_runs_on(device),
                _ => false,
            })
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

/// What happens to one container.
enum Plan {
    /// Rewrite the container at this offset of the file, this long.
    Rewrite {
        kind: Kind,
        offset: u64,
        size: u64,
        name: String,
        drop: HashSet<String>,
    },
    /// Rewrite an NVIDIA container keeping the stored entries `keep`
    /// flags; `bare`: the `--keep`ed GPUs left with nothing in it.
    Fatbin {
        offset: u64,
        size: u64,
        name: String,
        keep: Vec<bool>,
        bare: Vec<String>,
    },
    /// Left as it is, and why.
    Leave { name: String, why: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bundle,
    Ccob,
    OffloadBinaries,
    Fatbin,
}

/// Finds the containers of `root` to rewrite.
fn plan(root: &Node, sel: &Selection) -> Vec<Plan> {
    let mut plans = Vec::new();
    plan_node(root, &root.file, sel, None, &mut plans);
    plans
}

fn dropped_ids(entries: &[Entry], sel: &Selection) -> HashSet<String> {
    entries
        .iter()
        .filter(|e| sel.drops(e))
        .map(|e| e.id.clone())
        .collect()
}

/// `object`: the linkage of the object file the node lies in (its offload
/// binaries are referred to by address when it is linked).
fn plan_node(
    node: &Node,
    file: &Path,
    sel: &Selection,
    object: Option<Linkage>,
    out: &mut Vec<Plan>,
) {
    let object = match node.kind {
        NodeKind::File | NodeKind::Member | NodeKind::Slice => node.linkage.or(object),
        _ => object,
    };
    if node.file != file {
        if node.kind == NodeKind::Member && node.is_interesting() {
            out.push(Plan::Leave {
                name: node.name.clone(),
                why: format!("thin archive member: thin {} itself", node.file.display()),
            });
        }
        return;
    }
    // A section (or file) of offload binaries is rewritten as a whole.
    let binaries: Vec<&Node> = node
        .children
        .iter()
        .filter(|c| c.kind == NodeKind::OffloadBinary)
        .collect();
    if !binaries.is_empty() {
        let entries: Vec<Entry> = binaries
            .iter()
            .flat_map(|b| b.entries.iter().cloned())
            .collect();
        let drop = dropped_ids(&entries, sel);
        if !drop.is_empty() {
            let name = if node.kind == NodeKind::Section {
                format!("section {}", node.name)
            } else {
                "offload binaries".to_owned()
            };
            if object == Some(Linkage::Linked) {
                out.push(Plan::Leave {
                    name,
                    why: "the images of a linked program are registered by address; \
                          thin its objects before linking"
                        .to_owned(),
                });
            } else if let (Some(offset), Some(size)) = (node.offset, node.size) {
                out.push(Plan::Rewrite {
                    kind: Kind::OffloadBinaries,
                    offset,
                    size,
                    name,
                    drop,
                });
            }
        }
    }
    for c in &node.children {
        match c.kind {
            NodeKind::Bundle | NodeKind::Ccob => {
                let drop = dropped_ids(&c.entries, sel);
                if drop.is_empty() {
                    continue;
                }
                match (c.offset, c.size) {
                    (Some(offset), Some(size)) => out.push(Plan::Rewrite {
                        kind: if c.kind == NodeKind::Bundle {
                            Kind::Bundle
                        } else {
                            Kind::Ccob
                        },
                        offset,
                        size,
                        name: c.name.clone(),
                        drop,
                    }),
                    _ => out.push(Plan::Leave {
                        name: c.name.clone(),
                        why: "not stored contiguously in the file (inside bitcode)".to_owned(),
                    }),
                }
            }
            NodeKind::OffloadBinary => {}
            NodeKind::Fatbin => {
                let (keep, bare) = sel.fatbin_mask(&c.entries);
                if keep.iter().all(|&k| k) {
                    continue;
                }
                match (c.offset, c.size) {
                    // In place, even in a linked program: the runtime's
                    // registration records point at the container's
                    // start, which does not move.
                    (Some(offset), Some(size)) => out.push(Plan::Fatbin {
                        offset,
                        size,
                        name: c.name.clone(),
                        keep,
                        bare,
                    }),
                    _ => out.push(Plan::Leave {
                        name: c.name.clone(),
                        why: "not stored contiguously in the file (inside bitcode)".to_owned(),
                    }),
                }
            }
            NodeKind::ObjectBundle | NodeKind::TextBundle => {
                if !dropped_ids(&c.entries, sel).is_empty() {
                    out.push(Plan::Leave {
                        name: c.name.clone(),
                        why: format!("{} containers are not thinned", c.kind.name()),
                    });
                }
            }
            NodeKind::File
            | NodeKind::Member
            | NodeKind::Section
            | NodeKind::Bitcode
            | NodeKind::Slice => plan_node(c, file, sel, object, out),
        }
    }
}

/// Totals of one file.
#[derive(Default)]
struct Totals {
    rewritten: usize,
    entries_dropped: usize,
    bytes_freed: u64,
}

/// `offload thin`.
pub fn run(args: &ThinArgs, diag: &Diag) -> std::process::ExitCode {
    use std::process::ExitCode;
    let sel = Selection {
        keep: args
            .keep
            .iter()
            .map(|k| (k.clone(), Selector::parse(k)))
            .collect(),
        drop: args.drop.iter().map(|d| Selector::parse(d)).collect(),
        drop_ptx: args.drop_ptx,
    };
    let inputs = crate::expand_inputs(&args.files, diag);
    if inputs.tree {
        return run_tree(&inputs, &sel, args, diag);
    }
    let files = inputs.files;
    let roots: Vec<Node> = files.iter().map(|f| Walker::default().file(f)).collect();
    // A --drop that matches nothing anywhere is a typo: say so rather
    // than rewrite nothing.
    let mut unmatched = false;
    for (text, s) in args.drop.iter().zip(&sel.drop) {
        if roots
            .iter()
            .any(|r| r.counts().2 == 0 && all_entries(r).iter().any(|e| s.matches(e)))
        {
            continue;
        }
        if roots.iter().any(|r| r.counts().2 > 0) {
            // Damaged inputs are reported as such below.
            continue;
        }
        unmatched = true;
        let (err, notes) = unmatched_value("--drop", text, &roots, &args.files);
        diag.error(err);
        for n in notes {
            diag.note(n);
        }
    }
    if unmatched {
        return ExitCode::FAILURE;
    }
    let mut outputs = Outputs::new();
    let mut report = String::new();
    // Files rewritten in place, as they were when read.
    let mut in_place: Vec<(&Path, Option<std::fs::Metadata>)> = Vec::new();
    for (file, root) in files.iter().zip(&roots) {
        if args.in_place && !args.dry_run {
            in_place.push((file, std::fs::metadata(file).ok()));
        }
        let target = match (&args.output, args.in_place) {
            (Some(o), _) => Some(o.clone()),
            (None, true) => Some(file.clone()),
            (None, false) => None,
        };
        let target = if args.dry_run { None } else { target };
        if let Err(e) = thin_file(
            file,
            root,
            target.as_deref(),
            &sel,
            args,
            &mut outputs,
            &mut report,
        ) {
            diag.error(e);
            return ExitCode::FAILURE;
        }
    }
    for (file, before) in &in_place {
        let now = std::fs::metadata(file).ok();
        if !same_file_state(before.as_ref(), now.as_ref()) {
            diag.error(format!(
                "{}: changed while being thinned; nothing overwritten",
                file.display()
            ));
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = outputs.commit() {
        diag.error(format!("writing the outputs: {}", os_error_text(&e)));
        return ExitCode::FAILURE;
    }
    for (file, before) in &in_place {
        if let Some(md) = before {
            keep_owner(file, md);
        }
    }
    crate::write_stdout(report.as_bytes(), diag)
}

/// `offload thin` over directory trees: each file is thinned and
/// committed on its own; a file that is damaged, unreadable, or whose
/// `--keep`s name nothing in it is reported and skipped, and the others go
/// on; files without device code are skipped silently. The exit status is
/// 1 if anything was skipped.
fn run_tree(
    inputs: &crate::Inputs,
    sel: &Selection,
    args: &ThinArgs,
    diag: &Diag,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut skipped = inputs.unreadable;
    let mut thinned = 0usize;
    let mut freed = 0u64;
    let mut report = String::new();
    for file in &inputs.files {
        let root = Walker::default().file(file);
        if !root.is_interesting() {
            continue;
        }
        let before = report.len();
        let mut outputs = Outputs::new();
        let target = (args.in_place && !args.dry_run).then(|| file.clone());
        let stamp = std::fs::metadata(file).ok();
        let result = thin_file(
            file,
            &root,
            target.as_deref(),
            sel,
            args,
            &mut outputs,
            &mut report,
        )
        .and_then(|totals| {
            // A file that changed while it was read is not overwritten.
            let now = std::fs::metadata(file).ok();
            if target.is_some() && !same_file_state(stamp.as_ref(), now.as_ref()) {
                return Err(format!(
                    "{}: changed while being thinned; not overwritten",
                    file.display()
                ));
            }
            outputs
                .commit()
                .map_err(|e| format!("{}: {}", file.display(), os_error_text(&e)))?;
            if let (Some(_), Some(md)) = (&target, &stamp) {
                keep_owner(file, md);
                // The file's other names in the tree name the new file too.
                for (_, other) in inputs.links.iter().filter(|(f, _)| f == file) {
                    relink(file, other).map_err(|e| {
                        format!(
                            "{}: thinned, but its hard link {} could not follow: {}",
                            file.display(),
                            other.display(),
                            os_error_text(&e)
                        )
                    })?;
                }
            }
            Ok(totals)
        });
        match result {
            Ok(totals) => {
                thinned += 1;
                freed += totals.bytes_freed;
            }
            Err(e) => {
                report.truncate(before);
                skipped += 1;
                diag.error(format!("{e} (skipped)"));
            }
        }
    }
    let would = if args.dry_run { "would be " } else { "" };
    report.push_str(&format!(
        "in all: {thinned} files with device code {would}thinned, {freed} bytes {would}freed{}\n",
        if skipped > 0 {
            format!(", {skipped} skipped")
        } else {
            String::new()
        }
    ));
    let status = crate::write_stdout(report.as_bytes(), diag);
    if skipped > 0 {
        ExitCode::FAILURE
    } else {
        status
    }
}

/// Whether a file is as it was: same size, modification time and inode.
fn same_file_state(before: Option<&std::fs::Metadata>, now: Option<&std::fs::Metadata>) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (before, now) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.mtime() == b.mtime()
                && a.mtime_nsec() == b.mtime_nsec()
                && a.ino() == b.ino()
        }
        _ => false,
    }
}

/// Makes `other` a name of `file` again (after `file` was replaced by a
/// new file): a new link beside `other`, renamed over it.
fn relink(file: &Path, other: &Path) -> io::Result<()> {
    let dir = other.parent().unwrap_or(Path::new("."));
    let name = other
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staged = dir.join(format!(".{name}.thin-{}", offload_cli::temp::random_hex(8)));
    std::fs::hard_link(file, &staged)?;
    std::fs::rename(&staged, other).inspect_err(|_| {
        let _ = std::fs::remove_file(&staged);
    })
}

/// Gives a file rewritten in place its former owner and group, where the
/// process may (as root); otherwise it keeps the writer's.
fn keep_owner(file: &Path, before: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    let _ = std::os::unix::fs::chown(file, Some(before.uid()), Some(before.gid()));
}

/// Every entry of a tree.
fn all_entries(root: &Node) -> Vec<Entry> {
    let mut all = Vec::new();
    root.visit(&mut Vec::new(), &mut |path| {
        all.extend(path[path.len() - 1].entries.iter().cloned());
    });
    all
}

/// The containers of a tree that `thin` rewrites or reports on.
fn containers(root: &Node) -> usize {
    let mut n = 0;
    root.visit(&mut Vec::new(), &mut |path| {
        if path[path.len() - 1].kind.is_container() {
            n += 1;
        }
    });
    n
}

fn thin_file(
    file: &Path,
    root: &Node,
    target: Option<&Path>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<Totals, String> {
    let shown = file.display();
    let mut damage = Vec::new();
    root.visit(&mut Vec::new(), &mut |path| {
        for d in &path[path.len() - 1].damage {
            damage.push(d.message.clone());
        }
    });
    if let Some(first) = damage.first() {
        return Err(format!(
            "{shown}: not thinned, it holds damage ({first}; `offload ls` lists all {})",
            damage.len()
        ));
    }
    // Every --keep must name something the file has.
    let all = all_entries(root);
    for (text, s) in &sel.keep {
        let targeted = all.iter().any(|e| {
            let v = Vendor::of_entry(e);
            (s.vendor() == Vendor::Any || v == Vendor::Any || v == s.vendor())
                && e.target_id
                    .as_deref()
                    .is_some_and(|t| !t.is_empty() && t != "generic")
        });
        if targeted && !all.iter().any(|e| s.matches(e)) {
            let refs: Vec<&Entry> = all.iter().collect();
            let present = spellings_present(&refs);
            let mean = nearest(text, &present)
                .map(|n| format!(" (did you mean --keep {n}?)"))
                .unwrap_or_default();
            return Err(format!(
                "--keep {text} matches no entry of {shown}{mean}; targets present: {} \
                 (`offload ls {shown}` lists them)",
                targets_present(&refs)
            ));
        }
    }
    let plans = plan(root, sel);
    // A vendor whose code is here but no --keep names is left alone.
    let mut alone: Vec<Vendor> = Vec::new();
    if !sel.keep.is_empty() && !sel.keep.iter().any(|(_, s)| s.vendor() == Vendor::Any) {
        for e in &all {
            let v = Vendor::of_entry(e);
            if v != Vendor::Any
                && !alone.contains(&v)
                && !sel.keep.iter().any(|(_, s)| s.vendor() == v)
                && !sel.drops(e)
                && e.kind.as_deref() != Some("host")
            {
                alone.push(v);
            }
        }
    }
    let input = fsio::read_input(file.as_os_str())
        .map_err(|e| format!("{shown}: cannot read: {}", os_error_text(&e)))?;
    let mut out = match target {
        Some(t) => {
            let i = outputs
                .create(t.as_os_str(), false)
                .map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
            if let Ok(md) = std::fs::metadata(file) {
                if let Ok(Some(f)) = outputs.file(i).seekable_file() {
                    let _ = f.set_permissions(md.permissions());
                }
            }
            Some((i, t.to_path_buf()))
        }
        None => None,
    };
    let header = match (&out, args.dry_run) {
        (_, true) => format!("{shown} (dry run)\n"),
        (Some((_, t)), false) => format!("{shown} -> {}\n", t.display()),
        (None, false) => format!("{shown}\n"),
    };
    report.push_str(&header);
    for v in &alone {
        report.push_str(&format!(
            "  {} device code left alone: no --keep names a GPU of that vendor\n",
            v.name()
        ));
    }
    let mut totals = Totals::default();
    let mut pos = 0u64;
    let containers = containers(root);
    for p in &plans {
        let (kind, offset, size, name, drop, keep_mask) = match p {
            Plan::Leave { name, why } => {
                report.push_str(&format!("  {name}: left alone: {why}\n"));
                continue;
            }
            Plan::Rewrite {
                kind,
                offset,
                size,
                name,
                drop,
            } => (*kind, *offset, *size, name, Some(drop), None),
            Plan::Fatbin {
                offset,
                size,
                name,
                keep,
                bare,
            } => {
                for gpu in bare {
                    report.push_str(&format!(
                        "  {name}: warning: nothing left here that {gpu} can use; \
                         its kernels in this container will not load there\n"
                    ));
                }
                (Kind::Fatbin, *offset, *size, name, None, Some(keep))
            }
        };
        let no_ids = HashSet::new();
        let drop = drop.unwrap_or(&no_ids);
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(offset + size).ok())
            .and_then(|(a, b)| input.get(a..b).map(|d| (a, b, d)));
        let Some((lo, hi, data)) = range else {
            return Err(format!("{shown}: {name}: outside the file"));
        };
        if offset < pos {
            return Err(format!("{shown}: {name}: overlaps the container before it"));
        }
        let result = match kind {
            Kind::Bundle => rewrite::bundle(data, &mut |id| {
                !drop.contains(&*String::from_utf8_lossy(id))
            }),
            Kind::Ccob => rewrite::ccob(
                data,
                &mut |id| !drop.contains(&*String::from_utf8_lossy(id)),
                args.compression_level,
            ),
            Kind::OffloadBinaries => {
                rewrite::offload_binaries(data, &mut |b| !drop.contains(&rewrite::image_id(b)))
            }
            Kind::Fatbin => {
                let mask = keep_mask.map(Vec::as_slice).unwrap_or_default();
                rewrite::fatbin(data, &mut |i, _| mask.get(i).copied().unwrap_or(true))
            }
        };
        let thinned = match result {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(
                e @ (ThinError::Grows { .. }
                | ThinError::SharedBinary { .. }
                | ThinError::NothingLeft),
            ) => {
                report.push_str(&format!("  {name}: left alone: {e}\n"));
                continue;
            }
            Err(ThinError::Read(e)) => return Err(format!("{shown}: {name}: {e}")),
        };
        let freed = size - thinned.used;
        let ids: Vec<&str> = thinned.dropped.iter().map(|d| d.id.as_str()).collect();
        let (drops, frees) = if args.dry_run {
            ("would drop", "would be freed")
        } else {
            ("dropped", "freed")
        };
        report.push_str(&format!(
            "  {name} @ {offset:#x}: {drops} {} of {} entries ({}), {freed} bytes {frees}\n",
            thinned.dropped.len(),
            thinned.dropped.len() + thinned.kept.len(),
            ids.join(", "),
        ));
        totals.rewritten += 1;
        totals.entries_dropped += thinned.dropped.len();
        totals.bytes_freed += freed;
        if let Some((i, t)) = &out {
            let f = outputs.file(*i);
            let write = |f: &mut OutputFile| -> io::Result<()> {
                f.write_all(&input[pos as usize..lo])?;
                write_pieces(f, &thinned)
            };
            write(f).map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
        }
        pos = hi as u64;
        input.release(lo..hi);
    }
    if let Some((i, t)) = out.take() {
        let f = outputs.file(i);
        let finish = |f: &mut OutputFile| -> io::Result<()> {
            f.write_all(&input[pos as usize..])?;
            if let Some(file) = f.seekable_file()? {
                // A hole at the very end needs the length set.
                file.set_len(input.len() as u64)?;
            }
            Ok(())
        };
        finish(f).map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
        outputs
            .finish(i)
            .map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
    }
    let len = input.len().max(1) as f64;
    let would = if args.dry_run { "would be " } else { "" };
    report.push_str(&format!(
        "  {} of {containers} containers {would}rewritten, {} entries {would}dropped, {} bytes {would}freed ({:.1}% of {} bytes)\n",
        totals.rewritten,
        totals.entries_dropped,
        totals.bytes_freed,
        totals.bytes_freed as f64 * 100.0 / len,
        input.len()
    ));
    Ok(totals)
}

/// Writes a rewritten container at the output's position; zero runs
/// become holes where the output can seek.
fn write_pieces(f: &mut OutputFile, t: &Thinned<'_>) -> io::Result<()> {
    for p in &t.pieces {
        match p {
            Piece::Bytes(b) => f.write_all(b)?,
            Piece::Input(b) => f.write_all(b)?,
            Piece::Zeros(n) => match f.seekable_file()? {
                Some(file) => {
                    let n = i64::try_from(*n).map_err(io::Error::other)?;
                    file.seek(SeekFrom::Current(n))?;
                }
                None => offload_format::bundle::write_zeros(f, *n)?,
            },
        }
    }
    Ok(())
}

/// The usage checks clap cannot express.
pub fn check_usage(args: &ThinArgs) -> Result<(), String> {
    if args.keep.is_empty() && args.drop.is_empty() {
        return Err("say what to keep (--keep) or drop (--drop)".to_owned());
    }
    if !args.dry_run && args.output.is_none() && !args.in_place {
        return Err("say where to write: -o FILE, --in-place, or --dry-run".to_owned());
    }
    if args.output.is_some() && args.files.iter().any(|f| f.is_dir()) {
        return Err("-o writes one file; thin a directory with --in-place or --dry-run".to_owned());
    }
    if args.output.is_some() && args.files.len() > 1 {
        return Err("-o writes one file; give one input, or use --in-place".to_owned());
    }
    Ok(())
}
