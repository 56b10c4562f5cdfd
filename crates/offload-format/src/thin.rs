//! Rewriting an offload container without some of its entries, in the
//! space it had: what `offload thin` does to each bundle, compressed
//! bundle and run of offload binaries it finds.
//!
//! The result never moves or grows: it is laid out from the container's
//! first byte, and the bytes freed at its end are zero ([`Thinned::pieces`]
//! ends with [`Piece::Zeros`]), so that a linked binary keeps every address
//! the loader and the offload runtime hold.
//!
//! * [`bundle`]: an uncompressed binary bundle is written again as the
//!   bundler writes one ([`crate::bundle::write`]) for the kept entries, in
//!   their order, with the alignment the original's layout shows
//!   (`bundle_alignment`).
//! * [`ccob`]: a compressed bundle is decompressed (hash checked), thinned
//!   as above and compressed again as LLVM 22's bundler compresses it
//!   ([`crate::ccob::compress`]), with the version and method found and
//!   the method's default level unless one is given. LLVM 22 writes no
//!   version 1; a version 1 CCOB gets the same payload under a version 1
//!   header.
//! * [`offload_binaries`]: a section of concatenated offload binaries keeps
//!   the binaries of the kept images, packed at the front on 8-byte
//!   boundaries as a linker concatenates them; the last one's recorded size
//!   takes in the freed space (LLVM reads no zero bytes after a binary).
//! * [`fatbin`]: an NVIDIA fat binary container keeps the kept entries,
//!   header and stored payload byte for byte (nothing is decompressed or
//!   compressed again), packed from its start; its size field says how
//!   much they take. The runtime's registration records point at the
//!   container's first byte, which does not move.
//!
//! Each returns `Ok(None)` when nothing is to be dropped, and an error
//! (nothing rewritten) when the container cannot be read or its thinned
//! form would not fit.

use std::fmt;

use crate::bundle as bundle_fmt;
use crate::ccob as ccob_fmt;
use crate::nvidia::fatbin as nv;
use crate::offload_binary::read::{self as ob_read, Binary};

/// One piece of a rewritten container, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// New bytes.
    Bytes(Vec<u8>),
    /// Bytes of the input, unchanged but perhaps moved (entry data).
    Input(&'a [u8]),
    /// This many zero bytes.
    Zeros(u64),
}

impl Piece<'_> {
    /// The piece's length.
    pub fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Input(b) => b.len() as u64,
            Piece::Zeros(n) => *n,
        }
    }

    /// Whether the piece is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An entry kept or dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The entry ID as stored (offload binaries:
    /// `<kind>-<triple>-<arch>`).
    pub id: String,
    /// Size of its data.
    pub size: u64,
}

/// A container rewritten without some entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thinned<'a> {
    /// The new contents; their lengths add up to the original size.
    pub pieces: Vec<Piece<'a>>,
    /// Size of the new container (without the zero fill).
    pub used: u64,
    /// Entries kept, in order.
    pub kept: Vec<EntryInfo>,
    /// Entries dropped, in order.
    pub dropped: Vec<EntryInfo>,
}

impl Thinned<'_> {
    /// The rewritten bytes in one buffer (tests, fuzzing, small inputs).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Bytes(b) => out.extend_from_slice(b),
                Piece::Input(b) => out.extend_from_slice(b),
                Piece::Zeros(n) => out.resize(out.len() + *n as usize, 0),
            }
        }
        out
    }
}

/// Why a container was not rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThinError {
    /// It cannot be read.
    Read(String),
    /// Its thinned form is larger than the original (it cannot be written
    /// in place).
    Grows {
        /// The original size.
        old: u64,
        /// The thinned size.
        new: u64,
    },
    /// An offload binary holds images of which some are kept and some
    /// dropped (LLVM writes one image per binary).
    SharedBinary {
        /// The binary's offset in the section.
        offset: u64,
    },
    /// Every offload binary of a section would go (LLVM cannot read a
    /// section of zero bytes).
    NothingLeft,
}

impl fmt::Display for ThinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThinError::Read(e) => f.write_str(e),
            ThinError::Grows { old, new } => write!(
                f,
                "the thinned container would take {new} bytes, more than the {old} it has"
            ),
            ThinError::SharedBinary { offset } => write!(
                f,
                "the offload binary at offset {offset} holds both kept and dropped images"
            ),
            ThinError::NothingLeft => f.write_str(
                "every image of the section would be dropped, which LLVM cannot read; \
                 leave the object out instead",
            ),
        }
    }
}

