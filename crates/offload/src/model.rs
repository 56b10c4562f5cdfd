//! What `offload ls` finds: a tree of places (file, archive member,
//! section, bundle) holding entries.

use std::path::PathBuf;

use offload_format::nvidia::fatbin::EntryKind;
use offload_format::nvidia::{Codec, CudaArch};
use offload_format::payload::Payload;
use offload_format::target_id::TargetId;
use offload_format::triple::Triple;

/// What a node of the tree is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An input file.
    File,
    /// An archive member.
    Member,
    /// A section of an object file.
    Section,
    /// An uncompressed binary offload bundle.
    Bundle,
    /// A compressed offload bundle.
    Ccob,
    /// A text offload bundle.
    TextBundle,
    /// The `__CLANG_OFFLOAD_BUNDLE__<id>` sections of one object file.
    ObjectBundle,
    /// An offload binary (`0x10FF10AD`).
    OffloadBinary,
    /// An NVIDIA fat binary container.
    Fatbin,
    /// LLVM bitcode with embedded offload objects.
    Bitcode,
    /// One architecture's slice of a Mach-O universal file.
    Slice,
}

impl NodeKind {
    /// The name used in JSON and in the tree.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::File => "file",
            NodeKind::Member => "member",
            NodeKind::Section => "section",
            NodeKind::Bundle => "bundle",
            NodeKind::Ccob => "compressed-bundle",
            NodeKind::TextBundle => "text-bundle",
            NodeKind::ObjectBundle => "object-bundle",
            NodeKind::OffloadBinary => "offload-binary",
            NodeKind::Fatbin => "fatbin",
            NodeKind::Bitcode => "bitcode",
            NodeKind::Slice => "slice",
        }
    }

    /// Whether entries of this node count as one container for the `<n>`
    /// of extracted file names.
    pub fn is_container(self) -> bool {
        !matches!(
            self,
            NodeKind::File
                | NodeKind::Member
                | NodeKind::Section
                | NodeKind::Bitcode
                | NodeKind::Slice
        )
    }
}

/// What kind of object file a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// An executable or shared library.
    Linked,
    /// An object to be linked (ELF `ET_REL`, COFF object, Mach-O
    /// `MH_OBJECT`).
    Relocatable,
}

/// Damage found at some place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Absolute offset in the node's file, when known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// Where an entry's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// Contiguous in the file.
    File {
        /// Absolute offset.
        offset: u64,
        /// Size.
        size: u64,
    },
    /// Inside the bundle a CCOB holds.
    Ccob {
        /// Absolute offset of the CCOB in the file.
        ccob_offset: u64,
        /// The CCOB's size.
        ccob_size: u64,
        /// Offset of the entry in the decompressed bundle.
        offset: u64,
        /// Size of the entry.
        size: u64,
    },
    /// Decoded from a container that does not keep it contiguous
    /// (bitcode); the bytes are kept in [`Entry::data`].
    Derived,
}

/// Whose device code an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vendor {
    /// AMD GPUs (an `amdgcn` triple).
    Amd,
    /// NVIDIA GPUs (an `nvptx` triple, or a fat binary entry).
    Nvidia,
    /// Neither: the host, SPIR-V, another target.
    Other,
}

impl Vendor {
    /// `AMD`, `NVIDIA`, `other`: as the summary and thin's report say it.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Amd => "AMD",
            Vendor::Nvidia => "NVIDIA",
            Vendor::Other => "other",
        }
    }

    /// The vendor of a triple.
    pub fn of_triple(triple: &Triple) -> Vendor {
        if triple.is_amdgcn() {
            Vendor::Amd
        } else if triple.is_nvptx() {
            Vendor::Nvidia
        } else {
            Vendor::Other
        }
    }
}

/// An offload kind, the first field of an entry ID.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OffloadKind {
    /// `host`: the host's code, never device code.
    Host,
    /// `openmp`.
    OpenMp,
    /// `hip`.
    Hip,
    /// `hipv4`.
    HipV4,
    /// `cuda`.
    Cuda,
    /// `sycl` (DPC++).
    Sycl,
    /// Any other spelling, kept as stored.
    Other(String),
}

