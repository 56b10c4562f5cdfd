//! `offload thin`: rewriting every bundle of a file without the entries of
//! unwanted targets (see docs/tools/offload.md, "Thinning").
//!
//! The walk of `offload ls` finds the containers and their entries; the
//! format library rewrites each one ([`offload_format::thin`]) and lays
//! out the file ([`offload_format::shrink`]): shrunk (the freed bytes
//! taken out, shared libraries and objects), or each container in its own
//! space with the freed bytes left as a hole. Unchanged ranges are copied
//! from the mapped input, so the work is about that of `cp` plus the
//! rewritten bundles.
//! What goes is decided by [`crate::select`] (`Selection`, `preflight`).

use std::collections::HashSet;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use offload_cli::diag::{os_error_text, Diag};
use offload_cli::fsio::{self, OutputFile, Outputs};
use offload_format::shrink;
use offload_format::thin::{self as rewrite, ThinError};

use crate::cli::ThinArgs;
use crate::error::Error;

use crate::extract::unmatched_value;
use crate::model::{Entry, Linkage, Node, NodeKind, Source, Vendor};
use crate::present::all_entries;
use crate::select::{keep_matches, merge_matches, preflight, KeepMatch, Selection, Unfit};
use crate::walk::Walker;

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
        /// The cut, where the walk's entries say where each stored entry
        /// lies (then the container is not read again to decide it).
        cut: Option<WalkedCut>,
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
    // Packed fat binary containers, planned in the file's order with the
    // nodes beside them.
    let mut packed = node
        .packed
        .as_deref()
        .map(|p| (p, p.containers.iter().peekable()));
    let mut plan_packed = |before: Option<u64>, out: &mut Vec<Plan>| {
        let Some((p, containers)) = &mut packed else {
            return;
        };
        while let Some(c) = containers.next_if(|c| before.is_none_or(|b| c.offset < b)) {
            let entries: Vec<Entry> = p.entries_of(c).iter().map(|e| p.entry(e)).collect();
            let name = format!("fatbin #{}", c.index);
            plan_fatbin(Some((c.offset, c.size)), &name, &entries, sel, out);
        }
    };
    for c in &node.children {
        if let Some(at) = c.offset {
            plan_packed(Some(at), out);
        }
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
            NodeKind::Fatbin => plan_fatbin(c.offset.zip(c.size), &c.name, &c.entries, sel, out),
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
    plan_packed(None, out);
}

/// Plans an NVIDIA container (`at`: its offset and size, where it is
/// contiguous in the file) from its entries.
fn plan_fatbin(
    at: Option<(u64, u64)>,
    name: &str,
    entries: &[Entry],
    sel: &Selection,
    out: &mut Vec<Plan>,
) {
    let (keep, bare) = sel.fatbin_mask(entries);
    if keep.iter().all(|&k| k) {
        return;
    }
    match at {
        // In place, even in a linked program: the runtime's
        // registration records point at the container's
        // start, which does not move.
        Some((offset, size)) => out.push(Plan::Fatbin {
            offset,
            size,
            name: name.to_owned(),
            cut: walked_cut(offset, size, entries, &keep),
            keep,
            bare,
        }),
        None => out.push(Plan::Leave {
            name: name.to_owned(),
            why: "not stored contiguously in the file (inside bitcode)".to_owned(),
        }),
    }
}

/// A container's cut decided from the walk's entries ([`walked_cut`]).
struct WalkedCut {
    cut: rewrite::FatbinCut,
    /// The IDs of the entries dropped.
    dropped: Vec<String>,
    /// How many entries it has.
    entries: usize,
}

