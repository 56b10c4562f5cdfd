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
//! * zstd, larger bundles: zstd's own buffer would wrap, and the blocks
//!   compressed after that point would be searched differently from a
//!   one-shot call. These go through [`zstd_stable_in`] instead, which runs
//!   zstd's stable-input mode (what `ZSTD_compress2` itself uses) over a
//!   buffer of the bundle's size that is filled as pieces arrive and whose
//!   pages are handed back once they fall out of zstd's window: about one
//!   window (128 MiB) resident, whatever the bundle's size.
//! * zstd 1.5.7 and later ([`zstd_stable_in::has_pre_splitter`]): those may
//!   cut a block short where a one-shot call then goes on from the cut, which
//!   no stream reproduces; with such a library every zstd bundle is collected
//!   and compressed in one shot at [`Writer::finish`] (the bundle plus its
//!   compressed form in memory). LLVM 22 as Debian packages it links 1.5.4.
//! * zlib: collected and compressed in one shot too (zlib's stored blocks
//!   depend on how the output space is handed out, so streaming would not
//!   reproduce `compress2` at level 0).

use std::io::{self, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use zstd::zstd_safe;

use super::codec::{self, zstd_error, zstd_error_named, CompressInfo, CompressOptions};
use super::error::CcobError;
use super::fields::{Method, V2Field, Version};
use super::hasher::Background;
use super::header::Header;

/// Largest bundle compressed with zstd's ordinary streaming: LLVM's
/// parameters turn on long-distance matching, which sets a 2^27-byte
/// window, and zstd's streaming input buffer holds one window plus one
/// 128 KiB block. Up to that size the buffer never wraps and the frame
/// equals the one-shot one; larger bundles stream in zstd's stable-input
/// mode ([`zstd_stable_in`]).
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
    md5: Background,
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
    /// zstd's stable-input streaming over a buffer of the bundle's size.
    Stable(zstd_stable_in::Compressor),
    /// The whole input, compressed at the end.
    Collect(Vec<u8>),
}

fn io_err(e: CcobError) -> io::Error {
    io::Error::other(e)
}

/// The stable-input compressor's errors as the writer reports them: the
/// output's own as they are, zstd's as codec errors, the rest as missing
/// memory for the bundle.
fn stable_error(e: zstd_stable_in::Error, size: u64) -> io::Error {
    use zstd_stable_in::Error as E;
    match e {
        E::Sink(e) => e,
        E::Zstd(name) => io_err(zstd_error_named(name)),
        E::OutOfMemory | E::Buffer(_) => io_err(CcobError::OutOfMemory { size }),
        // The writer checks the length before the compressor sees it.
        E::TooLong { announced, pushed } | E::TooShort { announced, pushed } => {
            io_err(CcobError::StreamLength {
                announced,
                written: pushed,
            })
        }
    }
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
    /// lower it to reach the stable-input path cheaply).
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
            md5: Background::new(uncompressed_len),
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
        let zstd = options.method == Method::Zstd && !zstd_stable_in::has_pre_splitter();
        if zstd && uncompressed_len > stream_max {
            let c = zstd_stable_in::Compressor::new(uncompressed_len, options.effective_level())
                .map_err(|e| match e {
                    zstd_stable_in::Error::Zstd(name) => zstd_error_named(name),
                    _ => out_of_memory.clone(),
                })?;
            return Ok(Engine::Stable(c));
        }
        if zstd {
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
            Engine::Stable(c) => {
                let (out, payload_len) = (&mut self.out, &mut self.payload_len);
                c.finish(&mut |bytes: &[u8]| {
                    *payload_len += bytes.len() as u64;
                    out.write_all(bytes)
                })
                .map_err(|e| stable_error(e, self.expected))?;
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
        let hash = std::mem::replace(&mut self.md5, Background::new(0)).finish();
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
            Engine::Stable(c) => {
                let (out, payload_len) = (&mut self.out, &mut self.payload_len);
                // Codec time is the push less the time spent writing out.
                let mut writing = Duration::ZERO;
                let started = Instant::now();
                let pushed = c.push(buf, &mut |bytes: &[u8]| {
                    let at = Instant::now();
                    *payload_len += bytes.len() as u64;
                    let written = out.write_all(bytes);
                    writing += at.elapsed();
                    written
                });
                self.codec_time += started.elapsed().saturating_sub(writing);
                pushed.map_err(|e| stable_error(e, self.expected))?;
            }
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

    /// Bytes whose character changes every few KiB (text, noise, near and
    /// far repeats), as in real bundles; enough to make zstd 1.5.7's
    /// pre-splitter cut blocks.
    fn varied(len: usize) -> Vec<u8> {
        let mut next = test_support::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let r = next();
            let n = 1 + (r >> 8) as usize % 6000;
            match r % 3 {
                0 => out.extend((0..n).map(|_| next() as u8)),
                1 => {
                    for _ in 0..n / 8 {
                        out.extend_from_slice(
                            [&b"v_add_f32 "[..], b"s_waitcnt "][(next() % 2) as usize],
                        );
                    }
                }
                _ => {
                    let back = 1 + next() as usize % out.len().max(1);
                    let from = out.len().saturating_sub(back);
                    for i in 0..n.min(back).min(out.len()) {
                        out.push(out[from + i]);
                    }
                }
            }
        }
        out.truncate(len);
        out
    }

    /// Every engine a zstd bundle can take gives the one-shot bytes: zstd's
    /// ordinary streaming, its stable-input streaming above the limit
    /// (lowered here to reach it cheaply), or, with a zstd that pre-splits
    /// blocks, collecting; zlib always collects.
    #[test]
    fn every_engine_equals_one_shot() {
        let long = varied(1_000_000);
        let zlib = CompressOptions {
            method: Method::Zlib,
            ..CompressOptions::default()
        };
        let options = [
            CompressOptions::default(),
            CompressOptions {
                level: Some(1),
                ..CompressOptions::default()
            },
            CompressOptions {
                level: Some(19),
                ..CompressOptions::default()
            },
            zlib,
        ];
        let runs = [
            (0, 70_000),
            (0, 1 << 17),
            (0, 3_000_001),
            (1 << 18, 70_000),
            (ZSTD_STREAM_MAX, 70_000),
        ];
        for o in options {
            // The slowest level on less data (unoptimised test builds).
            let input = if o.level == Some(19) {
                &long[..400_000]
            } else {
                &long[..]
            };
            let expected = super::super::compress(input, &o).unwrap().bytes;
            for (stream_max, piece) in runs {
                let out = Cursor::new(Vec::new());
                let mut w =
                    Writer::with_stream_max(out, input.len() as u64, &o, stream_max).unwrap();
                let engine = match w.engine {
                    Engine::Zstd { .. } => "zstd",
                    Engine::Stable(_) => "stable",
                    Engine::Collect(_) => "collect",
                };
                let wanted = if o.method == Method::Zlib || zstd_stable_in::has_pre_splitter() {
                    "collect"
                } else if (input.len() as u64) > stream_max {
                    "stable"
                } else {
                    "zstd"
                };
                assert_eq!(engine, wanted);
                for p in input.chunks(piece) {
                    w.write_all(p).unwrap();
                }
                let (out, info) = w.finish().unwrap();
                assert_eq!(info.total_len, out.get_ref().len() as u64);
                assert_eq!(info.payload_len + 32, info.total_len);
                assert!(
                    out.get_ref() == &expected,
                    "{o:?}, {engine}, pieces of {piece}"
                );
            }
        }
    }
}
