//! The crate's one bounded inflate (deflate) decoder, for every zlib or raw
//! deflate stream it reads: compressed bundles (`ccob`, zlib), offload
//! binary version 3 bodies (zlib) and ZIP members (raw deflate).
//!
//! As [`crate::zstd_bounded`] does for zstd, it decodes in pieces of at most
//! [`PIECE`] bytes, hands each to the caller, and stops as soon as the
//! output would pass the caller's limit: no recorded size is ever
//! allocated up front or trusted, and a stream that decodes to more than it
//! claims is caught after at most one piece. Its memory is one piece plus
//! the decoder's 32 KiB window. A stream that stops giving output before
//! its end (cut short, or a decoder that makes no progress) is an error,
//! never a loop.
//!
//! Callers keep their own texts (zlib's `uncompress` codes for LLVM's
//! bundler, the ZIP reader's sentences) by matching on [`Stop`].

use flate2::{Decompress, FlushDecompress, Status};

/// Output handed to the caller at a time.
pub(crate) const PIECE: usize = 64 << 10;

/// How the deflate data is wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wrap {
    /// A zlib stream (RFC 1950: header and Adler-32 trailer).
    Zlib,
    /// Raw deflate (RFC 1951), as in ZIP members.
    #[cfg_attr(not(feature = "zip"), allow(dead_code))]
    Raw,
}

/// Why inflating stopped before the end of the stream.
#[derive(Debug)]
#[cfg_attr(not(feature = "zip"), allow(dead_code))]
pub(crate) enum Stop<E> {
    /// The output would pass the limit; `produced` counts the piece that
    /// would have passed it.
    Overrun {
        /// Bytes decoded, including the piece that passed the limit.
        produced: u64,
    },
    /// The decoder rejected the data; its own text.
    Corrupt(String),
    /// The input ended before the stream did.
    Cut,
    /// The decoder took no input and gave no output.
    Stalled,
    /// The caller's error, from its sink.
    Sink(E),
}

/// How a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Inflated {
    /// Bytes decoded (handed to the sink).
    pub(crate) produced: u64,
    /// Compressed bytes read: where the stream ends in `src` (bytes after
    /// it are not read).
    pub(crate) consumed: usize,
    /// The stream reached its end (false: the sink stopped early).
    pub(crate) complete: bool,
}

/// Inflates the stream at the start of `src`, handing the output to `sink`
/// in pieces; `sink` returns `Ok(false)` to stop early. Fails with
/// [`Stop::Overrun`] when the output would pass `limit` bytes (the piece
/// that would pass it is not handed over). `progress` is told the
/// compressed bytes read so far after each piece (a caller reading a
/// mapped file can let those pages go).
pub(crate) fn inflate<E>(
    src: &[u8],
    wrap: Wrap,
    limit: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<bool, E>,
    progress: &mut dyn FnMut(usize),
) -> Result<Inflated, Stop<E>> {
    let mut z = Decompress::new(wrap == Wrap::Zlib);
    let mut piece = vec![0u8; PIECE];
    let mut produced = 0u64;
    loop {
        let read = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
        let before = z.total_out();
        let input = src.get(read..).unwrap_or(&[]);
        let status = z.decompress(input, &mut piece, FlushDecompress::None);
        let n = (z.total_out() - before) as usize;
        // Output made before an error still counts against the limit, as
        // a one-shot decoder into a buffer of the limit's size would see
        // it full first.
        if produced + n as u64 > limit {
            return Err(Stop::Overrun {
                produced: produced + n as u64,
            });
        }
        let status = status.map_err(|e| Stop::Corrupt(e.to_string()))?;
        produced += n as u64;
        let consumed = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
        progress(consumed);
        if n > 0 && !sink(&piece[..n]).map_err(Stop::Sink)? {
            return Ok(Inflated {
                produced,
                consumed,
                complete: false,
            });
        }
        if status == Status::StreamEnd {
            return Ok(Inflated {
                produced,
                consumed,
                complete: true,
            });
        }
        if n == 0 && consumed >= src.len() {
            return Err(Stop::Cut);
        }
        if n == 0 && consumed == read {
            return Err(Stop::Stalled);
        }
    }
}

/// [`inflate`] with no sink error and no progress report.
pub(crate) fn inflate_into(
    src: &[u8],
    wrap: Wrap,
    limit: u64,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Inflated, Stop<std::convert::Infallible>> {
    inflate(src, wrap, limit, &mut |piece| Ok(sink(piece)), &mut |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len as u64).map(|i| (i * i / 7 % 253) as u8).collect()
    }

    fn all(src: &[u8], limit: u64) -> (Result<Inflated, String>, Vec<u8>) {
        let mut out = Vec::new();
        let r = inflate_into(src, Wrap::Zlib, limit, &mut |p| {
            out.extend_from_slice(p);
            true
        })
        .map_err(|e| format!("{e:?}"));
        (r, out)
    }

    #[test]
    fn a_stream_decodes_in_pieces_to_its_end() {
        let data = sample(300_000);
        let mut z = zlib(&data);
        let len = z.len();
        z.extend_from_slice(b"trailing");
        let (r, out) = all(&z, data.len() as u64);
        assert_eq!(
            r,
            Ok(Inflated {
                produced: data.len() as u64,
                consumed: len,
                complete: true
            })
        );
        assert_eq!(out, data);
    }

    #[test]
    fn the_limit_is_never_passed() {
        let data = sample(300_000);
        let (r, out) = all(&zlib(&data), 100_000);
        assert!(r.unwrap_err().starts_with("Overrun"));
        assert!(out.len() <= 100_000);
        assert_eq!(out, &data[..out.len()]);
        // A limit of zero: nothing is handed over.
        let (r, out) = all(&zlib(&data), 0);
        assert!(r.unwrap_err().starts_with("Overrun"));
        assert!(out.is_empty());
    }

    #[test]
    fn cut_and_corrupt_streams_are_errors() {
        let z = zlib(&sample(300_000));
        let (r, _) = all(&z[..z.len() / 2], u64::MAX);
        assert_eq!(r.unwrap_err(), "Cut");
        let mut bad = z.clone();
        bad[0] ^= 0xFF;
        let (r, _) = all(&bad, u64::MAX);
        assert!(r.unwrap_err().starts_with("Corrupt"));
        let (r, _) = all(&[], u64::MAX);
        assert_eq!(r.unwrap_err(), "Cut");
    }

    #[test]
    fn the_sink_stops_early() {
        let data = sample(300_000);
        let mut seen = 0;
        let r = inflate_into(&zlib(&data), Wrap::Zlib, u64::MAX, &mut |p| {
            seen += p.len();
            false
        });
        let r = r.unwrap();
        assert!(!r.complete);
        assert_eq!(r.produced, seen as u64);
        assert!(seen <= PIECE);
    }
}
