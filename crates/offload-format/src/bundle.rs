//! Binary offload bundles: the `__CLANG_OFFLOAD_BUNDLE__` container that
//! `clang-offload-bundler` writes for `bc`, `gch`, `ast` and non-object `o`
//! files.
//!
//! Layout (all integers little-endian `u64`):
//!
//! ```text
//! magic "__CLANG_OFFLOAD_BUNDLE__" (24 bytes, no NUL)
//! N                                 number of entries
//! N x { offset, size, id_len, id }  id is id_len raw bytes, no padding
//! zero padding and entry data       each entry at its offset
//! ```
//!
//! The writer places entry data in header order, each entry aligned to the
//! bundle alignment (the first too), with zero bytes in the gaps and nothing
//! after the last entry's data.
//!
//! LLVM reads the header into a `StringMap`, so everything that walks the
//! entries (listing, unbundling) sees them in that map's bucket order, not in
//! header order. [`parse`] returns entries in that order.

use crate::bytes::{Bytes, Endian};
use crate::hash::xxh3::StringMapOrder;
use std::fmt;
use std::io::{self, Write};

/// The magic string at offset 0 of every binary bundle. It is also the prefix
/// of bundle section names in object files.
pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// One entry of a binary bundle: its ID and where its data lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The entry ID exactly as stored (not validated, may be any bytes).
    pub id: &'a [u8],
    /// Offset of the entry data from the start of the bundle.
    pub offset: u64,
    /// Size of the entry data.
    pub size: u64,
    /// The entry's data: `offset..offset + size` of the bundle.
    pub data: &'a [u8],
}

/// Errors reading or writing a binary bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// A header entry after the first one is cut short by the end of the file.
    /// (LLVM 22 crashes on such files.)
    TruncatedHeader {
        /// Zero-based index of the entry that is cut short.
        index: u64,
        /// The entry count the header declares.
        count: u64,
    },
    /// A header entry after the first one has offset 0 or a data range that
    /// ends past the end of the file. (LLVM 22 crashes on such files.)
    BadEntryRange {
        /// Zero-based index of the entry.
        index: u64,
        /// Its offset field.
        offset: u64,
        /// Its size field.
        size: u64,
        /// The size of the bundle.
        file_size: u64,
    },
    /// A header entry's ID length or data range wraps around 64 bits (LLVM 22
    /// reads out of bounds on such files).
    Overflow {
        /// Zero-based index of the entry.
        index: u64,
    },
    /// The bundle alignment is 0.
    ZeroAlignment,
    /// Two entries to be written have the same ID; a reader could only ever
    /// find one of them.
    DuplicateId(Vec<u8>),
    /// The layout does not fit in 64 bits.
    TooLarge,
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::TruncatedHeader { index, count } => write!(
                f,
                "truncated offload bundle header: entry {} of {count} runs past the end of the file",
                index + 1
            ),
            BundleError::BadEntryRange {
                index,
                offset,
                size,
                file_size,
            } => {
                if *offset == 0 {
                    write!(f, "malformed offload bundle: entry {} has offset 0", index + 1)
                } else {
                    write!(
                        f,
                        "malformed offload bundle: entry {} (offset {offset}, size {size}) ends past the end of the file ({file_size} bytes)",
                        index + 1
                    )
                }
            }
            BundleError::Overflow { index } => write!(
                f,
                "malformed offload bundle: entry {} has a size or ID length beyond 64 bits",
                index + 1
            ),
            BundleError::ZeroAlignment => write!(f, "bundle alignment must be at least 1"),
            BundleError::DuplicateId(id) => write!(
                f,
                "duplicate bundle entry ID '{}'",
                String::from_utf8_lossy(id)
            ),
            BundleError::TooLarge => write!(f, "offload bundle too large"),
        }
    }
}

impl std::error::Error for BundleError {}

/// True if `data` starts with the binary bundle magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

fn read_u64(data: &[u8], at: usize) -> Option<u64> {
    Bytes::new(data).u64_at(at as u64, Endian::Little)
}