impl OffloadKind {
    /// The kind a stored spelling names.
    pub fn parse(text: &str) -> OffloadKind {
        match text {
            "host" => OffloadKind::Host,
            "openmp" => OffloadKind::OpenMp,
            "hip" => OffloadKind::Hip,
            "hipv4" => OffloadKind::HipV4,
            "cuda" => OffloadKind::Cuda,
            "sycl" => OffloadKind::Sycl,
            other => OffloadKind::Other(other.to_owned()),
        }
    }

    /// The spelling.
    pub fn name(&self) -> &str {
        match self {
            OffloadKind::Host => "host",
            OffloadKind::OpenMp => "openmp",
            OffloadKind::Hip => "hip",
            OffloadKind::HipV4 => "hipv4",
            OffloadKind::Cuda => "cuda",
            OffloadKind::Sycl => "sycl",
            OffloadKind::Other(s) => s,
        }
    }
}

/// What an entry's code is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An AMDGPU target ID: processor (canonical) and features, and the
    /// spelling stored.
    Amd {
        /// The parsed target ID (boxed: a library's model holds tens of
        /// thousands of entries, most of them not AMD's).
        id: Box<TargetId>,
        /// As stored (`gfx90a:xnack+`).
        stored: String,
    },
    /// A CUDA architecture, variant included.
    Cuda(CudaArch),
    /// Anything else (`generic`, `spir64`, a host CPU), as stored.
    Other(String),
}

impl Target {
    /// Reads a stored target for an entry of `vendor`.
    pub fn parse(text: &str, vendor: Vendor) -> Target {
        match vendor {
            Vendor::Amd => match TargetId::parse(text, &Triple::new("amdgcn-amd-amdhsa")) {
                Ok(id) => Target::Amd {
                    id: Box::new(id),
                    stored: text.to_owned(),
                },
                Err(_) => Target::Other(text.to_owned()),
            },
            Vendor::Nvidia => match CudaArch::parse(text) {
                Ok((_, arch)) if arch.to_string() == text => Target::Cuda(arch),
                _ => Target::Other(text.to_owned()),
            },
            Vendor::Other => Target::Other(text.to_owned()),
        }
    }

    /// The spelling, as stored.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Target::Amd { stored, .. } => stored.as_str().into(),
            Target::Cuda(a) => a.to_string().into(),
            Target::Other(s) => s.as_str().into(),
        }
    }
}

/// One entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The ID as stored (bundles), or built from the metadata (offload
    /// binaries: `<kind>-<triple>-<arch>`; fat binaries: `sm_NN.elf`).
    pub id: String,
    /// Offload kind.
    pub kind: Option<OffloadKind>,
    /// Target triple as stored.
    pub triple: Option<Triple>,
    /// Whose code it is.
    pub vendor: Vendor,
    /// What it is built for (`None`: no target given).
    pub target: Option<Target>,
    /// The ID in LLVM 22's standardised spelling, when it differs.
    pub standardised: Option<Box<str>>,
    /// Remarks on the stored spelling (old ROCm forms).
    pub note: Option<Box<str>>,
    /// What the payload is, or `None` when it was not looked at (inside a
    /// CCOB, a compressed NVIDIA entry read for its header only).
    /// (Boxed: most entries of a large library have none, a compressed
    /// NVIDIA entry's model being its header's facts.)
    pub payload: Option<Box<Payload>>,
    /// Whether the payload's own target agrees with the entry's.
    pub payload_matches: Option<bool>,
    /// Size of the entry's bytes (decoded, inside a CCOB or a
    /// concatenated NVIDIA entry; as stored otherwise).
    pub size: u64,
    /// The bytes it takes in the file: [`Entry::size`] where stored as
    /// it is; inside a CCOB or a concatenated NVIDIA entry, its share of
    /// the compressed bytes (in proportion to its decoded size).
    pub stored: u64,
    /// Where they are.
    pub location: Location,
    /// What an NVIDIA fat binary entry's header records.
    pub nvidia: Option<NvEntry>,
    /// The bytes, for [`Location::Derived`].
    pub data: Option<Vec<u8>>,
}