impl std::error::Error for ThinError {}

/// The alignment the bundler used for `entries` of a bundle: the smallest
/// power of two (up to 2^16) whose layout gives exactly their offsets, else
/// the largest power of two (up to 4096) dividing every non-empty entry's
/// offset.
pub(crate) fn bundle_alignment(entries: &[bundle_fmt::Entry<'_>]) -> u32 {
    let sizes: Vec<(usize, u64)> = entries.iter().map(|e| (e.id.len(), e.size)).collect();
    for shift in 0..=16 {
        let align = 1u32 << shift;
        if let Ok((_, offsets, _)) = bundle_fmt::layout(&sizes, align) {
            if entries.iter().zip(&offsets).all(|(e, &o)| e.offset == o) {
                return align;
            }
        }
    }
    let mut align = 4096u64;
    for e in entries.iter().filter(|e| e.size > 0) {
        while align > 1 && e.offset % align != 0 {
            align /= 2;
        }
    }
    align as u32
}

fn info(e: &bundle_fmt::Entry<'_>) -> EntryInfo {
    EntryInfo {
        id: String::from_utf8_lossy(e.id).into_owned(),
        size: e.size,
    }
}

/// The kept entries of a parsed bundle, with what was dropped; `None` when
/// nothing is dropped.
#[allow(clippy::type_complexity)]
fn split<'a>(
    entries: &[bundle_fmt::Entry<'a>],
    keep: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<(Vec<bundle_fmt::Entry<'a>>, Vec<EntryInfo>, Vec<EntryInfo>)> {
    let mut kept = Vec::new();
    let (mut kept_info, mut dropped) = (Vec::new(), Vec::new());
    for e in entries {
        if keep(e.id) {
            kept.push(*e);
            kept_info.push(info(e));
        } else {
            dropped.push(info(e));
        }
    }
    (!dropped.is_empty()).then_some((kept, kept_info, dropped))
}

/// Rewrites the uncompressed binary bundle `data` (exactly the bundle's
/// bytes) with only the entries whose ID `keep` accepts.
pub fn bundle<'a>(
    data: &'a [u8],
    keep: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Option<Thinned<'a>>, ThinError> {
    let entries = bundle_fmt::parse_header(data).map_err(|e| ThinError::Read(e.to_string()))?;
    let align = bundle_alignment(&entries);
    let Some((kept, kept_info, dropped)) = split(&entries, keep) else {
        return Ok(None);
    };
    let sized: Vec<(&[u8], u64)> = kept.iter().map(|e| (e.id, e.size)).collect();
    let (head, offsets, total) =
        bundle_fmt::header(&sized, align).map_err(|e| ThinError::Read(e.to_string()))?;
    let old = data.len() as u64;
    if total > old {
        return Err(ThinError::Grows { old, new: total });
    }
    let mut pos = head.len() as u64;
    let mut pieces = vec![Piece::Bytes(head)];
    for (e, &off) in kept.iter().zip(&offsets) {
        if off > pos {
            pieces.push(Piece::Zeros(off - pos));
        }
        if !e.data.is_empty() {
            pieces.push(Piece::Input(e.data));
        }
        pos = off + e.size;
    }
    if old > pos {
        pieces.push(Piece::Zeros(old - pos));
    }
    Ok(Some(Thinned {
        pieces,
        used: total,
        kept: kept_info,
        dropped,
    }))
}

/// Rewrites the compressed bundle `data` (exactly the CCOB's bytes) with
/// only the entries whose ID `keep` accepts, compressed again with the
/// version and method found and `level` (the method's default when `None`).
pub fn ccob<'a>(
    data: &'a [u8],
    keep: &mut dyn FnMut(&[u8]) -> bool,
    level: Option<i32>,
) -> Result<Option<Thinned<'a>>, ThinError> {
    let read = |e: ccob_fmt::CcobError| ThinError::Read(format!("compressed bundle: {e}"));
    let header = ccob_fmt::Header::parse(data).map_err(read)?;
    let whole = ccob_fmt::decompress(data).map_err(read)?;
    let inner = &whole.data;
    if !bundle_fmt::has_magic(inner) {
        return Err(ThinError::Read(
            "the compressed bundle does not hold a binary offload bundle".to_owned(),
        ));
    }
    let entries = bundle_fmt::parse_header(inner)
        .map_err(|e| ThinError::Read(format!("the bundle inside: {e}")))?;
    let align = bundle_alignment(&entries);
    let Some((kept, kept_info, dropped)) = split(&entries, keep) else {
        return Ok(None);
    };
    let pairs: Vec<(&[u8], &[u8])> = kept.iter().map(|e| (e.id, e.data)).collect();
    let mut plain = Vec::new();
    bundle_fmt::write(&mut plain, &pairs, align)
        .map_err(|e| ThinError::Read(format!("the bundle inside: {e}")))?;
    drop(whole);
    let version = match header.version {
        ccob_fmt::Version::V1 => ccob_fmt::Version::V2,
        v => v,
    };
    let options = ccob_fmt::CompressOptions {
        method: header.method,
        level,
        version,
    };
    let mut out = ccob_fmt::compress(&plain, &options).map_err(read)?.bytes;
    if header.version == ccob_fmt::Version::V1 {
        let v1 = ccob_fmt::Header {
            version: ccob_fmt::Version::V1,
            method: header.method,
            total_size: None,
            uncompressed_size: plain.len() as u64,
            hash: ccob_fmt::truncated_md5(&plain),
        }
        .to_bytes()
        .map_err(read)?;
        let payload = out.split_off(ccob_fmt::Version::V2.header_len());
        out = v1;
        out.extend_from_slice(&payload);
    }
    let old = data.len() as u64;
    let used = out.len() as u64;
    if used > old {
        return Err(ThinError::Grows { old, new: used });
    }
    let mut pieces = vec![Piece::Bytes(out)];
    if old > used {
        pieces.push(Piece::Zeros(old - used));
    }
    Ok(Some(Thinned {
        pieces,
        used,
        kept: kept_info,
        dropped,
    }))
}

