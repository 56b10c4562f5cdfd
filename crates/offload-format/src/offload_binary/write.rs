//! Writing offload binaries.
//!
//! Version 1 is what LLVM 22 writes: one image per binary, laid out as
//!
//! ```text
//! 0    header (32 bytes): magic, version 1, size, entry offset 32, entry size 40
//! 32   entry (40 bytes): image kind, offload kind, flags, string-entry
//!      offset 72, string count n, image offset, image size
//! 72   n string entries (16 bytes each): absolute key and value offsets
//! ..   string table (tail-merged, starts with NUL)
//! ..   zero padding to 8, the image, zero padding to 8
//! ```
//!
//! Several images are several complete binaries, concatenated.
//!
//! Versions 2 and 3 (newer LLVM) put N entries in one binary with one shared
//! string table; 3 adds an inflated-size header word and optional
//! compression. They are provided so the reader can be tested against
//! independently produced input; the tools write version 1.

use std::io::{self, Write};

use crate::bytes::{put16, put32, put64};
use crate::string_table::StringTable;

use super::{
    align8, ImageKind, OffloadKind, ENTRY_SIZE, HEADER_SIZE, HEADER_SIZE_V3, MAGIC,
    STRING_ENTRY_SIZE_V1, STRING_ENTRY_SIZE_V2,
};

/// One image and its metadata, ready to be written.
#[derive(Debug, Clone)]
pub struct ImageEntry<'a> {
    /// What the image holds.
    pub image_kind: ImageKind,
    /// Which programming model produced it.
    pub offload_kind: OffloadKind,
    /// Entry flags (LLVM 22 always writes 0).
    pub flags: u32,
    /// Key/value strings in the order they are written. A repeated key keeps
    /// its first position and takes the last value (LLVM's `MapVector`).
    pub strings: Vec<(&'a [u8], &'a [u8])>,
    /// The image bytes.
    pub image: &'a [u8],
}

/// Sizes and offsets of one version 1 binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutV1 {
    /// Number of string entries.
    pub strings: u64,
    /// Offset of the string table.
    pub string_table: u64,
    /// Offset of the image.
    pub image: u64,
    /// Total size, a multiple of 8.
    pub size: u64,
}

/// Applies `MapVector` semantics: first position, last value.
fn dedup<'a>(strings: &[(&'a [u8], &'a [u8])]) -> Vec<(&'a [u8], &'a [u8])> {
    let mut out: Vec<(&[u8], &[u8])> = Vec::with_capacity(strings.len());
    for &(k, v) in strings {
        match out.iter_mut().find(|(ok, _)| *ok == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    out
}

fn table_for(strings: &[(&[u8], &[u8])]) -> StringTable {
    StringTable::build(strings.iter().flat_map(|&(k, v)| [k, v]))
}

fn overflow() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "offload binary size overflows 64 bits",
    )
}