impl Entry {
    /// Whether it is the host's code (kind `host`).
    pub fn is_host(&self) -> bool {
        self.kind == Some(OffloadKind::Host)
    }

    /// The target as stored, for messages.
    pub fn target_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.target.as_ref().map(Target::text)
    }

    /// The bytes once decoded (a compressed NVIDIA entry's recorded size;
    /// [`Entry::size`] otherwise).
    pub fn decoded(&self) -> u64 {
        self.nvidia
            .and_then(|nv| nv.uncompressed_size.filter(|_| nv.member.is_none()))
            .unwrap_or(self.size)
    }

    /// The AMDGPU target ID, for an AMD entry.
    pub fn amd_target(&self) -> Option<&TargetId> {
        match &self.target {
            Some(Target::Amd { id, .. }) => Some(&**id),
            _ => None,
        }
    }

    /// The CUDA architecture: a fat binary entry's, or an offload
    /// binary's for an NVIDIA GPU.
    pub fn cuda_arch(&self) -> Option<CudaArch> {
        match (&self.nvidia, &self.target) {
            (Some(nv), _) => Some(nv.arch),
            (None, Some(Target::Cuda(a))) => Some(*a),
            _ => None,
        }
    }
}

/// `1 entry`, `2 entries`: a count and its noun, in the singular for 1.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The share of `part` in `total` bytes that `whole` stored bytes hold
/// (rounded down): what a piece of a compressed stream takes in the file.
pub fn share(part: u64, total: u64, whole: u64) -> u64 {
    if total == 0 {
        return 0;
    }
    u64::try_from(u128::from(part) * u128::from(whole) / u128::from(total)).unwrap_or(u64::MAX)
}

/// The typed facts of an NVIDIA fat binary entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvEntry {
    /// What the payload is (cubin, PTX...).
    pub kind: EntryKind,
    /// The architecture, variant included.
    pub arch: CudaArch,
    /// How the payload is stored, if compressed.
    pub codec: Option<Codec>,
    /// The uncompressed size the header records (compressed entries).
    pub uncompressed_size: Option<u64>,
    /// The entry's number among the entries of its kind in its file, from
    /// 1, as cuobjdump numbers them (`ELF file 3`).
    pub number: usize,
    /// For a member of a concatenated entry (CUDA 13's `--concat`): its
    /// offset and size in the decoded payload, which it shares with the
    /// other members.
    pub member: Option<(u64, u64)>,
    /// In a section cuobjdump does not list (an `__nv_relfatbin` beside a
    /// `.nv_fatbin`, `.cask_resource`): `number` counts in that section.
    pub unlisted_in: bool,
    /// The index of the stored entry in its container (the members of a
    /// concatenated entry share it): what `thin` keeps or drops.
    pub stored: usize,
    /// The length of the stored entry's header, which its payload follows
    /// (0 for a cubin with no entry: a bare one among other data). With
    /// the payload's place it says where the entry starts, which is what
    /// `thin` cuts a container at.
    pub header_len: u32,
}

impl NvEntry {
    /// `sm_90a.cubin`: the end of the name cuobjdump gives the entry.
    pub fn suffix(&self) -> String {
        format!(
            "{}.{}",
            self.arch.cuobjdump_name(self.kind == EntryKind::Ptx),
            self.kind.extension()
        )
    }
}

/// The bytes that a node's offsets refer to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A file (an input, or a thin archive's member file).
    File(PathBuf),
    /// A member of a zip archive (a Python wheel) stored compressed: the
    /// offsets are in its decoded bytes.
    ZipMember {
        /// The archive.
        zip: PathBuf,
        /// The member's position in the central directory.
        index: usize,
        /// Its name.
        name: String,
    },
}

impl std::fmt::Display for Source {
    /// The path; a zip member as `ARCHIVE!/MEMBER`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::ZipMember { zip, name, .. } => write!(f, "{}!/{name}", zip.display()),
        }
    }
}

impl Source {
    /// Whether this is a member of a zip archive.
    pub fn is_zip_member(&self) -> bool {
        matches!(self, Source::ZipMember { .. })
    }
}

