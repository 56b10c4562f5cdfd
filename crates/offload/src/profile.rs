//! `offload size`: where the bytes of each input go. Every byte of a file
//! is attributed once: to host code and data, to container overhead
//! (headers, tables and padding of the offload containers and sections), or
//! to a device image; inside each image to its kernels and device functions
//! and to the parts they share ([`offload_format::profile`]). Compressed
//! images' stored bytes are split in proportion to their uncompressed
//! sizes, and so are a compressed wheel member's.
//!
//! The images are decoded and profiled on every core, at most
//! [`IN_FLIGHT`] decoded bytes at a time, each decoded image at most
//! [`MAX_IMAGE`] bytes; the pages of an image's stored bytes are dropped
//! as soon as it is profiled.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Condvar, Mutex};

use offload_cli::fsio;
use offload_format::hash::bytes_map::BytesMap;
use offload_format::hip_fatbin;
use offload_format::nvidia::fatbin::EntryKind;
use offload_format::profile::{self, split_proportional, ImageKind, ImageProfile};
use offload_format::zip;

use crate::model::{Entry, Location, Node, NodeKind, Source, Vendor};
use crate::objects;
use crate::render::js;
use crate::select::{ArchFilter, ImageArch};
use crate::walk::offset_in;

/// The most bytes one image may decode to and be profiled (larger ones
/// count as one part): the memory a worker holds at once.
pub const MAX_IMAGE: u64 = 64 << 20;

/// Image bytes the workers hold at once (decoded, or read from the file
/// to be profiled): a worker waits for room before it takes an image, so
/// that large images are profiled a few at a time, whatever the number of
/// cores. An image larger than this is profiled alone.
const IN_FLIGHT: u64 = 40 << 20;

/// Stored bytes of profiled groups whose pages are let go of together.
const RELEASE_BATCH: usize = 8 << 20;

/// The room [`IN_FLIGHT`] leaves, shared by the workers.
struct Budget {
    used: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    /// Waits until `n` bytes fit (or nothing else is held), then holds them.
    fn take(&self, n: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used > 0 && used.saturating_add(n) > IN_FLIGHT {
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += n;
    }

    /// Lets go of `n` bytes taken.
    fn give(&self, n: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(n);
        self.freed.notify_all();
    }
}

/// The bytes profiling a group holds: its entries' decoded sizes.
fn weight(g: &Group<'_>) -> u64 {
    g.entries
        .iter()
        .map(|(e, _)| match (e.nvidia, &e.location) {
            (Some(nv), _) if nv.codec.is_some() => nv.uncompressed_size.unwrap_or(0),
            (_, Location::Ccob { size, .. }) => *size,
            _ => e.size,
        })
        .max()
        .unwrap_or(0)
        .min(MAX_IMAGE)
}

/// What a file's bytes hold, by category.
#[derive(Clone, Debug, Default)]
pub struct FileRow {
    /// The path as given.
    pub path: String,
    /// Its size.
    pub size: u64,
    /// Host code and data: bytes in no offload container.
    pub host: u64,
    /// Offload containers' own bytes: headers, tables, padding.
    pub overhead: u64,
    /// Zip archives: the members without device code and the zip
    /// structure.
    pub other: u64,
    /// What could not be read.
    pub damage: Vec<String>,
}

/// One device image.
#[derive(Clone, Debug)]
pub struct ImageRow {
    /// Index of the file in [`Profiled::files`].
    pub file: usize,
    /// The zip member it is in, for a wheel.
    pub member: Option<String>,
    /// The `#k` of its container in `offload ls`.
    pub container: Option<usize>,
    /// The entry ID.
    pub entry: String,
    /// `nvidia`, `amd`, or the triple's architecture.
    pub vendor: String,
    /// `sm_90a`, `compute_90` (PTX), `gfx90a:xnack-`.
    pub arch: String,
    /// The same, typed: what `--arch` selects by.
    pub built_for: ImageArch,
    /// Bytes of the file it accounts for.
    pub stored: u64,
    /// Where its (uncompressed) bytes go.
    pub profile: ImageProfile,
    /// Its functions' names as numbers, in the order of
    /// `profile.functions`: equal numbers, equal names (one numbering per
    /// [`profile()`] run).
    pub names: Vec<usize>,
    /// In `__nv_relfatbin`: relocatable device code, input to a device
    /// link, never loaded itself; its functions are not counted as
    /// duplicates.
    pub relocatable: bool,
}

impl ImageRow {
    /// The file bytes of each function, then of each shared part.
    pub fn shares(&self) -> Vec<u64> {
        let weights: Vec<u64> = self
            .profile
            .functions
            .iter()
            .map(|f| f.bytes)
            .chain(self.profile.shared.iter().map(|s| s.bytes))
            .collect();
        split_proportional(self.stored, &weights)
    }
}

/// The profile of all inputs.
#[derive(Debug, Default)]
pub struct Profiled {
    /// The inputs.
    pub files: Vec<FileRow>,
    /// Their images.
    pub images: Vec<ImageRow>,
}

/// Profiles the walked trees (`roots`, one per input, with their inputs
/// read as `open` reads them).
pub fn profile(roots: &[Node]) -> Profiled {
    let mut out = Profiled::default();
    // One copy of each function name, however many images hold it.
    let names: Names = Mutex::new(BytesMap::default());
    for root in roots {
        let file = out.files.len();
        let mut row = FileRow {
            path: root.name.clone(),
            size: root.size.unwrap_or(0),
            ..FileRow::default()
        };
        let path = match &root.file {
            Source::File(p) => p.clone(),
            Source::ZipMember { zip, .. } => zip.clone(),
        };
        let input = match crate::walk::open(&path) {
            Ok(i) => i,
            Err(e) => {
                row.damage.push(format!(
                    "cannot read: {}",
                    offload_cli::diag::os_error_text(&e)
                ));
                row.size = 0;
                out.files.push(row);
                continue;
            }
        };
        row.size = input.len() as u64;
        if zip::has_magic(&input) && root.children.iter().all(|c| c.file.is_zip_member()) {
            wheel(root, &input, file, &mut row, &mut out.images, &names);
        } else {
            let space = space(root, &input, &input, file, None, &mut row.damage, &names);
            row.host = space.host;
            row.overhead = space.overhead;
            out.images.extend(space.images);
        }
        out.files.push(row);
    }
    out
}

/// A zip archive: each member with device code attributed in its own
/// (decoded) bytes, then its stored bytes split in proportion.
fn wheel(
    root: &Node,
    input: &Rc<fsio::Input>,
    file: usize,
    row: &mut FileRow,
    images: &mut Vec<ImageRow>,
    names: &Names,
) {
    let archive = match zip::Archive::parse(input) {
        Ok(a) => a,
        Err(e) => {
            row.damage.push(format!("zip archive: {e}"));
            row.other = row.size;
            return;
        }
    };
    let mut claimed = 0u64;
    for child in &root.children {
        let Source::ZipMember { index, name, .. } = &child.file else {
            continue;
        };
        let Some(m) = archive.members.get(*index) else {
            continue;
        };
        let member_input: Rc<fsio::Input>;
        let (bytes, owner): (&[u8], &Rc<fsio::Input>) = match m.stored() {
            Some(b) => (b, input),
            None => match crate::zipped::decode(input, m) {
                Ok(i) => {
                    member_input = Rc::new(i);
                    (&member_input[..], &member_input)
                }
                Err(e) => {
                    row.damage.push(format!("zip member {name}: {e}"));
                    continue;
                }
            },
        };
        let mut s = space(
            child,
            owner,
            bytes,
            file,
            Some(name),
            &mut row.damage,
            names,
        );
        // The member's stored bytes, in proportion.
        let stored = m.data.len() as u64;
        claimed += stored;
        let mut weights = vec![s.host, s.overhead];
        weights.extend(s.images.iter().map(|i| i.stored));
        let split = split_proportional(stored, &weights);
        row.host += split[0];
        row.overhead += split[1];
        for (img, &share) in s.images.iter_mut().zip(&split[2..]) {
            img.stored = share;
        }
        images.append(&mut s.images);
    }
    row.other = row.size.saturating_sub(claimed);
}

/// One copy of each function name, however many images hold it (filled
/// by the workers as they finish images).
/// Each name's number counts the names interned before it.
type Names = Mutex<BytesMap<Arc<str>, usize>>;

/// What one byte space (a file, or a decoded zip member) holds.
struct Space {
    host: u64,
    overhead: u64,
    images: Vec<ImageRow>,
}

/// What claims a range of a byte space (what no claim covers is host
/// code and data).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Claimant {
    Overhead,
    Group(usize),
}