impl<'a> ImageEntry<'a> {
    /// An image with its kinds and key/value strings, and flags 0 (what
    /// LLVM 22 writes).
    pub fn new(
        image_kind: ImageKind,
        offload_kind: OffloadKind,
        strings: Vec<(&'a [u8], &'a [u8])>,
        image: &'a [u8],
    ) -> ImageEntry<'a> {
        ImageEntry {
            image_kind,
            offload_kind,
            flags: 0,
            strings,
            image,
        }
    }

    fn layout_with(&self, strings: usize, table: u64) -> Option<LayoutV1> {
        let n = strings as u64;
        let string_table = STRING_ENTRY_SIZE_V1
            .checked_mul(n)?
            .checked_add(HEADER_SIZE + ENTRY_SIZE)?;
        let image = align8(string_table.checked_add(table)?)?;
        let size = align8(image.checked_add(self.image.len() as u64)?)?;
        Some(LayoutV1 {
            strings: n,
            string_table,
            image,
            size,
        })
    }

    /// The version 1 layout of this entry.
    pub fn layout_v1(&self) -> LayoutV1 {
        let strings = dedup(&self.strings);
        let table = table_for(&strings);
        self.layout_with(strings.len(), table.len() as u64)
            .expect("a binary built from in-memory data fits in 64 bits")
    }

    /// Everything of the version 1 binary that precedes the image (header,
    /// entry, string entries, table, padding), and its layout.
    pub fn v1_prefix(&self) -> (Vec<u8>, LayoutV1) {
        let strings = dedup(&self.strings);
        let table = table_for(&strings);
        let layout = self
            .layout_with(strings.len(), table.len() as u64)
            .expect("a binary built from in-memory data fits in 64 bits");
        let mut out = Vec::with_capacity(layout.image as usize);
        out.extend_from_slice(&MAGIC);
        put32(&mut out, 1);
        put64(&mut out, layout.size);
        put64(&mut out, HEADER_SIZE);
        put64(&mut out, ENTRY_SIZE);
        put16(&mut out, self.image_kind.0);
        put16(&mut out, self.offload_kind.0);
        put32(&mut out, self.flags);
        put64(&mut out, HEADER_SIZE + ENTRY_SIZE);
        put64(&mut out, layout.strings);
        put64(&mut out, layout.image);
        put64(&mut out, self.image.len() as u64);
        let offset =
            |s: &[u8]| layout.string_table + table.offset(s).expect("every string is in the table");
        for &(k, v) in &strings {
            put64(&mut out, offset(k));
            put64(&mut out, offset(v));
        }
        out.extend_from_slice(table.bytes());
        out.resize(layout.image as usize, 0);
        (out, layout)
    }

    /// Writes the version 1 binary to `w` without copying the image.
    pub fn write_v1<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        let (prefix, layout) = self.v1_prefix();
        w.write_all(&prefix)?;
        w.write_all(self.image)?;
        let end = layout
            .image
            .checked_add(self.image.len() as u64)
            .ok_or_else(overflow)?;
        let pad = (layout.size - end) as usize;
        w.write_all(&[0u8; 8][..pad])
    }

    /// The version 1 binary as bytes.
    pub fn to_v1(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_v1(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }
}

/// Compression of a version 3 binary's body (each method with the crate's
/// feature of that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zlib (RFC 1950) at the given level (0-9).
    #[cfg(feature = "zlib")]
    Zlib(u32),
    /// zstd at the given level.
    #[cfg(feature = "zstd")]
    Zstd(i32),
}

