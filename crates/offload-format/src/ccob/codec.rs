//! Compression and decompression of CCOB payloads.
//!
//! Memory: decompression writes straight into one buffer sized by the
//! header's uncompressed size, and only after that size has been checked
//! against what the payload could possibly expand to; compression appends
//! the payload to a buffer that already holds the header, so no second copy
//! of either side is made.

use std::io::Cursor;
use std::time::{Duration, Instant};

use flate2::{Compress, Compression, FlushCompress, Status};
use zstd::zstd_safe;

use super::error::CcobError;
use super::fields::{Method, V2Field, Version};
use super::hasher::{hash_alongside, truncate};
use super::header::Header;
use md5::{Digest, Md5};

/// Largest expansion a zstd payload can give: a 4-byte RLE block (3-byte
/// block header + 1 byte) stands for at most one 128 KiB block.
pub(super) const ZSTD_MAX_RATIO: u64 = 128 * 1024 / 4;
/// Largest expansion deflate can give (zlib's documented 1032:1 limit).
const ZLIB_MAX_RATIO: u64 = 1032;

/// The hash CCOB headers carry: the first 8 bytes of the MD5 digest of
/// `data`, read as a little-endian integer.
pub fn truncated_md5(data: &[u8]) -> u64 {
    let mut md5 = Md5::new();
    md5.update(data);
    truncate(md5)
}

/// How to compress: what the bundler's `-compress`, `--compression-level`
/// and the `OFFLOAD_BUNDLER_*` / `COMPRESSED_BUNDLE_FORMAT_VERSION`
/// environment variables decide. The front-end fills it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressOptions {
    /// Compression method; LLVM 22 as packaged always uses zstd.
    pub method: Method,
    /// Level as given by the user; `None` means the method's default
    /// (`Method::default_level`). zstd clamps out-of-range levels itself
    /// (0 means its default, 3); zlib accepts -1..=9.
    pub level: Option<i32>,
    /// Header version to write: 2 or 3 (LLVM 22's default is 3).
    pub version: Version,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            method: Method::Zstd,
            level: None,
            version: Version::V3,
        }
    }
}

impl CompressOptions {
    /// The level that will be used (and that the verbose report prints).
    pub fn effective_level(&self) -> i32 {
        self.level.unwrap_or_else(|| self.method.default_level())
    }
}

/// Figures of one compression, for the `-verbose` report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressInfo {
    /// Header version written.
    pub version: Version,
    /// Method used.
    pub method: Method,
    /// Level as given (not clamped by zstd).
    pub level: i32,
    /// Size of the input bundle.
    pub uncompressed_len: u64,
    /// Size of the compressed payload.
    pub payload_len: u64,
    /// Header plus payload.
    pub total_len: u64,
    /// Truncated MD5 stored in the header.
    pub hash: u64,
    /// Wall-clock time spent in the codec call alone.
    pub codec_time: Duration,
}

/// A complete compressed bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compressed {
    /// Header followed by the payload: the bytes to write out.
    pub bytes: Vec<u8>,
    /// Figures for the verbose report.
    pub info: CompressInfo,
}