/// Stored bytes shared by the entries that decode from them: one stored
/// payload (a fat binary entry, with its concatenated members), or a
/// CCOB's entries.
struct Group<'a> {
    offset: u64,
    size: u64,
    ccob: bool,
    /// In `__nv_relfatbin`.
    relocatable: bool,
    entries: Vec<(&'a Entry, Option<usize>)>,
}

/// Attributes the bytes of `node`'s space (`bytes`, whose pages belong to
/// `owner`).
fn space(
    node: &Node,
    owner: &Rc<fsio::Input>,
    bytes: &[u8],
    file: usize,
    member: Option<&String>,
    damage: &mut Vec<String>,
    names: &Names,
) -> Space {
    let mut claims: Vec<(u64, u64, u8, Claimant)> = Vec::new();
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut by_place: HashMap<(u64, u64, bool), usize> = HashMap::new();
    collect(
        node,
        &node.file,
        0,
        Within::default(),
        &mut claims,
        &mut groups,
        &mut by_place,
    );
    let len = bytes.len() as u64;
    let resolve_claims: Vec<profile::Claim> = claims
        .iter()
        .map(|&(start, size, rank, c)| profile::Claim {
            start,
            end: start.saturating_add(size),
            rank,
            owner: match c {
                Claimant::Overhead => 1,
                Claimant::Group(g) => 2 + g,
            },
        })
        .collect();
    let (won, uncovered) = profile::resolve(len, &resolve_claims, 2 + groups.len());
    let mut host = won[0] + uncovered;
    let mut overhead = won[1];
    // Profile the groups on every core, in file order; each group's
    // stored pages are dropped as soon as it is done, and its names
    // interned, so that what stays is one copy of each name.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&g| groups[g].offset);
    let jobs: Vec<&Group<'_>> = order.iter().map(|&g| &groups[g]).collect();
    let base = offset_in(owner, bytes);
    let input: &fsio::Input = owner;
    // The stored pages of groups done, let go of together once they add
    // up to RELEASE_BATCH: a `madvise` per group (thousands of small
    // ones) cost more in TLB flushes than the pages. (first, end, bytes)
    let released: Mutex<Option<(usize, usize, usize)>> = Mutex::new(None);
    let done = |g: &Group<'_>, result: &mut GroupResult| {
        if let (Some(base), Ok(o), Ok(n)) =
            (base, usize::try_from(g.offset), usize::try_from(g.size))
        {
            let (a, b) = (base + o, base + o.saturating_add(n).min(bytes.len()));
            let mut p = released.lock().unwrap_or_else(|e| e.into_inner());
            let (first, end, total) = p.get_or_insert((a, b, 0));
            *first = (*first).min(a);
            *end = (*end).max(b);
            *total += b.saturating_sub(a);
            if *total >= RELEASE_BATCH {
                input.release(*first..*end);
                *p = None;
            }
        }
        let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
        result.names = result
            .profiles
            .iter_mut()
            .map(|p| {
                p.functions
                    .iter_mut()
                    .map(|f| match names.get_key_value(&f.name) {
                        Some((shared, &n)) => {
                            f.name = Arc::clone(shared);
                            n
                        }
                        None => {
                            let n = names.len();
                            names.insert(Arc::clone(&f.name), n);
                            n
                        }
                    })
                    .collect()
            })
            .collect();
    };
    let results = run_parallel(&jobs, bytes, &done);
    if let Some((first, end, _)) = released.into_inner().unwrap_or_else(|e| e.into_inner()) {
        input.release(first..end);
    }
    let mut images = Vec::new();
    for (&g, result) in order.iter().zip(results) {
        let group = &groups[g];
        let share = won[2 + g];
        let GroupResult {
            profiles,
            rest,
            damage: d,
            names: ids,
        } = result;
        damage.extend(d);
        let mut weights: Vec<u64> = profiles.iter().map(|p| p.size).collect();
        weights.push(rest);
        let split = split_proportional(share, &weights);
        overhead += split[split.len() - 1];
        let mut ids = ids.into_iter();
        for (((entry, container), prof), &stored) in group.entries.iter().zip(profiles).zip(&split)
        {
            let names = ids.next().unwrap_or_default();
            if entry.is_host() {
                host += stored;
                continue;
            }
            if stored == 0 && prof.size == 0 {
                // An empty entry (a placeholder for a target with no
                // code) holds nothing.
                continue;
            }
            let (vendor, arch) = vendor_arch(entry);
            images.push(ImageRow {
                file,
                member: member.cloned(),
                container: *container,
                entry: entry.id.clone(),
                vendor,
                arch,
                built_for: ImageArch::of(entry),
                stored,
                profile: prof,
                names,
                relocatable: group.relocatable,
            });
        }
    }
    Space {
        host,
        overhead,
        images,
    }
}