impl From<PathBuf> for Source {
    fn from(p: PathBuf) -> Source {
        Source::File(p)
    }
}

/// A place in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What it is.
    pub kind: NodeKind,
    /// Its name: a path, a member name, a section name, `#k`.
    pub name: String,
    /// What the offsets refer to (a thin archive's member has its own
    /// file, a compressed zip member its decoded bytes).
    pub file: Source,
    /// Absolute offset in `file`, when the node is contiguous there.
    pub offset: Option<u64>,
    /// Size, when known.
    pub size: Option<u64>,
    /// More about it (`CCOB v3 zstd`, `ELF`).
    pub detail: Option<String>,
    /// For an object file (a file, member or slice that is one): whether
    /// it is linked (an executable or library, whose contents are referred
    /// to by address) or relocatable.
    pub linkage: Option<Linkage>,
    /// The index among containers in listing order (for file names).
    pub index: Option<usize>,
    /// Nested places.
    pub children: Vec<Node>,
    /// Entries directly here.
    pub entries: Vec<Entry>,
    /// Damage found here.
    pub damage: Vec<Damage>,
    /// Fat binary containers found here and kept as a few words each
    /// ([`Packed`]; only a walk for `thin` packs them).
    pub packed: Option<Box<Packed>>,
}

/// Fat binary containers of one place (a section), kept compactly: a
/// library holds tens of thousands of them, and a [`Node`] with its
/// [`Entry`]s for each is most of the memory `thin` takes. Only sound
/// containers are packed (no damage; each entry stored whole in the file,
/// none a member of a concatenated one): a few numbers per container and
/// per entry, and the entries' typed facts once for all the containers
/// that share them ([`Packed::shapes`]). [`Packed::entry`] makes a model
/// entry again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    /// The distinct entries: what differs from one container to the next
    /// (where the bytes are, their sizes, the stored entry's index, the
    /// recorded uncompressed size, cuobjdump's number) left out. What a
    /// `--keep` or `--drop` is matched against.
    pub shapes: Vec<Entry>,
    /// The containers, in the order found.
    pub containers: Vec<PackedFatbin>,
    /// Their entries, each container's together.
    pub entries: Vec<PackedEntry>,
}

/// A packed fat binary container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedFatbin {
    /// Absolute offset in the file.
    pub offset: u64,
    /// Size.
    pub size: u64,
    /// The index among containers in listing order ([`Node::index`]).
    pub index: u32,
    /// Its first entry in [`Packed::entries`].
    pub first: u32,
    /// How many entries it has.
    pub count: u32,
}

/// A packed fat binary entry (24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedEntry {
    /// Where its payload is in the file.
    pub offset: u64,
    /// The uncompressed size its header records, where its shape has one
    /// (compressed entries).
    pub uncompressed: u64,
    /// The payload's size as stored.
    pub size: u32,
    /// Its index in the container ([`NvEntry::stored`]).
    pub stored: u16,
    /// Its facts, in [`Packed::shapes`].
    pub shape: u8,
    /// Whether the walk left its payload to be named later (see
    /// `walk::check_deferred`).
    pub deferred: bool,
}

impl Packed {
    /// The most distinct entries a section's packed containers may have
    /// (past it, containers stay nodes): matching is done on them once
    /// each, and [`PackedEntry::shape`] is a byte.
    pub const SHAPES_MAX: usize = 256;

    /// Packs `n`, a fat binary container the walk has finished (payloads
    /// named, damage found); returns whether it could be (if not, nothing
    /// of it is kept).
    pub fn pack(&mut self, n: &Node, deferred: impl Fn(&Entry) -> bool) -> bool {
        let sound = n.damage.is_empty()
            && n.children.is_empty()
            && n.packed.is_none()
            && n.kind == NodeKind::Fatbin
            && n.entries.iter().all(|e| {
                e.data.is_none()
                    && e.nvidia.is_some_and(|nv| nv.member.is_none())
                    && matches!(e.location, Location::File { size, .. } if size == e.size)
                    && e.stored == e.size
            });
        let (Some(offset), Some(size), Some(index), Ok(first), Ok(count)) = (
            n.offset,
            n.size,
            n.index.and_then(|i| u32::try_from(i).ok()),
            u32::try_from(self.entries.len()),
            u32::try_from(n.entries.len()),
        ) else {
            return false;
        };
        if !sound {
            return false;
        }
        let shapes = self.shapes.len();
        let packed: Option<Vec<PackedEntry>> = n
            .entries
            .iter()
            .map(|e| self.pack_entry(e, &deferred))
            .collect();
        let Some(packed) = packed else {
            // Shapes met only in it go with it.
            self.shapes.truncate(shapes);
            return false;
        };
        self.entries.extend(packed);
        self.containers.push(PackedFatbin {
            offset,
            size,
            index,
            first,
            count,
        });
        true
    }