/// Compress a serialized bundle into a CCOB exactly as LLVM 22's bundler
/// does: one zstd frame from a single `ZSTD_compress2` call with
/// long-distance matching on (content size recorded, no checksum), or one
/// zlib `compress2` stream; then the header of the requested version.
///
/// The bytes are identical to 22's when the same libzstd / zlib versions are
/// linked (Cargo feature `system-compression` on a Debian 12 host); other
/// builds produce valid CCOBs that decompress to the same data.
pub fn compress(input: &[u8], options: &CompressOptions) -> Result<Compressed, CcobError> {
    let version = options.version;
    if version == Version::V1 {
        return Err(CcobError::UnsupportedWriteVersion(version));
    }
    let level = options.effective_level();
    let uncompressed_len = input.len() as u64;
    // 22 compresses first and checks afterwards; checking the input size
    // first gives the same outcome without the wasted work.
    if version == Version::V2 && u32::try_from(uncompressed_len).is_err() {
        return Err(CcobError::Version2Limit(V2Field::UncompressedSize));
    }
    let hash = truncated_md5(input);
    let header_len = version.header_len();

    let mut out = vec![0; header_len];
    let codec_time = compress_payload(input, options.method, level, &mut out)?;
    let payload_len = out.len() - header_len;

    let total_len = (header_len as u64).saturating_add(payload_len as u64);
    let header = Header {
        version,
        method: options.method,
        total_size: Some(total_len),
        uncompressed_size: uncompressed_len,
        hash,
    };
    let header_bytes = header.to_bytes()?;
    out[..header_len].copy_from_slice(&header_bytes);
    Ok(Compressed {
        bytes: out,
        info: CompressInfo {
            version,
            method: options.method,
            level: options.level.unwrap_or(level),
            uncompressed_len,
            payload_len: payload_len as u64,
            total_len,
            hash,
            codec_time,
        },
    })
}

/// Appends the compressed form of `input` to `out` (a zstd frame or a zlib
/// stream, as LLVM's one-shot calls make them), reserving room for the
/// worst case first. Returns the time spent in the codec.
pub(super) fn compress_payload(
    input: &[u8],
    method: Method,
    level: i32,
    out: &mut Vec<u8>,
) -> Result<Duration, CcobError> {
    let (time, _) = match method {
        Method::Zstd => {
            reserve(out, zstd_safe::compress_bound(input.len()))?;
            zstd_compress(input, level, out)?
        }
        Method::Zlib => {
            let level = zlib_level(level)?;
            reserve(out, zlib_bound(input.len()))?;
            zlib_compress(input, level, out)?
        }
    };
    Ok(time)
}

/// Makes room for `size` more bytes.
fn reserve(buf: &mut Vec<u8>, size: usize) -> Result<(), CcobError> {
    buf.try_reserve_exact(size)
        .map_err(|_| CcobError::OutOfMemory { size: size as u64 })
}

/// zlib's `compressBound` for the default window and memory level.
fn zlib_bound(len: usize) -> usize {
    len.saturating_add(len >> 12)
        .saturating_add(len >> 14)
        .saturating_add(len >> 25)
        .saturating_add(13)
}

pub(super) fn zlib_level(level: i32) -> Result<u32, CcobError> {
    match level {
        // zlib's Z_DEFAULT_COMPRESSION stands for level 6.
        -1 => Ok(6),
        0..=9 => Ok(level as u32),
        _ => Err(CcobError::InvalidLevel {
            method: Method::Zlib,
            level,
        }),
    }
}

pub(super) fn zstd_error(code: usize) -> CcobError {
    zstd_error_named(zstd_safe::get_error_name(code))
}

/// A zstd failure, by the name zstd gives it.
pub(super) fn zstd_error_named(name: &str) -> CcobError {
    CcobError::Codec {
        method: Method::Zstd,
        message: name.to_string(),
    }
}

/// Sets the parameters LLVM's `zstd::compress` sets, in the same order:
/// long-distance matching on, then the level.
pub(super) fn set_llvm_zstd_parameters(
    cctx: &mut zstd_safe::CCtx<'_>,
    level: i32,
) -> Result<(), CcobError> {
    cctx.set_parameter(zstd_safe::CParameter::EnableLongDistanceMatching(true))
        .map_err(zstd_error)?;
    cctx.set_parameter(zstd_safe::CParameter::CompressionLevel(level))
        .map_err(zstd_error)?;
    Ok(())
}

