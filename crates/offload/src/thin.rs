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
use std::path::{Path, PathBuf};
use std::rc::Rc;

use offload_cli::diag::{os_error_text, Diag};
use offload_cli::fsio::{self, OutputFile, Outputs};
use offload_format::thin::{self as rewrite, Piece, ThinError, Thinned};

use crate::cli::ThinArgs;
use offload_format::nvidia::fatbin::EntryKind;
use offload_format::nvidia::{CudaArch, Isa, Variant};

use crate::extract::{nearest, spellings_present, targets_present, unmatched_value, Request};
use crate::model::{Entry, Linkage, Node, NodeKind, Source};
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

impl Plan {
    /// Whether carrying it out drops entries.
    fn drops(&self) -> bool {
        !matches!(self, Plan::Leave { .. })
    }
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
    file: &Source,
    sel: &Selection,
    object: Option<Linkage>,
    out: &mut Vec<Plan>,
) {
    let object = match node.kind {
        NodeKind::File | NodeKind::Member | NodeKind::Slice => node.linkage.or(object),
        _ => object,
    };
    if node.file != *file {
        if node.kind == NodeKind::Member && node.is_interesting() {
            out.push(Plan::Leave {
                name: node.name.clone(),
                why: format!("thin archive member: thin {} itself", node.file),
            });
        }
        return;
    }
    // Bare cubins among a data section's other bytes (`.rodata`): no
    // container to rewrite them in; reported, left alone.
    if node.kind == NodeKind::Section && !dropped_ids(&node.entries, sel).is_empty() {
        out.push(Plan::Leave {
            name: format!("section {}", node.name),
            why: "bare cubins among other data are not rewritten".to_owned(),
        });
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
    /// For a zip archive: its members with device code.
    members_with_code: usize,
    /// For each `--keep`: whether some file (member) had code it could
    /// match, and whether it matched (see [`keep_matches`]).
    matches: Vec<KeepMatch>,
    rewritten: usize,
    entries_dropped: usize,
    bytes_freed: u64,
}

/// Where a thinned file goes.
#[derive(Clone, Copy)]
enum Dest<'a> {
    /// Nowhere: a dry run.
    None,
    /// Nowhere: a file rewritten in place has nothing to drop, and stays
    /// as it is.
    Unchanged,
    /// A new file (`-o`).
    To(&'a Path),
    /// Over the original, rewritten in place; with the other names (hard
    /// links) it has.
    Replace(&'a fsio::Original, &'a [PathBuf]),
}

impl Dest<'_> {
    fn writes(&self) -> bool {
        matches!(self, Dest::To(_) | Dest::Replace(..))
    }

    /// Starts the output; returns its index.
    fn create(&self, outputs: &mut Outputs, shown: &str) -> Result<Option<usize>, String> {
        match *self {
            Dest::None | Dest::Unchanged => Ok(None),
            Dest::To(t) => outputs
                .create(t.as_os_str(), false)
                .map(Some)
                .map_err(|e| format!("{}: {}", t.display(), os_error_text(&e))),
            Dest::Replace(original, also) => outputs
                .replace(original, also)
                .map(Some)
                .map_err(|e| format!("{shown}: {}", os_error_text(&e))),
        }
    }
}

/// An input of `thin`: as named, its bytes (or why they could not be
/// read), and, in place, the file opened to be rewritten with its other
/// names among the inputs.
struct Opened {
    path: PathBuf,
    input: io::Result<Rc<fsio::Input>>,
    original: Option<fsio::Original>,
    also: Vec<PathBuf>,
}

impl Opened {
    /// Reads `path` (to rewrite it, when `in_place`: opened and locked,
    /// see [`fsio::Original::open`]).
    fn open(path: &Path, in_place: bool) -> Opened {
        let (input, original) = if in_place {
            match fsio::Original::open(path) {
                Ok(o) => (o.input().map(Rc::new), Some(o)),
                Err(e) => (Err(e), None),
            }
        } else {
            (crate::walk::open(path), None)
        };
        Opened {
            path: path.to_path_buf(),
            input,
            original,
            also: Vec::new(),
        }
    }

