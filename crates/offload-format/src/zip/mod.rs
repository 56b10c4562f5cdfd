//! ZIP archives, as Python wheels are made: the central directory read and
//! checked against the file, each member's data located; inflating a
//! member with its recorded size as a limit and its CRC checked
//! ([`Member::decode`]); and the records a writer of a new archive needs
//! ([`mod@write`]). ZIP64 is read and written where sizes or offsets need it.
//!
//! Nothing recorded is trusted: every offset and size is checked against
//! the bytes before use, and a member's recorded size only bounds its
//! decoding. Multi-disk archives, encryption and methods other than
//! stored (0) and deflated (8) are reported, not read.

pub mod write;

use std::fmt;
use std::io::Write;

use crate::bytes::{Bytes, Endian};

const LE: Endian = Endian::Little;

/// `PK\3\4`: a local file header.
pub const LOCAL_MAGIC: u32 = 0x0403_4b50;
/// `PK\1\2`: a central directory file header.
pub const CENTRAL_MAGIC: u32 = 0x0201_4b50;
/// `PK\5\6`: the end of central directory record.
pub const END_MAGIC: u32 = 0x0605_4b50;
/// `PK\6\6`: the ZIP64 end of central directory record.
pub const END64_MAGIC: u32 = 0x0606_4b50;
/// `PK\6\7`: the ZIP64 end of central directory locator.
pub const LOCATOR64_MAGIC: u32 = 0x0706_4b50;
/// The extra field that holds ZIP64 sizes and offsets.
pub const ZIP64_EXTRA: u16 = 0x0001;

/// Fixed part of a local header.
const LOCAL_LEN: u64 = 30;
/// Fixed part of a central directory header.
const CENTRAL_LEN: u64 = 46;
/// The end record without its comment.
const END_LEN: u64 = 22;
/// The ZIP64 locator.
const LOCATOR64_LEN: u64 = 20;
/// The ZIP64 end record's fixed part.
const END64_LEN: u64 = 56;

/// Whether `data` starts as a ZIP archive does (a local header, or the
/// end record of an empty archive).
pub fn has_magic(data: &[u8]) -> bool {
    let b = Bytes::new(data);
    matches!(b.u32_at(0, LE), Some(LOCAL_MAGIC | END_MAGIC))
}

/// How a member's data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// As is (0).
    Stored,
    /// Raw deflate (8).
    Deflated,
    /// Another method, by number (not read here).
    Other(u16),
}

impl Method {
    fn from_code(c: u16) -> Method {
        match c {
            0 => Method::Stored,
            8 => Method::Deflated,
            n => Method::Other(n),
        }
    }

    /// The method's number in the headers.
    pub fn code(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated => 8,
            Method::Other(n) => n,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Stored => f.write_str("stored"),
            Method::Deflated => f.write_str("deflated"),
            Method::Other(12) => f.write_str("bzip2 (method 12)"),
            Method::Other(14) => f.write_str("LZMA (method 14)"),
            Method::Other(93) => f.write_str("zstd (method 93)"),
            Method::Other(n) => write!(f, "method {n}"),
        }
    }
}

