//! Finding the offload data inside an input, at any depth.
//!
//! Everything here reads headers only: entry payloads are looked at for
//! their first bytes (to name them), compressed bundles are decoded only as
//! far as their entry table.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::rc::Rc;

use offload_cli::fsio;
use offload_format::archive::{thin_member_path, Archive, MemberContent};
use offload_format::hip_fatbin::{self, ItemKind};
use offload_format::identify::{identify, FileKind};
use offload_format::nvidia::{fatbin, CudaArch, DecodeError};
use offload_format::objfile::macho;
use offload_format::offload_binary::{self, read as ob_read};
use offload_format::payload::{self, Payload};
use offload_format::triple::Triple;
use offload_format::{bitcode, bundle, entry_id, text_bundle, zip};

use crate::model::{
    share, Damage, Entry, Linkage, Location, Node, NodeKind, NvEntry, OffloadKind, Packed,
    PackedFatbin, Source, Target, Vendor,
};
use crate::objects;
use crate::zipped;

/// How deep containers may nest before the walk stops.
const MAX_DEPTH: usize = 8;

/// How many uncompressed bundles' (or embedded fat binary containers')
/// pages are dropped together: each went through the mapping for its
/// headers only, a page or two and what the kernel maps around them (64
/// KiB), so 64 of them hold about 4 MiB.
const PENDING_BUNDLES: usize = 64;

/// The triple of every NVIDIA entry, parsed once: a library has tens of
/// thousands of entries, and parsing it again for each showed in the walk.
fn nvptx_triple() -> Triple {
    static NVPTX: std::sync::OnceLock<Triple> = std::sync::OnceLock::new();
    NVPTX
        .get_or_init(|| Triple::new("nvptx64-nvidia-cuda"))
        .clone()
}

/// How many first bytes of a payload are read (or, inside a compressed
/// bundle, decoded) to name it: what [`payload::classify`] looks at.
const HEAD: usize = 4096;

/// How far into a compressed bundle `ls` decodes to name the payloads
/// (without `--verify`): the codec's window, and so the memory, grows
/// with it (zstd keeps up to the frame's window of what it produced).
/// Real bundles are well below it (13 MB the largest seen).
const HEADS_DECODE_MAX: u64 = 32 << 20;

/// How many are read first: enough for every header and magic
/// [`payload::classify`] and [`is_container`] look at (PTX text, which
/// may need more, is looked at again with [`HEAD`] bytes).
const FIRST: usize = 256;

/// Where the bytes being looked at lie.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// At this absolute offset of the node's file.
    At(u64),
    /// Not contiguous in any file (decoded from bitcode).
    Derived,
}

impl Place {
    fn plus(self, n: usize) -> Place {
        match self {
            Place::At(b) => Place::At(b + n as u64),
            Place::Derived => Place::Derived,
        }
    }

    fn offset(self) -> Option<u64> {
        match self {
            Place::At(b) => Some(b),
            Place::Derived => None,
        }
    }
}

/// Walks inputs; numbers containers in listing order.
#[derive(Default)]
pub struct Walker {
    next_index: usize,
    /// The file being read, so that pages read through its mapping can be
    /// dropped once looked at (a listing of a large library then holds a
    /// few pages at a time, not every page it touched).
    current: Option<Rc<fsio::Input>>,
    /// Where the bytes being read start in `current`: 0, or the offset of
    /// a stored zip member read in place (offsets in the tree are the
    /// member's own).
    base: usize,
    /// Uncompressed bundles of `current` done with but not yet dropped:
    /// the span they cover and how many (see [`Walker::done_with_bundle`]).
    pending: Option<(usize, usize, usize)>,
    /// Decompress every CCOB completely: check its hash and name the
    /// payloads inside; decode every compressed NVIDIA entry to its end
    /// and check its size (`ls --verify`).
    pub verify: bool,
    /// Read NVIDIA entries' headers only: compressed payloads are not
    /// decoded to be named (`ls --summary`, `thin --dry-run`, which need
    /// the architectures and sizes the headers give; damage inside a
    /// compressed stream is then not seen).
    headers_only: bool,
    /// Compressed NVIDIA payloads stored in the input file itself are not
    /// decoded to be named: [`check_deferred`] decodes them later, beside
    /// other work (`thin`, which writes while they are checked).
    defer: bool,
    /// Sound fat binary containers are packed ([`Node::packed`]) rather
    /// than kept as nodes (`thin`, which needs their entries' typed facts
    /// and where they are, not a listing).
    pack: bool,
    /// The file given to [`Walker::input`]: the one whose payloads are
    /// deferred.
    top: Option<Rc<fsio::Input>>,
    /// NVIDIA entries met so far in the current file: (ELF, PTX, NVVM IR), for
    /// cuobjdump's numbering.
    nv_numbers: (usize, usize, usize),
    /// The same for the sections cuobjdump does not list, by name.
    nv_unlisted: HashMap<String, (usize, usize, usize)>,
    /// Where the fat binaries being read are: `None` where cuobjdump lists
    /// them, else the name of the section it ignores.
    nv_section: Option<String>,
}

/// Reads an input file as every subcommand does: a regular file (or `-`,
/// standard input) with [`fsio::read_regular`]; devices, FIFOs and
/// sockets are refused.
pub fn open(path: &Path) -> io::Result<Rc<fsio::Input>> {
    fsio::read_regular(path.as_os_str()).map(Rc::new)
}

/// The offset of `inner` inside `outer`, when it is a sub-slice.
pub(crate) fn offset_in(outer: &[u8], inner: &[u8]) -> Option<usize> {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    (i >= o && i + inner.len() <= o + outer.len()).then(|| i - o)
}

impl Walker {
    /// Reads NVIDIA entries' headers only (see the field).
    pub fn headers_only(mut self, on: bool) -> Walker {
        self.headers_only = on;
        self
    }

    /// Defers the naming of compressed NVIDIA payloads (see the field):
    /// the model then holds their headers' facts only, as with
    /// [`Walker::headers_only`], and [`check_deferred`] does the rest.
    pub fn defer_decodes(mut self, on: bool) -> Walker {
        self.defer = on;
        self
    }

    /// Packs sound fat binary containers (see the field).
    pub fn pack_fatbins(mut self, on: bool) -> Walker {
        self.pack = on;
        self
    }

    /// Whether the payloads of fat binary entries at `place` are left to
    /// [`check_deferred`]: deferring, and `place` lies in the file given
    /// to [`Walker::input`] at the offsets the model records.
    fn defers(&self, place: Place) -> bool {
        self.defer
            && matches!(place, Place::At(_))
            && self.base == 0
            && matches!((&self.current, &self.top), (Some(c), Some(t)) if Rc::ptr_eq(c, t))
    }

    /// Inspects the bytes of the input file `path`, already read (or the
    /// error met reading it, which becomes damage of the file node).
    pub fn input(&mut self, path: &Path, input: io::Result<Rc<fsio::Input>>) -> Node {
        // Containers are numbered per input.
        self.next_index = 0;
        self.top = input.as_ref().ok().cloned();
        self.nv_numbers = (0, 0, 0);
        self.nv_unlisted.clear();
        let mut node = Node::new(
            NodeKind::File,
            path.display().to_string(),
            path.to_path_buf(),
        );
        match input {
            Ok(input) if zip::has_magic(&input) => {
                node.size = Some(input.len() as u64);
                node.offset = Some(0);
                self.zip_archive(&input, path, &mut node);
                input.release(0..input.len());
            }
            Ok(input) => {
                input.advise_random();
                node.size = Some(input.len() as u64);
                node.offset = Some(0);
                self.inspect_in(&input, 0, &input, &mut node, 0);
            }
            Err(e) => node.damage.push(Damage {
                offset: None,
                message: format!("cannot read: {}", offload_cli::diag::os_error_text(&e)),
            }),
        }
        self.top = None;
        node
    }