/// Where a node lies: the container (`#k`) and whether in `__nv_relfatbin`.
#[derive(Clone, Copy, Default)]
struct Within {
    container: Option<usize>,
    relocatable: bool,
}

/// Gathers the claims of `node`'s subtree in the byte space of `source`.
fn collect<'a>(
    node: &'a Node,
    source: &Source,
    depth: usize,
    within: Within,
    claims: &mut Vec<(u64, u64, u8, Claimant)>,
    groups: &mut Vec<Group<'a>>,
    by_place: &mut HashMap<(u64, u64, bool), usize>,
) {
    if &node.file != source {
        return;
    }
    let rank = u8::try_from(depth * 2 + 1).unwrap_or(250).min(250);
    let offload_section = node.kind == NodeKind::Section
        && (objects::section_role(&node.name, 0, &[]).is_some()
            || objects::bundle_section_id(&node.name).is_some());
    if node.kind.is_container() || offload_section {
        if let (Some(o), Some(s)) = (node.offset, node.size) {
            claims.push((o, s, rank, Claimant::Overhead));
        }
    }
    let within = Within {
        container: node.index.or(within.container),
        relocatable: within.relocatable
            || (node.kind == NodeKind::Section && objects::is_nv_relfatbin(&node.name)),
    };
    let container = within.container;
    for e in &node.entries {
        let (offset, size, ccob) = match e.location {
            Location::File { offset, size } => (offset, size, false),
            Location::Ccob {
                ccob_offset,
                ccob_size,
                ..
            } => (ccob_offset, ccob_size, true),
            Location::Derived => continue,
        };
        let g = *by_place.entry((offset, size, ccob)).or_insert_with(|| {
            groups.push(Group {
                offset,
                size,
                ccob,
                relocatable: within.relocatable,
                entries: Vec::new(),
            });
            claims.push((
                offset,
                size,
                rank.saturating_add(1),
                Claimant::Group(groups.len() - 1),
            ));
            groups.len() - 1
        });
        groups[g].entries.push((e, container));
    }
    for c in &node.children {
        collect(c, source, depth + 1, within, claims, groups, by_place);
    }
}

/// What profiling a group gave: a profile per entry (in order), the
/// uncompressed bytes that are no entry's (a concatenated entry's table,
/// a bundle's header), and damage.
#[derive(Default)]
struct GroupResult {
    profiles: Vec<ImageProfile>,
    rest: u64,
    damage: Vec<String>,
    /// Per profile, its functions' numbers in [`Names`] (given as the
    /// names are interned).
    names: Vec<Vec<usize>>,
}