/// The ID `offload ls` gives an image of an offload binary:
/// `<kind>-<triple>-<arch>`.
pub fn image_id(bin: &Binary<'_>) -> String {
    format!(
        "{}-{}-{}",
        bin.offload_kind.name(),
        String::from_utf8_lossy(bin.triple()),
        String::from_utf8_lossy(bin.arch())
    )
}

/// Rewrites a section of concatenated offload binaries (zero bytes between
/// them allowed) keeping the binaries whose images `keep` accepts.
pub fn offload_binaries<'a>(
    section: &'a [u8],
    keep: &mut dyn FnMut(&Binary<'_>) -> bool,
) -> Result<Option<Thinned<'a>>, ThinError> {
    let mut blobs: Vec<&'a [u8]> = Vec::new();
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    let mut at = 0usize;
    while at < section.len() {
        match section[at..].iter().position(|&b| b != 0) {
            Some(skip) => at += skip,
            None => break,
        }
        let (binaries, next) = ob_read::parse_one(section, at as u64)
            .map_err(|e| ThinError::Read(format!("offload binary: {e}")))?;
        let next = usize::try_from(next)
            .ok()
            .filter(|&n| n > at && n <= section.len())
            .ok_or_else(|| ThinError::Read(format!("offload binary at {at}: bad size")))?;
        // The binary itself ends at its recorded size; up to `next` is the
        // alignment the reader skips, which may hold anything in the input
        // and must not move with the binary (it would no longer be skipped).
        let end = section
            .get(at + 8..at + 16)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .and_then(|size| usize::try_from(size).ok())
            .and_then(|size| at.checked_add(size))
            .filter(|&end| end > at && end <= next)
            .unwrap_or(next);
        let verdicts: Vec<bool> = binaries.iter().map(&mut *keep).collect();
        let infos = binaries.iter().map(|b| EntryInfo {
            id: image_id(b),
            size: b.image.len() as u64,
        });
        if verdicts.iter().all(|&k| k) {
            kept.extend(infos);
            blobs.push(&section[at..end]);
        } else if verdicts.iter().all(|&k| !k) {
            dropped.extend(infos);
        } else {
            return Err(ThinError::SharedBinary { offset: at as u64 });
        }
        at = next;
    }
    if dropped.is_empty() {
        return Ok(None);
    }
    if blobs.is_empty() {
        return Err(ThinError::NothingLeft);
    }
    let mut pieces = Vec::new();
    let mut pos = 0u64;
    for blob in &blobs {
        let aligned = pos.next_multiple_of(8);
        if aligned > pos {
            pieces.push(Piece::Zeros(aligned - pos));
        }
        pieces.push(Piece::Input(blob));
        pos = aligned + blob.len() as u64;
    }
    let old = section.len() as u64;
    if pos > old {
        return Err(ThinError::Grows { old, new: pos });
    }
    let used = pos;
    if old > pos {
        // LLVM reads a section as binaries back to back, and zero bytes
        // after the last are invalid data to it: a version 1 binary (all
        // LLVM 22 writes) takes the freed space into its recorded size.
        let last = blobs[blobs.len() - 1];
        if last.get(4..8) == Some(&1u32.to_le_bytes()[..]) && last.len() >= 16 {
            let size = u64::from_le_bytes(last[8..16].try_into().unwrap_or([0; 8]));
            let mut head = last[..16].to_vec();
            let grown = size.saturating_add(old - pos);
            head[8..16].copy_from_slice(&grown.to_le_bytes());
            pieces.pop();
            pieces.push(Piece::Bytes(head));
            pieces.push(Piece::Input(&last[16..]));
        }
        pieces.push(Piece::Zeros(old - pos));
    }
    Ok(Some(Thinned {
        pieces,
        used,
        kept,
        dropped,
    }))
}

