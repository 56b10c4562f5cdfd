//! Reading offload binaries: a blob (file, section, archive member) holds one
//! or more binaries back to back.
//!
//! Version 1 is read exactly as LLVM 22 reads it, including which problems
//! it reports as "invalid data" and which as "unexpected end of file", so
//! that error messages match. LLVM 22 then trusts the string and image
//! offsets of the entry and reads out of bounds when they are wrong (often a
//! crash); those cases are reported here as their own error kinds.
//!
//! Versions 2 and 3 (newer LLVM, rejected by 22) are read with the rules of
//! upstream LLVM: several entries per binary, string entries with value
//! sizes, and for version 3 an optional zlib or zstd compressed body.

use crate::bytes::{Bytes, Endian};
use std::borrow::Cow;
use std::fmt;

use super::{
    align8, ImageKind, OffloadKind, ENTRY_SIZE, HEADER_SIZE, HEADER_SIZE_V3, MAGIC,
    STRING_ENTRY_SIZE_V1, STRING_ENTRY_SIZE_V2,
};

/// A key and its value, borrowed from the blob or owned.
pub(crate) type StringPair<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// One image with its metadata, as found in a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary<'a> {
    /// Format version of the binary the entry came from (1, 2 or 3).
    pub version: u32,
    /// Offset of that binary in the blob.
    pub offset: u64,
    /// Index of the entry inside its binary (always 0 for version 1).
    pub index: u64,
    /// Kind of the image.
    pub image_kind: ImageKind,
    /// Producer of the image.
    pub offload_kind: OffloadKind,
    /// Entry flags.
    pub flags: u32,
    /// Strings in file order; a repeated key keeps its first position and
    /// takes the last value.
    pub strings: Vec<StringPair<'a>>,
    /// The image bytes (empty when [`Binary::image_error`] is set).
    pub image: Cow<'a, [u8]>,
    /// Why the image cannot be read: set only by a reader that defers image
    /// ranges ([`Images::Deferred`]), for an image that runs past the end of
    /// its binary.
    pub image_error: Option<ReadError>,
}

/// When a reader checks that each image lies inside its binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Images {
    /// While reading: an image past the end fails the whole blob.
    Checked,
    /// When the image is used: an image past the end is read as a binary
    /// with [`Binary::image_error`] set, as LLVM 22 reads the entry and
    /// touches the image only when it writes it.
    Deferred,
}

impl<'a> Binary<'a> {
    /// The value stored for `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.strings
            .iter()
            .find(|(k, _)| k.as_ref() == key)
            .map(|(_, v)| v.as_ref())
    }

    /// The value for `key`, or `""` when absent (LLVM's lookup).
    pub fn string(&self, key: &[u8]) -> &[u8] {
        self.get(key).unwrap_or(b"")
    }

    /// The `triple` string, or `""`.
    pub fn triple(&self) -> &[u8] {
        self.string(b"triple")
    }

    /// The `arch` string, or `""`.
    pub fn arch(&self) -> &[u8] {
        self.string(b"arch")
    }

    /// A copy that owns its data.
    pub fn into_owned(self) -> Binary<'static> {
        Binary {
            version: self.version,
            offset: self.offset,
            index: self.index,
            image_kind: self.image_kind,
            offload_kind: self.offload_kind,
            flags: self.flags,
            strings: self
                .strings
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
            image: Cow::Owned(self.image.into_owned()),
            image_error: self.image_error,
        }
    }
}

/// Why a blob could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// Offset in the blob of the binary that failed.
    pub offset: u64,
    /// What is wrong.
    pub kind: ReadErrorKind,
}

/// The problems a reader finds. The first two are the classes LLVM reports
/// (their `Display` is LLVM's exact text); the reason says what was wrong.
/// The others are problems LLVM 22 does not detect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// LLVM's "Invalid data was encountered while parsing the file".
    InvalidData(InvalidReason),
    /// LLVM's "The end of the file was unexpectedly encountered".
    UnexpectedEof(EofReason),
    /// The string-entry array runs past the end of the binary.
    StringEntriesPastEnd {
        /// Offset of the array in the binary.
        offset: u64,
        /// Number of entries.
        count: u64,
        /// Size of the binary.
        size: u64,
    },
    /// A key or value starts (or, with a recorded size, ends) past the end
    /// of the binary.
    StringPastEnd {
        /// Offset of the string in the binary.
        offset: u64,
        /// Recorded size of the value (version 2 and later).
        len: Option<u64>,
        /// Size of the binary.
        size: u64,
    },
    /// The image runs past the end of the binary.
    ImagePastEnd {
        /// Offset of the image in the binary.
        offset: u64,
        /// Size of the image.
        len: u64,
        /// Size of the binary.
        size: u64,
    },
    /// A compressed (version 3) body could not be decompressed.
    Decompress(BodyCodecError),
}

