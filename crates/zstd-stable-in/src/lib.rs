//! zstd compression of an input that arrives piece by piece, giving exactly
//! the frame a one-shot `ZSTD_compress2` call gives for the whole input, in
//! memory bounded by the window rather than the input.
//!
//! Why not zstd's ordinary streaming: it copies the input into a buffer of
//! its own of one window plus one block, and once that buffer wraps, the
//! blocks after it are searched differently from a one-shot call (whose
//! input lies in one piece), so the frame differs. `ZSTD_compress2` itself
//! runs zstd's streaming code in its stable-input mode, in which zstd reads
//! the caller's buffer in place. [`Compressor`] does the same over a buffer
//! of the whole input's size that it owns: an anonymous mapping that costs
//! nothing until written, filled as pieces arrive, whose pages are handed
//! back once they lie further back than zstd's window can reach. Resident
//! memory is then about one window (128 MiB with LLVM's parameters) plus
//! zstd's tables, whatever the input's size.
//!
//! zstd-safe refuses the stable-input mode (its borrowed slices cannot
//! promise to outlive the frame), so this crate calls `zstd_sys` directly;
//! all of that lives in one private module, behind the safe API here.
//!
//! One caveat, for zstd 1.5.7 and later ([`has_pre_splitter`]): those
//! versions may cut a full block short depending on its content, and a
//! one-shot call then starts the next block at the cut while a stream
//! starts it at the next block boundary; no streaming mode reproduces the
//! one-shot frame then. Callers that need the one-shot bytes must compress
//! in one shot with such a library.

#![deny(unsafe_code)]

use std::fmt;
use std::io;

mod raw;

/// Largest zstd block: zstd never reads input before the start of the
/// block it compresses minus the window, and counts up to one block it has
/// not compressed yet as read.
const BLOCK_MAX: u64 = 1 << 17;

/// Pages are handed back in steps of this many bytes: a multiple of every
/// page size in use (so each step starts and ends on a page boundary
/// whatever the host's page size), and few system calls.
const RELEASE_GRANULE: u64 = 1 << 20;

/// Size of the buffer compressed bytes pass through on their way out.
const OUT_CHUNK: usize = 1 << 20;

/// Whether the linked libzstd may split blocks before compressing them
/// (zstd 1.5.7 and later), which makes any streamed frame differ from the
/// one-shot frame as soon as it splits (see the crate documentation).
pub fn has_pre_splitter() -> bool {
    raw::version() >= 10507
}

/// Compression parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// zstd compression level (zstd clamps it to its range).
    pub level: i32,
    /// Window log to impose instead of the one long-distance matching
    /// selects (27); LLVM sets none. Tests use small windows to see many
    /// windows pass on little data.
    pub window_log: Option<u32>,
    /// Turn off the block pre-splitter of zstd 1.5.7 and later (no effect
    /// on older versions); LLVM leaves it on. Tests use it to compare
    /// streamed and one-shot frames with any zstd.
    pub no_pre_split: bool,
}

impl Params {
    /// What LLVM's `zstd::compress` sets: long-distance matching and
    /// `level`, nothing else.
    pub fn llvm(level: i32) -> Params {
        Params {
            level,
            window_log: None,
            no_pre_split: false,
        }
    }
}

/// What can go wrong.
#[derive(Debug)]
pub enum Error {
    /// zstd reported an error; its name for it.
    Zstd(&'static str),
    /// No memory for a compression context.
    OutOfMemory,
    /// The input buffer could not be mapped.
    Buffer(io::Error),
    /// More bytes were pushed than announced.
    TooLong {
        /// Bytes announced to [`Compressor::new`].
        announced: u64,
        /// Bytes pushed, counting the refused piece.
        pushed: u64,
    },
    /// [`Compressor::finish`] came before all announced bytes.
    TooShort {
        /// Bytes announced to [`Compressor::new`].
        announced: u64,
        /// Bytes pushed.
        pushed: u64,
    },
    /// The sink failed.
    Sink(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Zstd(name) => f.write_str(name),
            Error::OutOfMemory => f.write_str("out of memory for a zstd context"),
            Error::Buffer(e) => write!(f, "cannot map the input buffer: {e}"),
            Error::TooLong { announced, pushed } => {
                write!(f, "{pushed} bytes pushed, {announced} announced")
            }
            Error::TooShort { announced, pushed } => {
                write!(f, "only {pushed} bytes pushed, {announced} announced")
            }
            Error::Sink(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Buffer(e) | Error::Sink(e) => Some(e),
            _ => None,
        }
    }
}

/// How far back zstd may read, learnt from the frame header it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Window {
    /// The header is not complete yet.
    Unknown,
    /// zstd reads at most this many bytes before the block it compresses.
    Bytes(u64),
    /// The window covers the whole input (or the header was not
    /// understood): nothing is ever released.
    Whole,
}