/// Reads the header entries in file order, exactly as LLVM 22 accepts them.
///
/// Returns an empty list when LLVM sees no bundle: too short for the magic,
/// no magic, no entry count, or a first entry that is cut short or whose data
/// range is invalid. A bad entry after a good one is an error (LLVM 22
/// crashes there). Duplicate IDs are kept here; see [`parse`].
pub fn parse_header(data: &[u8]) -> Result<Vec<Entry<'_>>, BundleError> {
    let ranges = parse_header_prefix(data, data.len() as u64)?.unwrap_or_default();
    // Every range was checked against the data's size.
    Ok(ranges
        .into_iter()
        .filter_map(|r| {
            let data = data.get(usize::try_from(r.offset).ok()?..usize::try_from(r.end()).ok()?)?;
            Some(Entry {
                id: r.id,
                offset: r.offset,
                size: r.size,
                data,
            })
        })
        .collect())
}

/// A header entry whose data has not been read (see
/// `parse_header_prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRange<'a> {
    /// Zero-based position of the entry in the header.
    pub index: u64,
    /// The entry ID exactly as stored.
    pub id: &'a [u8],
    /// Offset of the entry data from the start of the bundle.
    pub offset: u64,
    /// Size of the entry data.
    pub size: u64,
}

impl EntryRange<'_> {
    /// Where the entry data ends (checked not to overflow when parsed,
    /// except by [`parse_ranges`]).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.size)
    }

    /// The entry's data in `bundle` (the data the header was read from).
    /// An entry whose offset + size wraps past 2^64 (only [`parse_ranges`]
    /// keeps one) has none: [`BundleError::Overflow`].
    pub fn data_in<'d>(&self, bundle: &'d [u8]) -> Result<&'d [u8], BundleError> {
        let overflow = BundleError::Overflow { index: self.index };
        let end = self.offset.checked_add(self.size).ok_or(overflow.clone())?;
        usize::try_from(self.offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(from, to)| bundle.get(from..to))
            .ok_or(BundleError::BadEntryRange {
                index: self.index,
                offset: self.offset,
                size: self.size,
                file_size: bundle.len() as u64,
            })
    }
}

/// The header entries in LLVM 22's visiting order, exactly as LLVM 22
/// accepts them, an entry whose offset + size wraps past 2^64 included:
/// LLVM's unchecked sum wraps and passes its range check, so it lists such
/// an entry and unbundles the others, and only reading that entry's data
/// goes out of bounds. Reading it here is the error
/// ([`EntryRange::data_in`]). An ID length that wraps is an error here
/// too, as in [`parse`] (LLVM reads the ID out of bounds at once).
pub fn parse_ranges(data: &[u8]) -> Result<Vec<EntryRange<'_>>, BundleError> {
    let ranges = header_ranges(data, data.len() as u64, true)?.unwrap_or_default();
    Ok(visit_order(ranges, |e| e.id))
}

/// [`parse_header`] for a bundle of `file_size` bytes of which only the
/// first `prefix.len()` are at hand (a bundle being decompressed, say).
///
/// `Ok(None)` means the prefix is too short to tell; with the whole bundle
/// at hand the answer is always `Some`, and equal to [`parse_header`]'s.
/// Entry ranges are checked against `file_size`.
pub(crate) fn parse_header_prefix(
    prefix: &[u8],
    file_size: u64,
) -> Result<Option<Vec<EntryRange<'_>>>, BundleError> {
    header_ranges(prefix, file_size, false)
}