    fn dest(&self) -> Dest<'_> {
        match &self.original {
            Some(o) => Dest::Replace(o, &self.also),
            None => Dest::None,
        }
    }

    fn is_zip(&self) -> bool {
        self.input
            .as_ref()
            .is_ok_and(|i| offload_format::zip::has_magic(i))
    }

    /// The walk of the input; a zip archive is read member by member when
    /// thinned, and walked whole beforehand only when `whole`.
    fn walk(&self, args: &ThinArgs, whole: bool) -> Node {
        if self.is_zip() && !whole {
            return Node::new(
                NodeKind::File,
                self.path.display().to_string(),
                self.path.clone(),
            );
        }
        let input = match &self.input {
            Ok(i) => Ok(i.clone()),
            Err(e) => Err(io::Error::new(e.kind(), os_error_text(e))),
        };
        walker(args).input(&self.path, input)
    }
}

/// The named inputs of an in-place run, each file once: names of one file
/// (a symbolic link and its target, two hard links) are one input, the
/// first named; its other hard links follow it ([`Outputs::replace`]), and
/// a symbolic link stays a link to it. Files are locked in the order of
/// their device and inode, so that two runs naming the same files in
/// other orders cannot wait for each other. Returns the inputs and a
/// report line for each name that was another's.
fn open_in_place(files: &[PathBuf]) -> (Vec<Opened>, String) {
    use std::os::unix::fs::MetadataExt;
    /// The names of one file, in the order named.
    struct Names {
        /// Device and inode.
        key: Option<(u64, u64)>,
        first: usize,
        others: Vec<usize>,
    }
    let mut files_named: Vec<Names> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let key = std::fs::metadata(f).ok().map(|m| (m.dev(), m.ino()));
        match files_named
            .iter_mut()
            .find(|g| key.is_some() && g.key == key)
        {
            Some(g) => g.others.push(i),
            None => files_named.push(Names {
                key,
                first: i,
                others: Vec::new(),
            }),
        }
    }
    let mut order: Vec<usize> = (0..files_named.len()).collect();
    order.sort_by_key(|&g| files_named[g].key);
    let mut opened: Vec<Option<Opened>> = files_named.iter().map(|_| None).collect();
    for g in order {
        opened[g] = Some(Opened::open(&files[files_named[g].first], true));
    }
    let mut notes = String::new();
    let mut out = Vec::with_capacity(opened.len());
    for (Names { first, others, .. }, o) in files_named.iter().zip(opened) {
        let Some(mut o) = o else { continue };
        for &other in others {
            notes.push_str(&format!(
                "{}: the same file as {}, thinned once\n",
                files[other].display(),
                files[*first].display()
            ));
            // A hard link names the new file too; a symbolic link stays a
            // link to it.
            let link = std::fs::symlink_metadata(&files[other]).is_ok_and(|m| m.is_symlink());
            let real = std::fs::canonicalize(&files[other]).ok();
            let original = o.original.as_ref().map(|r| r.path().to_path_buf());
            if let Some(real) = real.filter(|r| !link && Some(r) != original.as_ref()) {
                if !o.also.contains(&real) {
                    o.also.push(real);
                }
            }
        }
        out.push(o);
    }
    (out, notes)
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
    let in_place = args.in_place && !args.dry_run;
    if in_place && args.files.iter().any(|f| f.as_os_str() == "-") {
        diag.error("--in-place rewrites files: standard input (-) is not one");
        return ExitCode::FAILURE;
    }
    let inputs = crate::expand_inputs(&args.files, diag);
    if inputs.tree {
        return run_tree(&inputs, &sel, args, diag);
    }
    let (opened, same) = if in_place {
        open_in_place(&inputs.files)
    } else {
        let o = inputs
            .files
            .iter()
            .map(|f| Opened::open(f, false))
            .collect();
        (o, String::new())
    };
    let roots: Vec<Node> = opened
        .iter()
        .map(|o| o.walk(args, !args.drop.is_empty()))
        .collect();
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
    let mut outputs = Outputs::durable();
    let mut report = same;
    // Zip members left unchanged (reported): the status says so.
    let mut members_left = 0usize;
    for (o, root) in opened.iter().zip(&roots) {
        let dest = match (&args.output, args.dry_run) {
            (_, true) => Dest::None,
            (Some(out), false) => Dest::To(out),
            (None, false) => o.dest(),
        };
        let input = match &o.input {
            Ok(i) => i,
            Err(e) => {
                diag.error(format!(
                    "{}: cannot read: {}",
                    o.path.display(),
                    os_error_text(e)
                ));
                return ExitCode::FAILURE;
            }
        };
        match thin_any(
            &o.path,
            input,
            root,
            dest,
            &sel,
            args,
            &mut outputs,
            &mut report,
        ) {
            Ok((_, left)) => members_left += left,
            Err(e) => {
                diag.error(e);
                return ExitCode::FAILURE;
            }
        }
    }
    // All files together, or none; the report is printed with them.
    let status = match outputs.commit_then(|| crate::write_stdout(report.as_bytes(), diag)) {
        Ok(status) => status,
        Err(e) => {
            diag.error(format!("nothing was written: {}", commit_error(&e)));
            return ExitCode::FAILURE;
        }
    };
    // The files are unlocked only now, after their commit.
    drop(opened);
    if members_left > 0 {
        ExitCode::FAILURE
    } else {
        status
    }
}