/// What is wrong with an archive or a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZipError {
    /// No end of central directory record.
    NoEnd,
    /// A record or area lies (partly) outside the file, or is cut short.
    Truncated(&'static str),
    /// A signature is not what the record must start with.
    BadMagic(&'static str),
    /// The archive spans several disks.
    MultiDisk,
    /// The central directory's recorded entry count disagrees with the
    /// entries in it.
    CountMismatch {
        /// Recorded.
        recorded: u64,
        /// Found.
        found: u64,
    },
    /// A member's local header does not agree with its central entry.
    LocalMismatch(String),
    /// A member's data overlaps another member's.
    Overlap(String),
    /// A member's data runs into the central directory (or past the end).
    DataPastEnd(String),
    /// A member is encrypted.
    Encrypted(String),
    /// A member's method is not one this crate reads.
    Unsupported {
        /// The member.
        name: String,
        /// Its method.
        method: Method,
    },
    /// Inflating failed: the stream is damaged or cut short.
    Deflate {
        /// The member.
        name: String,
        /// What the decoder said.
        reason: String,
    },
    /// The member decodes to more or fewer bytes than recorded.
    SizeMismatch {
        /// The member.
        name: String,
        /// Recorded uncompressed size.
        recorded: u64,
        /// Decoded at least this many.
        decoded: u64,
    },
    /// The member's CRC-32 is not the one recorded.
    Crc {
        /// The member.
        name: String,
        /// Recorded.
        recorded: u32,
        /// Computed.
        computed: u32,
    },
    /// The destination of decoded bytes failed: its own error.
    Write(crate::io_cause::IoCause),
}

impl fmt::Display for ZipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZipError::NoEnd => {
                f.write_str("no end of central directory record (not a zip archive, or cut short)")
            }
            ZipError::Truncated(what) => write!(f, "{what} lies outside the file"),
            ZipError::BadMagic(what) => write!(f, "{what} has a wrong signature"),
            ZipError::MultiDisk => f.write_str("the archive spans several disks; not read"),
            ZipError::CountMismatch { recorded, found } => write!(
                f,
                "the central directory records {recorded} entries but holds {found}"
            ),
            ZipError::LocalMismatch(name) => write!(
                f,
                "member {name}: its local header does not agree with the central directory"
            ),
            ZipError::Overlap(name) => write!(f, "member {name}: its data overlaps another member's"),
            ZipError::DataPastEnd(name) => write!(
                f,
                "member {name}: its data runs into the central directory or past the end of the file"
            ),
            ZipError::Encrypted(name) => write!(f, "member {name} is encrypted; not read"),
            ZipError::Unsupported { name, method } => {
                write!(
                    f,
                    "member {name} is compressed with {method}, which is not read"
                )
            }
            ZipError::Deflate { name, reason } => {
                write!(f, "member {name}: its deflate stream is damaged ({reason})")
            }
            ZipError::SizeMismatch {
                name,
                recorded,
                decoded,
            } => write!(
                f,
                "member {name}: records {recorded} bytes uncompressed but decodes to {}{decoded}",
                if decoded > recorded { "at least " } else { "" }
            ),
            ZipError::Crc {
                name,
                recorded,
                computed,
            } => write!(
                f,
                "member {name}: CRC-32 {computed:08x} does not match the recorded {recorded:08x}"
            ),
            ZipError::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ZipError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ZipError::Write(e) => Some(e.io()),
            _ => None,
        }
    }
}

/// One member, as the central directory records it and the local header
/// confirms: the fields of its headers (reached through `Deref`, as
/// `member.name`), where it lies, and its stored bytes.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// What its headers say: the fields a copy of it writes again.
    pub header: write::Entry<'a>,
    /// Offset of the local header.
    pub local_offset: u64,
    /// Offset of the stored data.
    pub data_offset: u64,
    /// The stored (possibly compressed) bytes.
    pub data: &'a [u8],
}

impl<'a> std::ops::Deref for Member<'a> {
    type Target = write::Entry<'a>;

    fn deref(&self) -> &write::Entry<'a> {
        &self.header
    }
}

