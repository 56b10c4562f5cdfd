//! Compressing a bundle that is written piece by piece, straight to its
//! destination.
//!
//! [`compress`](super::compress) needs the whole serialized bundle in memory
//! and returns the whole CCOB in memory too. [`Writer`] takes the bundle
//! through [`Write`] instead, hashes each piece as it arrives, and writes the
//! compressed payload to its output as it is produced; the header goes out
//! first as a placeholder and is filled in by [`Writer::finish`], when the
//! payload size and the hash are known (hence `Seek`).
//!
//! The bytes are exactly those of [`compress`](super::compress), which are
//! LLVM 22's: one zstd frame as a single `ZSTD_compress2` call makes it, or
//! one zlib stream.
//!
//! * zstd, bundles up to [`ZSTD_STREAM_MAX`]: streaming compression with the
//!   size pledged up front, which selects the same parameters and writes the
//!   same frame header and blocks as the one-shot call. zstd keeps a copy of
//!   the input in its own buffer of window size plus one block, so memory is
//!   about the bundle's size, and nothing else grows with it.
//! * zstd, larger bundles: once the input outgrows that buffer zstd reuses
//!   it from the start, and the blocks compressed after that point are
//!   searched differently from a one-shot call (the output differs). The
//!   writer therefore collects such bundles and compresses them in one shot
//!   at [`Writer::finish`]: the bundle plus its compressed form in memory.
//! * zlib: collected and compressed in one shot too (zlib's stored blocks
//!   depend on how the output space is handed out, so streaming would not
//!   reproduce `compress2` at level 0).

