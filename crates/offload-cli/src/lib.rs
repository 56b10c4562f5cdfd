//! Command-line support shared by the offload tools.
//!
//! The tools must be indistinguishable from LLVM's on the command line, so
//! this crate reproduces the observable behaviour of LLVM's `cl` library,
//! driven by one option table per tool ([`cl`], [`cl::tools`]), prints
//! diagnostics the way LLVM's tools do
//! ([`diag`]), and reads inputs and writes outputs atomically ([`fsio`]).
//! It is the only crate that touches process state: the environment and
//! `argv[0]` ([`env`](mod@env), read once), temporary names ([`temp`]), the other
//! LLVM tools ([`tools`]), and the tools' one error type ([`Error`]).
//! It holds no knowledge of any file format; LLVM's small shared rules
//! (OS error texts, integer parsing) come from `offload_format::llvm`.

// `unsafe` is confined to `mapped` (memory-mapping inputs).
#![deny(unsafe_code)]

pub mod cl;
pub mod diag;
pub mod env;
pub mod error;
pub mod explain;
pub mod fsio;
pub mod ident;
mod mapped;
mod response;
mod splice;
pub mod temp;
pub mod tools;

pub use error::Error;

/// The GNU response-file tokenizer `@file` expansion uses, exposed for the
/// fuzz targets.
pub use response::tokenize_gnu;