/// [`parse_header_prefix`]; `keep_wrapped` keeps an entry whose offset +
/// size wraps past 2^64 where LLVM's wrapped sum passes its range check
/// (see [`parse_ranges`]) instead of refusing it.
fn header_ranges(
    prefix: &[u8],
    file_size: u64,
    keep_wrapped: bool,
) -> Result<Option<Vec<EntryRange<'_>>>, BundleError> {
    let complete = prefix.len() as u64 >= file_size;
    // Only the first `file_size` bytes belong to the bundle.
    let data = match usize::try_from(file_size) {
        Ok(n) if n < prefix.len() => &prefix[..n],
        _ => prefix,
    };
    // What running out of header means: LLVM's verdict on the bundle, or
    // "need more" when more is coming.
    fn ran_out<T>(
        complete: bool,
        verdict: Result<T, BundleError>,
    ) -> Result<Option<T>, BundleError> {
        if complete {
            verdict.map(Some)
        } else {
            Ok(None)
        }
    }
    let mut entries = Vec::new();
    if data.len() < MAGIC.len() {
        return ran_out(complete, Ok(entries));
    }
    if !has_magic(data) {
        return Ok(Some(entries));
    }
    let Some(count) = read_u64(data, MAGIC.len()) else {
        return ran_out(complete, Ok(entries));
    };
    let mut pos = MAGIC.len() + 8;
    let mut index = 0u64;
    while index < count {
        let bad = |e: BundleError| {
            if index == 0 {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        };
        let truncated = BundleError::TruncatedHeader { index, count };
        let (Some(offset), Some(size), Some(id_len)) = (
            read_u64(data, pos),
            read_u64(data, pos + 8),
            read_u64(data, pos + 16),
        ) else {
            return ran_out(complete, bad(truncated));
        };
        let id_start = pos + 24;
        // LLVM adds these lengths without overflow checks: a sum that wraps
        // makes it read out of bounds, so that is an error whatever the
        // entry's position. A length that merely runs past the end is
        // LLVM's "no bundle" / "stop here" case.
        let id_end = (id_start as u64)
            .checked_add(id_len)
            .ok_or(BundleError::Overflow { index })?;
        let Some(id) = usize::try_from(id_end)
            .ok()
            .and_then(|end| data.get(id_start..end))
        else {
            return ran_out(complete, bad(truncated));
        };
        pos = id_start + id.len();
        let end = match offset.checked_add(size) {
            Some(end) => end,
            None if keep_wrapped => offset.wrapping_add(size),
            None => return Err(BundleError::Overflow { index }),
        };
        if offset == 0 || end > file_size {
            return bad(BundleError::BadEntryRange {
                index,
                offset,
                size,
                file_size,
            })
            .map(Some);
        }
        entries.push(EntryRange {
            index,
            id,
            offset,
            size,
        });
        index += 1;
    }
    Ok(Some(entries))
}

/// Reads a binary bundle and returns its entries in the order LLVM 22 visits
/// them (`StringMap` bucket order). An ID that occurs more than once keeps
/// its first position and its last offset and size, as in LLVM.
///
/// See [`parse_header`] for what counts as "no bundle" (an empty list) and
/// what is an error.
pub fn parse(data: &[u8]) -> Result<Vec<Entry<'_>>, BundleError> {
    Ok(visit_order(parse_header(data)?, |e| e.id))
}

/// [`parse`] for a bundle known only by a prefix, as
/// `parse_header_prefix` reads it.
pub fn parse_prefix(
    prefix: &[u8],
    file_size: u64,
) -> Result<Option<Vec<EntryRange<'_>>>, BundleError> {
    Ok(parse_header_prefix(prefix, file_size)?.map(|h| visit_order(h, |e| e.id)))
}

/// Header entries in LLVM's visiting order, duplicates folded.
fn visit_order<T: Copy>(header: Vec<T>, id: impl Fn(&T) -> &[u8]) -> Vec<T> {
    let mut map = StringMapOrder::new();
    let mut latest: Vec<T> = Vec::with_capacity(header.len());
    for e in header {
        let (i, new) = map.insert(id(&e));
        if new {
            latest.push(e);
        } else {
            latest[i] = e;
        }
    }
    map.iter().map(|i| latest[i]).collect()
}

/// Computes the data offset of each entry and the total bundle size for
/// entries with the given ID lengths and data sizes.
///
/// Returns (header size, offsets, total size).
pub fn layout(entries: &[(usize, u64)], align: u32) -> Result<(u64, Vec<u64>, u64), BundleError> {
    if align == 0 {
        return Err(BundleError::ZeroAlignment);
    }
    let align = u64::from(align);
    let mut header = (MAGIC.len() + 8) as u64;
    for &(id_len, _) in entries {
        header = header
            .checked_add(24)
            .and_then(|h| h.checked_add(id_len as u64))
            .ok_or(BundleError::TooLarge)?;
    }
    let mut cur = header;
    let mut offsets = Vec::with_capacity(entries.len());
    for &(_, size) in entries {
        cur = cur
            .checked_add(align - 1)
            .map(|v| v / align * align)
            .ok_or(BundleError::TooLarge)?;
        offsets.push(cur);
        cur = cur.checked_add(size).ok_or(BundleError::TooLarge)?;
    }
    Ok((header, offsets, cur))
}

