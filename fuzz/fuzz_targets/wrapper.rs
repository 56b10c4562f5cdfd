//! Write-then-read for the offload wrappers: any inputs (raw device code or
//! forged offload binaries) either fail with a typed error or give bitcode
//! that our bitcode reader parses back as one module.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::bitcode::BitcodeFile;
use offload_format::wrapper::{wrap_clang14, wrap_llvm22, OffloadKind};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    kind: u8,
    triple: &'a str,
    inputs: Vec<&'a [u8]>,
    archs: Vec<&'a str>,
    clang14: bool,
    /// Start the first input with the offload binary magic, so the header
    /// reader is reached often.
    packaged: bool,
}

fuzz_target!(|input: Input<'_>| {
    let mut first = Vec::new();
    let mut inputs = input.inputs.clone();
    if input.packaged {
        if let Some(d) = inputs.first_mut() {
            first.extend_from_slice(&[0x10, 0xFF, 0x10, 0xAD]);
            first.extend_from_slice(d);
            *d = &first;
        }
    }
    let module = if input.clang14 {
        wrap_clang14(input.triple, &inputs, &input.archs)
    } else {
        let kind = match input.kind % 3 {
            0 => OffloadKind::OpenMp,
            1 => OffloadKind::Cuda,
            _ => OffloadKind::Hip,
        };
        wrap_llvm22(kind, input.triple, &inputs)
    };
    let Ok(module) = module else { return };
    let Ok(bitcode) = module.to_bitcode() else {
        return;
    };
    let bytes = bitcode.to_vec();
    assert_eq!(bytes.len() as u64, bitcode.len());
    let file = BitcodeFile::parse(&bytes).expect("our wrapper bitcode reads back");
    assert_eq!(file.modules.len(), 1);
});
