//! The crate's one bounded zstd decoder, for every zstd stream whose
//! decoded size a file records (NVIDIA fat binary entries, offload binary
//! bodies) or whose first bytes are enough (naming a payload).
//!
//! It decodes in pieces of [`PIECE`] bytes, hands each to the caller, and
//! stops with an error as soon as the output would pass the caller's limit:
//! a recorded size is never allocated up front, and a stream that decodes
//! to more than it claims is caught after at most one piece. Its memory is
//! one piece plus zstd's window (at most 2^27 bytes: zstd's default limit,
//! which refuses frames that ask for more).
//!
//! Heads are decoded natively ([`head`]'s submodule, RFC 8878): libzstd
//! hands out no byte of a block before it has decoded the whole block (up
//! to 128 KiB), so naming a library of small compressed entries from their
//! first few hundred bytes would decode nearly all of them. The native
//! decoder decodes only the blocks, literals and sequences the head needs,
//! and declines (the caller then asks libzstd, exactly as before) anything
//! it does not handle or finds malformed: its answers are libzstd's bytes
//! or no answer, and libzstd's error texts stay the only ones. Everything
//! else (whole streams, checks to the end, extraction) is libzstd's: the
//! native decoder notices damage only in what it reads.
//!
//! (The compressed offload bundle codec, `ccob`, keeps its own calls into
//! zstd: it reproduces LLVM's one-shot decoding and its error texts.)

use std::io::Read;

#[cfg(feature = "nvidia")]
mod native;

/// The first `n` decoded bytes of the zstd frames in `src`, decoded
/// natively as far as they need, for a stream recorded to decode to
/// `recorded` bytes; `None` when the native decoder declines (libzstd then
/// answers, with its bytes or its error) or when the frame records another
/// size or the head would pass `recorded`.
#[cfg(feature = "nvidia")]
pub(crate) fn native_head(src: &[u8], recorded: u64, n: usize) -> Option<Vec<u8>> {
    if n as u64 > recorded || content_size(src).is_some_and(|c| c != recorded) {
        return None;
    }
    native::head(src, n)
}

/// Output handed to the caller at a time.
pub(crate) const PIECE: usize = 64 << 10;

/// Why decoding stopped.
#[derive(Debug)]
pub(crate) enum Stop<E> {
    /// The output would pass the limit.
    Overrun,
    /// zstd's own error text (a damaged or cut frame).
    Corrupt(String),
    /// The caller's error, from its sink.
    Sink(E),
}

/// Decodes the zstd frames of `src`, handing the output to `sink` in
/// pieces; `sink` returns `Ok(false)` to stop early. Fails with
/// [`Stop::Overrun`] when the output would pass `limit` bytes. Returns the
/// output length (so far, when stopped early).
pub(crate) fn decode<E>(
    src: &[u8],
    limit: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<bool, E>,
) -> Result<u64, Stop<E>> {
    // A context made once per thread and lent to each stream: making one
    // (and its window) per stream costs more than decoding the first block
    // of a small entry, and a walk names thousands of them.
    let mut context = CONTEXT
        .with(|c| c.take())
        .unwrap_or_else(zstd::zstd_safe::DCtx::create);
    let result = decode_with(&mut context, src, limit, sink);
    CONTEXT.with(|c| c.set(Some(context)));
    result
}

thread_local! {
    /// This thread's decoding context, between two [`decode`] calls (taken
    /// while one runs, so that a nested call makes its own).
    static CONTEXT: std::cell::Cell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::Cell::new(None) };
}

/// [`decode`] with a given context (its session is reset first, so what a
/// previous stream left in it does not matter).
fn decode_with<E>(
    context: &mut zstd::zstd_safe::DCtx<'static>,
    src: &[u8],
    limit: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<bool, E>,
) -> Result<u64, Stop<E>> {
    let mut decoder = zstd::stream::read::Decoder::with_context(src, context);
    let mut piece = vec![0u8; PIECE];
    let mut total = 0u64;
    loop {
        let n = match decoder.read(&mut piece) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stop::Corrupt(e.to_string())),
        };
        if total + n as u64 > limit {
            return Err(Stop::Overrun);
        }
        total += n as u64;
        if !sink(&piece[..n]).map_err(Stop::Sink)? {
            return Ok(total);
        }
    }
}