/// Rewrites one NVIDIA fat binary container (`data` is the container,
/// from its header to its recorded end) keeping the entries `keep`
/// accepts (given their index and header). A container whose entries
/// cannot all be read is not rewritten. Keeping none leaves a container of
/// no entries, which the CUDA runtime registers and finds no code in.
pub fn fatbin<'a>(
    data: &'a [u8],
    keep: &mut dyn FnMut(usize, &nv::Entry<'a>) -> bool,
) -> Result<Option<Thinned<'a>>, ThinError> {
    Ok(fatbin_with_cut(data, keep)?.map(|(t, _)| t))
}

/// What [`fatbin`] keeps of a container, as ranges: enough to lay the
/// rewritten container out again from the same bytes ([`FatbinCut::pieces`])
/// without reading its entries a second time. A caller writing tens of
/// thousands of containers holds these (a few words each) between deciding
/// and writing, instead of their pieces or a second scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatbinCut {
    /// The container header's length (its size field is rewritten).
    header_len: u64,
    /// The kept entries' bytes (header and stored payload), as offsets in
    /// the container, in order; neighbours kept together are one range.
    /// The first is held inline (an empty one when none is kept): most
    /// containers keep one run of entries, and a library has tens of
    /// thousands of them.
    first: (u64, u64),
    rest: Box<[(u64, u64)]>,
}

impl FatbinCut {
    /// The cut of a container whose header is `header_len` bytes long,
    /// keeping the entries whose bytes (header and stored payload, as
    /// offsets in the container) are `kept`, in order; neighbours become
    /// one range.
    pub fn new(header_len: u64, kept: impl IntoIterator<Item = (u64, u64)>) -> FatbinCut {
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (start, end) in kept {
            match ranges.last_mut() {
                Some(last) if last.1 == start => last.1 = end,
                _ => ranges.push((start, end)),
            }
        }
        let first = if ranges.is_empty() {
            (0, 0)
        } else {
            ranges.remove(0)
        };
        FatbinCut {
            header_len,
            first,
            rest: ranges.into_boxed_slice(),
        }
    }

    /// The size of the rewritten container (header and kept entries,
    /// without the zeros after them): what [`FatbinCut::pieces`] returns
    /// with the pieces.
    pub fn used(&self) -> u64 {
        let first = (self.first.0 < self.first.1).then_some(&self.first);
        self.header_len
            + first
                .into_iter()
                .chain(self.rest.iter())
                .map(|&(a, b)| b.saturating_sub(a))
                .sum::<u64>()
    }