/// Profiles the groups on every core (each job on one thread), calling
/// `done` on each result as it is made (on the worker's thread).
fn run_parallel(
    jobs: &[&Group<'_>],
    bytes: &[u8],
    done: &(dyn Fn(&Group<'_>, &mut GroupResult) + Sync),
) -> Vec<GroupResult> {
    let threads = offload_cli::env::cores().min(16).min(jobs.len()).max(1);
    if threads == 1 {
        let mut scratch = Scratch::new(threads);
        return jobs
            .iter()
            .map(|g| profile_done(g, bytes, &mut scratch, done))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let budget = Budget {
        used: Mutex::new(0),
        freed: Condvar::new(),
    };
    let mut results: Vec<Option<GroupResult>> = (0..jobs.len()).map(|_| None).collect();
    let finished: Vec<Vec<(usize, GroupResult)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut scratch = Scratch::new(threads);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(g) = jobs.get(i) else { break };
                        let held = weight(g);
                        budget.take(held);
                        mine.push((i, profile_done(g, bytes, &mut scratch, done)));
                        budget.give(held);
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("profiling does not panic"))
            .collect()
    });
    for (i, r) in finished.into_iter().flatten() {
        results[i] = Some(r);
    }
    results.into_iter().map(|r| r.unwrap_or_default()).collect()
}

/// A worker's decoding buffer, kept between images, for images of at most
/// `most` bytes; larger ones are decoded into memory of their own, handed
/// back to the system after.
struct Scratch {
    buf: Vec<u8>,
    most: usize,
}

impl Scratch {
    /// One of `threads` workers' buffers: together they keep at most half
    /// of [`IN_FLIGHT`], between 1 and 16 MiB each. (Kept buffers save
    /// the system the faults of fresh memory: on onnxruntime-gpu's
    /// library at 2 workers, 10 MiB each took a tenth less CPU time than
    /// 4 MiB.)
    fn new(threads: usize) -> Scratch {
        let half = usize::try_from(IN_FLIGHT / 2).unwrap_or(usize::MAX);
        Scratch {
            buf: Vec::new(),
            most: (half / threads.max(1)).clamp(1 << 20, 16 << 20),
        }
    }
}

/// [`profile_group`], then `done` on its result.
fn profile_done(
    g: &Group<'_>,
    bytes: &[u8],
    scratch: &mut Scratch,
    done: &(dyn Fn(&Group<'_>, &mut GroupResult) + Sync),
) -> GroupResult {
    let mut r = profile_group(g, bytes, scratch);
    done(g, &mut r);
    r
}

/// Decodes and profiles one group's entries (`scratch`: the worker's
/// decoding buffer).
fn profile_group(g: &Group<'_>, bytes: &[u8], scratch: &mut Scratch) -> GroupResult {
    let stored = usize::try_from(g.offset)
        .ok()
        .zip(usize::try_from(g.offset.saturating_add(g.size)).ok())
        .and_then(|(a, b)| bytes.get(a..b))
        .unwrap_or(&[]);
    let mut damage = Vec::new();
    let mut profiles = Vec::new();
    let not_profiled = |size: u64, why: &str| ImageProfile::whole(ImageKind::Other, size, why);
    if g.ccob {
        let total = match hip_fatbin::ccob_bundle_header(stored) {
            Ok(b) => b.header.uncompressed_size,
            Err(e) => {
                damage.push(format!("compressed bundle at {}: {e}", g.offset));
                0
            }
        };
        let mut used = 0u64;
        for (e, _) in &g.entries {
            let Location::Ccob { offset, size, .. } = e.location else {
                continue;
            };
            used = used.saturating_add(size);
            let p = if size > MAX_IMAGE {
                not_profiled(size, "not profiled (too large)")
            } else {
                match hip_fatbin::ccob_entry(stored, offset, size) {
                    Ok(data) => profile::profile(&data),
                    Err(err) => {
                        damage.push(format!("compressed bundle entry {}: {err}", e.id));
                        not_profiled(size, "not decoded")
                    }
                }
            };
            profiles.push(p);
        }
        return GroupResult {
            profiles,
            rest: total.saturating_sub(used),
            damage,
            names: Vec::new(),
        };
    }
    // One stored payload: plain, or an NVIDIA entry (compressed, or
    // concatenated members).
    let first = g.entries[0].0;
    // A large image's memory comes from the system and goes back to it
    // when the image is done (the allocator would keep it, per thread).
    let mut large: Option<fsio::Anonymous> = None;
    let mut decoded: Option<usize> = None;
    if let Some(nv) = first.nvidia {
        if let (Some(codec), Some(recorded)) = (nv.codec, nv.uncompressed_size) {
            if nv.kind.is_opaque() {
                // NVVM IR in NVIDIA's own encoding: its size, no kernels.
                return GroupResult {
                    profiles: vec![ImageProfile::whole(
                        ImageKind::NvvmIr,
                        recorded,
                        "NVVM IR, not decoded",
                    )],
                    rest: 0,
                    damage,
                    names: Vec::new(),
                };
            }
            let out: Result<&mut [u8], String> = match usize::try_from(recorded) {
                Ok(n) if recorded <= MAX_IMAGE && n <= scratch.most => {
                    if scratch.buf.len() < n {
                        scratch.buf.resize(n, 0);
                    }
                    Ok(&mut scratch.buf[..n])
                }
                Ok(n) if recorded <= MAX_IMAGE => match fsio::Anonymous::new(n) {
                    Ok(m) => Ok(&mut large.insert(m)[..]),
                    Err(e) => Err(format!(
                        "cannot hold its {n} bytes: {}",
                        offload_cli::diag::os_error_text(&e)
                    )),
                },
                _ => Err(format!(
                    "records {recorded} bytes uncompressed, more than the {MAX_IMAGE} profiled at once"
                )),
            };
            let result = out.and_then(|out| {
                let n = out.len();
                profile::decode_nvidia(codec, stored, out).map(|()| n)
            });
            match result {
                Ok(n) => decoded = Some(n),
                Err(err) => {
                    damage.push(format!("fat binary entry {}: {err}", first.id));
                    for (e, _) in &g.entries {
                        profiles.push(not_profiled(
                            nv_size(e, recorded, g.entries.len()),
                            "not decoded",
                        ));
                    }
                    let used: u64 = profiles.iter().map(|p| p.size).sum();
                    return GroupResult {
                        profiles,
                        rest: recorded.saturating_sub(used),
                        damage,
                        names: Vec::new(),
                    };
                }
            }
        }
    }
    let whole: &[u8] = match (decoded, &large) {
        (Some(_), Some(m)) => m,
        (Some(n), None) => &scratch.buf[..n],
        (None, _) => stored,
    };
    let mut used = 0u64;
    for (e, _) in &g.entries {
        let image = match e.nvidia.and_then(|nv| nv.member) {
            Some((o, n)) => usize::try_from(o)
                .ok()
                .zip(usize::try_from(o.saturating_add(n)).ok())
                .and_then(|(a, b)| whole.get(a..b))
                .unwrap_or(&[]),
            None => whole,
        };
        used = used.saturating_add(image.len() as u64);
        // A stored entry's padding is the image's own.
        profiles.push(profile::profile(image));
    }
    GroupResult {
        profiles,
        rest: (whole.len() as u64).saturating_sub(used),
        damage,
        names: Vec::new(),
    }
}

/// The size of a member of a compressed entry that was not decoded.
fn nv_size(e: &Entry, recorded: u64, members: usize) -> u64 {
    match e.nvidia.and_then(|nv| nv.member) {
        Some((_, n)) => n,
        None if members == 1 => recorded,
        None => 0,
    }
}

/// The vendor and architecture an entry is for.
fn vendor_arch(e: &Entry) -> (String, String) {
    if let Some(nv) = e.nvidia {
        // The variant always (`sm_100f`, which cuobjdump lists as
        // `sm_100`): a family cubin is not an `sm_100` one, and its
        // functions are no duplicates of that one's. PTX apart from
        // cubins: `compute_90`, as nvcc's -gencode names virtual
        // architectures.
        let (number, suffix) = (nv.arch.number(), nv.arch.variant().suffix());
        let arch = match nv.kind {
            EntryKind::Ptx => format!("compute_{number}{suffix}"),
            // nvcc's `code=lto_90`.
            EntryKind::NvvmIr => format!("lto_{number}{suffix}"),
            _ => nv.arch.to_string(),
        };
        return ("nvidia".to_owned(), arch);
    }
    let triple = e.triple.as_ref().map_or("", |t| t.as_str());
    let arch = match e.target_text() {
        Some(t) => t.into_owned(),
        None => e.id.rsplit('-').next().unwrap_or("").to_owned(),
    };
    let vendor = match e.vendor {
        Vendor::Amd => "amd",
        Vendor::Nvidia => "nvidia",
        _ => triple.split('-').next().unwrap_or("other"),
    };
    (vendor.to_owned(), arch)
}

/// The choices of `offload size`.
pub struct Options {
    /// Kernels listed (text default 20; JSON default all).
    pub top: Option<usize>,
    /// Kernels whose (demangled or stored) name matches.
    pub filter: Option<regex::Regex>,
    /// Architectures kept in the kernel lists (none: all).
    pub arch: Vec<ArchFilter>,
}

/// One function over all images of one architecture.
#[derive(Clone, Debug)]
pub struct KernelRow {
    /// Architecture.
    pub arch: Arc<str>,
    /// Stored name (demangled where printed: [`demangle`]).
    pub name: Arc<str>,
    /// A kernel, not a device function.
    pub kernel: bool,
    /// Images holding it.
    pub copies: usize,
    /// Of those, images in `__nv_relfatbin` ([`ImageRow::relocatable`]):
    /// a function is a duplicate when the other copies are more than one.
    pub relocatable: usize,
    /// Uncompressed bytes, all copies.
    pub bytes: u64,
    /// File bytes, all copies.
    pub share: u64,
    /// Uncompressed bytes of the copies past the largest (relocatable
    /// copies not counted).
    pub extra_bytes: u64,
    /// File bytes of the copies past the largest (relocatable copies not
    /// counted).
    pub extra_share: u64,
    /// Where the copies are: (image index in [`Profiled::images`]).
    pub images: Vec<usize>,
}

/// The functions, one row per (architecture, name), largest first.
pub fn kernels(p: &Profiled, opts: &Options) -> Vec<KernelRow> {
    let selected = |img: &ImageRow| {
        opts.arch.is_empty()
            || opts
                .arch
                .iter()
                .any(|f| f.matches(&img.built_for, &img.arch))
    };
    let mut arch_of: HashMap<&str, usize> = HashMap::new();
    let mut archs: Vec<Arc<str>> = Vec::new();
    let mut rows: Vec<KernelRow> = Vec::new();
    // Per architecture, the row of each name number (`usize::MAX`: none
    // yet). Name numbers are dense, so no name is hashed here.
    let mut row_of: Vec<Vec<usize>> = Vec::new();
    // (largest bytes, its share) per row.
    let mut largest: Vec<(u64, u64)> = Vec::new();
    // The bytes and shares of the copies that are loaded (not relocatable).
    let mut loaded: Vec<(u64, u64)> = Vec::new();
    for (i, img) in p.images.iter().enumerate() {
        if !selected(img) {
            continue;
        }
        let a = *arch_of.entry(img.arch.as_str()).or_insert_with(|| {
            archs.push(img.arch.as_str().into());
            row_of.push(Vec::new());
            archs.len() - 1
        });
        let shares = img.shares();
        debug_assert_eq!(img.names.len(), img.profile.functions.len());
        for ((f, &share), &n) in img.profile.functions.iter().zip(&shares).zip(&img.names) {
            let of = &mut row_of[a];
            if of.len() <= n {
                of.resize(n + 1, usize::MAX);
            }
            if of[n] == usize::MAX {
                of[n] = rows.len();
                rows.push(KernelRow {
                    arch: Arc::clone(&archs[a]),
                    name: Arc::clone(&f.name),
                    kernel: f.kernel,
                    copies: 0,
                    relocatable: 0,
                    bytes: 0,
                    share: 0,
                    extra_bytes: 0,
                    extra_share: 0,
                    images: Vec::new(),
                });
                largest.push((0, 0));
                loaded.push((0, 0));
            }
            let r = of[n];
            let row = &mut rows[r];
            row.kernel |= f.kernel;
            row.copies += 1;
            row.bytes += f.bytes;
            row.share += share;
            row.images.push(i);
            if img.relocatable {
                row.relocatable += 1;
                continue;
            }
            let t = &mut loaded[r];
            *t = (t.0 + f.bytes, t.1 + share);
            let l = &mut largest[r];
            if f.bytes > l.0 || (f.bytes == l.0 && share > l.1) {
                *l = (f.bytes, share);
            }
        }
    }
    for ((r, &(b, s)), &(tb, ts)) in rows.iter_mut().zip(&largest).zip(&loaded) {
        r.extra_bytes = tb - b;
        r.extra_share = ts.saturating_sub(s);
    }
    if let Some(re) = &opts.filter {
        // Each name demangled once (a library repeats its names per
        // architecture), and only to be matched.
        let mut matches: BytesMap<&str, bool> = BytesMap::default();
        let mut keep = Vec::with_capacity(rows.len());
        for r in &rows {
            keep.push(
                *matches
                    .entry(&r.name)
                    .or_insert_with(|| re.is_match(&demangle(&r.name)) || re.is_match(&r.name)),
            );
        }
        let mut keep = keep.into_iter();
        rows.retain(|_| keep.next().unwrap_or(false));
    }
    sort_rows(&mut rows, |r| (r.share, r.bytes));
    rows
}

/// Sorts `rows` by `size` (largest first), then architecture, then name.
/// The sizes and the architecture's place are compared as one number, so
/// that names (hundreds of bytes, often with long common prefixes) are
/// compared only between rows whose numbers tie.
fn sort_rows<R: std::borrow::Borrow<KernelRow>>(
    rows: &mut [R],
    size: impl Fn(&KernelRow) -> (u64, u64),
) {
    let mut archs: Vec<&str> = rows.iter().map(|r| &*r.borrow().arch).collect();
    archs.sort_unstable();
    archs.dedup();
    let place: HashMap<&str, u32> = archs
        .iter()
        .enumerate()
        .map(|(i, a)| (*a, i as u32))
        .collect();
    let key = |r: &KernelRow| {
        let (a, b) = size(r);
        (
            std::cmp::Reverse(a),
            std::cmp::Reverse(b),
            place.get(&*r.arch).copied().unwrap_or(u32::MAX),
        )
    };
    let mut keyed: Vec<_> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (key(r.borrow()), i))
        .collect();
    keyed.sort_unstable_by(|(ka, a), (kb, b)| {
        ka.cmp(kb)
            .then_with(|| rows[*a].borrow().name.cmp(&rows[*b].borrow().name))
            .then(a.cmp(b))
    });
    // Row `order[k]` goes to place `k`: each cycle of the permutation
    // by swaps.
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    let mut placed = vec![false; order.len()];
    for start in 0..order.len() {
        let mut at = start;
        while !placed[at] && order[at] != start {
            rows.swap(at, order[at]);
            placed[at] = true;
            at = order[at];
        }
        placed[at] = true;
    }
}

/// A C++ name demangled (Itanium ABI); other names as they are.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_owned();
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_owned())
}

