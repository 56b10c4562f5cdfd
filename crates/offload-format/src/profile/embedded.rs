//! NVIDIA images embedded among other data: fat binary containers and bare
//! cubins held in `.rodata`, `.data`, `.ldata` and the like, which programs
//! load with `cuModuleLoadData` (onnxruntime's `.rodata` cubins, cuFFT's
//! `.ldata`), found and validated, not guessed.
//!
//! A fat binary container counts when its header is one [`fatbin`]'s
//! embedded scan accepts, its entries all read, and each stored (not
//! compressed) cubin in it passes the checks below. A bare cubin counts
//! when it starts on an 8-byte boundary with an ELF64 little-endian header
//! for `EM_CUDA`, its section header table reads (in bounds, string table
//! sound), and its headers, header tables, sections and segments all end
//! inside the data scanned; its extent is where the last of them ends.
//! A header that claims to be one of these (a container header of version
//! 1 and size 16, an `EM_CUDA` ELF header) and fails a check is damage;
//! anything else is other data.

use crate::nvidia::fatbin::{self, Container, Damage, DamageKind};
use crate::objfile::elf::{ElfFile, SHT_NOBITS};

/// One image found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image<'a> {
    /// A fat binary container.
    Fatbin(Container<'a>),
    /// A bare cubin.
    Cubin {
        /// Its offset in the data scanned.
        offset: usize,
        /// Its bytes, to where its extent ends.
        bytes: &'a [u8],
        /// The SM its `e_flags` name.
        sm: u32,
    },
}

impl Image<'_> {
    /// Where it starts in the data scanned.
    pub fn offset(&self) -> usize {
        match self {
            Image::Fatbin(c) => c.offset,
            Image::Cubin { offset, .. } => *offset,
        }
    }

    /// How many bytes it takes.
    pub fn len(&self) -> u64 {
        match self {
            Image::Fatbin(c) => c.len(),
            Image::Cubin { bytes, .. } => bytes.len() as u64,
        }
    }

    /// Never: an image has at least a header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// What [`scan`] found, in data order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found<'a> {
    /// The images.
    pub images: Vec<Image<'a>>,
    /// Headers that claim an image and fail a check.
    pub damage: Vec<Damage>,
    /// Containers that read, but whose compressed cubins or PTX do not
    /// start to decode with this crate's codecs: not listed, counted here,
    /// not damage (the bytes may be sound for a codec this crate does not
    /// have). NVVM IR entries are not decoded ([`fatbin::EntryKind::is_opaque`]):
    /// cuFFT's `.ldata` containers of it are listed.
    pub undecoded: usize,
}

/// `EM_CUDA`.
const EM_CUDA: u16 = 190;

/// The extent of the cubin at the start of `data`: `Ok(None)` when `data`
/// does not start with an `EM_CUDA` ELF64 little-endian header; an error
/// saying what is wrong when it does and fails a check (see the module
/// documentation); else its length and SM.
pub fn cubin_extent(data: &[u8]) -> Result<Option<(usize, u32)>, String> {
    if data.len() < 64
        || !data.starts_with(b"\x7fELF")
        || data[4] != 2
        || data[5] != 1
        || u16::from_le_bytes([data[18], data[19]]) != EM_CUDA
    {
        return Ok(None);
    }
    let elf = ElfFile::parse(data).map_err(|e| e.to_string())?;
    let h = elf.header();
    if h.shnum == 0 || h.shoff == 0 {
        return Err("no section header table".to_owned());
    }
    elf.section_name_table()
        .map_err(|e| format!("section names: {e}"))?;
    let table = |off: u64, size: u16, n: u16| off.checked_add(u64::from(size) * u64::from(n));
    let mut ends = vec![
        Some(u64::from(h.ehsize).max(64)),
        table(h.phoff, h.phentsize, h.phnum),
        table(h.shoff, h.shentsize, h.shnum),
    ];
    for s in elf.section_headers() {
        if s.sh_type != SHT_NOBITS {
            ends.push(s.offset.checked_add(s.size));
        }
    }
    for p in elf.program_headers().map_err(|e| e.to_string())? {
        ends.push(p.offset.checked_add(p.filesz));
    }
    let mut end = 0u64;
    for (i, e) in ends.into_iter().enumerate() {
        let e = e.ok_or_else(|| format!("part {i} of the image overflows its offsets"))?;
        if e > data.len() as u64 {
            return Err(format!(
                "its headers and sections end at {e}, past the {} bytes that hold it",
                data.len()
            ));
        }
        end = end.max(e);
    }
    let sm = crate::payload::cuda_sm(h.flags, h.abi_version);
    Ok(Some((end as usize, sm)))
}

/// Whether a container header at the start of `data` claims a container
/// (version 1, header size 16).
fn claims_fatbin(data: &[u8]) -> bool {
    data.len() >= 16
        && fatbin::has_magic(data)
        && data.get(4..6) == Some(&1u16.to_le_bytes()[..])
        && data.get(6..8) == Some(&16u16.to_le_bytes()[..])
}

