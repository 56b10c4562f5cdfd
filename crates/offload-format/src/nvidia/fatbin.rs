//! NVIDIA fat binaries: the containers CUDA compilers put in `.nv_fatbin`
//! (and, for relocatable device code, `__nv_relfatbin`).
//!
//! NVIDIA does not document the layout; this reader follows public
//! descriptions, checked against the CUDA 12 libraries of NVIDIA's own
//! wheels (every offset and size tiles the section, every ELF entry parses
//! as an ELF file with `e_machine` 190 whose SM matches the entry's).
//!
//! A section holds one or more containers back to back (each a multiple of
//! 8 bytes long), possibly separated by zero padding. All integers are
//! little-endian.
//!
//! ```text
//! container header (16 bytes)
//!   0  u32 magic 0xBA55ED50
//!   4  u16 version (1)
//!   6  u16 header size (16): where the first entry starts
//!   8  u64 size of everything after the header
//! entry header (64 bytes or more)
//!   0  u16 kind: 1 = PTX, 2 = ELF (cubin), 8 = NVVM IR, 0x100 = concatenated
//!   2  u16 entry format version (0x0101)
//!   4  u32 header size: where the payload starts, from the entry's start
//!   8  u64 payload size (stored bytes, padded to 8)
//!  16  u32 compressed size (0 when the payload is not compressed)
//!  20  u32 offset of the options text in the header, 0 if none
//!  24  u16 minor version, 26 u16 major version (of the code or PTX ISA)
//!  28  u32 SM architecture (e.g. 90 for sm_90)
//!  32  u32 object name offset, 36 u32 object name length
//!  40  u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host,
//!      0x2000 compressed, 0x8000 compressed with zstd,
//!      0x10000 beside either on NVVM IR (NVIDIA's own encoding)
//!  48  u64 reserved
//!  56  u64 uncompressed size (when compressed)
//! payload, then the next entry at header size + payload size
//! ```
//!
//! [`scan`] walks a whole section: it reports each container and entry with
//! its offset, and damage at the offset where it was found, then goes on
//! looking for the next container magic (at an 8-byte boundary), so one
//! damaged container does not hide the others. Nothing is decompressed:
//! compressed payloads are handed out as stored.

use std::borrow::Cow;
use std::fmt;
use std::io::Write;

use crate::bytes::{Bytes, Endian};

use super::arch::CudaArch;
use super::codec::{self, Codec, DecodeError};

pub use crate::damage::{Damage, DamageKind};

/// The container magic (`50 ED 55 BA` in the file).
pub const MAGIC: u32 = 0xBA55_ED50;

/// Size of a container header.
pub(crate) const HEADER_LEN: usize = 16;

/// The smallest entry header.
pub(crate) const ENTRY_HEADER_MIN: usize = 64;

/// Entry flag: the payload is compressed (alone: with NVIDIA's LZ codec).
pub const FLAG_COMPRESSED: u64 = 0x2000;

/// Entry flag: the payload is compressed with zstd.
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;

/// Entry flag: 64-bit code.
pub const FLAG_64BIT: u64 = 0x1;

/// Entry flag: debug information.
pub const FLAG_DEBUG: u64 = 0x2;

/// What an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text.
    Ptx,
    /// An ELF device object (cubin).
    Elf,
    /// NVVM IR (link-time optimisation input, kind 8: nvcc's
    /// `code=lto_XY`; cuobjdump's "Fatbin nvvm code"). Its payload is in an
    /// encoding of NVIDIA's own, compressed or not (no LLVM bitcode magic):
    /// see [`EntryKind::is_opaque`].
    NvvmIr,
    /// Several entries compressed together (CUDA 13's `--concat`, kind
    /// 0x100): see [`Entry::members`].
    Concatenated,
    /// A kind this reader does not know.
    Other(u16),
}

impl EntryKind {
    fn from_code(code: u16) -> EntryKind {
        match code {
            1 => EntryKind::Ptx,
            2 => EntryKind::Elf,
            8 => EntryKind::NvvmIr,
            0x100 => EntryKind::Concatenated,
            other => EntryKind::Other(other),
        }
    }

    /// Whether this crate leaves the payload as stored, never decoding it:
    /// NVVM IR, whose bytes are NVIDIA's own encoding even where the entry
    /// flags a codec (nvcc 13's `code=lto_90` with `--compress-mode=speed`
    /// or `size` sets 0x10000 beside 0x2000 or 0x8000, and the stream is
    /// neither an LZ block nor a zstd frame; cuFFT 11.4's `.ldata` holds
    /// 11,651 such entries). cuobjdump lists these entries and extracts
    /// none of them.
    pub fn is_opaque(self) -> bool {
        self == EntryKind::NvvmIr
    }

    /// A short lower-case name (`ptx`, `elf`, `nvvm-ir`, `kind-N`).
    pub fn name(self) -> Cow<'static, str> {
        match self {
            EntryKind::Ptx => "ptx".into(),
            EntryKind::Elf => "elf".into(),
            EntryKind::NvvmIr => "nvvm-ir".into(),
            EntryKind::Concatenated => "concatenated".into(),
            EntryKind::Other(n) => format!("kind-{n}").into(),
        }
    }

    /// The file extension cuobjdump gives this kind (`cubin`, `ptx`), and
    /// ours for the kinds it does not extract (`nvvm`, `bin`).
    pub fn extension(self) -> &'static str {
        match self {
            EntryKind::Ptx => "ptx",
            EntryKind::Elf => "cubin",
            EntryKind::NvvmIr => "nvvm",
            EntryKind::Concatenated | EntryKind::Other(_) => "bin",
        }
    }
}

/// One entry of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Offset of the entry header in the scanned input.
    pub offset: usize,
    /// The payload's kind.
    pub kind: EntryKind,
    /// The entry header's size (the payload starts there).
    pub header_size: u32,
    /// Stored payload bytes, padding included.
    pub stored_size: u64,
    /// The compressed size (0 when not compressed).
    pub compressed_size: u32,
    /// The architecture: the header's number with the variant its flags
    /// record.
    pub arch: CudaArch,
    /// Major version of the code (ELF) or of the PTX ISA.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// The flags word.
    pub flags: u64,
    /// The uncompressed size recorded for a compressed payload (0 otherwise).
    pub uncompressed_size: u64,
    /// Offset of the payload in the scanned input.
    pub payload_offset: usize,
    /// The payload as stored: for a compressed entry the compressed bytes
    /// (`compressed_size` of them), otherwise all `stored_size` bytes.
    pub payload: &'a [u8],
}