/// Per architecture over all files: (vendor, images, kernels, functions,
/// stored, uncompressed).
#[derive(Clone, Debug, Default)]
pub struct ArchRow {
    /// `nvidia`, `amd`.
    pub vendor: String,
    /// The architecture.
    pub arch: String,
    /// What its images are.
    pub kind: String,
    /// Images.
    pub images: usize,
    /// Kernels (entry points) in them, copies counted.
    pub kernels: usize,
    /// Device functions that are no kernels, copies counted.
    pub functions: usize,
    /// File bytes.
    pub stored: u64,
    /// Uncompressed bytes.
    pub uncompressed: u64,
    /// Uncompressed bytes in no function.
    pub shared: u64,
}

/// The architectures of file `file` (all files: `None`), sorted by file
/// bytes.
pub fn archs(p: &Profiled, file: Option<usize>) -> Vec<ArchRow> {
    let mut rows: BTreeMap<String, ArchRow> = BTreeMap::new();
    for img in p.images.iter().filter(|i| file.is_none_or(|f| i.file == f)) {
        let r = rows.entry(img.arch.clone()).or_default();
        r.vendor = img.vendor.clone();
        r.arch = img.arch.clone();
        let kind = img.profile.kind.name();
        if r.kind.is_empty() {
            r.kind = kind.to_owned();
        } else if !r.kind.split('+').any(|k| k == kind) {
            r.kind = format!("{}+{kind}", r.kind);
        }
        r.images += 1;
        r.kernels += img.profile.functions.iter().filter(|f| f.kernel).count();
        r.functions += img.profile.functions.iter().filter(|f| !f.kernel).count();
        r.stored += img.stored;
        r.uncompressed += img.profile.size;
        r.shared += img.profile.shared.iter().map(|s| s.bytes).sum::<u64>();
    }
    let mut out: Vec<ArchRow> = rows.into_values().collect();
    out.sort_by(|a, b| b.stored.cmp(&a.stored).then(a.arch.cmp(&b.arch)));
    out
}

