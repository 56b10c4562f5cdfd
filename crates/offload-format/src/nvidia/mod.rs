//! NVIDIA device code: fat binary containers ([`fatbin`]), the two codecs
//! their entries are compressed with ([`codec`]), and CUDA architectures
//! with CUDA's rules for which GPU runs what ([`arch`]).
//!
//! Everything here reads byte slices and writes to [`std::io::Write`]; the
//! facts it follows were checked against cuobjdump 13 (see
//! `tests/fixtures/nvidia/README.md`).

pub mod arch;
pub mod codec;
pub mod fatbin;

pub use arch::{CudaArch, Isa, Variant};
pub use codec::{Codec, DecodeError};