/// The text of an error committing outputs, naming the file.
fn commit_error(e: &io::Error) -> String {
    let text = os_error_text(e);
    let text = if text == "changed while being read" {
        format!("{text} (written to by another program while thinned; not replaced)")
    } else {
        text.to_string()
    };
    match fsio::failed_output(e) {
        Some(p) => format!("{}: {text}", p.display()),
        None => text,
    }
}

/// `offload thin` over directory trees: each file is thinned and
/// committed on its own, and its report printed as it is committed (an
/// interrupted run has said exactly which files it rewrote); a file that
/// is damaged or unreadable is reported and skipped, and the others go on;
/// a file with nothing for a `--keep` is left unchanged and reported;
/// files without device code are skipped silently. The exit status is 1
/// if anything was skipped, or if a `--keep` matched nothing in any file.
fn run_tree(
    inputs: &crate::Inputs,
    sel: &Selection,
    args: &ThinArgs,
    diag: &Diag,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut skipped = inputs.unreadable;
    let mut thinned = 0usize;
    let mut unchanged = 0usize;
    // Files with device code but nothing to drop.
    let mut nothing = 0usize;
    let mut freed = 0u64;
    let mut matches: Vec<KeepMatch> = Vec::new();
    let mut stdout_ok = true;
    let mut say = |text: &str| {
        if stdout_ok && crate::write_stdout(text.as_bytes(), diag) != ExitCode::SUCCESS {
            stdout_ok = false;
        }
    };
    let in_place = args.in_place && !args.dry_run;
    for file in &inputs.files {
        let mut o = Opened::open(file, in_place);
        // The file's other names in the tree name the new file too.
        o.also = inputs
            .links
            .iter()
            .filter(|(f, _)| f == file)
            .map(|(_, other)| other.clone())
            .collect();
        let input = match &o.input {
            Ok(i) => i.clone(),
            Err(e) => {
                skipped += 1;
                diag.error(format!(
                    "{}: cannot read: {} (skipped)",
                    file.display(),
                    os_error_text(e)
                ));
                continue;
            }
        };
        let zip = o.is_zip();
        let root = o.walk(args, false);
        if !zip && !root.is_interesting() {
            continue;
        }
        let shown = file.display().to_string();
        let mut report = String::new();
        if !zip {
            // A file with nothing for a --keep is code that GPU cannot
            // use (cuFFT's one sm_75 stub, say): left as it is, reported,
            // not a failure.
            if let Err(u @ Unfit::NothingFor { .. }) = preflight(&shown, &root, sel) {
                merge_matches(&mut matches, &keep_matches(&all_entries(&root), sel));
                say(&format!("{shown}: left unchanged: {}\n", u.reason()));
                unchanged += 1;
                continue;
            }
        }
        let dest = o.dest();
        let mut outputs = Outputs::durable();
        let result = thin_any(
            file,
            &input,
            &root,
            dest,
            sel,
            args,
            &mut outputs,
            &mut report,
        )
        .and_then(|(totals, left)| {
            skipped += left;
            outputs
                .commit_then(|| say(&report))
                .map_err(|e| format!("{}: {}", file.display(), commit_error(&e)))?;
            Ok(totals)
        });
        // Unlocked after its commit.
        drop(o);
        match result {
            Ok(totals) if zip && totals.members_with_code == 0 => {}
            Ok(totals) => {
                merge_matches(&mut matches, &totals.matches);
                if totals.rewritten > 0 {
                    thinned += 1;
                } else {
                    nothing += 1;
                }
                freed += totals.bytes_freed;
            }
            Err(e) => {
                skipped += 1;
                diag.error(format!("{e} (skipped)"));
            }
        }
    }
    let would = if args.dry_run { "would be " } else { "" };
    say(&format!(
        "in all: {thinned} files with device code {would}thinned, {freed} bytes {would}freed{}{}{}\n",
        if nothing > 0 {
            format!(", {nothing} with nothing to drop")
        } else {
            String::new()
        },
        if unchanged > 0 {
            format!(", {unchanged} left unchanged (nothing in them for a --keep)")
        } else {
            String::new()
        },
        if skipped > 0 {
            format!(", {skipped} skipped")
        } else {
            String::new()
        }
    ));
    let status = if stdout_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    // A --keep that matched nothing anywhere, though there was code of its
    // vendor, is most likely a typo.
    let mut typo = false;
    for ((text, _), found) in sel.keep.iter().zip(&matches) {
        if found.missed() {
            typo = true;
            diag.error(format!(
                "--keep {text} matches no entry of any file under the inputs; \
                 nothing was thinned for it"
            ));
        }
    }
    if skipped > 0 || typo {
        ExitCode::FAILURE
    } else {
        status
    }
}