/// Writes several images as one multi-entry binary: version 2 (32-byte
/// header) or version 3 (40-byte header, optionally compressed).
///
/// # Panics
/// When `version` is not 2 or 3, or compression is asked of version 2.
pub fn write_multi(
    entries: &[ImageEntry<'_>],
    version: u32,
    compression: Option<Compression>,
) -> Vec<u8> {
    assert!(
        version == 2 || version == 3,
        "multi-entry binaries are version 2 or 3"
    );
    assert!(
        version == 3 || compression.is_none(),
        "only version 3 compresses"
    );
    let header = if version == 2 {
        HEADER_SIZE
    } else {
        HEADER_SIZE_V3
    };
    let lists: Vec<Vec<(&[u8], &[u8])>> = entries.iter().map(|e| dedup(&e.strings)).collect();
    let table = StringTable::build(
        lists
            .iter()
            .flat_map(|l| l.iter().flat_map(|&(k, v)| [k, v])),
    );
    let total_strings: u64 = lists.iter().map(|l| l.len() as u64).sum();
    let count = entries.len() as u64;
    let strtab_off = header + ENTRY_SIZE * count + STRING_ENTRY_SIZE_V2 * total_strings;
    let data_size = align8(strtab_off + table.len() as u64).expect("fits");
    let images: u64 = entries.iter().map(|e| e.image.len() as u64).sum();
    let size = align8(data_size + images).expect("fits");

    let mut out = Vec::with_capacity(size as usize);
    out.extend_from_slice(&MAGIC);
    put32(&mut out, version);
    put64(&mut out, size);
    put64(&mut out, header);
    put64(&mut out, count);
    if version == 3 {
        put64(&mut out, 0);
    }
    let mut string_entry = header + ENTRY_SIZE * count;
    let mut image = data_size;
    for (e, l) in entries.iter().zip(&lists) {
        put16(&mut out, e.image_kind.0);
        put16(&mut out, e.offload_kind.0);
        put32(&mut out, e.flags);
        put64(&mut out, string_entry);
        put64(&mut out, l.len() as u64);
        put64(&mut out, image);
        put64(&mut out, e.image.len() as u64);
        string_entry += STRING_ENTRY_SIZE_V2 * l.len() as u64;
        image += e.image.len() as u64;
    }
    for l in &lists {
        for &(k, v) in l {
            put64(&mut out, strtab_off + table.offset(k).expect("in table"));
            put64(&mut out, strtab_off + table.offset(v).expect("in table"));
            put64(&mut out, v.len() as u64);
        }
    }
    out.extend_from_slice(table.bytes());
    out.resize(data_size as usize, 0);
    for e in entries {
        out.extend_from_slice(e.image);
    }
    out.resize(size as usize, 0);

    let Some(c) = compression else {
        return out;
    };
    let packed = pack(&out[header as usize..], c);
    let mut z = out[..header as usize].to_vec();
    let csize = header + packed.len() as u64;
    z[8..16].copy_from_slice(&csize.to_le_bytes());
    z[32..40].copy_from_slice(&size.to_le_bytes());
    z.extend_from_slice(&packed);
    let padded = align8(csize).expect("fits") as usize;
    z.resize(padded, 0);
    z
}

/// `body` compressed as `c` says. (Built without a codec, `Compression`
/// has no value and this is never called.)
#[cfg_attr(not(any(feature = "zlib", feature = "zstd")), allow(unused_variables))]
fn pack(body: &[u8], c: Compression) -> Vec<u8> {
    match c {
        #[cfg(feature = "zlib")]
        Compression::Zlib(level) => {
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            enc.write_all(body).expect("in-memory compression");
            enc.finish().expect("in-memory compression")
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd(level) => {
            zstd::bulk::compress(body, level).expect("in-memory compression")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_annotated_dump() {
        let e = ImageEntry::new(
            ImageKind::OBJECT,
            OffloadKind::OPENMP,
            vec![(b"arch", b"generic"), (b"triple", b"x86_64-pc-linux-gnu")],
            b"ABC",
        );
        let mut want = Vec::new();
        want.extend_from_slice(b"\x10\xff\x10\xad\x01\0\0\0");
        for v in [160u64, 32, 40] {
            want.extend_from_slice(&v.to_le_bytes());
        }
        want.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
        for v in [72u64, 2, 152, 3, 125, 137, 130, 105] {
            want.extend_from_slice(&v.to_le_bytes());
        }
        want.extend_from_slice(b"\0x86_64-pc-linux-gnu\0arch\0triple\0generic\0");
        want.resize(152, 0);
        want.extend_from_slice(b"ABC\0\0\0\0\0");
        assert_eq!(e.to_v1(), want);
        assert_eq!(e.layout_v1().size, 160);
    }

    #[test]
    fn empty_image_and_no_strings() {
        let e = ImageEntry {
            image_kind: ImageKind::NONE,
            offload_kind: OffloadKind::NONE,
            flags: 0,
            strings: vec![],
            image: b"",
        };
        let b = e.to_v1();
        assert_eq!(b.len(), 80);
        assert_eq!(&b[56..64], &80u64.to_le_bytes());
        assert_eq!(&b[8..16], &80u64.to_le_bytes());
        assert_eq!(b[72], 0);
    }

    #[test]
    fn empty_key_and_value_point_at_the_leading_nul() {
        let e = ImageEntry::new(ImageKind::NONE, OffloadKind::NONE, vec![(b"", b"")], b"x");
        let b = e.to_v1();
        // Table at 72 + 16 = 88.
        assert_eq!(&b[72..80], &88u64.to_le_bytes());
        assert_eq!(&b[80..88], &88u64.to_le_bytes());
    }
}