/// The cut of the container at `offset` (`size` bytes) keeping the stored
/// entries `keep` flags, from the walk's `entries` alone: each stored
/// entry starts its header's length before its payload and runs to where
/// the next starts (the last to the container's end), as the scan that
/// found them reads them. `None` (the container is read again to cut it)
/// unless its entries are its stored entries, one each, in order, and lie
/// in it in order.
fn walked_cut(offset: u64, size: u64, entries: &[Entry], keep: &[bool]) -> Option<WalkedCut> {
    if entries.len() != keep.len() {
        return None;
    }
    let mut starts = Vec::with_capacity(entries.len() + 1);
    for (i, e) in entries.iter().enumerate() {
        let nv = e
            .nvidia
            .filter(|nv| nv.stored == i && nv.member.is_none())?;
        let crate::model::Location::File {
            offset: payload, ..
        } = e.location
        else {
            return None;
        };
        if nv.header_len == 0 {
            return None;
        }
        starts.push(
            payload
                .checked_sub(u64::from(nv.header_len))?
                .checked_sub(offset)?,
        );
    }
    starts.push(size);
    let header_len = *starts.first()?;
    if header_len < 16 || starts.windows(2).any(|w| w[0] >= w[1]) {
        return None;
    }
    let kept = starts
        .windows(2)
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(w, _)| (w[0], w[1]));
    let dropped = entries
        .iter()
        .zip(keep)
        .filter(|(_, &k)| !k)
        .filter_map(|(e, _)| e.nvidia.map(|nv| nv.suffix()))
        .collect();
    Some(WalkedCut {
        cut: rewrite::FatbinCut::new(header_len, kept),
        dropped,
        entries: entries.len(),
    })
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
    /// Bytes taken out of the file (or the members) by shrinking: what
    /// its size goes down by; zero where the layout is kept.
    bytes_smaller: u64,
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
    fn create(&self, outputs: &mut Outputs, shown: &str) -> Result<Option<usize>, Error> {
        match *self {
            Dest::None | Dest::Unchanged => Ok(None),
            Dest::To(t) => outputs
                .create(t.as_os_str(), false)
                .map(Some)
                .map_err(|e| Error::io(t.display(), e)),
            Dest::Replace(original, also) => outputs
                .replace(original, also)
                .map(Some)
                .map_err(|e| Error::io(shown, e)),
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
        // A real run names compressed NVIDIA payloads beside the write
        // (see `thin_file`).
        walker(args)
            .defer_decodes(!args.dry_run)
            .input(&self.path, input)
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
    let sel = match Selection::new(&args.keep, &args.drop, args.drop_ptx) {
        Ok(s) => s,
        Err(refused) => return crate::refused_value(diag, refused),
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
        if roots.iter().any(|r| {
            r.counts().2 == 0
                && all_entries(std::slice::from_ref(r))
                    .iter()
                    .any(|e| s.matches(e, false))
        }) {
            continue;
        }
        if roots.iter().any(|r| r.counts().2 > 0) {
            // Damaged inputs are reported as such below.
            continue;
        }
        if opened
            .iter()
            .zip(&roots)
            .any(|(o, r)| !deferred_sound(o, r, args))
        {
            // So are those whose damage the walk left to the check.
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
    // Replacing a file (the only copy) is made to survive a crash; a new
    // file (`-o`) is written as `cp` writes one (see docs/tools/offload.md).
    let mut outputs = if in_place {
        Outputs::durable()
    } else {
        Outputs::new()
    };
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
        let zip = o.is_zip();
        if !zip && root.damage.is_empty() && !root.is_interesting() {
            diag.error(format!(
                "{}: no device code found; nothing {}",
                o.path.display(),
                if args.dry_run { "to thin" } else { "written" }
            ));
            return ExitCode::FAILURE;
        }
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
            Ok((totals, _)) if zip && totals.members_with_code == 0 => {
                diag.error(format!(
                    "{}: no device code found in its members; nothing {}",
                    o.path.display(),
                    if args.dry_run { "to thin" } else { "written" }
                ));
                return ExitCode::FAILURE;
            }
            Ok((totals, left)) => {
                // A --keep that names nothing in the whole archive is a
                // typo, as in a tree.
                for ((text, _), found) in sel.keep.iter().zip(&totals.matches) {
                    if found.missed() {
                        diag.error(format!(
                            "--keep {text} matches no entry of {}; nothing was written",
                            o.path.display()
                        ));
                        return ExitCode::FAILURE;
                    }
                }
                members_left += left;
            }
            Err(e) => {
                diag.error(e.to_string());
                return ExitCode::FAILURE;
            }
        }
    }
    // All files together, or none; the report is printed with them.
    let status = match outputs.commit_then(|| crate::write_stdout(report.as_bytes(), diag)) {
        Ok(status) => status,
        Err(e) => {
            diag.error(format!("nothing was written: {}", Error::Commit(e)));
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
                if !deferred_sound(&o, &root, args) {
                    // Damage the walk left to the check comes first, as
                    // it always did: the file is skipped as damaged.
                    skipped += 1;
                    let again = Walker::default().input(file, Ok(input.clone()));
                    let why = preflight(&shown, &again, sel).err().unwrap_or(u);
                    diag.error(format!("{} (skipped)", Error::Refused(why.message())));
                    continue;
                }
                merge_matches(
                    &mut matches,
                    &keep_matches(&all_entries(std::slice::from_ref(&root)), sel),
                );
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
                .map_err(|e| Error::input(file.display(), None, Error::Commit(e)))?;
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
    // No device code anywhere: said plainly, and a failure, as for a file.
    if thinned + nothing + unchanged == 0 && skipped == 0 {
        let dirs: Vec<PathBuf> = args.files.iter().filter(|f| f.is_dir()).cloned().collect();
        diag.error(format!(
            "no device code found under {}; nothing to thin",
            crate::present::file_list(&dirs)
        ));
        return ExitCode::FAILURE;
    }
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

/// What `offload thin --dry-run --keep GPU` frees over the inputs whose
/// walks (read NVIDIA headers only, as a dry run reads them) are `roots`,
/// for each of `gpus`: each file (or wheel member, decoded once for all
/// the GPUs) thinned as a file of a tree is, one with nothing for the GPU
/// or with damage left unchanged. What `ls --summary` promises.
/// Also returns the size of the files (wheel members: unpacked) looked at.
pub(crate) fn frees(roots: &[Node], gpus: &[String]) -> (Vec<crate::summary::Freed>, u64) {
    let runs: Vec<Option<(Selection, ThinArgs)>> = gpus
        .iter()
        .map(|gpu| {
            let sel = Selection::new(std::slice::from_ref(gpu), &[], false).ok()?;
            let args = ThinArgs {
                keep: vec![gpu.clone()],
                drop: Vec::new(),
                output: None,
                in_place: false,
                dry_run: true,
                keep_layout: false,
                drop_ptx: false,
                compression_level: None,
                files: Vec::new(),
            };
            Some((sel, args))
        })
        .collect();
    let mut totals = vec![crate::summary::Freed::default(); gpus.len()];
    let mut files_len = 0u64;
    for root in roots {
        let Source::File(file) = &root.file else {
            continue;
        };
        let Ok(input) = crate::walk::open(file) else {
            continue;
        };
        // What thin rewrites: the file, or each member of a zip archive
        // with device code (its walk is the listing's).
        let mut units: Vec<(Rc<fsio::Input>, &Node)> = Vec::new();
        if offload_format::zip::has_magic(&input) {
            for member in root.children.iter().filter(|c| c.file.is_zip_member()) {
                if let Ok(m) = crate::zipped::open(&member.file, Some(&input)) {
                    units.push((Rc::new(m), member));
                }
            }
        } else {
            units.push((input, root));
        }
        for (bytes, node) in units {
            files_len += bytes.len() as u64;
            let shown = PathBuf::from(node.file.to_string());
            for (total, run) in totals.iter_mut().zip(&runs) {
                let Some((sel, args)) = run else { continue };
                let mut outputs = Outputs::durable();
                let mut report = String::new();
                if let Ok(t) = thin_file(
                    &shown,
                    &bytes,
                    node,
                    Dest::None,
                    sel,
                    args,
                    &mut outputs,
                    &mut report,
                ) {
                    total.freed += t.bytes_freed;
                    total.smaller += t.bytes_smaller;
                }
            }
        }
    }
    (totals, files_len)
}

/// The walk that finds what to thin. A dry run reads NVIDIA entry headers
/// only (what it reports needs nothing more); a real run also decodes the
/// first block of each compressed payload, so that a damaged stream stops
/// the file before anything is committed: in a zip member as the walk
/// goes, in a file beside the write ([`Opened::walk`] defers those
/// decodes, [`thin_file`] runs them). Sound fat binary containers are
/// packed (a few words each, see [`crate::model::Packed`]): memory then
/// does not grow by a node and its entries per container.
fn walker(args: &ThinArgs) -> Walker {
    Walker::default()
        .headers_only(args.dry_run)
        .pack_fatbins(true)
}

/// The containers of a tree that `thin` rewrites or reports on.
fn containers(root: &Node) -> usize {
    root.counts().0
}

/// [`thin_file`], or [`thin_zip`] for a zip archive. Returns the totals
/// and how many zip members were left unchanged (reported).
#[allow(clippy::too_many_arguments)]
fn thin_any(
    file: &Path,
    input: &Rc<fsio::Input>,
    root: &Node,
    dest: Dest<'_>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<(Totals, usize), Error> {
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
    input: &Rc<fsio::Input>,
    root: &Node,
    dest: Dest<'_>,
    sel: &Selection,
    args: &ThinArgs,
    outputs: &mut Outputs,
    report: &mut String,
) -> Result<Totals, Error> {
    let shown = file.display().to_string();
    let alone = preflight(&shown, root, sel).map_err(|u| Error::Refused(u.message()))?;
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
    // What the walk of a real run left to check (the first block of each
    // compressed NVIDIA payload, see `walker`) is checked on other threads
    // while the file is written; nothing is committed before it is done.
    let bytes: &fsio::Input = input;
    let (result, sound) = std::thread::scope(|s| {
        let checking = (!args.dry_run)
            .then(|| s.spawn(|| crate::walk::check_deferred(bytes, root, check_threads())));
        let result = match out {
            Some(i) => {
                let t = match dest {
                    Dest::To(t) => t,
                    _ => file,
                };
                let sink = outputs.file(i);
                thin_input(&shown, &plans, bytes, Some((sink, t)), args, report)
                    .map(|totals| (totals, Some((i, t))))
            }
            None => thin_input::<OutputFile>(&shown, &plans, bytes, None, args, report)
                .map(|totals| (totals, None)),
        };
        let sound = checking.is_none_or(|c| c.join().expect("checking payloads does not panic"));
        (result, sound)
    });
    if !sound {
        // Damage in a stream: found again where `ls` finds it, and the file
        // refused as if the walk had seen it, its output dropped.
        let again = Walker::default().input(file, Ok(input.clone()));
        if let Err(u) = preflight(&shown, &again, sel) {
            if let Some(i) = out {
                outputs.discard(i);
            }
            return Err(Error::Refused(u.message()));
        }
    }
    let (mut totals, written) = result?;
    if let Some((i, t)) = written {
        if totals.rewritten == 0 && matches!(dest, Dest::Replace(..)) {
            // Nothing changed: the original stays as it is.
            outputs.discard(i);
        } else {
            outputs.finish(i).map_err(|e| Error::io(t.display(), e))?;
        }
    }
    totals.matches = keep_matches(&all_entries(std::slice::from_ref(root)), sel);
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

/// Whether what the walk of `o` (`root`) left to check is sound, for the
/// decisions made before anything is written ([`thin_file`] checks
/// beside the write): always, for a dry run, which defers nothing.
fn deferred_sound(o: &Opened, root: &Node, args: &ThinArgs) -> bool {
    match &o.input {
        Ok(i) if !args.dry_run => crate::walk::check_deferred(i, root, check_threads()),
        _ => true,
    }
}

/// How many threads check the payloads beside the write.
fn check_threads() -> usize {
    offload_cli::env::cores().min(8)
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
        "{indent}{} of {} {would}rewritten, {} {would}dropped, {} bytes {would}freed ({:.1}% of {len} bytes)\n",
        totals.rewritten,
        crate::model::count(containers, "container", "containers"),
        crate::model::count(totals.entries_dropped, "entry", "entries"),
        totals.bytes_freed,
        totals.bytes_freed as f64 * 100.0 / len.max(1) as f64,
    ));
}

/// Where a thinned file's bytes go: a file (whose freed ranges become
/// holes) or a stream (a zip member being compressed).
pub(crate) trait Sink {
    /// Appends bytes.
    fn bytes(&mut self, b: &[u8]) -> io::Result<()>;
    /// Appends `pieces` in order (vectored writes where the sink can;
    /// `pieces` is consumed).
    fn gathered(&mut self, pieces: &mut [io::IoSlice<'_>]) -> io::Result<()> {
        pieces.iter().try_for_each(|p| self.bytes(p))
    }
    /// Appends `n` zero bytes.
    fn zeros(&mut self, n: u64) -> io::Result<()>;
    /// Ends the output, `len` bytes long.
    fn end(&mut self, len: u64) -> io::Result<()>;
}

impl Sink for OutputFile {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.write_all(b)
    }

    fn gathered(&mut self, pieces: &mut [io::IoSlice<'_>]) -> io::Result<()> {
        offload_format::bundle::write_all_vectored(self, pieces)
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
    out: Option<(&mut S, &Path)>,
    args: &ThinArgs,
    report: &mut String,
) -> Result<Totals, Error> {
    let mut totals = Totals::default();
    let mut rewrites: Vec<shrink::Rewrite<'_>> = Vec::new();
    // For each rewrite whose new bytes were let go of: how to make them.
    let mut again: Vec<Again<'_>> = Vec::new();
    let mut held = 0u64;
    let no_ids = HashSet::new();
    let mut pos = 0u64;
    let mut behind = Behind::new(input);
    // A PE image's checksum covers the new bytes, shrunk or in place
    // (shrink::in_place recomputes it too): its rewrites keep them.
    let reads_contents = shrink::reads_contents(input);
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
                ..
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
        let drop = drop.unwrap_or(&no_ids);
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(offset + size).ok())
            .and_then(|(a, b)| input.get(a..b).map(|d| (a, b, d)));
        let Some((_, hi, data)) = range else {
            return Err(Error::input(shown, Some(name), "outside the file"));
        };
        if offset < pos {
            return Err(Error::input(
                shown,
                Some(name),
                "overlaps the container before it",
            ));
        }
        // A cut the walk's entries gave: the container is not read again
        // (where its new bytes are held, they are made now).
        let walked = match p {
            Plan::Fatbin { cut: Some(c), .. } if !reads_contents => Some(c),
            _ => None,
        };
        let result = match walked {
            Some(w) if w.dropped.is_empty() => Ok(None),
            Some(w) => {
                // Only the IDs dropped and the number kept are reported.
                let info = |id: &str| rewrite::EntryInfo {
                    id: id.to_owned(),
                    size: 0,
                };
                Ok(Some((
                    rewrite::Thinned {
                        pieces: Vec::new(),
                        used: w.cut.used(),
                        kept: vec![info(""); w.entries.saturating_sub(w.dropped.len())],
                        dropped: w.dropped.iter().map(|id| info(id)).collect(),
                    },
                    Some(w.cut.clone()),
                )))
            }
            None => rewrite_container(kind, data, drop, keep_mask, args),
        };
        let (thinned, cut) = match result {
            Ok(Some(t)) => t,
            Ok(None) => {
                // Unchanged: copied with the bytes around it; the pages
                // read to decide that go now.
                behind.upto(hi);
                continue;
            }
            Err(
                e @ (ThinError::Grows { .. }
                | ThinError::SharedBinary { .. }
                | ThinError::NothingLeft),
            ) => {
                report.push_str(&format!("  {name}: left alone: {e}\n"));
                behind.upto(hi);
                continue;
            }
            Err(ThinError::Read(e)) => return Err(Error::input(shown, Some(name), e)),
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
        // New bytes (recompressed bundles) are held up to a budget; past
        // it, a container's are made again when written (an NVIDIA
        // container's always), except in a file whose checksum covers
        // them (`reads_contents`: all are held). What was kept
        // and dropped is reported: only the pieces are held for the write
        // (a library has tens of thousands of containers).
        let mut thinned = thinned;
        thinned.kept = Vec::new();
        thinned.dropped = Vec::new();
        let new_bytes: u64 = thinned
            .pieces
            .iter()
            .filter(|p| matches!(p, rewrite::Piece::Bytes(_)))
            .map(rewrite::Piece::len)
            .sum();
        // An NVIDIA container is laid out again from its cut (a few words:
        // its header's length and the kept ranges), for less than holding
        // its pieces costs (tens of thousands of them), where the layout
        // does not read them.
        match cut {
            Some(cut) if !reads_contents => {
                thinned.pieces = Vec::new();
                again.push(Again::Cut(cut));
            }
            _ if !reads_contents && held + new_bytes > HELD_MAX => {
                thinned.pieces = Vec::new();
                again.push(Again::Remake(kind, drop, keep_mask));
            }
            _ => {
                held += new_bytes;
                again.push(Again::Held);
            }
        }
        rewrites.push(shrink::Rewrite {
            offset,
            size,
            new: thinned,
        });
        // Done with these pages for now (written from the mapping later).
        behind.upto(hi);
        pos = hi as u64;
    }
    behind.finish();
    let len = input.len() as u64;
    // One plan for the file, applied once: shrunk, or in the space it had.
    let layout = if rewrites.is_empty() {
        shrink::in_place(input, &rewrites)
    } else if args.keep_layout {
        report.push_str(&format!(
            "  {} in place (--keep-layout)\n",
            if args.dry_run {
                "would be rewritten"
            } else {
                "rewritten"
            }
        ));
        shrink::in_place(input, &rewrites)
    } else {
        match shrink::shrink(input, &rewrites) {
            Ok(layout) => layout,
            Err(why) => {
                report.push_str(&format!(
                    "  not shrunk ({why}): {} in place\n",
                    if args.dry_run {
                        "would be rewritten"
                    } else {
                        "rewritten"
                    }
                ));
                shrink::in_place(input, &rewrites)
            }
        }
    };
    if layout.shrunk {
        totals.bytes_smaller = len.saturating_sub(layout.len);
        report.push_str(&format!(
            "  {} {len} -> {} bytes ({} bytes smaller)\n",
            if args.dry_run {
                "would shrink:"
            } else {
                "shrunk:"
            },
            layout.len,
            len - layout.len,
        ));
    }
    if let Some((f, t)) = out {
        // A container whose bytes were let go of, made again: the same
        // bytes (the rewrite is deterministic), checked by their length.
        let remake = |i: usize| -> Result<Option<rewrite::Thinned<'_>>, String> {
            let r = &rewrites[i];
            let data = &input[r.offset as usize..(r.offset + r.size) as usize];
            let made = match &again[i] {
                Again::Held => return Ok(None),
                Again::Cut(cut) => cut.pieces(data).map(|(pieces, used)| {
                    Some(rewrite::Thinned {
                        pieces,
                        used,
                        kept: Vec::new(),
                        dropped: Vec::new(),
                    })
                }),
                Again::Remake(kind, drop, keep_mask) => {
                    rewrite_container(*kind, data, drop, *keep_mask, args)
                        .map(|t| t.map(|(t, _)| t))
                }
            };
            match made {
                Ok(Some(t)) if t.used == r.new.used => Ok(Some(t)),
                _ => Err(format!(
                    "{shown}: the container at {:#x} came out differently when made again",
                    r.offset
                )),
            }
        };
        write_layout(f, input, &layout, &rewrites, &remake).map_err(|e| match e {
            Remade::Io(e) => Error::io(t.display(), e),
            Remade::Differs(e) => Error::Refused(e),
        })?;
    }
    Ok(totals)
}

/// The most new container bytes (recompressed bundles) [`thin_input`]
/// holds for a file; past it, they are made again when written, so that
/// memory stays flat.
const HELD_MAX: u64 = 16 << 20;

/// Rewrites one container as its plan says; for an NVIDIA container,
/// also its cut (what [`Again::Cut`] lays it out from again).
fn rewrite_container<'a>(
    kind: Kind,
    data: &'a [u8],
    drop: &HashSet<String>,
    keep_mask: Option<&Vec<bool>>,
    args: &ThinArgs,
) -> Result<Option<(rewrite::Thinned<'a>, Option<rewrite::FatbinCut>)>, ThinError> {
    let whole = |t: Option<rewrite::Thinned<'a>>| t.map(|t| (t, None));
    match kind {
        Kind::Bundle => rewrite::bundle(data, &mut |id| {
            !drop.contains(&*String::from_utf8_lossy(id))
        })
        .map(whole),
        Kind::Ccob => rewrite::ccob(
            data,
            &mut |id| !drop.contains(&*String::from_utf8_lossy(id)),
            args.compression_level,
        )
        .map(whole),
        Kind::OffloadBinaries => {
            rewrite::offload_binaries(data, &mut |b| !drop.contains(&rewrite::image_id(b)))
                .map(whole)
        }
        Kind::Fatbin => {
            let mask = keep_mask.map(Vec::as_slice).unwrap_or_default();
            rewrite::fatbin_with_cut(data, &mut |i, _| mask.get(i).copied().unwrap_or(true))
                .map(|t| t.map(|(t, cut)| (t, Some(cut))))
        }
    }
}

/// How a rewritten container's bytes are had when it is written.
enum Again<'p> {
    /// Its pieces are held.
    Held,
    /// An NVIDIA container: laid out again from its cut.
    Cut(rewrite::FatbinCut),
    /// Rewritten again (its kind, the entry IDs to drop, the NVIDIA
    /// entries to keep): the same bytes, the rewrite being deterministic.
    Remake(Kind, &'p HashSet<String>, Option<&'p Vec<bool>>),
}

/// Why writing a layout stopped.
enum Remade {
    Io(io::Error),
    /// A container made again was not what it had been.
    Differs(String),
}

/// Writes a file's [`shrink::Layout`]: unchanged ranges copied from the
/// mapped input (its pages let go of as they are written), containers
/// from their pieces, zero runs as holes where the output can seek.
fn write_layout<'a, S: Sink + ?Sized>(
    f: &mut S,
    input: &'a fsio::Input,
    layout: &shrink::Layout,
    rewrites: &[shrink::Rewrite<'a>],
    remake: &dyn Fn(usize) -> Result<Option<rewrite::Thinned<'a>>, String>,
) -> Result<(), Remade> {
    let mut g = Gather::new(f, input);
    for p in &layout.pieces {
        match p {
            shrink::Out::Copy { from, len } => {
                let (a, b) = (*from as usize, (*from + *len) as usize);
                copy_range(&mut g, input, a..b).map_err(Remade::Io)?;
            }
            shrink::Out::Container(i) => {
                let r = &rewrites[*i];
                let made = remake(*i).map_err(Remade::Differs)?;
                for part in shrink::used_pieces(made.as_ref().unwrap_or(&r.new)) {
                    match part {
                        shrink::Part::Bytes(b) => g.bytes(b),
                        shrink::Part::Zeros(n) => g.zeros(n),
                    }
                    .map_err(Remade::Io)?;
                }
                g.done_upto((r.offset + r.size) as usize)
                    .map_err(Remade::Io)?;
            }
            shrink::Out::Bytes(b) => g.bytes(b).map_err(Remade::Io)?,
            shrink::Out::Zeros(n) => g.zeros(*n).map_err(Remade::Io)?,
        }
    }
    g.end(layout.len).map_err(Remade::Io)
}

/// Gathers the small pieces of a layout (a container's new headers and
/// kept entries, tens of thousands of them in a library) into vectored
/// writes, so that the kernel copies them from the mapped input once
/// instead of this process copying them into a buffer first; pieces of
/// [`fsio::COPY_THRESHOLD`] and more go to the sink alone (the kernel
/// copies those file to file). Lets go of the input's pages behind the
/// writes ([`Behind`]) once what lies before them is written.
struct Gather<'a, 's, S: Sink + ?Sized> {
    sink: &'s mut S,
    input: &'a [u8],
    behind: Behind<'a>,
    /// Pieces not in the input (headers made again), copied.
    owned: Vec<u8>,
    /// The pending pieces in order: a range of the input, or of `owned`.
    pieces: Vec<(bool, std::ops::Range<usize>)>,
    pending: usize,
}

impl<'a, 's, S: Sink + ?Sized> Gather<'a, 's, S> {
    /// Bytes or pieces pending before they are written.
    const MOST_BYTES: usize = 1 << 20;
    const MOST_PIECES: usize = 512;

    fn new(sink: &'s mut S, input: &'a fsio::Input) -> Self {
        Gather {
            sink,
            input,
            behind: Behind::new(input),
            owned: Vec::new(),
            pieces: Vec::new(),
            pending: 0,
        }
    }

    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        if b.is_empty() {
            return Ok(());
        }
        if b.len() >= fsio::COPY_THRESHOLD {
            self.flush()?;
            return self.sink.bytes(b);
        }
        // A piece of the input is kept as its range (found by address:
        // the same bytes, borrowed for as long as the input).
        let base = self.input.as_ptr() as usize;
        let at = (b.as_ptr() as usize).wrapping_sub(base);
        let piece = if at <= self.input.len() && b.len() <= self.input.len() - at {
            (true, at..at + b.len())
        } else {
            let start = self.owned.len();
            self.owned.extend_from_slice(b);
            (false, start..self.owned.len())
        };
        self.pieces.push(piece);
        self.pending += b.len();
        if self.pending >= Self::MOST_BYTES || self.pieces.len() >= Self::MOST_PIECES {
            self.flush()?;
        }
        Ok(())
    }

    fn zeros(&mut self, n: u64) -> io::Result<()> {
        self.flush()?;
        self.sink.zeros(n)
    }

    /// The layout is done with the input before `to`.
    fn done_upto(&mut self, to: usize) -> io::Result<()> {
        if self.behind.would_release(to) {
            self.flush()?;
        }
        self.behind.upto(to);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pieces.is_empty() {
            return Ok(());
        }
        let mut slices: Vec<io::IoSlice<'_>> = self
            .pieces
            .iter()
            .map(|(from_input, r)| {
                io::IoSlice::new(if *from_input {
                    &self.input[r.clone()]
                } else {
                    &self.owned[r.clone()]
                })
            })
            .collect();
        self.sink.gathered(&mut slices)?;
        self.pieces.clear();
        self.owned.clear();
        self.pending = 0;
        Ok(())
    }

    fn end(mut self, len: u64) -> io::Result<()> {
        self.flush()?;
        self.behind.finish();
        self.sink.end(len)
    }
}