/// Why the codec could not decode a compressed (version 3) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyCodecError {
    /// zstd's own text (a damaged or cut frame).
    Zstd(String),
    /// The zlib stream is damaged.
    ZlibCorrupt,
    /// The body's codec was left out of this build: `zstd` or `zlib`.
    NotBuilt(&'static str),
}

impl fmt::Display for BodyCodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyCodecError::Zstd(e) => write!(f, "zstd: {e}"),
            BodyCodecError::ZlibCorrupt => f.write_str("zlib: corrupt deflate stream"),
            BodyCodecError::NotBuilt(codec) => write!(
                f,
                "{codec}: not built with {codec} (offload-format's `{codec}` feature)"
            ),
        }
    }
}

impl std::error::Error for BodyCodecError {}

/// Details of an "invalid data" error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidReason {
    /// Fewer bytes left than the smallest binary of this version.
    Truncated,
    /// The bytes do not start with `10 FF 10 AD`.
    BadMagic,
    /// A version other than 1, 2 or 3.
    BadVersion(u32),
    /// A decompressed body does not have the recorded size.
    InflatedSizeMismatch,
}

/// Details of an "unexpected end of file" error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EofReason {
    /// The recorded size is larger than the bytes left.
    SizePastEnd,
    /// The recorded size is smaller than a header or entry.
    SizeTooSmall,
    /// The entry (or entry array) does not lie inside the binary.
    EntriesPastEnd,
    /// The image offset lies past the end.
    ImageOffsetPastEnd,
    /// The string-entry offset lies past the end.
    StringOffsetPastEnd,
    /// The compressed body's offsets are inconsistent.
    BadCompressedHeader,
}

impl ReadErrorKind {
    /// True for the two error classes LLVM reports itself, whose text is
    /// LLVM's; false for the problems only this reader detects.
    pub(crate) fn is_llvm_error(&self) -> bool {
        matches!(
            self,
            ReadErrorKind::InvalidData(_) | ReadErrorKind::UnexpectedEof(_)
        )
    }
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadErrorKind::InvalidData(_) => {
                f.write_str("Invalid data was encountered while parsing the file")
            }
            ReadErrorKind::UnexpectedEof(_) => {
                f.write_str("The end of the file was unexpectedly encountered")
            }
            ReadErrorKind::StringEntriesPastEnd {
                offset,
                count,
                size,
            } => write!(
                f,
                "{count} string entries at offset {offset} extend past the end of the \
                 offload binary (size {size})"
            ),
            ReadErrorKind::StringPastEnd {
                offset,
                len: None,
                size,
            } => write!(
                f,
                "string at offset {offset} lies past the end of the offload binary (size {size})"
            ),
            ReadErrorKind::StringPastEnd {
                offset,
                len: Some(len),
                size,
            } => write!(
                f,
                "string at offset {offset} of size {len} extends past the end of the \
                 offload binary (size {size})"
            ),
            ReadErrorKind::ImagePastEnd { offset, len, size } => write!(
                f,
                "image at offset {offset} of size {len} extends past the end of the \
                 offload binary (size {size})"
            ),
            ReadErrorKind::Decompress(msg) => {
                write!(f, "cannot decompress the offload binary: {msg}")
            }
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind.is_llvm_error() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "offload binary at offset {}: {}", self.offset, self.kind)
        }
    }
}

impl std::error::Error for ReadError {}

/// Fields of a binary whose bounds the header checks have established; a
/// miss (which those checks rule out) reads as a truncated header rather
/// than a panic.
fn u16_at(b: &[u8], at: u64) -> Result<u16, ReadErrorKind> {
    Bytes::new(b).u16_at(at, Endian::Little).ok_or(TRUNCATED)
}
fn u32_at(b: &[u8], at: u64) -> Result<u32, ReadErrorKind> {
    Bytes::new(b).u32_at(at, Endian::Little).ok_or(TRUNCATED)
}
fn u64_at(b: &[u8], at: u64) -> Result<u64, ReadErrorKind> {
    Bytes::new(b).u64_at(at, Endian::Little).ok_or(TRUNCATED)
}
/// `b[start..end]` for a range the checks have established.
fn range(b: &[u8], start: u64, end: u64) -> Result<&[u8], ReadErrorKind> {
    end.checked_sub(start)
        .and_then(|len| Bytes::new(b).slice(start, len))
        .ok_or(TRUNCATED)
}