impl<'a> Entry<'a> {
    /// Whether the payload is stored compressed.
    pub fn is_compressed(&self) -> bool {
        self.codec().is_some()
    }

    /// The codec the payload is stored with, if compressed.
    pub fn codec(&self) -> Option<Codec> {
        if self.flags & FLAG_COMPRESSED_ZSTD != 0 {
            Some(Codec::Zstd)
        } else if self.flags & FLAG_COMPRESSED != 0 {
            Some(Codec::Lz)
        } else {
            None
        }
    }

    /// The codec this crate decodes the payload with: [`Entry::codec`],
    /// except for an opaque kind ([`EntryKind::is_opaque`]), whose payload
    /// is left as stored.
    pub fn decoded_with(&self) -> Option<Codec> {
        self.codec().filter(|_| !self.kind.is_opaque())
    }

    /// `sm_90a`: the architecture as cuobjdump names this entry's kind
    /// (see [`CudaArch::cuobjdump_name`]).
    pub fn arch_name(&self) -> String {
        self.arch.cuobjdump_name(self.kind == EntryKind::Ptx)
    }

    /// `sm_90a.cubin`, `sm_90.ptx`: the end of the file names cuobjdump
    /// gives this entry when extracting it.
    pub fn cuobjdump_suffix(&self) -> String {
        format!("{}.{}", self.arch_name(), self.kind.extension())
    }

    /// The payload as stored, with what decoding it needs.
    pub fn stored(&self) -> StoredPayload<'a> {
        StoredPayload {
            codec: self.decoded_with(),
            payload: self.payload,
            uncompressed_size: self.uncompressed_size,
        }
    }

    /// The first `n` bytes (fewer if shorter) of the payload as decoded:
    /// only as much of a compressed stream is decoded as they need.
    /// An opaque payload ([`EntryKind::is_opaque`]) is handed out as
    /// stored.
    pub fn head(&self, n: usize) -> Result<Cow<'a, [u8]>, DecodeError> {
        self.stored().head(n)
    }

    /// Decodes the whole payload of a compressed entry, one piece at a
    /// time and keeping none of it, and checks that the stream is sound to
    /// its end and decodes to exactly the size the header records (the
    /// check [`Entry::head`] makes only as far as it decodes). Returns the
    /// decoded size; a stored payload has nothing to decode (its stored
    /// size, as for an opaque one). Memory: the codec's window and one
    /// piece.
    pub fn check_stream(&self) -> Result<u64, DecodeError> {
        match self.decoded_with() {
            None => Ok(self.payload.len() as u64),
            Some(codec) => codec::decode(codec, self.payload, self.uncompressed_size, &mut |_| {
                Ok(true)
            }),
        }
    }

    /// Writes the entry's content as cuobjdump's `-xelf` / `-xptx` write
    /// it, decoding a compressed payload on the way (one piece at a time:
    /// the whole content is never held): a cubin without the padding after
    /// its last byte, PTX text up to its terminating NUL, anything else as
    /// decoded; an opaque kind's payload as stored. Returns the bytes
    /// written.
    pub fn write_content(&self, out: &mut dyn Write) -> Result<u64, DecodeError> {
        write_content(
            self.kind,
            self.codec(),
            self.uncompressed_size,
            self.payload,
            out,
        )
    }
}

/// One entry inside a concatenated entry ([`EntryKind::Concatenated`]):
/// its header as the concatenated entry's table records it, and where its
/// bytes are in the decoded payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// What it is.
    pub kind: EntryKind,
    /// Its architecture.
    pub arch: CudaArch,
    /// Major version of the code.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Its flags word.
    pub flags: u64,
    /// Offset of its bytes in the decoded payload.
    pub offset: u64,
    /// Their number.
    pub size: u64,
}

/// Size of one member header in a concatenated entry's table.
const MEMBER_HEADER: u64 = 64;

/// Why the member table of a concatenated entry ([`Entry::members`]) cannot
/// be read. `entry` is the entry header's offset in the scanned input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberTableError {
    /// The entry header lies outside the input.
    HeaderOutside {
        /// Offset of the entry header.
        entry: usize,
    },
    /// The entry header is too short to hold the member count.
    NoTable {
        /// Offset of the entry header.
        entry: usize,
    },
    /// The table holds more members than the entry header has room for.
    TablePastHeader {
        /// Offset of the entry header.
        entry: usize,
        /// The member count recorded.
        count: u32,
    },
    /// A member header is cut short.
    MemberCut {
        /// Offset of the entry header.
        entry: usize,
        /// The member's index.
        index: u64,
    },
    /// A member lies outside the entry's decoded payload.
    MemberOutside {
        /// The member's index.
        index: u64,
        /// Its offset in the decoded payload.
        offset: u64,
        /// Its size.
        size: u64,
        /// The decoded payload's size.
        total: u64,
    },
}

impl fmt::Display for MemberTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberTableError::HeaderOutside { .. } => {
                f.write_str("concatenated entry header outside the input")
            }
            MemberTableError::NoTable { .. } => {
                f.write_str("concatenated entry header has no member table")
            }
            MemberTableError::TablePastHeader { count, .. } => write!(
                f,
                "member table of {count} entries runs past the entry header"
            ),
            MemberTableError::MemberCut { .. } => f.write_str("member header cut short"),
            MemberTableError::MemberOutside {
                index,
                offset,
                size,
                total,
            } => write!(
                f,
                "member {index} ({size} bytes at {offset}) lies outside the {total} decoded bytes"
            ),
        }
    }
}

impl std::error::Error for MemberTableError {}