    /// The members of a zip archive (a Python wheel) that may hold device
    /// code, each read as a file of its own: its offsets are those of its
    /// decoded bytes, its NVIDIA entries numbered as cuobjdump numbers
    /// them in the unpacked file. Members whose first bytes are no format
    /// the walk reads are passed over; a compressed one that is is
    /// decoded into a scratch file ([`zipped::decode`]), not memory.
    fn zip_archive(&mut self, data: &Rc<fsio::Input>, path: &Path, node: &mut Node) {
        let wheel = path.extension().is_some_and(|e| e == "whl");
        node.detail = Some(if wheel { "Python wheel" } else { "zip archive" }.to_owned());
        let archive = match zip::Archive::parse(data) {
            Ok(a) => a,
            Err(e) => {
                node.damage.push(Damage {
                    offset: None,
                    message: format!("zip archive: {e}"),
                });
                return;
            }
        };
        for (index, m) in archive.members.iter().enumerate() {
            if m.is_dir() || m.uncompressed_size == 0 {
                continue;
            }
            let head = match zipped::head(m) {
                Ok(h) => h,
                Err(e) => {
                    node.damage.push(Damage {
                        offset: Some(m.local_offset),
                        message: format!("zip archive: {e}"),
                    });
                    continue;
                }
            };
            if !worth_reading(&head) {
                continue;
            }
            let name = m.name_lossy();
            let source = Source::ZipMember {
                zip: path.to_path_buf(),
                index,
                name: name.clone(),
            };
            let mut child = Node::new(NodeKind::Member, name, source);
            child.offset = Some(0);
            child.size = Some(m.uncompressed_size);
            child.detail = Some(format!("zip member, {}", m.method));
            match m.stored() {
                // In place: the member is read where it lies, the
                // wheel's pages dropped as they are looked at (the
                // member's offsets shifted by where it starts).
                Some(bytes) => {
                    self.nv_numbers = (0, 0, 0);
                    self.nv_unlisted.clear();
                    let base = usize::try_from(m.data_offset).unwrap_or(usize::MAX);
                    self.inspect_in(data, base, bytes, &mut child, 1);
                }
                None => match zipped::decode(data, m) {
                    Ok(input) => self.decoded(&mut child, Rc::new(input), 1),
                    // The message names the member.
                    Err(e) => node.damage.push(Damage {
                        offset: Some(m.local_offset),
                        message: format!("zip archive: {e}"),
                    }),
                },
            }

            if child.is_interesting() {
                node.children.push(child);
            }
        }
    }

    /// Inspects `input`, the decoded bytes of a zip member, as the file
    /// `node` stands for, at `depth`: its own NVIDIA numbering, its pages
    /// dropped as they are looked at.
    pub fn decoded(&mut self, node: &mut Node, input: Rc<fsio::Input>, depth: usize) {
        self.nv_numbers = (0, 0, 0);
        self.nv_unlisted.clear();
        input.advise_random();
        self.inspect_in(&input, 0, &input, node, depth);
    }

    /// Inspects `data` (the bytes of `input` from `base` on) as the whole
    /// file or member `node` stands for, at `depth`, with `input` the one
    /// whose pages are dropped as they are looked at; the outer input is
    /// that again afterwards.
    fn inspect_in(
        &mut self,
        input: &Rc<fsio::Input>,
        base: usize,
        data: &[u8],
        node: &mut Node,
        depth: usize,
    ) {
        self.flush_pending();
        let outer = self.current.replace(input.clone());
        let outer_base = std::mem::replace(&mut self.base, base);
        self.inspect(data, Place::At(0), node, depth, true);
        self.flush_pending();
        self.current = outer;
        self.base = outer_base;
    }

    /// Drops the pages of `len` bytes at `place` from this process's
    /// memory (they are read again if touched).
    fn done_with(&mut self, place: Place, len: usize) {
        self.flush_pending();
        if let (Some(input), Place::At(at)) = (&self.current, place) {
            if let Ok(at) = usize::try_from(at) {
                let at = at.saturating_add(self.base);
                input.release(at..at.saturating_add(len));
            }
        }
    }

    /// [`Walker::done_with`] for an uncompressed bundle, of which only the
    /// header (and the zero bytes after it) went through the mapping: a
    /// page or two. The pages of [`PENDING_BUNDLES`] such bundles are
    /// dropped together, one call instead of one per bundle.
    fn done_with_bundle(&mut self, place: Place, len: usize) {
        let Some(at) = place.offset().and_then(|a| usize::try_from(a).ok()) else {
            return;
        };
        if self.hold(at, len) >= PENDING_BUNDLES {
            self.flush_pending();
        }
    }

    /// Adds `len` bytes at `at` to the pending pages; returns how many
    /// pieces are pending.
    fn hold(&mut self, at: usize, len: usize) -> usize {
        let end = at.saturating_add(len);
        let (start, stop, count) = self.pending.take().unwrap_or((at, end, 0));
        self.pending = Some((start.min(at), stop.max(end), count + 1));
        count + 1
    }

    /// Drops what [`Walker::done_with_bundle`] has gathered.
    fn flush_pending(&mut self) {
        if let (Some((start, end, _)), Some(input)) = (self.pending.take(), &self.current) {
            input.release(start.saturating_add(self.base)..end.saturating_add(self.base));
        }
    }

    fn index(&mut self) -> usize {
        self.next_index += 1;
        self.next_index - 1
    }

    /// Looks at `data` and adds what it holds to `node`. `top`: the data is
    /// a whole file or member (so an unknown format is not damage).
    fn inspect(&mut self, data: &[u8], place: Place, node: &mut Node, depth: usize, top: bool) {
        if depth > MAX_DEPTH {
            node.damage.push(Damage {
                offset: place.offset(),
                message: format!("containers nested deeper than {MAX_DEPTH} levels; not read"),
            });
            return;
        }
        // The sniffer follows LLVM, which names only bundles whose entry
        // count starts with "__" (LLVM's magic is two bytes longer than the
        // bundle's); the bundle reader's own check sees every bundle.
        if bundle::has_magic(data) {
            return self.region(data, place, &[], node, depth);
        }
        match identify(data) {
            FileKind::Archive | FileKind::ThinArchive => self.archive(data, place, node, depth),
            FileKind::OffloadBundle | FileKind::Ccob => self.region(data, place, &[], node, depth),
            FileKind::OffloadBinary => self.offload_binaries(data, place, node, depth),
            FileKind::NvFatbin => self.fatbins(data, place, node, false),
            FileKind::Bitcode | FileKind::BitcodeWrapper => self.bitcode(data, node, depth),
            FileKind::MachOUniversal => self.universal(data, place, node, depth),
            _ => self.other(data, place, node, depth, top),
        }
    }

    /// Object files, text bundles, and what is none of these.
    fn other(&mut self, data: &[u8], place: Place, node: &mut Node, depth: usize, top: bool) {
        if let Some(obj) = objects::open(data) {
            match obj {
                Ok(obj) => self.object(data, &obj, place, node, depth),
                Err(e) => node.damage.push(Damage {
                    offset: place.offset(),
                    message: e.to_string(),
                }),
            }
        } else if let Some(comment) = text_bundle_comment(data) {
            self.text_bundle(data, comment, place, node);
        } else if !top {
            node.damage.push(Damage {
                offset: place.offset(),
                message: "not a format this tool reads".to_owned(),
            });
        }
    }

    /// The slices of a Mach-O universal file, each read as a file.
    fn universal(&mut self, data: &[u8], place: Place, node: &mut Node, depth: usize) {
        node.detail
            .get_or_insert_with(|| "Mach-O universal file".to_owned());
        let slices = match macho::parse_fat_table(data) {
            Ok(s) => s,
            Err(e) => {
                node.damage.push(Damage {
                    offset: place.offset(),
                    message: format!("universal file: {e}"),
                });
                return;
            }
        };
        for slice in slices {
            let name = cpu_type_name(slice.cputype);
            let Some(bytes) = slice.data(data) else {
                node.damage.push(Damage {
                    offset: place.offset(),
                    message: format!(
                        "universal file: the {name} slice (offset {}, size {}) lies outside the file",
                        slice.offset, slice.size
                    ),
                });
                continue;
            };
            let at = place.plus(offset_in(data, bytes).unwrap_or(0));
            self.nested_file(NodeKind::Slice, name, bytes, at, node, depth);
        }
    }

    /// Reads `bytes`, a whole file found at `at` (an archive member, a
    /// universal file's slice), as a child of `node`, kept if it holds
    /// anything.
    fn nested_file(
        &mut self,
        kind: NodeKind,
        name: String,
        bytes: &[u8],
        at: Place,
        node: &mut Node,
        depth: usize,
    ) {
        let mut child = Node::new(kind, name, node.file.clone());
        child.offset = at.offset();
        child.size = Some(bytes.len() as u64);
        self.inspect(bytes, at, &mut child, depth + 1, true);
        if child.is_interesting() {
            node.children.push(child);
        }
    }