    /// The rewritten container laid out from `data` (the container the cut
    /// was made from): the header with its new size, the kept ranges
    /// packed after it, zeros to the old end; and the size of the new
    /// container without the zeros.
    pub fn pieces<'a>(&self, data: &'a [u8]) -> Result<(Vec<Piece<'a>>, u64), ThinError> {
        let get = |a: u64, b: u64| {
            usize::try_from(a)
                .ok()
                .zip(usize::try_from(b).ok())
                .and_then(|(a, b)| data.get(a..b))
        };
        let mut header = get(0, self.header_len)
            .filter(|h| h.len() >= 16)
            .ok_or_else(|| ThinError::Read("container header cut short".to_owned()))?
            .to_vec();
        let mut pieces = Vec::with_capacity(self.rest.len() + 3);
        pieces.push(Piece::Bytes(Vec::new()));
        let mut body = 0u64;
        let first = (self.first.0 < self.first.1).then_some(&self.first);
        for &(a, b) in first.into_iter().chain(self.rest.iter()) {
            let bytes = get(a, b)
                .ok_or_else(|| ThinError::Read("entry outside the container".to_owned()))?;
            body += bytes.len() as u64;
            pieces.push(Piece::Input(bytes));
        }
        header[8..16].copy_from_slice(&body.to_le_bytes());
        let used = self.header_len + body;
        pieces[0] = Piece::Bytes(header);
        pieces.push(Piece::Zeros((data.len() as u64).saturating_sub(used)));
        Ok((pieces, used))
    }
}