/// Writes a binary bundle of `entries` (ID, data), in the given order, with
/// each entry's data aligned to `align` bytes.
///
/// Produces the same bytes as `clang-offload-bundler` 22 for the same
/// (standardised) IDs and inputs. Padding is streamed, not buffered.
pub fn write<W: Write>(out: &mut W, entries: &[(&[u8], &[u8])], align: u32) -> io::Result<()> {
    let sized: Vec<(&[u8], u64)> = entries
        .iter()
        .map(|(id, data)| (*id, data.len() as u64))
        .collect();
    let (head, offsets, _) = header(&sized, align).map_err(io::Error::other)?;
    out.write_all(&head)?;
    let mut pos = head.len() as u64;
    for ((_, data), &off) in entries.iter().zip(&offsets) {
        write_zeros(out, off - pos)?;
        out.write_all(data)?;
        pos = off + data.len() as u64;
    }
    Ok(())
}

/// The header [`write()`] gives a bundle of entries with these IDs and data
/// sizes, in this order: returns the header bytes, each entry's data
/// offset and the bundle's total size. The data follows the header, each
/// entry at its offset, zero bytes between.
pub fn header(
    entries: &[(&[u8], u64)],
    align: u32,
) -> Result<(Vec<u8>, Vec<u64>, u64), BundleError> {
    let (head_len, offsets, total) = check_and_layout(entries, align)?;
    let mut out = Vec::with_capacity(usize::try_from(head_len).map_err(|_| BundleError::TooLarge)?);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for ((id, size), off) in entries.iter().zip(&offsets) {
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(id.len() as u64).to_le_bytes());
        out.extend_from_slice(id);
    }
    Ok((out, offsets, total))
}

/// Validates `entries` for [`write()`] and returns the size of the bundle it
/// would write.
pub fn written_size(entries: &[(&[u8], &[u8])], align: u32) -> Result<u64, BundleError> {
    let sized: Vec<(&[u8], u64)> = entries
        .iter()
        .map(|(id, data)| (*id, data.len() as u64))
        .collect();
    check_and_layout(&sized, align).map(|(_, _, total)| total)
}

fn check_and_layout(
    entries: &[(&[u8], u64)],
    align: u32,
) -> Result<(u64, Vec<u64>, u64), BundleError> {
    let mut seen = StringMapOrder::new();
    for (id, _) in entries {
        if !seen.insert(id).1 {
            return Err(BundleError::DuplicateId(id.to_vec()));
        }
    }
    let sizes: Vec<(usize, u64)> = entries.iter().map(|(id, size)| (id.len(), *size)).collect();
    layout(&sizes, align)
}