    fn archive(&mut self, data: &[u8], place: Place, node: &mut Node, depth: usize) {
        node.detail.get_or_insert_with(|| "archive".to_owned());
        let archive = match Archive::parse(data) {
            Ok(a) => a,
            Err(e) => {
                node.damage.push(Damage {
                    offset: place.offset(),
                    message: format!("archive: {e}"),
                });
                return;
            }
        };
        for member in archive.members() {
            let member = match member {
                Ok(m) => m,
                Err(e) => {
                    node.damage.push(Damage {
                        offset: place.offset(),
                        message: format!("archive: {e}"),
                    });
                    break;
                }
            };
            let name = String::from_utf8_lossy(member.name).into_owned();
            match member.content {
                MemberContent::Inline(bytes) => {
                    let at = place.plus(offset_in(data, bytes).unwrap_or(0));
                    self.nested_file(NodeKind::Member, name, bytes, at, node, depth);
                }
                MemberContent::Thin { .. } => {
                    let Source::File(archive) = &node.file else {
                        node.damage.push(Damage {
                            offset: place.offset(),
                            message: "a thin archive inside a zip archive: its members, \
                                      files beside it, are not read"
                                .to_owned(),
                        });
                        break;
                    };
                    let path = thin_member_path(archive, member.name);
                    let mut child = Node::new(NodeKind::Member, name, path.clone());
                    child.detail = Some(format!("thin member, read from {}", path.display()));
                    match fsio::read_input(path.as_os_str()) {
                        Ok(input) => {
                            let input = Rc::new(input);
                            child.offset = Some(0);
                            child.size = Some(input.len() as u64);
                            self.inspect_in(&input, 0, &input, &mut child, depth + 1);
                        }
                        Err(e) => child.damage.push(Damage {
                            offset: None,
                            message: format!(
                                "thin member {}: {}",
                                path.display(),
                                offload_cli::diag::os_error_text(&e)
                            ),
                        }),
                    }
                    if child.is_interesting() {
                        node.children.push(child);
                    }
                }
            }
        }
    }

    fn object(
        &mut self,
        data: &[u8],
        obj: &objects::Object<'_>,
        place: Place,
        node: &mut Node,
        depth: usize,
    ) {
        node.detail = Some(obj.format.clone());
        node.linkage = Some(if obj.relocatable {
            Linkage::Relocatable
        } else {
            Linkage::Linked
        });
        node.damage.extend(obj.damage.iter().map(|m| Damage {
            offset: place.offset(),
            message: m.clone(),
        }));
        let mut object_bundle: Option<Node> = None;
        let has_nv_fatbin = obj.sections.iter().any(|s| objects::is_nv_fatbin(&s.name));
        for sec in &obj.sections {
            let at = offset_in(data, sec.data);
            let sec_place = match at {
                Some(a) => place.plus(a),
                None => Place::Derived,
            };
            if let Some(id) = objects::bundle_section_id(&sec.name) {
                let ob = object_bundle.get_or_insert_with(|| {
                    let mut n = Node::new(NodeKind::ObjectBundle, "sections", node.file.clone());
                    n.detail = Some("__CLANG_OFFLOAD_BUNDLE__ sections".to_owned());
                    n.index = Some(self.index());
                    n
                });
                let entry = bundle_entry(id, sec.data, sec_place);
                ob.entries.push(entry);
                continue;
            }
            let role = objects::section_role(&sec.name, sec.kind, sec.data);
            let Some(role) = role else {
                if objects::may_embed_images(&sec.name) {
                    self.embedded_images(&sec.name, sec.data, sec_place, node);
                }
                continue;
            };
            let mut child = Node::new(NodeKind::Section, sec.name.clone(), node.file.clone());
            child.offset = sec_place.offset();
            child.size = Some(sec.data.len() as u64);
            match role {
                objects::Role::HipFatbin => {
                    let starts = match obj.hip_wrapper_starts(sec) {
                        Ok(s) => s,
                        Err(e) => {
                            child.damage.push(Damage {
                                offset: sec_place.offset(),
                                message: format!("wrapper records: {e}"),
                            });
                            Vec::new()
                        }
                    };
                    if !starts.is_empty() {
                        child.detail = Some(format!(
                            "bundle starts from {} wrapper record(s)",
                            starts.len()
                        ));
                    }
                    self.region(sec.data, sec_place, &starts, &mut child, depth);
                }
                objects::Role::OffloadBinaries => {
                    self.offload_binaries(sec.data, sec_place, &mut child, depth)
                }
                objects::Role::Fatbin => {
                    // cuobjdump lists `.nv_fatbin` where there is one, else
                    // `__nv_relfatbin`; other sections are not its.
                    self.nv_section = (has_nv_fatbin && !objects::is_nv_fatbin(&sec.name))
                        .then(|| sec.name.clone());
                    self.fatbins(sec.data, sec_place, &mut child, false);
                    self.nv_section = None;
                }
                objects::Role::Sniff if fatbin::has_magic(sec.data) => {
                    // Not a section made for fat binaries: they lie among
                    // other data (cuBLASLt's `.cask_resource`).
                    self.nv_section = Some(sec.name.clone());
                    self.fatbins(sec.data, sec_place, &mut child, true);
                    self.nv_section = None;
                }
                objects::Role::Sniff => {
                    self.inspect(sec.data, sec_place, &mut child, depth + 1, false)
                }
            }
            if child.is_interesting() {
                node.children.push(child);
            }
        }
        if let Some(ob) = object_bundle {
            node.children.push(ob);
        }
    }

    /// NVIDIA images embedded among a data section's other bytes
    /// (`.rodata`, `.data`, `.ldata`): the fat binary containers and bare
    /// cubins [`offload_format::profile::embedded::scan`] validates, listed
    /// in a section node of their own, numbered apart from cuobjdump's
    /// (it does not list them).
    fn embedded_images(&mut self, name: &str, data: &[u8], place: Place, node: &mut Node) {
        use offload_format::profile::embedded::{self, Found, Image};
        // A piece at a time, each piece's pages let go of once scanned
        // (cuFFT's .ldata is 280 MB), on the file's 8-byte boundaries.
        let phase = place.offset().map_or(0, |o| (o % 8) as usize);
        let mut found = Found::default();
        let mut at = 0usize;
        while at < data.len() {
            let (piece, next) =
                embedded::scan_range(data, phase, at, at.saturating_add(BATCH_BYTES));
            found.images.extend(piece.images);
            found.damage.extend(piece.damage);
            found.undecoded += piece.undecoded;
            let next = next.max(at + 1).min(data.len());
            self.done_with(place.plus(at), next - at);
            at = next;
        }
        if found.images.is_empty() && found.damage.is_empty() && found.undecoded == 0 {
            return;
        }
        let mut child = Node::new(NodeKind::Section, name, node.file.clone());
        child.offset = place.offset();
        child.size = Some(data.len() as u64);
        child.damage.extend(found.damage.iter().map(|d| Damage {
            offset: place.plus(d.offset).offset(),
            message: format!("embedded image: {}", d.what),
        }));
        self.nv_section = Some(name.to_owned());
        let (mut fatbins, mut cubins) = (0usize, 0usize);
        let mut batch = HeadBatch::new();
        for img in &found.images {
            match img {
                Image::Fatbin(c) => {
                    fatbins += 1;
                    let end = c.offset.saturating_add(c.len() as usize).min(data.len());
                    self.fatbins_in(
                        &data[c.offset..end],
                        place.plus(c.offset),
                        &mut child,
                        false,
                        &mut batch,
                    );
                    if batch.jobs.len() >= batch.limit
                        || self.pending.is_some_and(|(.., n)| n >= PENDING_BUNDLES)
                    {
                        batch.finish(&mut child, self.pack);
                        self.flush_pending();
                    }
                }
                Image::Cubin { offset, bytes, sm } => {
                    cubins += 1;
                    let arch = CudaArch::new(*sm, offload_format::nvidia::Variant::Plain);
                    let nv = NvEntry {
                        kind: fatbin::EntryKind::Elf,
                        arch,
                        codec: None,
                        uncompressed_size: None,
                        number: self.nv_number(fatbin::EntryKind::Elf),
                        member: None,
                        unlisted_in: true,
                        stored: 0,
                        header_len: 0,
                    };
                    child.entries.push(Entry {
                        id: nv.suffix(),
                        kind: Some(OffloadKind::Cuda),
                        triple: Some(nvptx_triple()),
                        vendor: Vendor::Nvidia,
                        target: Some(Target::Cuda(arch)),
                        standardised: None,
                        note: Some("a bare cubin among other data".into()),
                        payload: Some(Box::new(Payload::Cubin { sm: *sm })),
                        payload_matches: Some(true),
                        size: bytes.len() as u64,
                        stored: bytes.len() as u64,
                        location: location(place.plus(*offset), bytes.len()),
                        nvidia: Some(nv),
                        data: None,
                    });
                }
            }
        }
        batch.finish(&mut child, self.pack);
        self.flush_pending();
        self.nv_section = None;
        let mut what = Vec::new();
        for (n, one, many) in [
            (fatbins, "fat binary container", "fat binary containers"),
            (cubins, "bare cubin", "bare cubins"),
        ] {
            match n {
                0 => {}
                1 => what.push(format!("1 {one}")),
                n => what.push(format!("{n} {many}")),
            }
        }
        if !what.is_empty() {
            child.detail = Some(format!("{} among other data", what.join(" and ")));
        }
        if found.undecoded > 0 {
            let note = format!(
                "{} fat binary containers not listed: their compressed entries do not \
                 decode with this tool's codecs",
                found.undecoded
            );
            child.detail = Some(match child.detail.take() {
                Some(d) => format!("{d}; {note}"),
                None => note,
            });
        }
        node.children.push(child);
        self.done_with(place, data.len());
    }

