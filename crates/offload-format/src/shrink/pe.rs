//! Shrinking a PE32+ (x86-64) DLL.
//!
//! A section's raw data (`PointerToRawData`, `SizeOfRawData`, a multiple
//! of `FileAlignment`) may be shorter than its `VirtualSize`: the loader
//! fills the rest with zeros. So each offload section (`.nv_fatb`,
//! `__nv_rel`: nvcc's relocatable-device-code fat binaries, `.hip_fat`;
//! names are cut to 8 bytes in images) keeps its address and virtual
//! size, and only its file bytes shrink:
//!
//! 1. the kept containers are packed at the front of the section, each
//!    at its old offset from the section's start modulo 16 (NVIDIA) or
//!    4096 (HIP), so its address keeps that alignment;
//! 2. the section's `SizeOfRawData` becomes the packed size rounded up to
//!    `FileAlignment`; every later section's raw data, the overlay after
//!    the last section, the debug directory's raw data
//!    (`PointerToRawData`) and a COFF symbol table move down by the freed
//!    multiple of `FileAlignment`; `SizeOfInitializedData` shrinks by as
//!    much;
//! 3. each registration record (`__fatBinC_Wrapper_t` in `.nvFatBi`,
//!    `__hip_fatbin_wrapper` in `.hipFatB`) gets its container's new
//!    address. Its base relocation (`IMAGE_REL_BASED_DIR64`) marks the
//!    record's place, which does not move, so the relocation table stays.
//!
//! A nonzero `CheckSum` is recomputed for the output (the standard image
//! checksum: 16-bit words summed with end-around carry, the field taken
//! as zero, plus the file's length); a zero one stays zero.
//!
//! No address (RVA) changes. A signed DLL (a certificate table: its
//! signature covers the bytes), another base
//! relocation, export or symbol pointing into the section, a record
//! pointing outside the section or into the middle of a container,
//! two records for one container, a base relocation applied inside the
//! section, or sections overlapping it fall back (a [`Fallback`]).

use super::{copy, pack, Fallback, Layout, Out, Part, Rewrite};
use crate::bytes::{Bytes, Endian};
use crate::objfile::coff::{CoffFile, SectionHeader, SECTION_HEADER_SIZE};
use crate::objfile::elf;

const LE: Endian = Endian::Little;
/// `IMAGE_FILE_MACHINE_AMD64`.
const AMD64: u16 = 0x8664;
/// `IMAGE_SCN_CNT_INITIALIZED_DATA`.
const INITIALIZED_DATA: u32 = 0x40;
/// `IMAGE_REL_BASED_ABSOLUTE` (padding).
const REL_ABSOLUTE: u16 = 0;
/// `IMAGE_REL_BASED_DIR64`.
const REL_DIR64: u16 = 10;
/// Size of a debug directory entry.
const DEBUG_ENTRY: u64 = 28;

/// The bytes of a section the file holds: its raw data, up to its
/// virtual size (the rest is alignment padding).
fn raw_len(s: &SectionHeader) -> u64 {
    u64::from(s.size_of_raw_data).min(u64::from(s.virtual_size))
}

fn unreadable(what: &str) -> Fallback {
    Fallback::Unreadable(what.to_owned())
}

/// The sections of the image, with the facts [`shrink`] needs.
struct Image<'a> {
    file: &'a [u8],
    secs: Vec<SectionHeader>,
    table: u64,
}

impl Image<'_> {
    /// The file offset of `rva`, when it lies in a section's raw data.
    fn offset_of(&self, rva: u64) -> Option<u64> {
        self.secs.iter().find_map(|s| {
            let va = u64::from(s.virtual_address);
            let raw = raw_len(s);
            (s.pointer_to_raw_data != 0 && rva >= va && rva - va < raw)
                .then(|| u64::from(s.pointer_to_raw_data) + (rva - va))
        })
    }

    fn u64_at(&self, off: u64) -> Option<u64> {
        Bytes::new(self.file).u64_at(off, LE)
    }

    fn u32_at(&self, off: u64) -> Option<u32> {
        Bytes::new(self.file).u32_at(off, LE)
    }

    fn name(s: &SectionHeader) -> &[u8] {
        crate::bytes::until_nul(&s.name)
    }
}

