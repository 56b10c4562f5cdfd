//! Command-line support shared by the offload tools.
//!
//! The tools must be indistinguishable from LLVM's on the command line, so
//! this crate reproduces the observable behaviour of LLVM's `cl` library,
//! driven by one option table per tool ([`cl`], [`tools`]), prints
//! diagnostics the way LLVM's tools do ([`diag`]), and reads inputs and writes outputs atomically ([`fsio`]).
//! It holds no knowledge of any file format.

// `unsafe` is confined to `mapped` (memory-mapping inputs).
#![deny(unsafe_code)]

pub mod cl;
pub mod diag;
pub mod fsio;
mod mapped;
mod response;
mod splice;
pub mod tools;

/// The GNU response-file tokenizer `@file` expansion uses, exposed for the
/// fuzz targets.
pub use response::tokenize_gnu;