    /// A region of bundles and CCOBs (`.hip_fatbin`, a bundle file).
    fn region(
        &mut self,
        data: &[u8],
        place: Place,
        starts: &[usize],
        node: &mut Node,
        depth: usize,
    ) {
        let scan = hip_fatbin::scan(data, starts);
        for d in scan.damage {
            node.damage.push(Damage {
                offset: place.plus(d.offset).offset(),
                message: d.what,
            });
        }
        for item in scan.items {
            let item_place = place.plus(item.offset);
            match item.kind {
                ItemKind::Bundle => {
                    let mut b = Node::new(NodeKind::Bundle, "bundle", node.file.clone());
                    b.index = Some(self.index());
                    b.name = format!("bundle #{}", b.index.unwrap_or(0));
                    b.offset = item_place.offset();
                    b.size = Some(item.bytes.len() as u64);
                    match bundle::parse_header(item.bytes) {
                        Ok(entries) => {
                            for e in entries {
                                let id = String::from_utf8_lossy(e.id).into_owned();
                                let at = item_place.plus(e.offset as usize);
                                let head = fsio::head(e.data, FIRST);
                                let mut entry = bundle_entry_with_head(&id, e.data, &head, at);
                                if depth < MAX_DEPTH && is_container(&head) {
                                    let mut inner = Node::new(
                                        NodeKind::Section,
                                        format!("entry {id}"),
                                        node.file.clone(),
                                    );
                                    inner.offset = at.offset();
                                    inner.size = Some(e.size);
                                    self.inspect(e.data, at, &mut inner, depth + 1, false);
                                    b.children.push(inner);
                                }
                                entry.size = e.size;
                                entry.stored = e.size;
                                b.entries.push(entry);
                            }
                        }
                        Err(e) => b.damage.push(Damage {
                            offset: item_place.offset(),
                            message: e.to_string(),
                        }),
                    }
                    // Only the header went through the mapping (the
                    // entries' first bytes were read with pread), unless
                    // a container inside was opened.
                    if b.children.is_empty() {
                        self.done_with_bundle(item_place, item.bytes.len());
                    } else {
                        self.done_with(item_place, item.bytes.len());
                    }
                    node.children.push(b);
                }
                ItemKind::Ccob(header) => {
                    let mut c = Node::new(NodeKind::Ccob, "ccob", node.file.clone());
                    c.index = Some(self.index());
                    c.name = format!("bundle #{}", c.index.unwrap_or(0));
                    c.offset = item_place.offset();
                    c.size = Some(item.bytes.len() as u64);
                    c.detail = Some(format!(
                        "compressed, CCOB v{} {}{}, {} bytes uncompressed",
                        header.version.number(),
                        header.method.name(),
                        if item.size_inferred {
                            ", size found by decoding"
                        } else {
                            ""
                        },
                        header.uncompressed_size
                    ));
                    match hip_fatbin::ccob_bundle_header(item.bytes) {
                        Ok(inner) => {
                            // Each payload is named from its first bytes:
                            // decoded up to the last entry's (or, with
                            // --verify, completely, with the hash checked).
                            let ranges: Vec<(u64, u64)> =
                                inner.entries.iter().map(|e| (e.offset, e.size)).collect();
                            let heads_end = ranges
                                .iter()
                                .map(|&(o, n)| o.saturating_add(n.min(HEAD as u64)))
                                .max()
                                .unwrap_or(0);
                            let prefixes = if self.verify {
                                hip_fatbin::ccob_entry_prefixes(item.bytes, &ranges, HEAD)
                            } else if heads_end > HEADS_DECODE_MAX {
                                // The codec's window would grow with it.
                                if let Some(d) = c.detail.as_mut() {
                                    d.push_str(&format!(
                                        "; payloads not named: the last starts {} MiB into \
                                         the bundle (ls --verify names them)",
                                        heads_end >> 20
                                    ));
                                }
                                Ok(Vec::new())
                            } else {
                                hip_fatbin::ccob_entry_heads(item.bytes, &ranges, HEAD)
                            };
                            let prefixes = prefixes.unwrap_or_else(|e| {
                                c.damage.push(Damage {
                                    offset: item_place.offset(),
                                    message: format!("compressed bundle: {e}"),
                                });
                                Vec::new()
                            });
                            for (i, e) in inner.entries.iter().enumerate() {
                                let id = String::from_utf8_lossy(&e.id).into_owned();
                                let mut entry = match prefixes.get(i) {
                                    Some(p) => bundle_entry(&id, p, Place::Derived),
                                    None => {
                                        let mut entry = bundle_entry(&id, &[], Place::Derived);
                                        entry.payload = None;
                                        entry.payload_matches = None;
                                        entry
                                    }
                                };
                                entry.data = None;
                                if depth < MAX_DEPTH
                                    && prefixes.get(i).is_some_and(|p| is_container(p))
                                {
                                    // A container inside: decompressed (that
                                    // entry only is held) and opened.
                                    let mut nested = Node::new(
                                        NodeKind::Section,
                                        format!("entry {id}"),
                                        node.file.clone(),
                                    );
                                    nested.size = Some(e.size);
                                    match hip_fatbin::ccob_entry(item.bytes, e.offset, e.size) {
                                        Ok(bytes) => self.inspect(
                                            &bytes,
                                            Place::Derived,
                                            &mut nested,
                                            depth + 1,
                                            false,
                                        ),
                                        Err(err) => nested.damage.push(Damage {
                                            offset: item_place.offset(),
                                            message: format!("compressed bundle: {err}"),
                                        }),
                                    }
                                    c.children.push(nested);
                                }
                                entry.size = e.size;
                                // Its share of the compressed bytes.
                                entry.stored = share(
                                    e.size,
                                    header.uncompressed_size,
                                    item.bytes.len() as u64,
                                );
                                entry.location = match item_place {
                                    Place::At(o) => Location::Ccob {
                                        ccob_offset: o,
                                        ccob_size: item.bytes.len() as u64,
                                        offset: e.offset,
                                        size: e.size,
                                    },
                                    Place::Derived => Location::Derived,
                                };
                                if matches!(entry.location, Location::Derived) {
                                    entry.data =
                                        hip_fatbin::ccob_entry(item.bytes, e.offset, e.size).ok();
                                }
                                c.entries.push(entry);
                            }
                        }
                        Err(e) => c.damage.push(Damage {
                            offset: item_place.offset(),
                            message: format!("compressed bundle: {e}"),
                        }),
                    }
                    node.children.push(c);
                    self.done_with(item_place, item.bytes.len());
                }
            }
        }
        self.flush_pending();
    }

