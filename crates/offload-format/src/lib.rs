//! Readers and writers for the file formats of LLVM's offload tool chain.
//!
//! This crate knows byte layouts and nothing else: no command-line parsing,
//! no process exit, no printing. The command-line tools in this workspace are
//! thin front-ends over it.
//!
//! | module | format | feature |
//! |---|---|---|
//! | [`bytes`] | bounds-checked, zero-copy reading of byte buffers | |
//! | [`identify`] | what a file is, from its magic bytes | |
//! | [`io_cause`] | the `io::Error` of a caller's writer, kept as an error's cause | |
//! | [`objfile`] | sections of ELF, COFF/PE and Mach-O files | |
//! | [`string_table`] | ELF-style tail-merged string tables | |
//! | [`hash`] | LLVM's hash functions and hash-table iteration orders | |
//! | [`llvm`] | LLVM's small shared rules: integer parsing, OS error texts | |
//! | [`triple`] | LLVM target-triple normalisation | |
//! | [`target_id`] | AMDGPU target IDs and their compatibility rules | |
//! | [`entry_id`] | offload-bundle entry IDs (`<kind>-<triple>[-<target id>]`) | |
//! | [`bundle`] | binary offload bundles (`__CLANG_OFFLOAD_BUNDLE____`) | |
//! | [`text_bundle`] | text offload bundles (comment markers) | |
//! | [`bitcode`] | LLVM bitcode reading (embedded offload objects, IR symbol tables) | `bitcode` |
//! | [`archive`] | `ar` archives: reading, and deterministic GNU output | `archive` |
//! | [`offload_binary`] | the 0x10FF10AD offload binary (`llvm-offload-binary`) | `offload-binary` |
//! | [`object_bundle`] | offload bundles stored as sections of host objects (ELF, COFF); adding and stripping them with `object-edit` | `object-bundle` |
//! | [`ccob`] | compressed offload bundles (`CCOB`, versions 1 to 3) | `ccob` |
//! | [`device_archive`] | heterogeneous device archives (`-unbundle -type=a`) | `device-archive` |
//! | [`wrapper`] | the host modules emitted by the offload wrappers, as LLVM bitcode | `wrapper` |
//! | [`nvidia`] | NVIDIA fat binaries (`.nv_fatbin`), their codecs, CUDA architectures | `nvidia` |
//! | [`damage`] | what the scanning readers report where a region is damaged | `nvidia` |
//! | [`hip_fatbin`] | regions of concatenated bundles and CCOBs (`.hip_fatbin`), HIP wrapper records | `inspect` |
//! | [`payload`] | what an entry's bytes are: AMDGPU code object targets, cubin SMs, PTX, SPIR-V | `inspect` |
//! | [`profile`] | where a device image's bytes go: per kernel and shared parts (cubin, PTX, AMD code object) | `inspect` |
//! | [`thin`] | a container rewritten without some of its entries, in the space it had | `inspect` |
//! | [`shrink`] | a thinned file laid out: in place, or ELF shared libraries shrunk (freed bytes taken out) | `inspect` |
//! | [`zip`] | ZIP archives (Python wheels): reading, inflating members, writing | `zip` |
//! | [`wheel`] | Python wheels' `RECORD` | `wheel` |
//! | [`compression`] | which libzstd and zlib a build links | `zstd` and `zlib` |
//!
//! # Cargo features
//!
//! Formats and capabilities are features, as in the `object` crate. The
//! modules without a feature above are always built and need no other
//! crate; `default` is everything the offload-tools use. A feature turns on
//! the ones it needs (`device-archive` brings `archive`, `object-edit` and
//! `ccob`, for example):
//!
//! | feature | adds | needs |
//! |---|---|---|
//! | `zstd` | the zstd codec (zstd's C library) | |
//! | `zlib` | the zlib codec (flate2) | |
//! | `bitcode` | [`bitcode`] | |
//! | `archive` | [`archive`] | `bitcode` |
//! | `offload-binary` | [`offload_binary`]; version 3 bodies decompress with `zstd` and `zlib` | `archive` |
//! | `object-bundle` | [`object_bundle`], reading | |
//! | `object-edit` | the in-process `llvm-objcopy` edit of [`object_bundle`] | `object-bundle` |
//! | `ccob` | [`ccob`] | `zstd`, `zlib` |
//! | `device-archive` | [`device_archive`] | `archive`, `object-edit`, `ccob` |
//! | `wrapper` | [`wrapper`] | |
//! | `nvidia` | [`nvidia`], [`damage`] | `zstd` |
//! | `inspect` | [`hip_fatbin`], [`payload`], [`profile`], [`thin`], [`shrink`] | `nvidia`, `ccob`, `offload-binary` |
//! | `zip` | [`zip`] | `zlib` |
//! | `wheel` | [`wheel`] | `zip` |
//! | `system-zstd`, `system-zlib`, `system-compression` | link the system's libzstd and zlib, as LLVM does (compressed bytes identical to LLVM's) | the codec |
//!
//! `--no-default-features` builds without a C compiler.
//!
//! # LLVM's texts
//!
//! The tools built on this crate print what LLVM's print, so some of its
//! texts are LLVM's: the `Display` of the error types (LLVM's messages, word
//! for word, where LLVM has one), [`llvm`] (LLVM's integer parsing and its
//! way of showing an OS error) and the `-verbose` reports of
//! [`ccob::report`]. The types themselves describe bytes.
//!
//! The crate's README follows, with its example (run as a doctest where
//! the `ccob` feature is on).
//!
#![cfg_attr(feature = "ccob", doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

#[cfg(feature = "archive")]
pub mod archive;
#[cfg(feature = "bitcode")]
pub mod bitcode;
pub mod bundle;
pub mod bytes;
#[cfg(feature = "ccob")]
pub mod ccob;
#[cfg(all(feature = "zstd", feature = "zlib"))]
pub mod compression;
#[cfg(feature = "nvidia")]
pub mod damage;
#[cfg(feature = "device-archive")]
pub mod device_archive;
pub mod entry_id;
pub mod hash;
#[cfg(feature = "inspect")]
pub mod hip_fatbin;
pub mod identify;
#[cfg(feature = "zlib")]
mod inflate_bounded;
pub mod io_cause;
pub mod llvm;
#[cfg(feature = "nvidia")]
pub mod nvidia;
#[cfg(feature = "object-bundle")]
pub mod object_bundle;
pub mod objfile;
#[cfg(feature = "offload-binary")]
pub mod offload_binary;
#[cfg(feature = "inspect")]
pub mod payload;
#[cfg(feature = "inspect")]
pub mod profile;
#[cfg(feature = "inspect")]
pub mod shrink;
pub mod string_table;
pub mod target_id;
pub mod text_bundle;
#[cfg(feature = "inspect")]
pub mod thin;
pub mod triple;
#[cfg(feature = "wheel")]
pub mod wheel;
#[cfg(feature = "wrapper")]
pub mod wrapper;
#[cfg(feature = "zip")]
pub mod zip;
#[cfg(all(feature = "zstd", any(feature = "nvidia", feature = "offload-binary")))]
mod zstd_bounded;
