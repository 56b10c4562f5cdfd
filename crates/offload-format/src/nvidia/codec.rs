//! The two codecs of fat binary entries, behind one bounded decoder.

use std::fmt;

use crate::zstd_bounded::{self, Stop};

// The LZ half of the decoder (the zstd half is `zstd_bounded`); visible to
// the rest of `nvidia` for the fat binary tests' encoder.
pub(super) mod lz;

/// How an entry's payload is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// zstd (entry flag 0x8000): CUDA 13's default.
    Zstd,
    /// NVIDIA's LZ-style block format (flag 0x2000 without 0x8000): CUDA
    /// 11 and 12, and CUDA 13's `--compress-mode=speed`.
    Lz,
}

impl Codec {
    /// `zstd` or `nvidia-lz`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Lz => "nvidia-lz",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an entry's payload does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The recorded uncompressed size is more than the stored stream could
    /// produce (checked before decoding).
    Implausible {
        /// The recorded size.
        recorded: u64,
        /// The most the stream could produce.
        bound: u64,
    },
    /// The zstd frame header records another content size than the entry.
    FrameSize {
        /// The entry header's size.
        recorded: u64,
        /// The frame header's.
        frame: u64,
    },
    /// The stream decodes to more than the recorded size.
    Overrun {
        /// The recorded size.
        limit: u64,
    },
    /// The stream decodes to less than the recorded size.
    Short {
        /// Bytes decoded.
        decoded: u64,
        /// The recorded size.
        recorded: u64,
    },
    /// An LZ stream ends inside a sequence.
    Truncated {
        /// Offset in the stream.
        at: u64,
    },
    /// An LZ back-reference reaches before the start of the output (or is
    /// zero).
    BadReference {
        /// Offset of the distance in the stream.
        at: u64,
        /// The distance.
        distance: u32,
        /// Output produced when it was met.
        produced: u64,
    },
    /// zstd's own report.
    Zstd(String),
    /// Writing the output failed: the writer's own error.
    Write(crate::io_cause::IoCause),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Implausible { recorded, bound } => write!(
                f,
                "the entry records {recorded} bytes uncompressed, more than its stream can hold (at most {bound})"
            ),
            DecodeError::FrameSize { recorded, frame } => write!(
                f,
                "the entry records {recorded} bytes uncompressed, its zstd frame {frame}"
            ),
            DecodeError::Overrun { limit } => write!(
                f,
                "the payload decodes to more than the {limit} bytes its entry records"
            ),
            DecodeError::Short { decoded, recorded } => write!(
                f,
                "the payload decodes to {decoded} bytes, its entry records {recorded}"
            ),
            DecodeError::Truncated { at } => {
                write!(f, "the compressed stream is cut short (at byte {at})")
            }
            DecodeError::BadReference {
                at,
                distance,
                produced,
            } => write!(
                f,
                "back-reference at byte {at} reaches {distance} bytes back, but only {produced} were decoded"
            ),
            DecodeError::Zstd(e) => write!(f, "zstd: {e}"),
            DecodeError::Write(e) => write!(f, "writing: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DecodeError::Write(e) => Some(e.io()),
            _ => None,
        }
    }
}

/// Where decoded pieces go: returns `Ok(false)` to stop decoding early.
pub(crate) type Sink<'a> = dyn FnMut(&[u8]) -> Result<bool, DecodeError> + 'a;

/// Decodes an LZ stream `src` into `out`, which is exactly the size the
/// entry records: [`decode`]'s checks and errors, without its pieces
/// (for callers that hold the whole payload anyway).
pub(crate) fn decode_lz_into(src: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    let recorded = out.len() as u64;
    let bound = lz::max_output(src.len() as u64);
    if recorded > bound {
        return Err(DecodeError::Implausible { recorded, bound });
    }
    lz::decode_into(src, out)
}

/// Decodes `src` with `codec`, which must give exactly `recorded` bytes
/// (unless `sink` stops early). Returns the bytes produced.
pub(crate) fn decode(
    codec: Codec,
    src: &[u8],
    recorded: u64,
    sink: &mut Sink<'_>,
) -> Result<u64, DecodeError> {
    let mut stopped = false;
    let mut watch = |piece: &[u8]| -> Result<bool, DecodeError> {
        let more = sink(piece)?;
        stopped |= !more;
        Ok(more)
    };
    let produced = match codec {
        Codec::Lz => {
            let bound = lz::max_output(src.len() as u64);
            if recorded > bound {
                return Err(DecodeError::Implausible { recorded, bound });
            }
            lz::decode(src, recorded, &mut watch)?
        }
        Codec::Zstd => {
            if let Some(frame) = zstd_bounded::content_size(src) {
                if frame != recorded {
                    return Err(DecodeError::FrameSize { recorded, frame });
                }
            }
            zstd_bounded::decode(src, recorded, &mut watch).map_err(|e| match e {
                Stop::Overrun => DecodeError::Overrun { limit: recorded },
                Stop::Corrupt(text) => DecodeError::Zstd(text),
                Stop::Sink(e) => e,
            })?
        }
    };
    if !stopped && produced != recorded {
        return Err(DecodeError::Short {
            decoded: produced,
            recorded,
        });
    }
    Ok(produced)
}
