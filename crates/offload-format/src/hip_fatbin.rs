//! Regions of concatenated offload bundles: what HIP links into
//! `.hip_fatbin`, one bundle per translation unit.
//!
//! A region is a sequence of items, each a binary offload bundle
//! ([`crate::bundle`]) or a compressed bundle ([`crate::ccob`], versions 1
//! to 3), with zero bytes between them (linkers align each unit's bundle,
//! typically to 4096). Neither LLVM 22 tool reads such a region whole:
//! the bundler sees the first bundle only, and fails on concatenated CCOBs.
//!
//! * [`scan`] walks a region and reports each item's offset, size and kind,
//!   and damage at the offset where it was found; after damage it resumes at
//!   the next known item start or the next magic, so the rest is kept.
//!   Item starts known from elsewhere (the `__hip_fatbin_wrapper` records
//!   of `.hipFatBinSegment`, see [`parse_wrappers`]) make the boundaries
//!   exact even where a header cannot be trusted.
//! * [`ccob_bundle_header`] reads the entry table of the bundle inside a
//!   CCOB by decompressing only as far as the table (bounded memory).
//! * [`ccob_entry`] decompresses one entry's bytes, checking the hash;
//!   [`ccob_entry_heads`] the first bytes of every entry, to name them,
//!   decoding no further than the last of them; [`ccob_entry_prefixes`]
//!   the same after decoding everything and checking the hash.
//!
//! Sizes: an uncompressed bundle has no total size, so it is taken to end
//! where its furthest entry ends (or its header, if later). A v2/v3 CCOB
//! records its size. A v1 CCOB does not: its end is where the codec says
//! its compressed stream ends (`ccob::stream_len`); should that fail, it
//! runs to the next item start (known, or a CCOB magic) with trailing zero
//! bytes removed. Either way the item says so ([`Item::size_inferred`]).

use crate::bundle;
use crate::bytes::{Bytes, Endian};
use crate::ccob::{self, CcobError, Header as CcobHeader};
use std::fmt;

/// What an item of a region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// An uncompressed binary bundle.
    Bundle,
    /// A compressed bundle, with its header.
    Ccob(CcobHeader),
}

/// One bundle (or compressed bundle) of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item<'a> {
    /// Offset of the item in the region.
    pub offset: usize,
    /// The item's bytes.
    pub bytes: &'a [u8],
    /// What it is.
    pub kind: ItemKind,
    /// The size was inferred (v1 CCOB, which records none).
    pub size_inferred: bool,
}

pub use crate::damage::{Damage, DamageKind};

/// What [`scan`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The items, in region order.
    pub items: Vec<Item<'a>>,
    /// Damage, in region order.
    pub damage: Vec<Damage>,
}

/// The next offset after `from` where a bundle or CCOB magic starts.
fn next_magic(region: &[u8], from: usize) -> Option<usize> {
    let tail = region.get(from..)?;
    let at = tail.windows(4).enumerate().find_map(|(i, w)| {
        let here = &tail[i..];
        ((w == ccob::MAGIC && here.len() >= 8) || bundle::has_magic(here)).then_some(i)
    })?;
    Some(from + at)
}

/// The next offset after `from` where a CCOB magic starts.
fn next_ccob(region: &[u8], from: usize) -> Option<usize> {
    let tail = region.get(from..)?;
    tail.windows(4)
        .position(|w| w == ccob::MAGIC)
        .map(|p| p + from)
}