impl<'a> Entry<'a> {
    /// The members of a concatenated entry, from the table its header
    /// holds after the first 64 bytes (u32 count, u32 table size, then one
    /// 64-byte header per member: kind at 0, offset in the decoded payload
    /// at 4, size at 8, versions at 24, architecture at 28, flags at 40).
    /// Empty for other kinds. `data` is the scanned input (the table is in
    /// the entry header, at [`Entry::offset`]). Every member must lie
    /// inside the decoded size the entry records.
    pub fn members(&self, data: &[u8]) -> Result<Vec<Member>, MemberTableError> {
        if self.kind != EntryKind::Concatenated {
            return Ok(Vec::new());
        }
        let entry = self.offset;
        let header = data
            .get(self.offset..self.offset.saturating_add(self.header_size as usize))
            .ok_or(MemberTableError::HeaderOutside { entry })?;
        let b = Bytes::new(header);
        let le = Endian::Little;
        let count = b
            .u32_at(64, le)
            .ok_or(MemberTableError::NoTable { entry })?;
        let total = if self.is_compressed() {
            self.uncompressed_size
        } else {
            self.payload.len() as u64
        };
        let mut out = Vec::new();
        for i in 0..u64::from(count) {
            let at = 72 + i * MEMBER_HEADER;
            let m = b
                .slice(at, MEMBER_HEADER)
                .ok_or(MemberTableError::TablePastHeader { entry, count })?;
            let m = Bytes::new(m);
            let (
                Some(kind),
                Some(offset),
                Some(size),
                Some(minor),
                Some(major),
                Some(arch),
                Some(flags),
            ) = (
                m.u16_at(0, le),
                m.u32_at(4, le),
                m.u64_at(8, le),
                m.u16_at(24, le),
                m.u16_at(26, le),
                m.u32_at(28, le),
                m.u64_at(40, le),
            )
            else {
                return Err(MemberTableError::MemberCut { entry, index: i });
            };
            let offset = u64::from(offset);
            if offset.checked_add(size).is_none_or(|end| end > total) {
                return Err(MemberTableError::MemberOutside {
                    index: i,
                    offset,
                    size,
                    total,
                });
            }
            out.push(Member {
                kind: EntryKind::from_code(kind),
                arch: CudaArch::from_entry(arch, flags),
                major,
                minor,
                flags,
                offset,
                size,
            });
        }
        Ok(out)
    }

    /// The first `n` bytes of each of `ranges` (offset, size) of the
    /// decoded payload, decoding only as far as the last of them needs.
    pub fn range_heads(&self, ranges: &[(u64, u64)], n: u64) -> Result<Vec<Vec<u8>>, DecodeError> {
        self.stored().range_heads(ranges, n)
    }
}

/// An entry's payload as stored (compressed or not) and what decoding it
/// needs, apart from the rest of its header: what a caller that kept
/// only those facts (and the payload's place) names it from.
#[derive(Clone, Copy, Debug)]
pub struct StoredPayload<'a> {
    /// The codec that decodes it: none for a payload used as stored
    /// (uncompressed, or of an opaque kind: [`EntryKind::is_opaque`]).
    pub codec: Option<Codec>,
    /// The bytes as stored.
    pub payload: &'a [u8],
    /// The uncompressed size the header records (compressed payloads).
    pub uncompressed_size: u64,
}

impl<'a> StoredPayload<'a> {
    /// The first `n` bytes (fewer if shorter) of the payload as decoded:
    /// only as much of a compressed stream is decoded as they need.
    pub fn head(&self, n: usize) -> Result<Cow<'a, [u8]>, DecodeError> {
        let Some(codec) = self.codec else {
            return Ok(Cow::Borrowed(&self.payload[..n.min(self.payload.len())]));
        };
        if let Some(head) = self.native_head(codec, n) {
            return Ok(Cow::Owned(head));
        }
        let mut out = Vec::with_capacity(n.min(crate::zstd_bounded::PIECE));
        codec::decode(codec, self.payload, self.uncompressed_size, &mut |piece| {
            let take = piece.len().min(n - out.len());
            out.extend_from_slice(&piece[..take]);
            Ok(out.len() < n)
        })?;
        Ok(Cow::Owned(out))
    }

    /// The first `n` bytes of a zstd payload decoded natively (only as
    /// far as they need), when that decoder answers; `None` leaves them
    /// to [`codec::decode`] (libzstd), which also gives every error.
    fn native_head(&self, codec: Codec, n: usize) -> Option<Vec<u8>> {
        match codec {
            Codec::Zstd => {
                crate::zstd_bounded::native_head(self.payload, self.uncompressed_size, n)
            }
            Codec::Lz => None,
        }
    }

    /// The first `n` bytes of each of `ranges` (offset, size) of the
    /// decoded payload, decoding only as far as the last of them needs.
    pub fn range_heads(&self, ranges: &[(u64, u64)], n: u64) -> Result<Vec<Vec<u8>>, DecodeError> {
        let wanted: Vec<(u64, u64)> = ranges
            .iter()
            .map(|&(o, size)| (o, o.saturating_add(size.min(n))))
            .collect();
        let mut heads: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
        let last = wanted.iter().map(|w| w.1).max().unwrap_or(0);
        let mut copy = |pos: u64, piece: &[u8]| {
            let end = pos + piece.len() as u64;
            for (h, &(from, to)) in heads.iter_mut().zip(&wanted) {
                let (a, b) = (from.max(pos), to.min(end));
                if a < b {
                    h.extend_from_slice(&piece[(a - pos) as usize..(b - pos) as usize]);
                }
            }
            end < last
        };
        match self.codec {
            None => {
                copy(0, self.payload);
            }
            Some(c) => {
                if let Some(head) = usize::try_from(last)
                    .ok()
                    .and_then(|last| self.native_head(c, last))
                {
                    copy(0, &head);
                    return Ok(heads);
                }
                let mut pos = 0u64;
                codec::decode(c, self.payload, self.uncompressed_size, &mut |piece| {
                    let more = copy(pos, piece);
                    pos += piece.len() as u64;
                    Ok(more)
                })?;
            }
        }
        Ok(heads)
    }
}