const TRUNCATED: ReadErrorKind = ReadErrorKind::InvalidData(InvalidReason::Truncated);

use EofReason as E;
use ReadErrorKind as K;

fn eof(r: EofReason) -> ReadErrorKind {
    K::UnexpectedEof(r)
}
fn invalid(r: InvalidReason) -> ReadErrorKind {
    K::InvalidData(r)
}

/// Reads every binary in `blob`, in order. Like LLVM, the blob must be
/// exactly a sequence of binaries: bytes after the last one (even zero
/// padding) are an error.
pub fn parse_binaries(blob: &[u8]) -> Result<Vec<Binary<'_>>, ReadError> {
    parse_binaries_with(blob, Images::Checked)
}

/// [`parse_binaries`], with image ranges checked as `images` says.
pub fn parse_binaries_with(blob: &[u8], images: Images) -> Result<Vec<Binary<'_>>, ReadError> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < blob.len() as u64 {
        let (mut found, next) = parse_one_with(blob, at, images)?;
        out.append(&mut found);
        at = next;
    }
    Ok(out)
}

/// Reads the binary starting at `at` in `blob`; returns its entries and the
/// offset where the next binary would start.
pub fn parse_one(blob: &[u8], at: u64) -> Result<(Vec<Binary<'_>>, u64), ReadError> {
    parse_one_with(blob, at, Images::Checked)
}

fn parse_one_with(
    blob: &[u8],
    at: u64,
    images: Images,
) -> Result<(Vec<Binary<'_>>, u64), ReadError> {
    let rest = blob.get(at as usize..).unwrap_or(&[]);
    let err = |kind| ReadError { offset: at, kind };
    if rest.len() < 8 || !rest.starts_with(&MAGIC) {
        // LLVM 22 checks the minimum size before the magic; both are
        // "invalid data", so only the reason differs.
        let reason = if (rest.len() as u64) < HEADER_SIZE + ENTRY_SIZE {
            InvalidReason::Truncated
        } else {
            InvalidReason::BadMagic
        };
        return Err(err(invalid(reason)));
    }
    match u32_at(rest, 4).map_err(err)? {
        1 => {
            let b = parse_v1(rest, at, images).map_err(err)?;
            let size = u64_at(rest, 8).map_err(err)?;
            Ok((vec![b], at + size))
        }
        v @ (2 | 3) => {
            let (bins, size) = parse_multi(rest, at, v, images).map_err(err)?;
            // Newer LLVM aligns the start of the next binary to 8 (a
            // compressed binary's size is not a multiple of 8).
            let next = at.checked_add(size).and_then(align8).unwrap_or(u64::MAX);
            Ok((bins, next))
        }
        v => Err(err(invalid(InvalidReason::BadVersion(v)))),
    }
}

/// LLVM 22's header checks for version 1 against `limit` available bytes.
/// 22 runs them twice: on the rest of the blob, then on a copy cut to the
/// binary's recorded size.
fn check_v1(h: &[u8], limit: u64) -> Result<(), ReadErrorKind> {
    if limit < HEADER_SIZE + ENTRY_SIZE {
        return Err(invalid(InvalidReason::Truncated));
    }
    let size = u64_at(h, 8)?;
    if size > limit {
        return Err(eof(E::SizePastEnd));
    }
    if size < ENTRY_SIZE {
        return Err(eof(E::SizeTooSmall));
    }
    let entry_offset = u64_at(h, 16)?;
    let entry_size = u64_at(h, 24)?;
    if entry_offset > size - ENTRY_SIZE || entry_size > size - HEADER_SIZE {
        return Err(eof(E::EntriesPastEnd));
    }
    let image_offset = u64_at(h, entry_offset + 24)?;
    let string_offset = u64_at(h, entry_offset + 8)?;
    if image_offset > limit {
        return Err(eof(E::ImageOffsetPastEnd));
    }
    if string_offset > limit {
        return Err(eof(E::StringOffsetPastEnd));
    }
    Ok(())
}

/// A NUL-terminated string at `offset`, ending at the binary's end if no
/// NUL comes first (LLVM's copy of the binary is NUL-terminated).
fn c_string(bin: &[u8], offset: u64) -> Result<&[u8], ReadErrorKind> {
    let s = bin.get(offset as usize..).ok_or(K::StringPastEnd {
        offset,
        len: None,
        size: bin.len() as u64,
    })?;
    Ok(crate::bytes::until_nul(s))
}