/// Size of a bundle header with the given entries.
fn header_len(entries: &[bundle::EntryRange<'_>]) -> u64 {
    entries.iter().fold(bundle::MAGIC.len() as u64 + 8, |n, e| {
        n.saturating_add(24).saturating_add(e.id.len() as u64)
    })
}

/// The extent of the uncompressed bundle at the start of `rest`.
fn bundle_extent(rest: &[u8]) -> Result<usize, String> {
    match bundle::parse_header_prefix(rest, rest.len() as u64) {
        Ok(Some(entries)) => {
            if entries.is_empty() {
                // The count may be 0 (a 32-byte bundle), or LLVM's "no
                // bundle" verdict on a bad first entry.
                let count = Bytes::new(rest).u64_at(24, Endian::Little);
                return match count {
                    Some(0) => Ok(32),
                    Some(_) => Err(
                        "bundle header's first entry is cut short or its data range is invalid"
                            .to_owned(),
                    ),
                    None => Err("bundle header cut short".to_owned()),
                };
            }
            let end = entries
                .iter()
                .map(|e| e.end())
                .max()
                .unwrap_or(0)
                .max(header_len(&entries));
            usize::try_from(end).map_err(|_| "bundle too large".to_owned())
        }
        Ok(None) => Err("bundle header cut short".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// Walks a region of bundles and CCOBs.
///
/// `starts` are item offsets known from elsewhere (wrapper records), in any
/// order; they bound items whose size is not recorded, and are where the
/// walk resumes after damage. An item found that overlaps the next known
/// start is damage.
pub fn scan<'a>(region: &'a [u8], starts: &[usize]) -> Scan<'a> {
    let mut known: Vec<usize> = starts
        .iter()
        .copied()
        .filter(|&s| s < region.len())
        .collect();
    known.sort_unstable();
    known.dedup();
    let next_known = |after: usize| known.iter().copied().find(|&s| s > after);
    let mut out = Scan::default();
    let mut pos = 0usize;
    while pos < region.len() {
        let Some(skip) = region[pos..].iter().position(|&b| b != 0) else {
            break;
        };
        // Zero padding never runs over a known start.
        let zero_end = pos + skip;
        if let Some(k) = known.iter().copied().find(|&k| k > pos && k < zero_end) {
            out.damage.push(Damage {
                offset: k,
                kind: DamageKind::DanglingPointer,
                what: "the wrapper points here, but there are only zero bytes".to_owned(),
            });
        }
        pos = zero_end;
        let rest = &region[pos..];
        let limit = next_known(pos);
        // After damage: the next known start, else the next magic.
        let resume = |region: &[u8], pos: usize| -> Option<usize> {
            limit.or_else(|| next_magic(region, pos + 1))
        };
        let found = if bundle::has_magic(rest) {
            bundle_extent(rest).map(|len| (len, ItemKind::Bundle, false))
        } else if rest.starts_with(&ccob::MAGIC) && rest.len() >= 8 {
            CcobHeader::parse(rest)
                .map_err(|e| e.to_string())
                .and_then(|header| match header.total_size {
                    Some(_) => header
                        .ccob_len(rest.len())
                        .map(|len| (len, ItemKind::Ccob(header), false))
                        .map_err(|e| e.to_string()),
                    None => {
                        // v1: the codec finds where the stream ends; if it
                        // cannot, up to the next known start or CCOB magic,
                        // trailing zeros removed.
                        let len = ccob::stream_len(rest).unwrap_or_else(|| {
                            let by_magic = next_ccob(region, pos + 1);
                            let end = match (limit, by_magic) {
                                (Some(k), Some(m)) => k.min(m),
                                (k, m) => k.or(m).unwrap_or(region.len()),
                            };
                            let span = &region[pos..end];
                            span.iter()
                                .rposition(|&b| b != 0)
                                .map_or(span.len(), |p| p + 1)
                                .max(header.len().min(span.len()))
                        });
                        Ok((len, ItemKind::Ccob(header), true))
                    }
                })
        } else {
            Err("neither an offload bundle nor a compressed bundle starts here".to_owned())
        };
        match found {
            Ok((len, kind, size_inferred)) => {
                let end = pos + len;
                if let Some(k) = limit.filter(|&k| k < end) {
                    out.damage.push(Damage {
                        offset: pos,
                        kind: DamageKind::Container,
                        what: format!(
                            "item of {len} bytes runs over the next bundle, which starts at offset {k}"
                        ),
                    });
                    pos = k;
                    continue;
                }
                out.items.push(Item {
                    offset: pos,
                    bytes: &region[pos..end],
                    kind,
                    size_inferred,
                });
                pos = end.max(pos + 1);
            }
            Err(what) => {
                let next = resume(region, pos);
                out.damage.push(Damage {
                    offset: pos,
                    kind: DamageKind::NotAContainer,
                    what: match next {
                        Some(n) => format!("{what} (skipped to offset {n})"),
                        None => format!("{what} (nothing after it is read)"),
                    },
                });
                match next {
                    Some(n) => pos = n,
                    None => break,
                }
            }
        }
    }
    out
}

/// One entry of a bundle known by its header only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderEntry {
    /// The entry ID exactly as stored.
    pub id: Vec<u8>,
    /// Offset of the entry data in the (decompressed) bundle.
    pub offset: u64,
    /// Size of the entry data.
    pub size: u64,
}

/// The entry table of a compressed bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcobBundle {
    /// The CCOB header.
    pub header: CcobHeader,
    /// The entries, in header (file) order.
    pub entries: Vec<HeaderEntry>,
    /// Bytes decompressed to read them.
    pub decoded: u64,
}

