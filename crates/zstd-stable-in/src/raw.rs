//! The calls into libzstd and the buffer it reads from: the only module of
//! this crate with `unsafe`.
//!
//! zstd-safe offers no way to turn the stable-input mode on (it cannot know
//! that a borrowed slice outlives the frame), so the context is driven
//! through the raw `zstd_sys` functions here. [`Stream`] owns both the
//! context and the input buffer, which is what makes the mode sound: the
//! buffer is an anonymous mapping allocated once at its final size, so its
//! address never changes, the bytes zstd has been given are never written
//! again, and it is unmapped only after the context is freed.

#![allow(unsafe_code)]

use std::ffi::c_int;
use std::ptr::NonNull;

use memmap2::{MmapMut, MmapOptions, UncheckedAdvice};
use zstd::zstd_safe::{self, zstd_sys as sys};

use crate::{Error, Params};

/// Version of the linked libzstd, as `major * 10000 + minor * 100 + patch`.
pub(crate) fn version() -> u32 {
    // SAFETY: a pure function of the library, no arguments.
    unsafe { sys::ZSTD_versionNumber() }
}

/// Turns a zstd return code into `Ok(value)` or the error zstd names.
fn check(code: usize) -> Result<usize, Error> {
    // SAFETY: a pure function of its integer argument.
    if unsafe { sys::ZSTD_isError(code) } != 0 {
        Err(Error::Zstd(zstd_safe::get_error_name(code)))
    } else {
        Ok(code)
    }
}

/// An owned compression context, freed on drop.
struct Cctx(NonNull<sys::ZSTD_CCtx>);

impl Cctx {
    fn new() -> Result<Cctx, Error> {
        // SAFETY: no arguments; a null result (no memory) is handled.
        let ptr = unsafe { sys::ZSTD_createCCtx() };
        NonNull::new(ptr).map(Cctx).ok_or(Error::OutOfMemory)
    }

    fn set(&mut self, param: sys::ZSTD_cParameter, value: c_int) -> Result<(), Error> {
        // SAFETY: the context is live (owned by self); zstd checks the
        // parameter and value and reports bad ones as errors.
        check(unsafe { sys::ZSTD_CCtx_setParameter(self.0.as_ptr(), param, value) }).map(drop)
    }

    /// The parameters of LLVM's `zstd::compress` (long-distance matching,
    /// then the level, in that order), plus what `params` adds for tests.
    fn configure(&mut self, params: &Params) -> Result<(), Error> {
        use sys::ZSTD_cParameter::*;
        self.set(ZSTD_c_enableLongDistanceMatching, 1)?;
        self.set(ZSTD_c_compressionLevel, params.level)?;
        if let Some(log) = params.window_log {
            // Out-of-range logs become a value zstd rejects.
            self.set(ZSTD_c_windowLog, c_int::try_from(log).unwrap_or(c_int::MAX))?;
        }
        if params.no_pre_split && crate::has_pre_splitter() {
            // ZSTD_c_blockSplitterLevel (zstd >= 1.5.7); 1 = never split.
            self.set(ZSTD_c_experimentalParam20, 1)?;
        }
        Ok(())
    }
}

impl Drop for Cctx {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCCtx and is freed once,
        // here; nothing uses it afterwards.
        unsafe {
            sys::ZSTD_freeCCtx(self.0.as_ptr());
        }
    }
}

/// A zstd context compressing, in stable-input mode, the bytes gathered in
/// the buffer it owns.
pub(crate) struct Stream {
    // Field order matters: fields drop in declaration order, so the context
    // is freed before the buffer it reads from is unmapped.
    cctx: Cctx,
    /// The whole input, gathered at its final address: mapped once at the
    /// announced size and never remapped.
    buf: MmapMut,
    /// Bytes copied into `buf` so far (the `size` zstd is shown).
    filled: usize,
    /// Where zstd left `pos` (it counts a trailing partial block as read).
    pos: usize,
    /// Bytes at the start of `buf` whose pages were handed back.
    released: usize,
    /// The frame is complete.
    ended: bool,
}

impl Stream {
    /// A context set up with `params`, the stable-input mode and `len`
    /// pledged, with a buffer of `len` bytes (only virtual until written).
    pub(crate) fn new(len: usize, params: &Params) -> Result<Stream, Error> {
        // No swap reserved: only about one window of it is ever resident,
        // so an input larger than memory and swap must not be refused.
        let buf = MmapOptions::new()
            .len(len)
            .no_reserve_swap()
            .map_anon()
            .map_err(Error::Buffer)?;
        let mut cctx = Cctx::new()?;
        cctx.configure(params)?;
        // ZSTD_c_stableInBuffer: zstd reads the input where it lies.
        cctx.set(sys::ZSTD_cParameter::ZSTD_c_experimentalParam9, 1)?;
        // SAFETY: the context is live.
        check(unsafe { sys::ZSTD_CCtx_setPledgedSrcSize(cctx.0.as_ptr(), len as u64) })?;
        Ok(Stream {
            cctx,
            buf,
            filled: 0,
            pos: 0,
            released: 0,
            ended: false,
        })
    }

