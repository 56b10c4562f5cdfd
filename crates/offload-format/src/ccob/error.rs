//! Errors of the CCOB reader and writer.

use std::fmt;

use super::fields::{Method, V2Field, Version};

/// Everything that can go wrong reading or writing a compressed bundle.
///
/// `Display` gives the text LLVM 22's bundler prints after
/// `Failed to decompress input: ` wherever 22 reports the same problem, so a
/// front-end can keep its messages identical; checks 22 does not make have
/// messages of our own ([`CcobError::is_own_check`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CcobError {
    /// The input does not start with `CCOB`.
    NotCompressed,
    /// The input ends inside the header. `version` is `None` when even the
    /// version and method fields are cut off.
    HeaderTooSmall {
        /// The stored version, when it could be read.
        version: Option<Version>,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes the input has.
        available: usize,
    },
    /// A version other than 1, 2 or 3.
    UnknownVersion(u16),
    /// A method other than 0 (zlib) or 1 (zstd).
    UnknownMethod(u16),
    /// A v2/v3 total size smaller than the header itself.
    TotalSizeTooSmall {
        /// The recorded total size.
        total: u64,
        /// The header's own size.
        header_len: usize,
    },
    /// A v2/v3 total size running past the end of the input.
    TotalSizeBeyondInput {
        /// The recorded total size.
        total: u64,
        /// Bytes available from the start of the CCOB.
        available: usize,
    },
    /// The output buffer for the recorded uncompressed size could not be
    /// allocated.
    OutOfMemory {
        /// The size that was asked for.
        size: u64,
    },
    /// The codec rejected the payload. `message` is the library's own text
    /// (zstd's error name, or `zlib error: Z_..._ERROR`).
    Codec {
        /// Method of the payload.
        method: Method,
        /// The library's message.
        message: String,
    },
    /// The payload decompressed to fewer bytes than the header records.
    SizeMismatch {
        /// The recorded uncompressed size.
        expected: u64,
        /// Bytes actually produced.
        actual: u64,
    },
    /// The stored hash is not the truncated MD5 of the decompressed bytes.
    HashMismatch {
        /// Hash from the header.
        stored: u64,
        /// Hash of the decompressed bytes.
        computed: u64,
    },
    /// A value does not fit a 32-bit header field (writing v2, or forging
    /// v1).
    Version2Limit(V2Field),
    /// Writing a v2/v3 header without a total size.
    MissingTotalSize,
    /// Compression was asked to write a version LLVM 22 never writes (v1).
    UnsupportedWriteVersion(Version),
    /// A [`super::Writer`] was given a different number of bytes than it
    /// was told to expect.
    StreamLength {
        /// The size announced when the writer was made.
        announced: u64,
        /// Bytes written (or that a write would have brought it to).
        written: u64,
    },
    /// A zlib level outside -1..=9 (zstd clamps any level itself).
    InvalidLevel {
        /// Method the level was given for.
        method: Method,
        /// The level.
        level: i32,
    },
}

impl fmt::Display for CcobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CcobError::NotCompressed => f.write_str("not a compressed bundle (no CCOB magic)"),
            // LLVM 22 reports an unknown version with the same words as a
            // short header; keep them so messages stay identical.
            CcobError::HeaderTooSmall { .. } | CcobError::UnknownVersion(_) => {
                f.write_str("Compressed bundle header size too small")
            }
            CcobError::UnknownMethod(_) => f.write_str("Unknown compressing method"),
            CcobError::TotalSizeTooSmall { total, header_len } => write!(
                f,
                "Compressed bundle total size {total} is smaller than its {header_len}-byte header"
            ),
            CcobError::TotalSizeBeyondInput { total, available } => write!(
                f,
                "Compressed bundle is truncated: its header records {total} bytes but only \
                 {available} are present"
            ),
            CcobError::OutOfMemory { size } => write!(
                f,
                "Could not decompress embedded file contents: cannot allocate {size} bytes"
            ),
            CcobError::Codec { message, .. } => {
                write!(f, "Could not decompress embedded file contents: {message}")
            }
            CcobError::SizeMismatch { expected, actual } => write!(
                f,
                "Could not decompress embedded file contents: decompressed size {actual} does \
                 not match the size recorded in the header ({expected})"
            ),
            CcobError::HashMismatch { stored, computed } => write!(
                f,
                "Compressed bundle hash mismatch: stored {}, computed {}",
                format_hash(*stored),
                format_hash(*computed)
            ),
            CcobError::Version2Limit(V2Field::UncompressedSize) => {
                f.write_str("Uncompressed size exceeds version 2 limit")
            }
            CcobError::Version2Limit(V2Field::TotalSize) => {
                f.write_str("Total file size exceeds version 2 limit")
            }
            CcobError::MissingTotalSize => {
                f.write_str("Compressed bundle header of version 2 or 3 needs a total size")
            }
            CcobError::UnsupportedWriteVersion(v) => write!(
                f,
                "Compressed bundle format version {} cannot be written (only 2 or 3)",
                v.number()
            ),
            CcobError::StreamLength { announced, written } => write!(
                f,
                "Compressed bundle writer was announced {announced} bytes but given {written}"
            ),
            CcobError::InvalidLevel { method, level } => {
                write!(f, "Invalid {} compression level: {level}", method.name())
            }
        }
    }
}

/// `0x` and lowercase hex digits, zero-padded to 16 characters in all
/// (so at least 14 digits), as LLVM's `format_hex(value, 16)` prints.
pub(crate) fn format_hash(value: u64) -> String {
    format!("{value:#016x}")
}

impl std::error::Error for CcobError {}

impl CcobError {
    /// Whether this is a check of our own that LLVM 22 does not make when
    /// reading (it accepts such input, or aborts out of memory): the sizes
    /// recorded in the header, the stored hash, and the memory a claimed
    /// size would need. The message is then ours and a front-end should
    /// name the input with it. The other reading errors are LLVM 22's texts
    /// (which name no file), for front-ends to print unchanged.
    pub fn is_own_check(&self) -> bool {
        matches!(
            self,
            CcobError::TotalSizeTooSmall { .. }
                | CcobError::TotalSizeBeyondInput { .. }
                | CcobError::OutOfMemory { .. }
                | CcobError::SizeMismatch { .. }
                | CcobError::HashMismatch { .. }
        )
    }

    /// The CCOB error an I/O error carries, if any: [`super::Writer`]
    /// reports its own errors through `Write`, wrapped this way, so that
    /// callers can tell them from the output's errors.
    pub fn from_io(e: &std::io::Error) -> Option<&CcobError> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<CcobError>())
    }
}