/// The largest bundle header [`ccob_bundle_header`] decodes before giving
/// up: real headers are a few hundred bytes.
pub const MAX_HEADER: usize = 1 << 20;

/// Why the bundle inside a compressed bundle cannot be read: by
/// [`ccob_bundle_header`], [`ccob_entry`], [`ccob_entry_prefixes`] and
/// [`ccob_entry_heads`]. Offsets and sizes are in the decompressed bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CcobReadError {
    /// The compressed bundle itself: its header, codec, size or hash.
    Ccob(CcobError),
    /// The header of the bundle inside.
    Bundle(bundle::BundleError),
    /// What is inside does not start with a bundle's magic.
    NotABundle,
    /// The bundle inside has no entries, or its first entry is invalid.
    EmptyOrInvalid,
    /// The bundle header inside is larger than [`MAX_HEADER`].
    HeaderTooLarge,
    /// The bundle inside ends before its header does.
    CutShort,
    /// The stream decoded to another size than the header records.
    SizeMismatch {
        /// Bytes decoded.
        produced: u64,
        /// Bytes recorded.
        recorded: u64,
    },
    /// The entry asked for lies outside the decompressed bundle.
    EntryOutside {
        /// Its offset.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// One of the ranges asked for ends past the decompressed bundle.
    RangeOutside {
        /// Where the furthest range wanted ends.
        end: u64,
    },
    /// The entry is larger than this machine's address space.
    EntryTooLarge {
        /// Its size.
        size: u64,
    },
    /// Memory for the entry could not be had.
    OutOfMemory {
        /// The size asked for.
        size: u64,
    },
}

impl fmt::Display for CcobReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CcobReadError::Ccob(e) => e.fmt(f),
            CcobReadError::Bundle(e) => e.fmt(f),
            CcobReadError::NotABundle => {
                f.write_str("the compressed bundle does not hold a binary offload bundle")
            }
            CcobReadError::EmptyOrInvalid => {
                f.write_str("the bundle inside is empty or its header is invalid")
            }
            CcobReadError::HeaderTooLarge => write!(
                f,
                "the bundle header inside is larger than {MAX_HEADER} bytes"
            ),
            CcobReadError::CutShort => f.write_str("the bundle inside is cut short"),
            CcobReadError::SizeMismatch { produced, recorded } => write!(
                f,
                "decompressed to {produced} bytes, the header records {recorded}"
            ),
            CcobReadError::EntryOutside { .. } => {
                f.write_str("the entry lies outside the decompressed bundle")
            }
            CcobReadError::RangeOutside { .. } => {
                f.write_str("an entry lies outside the decompressed bundle")
            }
            CcobReadError::EntryTooLarge { .. } => f.write_str("entry too large"),
            CcobReadError::OutOfMemory { size } => write!(f, "cannot allocate {size} bytes"),
        }
    }
}

impl std::error::Error for CcobReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CcobReadError::Ccob(e) => Some(e),
            CcobReadError::Bundle(e) => Some(e),
            _ => None,
        }
    }
}

impl From<CcobError> for CcobReadError {
    fn from(e: CcobError) -> CcobReadError {
        CcobReadError::Ccob(e)
    }
}

