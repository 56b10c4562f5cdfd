//! LLVM's hash functions and the iteration orders of its hash tables.
//!
//! LLVM tools write some tables in the order their in-memory hash maps happen
//! to iterate. Reproducing their output byte for byte therefore needs both the
//! hash function and a model of the container.
//!
//! * [`city`]: LLVM's 64-bit `hash_value` for byte strings (a CityHash
//!   derivative with a fixed seed in release builds).
//! * [`dense_map`]: the bucket order of `DenseMap<StringRef, _>`, the order
//!   `llvm-offload-binary` writes string entries in.
//! * [`xxh3`]: xxh3 and the `StringMap` iteration order.
//!
//! And one of our own: [`bytes_map`], hash tables keyed by names read
//! from a file, hashed with xxh3.

pub mod bytes_map;
pub mod city;
pub mod dense_map;
pub mod xxh3;