use std::io::{self, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use zstd::zstd_safe;

use super::codec::{self, CompressInfo, CompressOptions};
use super::error::CcobError;
use super::hasher::truncate;
use super::header::{Header, Method, V2Field, Version};
use md5::{Digest, Md5};

/// Largest bundle compressed as a stream with zstd: LLVM's parameters turn
/// on long-distance matching, which sets a 2^27-byte window, and zstd's
/// streaming input buffer holds one window plus one 128 KiB block. Up to
/// that size the buffer never wraps and the frame equals the one-shot one.
pub const ZSTD_STREAM_MAX: u64 = (1 << 27) + (1 << 17);

/// Size of the buffer compressed bytes pass through on their way out.
const OUT_CHUNK: usize = 1 << 20;

/// A [`Write`] sink that compresses what it is given into a CCOB written to
/// `W`. Create it with [`Writer::new`], write exactly the announced number
/// of bytes, then call [`Writer::finish`].
///
/// Errors from `write` are I/O errors; those that are not the output's own
/// carry a [`CcobError`] (see [`CcobError::from_io`]). If anything fails,
/// what was written to the output is incomplete and must be discarded.
pub struct Writer<W: Write + Seek> {
    out: W,
    /// Where the header goes in `out`.
    start: u64,
    options: CompressOptions,
    level: i32,
    /// Bytes announced to [`Writer::new`].
    expected: u64,
    /// Bytes received so far.
    received: u64,
    md5: Md5,
    engine: Engine,
    /// Payload bytes written to `out`.
    payload_len: u64,
    codec_time: Duration,
}

enum Engine {
    /// zstd streaming; `buf` holds compressed bytes on their way out.
    Zstd {
        cctx: zstd_safe::CCtx<'static>,
        buf: Vec<u8>,
        /// The frame is complete (another call would start a new one).
        ended: bool,
    },
    /// The whole input, compressed at the end.
    Collect(Vec<u8>),
}

fn zstd_error(code: usize) -> CcobError {
    CcobError::Codec {
        method: Method::Zstd,
        message: zstd_safe::get_error_name(code).to_string(),
    }
}

fn io_err(e: CcobError) -> io::Error {
    io::Error::other(e)
}

impl<W: Write + Seek> Writer<W> {
    /// Starts a CCOB at the current position of `out` for a bundle of
    /// exactly `uncompressed_len` bytes, writing a placeholder header.
    ///
    /// Fails like [`compress`](super::compress), before anything is
    /// written, for a version it cannot write, a bundle too large for a v2
    /// header or an invalid zlib level; these errors, like every error of
    /// the writer that is not the output's own, are I/O errors of kind
    /// `Other` carrying a [`CcobError`] ([`CcobError::from_io`]).
    pub fn new(out: W, uncompressed_len: u64, options: &CompressOptions) -> io::Result<Writer<W>> {
        Self::with_stream_max(out, uncompressed_len, options, ZSTD_STREAM_MAX)
    }

    /// [`Writer::new`] with the largest size zstd streams given (tests
    /// lower it to reach the collecting path cheaply).
    fn with_stream_max(
        mut out: W,
        uncompressed_len: u64,
        options: &CompressOptions,
        stream_max: u64,
    ) -> io::Result<Writer<W>> {
        Self::check(uncompressed_len, options).map_err(io_err)?;
        let engine = Self::engine(uncompressed_len, options, stream_max).map_err(io_err)?;
        let start = out.stream_position()?;
        out.write_all(&vec![0u8; options.version.header_len()])?;
        Ok(Writer {
            out,
            start,
            options: *options,
            level: options.effective_level(),
            expected: uncompressed_len,
            received: 0,
            md5: Md5::new(),
            engine,
            payload_len: 0,
            codec_time: Duration::ZERO,
        })
    }

    fn check(uncompressed_len: u64, options: &CompressOptions) -> Result<(), CcobError> {
        let version = options.version;
        if version == Version::V1 {
            return Err(CcobError::UnsupportedWriteVersion(version));
        }
        if version == Version::V2 && u32::try_from(uncompressed_len).is_err() {
            return Err(CcobError::Version2Limit(V2Field::UncompressedSize));
        }
        if options.method == Method::Zlib {
            codec::zlib_level(options.effective_level())?;
        }
        Ok(())
    }

    fn engine(
        uncompressed_len: u64,
        options: &CompressOptions,
        stream_max: u64,
    ) -> Result<Engine, CcobError> {
        let out_of_memory = CcobError::OutOfMemory {
            size: uncompressed_len,
        };
        if options.method == Method::Zstd && uncompressed_len <= stream_max {
            let mut cctx = zstd_safe::CCtx::try_create().ok_or(out_of_memory)?;
            codec::set_llvm_zstd_parameters(&mut cctx, options.effective_level())?;
            cctx.set_pledged_src_size(Some(uncompressed_len))
                .map_err(zstd_error)?;
            return Ok(Engine::Zstd {
                cctx,
                buf: Vec::with_capacity(OUT_CHUNK),
                ended: false,
            });
        }
        let size = usize::try_from(uncompressed_len).map_err(|_| out_of_memory.clone())?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(size).map_err(|_| out_of_memory)?;
        Ok(Engine::Collect(buf))
    }

    /// Compresses `input` (all of it) as streaming zstd, writing whatever
    /// comes out; with `end`, also ends the frame.
    fn zstd_step(&mut self, input: &[u8], end: bool) -> io::Result<()> {
        let Engine::Zstd { cctx, buf, ended } = &mut self.engine else {
            return Ok(());
        };
        if *ended {
            return Ok(());
        }
        let directive = if end {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end
        } else {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_continue
        };
        let mut input = zstd_safe::InBuffer::around(input);
        loop {
            buf.clear();
            let started = Instant::now();
            let mut output = zstd_safe::OutBuffer::around(&mut *buf);
            let result = cctx.compress_stream2(&mut output, &mut input, directive);
            self.codec_time += started.elapsed();
            let remaining = result.map_err(|code| io_err(zstd_error(code)))?;
            if !buf.is_empty() {
                self.out.write_all(buf)?;
                self.payload_len += buf.len() as u64;
            }
            let done = if end {
                *ended = remaining == 0;
                *ended
            } else {
                input.pos() == input.src.len()
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Ends the payload, writes the real header and returns the output
    /// (positioned after the CCOB) with the figures for the verbose report.
    ///
    /// Fails if fewer bytes were written than announced, if the total size
    /// does not fit a v2 header (checked, as in LLVM, once it is known), or
    /// if the output fails. Codec errors are I/O errors of kind `Other`
    /// carrying the [`CcobError`] ([`CcobError::from_io`]).
    pub fn finish(mut self) -> io::Result<(W, CompressInfo)> {
        if self.received != self.expected {
            return Err(io_err(CcobError::StreamLength {
                announced: self.expected,
                written: self.received,
            }));
        }
        match std::mem::replace(&mut self.engine, Engine::Collect(Vec::new())) {
            engine @ Engine::Zstd { .. } => {
                self.engine = engine;
                // Ends the frame of an empty bundle, which no write did.
                self.zstd_step(&[], true)?;
            }
            Engine::Collect(input) => {
                let mut bytes = Vec::new();
                let time =
                    codec::compress_payload(&input, self.options.method, self.level, &mut bytes)
                        .map_err(io_err)?;
                drop(input);
                self.codec_time = time;
                self.out.write_all(&bytes)?;
                self.payload_len = bytes.len() as u64;
            }
        }
        let version = self.options.version;
        let total_len = (version.header_len() as u64).saturating_add(self.payload_len);
        let hash = truncate(std::mem::take(&mut self.md5));
        let header = Header {
            version,
            method: self.options.method,
            total_size: Some(total_len),
            uncompressed_size: self.expected,
            hash,
        };
        let header_bytes = header.to_bytes().map_err(io_err)?;
        self.out.seek(SeekFrom::Start(self.start))?;
        self.out.write_all(&header_bytes)?;
        self.out
            .seek(SeekFrom::Start(self.start.saturating_add(total_len)))?;
        let info = CompressInfo {
            version,
            method: self.options.method,
            level: self.options.level.unwrap_or(self.level),
            uncompressed_len: self.expected,
            payload_len: self.payload_len,
            total_len,
            hash,
            codec_time: self.codec_time,
        };
        Ok((self.out, info))
    }
}

impl<W: Write + Seek> Write for Writer<W> {
    /// Takes all of `buf`, or fails if that would exceed the announced size.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let after = self.received.saturating_add(buf.len() as u64);
        if after > self.expected {
            return Err(io_err(CcobError::StreamLength {
                announced: self.expected,
                written: after,
            }));
        }
        self.md5.update(buf);
        self.received = after;
        match &mut self.engine {
            // The frame ends in the call that brings the last byte: zstd
            // compresses a full block as soon as it has one, so a frame whose
            // size is a multiple of the block size would otherwise end with
            // an extra empty block that the one-shot call does not write.
            Engine::Zstd { .. } => self.zstd_step(buf, after == self.expected)?,
            // Capacity was reserved for exactly the announced size, so this
            // never reallocates.
            Engine::Collect(v) => v.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    /// Compressed bytes are written out as they are produced; this flushes
    /// the output, not the compressor (a flush would end a zstd block early
    /// and change the bytes).
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// zstd bundles too large to stream are collected and compressed in one
    /// shot: the same bytes either way.
    #[test]
    fn collected_zstd_equals_streamed() {
        let input: Vec<u8> = (0..300_000u64).map(|i| (i * i % 251) as u8).collect();
        for level in [None, Some(1), Some(19)] {
            let o = CompressOptions {
                level,
                ..CompressOptions::default()
            };
            let mut outs = Vec::new();
            for stream_max in [0, ZSTD_STREAM_MAX] {
                let out = Cursor::new(Vec::new());
                let mut w =
                    Writer::with_stream_max(out, input.len() as u64, &o, stream_max).unwrap();
                assert_eq!(matches!(w.engine, Engine::Collect(_)), stream_max == 0);
                for p in input.chunks(70_000) {
                    w.write_all(p).unwrap();
                }
                let (out, info) = w.finish().unwrap();
                assert_eq!(info.total_len, out.get_ref().len() as u64);
                outs.push(out.into_inner());
            }
            assert!(outs[0] == outs[1], "level {level:?}");
            assert_eq!(outs[0], super::super::compress(&input, &o).unwrap().bytes);
        }
    }
}