/// Reads the entry table of the binary bundle inside the CCOB `ccob`,
/// decompressing only until `bundle::parse_header_prefix` can decide.
pub fn ccob_bundle_header(ccob: &[u8]) -> Result<CcobBundle, CcobReadError> {
    type Verdict = Option<Result<Vec<HeaderEntry>, CcobReadError>>;
    let header = CcobHeader::parse(ccob)?;
    let total = header.uncompressed_size;
    let mut prefix: Vec<u8> = Vec::new();
    let mut verdict: Verdict = None;
    let decide = |prefix: &[u8], total: u64| -> Verdict {
        if prefix.len() >= bundle::MAGIC.len() && !bundle::has_magic(prefix) {
            return Some(Err(CcobReadError::NotABundle));
        }
        match bundle::parse_header_prefix(prefix, total) {
            Ok(Some(entries)) if entries.is_empty() && prefix.len() as u64 >= total => {
                Some(Err(CcobReadError::EmptyOrInvalid))
            }
            Ok(Some(entries)) => Some(Ok(entries
                .iter()
                .map(|e| HeaderEntry {
                    id: e.id.to_vec(),
                    offset: e.offset,
                    size: e.size,
                })
                .collect())),
            Ok(None) if prefix.len() > MAX_HEADER => Some(Err(CcobReadError::HeaderTooLarge)),
            Ok(None) => None,
            Err(e) => Some(Err(CcobReadError::Bundle(e))),
        }
    };
    let end = ccob::decode_prefix(ccob, &mut |bytes| {
        prefix.extend_from_slice(bytes);
        verdict = decide(&prefix, total);
        verdict.is_none()
    });
    match end {
        Ok(ccob::PrefixEnd::Stopped) => {}
        Ok(ccob::PrefixEnd::Complete { produced }) => {
            if produced != total {
                return Err(CcobReadError::SizeMismatch {
                    produced,
                    recorded: total,
                });
            }
            if verdict.is_none() {
                verdict = Some(decide(&prefix, total).unwrap_or(Err(CcobReadError::CutShort)));
            }
        }
        Err(e) => {
            if verdict.is_none() {
                return Err(e.into());
            }
        }
    }
    let entries = verdict.unwrap_or(Err(CcobReadError::CutShort))?;
    Ok(CcobBundle {
        header,
        entries,
        decoded: prefix.len() as u64,
    })
}

/// Decompresses the CCOB `ccob` and returns the `size` bytes at `offset` of
/// the bundle inside, after checking the size and the hash of the whole
/// bundle. Only the requested bytes are kept (plus the codec's window).
pub fn ccob_entry(ccob: &[u8], offset: u64, size: u64) -> Result<Vec<u8>, CcobReadError> {
    let header = CcobHeader::parse(ccob)?;
    let outside = CcobReadError::EntryOutside { offset, size };
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= header.uncompressed_size)
        .ok_or(outside.clone())?;
    let capacity = usize::try_from(size).map_err(|_| CcobReadError::EntryTooLarge { size })?;
    let mut out = Vec::new();
    out.try_reserve_exact(capacity)
        .map_err(|_| CcobReadError::OutOfMemory { size })?;
    let mut pos = 0u64;
    let mut keep = |bytes: &[u8]| {
        let from = pos;
        pos += bytes.len() as u64;
        let lo = offset.max(from);
        let hi = end.min(pos);
        if lo < hi {
            out.extend_from_slice(&bytes[(lo - from) as usize..(hi - from) as usize]);
        }
        true
    };
    if let Some(streamed) = ccob::decompress_streaming(ccob, None, &mut keep) {
        streamed.verify()?;
        return Ok(out);
    }
    // zlib, v1 with trailing bytes, or an error: the buffered decoder gives
    // the exact verdict.
    let whole = ccob::decompress(ccob)?;
    whole
        .data
        .get(offset as usize..end as usize)
        .map(<[u8]>::to_vec)
        .ok_or(outside)
}

