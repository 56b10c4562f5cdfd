//! The zstd codec of fat binary entries, through the public decoder:
//! any stream with any recorded size decodes to at most that size, or is
//! an error; never a panic, never more memory than a piece and a window.

#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::nvidia::Codec;

#[path = "common/nvidia_codec.rs"]
mod nvidia_codec;

fuzz_target!(|data: &[u8]| nvidia_codec::run(Codec::Zstd, data));
