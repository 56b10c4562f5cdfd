//! Triple parsing and normalisation on arbitrary text: no panic, no
//! unbounded work.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::triple::{normalize, CanonicalForm, Triple};

fuzz_target!(|text: &str| {
    let t = Triple::new(text);
    let _ = (t.arch(), t.sub_arch(), t.vendor(), t.os(), t.environment());
    let _ = t.object_format();
    let _ = (t.is_amdgcn(), t.is_nvptx(), t.is_spirv());
    let _ = t.is_compatible_with(&t);
    // No idempotence check: LLVM 22's normalisation is not idempotent
    // (clang-22 -print-target-triple turns "\n-win32\n2ebv9-a0spirv" into
    // "\n-unknown-windows-spirv", and that into "spirv-\n-windows-msvc"),
    // and ours matches it.
    for form in [
        CanonicalForm::Any,
        CanonicalForm::ThreeIdent,
        CanonicalForm::FourIdent,
        CanonicalForm::FiveIdent,
    ] {
        let _ = normalize(text, form);
    }
});