/// Writes `size` bytes at `offset` of an entry's decoded payload (a member
/// of a concatenated entry), decoding only as far as they need.
pub fn write_range(
    codec: Option<Codec>,
    uncompressed_size: u64,
    payload: &[u8],
    offset: u64,
    size: u64,
    out: &mut dyn Write,
) -> Result<u64, DecodeError> {
    let end = offset.saturating_add(size);
    let mut pos = 0u64;
    let mut written = 0u64;
    let mut put = |piece: &[u8]| -> Result<bool, DecodeError> {
        let piece_end = pos + piece.len() as u64;
        let (a, b) = (offset.max(pos), end.min(piece_end));
        if a < b {
            out.write_all(&piece[(a - pos) as usize..(b - pos) as usize])
                .map_err(|e| DecodeError::Write(e.into()))?;
            written += b - a;
        }
        pos = piece_end;
        Ok(piece_end < end)
    };
    match codec {
        None => {
            put(payload)?;
        }
        Some(c) => {
            codec::decode(c, payload, uncompressed_size, &mut put)?;
        }
    }
    if written != size {
        return Err(DecodeError::Short {
            decoded: written,
            recorded: size,
        });
    }
    Ok(written)
}

/// [`Entry::write_content`] from an entry's facts and its stored payload
/// (`payload`: the compressed stream of a compressed entry, else the stored
/// bytes), for callers that keep the facts and not the [`Entry`].
pub fn write_content(
    kind: EntryKind,
    codec: Option<Codec>,
    uncompressed_size: u64,
    payload: &[u8],
    out: &mut dyn Write,
) -> Result<u64, DecodeError> {
    let write =
        |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(|e| DecodeError::Write(e.into()));
    let Some(codec) = codec.filter(|_| !kind.is_opaque()) else {
        let content = match kind {
            EntryKind::Elf => &payload[..elf_extent(payload)],
            EntryKind::Ptx => crate::bytes::until_nul(payload),
            _ => payload,
        };
        write(out, content)?;
        return Ok(content.len() as u64);
    };
    let ptx = kind == EntryKind::Ptx;
    let mut written = 0u64;
    let mut ended = false;
    codec::decode(codec, payload, uncompressed_size, &mut |piece| {
        if ended {
            return Ok(true);
        }
        let piece = if ptx {
            let text = crate::bytes::until_nul(piece);
            ended = text.len() < piece.len();
            text
        } else {
            piece
        };
        write(out, piece)?;
        written += piece.len() as u64;
        Ok(true)
    })?;
    Ok(written)
}

/// Where an ELF image ends: past its headers, header tables and the data
/// of its segments and sections (not `SHT_NOBITS`, nor NVIDIA's
/// `0x7000000A` sections of relocatable cubins, as cuobjdump counts); all
/// of `data` when it is no ELF file the crate's ELF reader accepts (a
/// damaged image is handed out whole).
fn elf_extent(data: &[u8]) -> usize {
    let Ok(elf) = crate::objfile::elf::ElfFile::parse(data) else {
        return data.len();
    };
    let h = elf.header();
    let table = |off: u64, size: u16, n: u16| off.checked_add(u64::from(size) * u64::from(n));
    // The ELF header itself, whatever its size field says.
    let header = if h.class.is64 { 64 } else { 52 };
    let mut ends = vec![
        Some(u64::from(h.ehsize).max(header)),
        table(h.phoff, h.phentsize, h.phnum),
        table(h.shoff, h.shentsize, h.shnum),
    ];
    ends.extend(
        elf.section_headers()
            .iter()
            .filter(|s| s.sh_type != 8 && s.sh_type != 0x7000_000A)
            .map(|s| s.offset.checked_add(s.size)),
    );
    match elf.program_headers() {
        Ok(phs) => ends.extend(phs.iter().map(|p| p.offset.checked_add(p.filesz))),
        Err(_) => return data.len(),
    }
    match ends.into_iter().collect::<Option<Vec<u64>>>() {
        Some(ends) => ends
            .into_iter()
            .max()
            .and_then(|e| usize::try_from(e).ok())
            .map_or(data.len(), |e| e.min(data.len())),
        None => data.len(),
    }
}

/// One container and its entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container<'a> {
    /// Offset of the container header in the scanned input.
    pub offset: usize,
    /// The header's version field.
    pub version: u16,
    /// The header's size field.
    pub header_size: u16,
    /// Bytes after the header, as recorded.
    pub payload_size: u64,
    /// The entries read before the end or before damage.
    pub entries: Vec<Entry<'a>>,
}

impl Container<'_> {
    /// Bytes the container occupies, header included.
    pub fn len(&self) -> u64 {
        (self.header_size as u64).saturating_add(self.payload_size)
    }

    /// Always false: a container has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// What [`scan`] found, in input order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The containers (a damaged one holds the entries read before the
    /// damage).
    pub containers: Vec<Container<'a>>,
    /// Damage, in input order.
    pub damage: Vec<Damage>,
}

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Bytes::new(d).u16_at(at as u64, Endian::Little)
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Bytes::new(d).u32_at(at as u64, Endian::Little)
}

fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    Bytes::new(d).u64_at(at as u64, Endian::Little)
}

/// True if `data` starts with a container magic.
pub fn has_magic(data: &[u8]) -> bool {
    u32_at(data, 0) == Some(MAGIC)
}

/// Offset of the next container magic at an 8-byte boundary at or after
/// `from`.
fn next_magic(data: &[u8], from: usize) -> Option<usize> {
    let mut at = from.checked_add(7)? & !7;
    while at.checked_add(4)? <= data.len() {
        if u32_at(data, at) == Some(MAGIC) {
            return Some(at);
        }
        at = at.checked_add(8)?;
    }
    None
}