/// Finds the images in `data` (see the module documentation), on 8-byte
/// boundaries counted from the start of `data`.
pub fn scan(data: &[u8]) -> Found<'_> {
    scan_range(data, 0, 0, data.len()).0
}

/// [`scan`] of the images that start in `from..to` of `data`, on the
/// offsets `p` where `phase + p` is a multiple of 8 (`phase`: where `data`
/// lies in its file, so that boundaries are the file's: cuFFT's `.ldata`
/// starts 4 bytes past one, its containers on the file's boundaries).
/// Images may end past `to` (not past `data`). Returns what was found and
/// where a next call should start (`to`, or past an image that crosses
/// it), so that a caller can scan a large section a piece at a time and
/// let go of each piece's pages.
pub fn scan_range(data: &[u8], phase: usize, from: usize, to: usize) -> (Found<'_>, usize) {
    let mut out = Found::default();
    let to = to.min(data.len());
    // The first boundary at or after `from`.
    let mut at = from + ((8 - (phase.wrapping_add(from) % 8)) % 8);
    while at < to && at.saturating_add(8) <= data.len() {
        let rest = &data[at..];
        if claims_fatbin(rest) {
            let size = u64::from_le_bytes(rest[8..16].try_into().unwrap_or([0; 8]));
            let fits = size.checked_add(16).filter(|&n| n <= rest.len() as u64);
            let Some(len) = fits else {
                out.damage.push(Damage {
                    offset: at,
                    kind: DamageKind::Container,
                    what: format!(
                        "a fat binary container header among other data records {size} bytes \
                         after it, past the {} bytes that hold it",
                        rest.len() - 16
                    ),
                });
                at += 8;
                continue;
            };
            let held = &rest[..len as usize];
            match fatbin::Scanner::new(held, true).next() {
                Some(fatbin::Found::Container(mut c, damage)) if c.offset == 0 => {
                    let bad = match damage {
                        Some(d) => Some(format!("does not read completely: {}", d.what)),
                        None => c.entries.iter().find_map(|e| {
                            if e.kind != fatbin::EntryKind::Elf || e.is_compressed() {
                                return None;
                            }
                            match cubin_extent(e.payload) {
                                Ok(Some(_)) => None,
                                Ok(None) => Some("holds an ELF entry that is no cubin".to_owned()),
                                Err(why) => {
                                    Some(format!("holds a cubin that does not read: {why}"))
                                }
                            }
                        }),
                    };
                    let undecodable = bad.is_none()
                        && c.entries
                            .iter()
                            .any(|e| e.is_compressed() && e.head(64).is_err());
                    if undecodable {
                        out.undecoded += 1;
                        at = next_boundary(phase, at.saturating_add(len as usize).max(at + 8));
                        continue;
                    }
                    match bad {
                        Some(why) => out.damage.push(Damage {
                            offset: at,
                            kind: DamageKind::Container,
                            what: format!("a fat binary container among other data {why}"),
                        }),
                        None => {
                            // Offsets in `data`, not in the container.
                            c.offset += at;
                            for e in &mut c.entries {
                                e.offset += at;
                                e.payload_offset += at;
                            }
                            out.images.push(Image::Fatbin(c));
                        }
                    }
                    at = next_boundary(phase, at.saturating_add(len as usize).max(at + 8));
                    continue;
                }
                Some(fatbin::Found::Damage(d)) => out.damage.push(Damage {
                    offset: at + d.offset,
                    ..d
                }),
                _ => {}
            }
        } else if rest.starts_with(b"\x7fELF") {
            match cubin_extent(rest) {
                Ok(Some((len, sm))) => {
                    out.images.push(Image::Cubin {
                        offset: at,
                        bytes: &rest[..len],
                        sm,
                    });
                    at = next_boundary(phase, at.saturating_add(len.max(8)));
                    continue;
                }
                Ok(None) => {}
                Err(why) => out.damage.push(Damage {
                    offset: at,
                    kind: DamageKind::Container,
                    what: format!("an NVIDIA cubin header among other data: {why}"),
                }),
            }
        }
        at += 8;
    }
    (out, at.max(to))
}