/// `12,345`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_owned();
    }
    format!("{:.2}%", part as f64 * 100.0 / whole as f64)
}

/// The table for people.
pub fn text(p: &Profiled, opts: &Options, out: &mut String) {
    use std::fmt::Write;
    let all: u64 = p.files.iter().map(|f| f.size).sum();
    for (i, f) in p.files.iter().enumerate() {
        let device: u64 = p
            .images
            .iter()
            .filter(|img| img.file == i)
            .map(|img| img.stored)
            .sum();
        let _ = writeln!(out, "{}: {} bytes", f.path, grouped(f.size));
        let line = |out: &mut String, what: &str, n: u64| {
            let _ = writeln!(
                out,
                "  {what:<28}{:>15}  {:>7}",
                grouped(n),
                percent(n, f.size)
            );
        };
        line(out, "host code and data", f.host);
        if f.other > 0 {
            line(out, "other members, zip records", f.other);
        }
        line(out, "container overhead", f.overhead);
        line(out, "device code", device);
        let rows = archs(p, Some(i));
        if !rows.is_empty() {
            let _ = writeln!(
                out,
                "    {:<18} {:<12} {:>7} {:>8} {:>7} {:>15} {:>8} {:>15}",
                "ARCH", "KIND", "IMAGES", "KERNELS", "FUNCS", "FILE BYTES", "SHARE", "UNCOMPRESSED"
            );
        }
        for r in &rows {
            let _ = writeln!(
                out,
                "    {:<18} {:<12} {:>7} {:>8} {:>7} {:>15} {:>8} {:>15}",
                r.arch,
                r.kind,
                r.images,
                r.kernels,
                r.functions,
                grouped(r.stored),
                percent(r.stored, f.size),
                grouped(r.uncompressed)
            );
        }
        line(out, "total", f.host + f.other + f.overhead + device);
        out.push('\n');
    }
    let rows = kernels(p, opts);
    let top = opts.top.unwrap_or(20);
    let what = if opts.filter.is_some() || !opts.arch.is_empty() {
        " (selected)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "Largest functions{what}: {} of {} (by file bytes; * = device function, not a kernel)",
        top.min(rows.len()),
        rows.len()
    );
    let _ = writeln!(
        out,
        "  {:>15} {:>8} {:>15} {:>6}  {:<14} NAME",
        "FILE BYTES", "SHARE", "UNCOMPRESSED", "COPIES", "ARCH"
    );
    for r in rows.iter().take(top) {
        let _ = writeln!(
            out,
            "  {:>15} {:>8} {:>15} {:>6}  {:<14} {}{}",
            grouped(r.share),
            percent(r.share, all),
            grouped(r.bytes),
            r.copies,
            r.arch,
            if r.kernel { "" } else { "* " },
            demangle(&r.name)
        );
    }
    let dups = duplicates(&rows);
    let extra: u64 = dups.iter().map(|r| r.extra_share).sum();
    let extra_u: u64 = dups.iter().map(|r| r.extra_bytes).sum();
    out.push('\n');
    let _ = writeln!(
        out,
        "Duplicates{what}: {} functions in more than one image of the same architecture; \
         the extra copies take {} file bytes ({} uncompressed)",
        dups.len(),
        grouped(extra),
        grouped(extra_u)
    );
    if !dups.is_empty() {
        let _ = writeln!(
            out,
            "  {:>15} {:>15} {:>6}  {:<14} NAME",
            "EXTRA BYTES", "UNCOMPRESSED", "COPIES", "ARCH"
        );
    }
    for r in dups.iter().take(top) {
        let _ = writeln!(
            out,
            "  {:>15} {:>15} {:>6}  {:<14} {}{}",
            grouped(r.extra_share),
            grouped(r.extra_bytes),
            r.copies - r.relocatable,
            r.arch,
            if r.kernel { "" } else { "* " },
            demangle(&r.name)
        );
    }
}