/// Reads the entry at `at`, which must end by `end`.
fn read_entry(data: &[u8], at: usize, end: usize) -> Result<(Entry<'_>, usize), String> {
    if end.saturating_sub(at) < ENTRY_HEADER_MIN {
        return Err(format!(
            "entry header needs {ENTRY_HEADER_MIN} bytes, {} left in the container",
            end.saturating_sub(at)
        ));
    }
    let cut = || "entry header cut short".to_owned();
    let kind = u16_at(data, at).ok_or_else(cut)?;
    let header_size = u32_at(data, at + 4).ok_or_else(cut)?;
    let stored_size = u64_at(data, at + 8).ok_or_else(cut)?;
    let compressed_size = u32_at(data, at + 16).ok_or_else(cut)?;
    let minor = u16_at(data, at + 24).ok_or_else(cut)?;
    let major = u16_at(data, at + 26).ok_or_else(cut)?;
    let arch = u32_at(data, at + 28).ok_or_else(cut)?;
    let flags = u64_at(data, at + 40).ok_or_else(cut)?;
    let uncompressed_size = u64_at(data, at + 56).ok_or_else(cut)?;
    if (header_size as usize) < ENTRY_HEADER_MIN {
        return Err(format!(
            "entry header size {header_size} is below the minimum {ENTRY_HEADER_MIN}"
        ));
    }
    let payload_offset = at
        .checked_add(header_size as usize)
        .filter(|&p| p <= end)
        .ok_or_else(|| format!("entry header size {header_size} runs past the container"))?;
    let next = u64::try_from(payload_offset)
        .ok()
        .and_then(|p| p.checked_add(stored_size))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= end)
        .ok_or_else(|| {
            format!(
                "entry payload ({stored_size} bytes at offset {payload_offset}) runs past the container end at {end}"
            )
        })?;
    let mut entry = Entry {
        offset: at,
        kind: EntryKind::from_code(kind),
        header_size,
        stored_size,
        compressed_size,
        arch: CudaArch::from_entry(arch, flags),
        major,
        minor,
        flags,
        uncompressed_size,
        payload_offset,
        payload: &[],
    };
    let kept = if entry.is_compressed() {
        if u64::from(compressed_size) > stored_size {
            return Err(format!(
                "compressed size {compressed_size} exceeds the stored size {stored_size}"
            ));
        }
        payload_offset + compressed_size as usize
    } else {
        next
    };
    entry.payload = data.get(payload_offset..kept).unwrap_or_default();
    Ok((entry, next))
}

/// Reads the container at `at`. Returns it (with the entries read so far),
/// the offset after it, and the damage that stopped the entry walk.
fn read_container(
    data: &[u8],
    at: usize,
) -> Result<(Container<'_>, usize, Option<Damage>), Damage> {
    let damage = |what: String| Damage {
        offset: at,
        kind: DamageKind::Container,
        what,
    };
    let cut = || damage("container header cut short".into());
    let version = u16_at(data, at + 4).ok_or_else(cut)?;
    let header_size = u16_at(data, at + 6).ok_or_else(cut)?;
    let payload_size = u64_at(data, at + 8).ok_or_else(cut)?;
    if (header_size as usize) < HEADER_LEN {
        return Err(damage(format!(
            "container header size {header_size} is below {HEADER_LEN}"
        )));
    }
    let end = u64::try_from(at)
        .ok()
        .and_then(|a| a.checked_add(header_size as u64))
        .and_then(|a| a.checked_add(payload_size))
        .and_then(|e| usize::try_from(e).ok())
        .filter(|&e| e <= data.len())
        .ok_or_else(|| {
            damage(format!(
                "container size {payload_size} runs past the end of the input ({} bytes after the container start)",
                data.len() - at
            ))
        })?;
    let mut container = Container {
        offset: at,
        version,
        header_size,
        payload_size,
        entries: Vec::new(),
    };
    let mut pos = at + header_size as usize;
    while pos < end {
        match read_entry(data, pos, end) {
            Ok((entry, next)) => {
                container.entries.push(entry);
                pos = next;
            }
            Err(what) => {
                let damage = Damage {
                    offset: pos,
                    kind: DamageKind::Entry,
                    what,
                };
                return Ok((container, end, Some(damage)));
            }
        }
    }
    Ok((container, end, None))
}

/// Walks every container in `data`, a section made for them (`.nv_fatbin`,
/// `__nv_relfatbin`, a fat binary file).
///
/// Zero bytes between containers are padding. Anything else that is not a
/// container is reported as damage, and the walk resumes at the next magic
/// on an 8-byte boundary.
pub fn scan(data: &[u8]) -> Scan<'_> {
    collect(Scanner::new(data, false))
}

/// Walks the containers held in `data`, a section that holds other data
/// too (`.cask_resource` of cuBLASLt): bytes between containers are not
/// damage, and a magic whose header cannot start a container (version
/// other than 1, header size other than 16, a size past the section) is
/// taken for other data. Damage inside a container that fits is reported.
pub fn scan_embedded(data: &[u8]) -> Scan<'_> {
    collect(Scanner::new(data, true))
}

fn collect(scanner: Scanner<'_>) -> Scan<'_> {
    let mut out = Scan::default();
    for found in scanner {
        match found {
            Found::Container(c, damage) => {
                out.containers.push(c);
                out.damage.extend(damage);
            }
            Found::Damage(d) => out.damage.push(d),
        }
    }
    out
}

/// What a [`Scanner`] finds next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found<'a> {
    /// A container, and the damage that stopped its entry walk, if any.
    Container(Container<'a>, Option<Damage>),
    /// Damage between containers, or a container that cannot be read.
    Damage(Damage),
}

/// [`scan`] and [`scan_embedded`] one find at a time, in input order, so
/// that a caller can be done with each container's bytes before the next
/// is read. [`Scanner::position`] says how far it has read.
#[derive(Clone, Debug)]
pub struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    embedded: bool,
}

impl<'a> Scanner<'a> {
    /// A scanner of `data`; `embedded` as [`scan_embedded`].
    pub fn new(data: &'a [u8], embedded: bool) -> Scanner<'a> {
        Scanner {
            data,
            pos: 0,
            embedded,
        }
    }

    /// The offset the scan has reached: everything before it was read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves past at most `max` bytes of zero padding at the scan
    /// position; returns whether more padding follows them. A caller that
    /// lets go of what it has read can call this in a loop before
    /// [`Iterator::next`], so that a long zeroed span (the space a thinned
    /// container freed) is not all read at once.
    pub fn skip_padding(&mut self, max: usize) -> bool {
        let end = self.pos.saturating_add(max).min(self.data.len());
        let span = self.data.get(self.pos..end).unwrap_or_default();
        match span.iter().position(|&b| b != 0) {
            Some(skip) => {
                self.pos += skip;
                false
            }
            None => {
                self.pos = end;
                end < self.data.len()
            }
        }
    }
}

impl<'a> Iterator for Scanner<'a> {
    type Item = Found<'a>;