/// The first offset at or after `at` on the file's 8-byte boundaries.
fn next_boundary(phase: usize, at: usize) -> usize {
    at + ((8 - (phase.wrapping_add(at) % 8)) % 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal cubin: ELF header, a section name table, a section
    /// header table of two entries.
    fn cubin(sm: u32) -> Vec<u8> {
        let names = b"\0.shstrtab\0";
        let mut d = vec![0u8; 64];
        d[..4].copy_from_slice(b"\x7fELF");
        d[4] = 2;
        d[5] = 1;
        d[6] = 1;
        d[7] = 0x41;
        d[8] = 7;
        d[16..18].copy_from_slice(&2u16.to_le_bytes());
        d[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        d[20..24].copy_from_slice(&1u32.to_le_bytes());
        let shoff = 64 + 16u64;
        d[40..48].copy_from_slice(&shoff.to_le_bytes());
        d[48..52].copy_from_slice(&(sm | (sm << 16)).to_le_bytes());
        d[52..54].copy_from_slice(&64u16.to_le_bytes());
        d[58..60].copy_from_slice(&64u16.to_le_bytes());
        d[60..62].copy_from_slice(&2u16.to_le_bytes());
        d[62..64].copy_from_slice(&1u16.to_le_bytes());
        d.extend_from_slice(names);
        d.resize(80, 0);
        d.extend_from_slice(&[0u8; 64]);
        let mut sh = [0u8; 64];
        sh[0..4].copy_from_slice(&1u32.to_le_bytes());
        sh[4..8].copy_from_slice(&3u32.to_le_bytes());
        sh[24..32].copy_from_slice(&64u64.to_le_bytes());
        sh[32..40].copy_from_slice(&(names.len() as u64).to_le_bytes());
        d.extend_from_slice(&sh);
        d
    }

    #[test]
    fn finds_bare_cubins_among_data() {
        let c = cubin(90);
        let mut data = vec![0x11u8; 40];
        data.extend_from_slice(&c);
        data.extend_from_slice(&[0x22; 24]);
        let found = scan(&data);
        assert!(found.damage.is_empty(), "{:?}", found.damage);
        assert_eq!(
            found.images,
            vec![Image::Cubin {
                offset: 40,
                bytes: &data[40..40 + c.len()],
                sm: 90
            }]
        );
        // Not on an 8-byte boundary: other data; on the file's boundary
        // (the data starting 4 bytes past one), found.
        let mut odd = vec![0u8; 4];
        odd.extend_from_slice(&c);
        assert!(scan(&odd).images.is_empty());
        let (found, next) = scan_range(&odd, 4, 0, odd.len());
        assert_eq!(found.images.len(), 1);
        assert_eq!(found.images[0].offset(), 4);
        assert!(next >= odd.len());
        // A scan in pieces finds the same, the piece's end moved past an
        // image that crosses it.
        let (first, next) = scan_range(&data, 0, 0, 48);
        assert_eq!(first.images.len(), 1);
        assert_eq!(next, 40 + c.len().div_ceil(8) * 8);
    }

    #[test]
    fn a_cubin_running_past_the_data_is_damage() {
        let c = cubin(80);
        let cut = &c[..c.len() - 8];
        let found = scan(cut);
        assert!(found.images.is_empty());
        assert_eq!(found.damage.len(), 1, "{:?}", found.damage);
        // The section table pointing outside.
        let mut far = c.clone();
        far[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let found = scan(&far);
        assert!(found.images.is_empty());
        assert_eq!(found.damage.len(), 1);
    }

    /// Found by the `profile` fuzz target: a container magic, version and
    /// header size in the last 8 bytes.
    #[test]
    fn a_container_header_cut_short_is_other_data() {
        let mut data = vec![0u8; 16];
        data[8..12].copy_from_slice(&fatbin::MAGIC.to_le_bytes());
        data[12..14].copy_from_slice(&1u16.to_le_bytes());
        data[14..16].copy_from_slice(&16u16.to_le_bytes());
        let found = scan(&data);
        assert!(found.images.is_empty() && found.damage.is_empty());
    }

    #[test]
    fn a_container_header_lying_about_its_size_is_damage() {
        let mut data = vec![0x33u8; 64];
        data[16..20].copy_from_slice(&fatbin::MAGIC.to_le_bytes());
        data[20..22].copy_from_slice(&1u16.to_le_bytes());
        data[22..24].copy_from_slice(&16u16.to_le_bytes());
        data[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let found = scan(&data);
        assert!(found.images.is_empty());
        assert_eq!(found.damage.len(), 1, "{:?}", found.damage);
        assert_eq!(found.damage[0].offset, 16);
    }
    /// cuFFT's `.ldata`: containers of compressed NVVM IR (NVIDIA's own
    /// encoding, not decoded) are images; a container whose compressed
    /// PTX does not decode is still counted apart, not listed.
    #[test]
    fn nvvm_ir_containers_are_images_and_bad_streams_are_counted() {
        use test_support::{fatbin_with, FatbinEntry};
        let stream = b"\x1b\x73\x6b\xe0\x20\x1d\x2f\x0e\xaa";
        let one = |kind: u16| {
            fatbin_with(&[FatbinEntry {
                compressed_size: stream.len() as u32,
                uncompressed_size: 2692,
                ..FatbinEntry::new(kind, 50, 0x12011, stream)
            }])
        };
        let mut data = vec![0x44u8; 24];
        data.extend(one(8));
        let nvvm_at = 24;
        data.extend(one(1));
        let found = scan(&data);
        assert!(found.damage.is_empty(), "{:?}", found.damage);
        assert_eq!(found.undecoded, 1);
        assert_eq!(found.images.len(), 1);
        let Image::Fatbin(c) = &found.images[0] else {
            panic!("{:?}", found.images)
        };
        assert_eq!(c.offset, nvvm_at);
        assert_eq!(c.entries[0].kind, fatbin::EntryKind::NvvmIr);
        assert_eq!(c.entries[0].payload, stream);
    }
}