    /// Bytes still to come.
    pub(crate) fn room(&self) -> usize {
        self.buf.len() - self.filled
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn released(&self) -> usize {
        self.released
    }

    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Copies `bytes` after what the buffer holds; the caller checked that
    /// they fit ([`Stream::room`]). Nothing zstd was given is overwritten.
    pub(crate) fn append(&mut self, bytes: &[u8]) {
        let end = self.filled + bytes.len();
        self.buf[self.filled..end].copy_from_slice(bytes);
        self.filled = end;
    }

    /// Lets zstd compress what the buffer holds (with `end`, ending the
    /// frame, which needs all bytes there), handing each piece of output to
    /// `sink` through `out`. Without `end`, zstd compresses whole blocks
    /// only and counts the rest as read, to compress it in a later call.
    pub(crate) fn compress(
        &mut self,
        end: bool,
        out: &mut [u8],
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        if self.ended {
            return Ok(());
        }
        let directive = if end {
            sys::ZSTD_EndDirective::ZSTD_e_end
        } else {
            sys::ZSTD_EndDirective::ZSTD_e_continue
        };
        loop {
            let mut input = sys::ZSTD_inBuffer {
                src: self.buf.as_ptr().cast(),
                size: self.filled,
                pos: self.pos,
            };
            let mut output = sys::ZSTD_outBuffer {
                dst: out.as_mut_ptr().cast(),
                size: out.len(),
                pos: 0,
            };
            // SAFETY: the context is live. `input` describes the first
            // `filled` bytes of `buf`, initialised memory at the same
            // address in every call (the mapping never moves while `self`
            // lives, and the context is freed before it is unmapped), whose
            // start zstd has read is never written again (`append` only
            // writes after `filled`; `release` only drops pages zstd can no
            // longer reference, see there); `pos` is where zstd left it, as
            // the stable mode requires. `output` is `out`, exclusively
            // borrowed for the call. zstd checks the stable-buffer
            // conditions itself and reports a violation as an error.
            let code = unsafe {
                sys::ZSTD_compressStream2(self.cctx.0.as_ptr(), &mut output, &mut input, directive)
            };
            let remaining = check(code)?;
            self.pos = input.pos;
            if output.pos > 0 {
                sink(&out[..output.pos]).map_err(Error::Sink)?;
            }
            if end {
                if remaining == 0 {
                    self.ended = true;
                    return Ok(());
                }
            } else if input.pos == input.size {
                return Ok(());
            }
        }
    }

    /// Hands back the pages of the first `upto` bytes of the buffer (a
    /// multiple of the caller's release granule, which is a multiple of the
    /// page size). The caller guarantees zstd will not read them again.
    pub(crate) fn release(&mut self, upto: usize) {
        let upto = upto.min(self.pos);
        if upto <= self.released {
            return;
        }
        // SAFETY: the range lies inside the mapping (upto <= pos <= filled
        // <= len) and starts and ends on page boundaries (the mapping is
        // page-aligned, both ends are multiples of the granule), so the
        // kernel drops exactly these pages. No Rust reference to them is
        // alive (self is borrowed mutably and `append` writes only after
        // `filled`). The mapping is private and anonymous: the pages read
        // back as zeros afterwards, so even a read by zstd would see
        // defined memory; zstd makes none, since the caller releases only
        // bytes further back than zstd's window from the next block.
        let done = unsafe {
            self.buf.unchecked_advise_range(
                UncheckedAdvice::DontNeed,
                self.released,
                upto - self.released,
            )
        };
        // Releasing only saves memory: should the kernel refuse, the pages
        // stay and nothing else changes.
        if done.is_ok() {
            self.released = upto;
        }
    }
}

/// One-shot `ZSTD_compress2` with the same parameters, as the reference the
/// streamed frames are compared with.
#[cfg(test)]
pub(crate) fn one_shot(input: &[u8], params: &Params) -> Result<Vec<u8>, Error> {
    let mut cctx = Cctx::new()?;
    cctx.configure(params)?;
    // SAFETY: a pure function of its integer argument.
    let bound = unsafe { sys::ZSTD_compressBound(input.len()) };
    let mut out: Vec<u8> = Vec::with_capacity(bound);
    // SAFETY: the context is live; `out` has `bound` bytes of capacity and
    // `input` is a live slice, both for the whole call.
    let written = check(unsafe {
        sys::ZSTD_compress2(
            cctx.0.as_ptr(),
            out.as_mut_ptr().cast(),
            bound,
            input.as_ptr().cast(),
            input.len(),
        )
    })?;
    // SAFETY: zstd initialised the first `written` bytes (<= bound).
    unsafe { out.set_len(written) };
    Ok(out)
}