/// The image at `offset` of `len` bytes in `bin`, the binary at `at` in
/// its blob; with [`Images::Deferred`], one past the end is empty and
/// comes with its error.
fn image_of(
    bin: &[u8],
    at: u64,
    offset: u64,
    len: u64,
    images: Images,
) -> Result<(&[u8], Option<ReadError>), ReadErrorKind> {
    let image = offset
        .checked_add(len)
        .filter(|&end| end <= bin.len() as u64)
        .and_then(|end| range(bin, offset, end).ok());
    let past_end = K::ImagePastEnd {
        offset,
        len,
        size: bin.len() as u64,
    };
    match (image, images) {
        (Some(image), _) => Ok((image, None)),
        (None, Images::Checked) => Err(past_end),
        (None, Images::Deferred) => Ok((
            &[],
            Some(ReadError {
                offset: at,
                kind: past_end,
            }),
        )),
    }
}

/// Adds a string with `MapVector` semantics: first position, last value.
fn insert<'a>(strings: &mut Vec<StringPair<'a>>, k: &'a [u8], v: &'a [u8]) {
    match strings.iter_mut().find(|(ok, _)| ok.as_ref() == k) {
        Some(slot) => slot.1 = Cow::Borrowed(v),
        None => strings.push((Cow::Borrowed(k), Cow::Borrowed(v))),
    }
}

fn parse_v1(rest: &[u8], at: u64, images: Images) -> Result<Binary<'_>, ReadErrorKind> {
    check_v1(rest, rest.len() as u64)?;
    let size = u64_at(rest, 8)?;
    check_v1(rest, size)?;
    let bin = range(rest, 0, size)?;
    let entry = u64_at(bin, 16)?;
    let string_offset = u64_at(bin, entry + 8)?;
    let count = u64_at(bin, entry + 16)?;
    let table_end = count
        .checked_mul(STRING_ENTRY_SIZE_V1)
        .and_then(|n| n.checked_add(string_offset))
        .filter(|&end| end <= size);
    if table_end.is_none() {
        return Err(K::StringEntriesPastEnd {
            offset: string_offset,
            count,
            size,
        });
    }
    let mut strings = Vec::new();
    for i in 0..count {
        let e = string_offset + i * STRING_ENTRY_SIZE_V1;
        let k = c_string(bin, u64_at(bin, e)?)?;
        let v = c_string(bin, u64_at(bin, e + 8)?)?;
        insert(&mut strings, k, v);
    }
    let (image, image_error) = image_of(
        bin,
        at,
        u64_at(bin, entry + 24)?,
        u64_at(bin, entry + 32)?,
        images,
    )?;
    Ok(Binary {
        version: 1,
        offset: at,
        index: 0,
        image_kind: ImageKind(u16_at(bin, entry)?),
        offload_kind: OffloadKind(u16_at(bin, entry + 2)?),
        flags: u32_at(bin, entry + 4)?,
        strings,
        image: Cow::Borrowed(image),
        image_error,
    })
}

/// Upstream LLVM's header checks for versions 2 and 3. Returns whether the
/// body is compressed.
fn check_multi(h: &[u8], limit: u64, allow_compressed: bool) -> Result<bool, ReadErrorKind> {
    if limit < HEADER_SIZE_V3 {
        return Err(invalid(InvalidReason::Truncated));
    }
    let size = u64_at(h, 8)?;
    if size > limit || size < HEADER_SIZE_V3 {
        return Err(eof(if size > limit {
            E::SizePastEnd
        } else {
            E::SizeTooSmall
        }));
    }
    if allow_compressed && u32_at(h, 4)? >= 3 && u64_at(h, 32)? != 0 {
        return Ok(true);
    }
    let entries_offset = u64_at(h, 16)?;
    let count = u64_at(h, 24)?;
    let entries = count
        .checked_mul(ENTRY_SIZE)
        .ok_or(eof(E::EntriesPastEnd))?;
    if entries > size - HEADER_SIZE || entries_offset > size - entries {
        return Err(eof(E::EntriesPastEnd));
    }
    Ok(false)
}