    /// One entry of a container being packed, its shape found or added;
    /// `None` where it cannot be packed.
    fn pack_entry(&mut self, e: &Entry, deferred: &impl Fn(&Entry) -> bool) -> Option<PackedEntry> {
        let (Location::File { offset, size }, Some(nv)) = (&e.location, e.nvidia) else {
            return None;
        };
        let mut shape = e.clone();
        shape.size = 0;
        shape.stored = 0;
        shape.location = Location::File { offset: 0, size: 0 };
        shape.nvidia = Some(NvEntry {
            number: 0,
            stored: 0,
            // Whether it records one is a fact of the shape.
            uncompressed_size: nv.uncompressed_size.map(|_| 0),
            ..nv
        });
        let at = match self.shapes.iter().position(|s| *s == shape) {
            Some(i) => i,
            None if self.shapes.len() < Self::SHAPES_MAX => {
                self.shapes.push(shape);
                self.shapes.len() - 1
            }
            None => return None,
        };
        Some(PackedEntry {
            offset: *offset,
            uncompressed: nv.uncompressed_size.unwrap_or(0),
            size: u32::try_from(*size).ok()?,
            stored: u16::try_from(nv.stored).ok()?,
            shape: u8::try_from(at).ok()?,
            deferred: deferred(e),
        })
    }

    /// The entries of container `c`, in its order.
    pub fn entries_of(&self, c: &PackedFatbin) -> &[PackedEntry] {
        &self.entries[c.first as usize..(c.first + c.count) as usize]
    }

    /// The model entry `e` was packed from (but for cuobjdump's number,
    /// which a packed entry does not keep: 0).
    pub fn entry(&self, e: &PackedEntry) -> Entry {
        let mut out = self.shapes[usize::from(e.shape)].clone();
        let size = u64::from(e.size);
        out.size = size;
        out.stored = size;
        out.location = Location::File {
            offset: e.offset,
            size,
        };
        if let Some(nv) = &mut out.nvidia {
            nv.stored = usize::from(e.stored);
            nv.uncompressed_size = nv.uncompressed_size.map(|_| e.uncompressed);
        }
        out
    }
}

impl Node {
    /// A node with nothing in it yet.
    pub fn new(kind: NodeKind, name: impl Into<String>, file: impl Into<Source>) -> Node {
        Node {
            kind,
            name: name.into(),
            file: file.into(),
            offset: None,
            size: None,
            detail: None,
            linkage: None,
            index: None,
            children: Vec::new(),
            entries: Vec::new(),
            damage: Vec::new(),
            packed: None,
        }
    }

    /// Whether anything offload-related (or damage) is in here.
    pub fn is_interesting(&self) -> bool {
        self.kind.is_container()
            || !self.entries.is_empty()
            || self
                .packed
                .as_ref()
                .is_some_and(|p| !p.containers.is_empty())
            || !self.damage.is_empty()
            || self.children.iter().any(Node::is_interesting)
    }

