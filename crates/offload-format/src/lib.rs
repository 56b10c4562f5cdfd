//! Readers and writers for the file formats of LLVM's offload tool chain.
//!
//! This crate knows byte layouts and nothing else: no command-line parsing,
//! no process exit, no printing. The command-line tools in this workspace are
//! thin front-ends over it.
//!
//! | module | format |
//! |---|---|
//! | [`bytes`] | bounds-checked, zero-copy reading of byte buffers |
//! | [`identify`] | what a file is, from its magic bytes |
//! | [`objfile`] | sections of ELF, COFF/PE and Mach-O files |
//! | [`offload_binary`] | the 0x10FF10AD offload binary (`llvm-offload-binary`) |
//! | [`string_table`] | ELF-style tail-merged string tables |
//! | [`hash`] | LLVM's hash functions and hash-table iteration orders |
//! | [`llvm`] | LLVM's small shared rules: integer parsing, OS error texts |
//! | [`triple`] | LLVM target-triple normalisation |
//! | [`target_id`] | AMDGPU target IDs and their compatibility rules |
//! | [`entry_id`] | offload-bundle entry IDs (`<kind>-<triple>[-<target id>]`) |
//! | [`bundle`] | binary offload bundles (`__CLANG_OFFLOAD_BUNDLE____`) |
//! | [`text_bundle`] | text offload bundles (comment markers) |
//! | [`ccob`] | compressed offload bundles (`CCOB`, versions 1 to 3) |
//! | [`object_bundle`] | offload bundles stored as sections of host objects (ELF, COFF) |
//! | [`archive`] | `ar` archives: reading, and deterministic GNU output |
//! | [`device_archive`] | heterogeneous device archives (`-unbundle -type=a`) |
//! | [`hip_fatbin`] | regions of concatenated bundles and CCOBs (`.hip_fatbin`), HIP wrapper records |
//! | [`nvidia`] | NVIDIA fat binaries (`.nv_fatbin`), their codecs, CUDA architectures |
//! | [`damage`] | what the scanning readers report where a region is damaged |
//! | [`payload`] | what an entry's bytes are: AMDGPU code object targets, cubin SMs, PTX, SPIR-V |
//! | [`bitcode`] | LLVM bitcode reading (embedded offload objects, IR symbol tables) |
//! | [`zip`] | ZIP archives (Python wheels): reading, inflating members, writing |
//! | [`wheel`] | Python wheels' `RECORD` |
//! | [`wrapper`] | the host modules emitted by the offload wrappers, as LLVM bitcode |
//!
//! [`ccob::libraries`] says which libzstd and zlib a build links.
//!
//! The crate's README follows, with its example (run as a doctest).
//!
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod archive;
pub mod bitcode;
pub mod bundle;
pub mod bytes;
pub mod ccob;
pub mod damage;
pub mod device_archive;
pub mod entry_id;
pub mod hash;
pub mod hip_fatbin;
pub mod identify;
pub mod llvm;
pub mod nvidia;
pub mod object_bundle;
pub mod objfile;
pub mod offload_binary;
pub mod payload;
pub mod string_table;
pub mod target_id;
pub mod text_bundle;
pub mod thin;
pub mod triple;
pub mod wheel;
pub mod wrapper;
pub mod zip;
mod zstd_bounded;