    fn offload_binaries(&mut self, data: &[u8], place: Place, node: &mut Node, depth: usize) {
        let mut at = 0usize;
        while at < data.len() {
            // Zero padding between binaries (sections are 8-aligned).
            match data[at..].iter().position(|&b| b != 0) {
                Some(skip) => at += skip,
                None => break,
            }
            match ob_read::parse_one(data, at as u64) {
                Ok((binaries, next)) => {
                    let mut b = Node::new(NodeKind::OffloadBinary, "", node.file.clone());
                    b.index = Some(self.index());
                    b.name = format!("offload binary #{}", b.index.unwrap_or(0));
                    b.offset = place.plus(at).offset();
                    b.size = Some(next.saturating_sub(at as u64));
                    if let Some(first) = binaries.first() {
                        b.detail = Some(format!("version {}", first.version));
                    }
                    for bin in &binaries {
                        let entry = binary_entry(data, bin, place);
                        if depth < MAX_DEPTH && is_container(&bin.image) {
                            let mut inner = Node::new(
                                NodeKind::Section,
                                format!("image {}", entry.id),
                                node.file.clone(),
                            );
                            let img_place = match offset_in(data, &bin.image) {
                                Some(o) => place.plus(o),
                                None => Place::Derived,
                            };
                            inner.offset = img_place.offset();
                            inner.size = Some(bin.image.len() as u64);
                            self.inspect(&bin.image, img_place, &mut inner, depth + 1, false);
                            b.children.push(inner);
                        }
                        b.entries.push(entry);
                    }
                    node.children.push(b);
                    if next <= at as u64 {
                        break;
                    }
                    at = next as usize;
                }
                Err(e) => {
                    node.damage.push(Damage {
                        offset: place.plus(at).offset(),
                        message: format!("offload binary: {e}"),
                    });
                    // Resume at the next magic on an 8-byte boundary.
                    let resume = (at + 8..data.len())
                        .step_by(8)
                        .find(|&p| data[p..].starts_with(&offload_binary::MAGIC));
                    match resume {
                        Some(p) => at = p,
                        None => break,
                    }
                }
            }
        }
    }

    /// The fat binary containers of `data`. `embedded`: `data` is a
    /// section that holds other things too (`.cask_resource`), whose bytes
    /// between containers are not damage.
    fn fatbins(&mut self, data: &[u8], place: Place, node: &mut Node, embedded: bool) {
        let mut batch = HeadBatch::new();
        self.fatbins_in(data, place, node, embedded, &mut batch);
        batch.finish(node, self.pack);
        self.flush_pending();
    }

    /// [`Walker::fatbins`] with the payloads named in `batch`, which the
    /// caller finishes (into `node`) and then lets go of the pages
    /// pending ([`Walker::flush_pending`]; naming reads them, so not
    /// before): the containers among a section's other data (cuFFT's
    /// `.ldata` holds 24,453) are walked one by one, and a batch of their
    /// own (its threads) and a release each cost more than the container.
    fn fatbins_in<'d>(
        &mut self,
        data: &'d [u8],
        place: Place,
        node: &mut Node,
        embedded: bool,
        batch: &mut HeadBatch<'d>,
    ) {
        let mut scanner = fatbin::Scanner::new(data, embedded);
        let mut containers = 0usize;
        // What was read of `data` and is not yet dropped (see done_with):
        // the scan touches every entry header, the naming each payload's
        // first block.
        let mut held = 0usize;
        loop {
            // A long zeroed span (a thinned container's freed space) is
            // passed over a piece at a time, each let go of.
            while scanner.skip_padding(BATCH_BYTES) {
                batch.finish(node, self.pack);
                let upto = scanner.position();
                self.done_with(place.plus(held), upto.saturating_sub(held));
                held = upto;
            }
            let Some(found) = scanner.next() else { break };
            let c = match found {
                fatbin::Found::Damage(d) => {
                    node.damage.push(Damage {
                        offset: place.plus(d.offset).offset(),
                        message: format!("fat binary: {}", d.what),
                    });
                    continue;
                }
                fatbin::Found::Container(c, damage) => {
                    node.damage.extend(damage.map(|d| Damage {
                        offset: place.plus(d.offset).offset(),
                        message: format!("fat binary: {}", d.what),
                    }));
                    c
                }
            };
            containers += 1;
            let mut n = Node::new(NodeKind::Fatbin, "", node.file.clone());
            n.index = Some(self.index());
            n.name = format!("fatbin #{}", n.index.unwrap_or(0));
            n.offset = place.plus(c.offset).offset();
            n.size = Some(c.len());
            // Exactly as many (one per stored entry, or more for a
            // concatenated one): a library holds tens of thousands of
            // containers, and the model entries are its largest part.
            n.entries.reserve_exact(c.entries.len());
            for (i, e) in c.entries.iter().enumerate() {
                let (entries, heads) = self.fatbin_entries(data, (i, e), place, &mut n.damage);
                let at = place.plus(e.offset).offset();
                batch.jobs.push(HeadJob {
                    node: batch.nodes.len(),
                    first: n.entries.len(),
                    at,
                    heads,
                    whole: (self.verify && e.is_compressed()).then_some(*e),
                });
                n.entries.extend(entries);
            }
            n.detail = Some(if n.entries.len() == c.entries.len() {
                crate::model::count(c.entries.len(), "entry", "entries")
            } else {
                format!(
                    "{} entries, {} stored ({} concatenated)",
                    n.entries.len(),
                    c.entries.len(),
                    c.entries
                        .iter()
                        .filter(|e| e.kind == fatbin::EntryKind::Concatenated)
                        .count()
                )
            });
            batch.nodes.push(n);
            // By count (the decodes in flight) or by bytes passed over (a
            // thinned file's zeroed space between containers is read too
            // as the scan looks for the next one).
            if batch.jobs.len() >= batch.limit
                || scanner.position().saturating_sub(held) >= BATCH_BYTES
            {
                batch.finish(node, self.pack);
                let upto = scanner.position();
                self.done_with(place.plus(held), upto.saturating_sub(held));
                held = upto;
            }
        }
        if let Some(at) = place
            .plus(held)
            .offset()
            .and_then(|a| usize::try_from(a).ok())
        {
            self.hold(at, data.len().saturating_sub(held));
        }
        if embedded && containers > 0 {
            node.detail = Some(format!(
                "{containers} fat binary containers among other data"
            ));
        }
    }

    /// The next number for an entry of `kind` in this file: cuobjdump's,
    /// or, in a section it does not list, that section's own.
    fn nv_number(&mut self, kind: fatbin::EntryKind) -> usize {
        let numbers = match &self.nv_section {
            None => &mut self.nv_numbers,
            Some(name) => self.nv_unlisted.entry(name.clone()).or_default(),
        };
        // cuobjdump numbers cubins and PTX apart, and NVVM IR (which it
        // never extracts) takes neither's numbers.
        let counter = match kind {
            fatbin::EntryKind::Ptx => &mut numbers.1,
            fatbin::EntryKind::NvvmIr => &mut numbers.2,
            _ => &mut numbers.0,
        };
        *counter += 1;
        *counter
    }

    /// The model entries of one fat binary entry (one, or one per member
    /// of a concatenated entry): the header's facts, and each payload named
    /// from its first bytes (decoded, when compressed: only those).
    fn fatbin_entries<'a>(
        &mut self,
        data: &'a [u8],
        (stored, e): (usize, &fatbin::Entry<'a>),
        place: Place,
        damage: &mut Vec<Damage>,
    ) -> (Vec<Entry>, Heads<'a>) {
        let members = match e.members(data) {
            Ok(m) => m,
            Err(err) => {
                damage.push(Damage {
                    offset: place.plus(e.offset).offset(),
                    message: format!("fat binary concatenated entry: {err}"),
                });
                Vec::new()
            }
        };
        let base = |nv: NvEntry, size: u64| Entry {
            id: nv.suffix(),
            kind: Some(OffloadKind::Cuda),
            triple: Some(nvptx_triple()),
            vendor: Vendor::Nvidia,
            target: Some(Target::Cuda(nv.arch)),
            standardised: None,
            note: None,
            payload: None,
            payload_matches: None,
            size,
            // A member's share of the stream it is stored in.
            stored: match nv.member {
                Some((_, n)) if e.is_compressed() => {
                    share(n, e.uncompressed_size, e.payload.len() as u64)
                }
                _ => size,
            },
            location: location(place.plus(e.payload_offset), e.payload.len()),
            nvidia: Some(nv),
            data: None,
        };
        let (mut entries, heads) = if members.is_empty() {
            let nv = NvEntry {
                kind: e.kind,
                arch: e.arch,
                codec: e.codec(),
                uncompressed_size: e.is_compressed().then_some(e.uncompressed_size),
                number: self.nv_number(e.kind),
                member: None,
                unlisted_in: self.nv_section.is_some(),
                stored,
                header_len: e.header_size,
            };
            // An opaque payload is not named (nothing would read it).
            let head = if e.kind.is_opaque()
                || (e.is_compressed() && (self.headers_only || self.defers(place)))
            {
                Heads::Ready(Ok(Vec::new()))
            } else if e.is_compressed() {
                Heads::Decode(e.stored())
            } else {
                Heads::Ready(Ok(vec![fsio::head(e.payload, HEAD).into_owned()]))
            };
            let mut entry = base(nv, e.payload.len() as u64);
            if e.kind.is_opaque() {
                entry.note = Some(
                    "NVVM IR in NVIDIA's own encoding: not decoded, extracted as stored".into(),
                );
            }
            (vec![entry], head)
        } else {
            let mut entries = Vec::new();
            for m in &members {
                let nv = NvEntry {
                    kind: m.kind,
                    arch: m.arch,
                    codec: e.codec(),
                    uncompressed_size: e.is_compressed().then_some(e.uncompressed_size),
                    number: self.nv_number(m.kind),
                    member: Some((m.offset, m.size)),
                    unlisted_in: self.nv_section.is_some(),
                    stored,
                    header_len: e.header_size,
                };
                let mut entry = base(nv, m.size);
                entry.note = Some(
                    format!(
                        "one of {} entries compressed together, at {} in the decoded payload",
                        members.len(),
                        m.offset
                    )
                    .into(),
                );
                entries.push(entry);
            }
            let ranges: Vec<(u64, u64)> = members.iter().map(|m| (m.offset, m.size)).collect();
            let last = ranges.iter().map(|r| r.0).max().unwrap_or(0);
            let heads = if last > HEADS_DECODE_MAX || self.headers_only || self.defers(place) {
                Heads::Ready(Ok(Vec::new()))
            } else {
                Heads::Ranges(e.stored(), ranges)
            };
            (entries, heads)
        };
        if let (Location::Derived, false) = (&entries[0].location, e.payload.is_empty()) {
            for entry in &mut entries {
                entry.data = Some(e.payload.to_vec());
            }
        }
        (entries, heads)
    }

    fn bitcode(&mut self, data: &[u8], node: &mut Node, depth: usize) {
        node.detail = Some("LLVM bitcode".to_owned());
        match bitcode::embedded_objects(data) {
            Ok(objects) => {
                for (i, obj) in objects.iter().enumerate() {
                    let mut child = Node::new(
                        NodeKind::Bitcode,
                        format!("embedded object #{i}"),
                        node.file.clone(),
                    );
                    child.size = Some(obj.len() as u64);
                    self.inspect(obj, Place::Derived, &mut child, depth + 1, false);
                    node.children.push(child);
                }
            }
            Err(e) => node.damage.push(Damage {
                offset: Some(0),
                message: format!("bitcode: {e}"),
            }),
        }
    }

    fn text_bundle(&mut self, data: &[u8], comment: &str, place: Place, node: &mut Node) {
        let mut b = Node::new(NodeKind::TextBundle, "", node.file.clone());
        b.index = Some(self.index());
        b.name = format!("text bundle #{}", b.index.unwrap_or(0));
        b.offset = place.offset();
        b.size = Some(data.len() as u64);
        b.detail = Some(format!("comment marker '{comment}'"));
        match text_bundle::list(data, comment) {
            Ok(entries) => {
                for (id, bytes) in entries {
                    let id = String::from_utf8_lossy(id).into_owned();
                    let at = offset_in(data, bytes).map_or(Place::Derived, |o| place.plus(o));
                    let mut e = bundle_entry(&id, bytes, at);
                    if matches!(at, Place::Derived) {
                        e.data = Some(bytes.to_vec());
                    }
                    b.entries.push(e);
                }
            }
            Err(e) => b.damage.push(Damage {
                offset: place.offset(),
                message: format!("text bundle: {e}"),
            }),
        }
        node.children.push(b);
    }
}