impl<'a> Member<'a> {
    /// The name as text (bytes that are not UTF-8 replaced).
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(self.name).into_owned()
    }

    /// Whether the member is a directory (its name ends with `/`).
    pub fn is_dir(&self) -> bool {
        self.name.last() == Some(&b'/')
    }

    /// Whether this crate can decode the member.
    pub fn check_readable(&self) -> Result<(), ZipError> {
        if self.flags & 1 != 0 {
            return Err(ZipError::Encrypted(self.name_lossy()));
        }
        match self.method {
            Method::Stored | Method::Deflated => Ok(()),
            method => Err(ZipError::Unsupported {
                name: self.name_lossy(),
                method,
            }),
        }
    }

    /// The stored bytes themselves, when the member is stored.
    pub fn stored(&self) -> Option<&'a [u8]> {
        (self.method == Method::Stored).then_some(self.data)
    }

    /// Decodes the member into `out`, at most `limit` bytes of it (all of
    /// it with `u64::MAX`). The recorded uncompressed size bounds the
    /// output (more is an error, found as soon as it is produced); a
    /// complete decoding must give exactly that size and the recorded
    /// CRC-32. Returns how many bytes were written.
    pub fn decode(&self, out: &mut dyn Write, limit: u64) -> Result<u64, ZipError> {
        self.decode_with_progress(out, limit, &mut |_| {})
    }

    /// [`Member::decode`], telling `done` now and then how many of the
    /// stored bytes have been read (a caller reading a mapped file can let
    /// go of those pages).
    pub fn decode_with_progress(
        &self,
        out: &mut dyn Write,
        limit: u64,
        done: &mut dyn FnMut(usize),
    ) -> Result<u64, ZipError> {
        /// How much stored data is read between two calls of `done`.
        const STEP: usize = 8 << 20;
        self.check_readable()?;
        let name = || self.name_lossy();
        let write_err = |e: std::io::Error| ZipError::Write(e.into());
        let mut crc = flate2::Crc::new();
        let recorded = self.uncompressed_size;
        let want = recorded.min(limit);
        let mut written = 0u64;
        match self.method {
            Method::Stored => {
                if self.data.len() as u64 != recorded {
                    return Err(ZipError::SizeMismatch {
                        name: name(),
                        recorded,
                        decoded: self.data.len() as u64,
                    });
                }
                // In steps, each said done, so that a caller reading a
                // mapping can let its pages go.
                for part in self.data[..want as usize].chunks(STEP) {
                    crc.update(part);
                    out.write_all(part).map_err(write_err)?;
                    written += part.len() as u64;
                    done(written as usize);
                }
            }
            Method::Deflated => {
                use crate::inflate_bounded::{inflate, Stop, Wrap};
                let mut put = |piece: &[u8]| -> std::io::Result<bool> {
                    let take = (piece.len() as u64).min(want - written) as usize;
                    crc.update(&piece[..take]);
                    out.write_all(&piece[..take])?;
                    written += take as u64;
                    // Stop once the caller's limit is reached short of
                    // the whole member.
                    Ok(!(written == want && want < recorded))
                };
                let mut told = 0usize;
                let mut progress = |read: usize| {
                    if read >= told + STEP {
                        told = read;
                        done(told);
                    }
                };
                let deflate = |reason: &str| ZipError::Deflate {
                    name: name(),
                    reason: reason.to_owned(),
                };
                match inflate(self.data, Wrap::Raw, recorded, &mut put, &mut progress) {
                    Ok(end) if !end.complete => return Ok(written),
                    Ok(_) => {}
                    Err(Stop::Overrun { produced }) => {
                        return Err(ZipError::SizeMismatch {
                            name: name(),
                            recorded,
                            decoded: produced,
                        })
                    }
                    Err(Stop::Corrupt(reason)) => return Err(deflate(&reason)),
                    Err(Stop::Cut) => return Err(deflate("the stream is cut short")),
                    Err(Stop::Stalled) => return Err(deflate("the decoder made no progress")),
                    Err(Stop::Sink(e)) => return Err(write_err(e)),
                }
                if written != recorded {
                    return Err(ZipError::SizeMismatch {
                        name: name(),
                        recorded,
                        decoded: written,
                    });
                }
            }
            Method::Other(_) => unreachable!("refused by check_readable"),
        }
        if written == recorded && crc.sum() != self.crc32 {
            return Err(ZipError::Crc {
                name: name(),
                recorded: self.crc32,
                computed: crc.sum(),
            });
        }
        Ok(written)
    }

    /// Decodes the whole member into a vector, refusing one whose recorded
    /// size is over `max` (for small members: a wheel's `RECORD`).
    pub fn decode_to_vec(&self, max: u64) -> Result<Vec<u8>, ZipError> {
        if self.uncompressed_size > max {
            return Err(ZipError::SizeMismatch {
                name: self.name_lossy(),
                recorded: self.uncompressed_size,
                decoded: max,
            });
        }
        let mut v = Vec::with_capacity(self.uncompressed_size as usize);
        self.decode(&mut v, u64::MAX)?;
        Ok(v)
    }
}

/// A parsed archive: its members in central directory order.
#[derive(Clone, Debug)]
pub struct Archive<'a> {
    /// The members.
    pub members: Vec<Member<'a>>,
    /// The archive comment.
    pub comment: &'a [u8],
    /// Where the central directory starts (the end of the members' data).
    pub central_offset: u64,
}