/// [`fatbin`], with the cut its pieces were laid out from (for a caller
/// that lets the pieces go and lays them out again when it writes);
/// `None` when nothing is dropped.
pub fn fatbin_with_cut<'a>(
    data: &'a [u8],
    keep: &mut dyn FnMut(usize, &nv::Entry<'a>) -> bool,
) -> Result<Option<(Thinned<'a>, FatbinCut)>, ThinError> {
    let scan = nv::scan(data);
    if let Some(d) = scan.damage.first() {
        return Err(ThinError::Read(format!("fat binary: {d}")));
    }
    let container = match scan.containers.as_slice() {
        [c] if c.offset == 0 && c.len() == data.len() as u64 => c,
        _ => {
            return Err(ThinError::Read(
                "not one fat binary container filling its range".to_owned(),
            ))
        }
    };
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for (i, e) in container.entries.iter().enumerate() {
        let start = e.offset as u64;
        let end = e.payload_offset as u64 + e.stored_size;
        if end < start || end > data.len() as u64 {
            return Err(ThinError::Read("entry outside the container".to_owned()));
        }
        let info = EntryInfo {
            id: e.cuobjdump_suffix(),
            size: e.stored_size,
        };
        if keep(i, e) {
            ranges.push((start, end));
            kept.push(info);
        } else {
            dropped.push(info);
        }
    }
    if dropped.is_empty() {
        return Ok(None);
    }
    let cut = FatbinCut::new(u64::from(container.header_size), ranges);
    let (pieces, used) = cut.pieces(data)?;
    let thinned = Thinned {
        pieces,
        used,
        kept,
        dropped,
    };
    Ok(Some((thinned, cut)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(entries: &[(&str, &[u8])], align: u32) -> Vec<u8> {
        let e: Vec<(&[u8], &[u8])> = entries.iter().map(|(i, d)| (i.as_bytes(), *d)).collect();
        let mut v = Vec::new();
        bundle_fmt::write(&mut v, &e, align).unwrap();
        v
    }

    const HOST: &str = "host-x86_64-unknown-linux-gnu-";
    const A: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
    const B: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";

    #[test]
    fn alignment_is_read_back_from_the_layout() {
        for align in [1, 8, 4096] {
            let b = make(&[(HOST, b""), (A, &[1; 100]), (B, &[2; 50])], align);
            let entries = bundle_fmt::parse_header(&b).unwrap();
            assert_eq!(bundle_alignment(&entries), align);
        }
    }

    #[test]
    fn bundle_drops_an_entry_and_keeps_its_place() {
        let a = vec![1u8; 5000];
        let b = vec![2u8; 300];
        let data = make(&[(HOST, b""), (A, &a), (B, &b)], 4096);
        let t = bundle(&data, &mut |id| id != A.as_bytes())
            .unwrap()
            .unwrap();
        let out = t.to_vec();
        assert_eq!(out.len(), data.len());
        let want = make(&[(HOST, b""), (B, &b)], 4096);
        assert_eq!(&out[..want.len()], &want[..]);
        assert!(out[want.len()..].iter().all(|&x| x == 0));
        assert_eq!(t.used, want.len() as u64);
        assert_eq!(
            t.dropped,
            vec![EntryInfo {
                id: A.into(),
                size: 5000
            }]
        );
        assert_eq!(t.kept.len(), 2);
        // Nothing to drop: nothing to do.
        assert_eq!(bundle(&data, &mut |_| true).unwrap(), None);
    }

    #[test]
    fn ccob_is_compressed_again_as_the_bundler_would() {
        let a = vec![1u8; 5000];
        let b = vec![2u8; 300];
        let plain = make(&[(HOST, b""), (A, &a), (B, &b)], 4096);
        for version in [ccob_fmt::Version::V2, ccob_fmt::Version::V3] {
            let options = ccob_fmt::CompressOptions {
                version,
                ..Default::default()
            };
            let data = ccob_fmt::compress(&plain, &options).unwrap().bytes;
            let t = ccob(&data, &mut |id| id != A.as_bytes(), None)
                .unwrap()
                .unwrap();
            let want_plain = make(&[(HOST, b""), (B, &b)], 4096);
            let want = ccob_fmt::compress(&want_plain, &options).unwrap().bytes;
            let out = t.to_vec();
            assert_eq!(out.len(), data.len());
            assert_eq!(&out[..want.len()], &want[..]);
            assert!(out[want.len()..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn padding_after_a_binary_stays_behind() {
        use crate::offload_binary::write::{write_multi, Compression, ImageEntry};
        use crate::offload_binary::{ImageKind, OffloadKind};
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let image = |arch: &'static [u8], len: usize| {
            ImageEntry::new(
                ImageKind::OBJECT,
                OffloadKind::HIP,
                vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", arch)],
                &bytes[..len],
            )
        };
        let dropped = write_multi(&[image(b"gfx906", 64)], 2, None);
        // A compressed binary whose size is 7 past a multiple of 8.
        let kept = (1000..bytes.len())
            .map(|len| {
                let mut b = write_multi(&[image(b"gfx90a", len)], 3, Some(Compression::Zlib(6)));
                let size = u64::from_le_bytes(b[8..16].try_into().unwrap());
                b.truncate(size as usize);
                b
            })
            .find(|b| b.len() % 8 == 7)
            .expect("some length compresses to 7 past a multiple of 8");
        // A binary may start anywhere after zeros, and the reader skips from
        // its end to the next multiple of 8 in the section, whatever bytes
        // lie there: they must not move with the binary.
        for gap in 1..8 {
            let mut section = dropped.clone();
            section.extend(vec![0; gap]);
            section.extend(&kept);
            section.resize(section.len().next_multiple_of(8), 0xee);
            let t = offload_binaries(&section, &mut |b| b.arch() != b"gfx906")
                .unwrap()
                .unwrap();
            let out = t.to_vec();
            assert_eq!(out.len(), section.len());
            let (found, next) = ob_read::parse_one(&out, 0).unwrap();
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].arch(), b"gfx90a");
            assert!(out[next as usize..].iter().all(|&b| b == 0), "gap {gap}");
        }
    }

    #[test]
    fn damaged_containers_are_errors_not_panics() {
        let plain = make(&[(HOST, b""), (A, &[1; 10])], 8);
        for cut in 0..plain.len() {
            let _ = bundle(&plain[..cut], &mut |_| false);
            let _ = ccob(&plain[..cut], &mut |_| false, None);
            let _ = offload_binaries(&plain[..cut], &mut |_| false);
        }
        assert!(matches!(
            ccob(b"CCOB\x03\0\x01\0garbage", &mut |_| false, None),
            Err(ThinError::Read(_))
        ));
    }

    #[test]
    fn fat_binary_keeps_entries_byte_for_byte() {
        use test_support::{fatbin_with, FatbinEntry};
        let e = |kind: u16, arch: u32, flags: u64, payload: &'static [u8]| FatbinEntry {
            header_size: if kind == 1 { 80 } else { 64 },
            ..FatbinEntry::new(kind, arch, flags, payload)
        };
        let data = fatbin_with(&[
            e(2, 80, 0x11, b"\x7fELF-sm80"),
            e(2, 90, 0x100011, b"\x7fELF-sm90a"),
            e(1, 90, 0x11, b"ptx for compute_90\0"),
        ]);
        // Keep the second and third.
        let t = super::fatbin(&data, &mut |i, _| i > 0).unwrap().unwrap();
        let out = t.to_vec();
        assert_eq!(out.len(), data.len());
        let scan = crate::nvidia::fatbin::scan(&out[..t.used as usize]);
        assert!(scan.damage.is_empty(), "{:?}", scan.damage);
        let before = crate::nvidia::fatbin::scan(&data);
        let (b, a) = (&before.containers[0].entries, &scan.containers[0].entries);
        assert_eq!(a.len(), 2);
        for (x, y) in a.iter().zip(&b[1..]) {
            assert_eq!(x.payload, y.payload);
            assert_eq!(x.arch, y.arch);
            assert_eq!(x.flags, y.flags);
        }
        assert!(out[t.used as usize..].iter().all(|&z| z == 0));
        assert_eq!(t.dropped.len(), 1);
        assert_eq!(t.dropped[0].id, "sm_80.cubin");
        // Nothing to drop, everything to drop.
        assert_eq!(super::fatbin(&data, &mut |_, _| true).unwrap(), None);
        let none = super::fatbin(&data, &mut |_, _| false).unwrap().unwrap();
        assert_eq!(none.used, 16);
        assert_eq!(&none.to_vec()[8..16], &0u64.to_le_bytes());
        // A damaged container is never rewritten.
        let mut bad = data.clone();
        bad[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(super::fatbin(&bad, &mut |i, _| i > 0).is_err());
        assert!(super::fatbin(&data[..data.len() - 8], &mut |i, _| i > 0).is_err());
    }

    #[test]
    fn fat_binary_cut_lays_the_same_container_out_again() {
        use test_support::{fatbin_with, FatbinEntry};
        let data = fatbin_with(&[
            FatbinEntry::new(2, 80, 0x11, b"\x7fELF-sm80"),
            FatbinEntry::new(2, 90, 0x11, b"\x7fELF-sm90"),
            FatbinEntry::new(2, 90, 0x100011, b"\x7fELF-sm90a"),
            FatbinEntry::new(2, 100, 0x11, b"\x7fELF-sm100"),
        ]);
        let entries = crate::nvidia::fatbin::scan(&data).containers[0]
            .entries
            .iter()
            .map(|e| (e.offset as u64, e.payload_offset as u64 + e.stored_size))
            .collect::<Vec<_>>();
        // Every choice of entries: the cut's pieces are fatbin's, byte for
        // byte; neighbours kept together are one range of the input.
        for mask in 0u32..16 {
            let keep = |i: usize| mask >> i & 1 == 1;
            let whole = super::fatbin(&data, &mut |i, _| keep(i)).unwrap();
            let cut = super::fatbin_with_cut(&data, &mut |i, _| keep(i)).unwrap();
            let (Some(whole), Some((Thinned { kept, dropped, .. }, cut))) = (whole, cut) else {
                assert_eq!(mask, 15, "only keeping all leaves nothing to do");
                continue;
            };
            assert_eq!(
                (kept.len(), dropped.len()),
                (whole.kept.len(), whole.dropped.len())
            );
            let (pieces, used) = cut.pieces(&data).unwrap();
            assert_eq!(used, whole.used);
            let again = Thinned {
                pieces,
                used,
                kept,
                dropped,
            };
            assert_eq!(again.to_vec(), whole.to_vec(), "mask {mask:#b}");
            let mut runs = Vec::new();
            for (i, &(a, b)) in entries.iter().enumerate().filter(|(i, _)| keep(*i)) {
                match runs.last_mut() {
                    Some((_, end, last)) if *last + 1 == i => {
                        *end = b;
                        *last = i;
                    }
                    _ => runs.push((a, b, i)),
                }
            }
            let inputs: Vec<u64> = again
                .pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Input(b) => Some(b.len() as u64),
                    _ => None,
                })
                .collect();
            assert_eq!(
                inputs,
                runs.iter().map(|(a, b, _)| b - a).collect::<Vec<_>>()
            );
        }
        // A cut laid out on bytes too short for it is an error, not a panic.
        let (_, cut) = super::fatbin_with_cut(&data, &mut |i, _| i == 3)
            .unwrap()
            .unwrap();
        assert!(cut.pieces(&data[..data.len() - 4]).is_err());
        assert!(cut.pieces(&data[..8]).is_err());
    }
}