/// The walk that finds what to thin. A dry run reads NVIDIA entry headers
/// only (what it reports needs nothing more); a real run also decodes the
/// first block of each compressed payload, so that a damaged stream stops
/// the file before anything is written.
fn walker(args: &ThinArgs) -> Walker {
    Walker::default().headers_only(args.dry_run)
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

/// Why a file (or zip member) is not thinned.
enum Unfit {
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
    fn message(&self) -> String {
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
    fn reason(&self) -> String {
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
struct KeepMatch {
    /// There is code of the `--keep`'s vendor for some target: it could
    /// have matched.
    targeted: bool,
    /// It matches an entry.
    matched: bool,
}

impl KeepMatch {
    /// It names nothing where it could have named something.
    fn missed(self) -> bool {
        self.targeted && !self.matched
    }
}

/// What each `--keep` finds among `all`, the entries of a file.
fn keep_matches(all: &[Entry], sel: &Selection) -> Vec<KeepMatch> {
    sel.keep
        .iter()
        .map(|(_, s)| KeepMatch {
            targeted: all.iter().any(|e| {
                let v = Vendor::of_entry(e);
                (s.vendor() == Vendor::Any || v == Vendor::Any || v == s.vendor())
                    && e.target_id
                        .as_deref()
                        .is_some_and(|t| !t.is_empty() && t != "generic")
            }),
            matched: all.iter().any(|e| s.matches(e)),
        })
        .collect()
}

/// Adds what [`keep_matches`] found in one more file to `into`.
fn merge_matches(into: &mut Vec<KeepMatch>, more: &[KeepMatch]) {
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
fn preflight(shown: &str, root: &Node, sel: &Selection) -> Result<Vec<Vendor>, Unfit> {
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
    let all = all_entries(root);
    for ((text, _), found) in sel.keep.iter().zip(keep_matches(&all, sel)) {
        if found.missed() {
            let refs: Vec<&Entry> = all.iter().collect();
            let present = spellings_present(&refs);
            let mean = nearest(text, &present)
                .map(|n| format!(" (did you mean --keep {n}?)"))
                .unwrap_or_default();
            return Err(Unfit::NothingFor {
                shown: shown.to_owned(),
                keep: text.clone(),
                mean,
                present: targets_present(&refs),
            });
        }
    }
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
    Ok(alone)
}

/// [`thin_file`], or [`thin_zip`] for a zip archive. Returns the totals
/// and how many zip members were left unchanged (reported).
#[allow(clippy::too_many_arguments)]
fn thin_any(
    file: &Path,
    input: &fsio::Input,
    root: &Node,
    dest: Dest<'_>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<(Totals, usize), String> {
    if offload_format::zip::has_magic(input) {
        thin_zip(file, input, dest, sel, args, outputs, report)
    } else {
        thin_file(file, input, root, dest, sel, args, outputs, report).map(|t| (t, 0))
    }
}

/// The line a file's (or archive's) report starts with.
fn report_header(shown: &str, dest: Dest<'_>, args: &ThinArgs, file: &Path) -> String {
    match (dest, args.dry_run) {
        (_, true) => format!("{shown} (dry run)\n"),
        (Dest::To(t), false) => format!("{shown} -> {}\n", t.display()),
        (Dest::Replace(..) | Dest::Unchanged, false) => {
            format!("{shown} -> {}\n", file.display())
        }
        (Dest::None, false) => format!("{shown}\n"),
    }
}

/// Gives a new output (`-o`) the input's permission bits, without setuid,
/// setgid or sticky: a copy made by someone else (root, say) must not
/// become a program that runs as them.
fn copy_mode(outputs: &mut Outputs, i: usize, input: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(md) = std::fs::metadata(input) {
        if let Ok(Some(f)) = outputs.file(i).seekable_file() {
            let _ = f.set_permissions(std::fs::Permissions::from_mode(
                md.permissions().mode() & 0o777,
            ));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn thin_file(
    file: &Path,
    input: &fsio::Input,
    root: &Node,
    dest: Dest<'_>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<Totals, String> {
    let shown = file.display().to_string();
    let alone = preflight(&shown, root, sel).map_err(|u| u.message())?;
    let plans = plan(root, sel);
    // A file with nothing to drop (thinned before, say) is not written
    // again: its plan tells.
    let dest = match dest {
        Dest::Replace(..) if !plans.iter().any(Plan::drops) => Dest::Unchanged,
        d => d,
    };
    let out = dest.create(outputs, &shown)?;
    if let (Some(i), Dest::To(_)) = (out, dest) {
        copy_mode(outputs, i, file);
    }
    report.push_str(&report_header(&shown, dest, args, file));
    report_alone(&alone, report);
    let mut totals = match out {
        Some(i) => {
            let t = match dest {
                Dest::To(t) => t,
                _ => file,
            };
            let sink = outputs.file(i);
            let totals = thin_input(&shown, &plans, input, Some((sink, t)), args, report)?;
            if totals.rewritten == 0 && matches!(dest, Dest::Replace(..)) {
                // Nothing changed: the original stays as it is.
                outputs.discard(i);
            } else {
                outputs
                    .finish(i)
                    .map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
            }
            totals
        }
        None => thin_input::<OutputFile>(&shown, &plans, input, None, args, report)?,
    };
    totals.matches = keep_matches(&all_entries(root), sel);
    report_totals(
        &totals,
        containers(root),
        input.len() as u64,
        args.dry_run,
        "  ",
        report,
    );
    Ok(totals)
}

/// Says which vendors' code is left alone.
fn report_alone(alone: &[Vendor], report: &mut String) {
    for v in alone {
        report.push_str(&format!(
            "  {} device code left alone: no --keep names a GPU of that vendor\n",
            v.name()
        ));
    }
}

/// The closing line of one file's report.
fn report_totals(
    totals: &Totals,
    containers: usize,
    len: u64,
    dry_run: bool,
    indent: &str,
    report: &mut String,
) {
    let would = if dry_run { "would be " } else { "" };
    report.push_str(&format!(
        "{indent}{} of {containers} containers {would}rewritten, {} entries {would}dropped, {} bytes {would}freed ({:.1}% of {len} bytes)\n",
        totals.rewritten,
        totals.entries_dropped,
        totals.bytes_freed,
        totals.bytes_freed as f64 * 100.0 / len.max(1) as f64,
    ));
}

/// Where a thinned file's bytes go: a file (whose freed ranges become
/// holes) or a stream (a zip member being compressed).
pub(crate) trait Sink {
    /// Appends bytes.
    fn bytes(&mut self, b: &[u8]) -> io::Result<()>;
    /// Appends `n` zero bytes.
    fn zeros(&mut self, n: u64) -> io::Result<()>;
    /// Ends the output, `len` bytes long.
    fn end(&mut self, len: u64) -> io::Result<()>;
}

impl Sink for OutputFile {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.write_all(b)
    }

    fn zeros(&mut self, n: u64) -> io::Result<()> {
        match self.seekable_file()? {
            Some(file) => {
                let n = i64::try_from(n).map_err(io::Error::other)?;
                file.seek(SeekFrom::Current(n)).map(drop)
            }
            None => offload_format::bundle::write_zeros(self, n),
        }
    }

    fn end(&mut self, len: u64) -> io::Result<()> {
        if let Some(file) = self.seekable_file()? {
            // A hole at the very end needs the length set.
            file.set_len(len)?;
        }
        Ok(())
    }
}

/// A [`Sink`] over any writer.
pub(crate) struct Stream<W: Write>(pub W);

impl<W: Write> Sink for Stream<W> {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.0.write_all(b)
    }

    fn zeros(&mut self, n: u64) -> io::Result<()> {
        offload_format::bundle::write_zeros(&mut self.0, n)
    }

    fn end(&mut self, _len: u64) -> io::Result<()> {
        self.0.flush()
    }
}

/// Thins the containers `root` found in `input` (named `shown` in
/// messages), writing the result to `out` (named by its path there) when
/// given; appends one line per container to `report`.
fn thin_input<S: Sink + ?Sized>(
    shown: &str,
    plans: &[Plan],
    input: &fsio::Input,
    mut out: Option<(&mut S, &Path)>,
    args: &ThinArgs,
    report: &mut String,
) -> Result<Totals, String> {
    let mut totals = Totals::default();
    let mut pos = 0u64;
    for p in plans {
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
            Ok(None) => {
                // Unchanged: copied with the bytes around it; the pages
                // read to decide that go now.
                input.release(lo..hi);
                continue;
            }
            Err(
                e @ (ThinError::Grows { .. }
                | ThinError::SharedBinary { .. }
                | ThinError::NothingLeft),
            ) => {
                report.push_str(&format!("  {name}: left alone: {e}\n"));
                input.release(lo..hi);
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
        if let Some((f, t)) = &mut out {
            let mut write = || -> io::Result<()> {
                copy_range(*f, input, pos as usize..lo)?;
                write_pieces(*f, &thinned)
            };
            write().map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
        }
        // Done with these pages (written from the mapping or not).
        input.release(pos as usize..hi);
        pos = hi as u64;
    }
    if let Some((f, t)) = out {
        let mut finish = || -> io::Result<()> {
            copy_range(f, input, pos as usize..input.len())?;
            f.end(input.len() as u64)
        };
        finish().map_err(|e| format!("{}: {}", t.display(), os_error_text(&e)))?;
    }
    Ok(totals)
}

/// Writes `range` of `input` unchanged, in pieces each let go of once
/// written, so that a stream sink (which reads the pages) does not end up
/// holding the whole input.
fn copy_range<S: Sink + ?Sized>(
    f: &mut S,
    input: &fsio::Input,
    range: std::ops::Range<usize>,
) -> io::Result<()> {
    const PIECE: usize = 8 << 20;
    let mut at = range.start;
    while at < range.end {
        let end = range.end.min(at + PIECE);
        f.bytes(&input[at..end])?;
        input.release(at..end);
        at = end;
    }
    Ok(())
}

/// Writes a rewritten container at the output's position; zero runs
/// become holes where the output can seek.
fn write_pieces<S: Sink + ?Sized>(f: &mut S, t: &Thinned<'_>) -> io::Result<()> {
    for p in &t.pieces {
        match p {
            Piece::Bytes(b) => f.bytes(b)?,
            Piece::Input(b) => f.bytes(b)?,
            Piece::Zeros(n) => f.zeros(*n)?,
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

/// What a thinned zip member became: its new digest, size and CRC, and
/// its deflated bytes in a scratch file.
struct Repacked {
    crc32: u32,
    sha256: [u8; 32],
    size: u64,
    compressed: std::fs::File,
    compressed_size: u64,
}

/// Counts, checksums and hashes what passes through to `inner`.
struct Digesting<W: Write> {
    inner: W,
    crc: flate2::Crc,
    sha: sha2::Sha256,
    len: u64,
}

impl<W: Write> Write for Digesting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(b)?;
        self.crc.update(&b[..n]);
        self.sha.update(&b[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Counts what passes through to `inner`.
struct Counting<W: Write> {
    inner: W,
    len: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(b)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The deflate level of thinned members: zlib's default, which is what
/// wheels are made with (Python's `zipfile`, `wheel`, `pip`).
const ZIP_LEVEL: u32 = 6;

/// `offload thin` of a zip archive (a Python wheel): each member that
/// holds device code is decoded, thinned as a file would be, and deflated
/// again; every other member is copied as stored. A wheel's `RECORD` gets
/// the new digest and size of each thinned member. Returns the totals
/// (bytes freed are those of the decoded members) and how many members
/// were left unchanged because they could not be thinned (reported).
fn thin_zip(
    file: &Path,
    input: &fsio::Input,
    dest: Dest<'_>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<(Totals, usize), String> {
    use offload_format::{wheel, zip};
    let shown = file.display().to_string();
    let archive = zip::Archive::parse(input).map_err(|e| format!("{shown}: {e}"))?;
    report.push_str(&report_header(&shown, dest, args, file));
    let mut totals = Totals::default();
    let mut repacked: Vec<Option<Repacked>> = Vec::new();
    let mut skipped = 0usize;
    let mut with_code = 0usize;
    let mut thinned = 0usize;
    let mut decoded_len = 0u64;
    for (index, m) in archive.members.iter().enumerate() {
        repacked.push(None);
        if m.is_dir() || m.uncompressed_size == 0 {
            continue;
        }
        let head = crate::zipped::head(m).map_err(|e| format!("{shown}: {e}"))?;
        if !crate::walk::worth_reading(&head) {
            continue;
        }
        let name = m.name_lossy();
        let mshown = format!("{shown}!/{name}");
        // The message names the member.
        let member = crate::zipped::decode(input, m).map_err(|e| format!("{shown}: {e}"))?;
        let member = std::rc::Rc::new(member);
        let source = Source::ZipMember {
            zip: file.to_path_buf(),
            index,
            name: name.clone(),
        };
        let mut root = Node::new(NodeKind::File, name.clone(), source);
        root.offset = Some(0);
        root.size = Some(member.len() as u64);
        walker(args).decoded(&mut root, member.clone(), 0);
        if !root.is_interesting() {
            continue;
        }
        with_code += 1;
        let mut sub = String::new();
        merge_matches(&mut totals.matches, &keep_matches(&all_entries(&root), sel));
        let alone = match preflight(&mshown, &root, sel) {
            Ok(a) => a,
            Err(u) => {
                // Damage is a failure; a member with nothing for a --keep
                // is what that GPU cannot use, left as it is.
                if let Unfit::Damaged(_) = u {
                    skipped += 1;
                }
                report.push_str(&format!("  {name}: left unchanged: {}\n", u.reason()));
                continue;
            }
        };
        sub.push_str(&format!("{name}\n"));
        report_alone(&alone, &mut sub);
        let plans = plan(&root, sel);
        // Only a member with something to drop is compressed again.
        let write = dest.writes() && !args.dry_run && plans.iter().any(Plan::drops);
        let t = if write {
            let scratch = fsio::scratch_file().map_err(|e| {
                format!(
                    "{mshown}: cannot make a scratch file: {}",
                    os_error_text(&e)
                )
            })?;
            let counting = Counting {
                inner: io::BufWriter::new(scratch),
                len: 0,
            };
            let encoder =
                flate2::write::DeflateEncoder::new(counting, flate2::Compression::new(ZIP_LEVEL));
            let mut sink = Stream(Digesting {
                inner: encoder,
                crc: flate2::Crc::new(),
                sha: sha2::Sha256::default(),
                len: 0,
            });
            let scratch_name = Path::new("(scratch file)");
            let t = thin_input(
                &mshown,
                &plans,
                &member,
                Some((&mut sink, scratch_name)),
                args,
                &mut sub,
            )?;
            if t.rewritten > 0 {
                use sha2::Digest;
                let Digesting {
                    inner,
                    crc,
                    sha,
                    len,
                } = sink.0;
                let fail = |e: io::Error| format!("{mshown}: compressing: {}", os_error_text(&e));
                let counting = inner.finish().map_err(fail)?;
                let compressed_size = counting.len;
                let compressed = counting
                    .inner
                    .into_inner()
                    .map_err(|e| fail(e.into_error()))?;
                repacked[index] = Some(Repacked {
                    crc32: crc.sum(),
                    sha256: sha.finalize().into(),
                    size: len,
                    compressed,
                    compressed_size,
                });
            }
            t
        } else {
            thin_input::<OutputFile>(&mshown, &plans, &member, None, args, &mut sub)?
        };
        report_totals(
            &t,
            containers(&root),
            member.len() as u64,
            args.dry_run,
            "  ",
            &mut sub,
        );
        for line in sub.lines() {
            report.push_str(&format!("  {line}\n"));
        }
        if t.rewritten > 0 {
            thinned += 1;
        }
        decoded_len += member.len() as u64;
        totals.rewritten += t.rewritten;
        totals.entries_dropped += t.entries_dropped;
        totals.bytes_freed += t.bytes_freed;
    }
    let would = if args.dry_run { "would be " } else { "" };
    let mut last = format!(
        "  {thinned} of {with_code} members with device code {would}thinned, {} entries {would}dropped, \
         {} bytes {would}freed ({:.1}% of {decoded_len} bytes decoded)",
        totals.entries_dropped,
        totals.bytes_freed,
        totals.bytes_freed as f64 * 100.0 / decoded_len.max(1) as f64,
    );
    totals.members_with_code = with_code;
    // In place, an archive with nothing thinned is not written again.
    let unchanged_in_place = thinned == 0 && matches!(dest, Dest::Replace(..));
    if dest.writes() && !args.dry_run && !unchanged_in_place {
        let size = write_zip(file, &archive, &mut repacked, dest, outputs)?;
        last.push_str(&format!(
            "; the archive is {size} bytes, was {}",
            input.len()
        ));
    }
    report.push_str(&last);
    report.push('\n');
    let signed = archive
        .members
        .iter()
        .any(|m| wheel::is_record_signature(m.name));
    if signed && thinned > 0 && !args.dry_run {
        report.push_str("  warning: the wheel's RECORD signature no longer matches its RECORD\n");
    }
    Ok((totals, skipped))
}

/// Writes the new archive: members in their order, thinned ones from
/// their scratch files, the rest as stored; the wheel's `RECORD` updated.
/// Returns its size.
fn write_zip(
    file: &Path,
    archive: &offload_format::zip::Archive<'_>,
    repacked: &mut [Option<Repacked>],
    dest: Dest<'_>,
    outputs: &mut Outputs,
) -> Result<u64, String> {
    let target = match dest {
        Dest::To(t) => t,
        _ => file,
    };
    use offload_format::wheel;
    use offload_format::zip::write::{Entry, Layout};
    use offload_format::zip::Method;
    let shown = file.display();
    let tshown = target.display();
    // The RECORD, with the thinned members' lines changed.
    let changes: Vec<wheel::Change<'_>> = archive
        .members
        .iter()
        .zip(repacked.iter())
        .filter_map(|(m, r)| {
            r.as_ref().map(|r| wheel::Change {
                name: m.name,
                sha256: r.sha256,
                size: r.size,
            })
        })
        .collect();
    let record_at = archive
        .members
        .iter()
        .position(|m| wheel::is_record(m.name));
    let record: Option<(Vec<u8>, Vec<u8>, u32)> = match record_at {
        Some(i) if !changes.is_empty() => {
            let m = &archive.members[i];
            let old = m
                .decode_to_vec(256 << 20)
                .map_err(|e| format!("{shown}: {e}"))?;
            let new = wheel::update_record(&old, &changes)
                .map_err(|e| format!("{shown}: {}: {e}", m.name_lossy()))?;
            let mut crc = flate2::Crc::new();
            crc.update(&new);
            let stored = match m.method {
                Method::Stored => new.clone(),
                _ => {
                    let mut e = flate2::write::DeflateEncoder::new(
                        Vec::new(),
                        flate2::Compression::new(ZIP_LEVEL),
                    );
                    e.write_all(&new).and_then(|()| e.finish()).map_err(|e| {
                        format!("{shown}: compressing RECORD: {}", os_error_text(&e))
                    })?
                }
            };
            Some((new, stored, crc.sum()))
        }
        _ => None,
    };
    let Some(i) = dest.create(outputs, &shown.to_string())? else {
        return Ok(0);
    };
    if let Dest::To(_) = dest {
        copy_mode(outputs, i, file);
    }
    let out = outputs.file(i);
    let mut pos = 0u64;
    let mut layout = Layout::new();
    let fail = |e: io::Error| format!("{tshown}: {}", os_error_text(&e));
    for (k, m) in archive.members.iter().enumerate() {
        let mut e = Entry::from_member(m);
        let data: Option<&[u8]> =
            if let (Some((new, stored, crc)), Some(true)) = (&record, record_at.map(|r| r == k)) {
                e.crc32 = *crc;
                e.uncompressed_size = new.len() as u64;
                e.compressed_size = stored.len() as u64;
                Some(stored)
            } else if let Some(r) = &repacked[k] {
                e.method = Method::Deflated;
                e.version_needed = e.version_needed.max(20);
                e.crc32 = r.crc32;
                e.uncompressed_size = r.size;
                e.compressed_size = r.compressed_size;
                None
            } else {
                Some(m.data)
            };
        let header = layout.member(&e);
        out.write_all(&header).map_err(fail)?;
        pos += header.len() as u64;
        match data {
            Some(d) => out.write_all(d).map_err(fail)?,
            None => {
                let r = repacked[k].as_mut().expect("repacked member");
                r.compressed
                    .seek(SeekFrom::Start(0))
                    .and_then(|_| {
                        io::copy(&mut io::Read::take(&r.compressed, r.compressed_size), out)
                    })
                    .map_err(fail)?;
            }
        }
        pos += e.compressed_size;
    }
    let end = layout.finish(archive.comment);
    out.write_all(&end).map_err(fail)?;
    outputs.finish(i).map_err(fail)?;
    Ok(pos + end.len() as u64)
}