/// Decodes a zstd body into `body`, at most `limit` bytes.
#[cfg(feature = "zstd")]
fn zstd_body(packed: &[u8], limit: u64, body: &mut Vec<u8>) -> Result<(), ReadErrorKind> {
    crate::zstd_bounded::decode::<()>(packed, u64::MAX, &mut |piece| {
        let take = piece.len().min((limit - body.len() as u64) as usize);
        body.extend_from_slice(&piece[..take]);
        Ok((body.len() as u64) < limit)
    })
    .map(drop)
    .map_err(|e| match e {
        crate::zstd_bounded::Stop::Corrupt(e) => K::Decompress(BodyCodecError::Zstd(e)),
        _ => K::Decompress(BodyCodecError::Zstd("stopped".to_owned())),
    })
}

/// Decodes a zlib body into `body`, at most `limit` bytes. A stream cut
/// short leaves `body` short (the caller's size check names it); one that
/// decodes to more than `limit` is that size error here.
#[cfg(feature = "zlib")]
fn zlib_body(packed: &[u8], limit: u64, body: &mut Vec<u8>) -> Result<(), ReadErrorKind> {
    use crate::inflate_bounded::{inflate_into, Stop, Wrap};
    let mut keep = |piece: &[u8]| {
        body.extend_from_slice(piece);
        true
    };
    match inflate_into(packed, Wrap::Zlib, limit, &mut keep) {
        Ok(_) | Err(Stop::Cut | Stop::Stalled) => Ok(()),
        Err(Stop::Overrun { .. }) => Err(invalid(InvalidReason::InflatedSizeMismatch)),
        Err(Stop::Corrupt(_)) => Err(K::Decompress(BodyCodecError::ZlibCorrupt)),
        Err(Stop::Sink(never)) => match never {},
    }
}

/// Built without the codec: the body cannot be read.
#[cfg(not(feature = "zstd"))]
fn zstd_body(_: &[u8], _: u64, _: &mut Vec<u8>) -> Result<(), ReadErrorKind> {
    Err(K::Decompress(BodyCodecError::NotBuilt("zstd")))
}

/// Built without the codec: the body cannot be read.
#[cfg(not(feature = "zlib"))]
fn zlib_body(_: &[u8], _: u64, _: &mut Vec<u8>) -> Result<(), ReadErrorKind> {
    Err(K::Decompress(BodyCodecError::NotBuilt("zlib")))
}

/// Decompresses a version 3 body into a complete uncompressed binary.
fn inflate(bin: &[u8]) -> Result<Vec<u8>, ReadErrorKind> {
    let size = u64_at(bin, 8)?;
    let entries_offset = u64_at(bin, 16)?;
    let inflated = u64_at(bin, 32)?;
    if entries_offset > size || inflated < entries_offset {
        return Err(eof(E::BadCompressedHeader));
    }
    let packed = range(bin, entries_offset, size)?;
    let body_size = inflated - entries_offset;
    // Never trust the recorded size for an allocation: read at most one byte
    // more than announced, growing the buffer as data actually arrives.
    let limit = body_size.saturating_add(1);
    let mut body = Vec::new();
    let result = if packed.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        zstd_body(packed, limit, &mut body)
    } else {
        zlib_body(packed, limit, &mut body)
    };
    result?;
    if body.len() as u64 != body_size {
        return Err(invalid(InvalidReason::InflatedSizeMismatch));
    }
    let head = (entries_offset as usize).min(HEADER_SIZE_V3 as usize);
    let mut out = Vec::with_capacity(entries_offset as usize + body.len());
    out.extend_from_slice(range(bin, 0, head as u64)?);
    out.resize(entries_offset as usize, 0);
    // The restored header: full size, no longer compressed.
    if out.len() >= 16 {
        out[8..16].copy_from_slice(&inflated.to_le_bytes());
    }
    if out.len() >= 40 {
        out[32..40].copy_from_slice(&0u64.to_le_bytes());
    }
    out.extend_from_slice(&body);
    Ok(out)
}

fn parse_multi(
    rest: &[u8],
    at: u64,
    version: u32,
    images: Images,
) -> Result<(Vec<Binary<'_>>, u64), ReadErrorKind> {
    let compressed = check_multi(rest, rest.len() as u64, true)?;
    let size = u64_at(rest, 8)?;
    let bin = range(rest, 0, size)?;
    check_multi(bin, size, true)?;
    if compressed {
        let owned = inflate(bin)?;
        check_multi(&owned, owned.len() as u64, false)?;
        let entries = entries_multi(&owned, at, version, images)?;
        let entries = entries.into_iter().map(Binary::into_owned).collect();
        return Ok((entries, size));
    }
    Ok((entries_multi(bin, at, version, images)?, size))
}