    /// Visits every node with its path of names from the root.
    pub fn visit<'a>(&'a self, path: &mut Vec<&'a Node>, f: &mut dyn FnMut(&[&'a Node])) {
        path.push(self);
        f(path);
        for c in &self.children {
            c.visit(path, f);
        }
        path.pop();
    }

    /// Counts of (containers, entries, damage) in the subtree.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut out = (
            usize::from(self.kind.is_container()),
            self.entries.len(),
            self.damage.len(),
        );
        if let Some(p) = &self.packed {
            out.0 += p.containers.len();
            out.1 += p.entries.len();
        }
        for c in &self.children {
            let (a, b, d) = c.counts();
            out.0 += a;
            out.1 += b;
            out.2 += d;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fat binary container node as the walk makes one: `archs` its
    /// stored entries (compressed cubins), at `offset`.
    fn container(index: usize, offset: u64, archs: &[&str]) -> Node {
        let mut n = Node::new(
            NodeKind::Fatbin,
            format!("fatbin #{index}"),
            PathBuf::from("f"),
        );
        n.index = Some(index);
        n.offset = Some(offset);
        n.size = Some(0x100);
        for (i, a) in archs.iter().enumerate() {
            let (_, arch) = CudaArch::parse(a).unwrap();
            let nv = NvEntry {
                kind: EntryKind::Elf,
                arch,
                codec: Some(Codec::Zstd),
                uncompressed_size: Some(1000 + i as u64),
                number: 7 + i,
                member: None,
                unlisted_in: false,
                stored: i,
                header_len: 80,
            };
            let size = 0x10 + i as u64;
            n.entries.push(Entry {
                id: nv.suffix(),
                kind: Some(OffloadKind::Cuda),
                triple: Some(Triple::new("nvptx64-nvidia-cuda")),
                vendor: Vendor::Nvidia,
                target: Some(Target::Cuda(arch)),
                standardised: None,
                note: None,
                payload: None,
                payload_matches: None,
                size,
                stored: size,
                location: Location::File {
                    offset: offset + 0x40 * (i as u64 + 1),
                    size,
                },
                nvidia: Some(nv),
                data: None,
            });
        }
        n
    }

    #[test]
    fn packed_entries_come_back_as_they_were_but_for_their_number() {
        let mut p = Packed::default();
        let a = container(0, 0x1000, &["sm_80", "sm_90"]);
        let b = container(1, 0x2000, &["sm_80", "sm_90"]);
        assert!(p.pack(&a, |_| true));
        assert!(p.pack(&b, |e| e.size == 0x10));
        // The two containers share their entries' facts.
        assert_eq!(p.shapes.len(), 2);
        assert_eq!(p.containers.len(), 2);
        for (c, n) in p.containers.iter().zip([&a, &b]) {
            assert_eq!((Some(c.offset), Some(c.size)), (n.offset, n.size));
            assert_eq!(Some(c.index as usize), n.index);
            let back: Vec<Entry> = p.entries_of(c).iter().map(|e| p.entry(e)).collect();
            let mut want = n.entries.clone();
            for e in &mut want {
                e.nvidia.as_mut().unwrap().number = 0;
            }
            assert_eq!(back, want);
        }
        let deferred: Vec<bool> = p.entries.iter().map(|e| e.deferred).collect();
        assert_eq!(deferred, [true, true, true, false]);
    }

    #[test]
    fn damaged_and_concatenated_containers_stay_nodes() {
        let mut p = Packed::default();
        let mut damaged = container(0, 0x1000, &["sm_80"]);
        damaged.damage.push(Damage {
            offset: Some(0x1000),
            message: "bad".to_owned(),
        });
        assert!(!p.pack(&damaged, |_| true));
        let mut member = container(1, 0x2000, &["sm_75"]);
        member.entries[0].nvidia.as_mut().unwrap().member = Some((0, 0x10));
        assert!(!p.pack(&member, |_| true));
        let mut derived = container(2, 0x3000, &["sm_86"]);
        derived.entries[0].location = Location::Derived;
        assert!(!p.pack(&derived, |_| true));
        assert_eq!(p, Packed::default());
        assert!(!Node::new(NodeKind::Section, "s", PathBuf::from("f")).is_interesting());
    }

    #[test]
    fn packed_containers_count_as_containers() {
        let mut s = Node::new(NodeKind::Section, ".nv_fatbin", PathBuf::from("f"));
        assert!(s
            .packed
            .get_or_insert_with(Default::default)
            .pack(&container(0, 0, &["sm_80", "sm_90"]), |_| false));
        assert!(s.is_interesting());
        assert_eq!(s.counts(), (1, 2, 0));
    }
}