/// Whether a member whose first bytes are `head` may hold device code:
/// an object file, archive or container of any kind the walk reads, or a
/// text bundle. Python code, headers and data files are passed over
/// without being decoded further.
pub(crate) fn worth_reading(head: &[u8]) -> bool {
    if bundle::has_magic(head) || text_bundle_comment(head).is_some() {
        return true;
    }
    !matches!(identify(head), FileKind::Unknown)
}

/// The comment string of a text bundle, if `data` is one.
fn text_bundle_comment(data: &[u8]) -> Option<&'static str> {
    let head = &data[..data.len().min(4096)];
    ["//", ";", "#"].into_iter().find(|c| {
        let marker = format!("{c} __CLANG_OFFLOAD_BUNDLE____START__ ");
        head.starts_with(marker.as_bytes())
            || head
                .windows(marker.len() + 1)
                .any(|w| w[0] == b'\n' && &w[1..] == marker.as_bytes())
    })
}

/// Whether a payload is a container worth opening.
fn is_container(data: &[u8]) -> bool {
    bundle::has_magic(data)
        || matches!(
            identify(data),
            FileKind::Archive
                | FileKind::ThinArchive
                | FileKind::OffloadBundle
                | FileKind::Ccob
                | FileKind::OffloadBinary
                | FileKind::NvFatbin
        )
}

fn location(place: Place, size: usize) -> Location {
    match place {
        Place::At(offset) => Location::File {
            offset,
            size: size as u64,
        },
        Place::Derived => Location::Derived,
    }
}

/// The architecture a universal file's `cputype` names, as `lipo` spells
/// it.
fn cpu_type_name(cputype: u32) -> String {
    const ABI64: u32 = 0x0100_0000;
    const ABI64_32: u32 = 0x0200_0000;
    match cputype {
        7 => "i386".to_owned(),
        c if c == 7 | ABI64 => "x86_64".to_owned(),
        12 => "arm".to_owned(),
        c if c == 12 | ABI64 => "arm64".to_owned(),
        c if c == 12 | ABI64_32 => "arm64_32".to_owned(),
        18 => "ppc".to_owned(),
        c if c == 18 | ABI64 => "ppc64".to_owned(),
        other => format!("cputype {other}"),
    }
}

/// Names a payload from its first bytes (read from the file, not through
/// the mapping: see `fsio::head`).
fn classify(data: &[u8]) -> Payload {
    classify_with_head(data, &fsio::head(data, FIRST))
}

/// [`classify`] with the first [`FIRST`] bytes of `data` already read.
/// Unnamed ASCII (PTX text, whose directives may come later) is looked at
/// again with [`HEAD`] bytes; a zstd frame is looked into, and its first
/// block may be larger than any head: it is named from all of `data`.
fn classify_with_head(data: &[u8], head: &[u8]) -> Payload {
    match payload::classify(head) {
        Payload::Unknown if data.len() > head.len() && head.is_ascii() => {
            payload::classify(&fsio::head(data, HEAD))
        }
        Payload::Zstd { .. } if data.len() > head.len() => payload::classify(data),
        p => p,
    }
}

/// What a payload's name alone does not say: what a zstd frame holds.
fn payload_note(p: &Payload) -> Option<String> {
    match p {
        Payload::Zstd { inner: Some(inner) } => Some(format!(
            "a zstd frame holding: {}",
            match &**inner {
                Payload::Object(format) => format,
                other => other.name(),
            }
        )),
        _ => None,
    }
}

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// An entry of a bundle (binary, text or object sections).
fn bundle_entry(id: &str, data: &[u8], place: Place) -> Entry {
    bundle_entry_with_head(id, data, &fsio::head(data, FIRST), place)
}

/// [`entry_id::parse_lenient`], remembered: a library repeats the same
/// few entry IDs in every bundle (888 entries, 8 IDs in
/// `librocsparse.so.0.1`), and reading a triple is not free.
fn lenient_id(id: &str) -> Rc<entry_id::LenientId> {
    /// IDs remembered at most (a damaged or hostile file may hold many).
    const KEEP: usize = 1024;
    thread_local! {
        static SEEN: std::cell::RefCell<HashMap<String, Rc<entry_id::LenientId>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(l) = seen.get(id) {
            return Rc::clone(l);
        }
        let l = Rc::new(entry_id::parse_lenient(id));
        if seen.len() < KEEP {
            seen.insert(id.to_owned(), Rc::clone(&l));
        }
        l
    })
}

/// [`bundle_entry`] with the first bytes of `data` already read.
fn bundle_entry_with_head(id: &str, data: &[u8], head: &[u8], place: Place) -> Entry {
    let lenient = lenient_id(id);
    let parsed = lenient.id.as_ref();
    let target_text = parsed
        .and_then(|p| p.raw_target_id())
        .filter(|t| !t.is_empty());
    let p = classify_with_head(data, head);
    let payload_matches = target_text.and_then(|tid| payload_agrees(&p, tid));
    let triple = lenient.stored_triple().map(Triple::new);
    let vendor = triple.as_ref().map_or(Vendor::Other, Vendor::of_triple);
    // LLVM 22 has no spelling for an ID whose offload kind it refuses.
    let standardised = lenient
        .standardised
        .clone()
        .filter(|s| s != id && parsed.is_some_and(|p| p.is_kind_valid()))
        .map(String::into_boxed_str);
    let mut entry = Entry {
        id: id.to_owned(),
        kind: parsed.map(|p| OffloadKind::parse(p.kind())),
        triple,
        vendor,
        target: target_text.map(|t| Target::parse(t, vendor)),
        standardised,
        note: join_notes(lenient.note.map(str::to_owned), payload_note(&p))
            .map(String::into_boxed_str),
        payload: Some(Box::new(p)),
        payload_matches,
        size: data.len() as u64,
        stored: data.len() as u64,
        location: location(place, data.len()),
        nvidia: None,
        data: None,
    };
    if matches!(place, Place::Derived) && !data.is_empty() {
        entry.data = Some(data.to_vec());
    }
    entry
}