/// Reads the window from the start of a frame: `None` while too short.
fn window_of(head: &[u8]) -> Option<Window> {
    const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    let descriptor = head.get(..4).map(|m| m == MAGIC)?;
    if !descriptor {
        return Some(Window::Whole);
    }
    let fhd = *head.get(4)?;
    if fhd & 0x20 != 0 {
        // Single segment: the window is the content size.
        return Some(Window::Whole);
    }
    let wd = *head.get(5)?;
    let base = 1u64 << (10 + (wd >> 3));
    Some(Window::Bytes(base + (base >> 3) * u64::from(wd & 7)))
}

/// Compresses an input of a size announced up front into one zstd frame
/// (content size recorded, no checksum), byte-identical to `ZSTD_compress2`
/// with the same parameters given the whole input at once (but see
/// [`has_pre_splitter`]).
///
/// Push the input with [`Compressor::push`], then call
/// [`Compressor::finish`]; compressed bytes go to the sink given to each
/// call as they are produced. The frame ends in the push that brings the
/// last byte.
pub struct Compressor {
    stream: raw::Stream,
    announced: u64,
    pushed: u64,
    out: Vec<u8>,
    /// The first bytes of the frame, until the window is known.
    head: Vec<u8>,
    window: Window,
}

impl Compressor {
    /// A compressor for exactly `len` bytes with LLVM's parameters at
    /// `level`.
    pub fn new(len: u64, level: i32) -> Result<Compressor, Error> {
        Self::with_params(len, &Params::llvm(level))
    }

    /// A compressor for exactly `len` bytes with `params`.
    pub fn with_params(len: u64, params: &Params) -> Result<Compressor, Error> {
        let size = usize::try_from(len).map_err(|_| Error::OutOfMemory)?;
        let mut out = Vec::new();
        out.try_reserve_exact(OUT_CHUNK)
            .map_err(|_| Error::OutOfMemory)?;
        out.resize(OUT_CHUNK, 0);
        Ok(Compressor {
            stream: raw::Stream::new(size, params)?,
            announced: len,
            pushed: 0,
            out,
            head: Vec::new(),
            window: Window::Unknown,
        })
    }

    /// Takes `bytes` (all of them, or none if they would go past the
    /// announced size) and compresses every whole block now available,
    /// passing compressed bytes to `sink`. The push that brings the last
    /// byte ends the frame.
    pub fn push(
        &mut self,
        bytes: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<(), Error> {
        if bytes.len() > self.stream.room() {
            return Err(Error::TooLong {
                announced: self.announced,
                pushed: self.pushed.saturating_add(bytes.len() as u64),
            });
        }
        if bytes.is_empty() {
            return Ok(());
        }
        self.stream.append(bytes);
        self.pushed += bytes.len() as u64;
        self.run(self.stream.room() == 0, sink)
    }

    /// Ends the frame if no push did (an empty input), after checking that
    /// every announced byte came.
    pub fn finish(mut self, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> Result<(), Error> {
        if self.stream.room() != 0 {
            return Err(Error::TooShort {
                announced: self.announced,
                pushed: self.pushed,
            });
        }
        self.run(true, sink)
    }

    /// Compresses, watching the output for the frame header, then hands
    /// back whatever zstd can no longer read.
    fn run(
        &mut self,
        end: bool,
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<(), Error> {
        let Compressor {
            stream,
            out,
            head,
            window,
            ..
        } = self;
        stream.compress(end, out, &mut |bytes: &[u8]| {
            if *window == Window::Unknown {
                head.extend_from_slice(&bytes[..bytes.len().min(6)]);
                if let Some(w) = window_of(head) {
                    *window = w;
                }
            }
            sink(bytes)
        })?;
        if let Window::Bytes(w) = self.window {
            if !self.stream.ended() {
                let safe = (self.stream.pos() as u64).saturating_sub(w + BLOCK_MAX);
                let upto = safe - safe % RELEASE_GRANULE;
                self.stream.release(upto as usize);
            }
        }
        Ok(())
    }

    /// The window zstd declared in the frame header, once it has written
    /// it: `Some(None)` when the window spans the whole input.
    pub fn window(&self) -> Option<Option<u64>> {
        match self.window {
            Window::Unknown => None,
            Window::Bytes(w) => Some(Some(w)),
            Window::Whole => Some(None),
        }
    }

    /// Bytes of the input whose memory has been handed back so far.
    pub fn released(&self) -> u64 {
        self.stream.released() as u64
    }
}

#[cfg(test)]
mod tests;