/// Append one zstd frame to `out` (which holds the header so far).
fn zstd_compress(
    input: &[u8],
    level: i32,
    out: &mut Vec<u8>,
) -> Result<(Duration, usize), CcobError> {
    let start_len = out.len();
    let mut cctx = zstd_safe::CCtx::try_create().ok_or(CcobError::OutOfMemory {
        size: input.len() as u64,
    })?;
    set_llvm_zstd_parameters(&mut cctx, level)?;
    let started = Instant::now();
    let mut cursor = Cursor::new(&mut *out);
    cursor.set_position(start_len as u64);
    let written = cctx.compress2(&mut cursor, input).map_err(zstd_error)?;
    let elapsed = started.elapsed();
    debug_assert_eq!(out.len(), start_len + written);
    Ok((elapsed, written))
}

/// Append one zlib stream to `out`, as zlib's `compress2` writes it.
fn zlib_compress(
    input: &[u8],
    level: u32,
    out: &mut Vec<u8>,
) -> Result<(Duration, usize), CcobError> {
    let start_len = out.len();
    let started = Instant::now();
    let mut deflate = Compress::new(Compression::new(level), true);
    loop {
        let consumed = usize::try_from(deflate.total_in()).unwrap_or(usize::MAX);
        let rest = input.get(consumed..).unwrap_or(&[]);
        if out.len() == out.capacity() {
            // Only reached if the bound was too small; grow and go on.
            reserve(out, out.capacity().max(64))?;
        }
        let status = deflate
            .compress_vec(rest, out, FlushCompress::Finish)
            .map_err(|e| CcobError::Codec {
                method: Method::Zlib,
                message: e.to_string(),
            })?;
        if status == Status::StreamEnd {
            break;
        }
    }
    Ok((started.elapsed(), out.len() - start_len))
}

/// Figures of one decompression, for [`super::report::format_decompress_report`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecompressReport {
    /// Header version.
    pub version: Version,
    /// Method from the header.
    pub method: Method,
    /// Total size from the header (absent in v1, which prints no line).
    pub total_size: Option<u64>,
    /// Size of the compressed payload.
    pub payload_len: u64,
    /// Uncompressed size from the header.
    pub uncompressed_size: u64,
    /// Hash from the header.
    pub stored_hash: u64,
    /// Hash of the decompressed data.
    pub computed_hash: u64,
    /// Wall-clock time of the codec call.
    pub codec_time: Duration,
}

/// A decompressed bundle with the figures the verbose report needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decompressed {
    /// The header that was read.
    pub header: Header,
    /// The uncompressed bundle.
    pub data: Vec<u8>,
    /// Bytes of the input this CCOB occupies (header and payload).
    pub ccob_len: usize,
    /// Size of the compressed payload.
    pub payload_len: usize,
    /// Truncated MD5 of `data`.
    pub computed_hash: u64,
    /// Wall-clock time spent in the codec call alone.
    pub codec_time: Duration,
}

impl Decompressed {
    /// Whether the stored hash matches the decompressed data.
    pub fn hash_matches(&self) -> bool {
        self.header.hash == self.computed_hash
    }

    /// Fail with [`CcobError::HashMismatch`] unless the hashes match.
    pub fn verify(&self) -> Result<(), CcobError> {
        check_hash(&self.header, self.computed_hash)
    }

    /// The figures for [`super::report::format_decompress_report`].
    pub fn report(&self) -> DecompressReport {
        report_of(
            &self.header,
            self.payload_len,
            self.computed_hash,
            self.codec_time,
        )
    }
}

/// [`CcobError::HashMismatch`] unless `computed` is the header's hash.
pub(super) fn check_hash(header: &Header, computed: u64) -> Result<(), CcobError> {
    if header.hash == computed {
        Ok(())
    } else {
        Err(CcobError::HashMismatch {
            stored: header.hash,
            computed,
        })
    }
}

/// The verbose report's figures for a decompressed CCOB.
pub(super) fn report_of(
    header: &Header,
    payload_len: usize,
    computed_hash: u64,
    codec_time: Duration,
) -> DecompressReport {
    DecompressReport {
        version: header.version,
        method: header.method,
        total_size: header.total_size,
        payload_len: payload_len as u64,
        uncompressed_size: header.uncompressed_size,
        stored_hash: header.hash,
        computed_hash,
        codec_time,
    }
}