    fn next(&mut self) -> Option<Found<'a>> {
        let data = self.data;
        loop {
            let pos = self.pos;
            if pos >= data.len() {
                return None;
            }
            // Skip zero padding.
            self.skip_padding(data.len() - pos);
            let pos = self.pos;
            if pos >= data.len() {
                return None;
            }
            if self.embedded && !(has_magic(&data[pos..]) && plausible_header(data, pos)) {
                self.pos = next_embedded(data, pos + 1).unwrap_or(data.len());
                continue;
            }
            if !has_magic(&data[pos..]) {
                let resume = next_magic(data, pos + 1);
                self.pos = resume.unwrap_or(data.len());
                return Some(Found::Damage(Damage {
                    offset: pos,
                    kind: DamageKind::NotAContainer,
                    what: match resume {
                        Some(r) => format!(
                            "{} bytes that are not a fat binary container (resuming at offset {r})",
                            r - pos
                        ),
                        None => {
                            "bytes that are not a fat binary container, up to the end".to_owned()
                        }
                    },
                }));
            }
            return Some(match read_container(data, pos) {
                Ok((container, next, damage)) => {
                    self.pos = next;
                    Found::Container(container, damage)
                }
                Err(d) => {
                    self.pos = next_magic(data, pos + 1).unwrap_or(data.len());
                    Found::Damage(d)
                }
            });
        }
    }
}

/// Whether the container header at `at` is one nvcc writes: version 1,
/// header size 16, a size that fits in `data`.
fn plausible_header(data: &[u8], at: usize) -> bool {
    let size = u64_at(data, at + 8);
    u16_at(data, at + 4) == Some(1)
        && u16_at(data, at + 6) == Some(HEADER_LEN as u16)
        && size.is_some_and(|s| s <= (data.len() - at - HEADER_LEN) as u64)
}

