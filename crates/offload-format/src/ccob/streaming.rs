//! Decompressing a CCOB without holding the bundle it contains.
//!
//! [`decompress`](super::decompress) returns the whole bundle in one buffer,
//! which is what a reader needs when entries may lie anywhere. A bundle
//! whose entries a caller can take in file order needs less:
//! [`decompress_streaming`] hands the decompressed bytes to a sink in order,
//! a step at a time, and keeps only zstd's window (2^27 bytes for what LLVM
//! writes) and one step's output.
//!
//! It only ever succeeds: anything unusual (zlib, a decoding error, a frame
//! that ends early or runs long, a sink that gives up) returns `None`, and
//! the caller starts again with [`decompress_unverified_with`], which gives
//! the exact outcome and error text. So the two paths cannot disagree on
//! what is an error.
//!
//! [`decompress_unverified_with`]: super::decompress_unverified_with

use std::time::{Duration, Instant};

use zstd::zstd_safe;

#[cfg(feature = "inspect")]
use crate::inflate_bounded::{inflate_into, Wrap};

use super::codec::{zstd_steps, DecompressReport, FetchFn, ZSTD_MAX_RATIO};
use super::error::CcobError;
use super::fields::Method;
use super::hasher::hash_alongside;
use super::header::Header;

/// Decompressed bytes handed to the sink per call at most: zstd's own
/// recommended output size, one block.
const OUT_STEP: usize = 128 << 10;

/// What [`decompress_streaming`] learnt, for the verbose report and the
/// hash check. The bundle itself went to the sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streamed {
    /// The header that was read.
    pub header: Header,
    /// Bytes of the input this CCOB occupies (header and payload).
    pub ccob_len: usize,
    /// Size of the compressed payload.
    pub payload_len: usize,
    /// Truncated MD5 of the bytes handed to the sink.
    pub computed_hash: u64,
    /// Wall-clock time spent decoding and in the sink.
    pub codec_time: Duration,
}

impl Streamed {
    /// Fail with [`CcobError::HashMismatch`] unless the hashes match.
    pub fn verify(&self) -> Result<(), CcobError> {
        super::codec::check_hash(&self.header, self.computed_hash)
    }

    /// The figures for [`super::report::format_decompress_report`].
    pub fn report(&self) -> DecompressReport {
        super::codec::report_of(
            &self.header,
            self.payload_len,
            self.computed_hash,
            self.codec_time,
        )
    }
}

/// Decompresses the zstd CCOB at the start of `input`, handing the bundle to
/// `sink` in order and in pieces of at most 128 KiB; `sink` returns false to
/// give up. `fetch`, when given, reads each step's compressed bytes (see
/// [`super::Fetch`]).
///
/// Returns `None` unless the whole payload decoded to exactly the header's
/// uncompressed size with every piece accepted; the caller must then
/// decompress with [`super::decompress_unverified_with`] for the outcome
/// (and should discard whatever the sink did). The hash is computed but not
/// checked: see [`Streamed::verify`].
pub fn decompress_streaming(
    input: &[u8],
    fetch: Option<&mut FetchFn<'_>>,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<Streamed> {
    let header = Header::parse(input).ok()?;
    if header.method != Method::Zstd {
        return None;
    }
    let payload = header.payload(input).ok()?;
    // The buffered decoder fails beyond either bound, so stop there too.
    let limit = header
        .uncompressed_size
        .min((payload.len() as u64).saturating_mul(ZSTD_MAX_RATIO));
    let mut produced = 0u64;
    let expected = usize::try_from(limit).unwrap_or(usize::MAX);
    let (complete, computed_hash) = hash_alongside(expected, |hash_sink| {
        let started = Instant::now();
        let complete = zstd_stream(payload, fetch, &mut |bytes| {
            produced = produced.saturating_add(bytes.len() as u64);
            if produced > limit {
                return false;
            }
            hash_sink(bytes);
            sink(bytes)
        });
        (complete, started.elapsed())
    });
    let (true, codec_time) = complete else {
        return None;
    };
    if produced != header.uncompressed_size {
        return None;
    }
    Some(Streamed {
        header,
        ccob_len: header.len() + payload.len(),
        payload_len: payload.len(),
        computed_hash,
        codec_time,
    })
}

/// How far `decode_prefix` got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixEnd {
    /// The sink said it had seen enough.
    Stopped,
    /// The whole payload was decoded and handed over; `produced` bytes.
    Complete {
        /// Bytes handed to the sink.
        produced: u64,
    },
}