/// Decompress the CCOB at the start of `input` and verify its hash.
///
/// For v2/v3 only the recorded total size is read; bytes after it are left
/// to the caller (see [`super::segments`] for concatenations). A v1 CCOB runs
/// to the end of `input`.
pub fn decompress(input: &[u8]) -> Result<Decompressed, CcobError> {
    let out = decompress_unverified(input)?;
    out.verify()?;
    Ok(out)
}

/// Like [`decompress`] but without the hash check, so that a caller can print
/// the verbose report (which shows both hashes) before calling
/// [`Decompressed::verify`].
///
/// The produced size must equal the header's uncompressed size: the output
/// buffer is exactly that large, so a payload that expands further fails
/// like it does in LLVM, and one that expands less is an error here.
pub fn decompress_unverified(input: &[u8]) -> Result<Decompressed, CcobError> {
    decompress_unverified_with(input, None)
}

/// Copies the bytes of a slice of the input into a buffer of the same
/// length; see [`decompress_unverified_with`].
pub type Fetch<'a> = &'a mut FetchFn<'a>;

/// The function behind [`Fetch`].
pub type FetchFn<'f> = dyn FnMut(&[u8], &mut [u8]) -> std::io::Result<()> + 'f;

/// Like [`decompress_unverified`], with the compressed payload read through
/// `fetch` (when given), a step at a time: it is handed a slice of `input`
/// and a buffer as long, and fills the buffer with those bytes. A caller
/// whose input is a file mapping can read them with `pread`, so that the
/// payload never becomes resident. Should `fetch` fail, or decoding fail
/// for any reason, the payload is decoded again from `input` directly (so
/// errors are the same either way).
pub fn decompress_unverified_with(
    input: &[u8],
    fetch: Option<Fetch<'_>>,
) -> Result<Decompressed, CcobError> {
    let header = Header::parse(input)?;
    let payload = header.payload(input)?;
    let claimed = header.uncompressed_size;
    // The output buffer is the recorded size, but never more than the
    // payload could expand to, so a lying header cannot make us reserve more
    // than the data allows; only the bytes written are touched. One spare
    // byte shows whether the payload holds more than the header says (zlib's
    // `uncompress` uses the same trick when asked for zero bytes).
    let ratio = match header.method {
        Method::Zstd => ZSTD_MAX_RATIO,
        Method::Zlib => ZLIB_MAX_RATIO,
    };
    let possible = (payload.len() as u64).saturating_mul(ratio);
    let capacity = claimed.min(possible).saturating_add(1);
    let capacity_usize =
        usize::try_from(capacity).map_err(|_| CcobError::OutOfMemory { size: capacity })?;
    let mut data = Vec::new();
    data.try_reserve_exact(capacity_usize)
        .map_err(|_| CcobError::OutOfMemory { size: capacity })?;

    let limit = usize::try_from(claimed).unwrap_or(usize::MAX);
    let (codec_time, computed_hash) = match header.method {
        Method::Zstd => {
            // Decode in steps, hashing each step's output on the side; any
            // failure (or an unfinished frame) is decoded again in one shot,
            // which is what gives the error its exact text.
            let (streamed, hash) = hash_alongside(capacity_usize, |sink| {
                let started = Instant::now();
                let complete = zstd_decompress_streamed(payload, fetch, &mut data, sink);
                (complete, started.elapsed())
            });
            match streamed {
                (true, elapsed) if data.len() <= limit => (elapsed, hash),
                _ => {
                    data.clear();
                    let started = Instant::now();
                    zstd_decompress(payload, &mut data, limit)?;
                    (started.elapsed(), truncated_md5(&data))
                }
            }
        }
        Method::Zlib => {
            let started = Instant::now();
            zlib_decompress(payload, &mut data, limit)?;
            (started.elapsed(), truncated_md5(&data))
        }
    };
    if data.len() as u64 != claimed {
        return Err(CcobError::SizeMismatch {
            expected: claimed,
            actual: data.len() as u64,
        });
    }
    Ok(Decompressed {
        header,
        data,
        ccob_len: header.len() + payload.len(),
        payload_len: payload.len(),
        computed_hash,
        codec_time,
    })
}

