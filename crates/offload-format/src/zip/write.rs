//! The records of a new ZIP archive: a local header before each member's
//! data, a central directory entry per member, and the end records. ZIP64
//! fields are written exactly where a size, offset or count does not fit
//! its 32-bit (or 16-bit) field, so an archive that needs none is a plain
//! ZIP file.
//!
//! Local headers always carry the CRC and sizes (no data descriptors), so
//! every member can be read from its local header alone.

use super::{without_extra, Method, ZIP64_EXTRA};
use crate::bytes::{put16, put32, put64};

/// What the headers say about one member: read into a [`super::Member`],
/// written for a new one.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    /// The name, as stored.
    pub name: &'a [u8],
    /// How the data is stored.
    pub method: Method,
    /// General purpose flags (bit 3, "sizes in a data descriptor", is
    /// cleared).
    pub flags: u16,
    /// "Version made by".
    pub version_made_by: u16,
    /// "Version needed to extract" (raised to 4.5 where ZIP64 is used).
    pub version_needed: u16,
    /// MS-DOS modification time.
    pub mod_time: u16,
    /// MS-DOS modification date.
    pub mod_date: u16,
    /// CRC-32 of the uncompressed data.
    pub crc32: u32,
    /// Size of the stored data.
    pub compressed_size: u64,
    /// Size once decoded.
    pub uncompressed_size: u64,
    /// Internal attributes.
    pub internal_attrs: u16,
    /// External attributes.
    pub external_attrs: u32,
    /// Extra field for the local header (any ZIP64 record is replaced).
    pub local_extra: &'a [u8],
    /// Extra field for the central entry (any ZIP64 record is replaced).
    pub central_extra: &'a [u8],
    /// The member's comment.
    pub comment: &'a [u8],
}

impl<'a> Entry<'a> {
    /// A new member's entry: version 2.0 made and needed, no flags, the
    /// MS-DOS date 1980-01-01 00:00 (the earliest, so that archives are
    /// reproducible), mode `0644`, no extra fields and no comment.
    pub fn new(
        name: &'a [u8],
        method: Method,
        crc32: u32,
        compressed_size: u64,
        uncompressed_size: u64,
    ) -> Entry<'a> {
        Entry {
            name,
            method,
            flags: 0,
            version_made_by: 20,
            version_needed: 20,
            mod_time: 0,
            mod_date: 0x21,
            crc32,
            compressed_size,
            uncompressed_size,
            internal_attrs: 0,
            external_attrs: 0o644 << 16,
            local_extra: &[],
            central_extra: &[],
            comment: &[],
        }
    }

    /// The entry as `m` records it, for copying `m` unchanged.
    pub fn from_member(m: &super::Member<'a>) -> Entry<'a> {
        m.header.clone()
    }

    fn flags(&self) -> u16 {
        self.flags & !0x0008
    }
}

const U32_MAX: u64 = 0xffff_ffff;
const ZIP64_VERSION: u16 = 45;

/// A 32-bit field, or all ones with the value in the ZIP64 record.
fn field32(v: u64, wide: &mut Vec<u64>) -> u32 {
    if v >= U32_MAX {
        wide.push(v);
        u32::MAX
    } else {
        v as u32
    }
}

fn zip64_record(values: &[u64]) -> Vec<u8> {
    let mut r = Vec::new();
    if !values.is_empty() {
        put16(&mut r, ZIP64_EXTRA);
        put16(&mut r, (values.len() * 8) as u16);
        for &v in values {
            put64(&mut r, v);
        }
    }
    r
}

fn version(needed: u16, wide: bool) -> u16 {
    if wide {
        needed.max(ZIP64_VERSION)
    } else {
        needed
    }
}

/// The local header of `e`. A ZIP64 record holds both sizes where either
/// does not fit.
pub fn local_header(e: &Entry<'_>) -> Vec<u8> {
    let wide = e.compressed_size >= U32_MAX || e.uncompressed_size >= U32_MAX;
    let mut extra = if wide {
        zip64_record(&[e.uncompressed_size, e.compressed_size])
    } else {
        Vec::new()
    };
    extra.extend(without_extra(e.local_extra, ZIP64_EXTRA));
    let mut out = Vec::with_capacity(30 + e.name.len() + extra.len());
    put32(&mut out, super::LOCAL_MAGIC);
    put16(&mut out, version(e.version_needed, wide));
    put16(&mut out, e.flags());
    put16(&mut out, e.method.code());
    put16(&mut out, e.mod_time);
    put16(&mut out, e.mod_date);
    put32(&mut out, e.crc32);
    let (c, u) = if wide {
        (u32::MAX, u32::MAX)
    } else {
        (e.compressed_size as u32, e.uncompressed_size as u32)
    };
    put32(&mut out, c);
    put32(&mut out, u);
    put16(&mut out, e.name.len() as u16);
    put16(&mut out, extra.len() as u16);
    out.extend_from_slice(e.name);
    out.extend_from_slice(&extra);
    out
}

