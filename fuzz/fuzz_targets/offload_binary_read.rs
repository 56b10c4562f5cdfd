//! Offload binaries (0x10FF10AD, versions 1 to 3) and the containers they
//! are found in (ELF and COFF sections, bitcode, archives): hostile input
//! gives a typed error or images that are really there, never a panic, an
//! out-of-bounds read or an allocation sized by a header field.
#![no_main]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use offload_format::offload_binary::extract::extract;
use offload_format::offload_binary::parse_binaries;

fuzz_target!(|data: &[u8]| {
    if let Ok(binaries) = parse_binaries(data) {
        for b in &binaries {
            assert!(b.offset < data.len() as u64);
            if let Cow::Borrowed(image) = &b.image {
                assert!(image.len() <= data.len());
            }
            let _ = (b.triple(), b.arch());
        }
    }
    // Thin archives name files on disk; a fuzzer must not read them.
    if data.windows(8).any(|w| w == b"!<thin>\n") {
        return;
    }
    if let Err(e) = extract(data, b"fuzz-input") {
        let _ = (e.llvm_message(), e.source(), e.to_string());
    }
});