/// Decompresses the CCOB at the start of `input` (zstd or zlib) only as far
/// as `sink` wants: the sink gets the bundle in order, in pieces of at most
/// 128 KiB, and returns false once it has seen enough. Memory is zstd's
/// window (or zlib's 32 KiB) and one piece, whatever the bundle's size; no
/// hash is computed, so nothing is verified.
///
/// This is what a lister needs to read a compressed bundle's header
/// without its payloads. Fails on a bad header or when the codec rejects
/// the data before the sink stops; the error then says which method failed,
/// not where.
#[cfg(feature = "inspect")]
pub(crate) fn decode_prefix(
    input: &[u8],
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<PrefixEnd, CcobError> {
    let header = Header::parse(input)?;
    let payload = header.payload(input)?;
    let mut stopped = false;
    let mut produced = 0u64;
    let mut counting = |bytes: &[u8]| {
        produced = produced.saturating_add(bytes.len() as u64);
        if sink(bytes) {
            true
        } else {
            stopped = true;
            false
        }
    };
    let complete = match header.method {
        Method::Zstd => zstd_stream(payload, None, &mut counting),
        Method::Zlib => zlib_stream(payload, &mut counting),
    };
    if stopped {
        Ok(PrefixEnd::Stopped)
    } else if complete {
        Ok(PrefixEnd::Complete { produced })
    } else {
        Err(CcobError::Codec {
            method: header.method,
            message: "the compressed data is damaged or cut short".to_owned(),
        })
    }
}

/// The length of a CCOB whose header records none (v1): header plus the
/// first compressed stream, found by the codec (zstd: the frame's recorded
/// layout, without decoding; zlib: by decoding to the stream's end). `None`
/// when the stream is damaged or cut short. Versions 2 and 3 give their
/// recorded total size.
#[cfg(feature = "inspect")]
pub(crate) fn stream_len(input: &[u8]) -> Option<usize> {
    let header = Header::parse(input).ok()?;
    if header.total_size.is_some() {
        return header.ccob_len(input.len()).ok();
    }
    let payload = input.get(header.len()..)?;
    let len = match header.method {
        Method::Zstd => zstd_safe::find_frame_compressed_size(payload).ok()?,
        Method::Zlib => {
            let end = inflate_into(payload, Wrap::Zlib, u64::MAX, &mut |_| true).ok()?;
            end.consumed
        }
    };
    header.len().checked_add(len).filter(|&l| l <= input.len())
}

/// zlib counterpart of [`zstd_stream`]: true if the stream ended and every
/// piece was accepted.
#[cfg(feature = "inspect")]
fn zlib_stream(payload: &[u8], sink: &mut dyn FnMut(&[u8]) -> bool) -> bool {
    matches!(
        inflate_into(payload, Wrap::Zlib, u64::MAX, sink),
        Ok(end) if end.complete
    )
}

/// Decodes every frame of `payload` with zstd's own window, passing the
/// output to `sink` as it comes. True if every frame ended and every piece
/// was accepted.
fn zstd_stream(
    payload: &[u8],
    fetch: Option<&mut FetchFn<'_>>,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> bool {
    let mut out: Vec<u8> = Vec::with_capacity(OUT_STEP);
    zstd_steps(payload, fetch, false, |dctx, input| loop {
        let before = input.pos();
        out.clear();
        let mut output = zstd_safe::OutBuffer::around(&mut out);
        let frame_done = dctx.decompress_stream(&mut output, input).ok()? == 0;
        // zstd has set `out`'s length to what it wrote.
        let room_left = output.pos() < OUT_STEP;
        if !out.is_empty() && !sink(&out) {
            return None;
        }
        // With room left in the output, zstd has flushed all it can from
        // the input it was given; with a hint of 0 the frame is complete
        // and flushed (another call would start a new frame).
        if input.pos() == input.src.len() && (room_left || frame_done) {
            return Some(frame_done);
        }
        if input.pos() == before && out.is_empty() {
            return None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ccob::{compress, decompress, CompressOptions, Version};

    fn sample(len: usize) -> Vec<u8> {
        (0..len as u64).map(|i| (i * i / 7 % 253) as u8).collect()
    }

    fn collect(input: &[u8]) -> Option<(Streamed, Vec<u8>)> {
        let mut seen = Vec::new();
        let s = decompress_streaming(input, None, &mut |b| {
            assert!(b.len() <= OUT_STEP);
            seen.extend_from_slice(b);
            true
        })?;
        Some((s, seen))
    }

    /// Every byte reaches the sink once, in order, and the figures equal
    /// those of the buffered decoder.
    #[test]
    fn equals_the_buffered_decoder() {
        for len in [0usize, 1, OUT_STEP, OUT_STEP + 1, 3_000_000] {
            for version in [Version::V2, Version::V3] {
                let data = sample(len);
                let o = CompressOptions {
                    version,
                    ..CompressOptions::default()
                };
                let c = compress(&data, &o).unwrap();
                let (s, seen) =
                    collect(&c.bytes).unwrap_or_else(|| panic!("len {len} {version:?}"));
                assert!(seen == data, "len {len}");
                let d = decompress(&c.bytes).unwrap();
                assert_eq!(
                    s.report(),
                    DecompressReport {
                        codec_time: s.codec_time,
                        ..d.report()
                    }
                );
                assert_eq!(s.ccob_len, c.bytes.len());
                s.verify().unwrap();
            }
        }
    }

    /// Trailing bytes after the recorded total size are left alone, as the
    /// buffered decoder leaves them.
    #[test]
    fn stops_at_the_total_size() {
        let data = sample(100_000);
        let c = compress(&data, &CompressOptions::default()).unwrap();
        let mut two = c.bytes.clone();
        two.extend_from_slice(&c.bytes);
        let (s, seen) = collect(&two).unwrap();
        assert_eq!(seen, data);
        assert_eq!(s.ccob_len, c.bytes.len());
    }

    /// A wrong hash is found by `verify`, not by streaming.
    #[test]
    fn hash_is_checked_by_verify() {
        let data = sample(5000);
        let mut c = compress(&data, &CompressOptions::default()).unwrap().bytes;
        // The v3 hash field.
        c[24] ^= 1;
        let (s, _) = collect(&c).unwrap();
        assert!(matches!(s.verify(), Err(CcobError::HashMismatch { .. })));
    }

    /// Anything the buffered decoder would reject, or that the sink
    /// refuses, gives `None`.
    #[test]
    fn gives_up_on_anything_odd() {
        let data = sample(400_000);
        let good = compress(&data, &CompressOptions::default()).unwrap().bytes;
        let mut cases: Vec<Vec<u8>> = Vec::new();
        // Truncated payload (total size adjusted so the header is valid).
        let mut cut = good[..good.len() - 5].to_vec();
        let total = (cut.len() as u64).to_le_bytes();
        cut[8..16].copy_from_slice(&total);
        cases.push(cut);
        // Uncompressed size one more, and one less, than the frame holds.
        for delta in [1i64, -1] {
            let mut c = good.clone();
            let size = (data.len() as i64 + delta) as u64;
            c[16..24].copy_from_slice(&size.to_le_bytes());
            cases.push(c);
        }
        // Garbage payload.
        let mut c = good.clone();
        for b in &mut c[32..64] {
            *b = 0xA5;
        }
        cases.push(c);
        // zlib method.
        let zlib = compress(
            &data,
            &CompressOptions {
                method: Method::Zlib,
                ..CompressOptions::default()
            },
        )
        .unwrap()
        .bytes;
        cases.push(zlib);
        for (i, c) in cases.iter().enumerate() {
            assert!(collect(c).is_none(), "case {i}");
        }
        let mut calls = 0;
        let refused = decompress_streaming(&good, None, &mut |_| {
            calls += 1;
            calls < 2
        });
        assert!(refused.is_none());
        assert_eq!(calls, 2);
    }

    #[test]
    #[cfg(feature = "inspect")]
    fn decode_prefix_stops_early_and_reads_both_methods() {
        use crate::ccob::Method as M;
        let data = sample(1_000_000);
        for method in [M::Zstd, M::Zlib] {
            for version in [Version::V1, Version::V2, Version::V3] {
                let options = CompressOptions {
                    method,
                    version,
                    ..CompressOptions::default()
                };
                let Ok(c) = compress(&data, &options) else {
                    continue;
                };
                let mut seen = Vec::new();
                let end = decode_prefix(&c.bytes, &mut |b| {
                    seen.extend_from_slice(b);
                    seen.len() < 1000
                })
                .unwrap();
                assert_eq!(end, PrefixEnd::Stopped);
                assert!(seen.len() >= 1000 && seen.len() <= 1000 + OUT_STEP);
                assert_eq!(&seen[..], &data[..seen.len()]);
                let mut all = Vec::new();
                let end = decode_prefix(&c.bytes, &mut |b| {
                    all.extend_from_slice(b);
                    true
                })
                .unwrap();
                assert_eq!(
                    end,
                    PrefixEnd::Complete {
                        produced: data.len() as u64
                    }
                );
                assert_eq!(all, data);
                // Damaged payloads fail (or stop) without panicking.
                for cut in [c.bytes.len() / 2, c.bytes.len() - 1] {
                    let mut bad = c.bytes[..cut].to_vec();
                    if version == Version::V1 {
                        bad.truncate(cut);
                    } else {
                        bad.resize(c.bytes.len(), 0xA5);
                    }
                    let _ = decode_prefix(&bad, &mut |_| true);
                }
            }
        }
    }
}
