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
//!   0  u16 kind: 1 = PTX, 2 = ELF (cubin), 4 = NVVM IR
//!   2  u16 entry format version (0x0101)
//!   4  u32 header size: where the payload starts, from the entry's start
//!   8  u64 payload size (stored bytes, padded to 8)
//!  16  u32 compressed size (0 when the payload is not compressed)
//!  20  u32 offset of the options text in the header, 0 if none
//!  24  u16 minor version, 26 u16 major version (of the code or PTX ISA)
//!  28  u32 SM architecture (e.g. 90 for sm_90)
//!  32  u32 object name offset, 36 u32 object name length
//!  40  u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host,
//!      0x2000 compressed, 0x8000 compressed with zstd
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

use crate::bytes::{Bytes, Endian};

/// The container magic (`50 ED 55 BA` in the file).
pub const MAGIC: u32 = 0xBA55_ED50;

/// Size of a container header.
pub(crate) const HEADER_LEN: usize = 16;

/// The smallest entry header.
pub(crate) const ENTRY_HEADER_MIN: usize = 64;

/// Entry flag: the payload is compressed.
pub const FLAG_COMPRESSED: u64 = 0x2000;

/// Entry flag: the payload is compressed with zstd.
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;

/// Entry flag: 64-bit code.
pub const FLAG_64BIT: u64 = 0x1;

/// Entry flag: debug information.
pub const FLAG_DEBUG: u64 = 0x2;

/// What an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// PTX text.
    Ptx,
    /// An ELF device object (cubin).
    Elf,
    /// NVVM IR (link-time optimisation input).
    NvvmIr,
    /// A kind this reader does not know.
    Other(u16),
}

impl EntryKind {
    fn from_code(code: u16) -> EntryKind {
        match code {
            1 => EntryKind::Ptx,
            2 => EntryKind::Elf,
            4 => EntryKind::NvvmIr,
            other => EntryKind::Other(other),
        }
    }

    /// A short lower-case name (`ptx`, `elf`, `nvvm-ir`, `kind-N`).
    pub fn name(self) -> String {
        match self {
            EntryKind::Ptx => "ptx".to_owned(),
            EntryKind::Elf => "elf".to_owned(),
            EntryKind::NvvmIr => "nvvm-ir".to_owned(),
            EntryKind::Other(n) => format!("kind-{n}"),
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
    /// SM architecture number (90 for `sm_90`).
    pub arch: u32,
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

impl Entry<'_> {
    /// Whether the payload is stored compressed.
    pub(crate) fn is_compressed(&self) -> bool {
        self.flags & (FLAG_COMPRESSED | FLAG_COMPRESSED_ZSTD) != 0
    }

    /// The compression, as a name: `zstd`, `nvidia` (NVIDIA's own LZ-style
    /// scheme) or `None` when stored as is.
    pub fn compression(&self) -> Option<&'static str> {
        if self.flags & FLAG_COMPRESSED_ZSTD != 0 {
            Some("zstd")
        } else if self.flags & FLAG_COMPRESSED != 0 {
            Some("nvidia")
        } else {
            None
        }
    }

    /// `sm_NN`.
    pub fn arch_name(&self) -> String {
        format!("sm_{}", self.arch)
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

pub use crate::hip_fatbin::Damage;

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
    let field = |r: Option<u64>| r.ok_or_else(|| "entry header cut short".to_owned());
    let kind = field(u16_at(data, at).map(u64::from))? as u16;
    let header_size = field(u32_at(data, at + 4).map(u64::from))? as u32;
    let stored_size = field(u64_at(data, at + 8))?;
    let compressed_size = field(u32_at(data, at + 16).map(u64::from))? as u32;
    let minor = field(u16_at(data, at + 24).map(u64::from))? as u16;
    let major = field(u16_at(data, at + 26).map(u64::from))? as u16;
    let arch = field(u32_at(data, at + 28).map(u64::from))? as u32;
    let flags = field(u64_at(data, at + 40))?;
    let uncompressed_size = field(u64_at(data, at + 56))?;
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
        arch,
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
    let damage = |what: String| Damage { offset: at, what };
    let version =
        u16_at(data, at + 4).ok_or_else(|| damage("container header cut short".into()))?;
    let header_size =
        u16_at(data, at + 6).ok_or_else(|| damage("container header cut short".into()))?;
    let payload_size =
        u64_at(data, at + 8).ok_or_else(|| damage("container header cut short".into()))?;
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
            Err(what) => return Ok((container, end, Some(Damage { offset: pos, what }))),
        }
    }
    Ok((container, end, None))
}

/// Walks every container in `data` (a `.nv_fatbin` section, say).
///
/// Zero bytes between containers are padding. Anything else that is not a
/// container is reported as damage, and the walk resumes at the next magic
/// on an 8-byte boundary.
pub fn scan(data: &[u8]) -> Scan<'_> {
    let mut out = Scan::default();
    let mut pos = 0usize;
    while pos < data.len() {
        // Skip zero padding.
        match data.get(pos..).and_then(|t| t.iter().position(|&b| b != 0)) {
            Some(skip) => pos += skip,
            None => break,
        }
        if !has_magic(&data[pos..]) {
            let resume = next_magic(data, pos + 1);
            out.damage.push(Damage {
                offset: pos,
                what: match resume {
                    Some(r) => format!(
                        "{} bytes that are not a fat binary container (resuming at offset {r})",
                        r - pos
                    ),
                    None => "bytes that are not a fat binary container, up to the end".to_owned(),
                },
            });
            match resume {
                Some(r) => {
                    pos = r;
                    continue;
                }
                None => break,
            }
        }
        match read_container(data, pos) {
            Ok((container, next, damage)) => {
                out.containers.push(container);
                out.damage.extend(damage);
                pos = next;
            }
            Err(d) => {
                out.damage.push(d);
                match next_magic(data, pos + 1) {
                    Some(r) => pos = r,
                    None => break,
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use test_support::fatbin as container;

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
        assert_eq!(e.compression(), Some("nvidia"));
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
}