/// How the first bytes of a fat binary entry's payload (or of each member
/// of a concatenated one) are had.
enum Heads<'a> {
    /// Already read (stored payloads: from the file, with `pread`).
    Ready(Result<Vec<Vec<u8>>, DecodeError>),
    /// Decoded from a compressed entry's stream.
    Decode(fatbin::StoredPayload<'a>),
    /// Decoded from a concatenated entry, one head per range.
    Ranges(fatbin::StoredPayload<'a>, Vec<(u64, u64)>),
}

impl Heads<'_> {
    fn get(self) -> Result<Vec<Vec<u8>>, DecodeError> {
        match self {
            Heads::Ready(r) => r,
            Heads::Decode(e) => decoded_head(&e).map(|h| vec![h]),
            Heads::Ranges(e, ranges) => e.range_heads(&ranges, HEAD as u64),
        }
    }
}

/// The head of a compressed payload that names it as [`HEAD`] bytes
/// would: [`FIRST`] bytes decoded, then [`HEAD`] where those may not be
/// enough ([`payload::needs_more`]: text without its `.target` line yet, a
/// zstd frame inside, a PE signature further on). A cubin's ELF header
/// is in its first 64 bytes, nvcc's PTX names its target within 256
/// bytes, and decoding 4 KiB of each of tens of thousands of entries was
/// most of the work of naming them.
fn decoded_head(e: &fatbin::StoredPayload<'_>) -> Result<Vec<u8>, DecodeError> {
    let first = e.head(FIRST)?;
    let more = first.len() == FIRST && payload::needs_more(&first);
    if more {
        return e.head(HEAD).map(std::borrow::Cow::into_owned);
    }
    Ok(first.into_owned())
}

/// One entry's heads to get, and where its model entries are.
struct HeadJob<'a> {
    /// Index of the container's node in the batch.
    node: usize,
    /// Index of its first model entry in that node.
    first: usize,
    /// The entry header's offset, for damage.
    at: Option<u64>,
    heads: Heads<'a>,
    /// `ls --verify`: the compressed entry, to decode to its end.
    whole: Option<fatbin::Entry<'a>>,
}

/// What a [`HeadJob`] found: the heads, and with `ls --verify` whether
/// the whole stream decodes to the recorded size.
type HeadResult = (Result<Vec<Vec<u8>>, DecodeError>, Option<DecodeError>);

/// Does a [`HeadJob`]'s decoding (on a thread of the batch).
fn head_work((heads, whole): (Heads<'_>, Option<fatbin::Entry<'_>>)) -> HeadResult {
    let heads = heads.get();
    let stream = match (&heads, whole) {
        (Ok(_), Some(e)) => e.check_stream().err(),
        _ => None,
    };
    (heads, stream)
}

/// How many bytes of a section the fat binary scan passes over before
/// the pages read are dropped (with the batch of decodes they hold).
const BATCH_BYTES: usize = 4 << 20;

/// Containers whose payloads are named together: decoding a compressed
/// entry's first block costs far more than reading its header, and the
/// decodes are independent, so they run on every core, a batch at a time
/// (the batch bounds the pages held before they are dropped).
struct HeadBatch<'a> {
    nodes: Vec<Node>,
    jobs: Vec<HeadJob<'a>>,
    threads: usize,
    /// Jobs per batch: 128 per thread. Each batch starts its threads
    /// afresh, and with 16 per thread a library of 23,593 small containers
    /// started 4,400 pairs of them: `ls` took 0.8 s on two cores against
    /// 0.64 s on one (the spawns, and the TLB flushes that letting pages go
    /// costs once several threads share the mapping); with 128 it takes
    /// 0.53-0.64 s. [`BATCH_BYTES`] still bounds the pages a batch holds.
    limit: usize,
}

impl<'a> HeadBatch<'a> {
    fn new() -> HeadBatch<'a> {
        let threads = offload_cli::env::cores().min(8);
        HeadBatch {
            nodes: Vec::new(),
            jobs: Vec::new(),
            threads,
            limit: 128 * threads,
        }
    }

    /// Names the payloads of the batch and hands its nodes to `out`, as
    /// its children or (`pack`) packed where they can be.
    fn finish(&mut self, out: &mut Node, pack: bool) {
        let jobs = std::mem::take(&mut self.jobs);
        let places: Vec<(usize, usize, Option<u64>)> =
            jobs.iter().map(|j| (j.node, j.first, j.at)).collect();
        let heads: Vec<(Heads<'a>, Option<fatbin::Entry<'a>>)> =
            jobs.into_iter().map(|j| (j.heads, j.whole)).collect();
        // Heads already read (stored payloads, or none wanted) need no
        // threads.
        let decoding = heads
            .iter()
            .any(|(h, whole)| !matches!(h, Heads::Ready(_)) || whole.is_some());
        let results = if self.threads > 1 && heads.len() > 1 && decoding {
            let per = heads.len().div_ceil(self.threads);
            let mut chunks: Vec<Vec<(Heads<'a>, Option<fatbin::Entry<'a>>)>> = Vec::new();
            let mut heads = heads.into_iter().peekable();
            while heads.peek().is_some() {
                chunks.push(heads.by_ref().take(per).collect());
            }
            std::thread::scope(|s| {
                let running: Vec<_> = chunks
                    .into_iter()
                    .map(|chunk| {
                        s.spawn(move || chunk.into_iter().map(head_work).collect::<Vec<_>>())
                    })
                    .collect();
                running
                    .into_iter()
                    .flat_map(|t| t.join().expect("naming payloads does not panic"))
                    .collect::<Vec<_>>()
            })
        } else {
            heads.into_iter().map(head_work).collect()
        };
        for ((node, first, at), (result, stream)) in places.into_iter().zip(results) {
            let n = &mut self.nodes[node];
            match result {
                Ok(heads) => {
                    for (entry, head) in n.entries[first..].iter_mut().zip(&heads) {
                        let Some(nv) = entry.nvidia else { continue };
                        let (p, check) = header_check(&nv, head);
                        if let payload::HeaderCheck::Disagrees(why) = &check {
                            // cuobjdump's number, where it lists the kind.
                            let which = match nv.kind {
                                fatbin::EntryKind::Elf => format!("ELF file {}", nv.number),
                                fatbin::EntryKind::Ptx => format!("PTX file {}", nv.number),
                                _ => format!("entry {} of the container", nv.stored + 1),
                            };
                            n.damage.push(Damage {
                                offset: at,
                                message: format!("fat binary entry {} ({which}): {why}", entry.id),
                            });
                        }
                        entry.payload_matches = check.matches();
                        entry.payload = Some(Box::new(p));
                    }
                }
                Err(err) => {
                    let id = n.entries[first].id.clone();
                    n.damage.push(Damage {
                        offset: at,
                        message: format!("fat binary entry {id}: {err}"),
                    });
                }
            }
            if let Some(err) = stream {
                let id = n.entries[first].id.clone();
                n.damage.push(Damage {
                    offset: at,
                    message: format!("fat binary entry {id}: {err} (decoded to its end)"),
                });
            }
        }
        if !pack {
            out.children.append(&mut self.nodes);
            return;
        }
        for n in self.nodes.drain(..) {
            let packed = out.packed.get_or_insert_with(Default::default);
            if !packed.pack(&n, deferred) {
                out.children.push(n);
            }
        }
    }
}

/// What a fat binary entry's payload is, named from its first bytes, and
/// whether its header agrees with it. The header is what thin decides
/// on: one that its payload contradicts is damage.
fn header_check(nv: &NvEntry, head: &[u8]) -> (Payload, payload::HeaderCheck) {
    let p = payload::classify(head);
    let check = payload::check_nvidia_header(nv.kind, nv.arch, &p, head);
    (p, check)
}