/// Lets go of a mapped input's pages behind a pass that moves forward
/// through it ([`fsio::Input::release`]), a few MiB at a time: a library
/// holds tens of thousands of small containers, and a `madvise` (with its
/// TLB flush) for each cost more than copying them.
struct Behind<'i> {
    input: &'i fsio::Input,
    /// Where the pages not yet let go of start.
    from: usize,
    /// The furthest point the pass said it was done with.
    to: usize,
}

impl<'i> Behind<'i> {
    /// How much is let go of at a time: resident memory stays under this
    /// (plus the mapping's own slack) whatever the file's layout. (A
    /// `madvise` per 2 MiB is 700 calls for a 1.4 GB library.)
    const STEP: usize = 2 << 20;

    fn new(input: &'i fsio::Input) -> Behind<'i> {
        Behind {
            input,
            from: 0,
            to: 0,
        }
    }

    /// Whether [`Behind::upto`] with `to` would let go of pages now.
    fn would_release(&self, to: usize) -> bool {
        self.to.max(to) - self.from >= Self::STEP
    }

    /// The pass is done with the bytes before `to` (a point behind an
    /// earlier one changes nothing).
    fn upto(&mut self, to: usize) {
        self.to = self.to.max(to);
        if self.to - self.from >= Self::STEP {
            self.finish();
        }
    }

    /// Lets go of everything the pass is done with.
    fn finish(&mut self) {
        if self.to > self.from {
            self.input.release(self.from..self.to);
            self.from = self.to;
        }
    }
}

/// Writes `range` of `input` unchanged, in pieces let go of once
/// written, so that a stream sink (which reads the pages) does not end up
/// holding the whole input.
fn copy_range<S: Sink + ?Sized>(
    g: &mut Gather<'_, '_, S>,
    input: &fsio::Input,
    range: std::ops::Range<usize>,
) -> io::Result<()> {
    const PIECE: usize = 8 << 20;
    let mut at = range.start;
    while at < range.end {
        let end = range.end.min(at + PIECE);
        g.bytes(&input[at..end])?;
        g.done_upto(end)?;
        at = end;
    }
    Ok(())
}

/// The usage checks clap cannot express.
pub fn check_usage(args: &ThinArgs) -> Result<(), String> {
    if args.keep.is_empty() && args.drop.is_empty() {
        return Err("say what to keep (--keep) or drop (--drop)".to_owned());
    }
    if let Some(both) = args.keep.iter().find(|k| args.drop.contains(k)) {
        return Err(format!(
            "--keep {both} and --drop {both} contradict each other; give one"
        ));
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
) -> Result<(Totals, usize), Error> {
    use offload_format::{wheel, zip};
    let shown = file.display().to_string();
    let archive = zip::Archive::parse(input).map_err(|e| Error::input(&shown, None, e))?;
    report.push_str(&report_header(&shown, dest, args, file));
    let mut totals = Totals::default();
    let mut repacked: Vec<Option<Repacked>> = Vec::new();
    let mut skipped = 0usize;
    let mut with_code = 0usize;
    let mut thinned = 0usize;
    let mut decoded_len = 0u64;
    // One walk over the members: containers are numbered across the
    // archive, as `ls` and `extract --bundle` number them.
    let mut walk = walker(args);
    for (index, m) in archive.members.iter().enumerate() {
        repacked.push(None);
        if m.is_dir() || m.uncompressed_size == 0 {
            continue;
        }
        let head = crate::zipped::head(m).map_err(|e| Error::input(&shown, None, e))?;
        if !crate::walk::worth_reading(&head) {
            continue;
        }
        let name = m.name_lossy();
        let mshown = format!("{shown}!/{name}");
        // The message names the member.
        let member = crate::zipped::decode(input, m).map_err(|e| e.within(&shown))?;
        let member = std::rc::Rc::new(member);
        let source = Source::ZipMember {
            zip: file.to_path_buf(),
            index,
            name: name.clone(),
        };
        let mut root = Node::new(NodeKind::File, name.clone(), source);
        root.offset = Some(0);
        root.size = Some(member.len() as u64);
        walk.decoded(&mut root, member.clone(), 0);
        if !root.is_interesting() {
            continue;
        }
        with_code += 1;
        let mut sub = String::new();
        merge_matches(
            &mut totals.matches,
            &keep_matches(&all_entries(std::slice::from_ref(&root)), sel),
        );
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
            let scratch = fsio::scratch_file()
                .map_err(|e| Error::io_doing(&mshown, "cannot make a scratch file", e))?;
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
                let fail = |e: io::Error| Error::io_doing(&mshown, "compressing", e);
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
        totals.bytes_smaller += t.bytes_smaller;
    }
    let would = if args.dry_run { "would be " } else { "" };
    let mut last = format!(
        "  {thinned} of {} with device code {would}thinned, {} {would}dropped, \
         {} bytes {would}freed ({:.1}% of {decoded_len} bytes decoded)",
        crate::model::count(with_code, "member", "members"),
        crate::model::count(totals.entries_dropped, "entry", "entries"),
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
) -> Result<u64, Error> {
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
                .map_err(|e| Error::input(&shown, None, e))?;
            let new = wheel::update_record(&old, &changes)
                .map_err(|e| Error::input(&shown, Some(&m.name_lossy()), e))?;
            let mut crc = flate2::Crc::new();
            crc.update(&new);
            let stored = match m.method {
                Method::Stored => new.clone(),
                _ => {
                    let mut e = flate2::write::DeflateEncoder::new(
                        Vec::new(),
                        flate2::Compression::new(ZIP_LEVEL),
                    );
                    e.write_all(&new)
                        .and_then(|()| e.finish())
                        .map_err(|e| Error::io_doing(&shown, "compressing RECORD", e))?
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
    let fail = |e: io::Error| Error::io(&tshown, e);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that records what reaches it, and how.
    #[derive(Default)]
    struct Recorder {
        out: Vec<u8>,
        /// (gathered?, pieces, bytes) per call.
        calls: Vec<(bool, usize, usize)>,
        ended: Option<u64>,
    }

    impl Sink for Recorder {
        fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
            self.out.extend_from_slice(b);
            self.calls.push((false, 1, b.len()));
            Ok(())
        }
        fn gathered(&mut self, pieces: &mut [io::IoSlice<'_>]) -> io::Result<()> {
            let n: usize = pieces.iter().map(|p| p.len()).sum();
            for p in pieces.iter() {
                self.out.extend_from_slice(p);
            }
            self.calls.push((true, pieces.len(), n));
            Ok(())
        }
        fn zeros(&mut self, n: u64) -> io::Result<()> {
            self.out.resize(self.out.len() + n as usize, 0);
            self.calls.push((false, 0, n as usize));
            Ok(())
        }
        fn end(&mut self, len: u64) -> io::Result<()> {
            self.ended = Some(len);
            Ok(())
        }
    }

    /// Small pieces of the input and of other memory come out in order,
    /// in vectored writes of at most `MOST_PIECES` pieces and about
    /// `MOST_BYTES`; a piece of `COPY_THRESHOLD` or more, and zeros, go
    /// to the sink alone, after what was pending.
    #[test]
    fn gathered_writes_keep_order_and_bounds() {
        let data: Vec<u8> = (0..4u32 << 20).map(|i| (i * 31 % 253) as u8).collect();
        let input = fsio::Input::from(data.clone());
        let mut sink = Recorder::default();
        let mut want = Vec::new();
        {
            let mut g = Gather::new(&mut sink, &input);
            let mut at = 0usize;
            for k in 0..3000usize {
                let header = format!("h{k}").into_bytes();
                g.bytes(&header).unwrap();
                want.extend_from_slice(&header);
                let len = 100 + k % 900;
                g.bytes(&input[at..at + len]).unwrap();
                want.extend_from_slice(&data[at..at + len]);
                at += len + 7;
                g.done_upto(at).unwrap();
                if k == 1000 {
                    g.zeros(5).unwrap();
                    want.extend_from_slice(&[0; 5]);
                }
                if k == 2000 {
                    let big = &input[at..at + fsio::COPY_THRESHOLD];
                    g.bytes(big).unwrap();
                    want.extend_from_slice(big);
                    at += fsio::COPY_THRESHOLD;
                }
            }
            g.end(want.len() as u64).unwrap();
        }
        assert_eq!(sink.out, want);
        assert_eq!(sink.ended, Some(want.len() as u64));
        let gathered: Vec<_> = sink.calls.iter().filter(|c| c.0).collect();
        assert!(gathered.len() < 20, "{} vectored writes", gathered.len());
        for c in &gathered {
            assert!(c.1 <= Gather::<Recorder>::MOST_PIECES, "{c:?}");
            assert!(c.2 < Gather::<Recorder>::MOST_BYTES + 1000, "{c:?}");
        }
        // The zeros and the large piece went alone.
        assert!(sink.calls.contains(&(false, 0, 5)));
        assert!(sink.calls.contains(&(false, 1, fsio::COPY_THRESHOLD)));
    }

    /// The cut the walk's entries give a container is the one read from
    /// the container itself, for every keep mask: entry headers of several
    /// lengths, payloads padded, containers apart, packed or not.
    #[test]
    fn cuts_from_the_walk_are_the_containers_own() {
        use test_support::{fatbin_with, FatbinEntry};
        let payloads: Vec<Vec<u8>> = (0..4u8)
            .map(|i| vec![i + 1; 37 + 50 * i as usize])
            .collect();
        let mut file = Vec::new();
        for (c, header) in [64u32, 80, 112].into_iter().enumerate() {
            let entries: Vec<FatbinEntry<'_>> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| FatbinEntry {
                    header_size: header,
                    ..FatbinEntry::new(2, [70, 80, 90][(i + c) % 3], 0, p)
                })
                .collect();
            file.extend(fatbin_with(&entries));
            file.resize(file.len() + 8 * c, 0);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.fatbin");
        std::fs::write(&path, &file).unwrap();
        let input = crate::walk::open(&path).unwrap();
        let root = Walker::default()
            .pack_fatbins(true)
            .input(&path, Ok(input.clone()));
        // Each container's place and entries, as `plan_fatbin` gets them.
        let mut found: Vec<(u64, u64, Vec<Entry>)> = Vec::new();
        root.visit(&mut Vec::new(), &mut |path| {
            let n = path[path.len() - 1];
            if let Some(p) = &n.packed {
                for c in &p.containers {
                    let entries = p.entries_of(c).iter().map(|e| p.entry(e)).collect();
                    found.push((c.offset, c.size, entries));
                }
            }
            if n.kind == NodeKind::Fatbin {
                found.push((n.offset.unwrap(), n.size.unwrap(), n.entries.clone()));
            }
        });
        assert_eq!(found.len(), 3);
        for (offset, size, entries) in &found {
            let data = &file[*offset as usize..(*offset + *size) as usize];
            for mask in 0..16u32 {
                let keep: Vec<bool> = (0..4).map(|i| mask & (1 << i) != 0).collect();
                let WalkedCut {
                    cut,
                    dropped,
                    entries: n,
                } = walked_cut(*offset, *size, entries, &keep).unwrap();
                let (thinned, read) = rewrite::fatbin_with_cut(data, &mut |i, _| keep[i])
                    .unwrap()
                    .map_or_else(
                        || (Vec::new(), None),
                        |(t, c)| (t.dropped.into_iter().map(|d| d.id).collect(), Some(c)),
                    );
                assert_eq!(n, 4);
                assert_eq!(dropped, thinned, "mask {mask:04b}");
                if mask != 15 {
                    assert_eq!(Some(&cut), read.as_ref(), "mask {mask:04b}");
                    assert_eq!(cut.used(), cut.pieces(data).unwrap().1);
                }
            }
        }
        // Entries that do not lie in order in their container: no cut.
        let (offset, size, entries) = &found[0];
        let mut swapped = entries.clone();
        swapped.swap(0, 1);
        assert!(walked_cut(*offset, *size, &swapped, &[true, false, true, true]).is_none());
    }
}