impl<'a> Archive<'a> {
    /// Parses the archive in `data` (the whole file).
    pub fn parse(data: &'a [u8]) -> Result<Archive<'a>, ZipError> {
        let b = Bytes::new(data);
        let end = find_end(data).ok_or(ZipError::NoEnd)?;
        let disk = b.u16_at(end + 4, LE).unwrap_or(0);
        let cd_disk = b.u16_at(end + 6, LE).unwrap_or(0);
        let mut count = u64::from(b.u16_at(end + 10, LE).unwrap_or(0));
        let mut cd_size = u64::from(b.u32_at(end + 12, LE).unwrap_or(0));
        let mut cd_offset = u64::from(b.u32_at(end + 16, LE).unwrap_or(0));
        let comment_len = u64::from(b.u16_at(end + 20, LE).unwrap_or(0));
        let comment = b
            .slice(end + END_LEN, comment_len)
            .ok_or(ZipError::Truncated("the archive comment"))?;
        let mut dir_end = end;
        if end >= LOCATOR64_LEN && b.u32_at(end - LOCATOR64_LEN, LE) == Some(LOCATOR64_MAGIC) {
            let loc = end - LOCATOR64_LEN;
            let at = b
                .u64_at(loc + 8, LE)
                .ok_or(ZipError::Truncated("the ZIP64 locator"))?;
            if b.u32_at(loc + 16, LE).unwrap_or(1) > 1 {
                return Err(ZipError::MultiDisk);
            }
            if at.checked_add(END64_LEN).is_none_or(|e| e > loc) {
                return Err(ZipError::Truncated("the ZIP64 end record"));
            }
            if b.u32_at(at, LE) != Some(END64_MAGIC) {
                return Err(ZipError::BadMagic("the ZIP64 end record"));
            }
            let d64 = b.u32_at(at + 16, LE).unwrap_or(0);
            let cdd64 = b.u32_at(at + 20, LE).unwrap_or(0);
            if d64 != 0 || cdd64 != 0 {
                return Err(ZipError::MultiDisk);
            }
            count = b.u64_at(at + 32, LE).unwrap_or(0);
            cd_size = b.u64_at(at + 40, LE).unwrap_or(0);
            cd_offset = b.u64_at(at + 48, LE).unwrap_or(0);
            dir_end = at;
        } else if disk != 0 || cd_disk != 0 {
            return Err(ZipError::MultiDisk);
        }
        if cd_offset.checked_add(cd_size).is_none_or(|e| e > dir_end) {
            return Err(ZipError::Truncated("the central directory"));
        }
        let dir = b
            .slice(cd_offset, cd_size)
            .ok_or(ZipError::Truncated("the central directory"))?;
        // Each central entry is at least 46 bytes: room is reserved for
        // what the directory can hold, whatever the count records.
        let mut members = Vec::with_capacity(count.min(cd_size / CENTRAL_LEN) as usize);
        let d = Bytes::new(dir);
        let mut at = 0u64;
        while at < cd_size {
            members.push(central_entry(b, d, &mut at, cd_offset)?);
        }
        if members.len() as u64 != count {
            return Err(ZipError::CountMismatch {
                recorded: count,
                found: members.len() as u64,
            });
        }
        // No two members' data overlap (a zip bomb's shape), and none
        // reaches into the directory.
        let mut spans: Vec<(u64, u64, usize)> = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.local_offset, m.data_offset + m.compressed_size, i))
            .collect();
        spans.sort_unstable();
        for w in spans.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(ZipError::Overlap(members[w[1].2].name_lossy()));
            }
        }
        Ok(Archive {
            members,
            comment,
            central_offset: cd_offset,
        })
    }
}

/// Finds the end of central directory record: the last `PK\5\6` in the
/// final 64 KiB whose comment reaches exactly the end of the file.
fn find_end(data: &[u8]) -> Option<u64> {
    let len = data.len() as u64;
    if len < END_LEN {
        return None;
    }
    let b = Bytes::new(data);
    let lowest = len.saturating_sub(END_LEN + 0xffff);
    let mut at = len - END_LEN;
    loop {
        if b.u32_at(at, LE) == Some(END_MAGIC) {
            let comment = u64::from(b.u16_at(at + 20, LE)?);
            if at + END_LEN + comment == len {
                return Some(at);
            }
        }
        if at == lowest {
            return None;
        }
        at -= 1;
    }
}