/// The central directory entry of `e`, whose local header is at
/// `local_offset`.
pub fn central_header(e: &Entry<'_>, local_offset: u64) -> Vec<u8> {
    let mut wide = Vec::new();
    let u = field32(e.uncompressed_size, &mut wide);
    let c = field32(e.compressed_size, &mut wide);
    let o = field32(local_offset, &mut wide);
    let mut extra = zip64_record(&wide);
    extra.extend(without_extra(e.central_extra, ZIP64_EXTRA));
    let mut out = Vec::with_capacity(46 + e.name.len() + extra.len() + e.comment.len());
    put32(&mut out, super::CENTRAL_MAGIC);
    put16(&mut out, e.version_made_by);
    put16(&mut out, version(e.version_needed, !wide.is_empty()));
    put16(&mut out, e.flags());
    put16(&mut out, e.method.code());
    put16(&mut out, e.mod_time);
    put16(&mut out, e.mod_date);
    put32(&mut out, e.crc32);
    put32(&mut out, c);
    put32(&mut out, u);
    put16(&mut out, e.name.len() as u16);
    put16(&mut out, extra.len() as u16);
    put16(&mut out, e.comment.len() as u16);
    put16(&mut out, 0); // disk number start
    put16(&mut out, e.internal_attrs);
    put32(&mut out, e.external_attrs);
    put32(&mut out, o);
    out.extend_from_slice(e.name);
    out.extend_from_slice(&extra);
    out.extend_from_slice(e.comment);
    out
}

/// The end records for a central directory of `count` entries and
/// `size` bytes at `offset`: the ZIP64 end record and locator where any
/// of the three does not fit, then the end record with `comment`.
pub fn end_records(count: u64, offset: u64, size: u64, comment: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let wide = count >= 0xffff || offset >= U32_MAX || size >= U32_MAX;
    if wide {
        let end64 = offset + size;
        put32(&mut out, super::END64_MAGIC);
        put64(&mut out, 44);
        put16(&mut out, ZIP64_VERSION);
        put16(&mut out, ZIP64_VERSION);
        put32(&mut out, 0);
        put32(&mut out, 0);
        put64(&mut out, count);
        put64(&mut out, count);
        put64(&mut out, size);
        put64(&mut out, offset);
        put32(&mut out, super::LOCATOR64_MAGIC);
        put32(&mut out, 0);
        put64(&mut out, end64);
        put32(&mut out, 1);
    }
    put32(&mut out, super::END_MAGIC);
    put16(&mut out, 0);
    put16(&mut out, 0);
    let n = if wide { 0xffff } else { count as u16 };
    put16(&mut out, n);
    put16(&mut out, n);
    put32(&mut out, if wide { u32::MAX } else { size as u32 });
    put32(&mut out, if wide { u32::MAX } else { offset as u32 });
    put16(&mut out, comment.len() as u16);
    out.extend_from_slice(comment);
    out
}

/// Lays out a new archive member by member: the local header of each as
/// it is added (the caller writes the member's stored data right after
/// it), then the central directory and end records.
#[derive(Debug, Default)]
pub struct Layout {
    pos: u64,
    count: u64,
    central: Vec<u8>,
}

impl Layout {
    /// An empty archive.
    pub fn new() -> Layout {
        Layout::default()
    }

    /// The local header of `e`; its `compressed_size` bytes of data must
    /// follow it.
    pub fn member(&mut self, e: &Entry<'_>) -> Vec<u8> {
        let header = local_header(e);
        self.central.extend(central_header(e, self.pos));
        self.pos += header.len() as u64 + e.compressed_size;
        self.count += 1;
        header
    }

    /// The central directory and end records, which end the archive.
    pub fn finish(self, comment: &[u8]) -> Vec<u8> {
        let mut out = self.central;
        let size = out.len() as u64;
        out.extend(end_records(self.count, self.pos, size, comment));
        out
    }
}