/// Compressed bytes handed to the streaming decoder per step: small enough
/// that a step's output is still in cache when it is hashed.
pub(super) const DECODE_STEP: usize = 64 << 10;

/// Streaming zstd decoding of every frame in `payload` straight into the
/// spare capacity of the empty `out` (zstd's stable-output mode: no window
/// buffer of its own, no copy), passing each step's output to `sink`. With
/// `fetch`, each step's input is copied through it first.
///
/// Returns whether every frame decoded completely. Anything else (an error,
/// a truncated frame, output beyond the capacity) returns false: the caller
/// then decodes again in one shot, as LLVM does, so that errors read the
/// same whichever path found them.
fn zstd_decompress_streamed<'f>(
    payload: &[u8],
    fetch: Option<&mut FetchFn<'f>>,
    out: &mut Vec<u8>,
    sink: &mut dyn FnMut(&[u8]),
) -> bool {
    zstd_steps(payload, fetch, true, |dctx, input| {
        let before = out.len();
        let mut output = zstd_safe::OutBuffer::around_pos(&mut *out, before);
        let hint = dctx.decompress_stream(&mut output, input).ok()?;
        sink(&out[before..]);
        if input.pos() == 0 && out.len() == before {
            // No progress: the output is full.
            return None;
        }
        Some(hint == 0)
    })
}

/// Feeds `payload` to a zstd stream decoder in steps ([`payload_step`],
/// through `fetch` when given): `decode` decodes one step's input with the
/// decoder and says whether a frame ended with it, or `None` to give up.
/// True if the last step ended a frame. The decoder accepts any window, as
/// the one-shot and buffered decoders do (zstd sizes its window buffer by
/// the frame's content size when that is smaller, and only what is decoded
/// is ever touched); `stable_out` promises zstd that the output buffer
/// stays in place between calls.
pub(super) fn zstd_steps(
    payload: &[u8],
    mut fetch: Option<&mut FetchFn<'_>>,
    stable_out: bool,
    mut decode: impl FnMut(&mut zstd_safe::DCtx<'_>, &mut zstd_safe::InBuffer<'_>) -> Option<bool>,
) -> bool {
    let Some(mut dctx) = zstd_safe::DCtx::try_create() else {
        return false;
    };
    let stable = match stable_out {
        true => dctx.set_parameter(zstd_safe::DParameter::StableOutBuffer(true)),
        false => Ok(0),
    };
    let setup = stable.and_then(|_| dctx.set_parameter(zstd_safe::DParameter::WindowLogMax(31)));
    if setup.is_err() {
        return false;
    }
    let mut fetched = Vec::new();
    let mut read = 0;
    let mut frame_done = true;
    while read < payload.len() {
        let Some(step) = payload_step(payload, read, fetch.as_deref_mut(), &mut fetched) else {
            return false;
        };
        let mut input = zstd_safe::InBuffer::around(step);
        let Some(done) = decode(&mut dctx, &mut input) else {
            return false;
        };
        frame_done = done;
        read += input.pos();
    }
    frame_done
}

/// The next step of a payload decoded in steps: `payload[read..]`, at most
/// [`DECODE_STEP`] bytes, read through `fetch` into `buf` when given (`None`
/// if that fails).
pub(super) fn payload_step<'a>(
    payload: &'a [u8],
    read: usize,
    fetch: Option<&mut FetchFn<'_>>,
    buf: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    let end = read.saturating_add(DECODE_STEP).min(payload.len());
    let step = payload.get(read..end)?;
    let Some(fetch) = fetch else {
        return Some(step);
    };
    buf.resize(step.len(), 0);
    fetch(step, buf).ok()?;
    Some(&buf[..])
}