/// The output of the DLL `file` with its containers rewritten
/// (`rewrites`, in file order, not overlapping, none growing) and the
/// freed bytes taken out (see the module documentation).
pub(super) fn shrink(file: &[u8], rewrites: &[Rewrite<'_>]) -> Result<Layout, Fallback> {
    let coff = CoffFile::parse_image(file).map_err(|e| Fallback::Unreadable(e.to_string()))?;
    if coff.machine() != AMD64 {
        return Err(Fallback::Kind("a PE file for a machine other than x86-64"));
    }
    let hdr = coff.header_offset();
    let opt = hdr + 20;
    let b = Bytes::new(file);
    if b.u16_at(opt, LE) != Some(0x20b) {
        return Err(Fallback::Kind("a PE32 (32-bit) file"));
    }
    let base = coff
        .image_base()
        .ok_or_else(|| unreadable("no ImageBase"))?;
    let field = |at: u64| {
        b.u32_at(opt + at, LE)
            .ok_or_else(|| unreadable("optional header"))
    };
    let file_align = u64::from(field(36)?);
    if !file_align.is_power_of_two() || !(512..=65536).contains(&file_align) {
        return Err(unreadable("bad FileAlignment"));
    }
    // A nonzero CheckSum is recomputed for the output (zero stays zero).
    let checksum_at = opt + 64;
    let has_checksum = field(64)? != 0;
    let ndirs = u64::from(field(108)?);
    let dir = |i: u64| -> Result<(u64, u64), Fallback> {
        if i >= ndirs {
            return Ok((0, 0));
        }
        Ok((
            u64::from(field(112 + 8 * i)?),
            u64::from(field(116 + 8 * i)?),
        ))
    };
    if dir(4)?.1 != 0 {
        return Err(Fallback::Reference(
            "the DLL is signed (a certificate table): shrinking breaks the signature".to_owned(),
        ));
    }
    let nsecs = coff.section_count();
    let secs = (0..nsecs)
        .map(|i| coff.section_header(i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Fallback::Unreadable(e.to_string()))?;
    let img = Image {
        file,
        secs,
        table: hdr + 20 + u64::from(b.u16_at(hdr + 16, LE).unwrap_or(0)),
    };
    super::check_rewrites(rewrites)?;
    if img.table + nsecs as u64 * SECTION_HEADER_SIZE > file.len() as u64 {
        return Err(unreadable("the section table is outside the file"));
    }
    // Each section holding containers, packed (in file order).
    let mut packed: Vec<Packed> = Vec::new();
    let mut i = 0;
    while i < rewrites.len() {
        let r = &rewrites[i];
        let si = img
            .secs
            .iter()
            .position(|s| {
                let p = u64::from(s.pointer_to_raw_data);
                p != 0 && p <= r.offset && p + raw_len(s) >= r.offset + r.size
            })
            .ok_or_else(|| {
                Fallback::Section(format!(
                    "the container at {:#x} is not inside one section's data",
                    r.offset
                ))
            })?;
        let sec = img.secs[si];
        let ptr = u64::from(sec.pointer_to_raw_data);
        let mut j = i;
        while j < rewrites.len() && rewrites[j].offset + rewrites[j].size <= ptr + raw_len(&sec) {
            j += 1;
        }
        let align = match Image::name(&sec) {
            b".nv_fatb" | b"__nv_rel" => 16,
            b".hip_fat" => 4096,
            n => {
                return Err(Fallback::Section(format!(
                    "containers are in section {}, not .nv_fatb, __nv_rel or .hip_fat",
                    String::from_utf8_lossy(n)
                )))
            }
        };
        let old_raw = u64::from(sec.size_of_raw_data);
        if ptr + old_raw > file.len() as u64 || ptr % file_align != 0 {
            return Err(unreadable(
                "an offload section's raw data is outside the file",
            ));
        }
        let va = base + u64::from(sec.virtual_address);
        let esec = elf::SectionHeader {
            // Packing keeps each container's offset from the section's
            // start modulo `align`, so its address too: the address is
            // set once packed (the file offset and the address need not
            // agree modulo `align` in an image).
            addr: ptr,
            offset: ptr,
            size: raw_len(&sec),
            addralign: align,
            ..Default::default()
        };
        let mut moves = pack(file, esec, rewrites, i..j)
            .ok_or_else(|| Fallback::Section("cannot pack the containers".to_owned()))?;
        moves.sec.addr = va;
        let new_raw = super::align_up(moves.new_size, file_align)
            .ok_or_else(|| unreadable("section size"))?;
        if new_raw > old_raw {
            // Packing never grows a section; a bad input could claim it.
            return Err(unreadable("an offload section's size"));
        }
        packed.push(Packed {
            si,
            ptr,
            old_end: ptr + old_raw,
            new_raw,
            cut: old_raw.saturating_sub(new_raw),
            moves,
        });
        i = j;
    }
    let total: u64 = packed.iter().map(|p| p.cut).sum();
    if total == 0 {
        let freed = packed
            .iter()
            .map(|p| p.moves.sec.size.saturating_sub(p.moves.new_size))
            .sum::<u64>();
        return Err(Fallback::Section(format!(
            "the packed sections are only {freed} bytes shorter, which frees no whole \
             FileAlignment unit ({file_align} bytes)"
        )));
    }
    let is_packed = |i: usize| packed.iter().any(|p| p.si == i);
    // Nothing else's raw data may lie in a packed section's.
    for (i, s) in img.secs.iter().enumerate() {
        let p = u64::from(s.pointer_to_raw_data);
        for k in &packed {
            if i != k.si && p != 0 && p < k.old_end && k.ptr < p + u64::from(s.size_of_raw_data) {
                return Err(Fallback::Overlap(format!(
                    "section {}",
                    String::from_utf8_lossy(Image::name(s))
                )));
            }
        }
        if s.pointer_to_relocations != 0 || s.pointer_to_linenumbers != 0 {
            return Err(Fallback::Reference(
                "a section of the image has COFF relocations or line numbers".to_owned(),
            ));
        }
    }
    if img.table + nsecs as u64 * SECTION_HEADER_SIZE > packed[0].ptr {
        return Err(Fallback::Overlap("the section table".to_owned()));
    }
    let shift = |off: u64| {
        off - packed
            .iter()
            .filter(|p| off >= p.old_end)
            .map(|p| p.cut)
            .sum::<u64>()
    };
    let inside = |off: u64, len: u64| packed.iter().any(|p| off < p.old_end && p.ptr < off + len);
    let moves_of = |addr: u64| packed.iter().map(|p| &p.moves).find(|m| m.contains(addr));
    let in_packed_rva = |rva: u64| {
        packed.iter().any(|p| {
            let s = &img.secs[p.si];
            let va = u64::from(s.virtual_address);
            rva >= va && rva - va < u64::from(s.virtual_size)
        })
    };
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();

    // The registration records.
    let mut fixer = super::Fixer {
        slots: Vec::new(),
        targeted: Default::default(),
    };
    let mut records = Vec::new();
    for (name, magic) in [
        (&b".nvFatBi"[..], super::NV_WRAPPER_MAGIC),
        (&b".hipFatB"[..], super::HIP_WRAPPER_MAGIC),
    ] {
        for (wi, w) in img.secs.iter().enumerate() {
            if Image::name(w) != name {
                continue;
            }
            if is_packed(wi) {
                return Err(Fallback::Overlap("the registration records".to_owned()));
            }
            let (wp, wlen) = (u64::from(w.pointer_to_raw_data), raw_len(w));
            let mut at = 0;
            while at + super::RECORD <= wlen {
                if img.u32_at(wp + at) == Some(magic) {
                    let slot = base + u64::from(w.virtual_address) + at + 8;
                    fixer.slots.push(slot);
                    records.push((slot, wp + at + 8));
                    at += super::RECORD;
                } else {
                    at += 8;
                }
            }
        }
    }
    fixer.slots.sort_unstable();
    for &(slot, off) in &records {
        let old = img.u64_at(off).ok_or_else(|| unreadable("record"))?;
        // A record pointing elsewhere (a container left in place) keeps
        // its value.
        let Some(moves) = moves_of(old) else {
            continue;
        };
        let new = fixer.fix(moves, slot, old, "a registration record")?;
        if new != old {
            patches.push((off, new.to_le_bytes().to_vec()));
        }
    }

    // Base relocations: every pointer into a packed section is a record's.
    let (rel_rva, rel_size) = dir(5)?;
    if rel_size != 0 {
        let roff = img
            .offset_of(rel_rva)
            .ok_or_else(|| unreadable("base relocation table outside the sections"))?;
        let table = b
            .slice(roff, rel_size)
            .ok_or_else(|| unreadable("base relocation table"))?;
        let t = Bytes::new(table);
        let mut at = 0u64;
        while at + 8 <= rel_size {
            let page = u64::from(t.u32_at(at, LE).unwrap_or(0));
            let size = u64::from(t.u32_at(at + 4, LE).unwrap_or(0));
            if size < 8 || at + size > rel_size {
                return Err(unreadable("a base relocation block's size"));
            }
            for e in (at + 8..at + size - 1).step_by(2) {
                let v = t.u16_at(e, LE).unwrap_or(0);
                let (kind, rva) = (v >> 12, page + u64::from(v & 0xfff));
                match kind {
                    REL_ABSOLUTE => continue,
                    REL_DIR64 => {}
                    k => {
                        return Err(Fallback::Reference(format!(
                            "a base relocation of type {k} at RVA {rva:#x}"
                        )))
                    }
                }
                if in_packed_rva(rva) {
                    return Err(Fallback::Reference(format!(
                        "a base relocation applies inside an offload section (RVA {rva:#x})"
                    )));
                }
                let Some(value) = img.offset_of(rva).and_then(|o| img.u64_at(o)) else {
                    continue;
                };
                if moves_of(value).is_some() && !fixer.is_slot(base + rva) {
                    return Err(Fallback::Reference(format!(
                        "a base relocation at RVA {rva:#x} points into an offload section \
                         ({value:#x}) and is not a registration record's pointer"
                    )));
                }
            }
            at += size;
        }
    }

    // Exports naming a packed section.
    let (exp_rva, exp_size) = dir(0)?;
    if exp_size != 0 {
        let eo = img
            .offset_of(exp_rva)
            .ok_or_else(|| unreadable("export directory"))?;
        let n = u64::from(img.u32_at(eo + 20).ok_or_else(|| unreadable("exports"))?);
        let funcs = img
            .u32_at(eo + 28)
            .and_then(|r| img.offset_of(u64::from(r)))
            .filter(|_| n > 0);
        if let Some(fo) = funcs {
            for k in 0..n {
                let r = u64::from(
                    img.u32_at(fo + 4 * k)
                        .ok_or_else(|| unreadable("export address table"))?,
                );
                if in_packed_rva(r) {
                    return Err(Fallback::Reference(format!(
                        "an export points into an offload section (RVA {r:#x})"
                    )));
                }
            }
        }
    }

    // A COFF symbol table (MinGW images): nothing may name a packed section.
    if coff.symbol_count() != 0 {
        let syms = coff
            .symbols()
            .map_err(|e| Fallback::Unreadable(e.to_string()))?;
        if syms
            .iter()
            .any(|s| s.section_number > 0 && is_packed(s.section_number as usize - 1))
        {
            return Err(Fallback::Reference(
                "a COFF symbol is defined inside an offload section".to_owned(),
            ));
        }
    }
    let symptr = u64::from(b.u32_at(hdr + 8, LE).unwrap_or(0));
    if symptr != 0 {
        if inside(symptr, 1) {
            return Err(Fallback::Overlap("the COFF symbol table".to_owned()));
        }
        if shift(symptr) != symptr {
            patches.push((hdr + 8, (shift(symptr) as u32).to_le_bytes().to_vec()));
        }
    }

    // Debug directory entries' file offsets.
    let (dbg_rva, dbg_size) = dir(6)?;
    if dbg_size != 0 {
        let d = img
            .offset_of(dbg_rva)
            .ok_or_else(|| unreadable("debug directory"))?;
        for k in 0..dbg_size / DEBUG_ENTRY {
            let at = d + k * DEBUG_ENTRY;
            let p = u64::from(
                img.u32_at(at + 24)
                    .ok_or_else(|| unreadable("debug entry"))?,
            );
            let len = u64::from(img.u32_at(at + 16).unwrap_or(0));
            if p != 0 && inside(p, len.max(1)) {
                return Err(Fallback::Overlap("debug data".to_owned()));
            }
            if p != 0 && shift(p) != p {
                patches.push((at + 24, (shift(p) as u32).to_le_bytes().to_vec()));
            }
        }
    }

    // Section headers, and SizeOfInitializedData.
    let mut init_cut = 0;
    for (i, s) in img.secs.iter().enumerate() {
        let at = img.table + i as u64 * SECTION_HEADER_SIZE;
        let p = u64::from(s.pointer_to_raw_data);
        if let Some(k) = packed.iter().find(|k| k.si == i) {
            patches.push((at + 16, (k.new_raw as u32).to_le_bytes().to_vec()));
            if s.characteristics & INITIALIZED_DATA != 0 {
                init_cut += k.cut;
            }
        }
        if p != 0 && shift(p) != p {
            patches.push((at + 20, (shift(p) as u32).to_le_bytes().to_vec()));
        }
    }
    if init_cut != 0 {
        let init = u64::from(field(8)?);
        patches.push((
            opt + 8,
            (init.saturating_sub(init_cut) as u32)
                .to_le_bytes()
                .to_vec(),
        ));
    }
    if has_checksum {
        // Zero while the output is summed; then the sum.
        patches.push((checksum_at, vec![0; 4]));
    }
    patches.sort_by_key(|p| p.0);
    if patches
        .windows(2)
        .any(|w| w[0].0 + w[0].1.len() as u64 > w[1].0)
        || patches.iter().any(|(off, v)| inside(*off, v.len() as u64))
    {
        return Err(Fallback::Reference(
            "two updates fall on the same bytes".to_owned(),
        ));
    }

    let mut pieces = Vec::new();
    let mut pos = 0;
    for k in &packed {
        copy(&mut pieces, pos, k.ptr, &patches);
        let end = k.moves.pieces(rewrites, &mut pieces);
        if k.ptr + k.new_raw > end {
            pieces.push(Out::Zeros(k.ptr + k.new_raw - end));
        }
        pos = k.old_end;
    }
    copy(&mut pieces, pos, file.len() as u64, &patches);
    let mut layout = Layout {
        pieces,
        len: file.len() as u64 - total,
        shrunk: true,
    };
    if has_checksum {
        set_checksum(&mut layout, file, rewrites, checksum_at)?;
    }
    Ok(layout)
}

/// Where the `CheckSum` field of the PE image `file` is, if it is one
/// whose `CheckSum` is not zero (a zero one is left zero).
pub(super) fn checksum_field(file: &[u8]) -> Option<u64> {
    if !file.starts_with(b"MZ") {
        return None;
    }
    let coff = CoffFile::parse_image(file).ok()?;
    let opt = coff.header_offset() + 20;
    let b = Bytes::new(file);
    // PE32 and PE32+ keep it at the same offset.
    if !matches!(b.u16_at(opt, LE), Some(0x10b | 0x20b)) {
        return None;
    }
    (b.u32_at(opt + 64, LE)? != 0).then_some(opt + 64)
}

/// Puts the checksum of `layout`'s output into its `CheckSum` field at
/// `at`, which `layout` writes as four bytes of their own (zero while
/// summed) at that offset.
pub(super) fn set_checksum(
    layout: &mut Layout,
    file: &[u8],
    rewrites: &[Rewrite<'_>],
    at: u64,
) -> Result<(), Fallback> {
    let sum = image_checksum(layout, file, rewrites);
    // The headers do not move: the field's piece is at its offset.
    let mut pos = 0;
    let field = layout.pieces.iter_mut().find(|p| {
        let start = pos;
        pos += p.len(rewrites);
        start == at && matches!(p, Out::Bytes(b) if b.len() == 4)
    });
    match field {
        Some(p) => {
            *p = Out::Bytes(sum.to_le_bytes().to_vec());
            Ok(())
        }
        None => Err(Fallback::Overlap("the CheckSum field".to_owned())),
    }
}

/// The PE image checksum of `layout`'s output (its `CheckSum` field
/// zero): the file's 16-bit little-endian words (an odd last byte
/// padded with zero) added with end-around carry, folded to 16 bits,
/// plus the file's length.
pub(super) fn image_checksum(layout: &Layout, input: &[u8], rewrites: &[Rewrite<'_>]) -> u32 {
    let mut sum = 0u64;
    let mut odd = false;
    layout.each_part(input, rewrites, &mut |part| match part {
        Part::Zeros(n) => odd ^= n & 1 == 1,
        Part::Bytes(mut b) => {
            if odd {
                if let Some((&first, rest)) = b.split_first() {
                    sum += u64::from(first) << 8;
                    b = rest;
                    odd = false;
                }
            }
            let words = b.chunks_exact(2);
            if let [last] = words.remainder() {
                sum += u64::from(*last);
                odd = true;
            }
            sum += words
                .map(|w| u64::from(u16::from_le_bytes([w[0], w[1]])))
                .sum::<u64>();
        }
    });
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (sum as u32).wrapping_add(layout.len as u32)
}

/// One offload section packed.
struct Packed {
    /// Its index in the section table.
    si: usize,
    /// `PointerToRawData`.
    ptr: u64,
    /// The end of its old raw data.
    old_end: u64,
    /// The new `SizeOfRawData`.
    new_raw: u64,
    /// How many bytes leave the file.
    cut: u64,
    moves: super::Moves,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thin::{Piece, Thinned};

    /// The checksum of pieces of odd lengths (bytes, zeros, a container)
    /// is that of the bytes they make, summed word by word in one buffer.
    #[test]
    fn checksum_follows_word_boundaries_across_pieces() {
        let input: Vec<u8> = (0..=255u8).cycle().take(1001).collect();
        let rewrites = vec![Rewrite {
            offset: 0,
            size: 9,
            new: Thinned {
                pieces: vec![Piece::Bytes(vec![0xfe; 5]), Piece::Zeros(4)],
                used: 5,
                kept: Vec::new(),
                dropped: Vec::new(),
            },
        }];
        let pieces = vec![
            Out::Copy { from: 3, len: 7 },
            Out::Zeros(3),
            Out::Container(0),
            Out::Bytes(vec![0xff, 0x80, 0x01]),
            Out::Copy {
                from: 100,
                len: 901,
            },
        ];
        let len = pieces.iter().map(|p| p.len(&rewrites)).sum();
        let layout = Layout {
            pieces,
            len,
            shrunk: true,
        };
        let bytes = layout.to_vec(&input, &rewrites);
        let mut sum = 0u64;
        for w in bytes.chunks(2) {
            sum += u64::from(w[0]) | u64::from(*w.get(1).unwrap_or(&0)) << 8;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(
            image_checksum(&layout, &input, &rewrites),
            sum as u32 + bytes.len() as u32
        );
    }
}