/// The JSON for scripts (docs/tools/offload-json.md, `offload size`):
/// each function name once (`names`), referred to by index.
pub fn json(p: &Profiled, opts: &Options, out: &mut String) {
    use std::fmt::Write;
    // Names in first-seen order.
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&Arc<str>> = Vec::new();
    for img in &p.images {
        for f in &img.profile.functions {
            index.entry(&f.name).or_insert_with(|| {
                names.push(&f.name);
                names.len() - 1
            });
        }
    }
    out.push_str("{\"schema_version\":1,\"command\":\"size\",\"names\":[");
    for (k, n) in names.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"name\":{},\"demangled\":{}}}",
            js(n),
            js(&demangle(n))
        );
    }
    out.push_str("],\"files\":[");
    for (i, f) in p.files.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let device: u64 = p
            .images
            .iter()
            .filter(|img| img.file == i)
            .map(|img| img.stored)
            .sum();
        let _ = write!(
            out,
            "{{\"path\":{},\"size\":{},\"host\":{},\"other\":{},\"overhead\":{},\"device\":{},\"archs\":[",
            js(&f.path),
            f.size,
            f.host,
            f.other,
            f.overhead,
            device
        );
        for (j, r) in archs(p, Some(i)).iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"vendor\":{},\"arch\":{},\"kind\":{},\"images\":{},\"kernels\":{},\"functions\":{},\"stored\":{},\"uncompressed\":{},\"shared\":{}}}",
                js(&r.vendor),
                js(&r.arch),
                js(&r.kind),
                r.images,
                r.kernels,
                r.functions,
                r.stored,
                r.uncompressed,
                r.shared
            );
        }
        out.push_str("],\"damage\":[");
        for (k, d) in f.damage.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str(&js(d));
        }
        out.push_str("]}");
    }
    out.push_str("],\"images\":[");
    for (n, img) in p.images.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let shares = img.shares();
        let nf = img.profile.functions.len();
        let _ = write!(
            out,
            "{{\"file\":{},\"member\":{},\"container\":{},\"entry\":{},\"vendor\":{},\"arch\":{},\"kind\":{},\"stored\":{},\"uncompressed\":{},\"functions\":[",
            img.file,
            img.member.as_deref().map_or("null".to_owned(), js),
            img.container.map_or("null".to_owned(), |c| c.to_string()),
            js(&img.entry),
            js(&img.vendor),
            js(&img.arch),
            js(img.profile.kind.name()),
            img.stored,
            img.profile.size,
        );
        for (k, (f, share)) in img.profile.functions.iter().zip(&shares).enumerate() {
            if k > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"name\":{},\"kernel\":{},\"code\":{},\"bytes\":{},\"share\":{}}}",
                index[&*f.name], f.kernel, f.code, f.bytes, share
            );
        }
        out.push_str("],\"shared\":[");
        for (k, (s, share)) in img.profile.shared.iter().zip(&shares[nf..]).enumerate() {
            if k > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"what\":{},\"bytes\":{},\"share\":{}}}",
                js(&s.what),
                s.bytes,
                share
            );
        }
        out.push_str("],\"damage\":[");
        for (k, d) in img.profile.damage.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str(&js(d));
        }
        out.push_str("]}");
    }
    out.push_str("],\"functions\":[");
    let rows = kernels(p, opts);
    let take = opts.top.unwrap_or(usize::MAX);
    for (k, r) in rows.iter().take(take).enumerate() {
        if k > 0 {
            out.push(',');
        }
        kernel_json(r, index[&*r.name], out);
    }
    out.push_str("],\"duplicates\":[");
    for (k, r) in duplicates(&rows).iter().take(take).enumerate() {
        if k > 0 {
            out.push(',');
        }
        kernel_json(r, index[&*r.name], out);
    }
    out.push_str("]}\n");
}

/// The rows of functions with more than one copy, by what the extra
/// copies take.
fn duplicates(rows: &[KernelRow]) -> Vec<&KernelRow> {
    let mut dups: Vec<&KernelRow> = rows
        .iter()
        .filter(|r| r.copies - r.relocatable > 1)
        .collect();
    sort_rows(&mut dups, |r| (r.extra_share, r.extra_bytes));
    dups
}

fn kernel_json(r: &KernelRow, name: usize, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(
        out,
        "{{\"arch\":{},\"name\":{name},\"kernel\":{},\"copies\":{},\"relocatable\":{},\"bytes\":{},\"share\":{},\"extra_bytes\":{},\"extra_share\":{},\"images\":[",
        js(&r.arch),
        r.kernel,
        r.copies,
        r.relocatable,
        r.bytes,
        r.share,
        r.extra_bytes,
        r.extra_share
    );
    for (k, &i) in r.images.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(out, "{i}");
    }
    out.push_str("]}");
}
