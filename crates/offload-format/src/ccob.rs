//! Compressed offload bundles (`CCOB`).
//!
//! A CCOB wraps a whole serialized offload bundle (binary, text or object
//! bundle bytes) in a small header followed by a zlib or zstd stream:
//!
//! | off | v1 (20 bytes) | v2 (24 bytes) | v3 (32 bytes) |
//! |---|---|---|---|
//! | 0 | `CCOB` | `CCOB` | `CCOB` |
//! | 4 | u16 version | u16 version | u16 version |
//! | 6 | u16 method | u16 method | u16 method |
//! | 8 | u32 uncompressed size | u32 total size | u64 total size |
//! | 12 | u64 hash | u32 uncompressed size | |
//! | 16 | | u64 hash | u64 uncompressed size |
//! | 24 | | | u64 hash |
//!
//! Integers are little-endian. The method is 0 for zlib and 1 for zstd. The
//! total size (v2, v3) counts the header and the compressed payload. The hash
//! is the first 8 bytes of the MD5 digest of the uncompressed bytes, read as a
//! little-endian u64 (so the file holds `md5[0..8]` verbatim).
//!
//! What this module offers:
//! * [`detect`] and [`Header::parse`]: recognise and decode headers of every
//!   version; unknown versions and methods are typed errors.
//! * [`segments`]: split an input holding several concatenated CCOBs, using the
//!   recorded total size (v2, v3) and a magic scan only for v1.
//! * [`decompress`] / [`decompress_unverified`]: zlib or zstd, into a buffer
//!   whose size is capped by the header and checked against what the payload
//!   could possibly produce; the produced size and the hash are verified.
//!   [`decompress_streaming`] hands the bundle to a sink in order instead,
//!   holding only zstd's window.
//! * [`compress`]: the exact bytes LLVM 22's bundler writes (given the same
//!   libzstd / zlib; see the `system-compression` Cargo feature); [`Writer`]
//!   writes the same bytes from a bundle fed through `Write`, straight to a
//!   seekable output.
//! * [`report`]: the text of the bundler's `-verbose` reports, from the
//!   measured figures ([`CompressInfo`], [`DecompressReport`]): LLVM's
//!   layout, kept apart from the format.
//!
//! Which libzstd and zlib this build links is [`crate::compression`]'s.

mod codec;
mod error;
mod fields;
mod hasher;
mod header;
pub mod report;
mod segments;
mod streaming;
mod writer;

pub use codec::{
    compress, decompress, decompress_unverified, decompress_unverified_with, truncated_md5,
    CompressInfo, CompressOptions, Compressed, DecompressReport, Decompressed, Fetch, FetchFn,
};
pub use error::CcobError;
pub use fields::{Method, V2Field, Version};
pub use header::{detect, Detection, Header, MAGIC};
pub use segments::{segments, Segment, Segments};
#[cfg(feature = "inspect")]
pub(crate) use streaming::{decode_prefix, stream_len};
pub use streaming::{decompress_streaming, PrefixEnd, Streamed};
pub use writer::{Writer, ZSTD_STREAM_MAX};