/// All of `src` decoded into `out` in one call, straight into its memory
/// (no window buffer, no pieces), for a caller that holds the whole output
/// anyway. The output must be exactly `out.len()` bytes; zstd writes no
/// further than that, so a stream that produces more fails there.
#[cfg(feature = "inspect")]
pub(crate) fn decode_whole(src: &[u8], out: &mut [u8]) -> Result<(), String> {
    let recorded = out.len();
    // The thread's context, as [`decode`] lends it: a new one per entry
    // (its tables and workspace allocated and cleared) cost a tenth of the
    // time of profiling a library of small entries. The one-shot call
    // starts a new frame whatever the context held.
    let mut context = CONTEXT
        .with(|c| c.take())
        .unwrap_or_else(zstd::zstd_safe::DCtx::create);
    let result = context.decompress(out, src);
    CONTEXT.with(|c| c.set(Some(context)));
    match result {
        Ok(n) if n == recorded => Ok(()),
        Ok(n) => Err(format!("decodes to {n} bytes, not the {recorded} recorded")),
        Err(code) => Err(format!("zstd: {}", zstd::zstd_safe::get_error_name(code))),
    }
}

/// The content size a zstd frame header records, if it records one.
#[cfg(feature = "nvidia")]
pub(crate) fn content_size(src: &[u8]) -> Option<u64> {
    zstd::zstd_safe::get_frame_content_size(src).ok().flatten()
}

/// The first `n` decoded bytes (fewer if the content is shorter) of the
/// zstd frames in `src`; `None` if they do not decode.
#[cfg(feature = "inspect")]
pub(crate) fn head(src: &[u8], n: usize) -> Option<Vec<u8>> {
    if let Some(h) = native::head(src, n) {
        return Some(h);
    }
    libzstd_head(src, n)
}

/// [`head`] by libzstd alone (also what the native decoder is tested
/// against).
#[cfg(feature = "inspect")]
pub(crate) fn libzstd_head(src: &[u8], n: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(n.min(PIECE));
    let result = decode::<()>(src, u64::MAX, &mut |piece| {
        let take = piece.len().min(n - out.len());
        out.extend_from_slice(&piece[..take]);
        Ok(out.len() < n)
    });
    result.ok().map(|_| out)
}

/// All of `src` decoded, which must be exactly `expected` bytes long:
/// `Err` with zstd's text, or a sentence saying the size is not the one
/// recorded.
#[cfg(all(test, feature = "inspect"))]
pub(crate) fn decode_exact(src: &[u8], expected: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match decode::<()>(src, expected, &mut |piece| {
        out.extend_from_slice(piece);
        Ok(true)
    }) {
        Ok(n) if n == expected => Ok(out),
        Ok(n) => Err(format!("decoded {n} bytes, {expected} recorded")),
        Err(Stop::Overrun) => Err(format!(
            "decodes to more than the {expected} bytes recorded"
        )),
        Err(Stop::Corrupt(e)) => Err(e),
        Err(Stop::Sink(())) => Err("stopped".to_owned()),
    }
}

#[cfg(all(test, feature = "inspect"))]
mod tests {
    use super::*;

    #[test]
    fn pieces_limits_and_heads() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 97) as u8).collect();
        let frame = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(content_size(&frame), Some(data.len() as u64));
        assert_eq!(decode_exact(&frame, data.len() as u64).unwrap(), data);
        assert!(decode_exact(&frame, data.len() as u64 - 1)
            .unwrap_err()
            .contains("more than"));
        assert!(decode_exact(&frame, data.len() as u64 + 1)
            .unwrap_err()
            .contains("decoded 300000 bytes"));
        assert_eq!(head(&frame, 10).unwrap(), &data[..10]);
        assert_eq!(head(&frame, 1 << 20).unwrap(), data);
        // Cut frames and garbage are errors, never panics.
        for cut in [0, 1, 4, 10, frame.len() / 2, frame.len() - 1] {
            assert!(
                decode_exact(&frame[..cut], data.len() as u64).is_err(),
                "{cut}"
            );
        }
        assert!(decode_exact(b"\x28\xb5\x2f\xfdgarbage", 10).is_err());
    }
}
