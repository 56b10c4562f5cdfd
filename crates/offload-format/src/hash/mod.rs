//! LLVM's hash functions and hash-table iteration orders.
pub mod xxh3;
