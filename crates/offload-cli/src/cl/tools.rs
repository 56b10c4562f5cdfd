//! The option table of each LLVM-compatible tool: the one place its
//! command line is declared. Parsing, the help texts, `--version` and the
//! man page all come from these.
//!
//! Ranks are the order of LLVM's option map for the tool, which decides
//! ties in "Did you mean" (the first of equally near names wins) and the
//! order of "must be specified" errors. The map also holds every option of
//! libLLVM, so the order is measured, not computed: with typos equally near
//! to exactly two names, until every pair of neighbours in the order is
//! pinned by a probe (`tests/cl_differential.rs` checks it on random typos).

mod bundler;
mod clang_wrapper;
mod llvm_wrapper;
mod offload_binary;

pub use bundler::BUNDLER;
pub use clang_wrapper::CLANG_WRAPPER;
pub use llvm_wrapper::LLVM_WRAPPER;
pub use offload_binary::OFFLOAD_BINARY;

use crate::cl::table::{Build, Dialect, Tool};

/// Every installed program name with its table (the packager is installed
/// under its old name too).
pub const ALL: &[(&str, &Tool)] = &[
    ("clang-offload-bundler", &BUNDLER),
    ("llvm-offload-binary", &OFFLOAD_BINARY),
    ("clang-offload-packager", &OFFLOAD_BINARY),
    ("llvm-offload-wrapper", &LLVM_WRAPPER),
    ("clang-offload-wrapper", &CLANG_WRAPPER),
];

/// The Debian LLVM 22.1.8 build: its generic tools' `--version`, LLVM 22's
/// `cl` rules, and no library option category listed by the help.
const LLVM22: Build = Build {
    version: "Debian LLVM version 22.1.8\n  Optimized build.\n",
    dialect: Dialect::Llvm22,
    empty_categories: &[],
};