/// Reads the central entry at `*at` of the directory `d` and checks its
/// local header in the file `b`; advances `*at`.
fn central_entry<'a>(
    b: Bytes<'a>,
    d: Bytes<'a>,
    at: &mut u64,
    cd_offset: u64,
) -> Result<Member<'a>, ZipError> {
    let h = *at;
    let short = ZipError::Truncated("a central directory entry");
    if d.u32_at(h, LE).ok_or(short.clone())? != CENTRAL_MAGIC {
        return Err(ZipError::BadMagic("a central directory entry"));
    }
    let fixed = d.slice(h, CENTRAL_LEN).ok_or(short.clone())?;
    let f = Bytes::new(fixed);
    let u16f = |o| f.u16_at(o, LE).unwrap_or(0);
    let u32f = |o| f.u32_at(o, LE).unwrap_or(0);
    let name_len = u64::from(u16f(28));
    let extra_len = u64::from(u16f(30));
    let comment_len = u64::from(u16f(32));
    let name = d.slice(h + CENTRAL_LEN, name_len).ok_or(short.clone())?;
    let central_extra = d
        .slice(h + CENTRAL_LEN + name_len, extra_len)
        .ok_or(short.clone())?;
    let comment = d
        .slice(h + CENTRAL_LEN + name_len + extra_len, comment_len)
        .ok_or(short)?;
    *at = h + CENTRAL_LEN + name_len + extra_len + comment_len;
    let lossy = || String::from_utf8_lossy(name).into_owned();
    let mut compressed_size = u64::from(u32f(20));
    let mut uncompressed_size = u64::from(u32f(24));
    let mut local_offset = u64::from(u32f(42));
    let disk = u16f(34);
    // The ZIP64 extra field holds, in this order, the fields whose
    // 32-bit value is all ones.
    let wide = [
        uncompressed_size == 0xffff_ffff,
        compressed_size == 0xffff_ffff,
        local_offset == 0xffff_ffff,
        disk == 0xffff,
    ];
    if wide.iter().any(|&w| w) {
        let z = find_extra(central_extra, ZIP64_EXTRA)
            .ok_or_else(|| ZipError::LocalMismatch(lossy()))?;
        let z = Bytes::new(z);
        let mut o = 0;
        let mut next = || {
            let v = z.u64_at(o, LE);
            o += 8;
            v.ok_or(ZipError::Truncated("a ZIP64 extra field"))
        };
        if wide[0] {
            uncompressed_size = next()?;
        }
        if wide[1] {
            compressed_size = next()?;
        }
        if wide[2] {
            local_offset = next()?;
        }
    } else if disk != 0 {
        return Err(ZipError::MultiDisk);
    }
    // The local header: signature, name as in the directory, and the data
    // after it inside the area before the directory.
    let lshort = ZipError::Truncated("a local header");
    if local_offset
        .checked_add(LOCAL_LEN)
        .is_none_or(|e| e > cd_offset)
    {
        return Err(lshort);
    }
    if b.u32_at(local_offset, LE) != Some(LOCAL_MAGIC) {
        return Err(ZipError::BadMagic("a local header"));
    }
    let lname_len = u64::from(b.u16_at(local_offset + 26, LE).unwrap_or(0));
    let lextra_len = u64::from(b.u16_at(local_offset + 28, LE).unwrap_or(0));
    let lname = b
        .slice(local_offset + LOCAL_LEN, lname_len)
        .ok_or(lshort.clone())?;
    if lname != name {
        return Err(ZipError::LocalMismatch(lossy()));
    }
    let local_extra = b
        .slice(local_offset + LOCAL_LEN + lname_len, lextra_len)
        .ok_or(lshort)?;
    let data_offset = local_offset + LOCAL_LEN + lname_len + lextra_len;
    if data_offset
        .checked_add(compressed_size)
        .is_none_or(|e| e > cd_offset)
    {
        return Err(ZipError::DataPastEnd(lossy()));
    }
    let data = b
        .slice(data_offset, compressed_size)
        .ok_or_else(|| ZipError::DataPastEnd(lossy()))?;
    Ok(Member {
        header: write::Entry {
            name,
            method: Method::from_code(u16f(10)),
            flags: u16f(8),
            version_made_by: u16f(4),
            version_needed: u16f(6),
            mod_time: u16f(12),
            mod_date: u16f(14),
            crc32: u32f(16),
            compressed_size,
            uncompressed_size,
            internal_attrs: u16f(36),
            external_attrs: u32f(38),
            local_extra,
            central_extra,
            comment,
        },
        local_offset,
        data_offset,
        data,
    })
}

/// The body of the first extra-field record with `id`.
pub fn find_extra(extra: &[u8], id: u16) -> Option<&[u8]> {
    let b = Bytes::new(extra);
    let mut at = 0u64;
    while let (Some(tag), Some(len)) = (b.u16_at(at, LE), b.u16_at(at + 2, LE)) {
        let body = b.slice(at + 4, u64::from(len))?;
        if tag == id {
            return Some(body);
        }
        at += 4 + u64::from(len);
    }
    None
}

/// `extra` without its records of `id` (kept in order, as stored; a cut
/// trailing record is dropped).
pub fn without_extra(extra: &[u8], id: u16) -> Vec<u8> {
    let b = Bytes::new(extra);
    let mut out = Vec::new();
    let mut at = 0u64;
    while let (Some(tag), Some(len)) = (b.u16_at(at, LE), b.u16_at(at + 2, LE)) {
        let Some(rec) = b.slice(at, 4 + u64::from(len)) else {
            break;
        };
        if tag != id {
            out.extend_from_slice(rec);
        }
        at += 4 + u64::from(len);
    }
    out
}

#[cfg(test)]
mod tests;