/// Decodes what a walk of `input` with [`Walker::defer_decodes`] left
/// out, the first bytes of each compressed NVIDIA payload of the file
/// (`root` is that walk), on `threads` threads, and checks them as the
/// walk would have: whether each stream decodes that far and each
/// header agrees with its payload. Returns whether all do; where not,
/// walking the file again without deferring puts the damage where `ls`
/// shows it. The pages read are let go of a run ([`CHECK_RUN`]) at a
/// time.
pub fn check_deferred(input: &fsio::Input, root: &Node, threads: usize) -> bool {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    // The containers whose payloads were deferred, in order, cut into
    // runs of about CHECK_RUN bytes (the unit of work and of letting go).
    let mut containers: Vec<Checked<'_>> = Vec::new();
    root.visit(&mut Vec::new(), &mut |path| {
        let n = path[path.len() - 1];
        if n.file != root.file {
            return;
        }
        if let Some(p) = &n.packed {
            for c in &p.containers {
                if p.entries_of(c).iter().any(|e| e.deferred) {
                    containers.push(Checked::Packed(p, c));
                }
            }
        }
        for c in &n.children {
            if c.kind == NodeKind::Fatbin && c.file == root.file && c.entries.iter().any(deferred) {
                containers.push(Checked::Node(c));
            }
        }
    });
    // Packed containers and the nodes beside them, in the file's order.
    containers.sort_by_key(|c| c.span().start);
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    for i in 0..containers.len() {
        if containers[i]
            .span()
            .end
            .saturating_sub(containers[start].span().start)
            >= CHECK_RUN
            || i + 1 == containers.len()
        {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    let next = AtomicUsize::new(0);
    let bad = AtomicBool::new(false);
    let work = || {
        while !bad.load(Ordering::Relaxed) {
            let Some(run) = runs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            let run = &containers[run.clone()];
            if !run.iter().all(|c| c.agrees(input)) {
                bad.store(true, Ordering::Relaxed);
            }
            let from = run[0].span().start;
            let to = run[run.len() - 1].span().end;
            if let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) {
                input.release(from..to);
            }
        }
    };
    let threads = threads.clamp(1, runs.len().max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    !bad.load(Ordering::Relaxed)
}

/// A fat binary container [`check_deferred`] checks: a node, or a packed
/// one.
enum Checked<'a> {
    Node(&'a Node),
    Packed(&'a Packed, &'a PackedFatbin),
}

impl Checked<'_> {
    /// Where it is in the file.
    fn span(&self) -> std::ops::Range<u64> {
        let (offset, size) = match self {
            Checked::Node(n) => (n.offset.unwrap_or(0), n.size.unwrap_or(0)),
            Checked::Packed(_, c) => (c.offset, c.size),
        };
        offset..offset.saturating_add(size)
    }

    /// Whether its deferred payloads agree with their headers.
    fn agrees(&self, input: &[u8]) -> bool {
        match self {
            Checked::Node(n) => payloads_agree(input, n),
            Checked::Packed(p, c) => p.entries_of(c).iter().filter(|e| e.deferred).all(|e| {
                // Packed entries are stored whole: one head each.
                let Some(nv) = p.shapes[usize::from(e.shape)].nvidia else {
                    return false;
                };
                let end = e.offset.saturating_add(u64::from(e.size));
                let range = usize::try_from(e.offset)
                    .ok()
                    .zip(usize::try_from(end).ok());
                let Some(payload) = range.and_then(|(a, b)| input.get(a..b)) else {
                    return false;
                };
                let stored = fatbin::StoredPayload {
                    codec: nv.codec,
                    payload,
                    uncompressed_size: e.uncompressed,
                };
                match Heads::Decode(stored).get() {
                    Ok(heads) => heads.first().is_none_or(|head| {
                        !matches!(
                            header_check(&nv, head).1,
                            payload::HeaderCheck::Disagrees(_)
                        )
                    }),
                    Err(_) => false,
                }
            }),
        }
    }
}

/// The bytes of containers [`check_deferred`] takes at a time, and lets
/// go of the pages of together: with a run per thread in flight beside
/// the writer's, small enough to keep memory low.
const CHECK_RUN: u64 = 1 << 20;

/// Whether the walk left the naming of `e`'s payload to
/// [`check_deferred`]: a compressed fat binary entry stored in the file
/// (see [`Walker::defers`]).
fn deferred(e: &Entry) -> bool {
    e.payload.is_none()
        && matches!(e.location, Location::File { .. })
        && e.nvidia
            .is_some_and(|nv| nv.codec.is_some() && !nv.kind.is_opaque())
}

/// [`check_deferred`] for the deferred entries of one fat binary
/// container: each stored entry's stream (its members together, for a
/// concatenated one) decoded as far as the walk decodes it.
fn payloads_agree(input: &[u8], n: &Node) -> bool {
    let mut i = 0;
    while i < n.entries.len() {
        // The model entries of one stored entry: one, or its members.
        let stored = n.entries[i].nvidia.map(|nv| nv.stored);
        let end = i + n.entries[i..]
            .iter()
            .take_while(|e| e.nvidia.map(|nv| nv.stored) == stored)
            .count()
            .max(1);
        let group = &n.entries[i..end];
        i = end;
        let (first, Some(nv)) = (&group[0], group[0].nvidia) else {
            continue;
        };
        if !deferred(first) {
            continue;
        }
        let Location::File { offset, size } = first.location else {
            continue;
        };
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(offset.saturating_add(size)).ok());
        let Some(payload) = range.and_then(|(a, b)| input.get(a..b)) else {
            return false;
        };
        let stored = fatbin::StoredPayload {
            codec: nv.codec,
            payload,
            uncompressed_size: nv.uncompressed_size.unwrap_or(0),
        };
        let heads = if nv.member.is_none() {
            Heads::Decode(stored)
        } else {
            let ranges: Vec<(u64, u64)> = group.iter().filter_map(|e| e.nvidia?.member).collect();
            if ranges.iter().map(|r| r.0).max().unwrap_or(0) > HEADS_DECODE_MAX {
                // Not named by the walk either.
                continue;
            }
            Heads::Ranges(stored, ranges)
        };
        let Ok(heads) = heads.get() else {
            return false;
        };
        for (e, head) in group.iter().zip(&heads) {
            let Some(nv) = &e.nvidia else { continue };
            if let (_, payload::HeaderCheck::Disagrees(_)) = header_check(nv, head) {
                return false;
            }
        }
    }
    true
}

/// Whether a payload agrees with the target ID or architecture its entry
/// names (`gfx90a:xnack+`, `sm_90`): the AMDGPU target in a code object's
/// flags (same processor, features set alike), a cubin's SM (its flags do
/// not record the `a`/`f` variant). `None` where the payload names nothing
/// to compare. (NVIDIA fat binary entries: [`payload::check_nvidia_header`].)
fn payload_agrees(p: &Payload, tid: &str) -> Option<bool> {
    match p {
        Payload::AmdgpuCodeObject(t) => Some(t.matches_target_id(tid)),
        Payload::Cubin { sm } => Some(CudaArch::parse(tid).is_ok_and(|(_, a)| a.number() == *sm)),
        _ => None,
    }
}

/// An entry of an offload binary.
fn binary_entry(blob: &[u8], bin: &ob_read::Binary<'_>, place: Place) -> Entry {
    let triple_text = String::from_utf8_lossy(bin.triple()).into_owned();
    let arch = String::from_utf8_lossy(bin.arch()).into_owned();
    let kind = bin.offload_kind.name().to_owned();
    let p = classify(&bin.image);
    let payload_matches = (!arch.is_empty())
        .then(|| payload_agrees(&p, &arch))
        .flatten();
    let img_place = match offset_in(blob, &bin.image) {
        Some(o) => place.plus(o),
        None => Place::Derived,
    };
    let triple = Triple::new(&triple_text);
    let vendor = Vendor::of_triple(&triple);
    let mut entry = Entry {
        id: format!("{kind}-{triple_text}-{arch}"),
        kind: Some(OffloadKind::parse(&kind)),
        triple: Some(triple),
        vendor,
        target: (!arch.is_empty()).then(|| Target::parse(&arch, vendor)),
        standardised: None,
        note: Some(format!("image kind {}", bin.image_kind.extension()).into()),
        payload: Some(Box::new(p)),
        payload_matches,
        size: bin.image.len() as u64,
        stored: bin.image.len() as u64,
        location: location(img_place, bin.image.len()),
        nvidia: None,
        data: None,
    };
    if matches!(img_place, Place::Derived) && !bin.image.is_empty() {
        entry.data = Some(bin.image.to_vec());
    }
    entry
}