fn entries_multi(
    bin: &[u8],
    at: u64,
    version: u32,
    images: Images,
) -> Result<Vec<Binary<'_>>, ReadErrorKind> {
    let size = bin.len() as u64;
    let entries_offset = u64_at(bin, 16)?;
    let count = u64_at(bin, 24)?;
    let mut out = Vec::new();
    for index in 0..count {
        let e = entries_offset + index * ENTRY_SIZE;
        let string_offset = u64_at(bin, e + 8)?;
        let n = u64_at(bin, e + 16)?;
        let image_offset = u64_at(bin, e + 24)?;
        if image_offset > size {
            return Err(eof(E::ImageOffsetPastEnd));
        }
        if string_offset > size {
            return Err(eof(E::StringOffsetPastEnd));
        }
        let table_end = n
            .checked_mul(STRING_ENTRY_SIZE_V2)
            .and_then(|t| t.checked_add(string_offset));
        match table_end {
            Some(end) if end <= size => {}
            // Upstream reports this as an end-of-file error too.
            Some(_) => return Err(eof(E::StringOffsetPastEnd)),
            None => {
                return Err(K::StringEntriesPastEnd {
                    offset: string_offset,
                    count: n,
                    size,
                })
            }
        }
        let mut strings = Vec::new();
        for i in 0..n {
            let s = string_offset + i * STRING_ENTRY_SIZE_V2;
            let k = c_string(bin, u64_at(bin, s)?)?;
            let value_offset = u64_at(bin, s + 8)?;
            let value_len = u64_at(bin, s + 16)?;
            let v = value_offset
                .checked_add(value_len)
                .filter(|&end| end <= size)
                .and_then(|end| range(bin, value_offset, end).ok())
                .ok_or(K::StringPastEnd {
                    offset: value_offset,
                    len: Some(value_len),
                    size,
                })?;
            insert(&mut strings, k, v);
        }
        let (image, image_error) = image_of(bin, at, image_offset, u64_at(bin, e + 32)?, images)?;
        out.push(Binary {
            version,
            offset: at,
            index,
            image_kind: ImageKind(u16_at(bin, e)?),
            offload_kind: OffloadKind(u16_at(bin, e + 2)?),
            flags: u32_at(bin, e + 4)?,
            strings,
            image: Cow::Borrowed(image),
            image_error,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::write::{write_multi, Compression, ImageEntry};

    fn entry<'a>(strings: Vec<(&'a [u8], &'a [u8])>, image: &'a [u8]) -> ImageEntry<'a> {
        ImageEntry {
            image_kind: ImageKind::OBJECT,
            offload_kind: OffloadKind::OPENMP,
            flags: 0,
            strings,
            image,
        }
    }

    fn sample() -> Vec<u8> {
        entry(
            vec![(b"arch", b"generic"), (b"triple", b"x86_64-pc-linux-gnu")],
            b"ABC",
        )
        .to_v1()
    }

    fn kind(blob: &[u8]) -> ReadErrorKind {
        parse_binaries(blob).unwrap_err().kind
    }

    fn put(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn round_trip_v1() {
        let mut blob = sample();
        blob.extend(entry(vec![(b"k", b"v"), (b"", b"")], b"").to_v1());
        let bins = parse_binaries(&blob).unwrap();
        assert_eq!(bins.len(), 2);
        assert_eq!(bins[0].image.as_ref(), b"ABC");
        assert_eq!(bins[0].triple(), b"x86_64-pc-linux-gnu");
        assert_eq!(bins[0].arch(), b"generic");
        assert_eq!(bins[0].image_kind, ImageKind::OBJECT);
        assert_eq!(bins[1].offset, 160);
        assert_eq!(bins[1].get(b"k"), Some(&b"v"[..]));
        assert_eq!(bins[1].get(b""), Some(&b""[..]));
        assert_eq!(bins[1].triple(), b"");
        assert!(bins[1].image.is_empty());
    }

    #[test]
    fn trailing_bytes_fail_the_whole_blob() {
        let mut blob = sample();
        blob.extend_from_slice(&[0; 8]);
        assert_eq!(kind(&blob), K::InvalidData(InvalidReason::Truncated));
        let mut blob = sample();
        blob.extend_from_slice(&[0xAA; 100]);
        assert_eq!(kind(&blob), K::InvalidData(InvalidReason::BadMagic));
    }

    #[test]
    fn header_errors_in_llvm_order() {
        let good = sample();
        assert_eq!(kind(&good[..71]), K::InvalidData(InvalidReason::Truncated));
        let mut b = good.clone();
        b[4] = 0;
        assert_eq!(kind(&b), K::InvalidData(InvalidReason::BadVersion(0)));
        b[4] = 4;
        assert_eq!(kind(&b), K::InvalidData(InvalidReason::BadVersion(4)));
        let mut b = good.clone();
        put(&mut b, 8, 161);
        assert_eq!(kind(&b), K::UnexpectedEof(E::SizePastEnd));
        put(&mut b, 8, 39);
        assert_eq!(kind(&b), K::UnexpectedEof(E::SizeTooSmall));
        // A size LLVM's first pass accepts but whose cut copy is too short.
        let mut b = good.clone();
        put(&mut b, 8, 48);
        put(&mut b, 16, 0);
        put(&mut b, 24, 0);
        let rest = &mut b[..];
        assert_eq!(
            kind(rest),
            K::InvalidData(InvalidReason::Truncated),
            "second pass on the 48-byte copy"
        );
        let mut b = good.clone();
        put(&mut b, 16, 121);
        assert_eq!(kind(&b), K::UnexpectedEof(E::EntriesPastEnd));
        let mut b = good.clone();
        put(&mut b, 24, 129);
        assert_eq!(kind(&b), K::UnexpectedEof(E::EntriesPastEnd));
        let mut b = good.clone();
        put(&mut b, 56, 161);
        assert_eq!(kind(&b), K::UnexpectedEof(E::ImageOffsetPastEnd));
        let mut b = good.clone();
        put(&mut b, 40, 161);
        assert_eq!(kind(&b), K::UnexpectedEof(E::StringOffsetPastEnd));
    }

    #[test]
    fn offsets_llvm_22_does_not_check() {
        let good = sample();
        let mut b = good.clone();
        put(&mut b, 48, u64::MAX / 8);
        assert!(matches!(kind(&b), K::StringEntriesPastEnd { .. }));
        let mut b = good.clone();
        put(&mut b, 72, 161);
        assert!(matches!(kind(&b), K::StringPastEnd { offset: 161, .. }));
        let mut b = good.clone();
        put(&mut b, 64, 9);
        assert!(matches!(
            kind(&b),
            K::ImagePastEnd {
                offset: 152,
                len: 9,
                size: 160
            }
        ));
        let mut b = good.clone();
        put(&mut b, 64, u64::MAX);
        assert!(matches!(kind(&b), K::ImagePastEnd { .. }));
        // Deferred, the binary reads, its strings and the binaries after it
        // too; the image is empty and carries the error.
        let two = [b.as_slice(), &good].concat();
        let read = parse_binaries_with(&two, Images::Deferred).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].arch(), b"generic");
        assert!(read[0].image.is_empty());
        assert_eq!(
            read[0].image_error,
            Some(ReadError {
                offset: 0,
                kind: K::ImagePastEnd {
                    offset: 152,
                    len: u64::MAX,
                    size: 160
                }
            })
        );
        assert_eq!(read[1].image_error, None);
        assert_eq!(read[1].image, parse_binaries(&good).unwrap()[0].image);
        // Deferring changes nothing else: a string past the end still fails.
        let mut b = good.clone();
        put(&mut b, 72, 161);
        assert!(matches!(
            parse_binaries_with(&b, Images::Deferred).unwrap_err().kind,
            K::StringPastEnd { offset: 161, .. }
        ));
        // A string at the very end reads as empty; one without NUL stops at
        // the end of the binary, as in LLVM's NUL-terminated copy.
        let mut b = good.clone();
        put(&mut b, 80, 160);
        assert_eq!(parse_binaries(&b).unwrap()[0].arch(), b"");
        let mut b = good.clone();
        b[155..160].copy_from_slice(b"XYZWV");
        put(&mut b, 80, 155);
        assert_eq!(parse_binaries(&b).unwrap()[0].arch(), b"XYZWV");
    }

    #[test]
    fn duplicate_keys_first_position_last_value() {
        let e = entry(vec![(b"a", b"1"), (b"b", b"2")], b"x");
        let mut b = e.to_v1();
        // Point the second key at "a": the map keeps "a" first, value "2".
        let a_key = u64::from_le_bytes(b[72..80].try_into().unwrap());
        put(&mut b, 88, a_key);
        let bins = parse_binaries(&b).unwrap();
        assert_eq!(bins[0].strings.len(), 1);
        assert_eq!(bins[0].get(b"a"), Some(&b"2"[..]));
    }

    #[test]
    fn unaligned_size_is_followed_exactly() {
        // 22 starts the next binary right at offset + size.
        let mut first = sample();
        put(&mut first, 8, 155);
        first.truncate(155);
        let mut blob = first.clone();
        blob.extend(sample());
        let bins = parse_binaries(&blob).unwrap();
        assert_eq!(bins.len(), 2);
        assert_eq!(bins[1].offset, 155);
    }

    #[test]
    fn versions_2_and_3() {
        let a = entry(vec![(b"triple", b"t1"), (b"arch", b"a\0b")], b"first image");
        let b = ImageEntry {
            flags: 1,
            ..ImageEntry::new(
                ImageKind::BITCODE,
                OffloadKind::HIP,
                vec![(b"triple", b"t2")],
                b"second",
            )
        };
        #[allow(unused_mut)] // without a codec, nothing is pushed
        let mut cases: Vec<(u32, Option<Compression>)> = vec![(2, None), (3, None)];
        #[cfg(feature = "zlib")]
        cases.push((3, Some(Compression::Zlib(6))));
        #[cfg(feature = "zstd")]
        cases.push((3, Some(Compression::Zstd(3))));
        for (version, compression) in cases {
            let one = write_multi(&[a.clone(), b.clone()], version, compression);
            let mut blob = one.clone();
            blob.extend_from_slice(&one);
            blob.extend(sample());
            let bins =
                parse_binaries(&blob).unwrap_or_else(|e| panic!("{version} {compression:?}: {e}"));
            assert_eq!(bins.len(), 5, "{version} {compression:?}");
            assert_eq!(bins[0].image.as_ref(), b"first image");
            // Version 2 stores value sizes: a NUL inside a value survives.
            assert_eq!(bins[0].arch(), b"a\0b");
            assert_eq!(bins[1].image.as_ref(), b"second");
            assert_eq!(bins[1].triple(), b"t2");
            assert_eq!(bins[1].offload_kind, OffloadKind::HIP);
            assert_eq!(bins[1].index, 1);
            assert_eq!(bins[1].version, version);
            assert_eq!(bins[2].offset as usize, one.len());
            assert_eq!(bins[4].version, 1);
        }
    }

    #[test]
    #[cfg(feature = "zlib")]
    fn compressed_bodies_are_checked() {
        let a = entry(vec![(b"triple", b"t")], &[7u8; 300]);
        let good = write_multi(&[a], 3, Some(Compression::Zlib(6)));
        // Announce one byte more than the body inflates to.
        let mut b = good.clone();
        let inflated = u64::from_le_bytes(b[32..40].try_into().unwrap());
        put(&mut b, 32, inflated + 1);
        assert_eq!(
            kind(&b),
            K::InvalidData(InvalidReason::InflatedSizeMismatch)
        );
        // A huge announced size must not be allocated up front.
        put(&mut b, 32, u64::MAX / 2);
        assert_eq!(
            kind(&b),
            K::InvalidData(InvalidReason::InflatedSizeMismatch)
        );
        let mut b = good.clone();
        let n = b.len();
        for x in &mut b[48..n - 8] {
            *x ^= 0x5a;
        }
        assert!(matches!(kind(&b), K::Decompress(_)));
        let mut b = good.clone();
        put(&mut b, 32, 8);
        assert_eq!(kind(&b), K::UnexpectedEof(E::BadCompressedHeader));
    }

    #[test]
    fn v2_entry_count_overflow() {
        let a = entry(vec![], b"x");
        let mut b = write_multi(&[a], 2, None);
        put(&mut b, 24, u64::MAX / 20);
        assert_eq!(kind(&b), K::UnexpectedEof(E::EntriesPastEnd));
        put(&mut b, 24, u64::MAX);
        assert_eq!(kind(&b), K::UnexpectedEof(E::EntriesPastEnd));
    }

    #[test]
    #[cfg(feature = "zstd")]
    fn every_truncation_and_byte_flip_is_handled() {
        // No panics, whatever is cut or changed.
        let mut blob = sample();
        blob.extend(write_multi(
            &[entry(vec![(b"k", b"v")], b"img")],
            3,
            Some(Compression::Zstd(1)),
        ));
        for cut in 0..blob.len() {
            let _ = parse_binaries(&blob[..cut]);
        }
        for i in 0..blob.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = blob.clone();
                b[i] ^= x;
                let _ = parse_binaries(&b);
            }
        }
    }
}