/// The first bytes of some ranges of a bundle handed over in pieces, in
/// order: what [`ccob_entry_prefixes`] and [`ccob_entry_heads`] collect.
struct Heads<'r> {
    /// (offset, size) of each range in the bundle.
    ranges: &'r [(u64, u64)],
    /// How many bytes of each range are kept, at most.
    keep: u64,
    /// What was kept of each range.
    out: Vec<Vec<u8>>,
    /// Bundle bytes seen so far.
    pos: u64,
    /// Where the last byte wanted ends.
    end: u64,
}

impl<'r> Heads<'r> {
    fn new(ranges: &'r [(u64, u64)], keep: usize) -> Heads<'r> {
        let keep = keep as u64;
        let end = ranges
            .iter()
            .map(|&(offset, size)| offset.saturating_add(size.min(keep)))
            .max()
            .unwrap_or(0);
        Heads {
            ranges,
            keep,
            out: vec![Vec::new(); ranges.len()],
            pos: 0,
            end,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let from = self.pos;
        self.pos = self.pos.saturating_add(bytes.len() as u64);
        for (i, &(offset, size)) in self.ranges.iter().enumerate() {
            let lo = offset.max(from);
            let hi = offset.saturating_add(size.min(self.keep)).min(self.pos);
            if lo < hi {
                self.out[i].extend_from_slice(&bytes[(lo - from) as usize..(hi - from) as usize]);
            }
        }
    }

    /// Every byte wanted has been seen.
    fn complete(&self) -> bool {
        self.pos >= self.end
    }
}

/// Decompresses the whole CCOB `ccob`, checks its size and hash, and
/// returns the first `keep` bytes (at most) of each of the `ranges`
/// (offset, size) of the bundle inside: enough to name each payload
/// without holding the bundle (memory: the codec's window and the
/// prefixes).
pub fn ccob_entry_prefixes(
    ccob: &[u8],
    ranges: &[(u64, u64)],
    keep: usize,
) -> Result<Vec<Vec<u8>>, CcobReadError> {
    let mut heads = Heads::new(ranges, keep);
    let streamed = ccob::decompress_streaming(ccob, None, &mut |bytes| {
        heads.take(bytes);
        true
    });
    if let Some(streamed) = streamed {
        streamed.verify()?;
        return Ok(heads.out);
    }
    let whole = ccob::decompress(ccob)?;
    let mut heads = Heads::new(ranges, keep);
    heads.take(&whole.data);
    Ok(heads.out)
}

/// The first `keep` bytes (at most) of each of the `ranges` (offset, size)
/// of the bundle inside the CCOB `ccob`, decompressing only until the last
/// of them is complete (streaming, zstd or zlib; memory: the codec's
/// window and the prefixes). Nothing after that is decoded, so the hash is
/// not checked: [`ccob_entry_prefixes`] does that, at the cost of decoding
/// everything.
pub fn ccob_entry_heads(
    ccob: &[u8],
    ranges: &[(u64, u64)],
    keep: usize,
) -> Result<Vec<Vec<u8>>, CcobReadError> {
    let header = CcobHeader::parse(ccob)?;
    let mut heads = Heads::new(ranges, keep);
    if heads.end > header.uncompressed_size {
        return Err(CcobReadError::RangeOutside { end: heads.end });
    }
    if heads.complete() {
        return Ok(heads.out);
    }
    let end = ccob::decode_prefix(ccob, &mut |bytes| {
        heads.take(bytes);
        !heads.complete()
    })?;
    match end {
        ccob::PrefixEnd::Complete { produced } if !heads.complete() => {
            Err(CcobReadError::SizeMismatch {
                produced,
                recorded: header.uncompressed_size,
            })
        }
        _ => Ok(heads.out),
    }
}

/// The magic of a `__hip_fatbin_wrapper` record (`HIPF` read little-endian).
pub(crate) const WRAPPER_MAGIC: u32 = 0x4849_5046;

/// One `__hip_fatbin_wrapper` record of a `.hipFatBinSegment` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wrapper {
    /// Offset of the record in the section.
    pub offset: usize,
    /// The version field (1).
    pub version: u32,
    /// Offset in the section of the pointer to the bundle (a relocation
    /// may apply here).
    pub pointer_offset: usize,
    /// The pointer as stored (an address, or 0 where a relocation fills it
    /// in).
    pub pointer: u64,
}

/// Reads the wrapper records of a `.hipFatBinSegment` section: u32 magic,
/// u32 version, a pointer to the bundle, a null pointer; pointers are
/// `pointer_size` (4 or 8) bytes, little-endian unless `big_endian`.
/// Records without the magic are skipped.
pub fn parse_wrappers(section: &[u8], pointer_size: usize, big_endian: bool) -> Vec<Wrapper> {
    if pointer_size != 4 && pointer_size != 8 {
        return Vec::new();
    }
    let record = 8 + 2 * pointer_size;
    let b = Bytes::new(section);
    let e = Endian::from_big(big_endian);
    let u32_at = |at: usize| b.u32_at(at as u64, e);
    let ptr_at = |at: usize| b.word_at(at as u64, pointer_size == 8, e);
    let mut out = Vec::new();
    let mut at = 0;
    while at + record <= section.len() {
        if u32_at(at) == Some(WRAPPER_MAGIC) {
            if let (Some(version), Some(pointer)) = (u32_at(at + 4), ptr_at(at + 8)) {
                out.push(Wrapper {
                    offset: at,
                    version,
                    pointer_offset: at + 8,
                    pointer,
                });
            }
        }
        at += record;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ccob::{compress, CompressOptions, Method, Version};

    fn bundle_of(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        bundle::write(&mut out, entries, 4096).unwrap();
        out
    }

    fn sample_bundle(tag: u8) -> Vec<u8> {
        bundle_of(&[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx906", &[tag; 300]),
            (
                b"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
                &[tag ^ 0xff; 500],
            ),
        ])
    }

    fn ccob_of(bundle: &[u8], version: Version, method: Method) -> Vec<u8> {
        if version == Version::V1 {
            // LLVM 22 never writes v1: forge it from a v2 CCOB.
            let v2 = ccob_of(bundle, Version::V2, method);
            let mut out = b"CCOB".to_vec();
            out.extend_from_slice(&1u16.to_le_bytes());
            out.extend_from_slice(&v2[6..8]);
            out.extend_from_slice(&v2[12..16]);
            out.extend_from_slice(&v2[16..24]);
            out.extend_from_slice(&v2[24..]);
            return out;
        }
        compress(
            bundle,
            &CompressOptions {
                method,
                version,
                level: None,
            },
        )
        .unwrap()
        .bytes
    }

    fn pad_to(region: &mut Vec<u8>, align: usize) {
        region.resize(region.len().div_ceil(align) * align, 0);
    }

    /// A region of the given items, each at a 4096 boundary; returns the
    /// region and the start offsets.
    fn region(items: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
        let mut r = Vec::new();
        let mut starts = Vec::new();
        for item in items {
            pad_to(&mut r, 4096);
            starts.push(r.len());
            r.extend_from_slice(item);
        }
        (r, starts)
    }

    #[test]
    fn mixed_region_is_tiled() {
        let b0 = sample_bundle(1);
        let c1 = ccob_of(&sample_bundle(2), Version::V3, Method::Zstd);
        let c2 = ccob_of(&sample_bundle(3), Version::V2, Method::Zlib);
        let c3 = ccob_of(&sample_bundle(4), Version::V1, Method::Zstd);
        let b4 = sample_bundle(5);
        let items = [b0.clone(), c1.clone(), c2.clone(), c3.clone(), b4.clone()];
        let (r, starts) = region(&items);
        for known in [&[][..], &starts[..]] {
            let s = scan(&r, known);
            let got: Vec<(usize, usize)> =
                s.items.iter().map(|i| (i.offset, i.bytes.len())).collect();
            let want: Vec<(usize, usize)> = starts
                .iter()
                .zip(&items)
                .map(|(&s, i)| (s, i.len()))
                .collect();
            assert!(s.damage.is_empty(), "{:?} {got:?} {want:?}", s.damage);
            assert_eq!(s.items.len(), 5);
            for (i, item) in s.items.iter().enumerate() {
                assert_eq!(item.offset, starts[i]);
                assert_eq!(item.bytes, &items[i][..], "item {i}");
            }
            assert!(s.items[3].size_inferred);
            assert!(matches!(s.items[1].kind, ItemKind::Ccob(h) if h.version == Version::V3));
        }
    }

    #[test]
    fn ccob_header_is_read_without_the_payloads() {
        let b = bundle_of(&[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx906", &vec![7u8; 3 << 20]),
        ]);
        let want: Vec<HeaderEntry> = bundle::parse_header(&b)
            .unwrap()
            .iter()
            .map(|e| HeaderEntry {
                id: e.id.to_vec(),
                offset: e.offset,
                size: e.size,
            })
            .collect();
        for (v, m) in ENCODINGS {
            let c = ccob_of(&b, v, m);
            let got = ccob_bundle_header(&c).unwrap();
            assert_eq!(got.entries, want);
            assert!(got.decoded < 1 << 20, "decoded {}", got.decoded);
            let e = &want[1];
            assert_eq!(
                ccob_entry(&c, e.offset, e.size).unwrap(),
                &b[e.offset as usize..(e.offset + e.size) as usize]
            );
            let ranges: Vec<(u64, u64)> = want.iter().map(|e| (e.offset, e.size)).collect();
            let prefixes = ccob_entry_prefixes(&c, &ranges, 64).unwrap();
            assert_eq!(prefixes[0], b"");
            assert_eq!(prefixes[1], &b[e.offset as usize..e.offset as usize + 64]);
            assert_eq!(ccob_entry_heads(&c, &ranges, 64).unwrap(), prefixes);
        }
    }

    /// Each CCOB version, and both codecs.
    const ENCODINGS: [(Version, Method); 3] = [
        (Version::V3, Method::Zstd),
        (Version::V2, Method::Zlib),
        (Version::V1, Method::Zstd),
    ];

    /// Bytes no codec shrinks, so that each part of a compressed stream
    /// decodes to its own part of the data.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) as u8
            })
            .collect()
    }

    /// The entries' first bytes are had without decoding the rest: a CCOB
    /// whose stream is damaged after the last entry's first bytes (or
    /// whose hash is wrong) still gives them, the full decode does not.
    #[test]
    fn entry_heads_stop_after_the_last_head() {
        let first = noise(200_000, 1);
        let last = noise(3 << 20, 2);
        let b = bundle_of(&[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx906", &first),
            (b"hipv4-amdgcn-amd-amdhsa--gfx90a", &last),
        ]);
        let ranges: Vec<(u64, u64)> = bundle::parse_header(&b)
            .unwrap()
            .iter()
            .map(|e| (e.offset, e.size))
            .collect();
        let want: Vec<Vec<u8>> = ranges
            .iter()
            .map(|&(o, n)| b[o as usize..(o + n.min(4096)) as usize].to_vec())
            .collect();
        for (v, m) in ENCODINGS {
            let c = ccob_of(&b, v, m);
            assert_eq!(ccob_entry_heads(&c, &ranges, 4096).unwrap(), want);
            let mut bad = c.clone();
            let n = bad.len();
            for x in &mut bad[n - 100_000..n - 8] {
                *x ^= 0x5a;
            }
            assert_eq!(
                ccob_entry_heads(&bad, &ranges, 4096).unwrap(),
                want,
                "{v:?} {m:?}"
            );
            assert!(ccob_entry_prefixes(&bad, &ranges, 4096).is_err());
            // Nothing to decode for empty entries alone.
            assert_eq!(ccob_entry_heads(&bad, &ranges[..1], 4096).unwrap(), [b""]);
            // A range outside the bundle is refused.
            assert!(ccob_entry_heads(&c, &[(b.len() as u64, 1)], 4096).is_err());
        }
    }

    #[test]
    fn damage_keeps_the_rest() {
        let b0 = sample_bundle(1);
        let c1 = ccob_of(&sample_bundle(2), Version::V3, Method::Zstd);
        let b2 = sample_bundle(3);
        let (mut r, starts) = region(&[b0, c1.clone(), b2]);
        // Break the CCOB's version field.
        r[starts[1] + 4] = 9;
        for known in [&[][..], &starts[..]] {
            let s = scan(&r, known);
            assert_eq!(s.items.len(), 2, "{:?}", s.damage);
            assert_eq!(s.items[0].offset, starts[0]);
            assert_eq!(s.items[1].offset, starts[2]);
            // Without the wrappers' starts, magic-looking bytes inside
            // the damaged CCOB may be reported too, never past it.
            assert!(known.is_empty() || s.damage.len() == 1, "{:?}", s.damage);
            assert_eq!(s.damage[0].offset, starts[1]);
            assert!(s.damage.iter().all(|d| d.offset < starts[2]));
        }
        // Garbage between items.
        let (mut r, starts) = region(&[sample_bundle(1), sample_bundle(2)]);
        r[starts[1] - 10] = 0x55;
        let s = scan(&r, &[]);
        assert_eq!(s.items.len(), 2);
        assert_eq!(s.damage.len(), 1);
        assert_eq!(s.damage[0].offset, starts[1] - 10);
        // A damaged compressed payload: the header is still read by scan,
        // the entry table read fails with a message.
        let mut bad = c1.clone();
        let n = bad.len();
        for b in &mut bad[40..n] {
            *b ^= 0x5a;
        }
        assert!(ccob_bundle_header(&bad).is_err());
        assert!(ccob_entry(&bad, 0, 1).is_err());
        assert!(ccob_entry_prefixes(&bad, &[(0, 1)], 64).is_err());
        assert!(ccob_entry_heads(&bad, &[(0, 1)], 64).is_err());
        // A wrong hash is found by the full decode only.
        let mut wrong = c1.clone();
        wrong[24] ^= 1;
        assert!(ccob_bundle_header(&wrong).is_ok());
        let e = ccob_entry_prefixes(&wrong, &[(0, 1)], 64).unwrap_err();
        assert!(
            matches!(e, CcobReadError::Ccob(CcobError::HashMismatch { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("hash"), "{e}");
        assert!(ccob_entry_heads(&wrong, &[(0, 1)], 64).is_ok());
    }

    #[test]
    fn overlap_with_a_known_start_is_damage() {
        let (r, mut starts) = region(&[sample_bundle(1), sample_bundle(2)]);
        starts.insert(1, 100);
        let s = scan(&r, &starts);
        assert_eq!(s.damage.len(), 2, "{:?}", s.damage);
        assert_eq!(s.damage[0].offset, 0);
        assert_eq!(s.items.len(), 1);
        assert_eq!(s.items[0].offset, starts[2]);
    }

    #[test]
    fn wrappers() {
        let mut seg = Vec::new();
        for ptr in [0x3000u64, 0x4000] {
            seg.extend_from_slice(&WRAPPER_MAGIC.to_le_bytes());
            seg.extend_from_slice(&1u32.to_le_bytes());
            seg.extend_from_slice(&ptr.to_le_bytes());
            seg.extend_from_slice(&0u64.to_le_bytes());
        }
        let w = parse_wrappers(&seg, 8, false);
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].offset, 24);
        assert_eq!(w[1].pointer_offset, 32);
        assert_eq!(w[1].pointer, 0x4000);
        assert_eq!(w[0].version, 1);
        assert!(parse_wrappers(&seg[..47], 8, false).len() == 1);
        assert!(parse_wrappers(&seg, 3, false).is_empty());
    }

    #[test]
    fn hostile_regions_never_panic() {
        let c = ccob_of(&sample_bundle(2), Version::V3, Method::Zstd);
        let (r, starts) = region(&[sample_bundle(1), c]);
        let r = &r[..r.len().min(starts[1] + 200)];
        for i in (0..r.len()).step_by(7) {
            for v in [0u8, 0xff, 0x01] {
                let mut d = r.to_vec();
                d[i] = v;
                let s = scan(&d, &starts);
                for item in &s.items {
                    if let ItemKind::Ccob(_) = item.kind {
                        let _ = ccob_bundle_header(item.bytes);
                    }
                }
            }
        }
        for cut in 0..r.len().min(5000) {
            let _ = scan(&r[..cut], &[]);
        }
        assert_eq!(scan(&[], &[5]), Scan::default());
        assert_eq!(scan(&[0; 64], &[]), Scan::default());
    }
}