/// Writes all of `slices` with vectored writes (`write_vectored` until
/// none is left; a call interrupted is made again), so that pieces lying
/// in a mapped input are copied once, by the kernel. `slices` is consumed.
pub fn write_all_vectored<W: Write + ?Sized>(
    out: &mut W,
    slices: &mut [std::io::IoSlice<'_>],
) -> io::Result<()> {
    let mut rest = slices;
    while !rest.is_empty() {
        match out.write_vectored(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes `n` zero bytes (padding) without allocating them.
pub fn write_zeros<W: Write + ?Sized>(out: &mut W, mut n: u64) -> io::Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    while n > 0 {
        let chunk = n.min(ZEROS.len() as u64) as usize;
        out.write_all(&ZEROS[..chunk])?;
        n -= chunk as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(entries: &[(&str, &[u8])], align: u32) -> Vec<u8> {
        let e: Vec<(&[u8], &[u8])> = entries.iter().map(|(i, d)| (i.as_bytes(), *d)).collect();
        let mut v = Vec::new();
        write(&mut v, &e, align).unwrap();
        assert_eq!(written_size(&e, align).unwrap(), v.len() as u64);
        v
    }

    #[test]
    fn spec_example_layout() {
        let host = "host-x86_64-unknown-linux-gnu-";
        let dev = "hip-amdgcn-amd-amdhsa--gfx906";
        let b = bundle(&[(host, b"HOSTDATA"), (dev, b"DEV1")], 16);
        assert_eq!(b.len(), 164);
        assert_eq!(&b[..24], MAGIC);
        assert_eq!(read_u64(&b, 24), Some(2));
        assert_eq!(read_u64(&b, 32), Some(0x90));
        assert_eq!(read_u64(&b, 0x56), Some(0xa0));
        assert!(b[0x8b..0x90].iter().all(|&x| x == 0));
        assert_eq!(&b[0x90..0x98], b"HOSTDATA");
        assert!(b[0x98..0xa0].iter().all(|&x| x == 0));
        assert_eq!(&b[0xa0..], b"DEV1");
        assert_eq!(bundle(&[(host, b"HOSTDATA"), (dev, b"DEV1")], 1).len(), 151);
    }

    #[test]
    fn trailing_empty_entries_keep_their_padding() {
        // Header of two 1-byte IDs: 32 + 2 * 25 = 82; align 8 -> 88.
        let b = bundle(&[("a", b""), ("b", b"")], 8);
        assert_eq!(b.len(), 88);
        let e = parse_header(&b).unwrap();
        assert_eq!((e[0].offset, e[1].offset), (88, 88));
    }

    #[test]
    fn round_trip_and_map_order() {
        let ids = [
            "host-x86_64-unknown-linux-gnu-",
            "hip-amdgcn-amd-amdhsa--gfx906",
            "openmp-nvptx64-nvidia-cuda-unknown-",
        ];
        let datas: [&[u8]; 3] = [b"h", b"dd", b""];
        let entries: Vec<(&str, &[u8])> = ids.iter().copied().zip(datas).collect();
        let b = bundle(&entries, 3);
        let got: Vec<(&[u8], &[u8])> = parse(&b).unwrap().iter().map(|e| (e.id, e.data)).collect();
        assert_eq!(
            got,
            [
                (ids[1].as_bytes(), &b"dd"[..]),
                (ids[2].as_bytes(), &b""[..]),
                (ids[0].as_bytes(), &b"h"[..]),
            ]
        );
    }

    #[test]
    fn not_a_bundle_is_empty() {
        assert!(parse(b"").unwrap().is_empty());
        assert!(parse(b"BC\xc0\xde rest of bitcode").unwrap().is_empty());
        assert!(parse(&MAGIC[..23]).unwrap().is_empty());
        assert!(parse(MAGIC).unwrap().is_empty());
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&b).unwrap().is_empty());
    }

    #[test]
    fn first_bad_entry_means_no_bundle_later_bad_entry_is_error() {
        let good = bundle(&[("a", b"x"), ("b", b"y")], 1);
        // A one-entry bundle whose count says 2: the second entry runs into
        // the data and off the end.
        let mut cut = bundle(&[("a", b"x")], 1);
        cut[24..32].copy_from_slice(&2u64.to_le_bytes());
        assert_eq!(
            parse(&cut),
            Err(BundleError::TruncatedHeader { index: 1, count: 2 })
        );
        // Truncate inside the first header entry.
        assert!(parse(&good[..40]).unwrap().is_empty());
        // Second entry's data runs past the end of the file.
        let mut b = good.clone();
        b[32 + 25 + 8..32 + 25 + 16].copy_from_slice(&100u64.to_le_bytes());
        assert!(matches!(
            parse(&b),
            Err(BundleError::BadEntryRange { index: 1, .. })
        ));
        // First entry with offset 0.
        let mut b = good.clone();
        b[32..40].copy_from_slice(&0u64.to_le_bytes());
        assert!(parse(&b).unwrap().is_empty());
        // An ID length that runs past the end of the file.
        let mut b = good.clone();
        b[32 + 25 + 16..32 + 25 + 24].copy_from_slice(&1000u64.to_le_bytes());
        assert_eq!(
            parse(&b),
            Err(BundleError::TruncatedHeader { index: 1, count: 2 })
        );
        // Lengths whose sums wrap are errors even in the first entry.
        let mut b = good.clone();
        b[32 + 16..32 + 24].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
        assert_eq!(parse(&b), Err(BundleError::Overflow { index: 0 }));
        let mut b = good;
        b[32 + 8..32 + 16].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
        assert_eq!(parse(&b), Err(BundleError::Overflow { index: 0 }));
        // As LLVM reads it: the wrapped entry is kept, without data.
        let ranges = parse_ranges(&b).unwrap();
        assert_eq!(ranges.len(), 2);
        let wrapped = ranges.iter().find(|r| r.index == 0).unwrap();
        assert_eq!(wrapped.data_in(&b), Err(BundleError::Overflow { index: 0 }));
        let other = ranges.iter().find(|r| r.index == 1).unwrap();
        assert!(other.data_in(&b).is_ok());
    }

    /// Every prefix either cannot tell yet or gives exactly what the whole
    /// bundle gives (entries, "no bundle", or the same error), for good and
    /// damaged bundles alike.
    #[test]
    fn prefixes_agree_with_the_whole() {
        let good = bundle(&[("b", b"xyz"), ("a", b"w"), ("c", b"")], 4);
        // The third ID made a repeat of the first.
        let mut repeat = good.clone();
        let third_id = 32 + 2 * 25 + 24;
        assert_eq!(repeat[third_id], b'c');
        repeat[third_id] = b'b';
        let mut bundles = vec![good.clone(), repeat, b"BC\xc0\xde not a bundle".to_vec()];
        for (at, value) in [(24, 5u64), (32, 0), (32 + 8, 1000), (32 + 26 + 16, 900)] {
            let mut b = good.clone();
            b[at..at + 8].copy_from_slice(&value.to_le_bytes());
            bundles.push(b);
        }
        let mut wrapped = good.clone();
        wrapped[32 + 26 + 8..32 + 26 + 16].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
        bundles.push(wrapped);
        for (i, b) in bundles.iter().enumerate() {
            let whole = parse(b).map(|v| {
                v.iter()
                    .map(|e| (e.id, e.offset, e.size))
                    .collect::<Vec<_>>()
            });
            let mut decided = false;
            for n in 0..=b.len() {
                let Some(got) = parse_prefix(&b[..n], b.len() as u64).transpose() else {
                    assert!(
                        !decided,
                        "bundle {i}: prefix {n} undecided after a decision"
                    );
                    continue;
                };
                decided = true;
                let got = got.map(|v| v.iter().map(|e| (e.id, e.offset, e.size)).collect());
                assert_eq!(got, whole, "bundle {i}, prefix {n}");
            }
            assert!(decided, "bundle {i}");
            // Bytes beyond the stated size are not the bundle's.
            let mut longer = b.clone();
            longer.extend_from_slice(b"trailing");
            assert_eq!(
                parse_prefix(&longer, b.len() as u64),
                parse_prefix(b, b.len() as u64),
                "bundle {i}"
            );
        }
    }

    #[test]
    fn repeated_id_keeps_first_position_and_last_value() {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&2u64.to_le_bytes());
        let data_at = 32 + 2 * 25;
        for off in [data_at, data_at + 1] {
            b.extend_from_slice(&(off as u64).to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
            b.push(b'k');
        }
        b.extend_from_slice(b"12");
        let e = parse(&b).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].data, b"2");
        assert_eq!(parse_header(&b).unwrap().len(), 2);
    }

    #[test]
    fn writer_rejects_zero_alignment_and_duplicates() {
        let e: Vec<(&[u8], &[u8])> = vec![(b"a", b"x")];
        assert_eq!(written_size(&e, 0), Err(BundleError::ZeroAlignment));
        let e: Vec<(&[u8], &[u8])> = vec![(b"a", b"x"), (b"a", b"y")];
        assert_eq!(
            written_size(&e, 1),
            Err(BundleError::DuplicateId(b"a".to_vec()))
        );
        assert!(write(&mut Vec::new(), &e, 1).is_err());
    }

    #[test]
    fn huge_alignment_is_computed_not_allocated() {
        let e: Vec<(&[u8], &[u8])> = vec![(b"a", b"x"), (b"b", b"y")];
        let total = written_size(&e, u32::MAX).unwrap();
        assert_eq!(total, 2 * u64::from(u32::MAX) + 1);
    }
}