/// One-shot zstd decoding of every frame in `payload` into the spare
/// capacity of the empty `out`. More than `limit` bytes is reported the way
/// zstd reports it when the buffer is exactly `limit` bytes.
fn zstd_decompress(payload: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), CcobError> {
    let mut dctx = zstd_safe::DCtx::try_create().ok_or(CcobError::OutOfMemory {
        size: out.capacity() as u64,
    })?;
    if limit < out.capacity() {
        // LLVM decodes into a buffer of exactly the recorded size, and
        // zstd reports output beyond it at the block where it happens,
        // before whatever a later block would have shown (corrupt data,
        // a cut frame). Decode into exactly that many bytes.
        out.resize(limit, 0);
        let written = dctx.decompress(&mut out[..], payload).map_err(zstd_error)?;
        out.truncate(written);
        return Ok(());
    }
    dctx.decompress(out, payload).map_err(zstd_error)?;
    if out.len() > limit {
        return Err(CcobError::Codec {
            method: Method::Zstd,
            message: "Destination buffer is too small".to_string(),
        });
    }
    Ok(())
}

fn zlib_error(code: &str) -> CcobError {
    CcobError::Codec {
        method: Method::Zlib,
        message: format!("zlib error: {code}"),
    }
}

/// Decode one zlib stream from `payload` into the spare capacity of the
/// empty `out`, naming failures as zlib's `uncompress` does with a `limit`
/// byte buffer: more output than fits is `Z_BUF_ERROR` (`Z_DATA_ERROR`
/// when `limit` is 0), corrupt or
/// truncated input `Z_DATA_ERROR`. Bytes after the end of the stream are
/// ignored, as `uncompress` ignores them.
fn zlib_decompress(payload: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), CcobError> {
    use crate::inflate_bounded::{inflate_into, Stop, Wrap};
    let mut keep = |piece: &[u8]| {
        out.extend_from_slice(piece);
        true
    };
    match inflate_into(payload, Wrap::Zlib, limit as u64, &mut keep) {
        Ok(_) => Ok(()),
        // `uncompress` asked for zero bytes calls any output a data error;
        // otherwise it is a full buffer.
        Err(Stop::Overrun { .. }) => Err(zlib_error(if limit == 0 {
            "Z_DATA_ERROR"
        } else {
            "Z_BUF_ERROR"
        })),
        Err(Stop::Corrupt(_) | Stop::Cut | Stop::Stalled) => Err(zlib_error("Z_DATA_ERROR")),
        Err(Stop::Sink(never)) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(data: &[u8], level: i32) -> Vec<u8> {
        let mut out = Vec::new();
        compress_payload(data, Method::Zstd, level, &mut out).unwrap();
        out
    }

    fn streamed(payload: &[u8], capacity: usize) -> (bool, Vec<u8>, Vec<u8>) {
        let mut out = Vec::with_capacity(capacity);
        let mut seen = Vec::new();
        let complete =
            zstd_decompress_streamed(payload, None, &mut out, &mut |b| seen.extend_from_slice(b));
        (complete, out, seen)
    }

    fn sample(len: usize) -> Vec<u8> {
        (0..len as u64).map(|i| (i * i / 7 % 253) as u8).collect()
    }

    /// The streamed decoder gives what the one-shot one gives, in every
    /// case it accepts, and hands every byte to the sink exactly once.
    #[test]
    fn streamed_decoding_of_frames() {
        let a = sample(700_000);
        let b = sample(3000);
        let fa = frame(&a, 3);
        let fb = frame(&b, 1);
        // A skippable frame (magic 0x184D2A50, 4-byte length, content).
        let skippable = [
            &0x184D_2A50u32.to_le_bytes()[..],
            &3u32.to_le_bytes(),
            b"xyz",
        ]
        .concat();
        let cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (Vec::new(), Vec::new()),
            (fa.clone(), a.clone()),
            ([&fa[..], &fb].concat(), [&a[..], &b].concat()),
            ([&skippable[..], &fb, &skippable].concat(), b.clone()),
        ];
        for (i, (payload, expected)) in cases.iter().enumerate() {
            let (complete, out, seen) = streamed(payload, expected.len() + 1);
            assert!(complete, "case {i}");
            assert_eq!(&out, expected, "case {i}");
            assert_eq!(&seen, expected, "case {i}");
            let mut one_shot = Vec::with_capacity(expected.len() + 1);
            zstd_decompress(payload, &mut one_shot, expected.len()).unwrap();
            assert_eq!(&one_shot, expected, "case {i}");
        }
    }

    /// Whatever the streamed decoder cannot finish is left to the one-shot
    /// decoder: truncations, trailing bytes, too little room, garbage.
    #[test]
    fn streamed_decoding_gives_up_on_anything_odd() {
        let a = sample(300_000);
        let fa = frame(&a, 3);
        let odd: Vec<(Vec<u8>, usize)> = vec![
            (fa[..fa.len() - 1].to_vec(), a.len() + 1),
            (fa[..fa.len() / 2].to_vec(), a.len() + 1),
            ([&fa[..], b"\0\0"].concat(), a.len() + 1),
            ([&fa[..], &fa[..7]].concat(), a.len() + 1),
            (fa.clone(), a.len() - 1),
            (b"not zstd at all".to_vec(), 100),
        ];
        for (i, (payload, capacity)) in odd.iter().enumerate() {
            let (complete, out, _) = streamed(payload, *capacity);
            assert!(!complete, "case {i}");
            assert!(out.len() <= *capacity, "case {i}");
        }
    }

    /// The whole path, through both decoders: a payload that the streamed
    /// decoder rejects still fails with the one-shot decoder's message.
    #[test]
    fn errors_read_as_the_one_shot_decoder_words_them() {
        let a = sample(200_000);
        let c = super::compress(&a, &CompressOptions::default()).unwrap();
        let cut = &c.bytes[..c.bytes.len() - 3];
        let mut header = Header::parse(cut).unwrap();
        header.total_size = Some(cut.len() as u64);
        let mut f = header.to_bytes().unwrap();
        f.extend_from_slice(&cut[f.len()..]);
        let e = decompress(&f).unwrap_err();
        let mut one_shot = Vec::with_capacity(a.len() + 1);
        let expected = zstd_decompress(&cut[32..], &mut one_shot, a.len()).unwrap_err();
        assert_eq!(e, expected);
    }

    /// Payload bytes read through a fetch function give the same result;
    /// a failing fetch only sends decoding down the one-shot path.
    #[test]
    fn payload_read_through_fetch() {
        let a = sample(500_000);
        let c = super::compress(&a, &CompressOptions::default()).unwrap();
        let mut fetched = 0usize;
        let mut copy = |src: &[u8], dst: &mut [u8]| {
            // Each request is a slice of the CCOB's own payload.
            assert!(c.bytes.as_ptr_range().contains(&src.as_ptr()));
            fetched += src.len();
            dst.copy_from_slice(src);
            Ok(())
        };
        let d = decompress_unverified_with(&c.bytes, Some(&mut copy)).unwrap();
        assert_eq!(d.data, a);
        assert!(d.hash_matches());
        assert_eq!(fetched, c.bytes.len() - 32);
        let mut broken =
            |_: &[u8], _: &mut [u8]| Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        let d = decompress_unverified_with(&c.bytes, Some(&mut broken)).unwrap();
        assert_eq!(d.data, a);
        assert!(d.hash_matches());
        let mut out = Vec::with_capacity(a.len() + 1);
        let complete =
            zstd_decompress_streamed(&c.bytes[32..], Some(&mut broken), &mut out, &mut |_| {});
        assert!(!complete);
    }
}