/// The next offset at or after `from`, on an 8-byte boundary, where a
/// plausible container starts.
fn next_embedded(data: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at = next_magic(data, at)?;
        if plausible_header(data, at) {
            return Some(at);
        }
        at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use test_support::{fatbin as container, fatbin_with, FatbinEntry};

    use crate::nvidia::arch::Variant;

    fn entry(kind: u16, arch: u32, flags: u64, payload: &[u8]) -> FatbinEntry<'_> {
        FatbinEntry::new(kind, arch, flags, payload)
    }

    fn content(e: &Entry<'_>) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        let n = e.write_content(&mut out)?;
        assert_eq!(n, out.len() as u64);
        Ok(out)
    }

    /// A minimal ELF64 image: header, one section of 8 bytes at 64, the
    /// section header table at 72 (two entries), `pad` zero bytes after.
    fn elf(pad: usize) -> Vec<u8> {
        let mut d = vec![0u8; 72 + 128];
        d[..4].copy_from_slice(b"\x7fELF");
        d[4] = 2;
        d[5] = 1;
        d[40..48].copy_from_slice(&72u64.to_le_bytes());
        d[58..60].copy_from_slice(&64u16.to_le_bytes());
        d[60..62].copy_from_slice(&2u16.to_le_bytes());
        let sh = 72 + 64;
        d[sh + 4..sh + 8].copy_from_slice(&1u32.to_le_bytes());
        d[sh + 24..sh + 32].copy_from_slice(&64u64.to_le_bytes());
        d[sh + 32..sh + 40].copy_from_slice(&8u64.to_le_bytes());
        d[64..72].copy_from_slice(b"CODE0123");
        d.resize(d.len() + pad, 0);
        d
    }

    /// Zero padding is passed over at most `max` bytes at a time, and the
    /// container after it is found as without the steps.
    #[test]
    fn padding_is_skipped_a_piece_at_a_time() {
        let one = container(&[(2, 90, 0x11, b"payload!", 0)]);
        let mut data = one.clone();
        data.resize(data.len() + 100, 0);
        let second = data.len();
        data.extend(&one);
        let mut s = Scanner::new(&data, false);
        assert!(matches!(s.next(), Some(Found::Container(..))));
        let mut steps = 0;
        while s.skip_padding(16) {
            steps += 1;
            assert!(s.position() < second);
        }
        assert_eq!((steps, s.position()), (100 / 16, second));
        // Not at padding: nothing moves.
        assert!(!s.skip_padding(16));
        assert_eq!(s.position(), second);
        match s.next() {
            Some(Found::Container(c, None)) => assert_eq!(c.offset, second),
            other => panic!("{other:?}"),
        }
        assert!(s.next().is_none());
        assert!(!s.skip_padding(16));
    }

    #[test]
    fn content_as_cuobjdump_writes_it() {
        let image = elf(0);
        let padded = elf(5);
        let ptx = b"//\n.version 9.0\n.target sm_90\n\0\0\0";
        let zptx = zstd::bulk::compress(&ptx[..ptx.len() - 2], 3).unwrap();
        let zelf = zstd::bulk::compress(&image, 3).unwrap();
        let lelf = crate::nvidia::codec::lz::tests::encode(&image);
        let data = fatbin_with(&[
            entry(2, 90, 0x100011, &padded),
            entry(1, 90, 0x11, ptx),
            FatbinEntry {
                compressed_size: zptx.len() as u32,
                uncompressed_size: (ptx.len() - 2) as u64,
                header_size: 80,
                ..entry(1, 100, 0x208011, &zptx)
            },
            FatbinEntry {
                compressed_size: zelf.len() as u32,
                uncompressed_size: image.len() as u64,
                ..entry(2, 80, 0x8011, &zelf)
            },
            FatbinEntry {
                compressed_size: lelf.len() as u32,
                uncompressed_size: image.len() as u64,
                header_size: 112,
                ..entry(2, 100, 0x1202011, &lelf)
            },
        ]);
        let s = scan(&data);
        assert!(s.damage.is_empty(), "{:?}", s.damage);
        let e = &s.containers[0].entries;
        assert_eq!(e.len(), 5);
        // A stored cubin loses the padding after its last section; PTX
        // ends at its NUL, stored or compressed.
        assert_eq!(content(&e[0]).unwrap(), image);
        assert_eq!(content(&e[1]).unwrap(), &ptx[..ptx.len() - 3]);
        assert_eq!(content(&e[2]).unwrap(), &ptx[..ptx.len() - 3]);
        assert_eq!(content(&e[3]).unwrap(), image);
        assert_eq!(content(&e[4]).unwrap(), image);
        assert_eq!(e[3].head(4).unwrap().as_ref(), b"\x7fELF");
        assert_eq!(e[4].head(1000).unwrap().as_ref(), image.as_slice());
        // Names and variants.
        let names: Vec<String> = e.iter().map(Entry::cuobjdump_suffix).collect();
        assert_eq!(
            names,
            [
                "sm_90a.cubin",
                "sm_90.ptx",
                "sm_100f.ptx",
                "sm_80.cubin",
                "sm_100.cubin"
            ]
        );
        assert_eq!(e[4].arch.variant(), Variant::Family);
        assert_eq!(e[4].codec(), Some(Codec::Lz));
        assert_eq!(e[3].codec(), Some(Codec::Zstd));
    }

    /// Damage past what naming a payload decodes (its first 4 KiB): a
    /// stream cut short, bytes after its end, a byte changed deep inside.
    /// `head` does not see it; `check_stream` does, with each codec.
    #[test]
    fn whole_streams_are_checked_to_their_end() {
        // Several zstd blocks (at most 128 KiB each) and many LZ flushes.
        let mut data = Vec::new();
        let mut x = 7u32;
        while data.len() < 400_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            data.extend_from_slice(format!("w{} ", (x >> 16) % 3000).as_bytes());
        }
        let streams = [
            (0x8011u64, zstd::bulk::compress(&data, 3).unwrap()),
            (0x2011, crate::nvidia::codec::lz::tests::encode(&data)),
        ];
        for (flags, stream) in streams {
            let with = |payload: &[u8]| {
                fatbin_with(&[FatbinEntry {
                    compressed_size: payload.len() as u32,
                    uncompressed_size: data.len() as u64,
                    ..entry(1, 90, flags, payload)
                }])
            };
            fn first(d: &[u8]) -> Entry<'_> {
                scan(d).containers[0].entries[0]
            }
            let good = with(&stream);
            assert_eq!(first(&good).check_stream(), Ok(data.len() as u64));
            let cut = with(&stream[..stream.len() * 3 / 4]);
            let mut trailing = stream.clone();
            trailing.extend_from_slice(b"\x01\x02\x03 not part of the stream");
            let trailing = with(&trailing);
            // The first change past the head that the codec can see.
            let flipped = (stream.len() / 2..stream.len())
                .map(|at| {
                    let mut s = stream.clone();
                    s[at] ^= 0x55;
                    with(&s)
                })
                .find(|d| first(d).check_stream().is_err())
                .expect("a change the codec sees");
            for damaged in [&cut, &trailing, &flipped] {
                let e = first(damaged);
                assert_eq!(e.head(4096).unwrap().as_ref(), &data[..4096], "{flags:#x}");
                assert!(e.check_stream().is_err(), "{flags:#x}");
            }
        }
        // A stored payload: nothing to decode.
        let stored = fatbin_with(&[entry(2, 90, 0x11, b"12345678")]);
        assert_eq!(scan(&stored).containers[0].entries[0].check_stream(), Ok(8));
    }

    #[test]
    fn decompression_bombs_and_lies() {
        let image = elf(0);
        let z = zstd::bulk::compress(&image, 3).unwrap();
        let l = crate::nvidia::codec::lz::tests::encode(&image);
        let cases: [(&[u8], u64, u64); 6] = [
            // zstd: the frame records its size; the entry another.
            (&z, 0x8011, 1 << 40),
            (&z, 0x8011, image.len() as u64 - 1),
            (&z, 0x8011, image.len() as u64 + 1),
            // LZ: more than the stream can hold, fewer, more.
            (&l, 0x2011, 1 << 40),
            (&l, 0x2011, image.len() as u64 - 1),
            (&l, 0x2011, image.len() as u64 + 1),
        ];
        for (payload, flags, recorded) in cases {
            let data = fatbin_with(&[FatbinEntry {
                compressed_size: payload.len() as u32,
                uncompressed_size: recorded,
                ..entry(2, 90, flags, payload)
            }]);
            let s = scan(&data);
            let e = s.containers[0].entries[0];
            let err = content(&e).unwrap_err();
            assert!(
                matches!(
                    err,
                    DecodeError::Implausible { .. }
                        | DecodeError::FrameSize { .. }
                        | DecodeError::Overrun { .. }
                        | DecodeError::Short { .. }
                ),
                "{flags:#x} {recorded}: {err}"
            );
        }
        // A zstd frame without a recorded content size that decodes to more
        // than the entry says: stopped after one piece.
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
            .unwrap();
        let zeros = c.compress(&vec![0u8; 50 << 20]).unwrap();
        assert!(zeros.len() < 1 << 20);
        let data = fatbin_with(&[FatbinEntry {
            compressed_size: zeros.len() as u32,
            uncompressed_size: 100,
            ..entry(2, 90, 0x8011, &zeros)
        }]);
        let e = scan(&data).containers[0].entries[0];
        assert_eq!(content(&e), Err(DecodeError::Overrun { limit: 100 }));
    }

    #[test]
    fn embedded_containers_among_other_data() {
        let good = container(&[(2, 80, 0x11, b"abcdefgh", 0)]);
        let mut data = b"resource table: not a container".to_vec();
        data.resize(40, 7);
        data.extend_from_slice(&good);
        // A magic whose header is not one nvcc writes, then more data.
        data.extend_from_slice(&MAGIC.to_le_bytes());
        data.extend_from_slice(&[9, 0, 16, 0]);
        data.extend_from_slice(&[0xee; 20]);
        let second = data.len().next_multiple_of(8);
        data.resize(second, 1);
        data.extend_from_slice(&good);
        data.extend_from_slice(b"trailing");
        let s = scan_embedded(&data);
        assert!(s.damage.is_empty(), "{:?}", s.damage);
        let offsets: Vec<usize> = s.containers.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, [40, second]);
        // The same bytes as a section made for containers: damage.
        let strict = scan(&data);
        assert!(strict
            .damage
            .iter()
            .any(|d| d.kind == DamageKind::NotAContainer));
    }

    #[test]
    fn two_containers_with_padding() {
        let mut data = container(&[
            (2, 80, 0x11, b"\x7fELF-eighty", 0),
            (1, 90, 0x11, b"ptx", 0),
        ]);
        data.extend_from_slice(&[0; 16]);
        let second = data.len();
        data.extend(container(&[(2, 52, 0x11 | FLAG_COMPRESSED, b"zzzzzz", 5)]));
        let s = scan(&data);
        assert!(s.damage.is_empty(), "{:?}", s.damage);
        assert_eq!(s.containers.len(), 2);
        let c0 = &s.containers[0];
        assert_eq!(c0.offset, 0);
        assert_eq!(c0.entries.len(), 2);
        assert_eq!(c0.entries[0].kind, EntryKind::Elf);
        assert_eq!(c0.entries[0].arch_name(), "sm_80");
        assert_eq!(c0.entries[0].payload, b"\x7fELF-eighty\0\0\0\0\0");
        assert_eq!(c0.entries[0].payload_offset, 16 + 64);
        assert_eq!(c0.entries[1].kind, EntryKind::Ptx);
        assert_eq!(c0.len() as usize, second - 16);
        let c1 = &s.containers[1];
        assert_eq!(c1.offset, second);
        let e = c1.entries[0];
        assert!(e.is_compressed());
        assert_eq!(e.codec(), Some(Codec::Lz));
        assert_eq!(e.payload, b"zzzzz");
        assert_eq!(e.stored_size, 8);
    }

    #[test]
    fn damage_is_reported_and_the_rest_kept() {
        let good = container(&[(2, 80, 0x11, b"abcdefgh", 0)]);
        // Garbage, then a container whose size runs past the end of its
        // own space, then a good one.
        let mut data = b"garbage!".to_vec();
        data.extend_from_slice(&good);
        let bad_at = data.len();
        let mut bad = container(&[(2, 70, 0x11, b"12345678", 0)]);
        // Entry stored size far too large.
        bad[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        data.extend_from_slice(&bad);
        let last = data.len();
        data.extend_from_slice(&good);
        let s = scan(&data);
        assert_eq!(s.containers.len(), 3);
        assert_eq!(s.containers[0].offset, 8);
        assert_eq!(s.containers[1].offset, bad_at);
        assert!(s.containers[1].entries.is_empty());
        assert_eq!(s.containers[2].offset, last);
        assert_eq!(s.damage.len(), 2);
        assert_eq!(s.damage[0].offset, 0);
        assert_eq!(s.damage[1].offset, bad_at + 16);
        assert!(s.damage[1].what.contains("runs past"), "{}", s.damage[1]);
    }

    #[test]
    fn container_size_past_the_end() {
        let mut data = container(&[(2, 80, 0x11, b"abcdefgh", 0)]);
        data[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let s = scan(&data);
        assert!(s.containers.is_empty());
        assert_eq!(s.damage.len(), 1);
        assert_eq!(s.damage[0].offset, 0);
    }

    #[test]
    fn hostile_inputs_never_panic() {
        let good = container(&[
            (2, 80, 0x11, b"abcdefghij", 0),
            (1, 90, 0x11 | FLAG_COMPRESSED_ZSTD, b"abc", 3),
        ]);
        for cut in 0..good.len() {
            let s = scan(&good[..cut]);
            assert!(s.containers.len() <= 1);
        }
        for i in 0..good.len() {
            for v in [0u8, 0xff, 0x40, 0x7f] {
                let mut d = good.clone();
                d[i] = v;
                let s = scan(&d);
                for c in &s.containers {
                    for e in &c.entries {
                        assert!(e.payload_offset + e.payload.len() <= d.len());
                    }
                }
            }
        }
        assert_eq!(scan(&[]), Scan::default());
        assert_eq!(scan(&[0; 100]), Scan::default());
    }
    /// NVVM IR (kind 8, cuobjdump's "nvvm") is NVIDIA's own encoding even
    /// where its flags name a codec (nvcc 13's `code=lto_90` with
    /// `--compress-mode=speed` sets 0x12011, and its stream is no LZ
    /// block): it is read, checked and written as stored, never decoded.
    #[test]
    fn nvvm_ir_is_kind_8_and_left_as_stored() {
        // Bytes that do not decode as an LZ block (a back-reference
        // before the start), as in cuFFT's and nvcc's entries.
        let stream = b"\x1b\x73\x6b\xe0\x20\x1d\x2f\x0e\xaa";
        let data = fatbin_with(&[
            FatbinEntry {
                compressed_size: stream.len() as u32,
                uncompressed_size: 2692,
                header_size: 120,
                ..entry(8, 90, 0x12011, stream)
            },
            FatbinEntry {
                compressed_size: stream.len() as u32,
                uncompressed_size: 2692,
                ..entry(1, 90, 0x2011, stream)
            },
        ]);
        let s = scan(&data);
        assert!(s.damage.is_empty(), "{:?}", s.damage);
        let e = &s.containers[0].entries;
        assert_eq!(e[0].kind, EntryKind::NvvmIr);
        assert!(e[0].kind.is_opaque() && !e[1].kind.is_opaque());
        assert_eq!(e[0].codec(), Some(Codec::Lz));
        assert_eq!(e[0].decoded_with(), None);
        assert_eq!(e[0].head(4).unwrap().as_ref(), &stream[..4]);
        assert_eq!(e[0].check_stream().unwrap(), stream.len() as u64);
        assert_eq!(content(&e[0]).unwrap(), stream);
        assert_eq!(e[0].cuobjdump_suffix(), "sm_90.nvvm");
        // The same bytes as PTX are decoded, and fail.
        assert!(e[1].head(4).is_err());
        assert!(e[1].check_stream().is_err());
        // Kind 4 is not NVVM IR (cuobjdump calls it "cubin").
        let four = fatbin_with(&[entry(4, 90, 0x11, b"12345678")]);
        assert_eq!(
            scan(&four).containers[0].entries[0].kind,
            EntryKind::Other(4)
        );
    }
}
