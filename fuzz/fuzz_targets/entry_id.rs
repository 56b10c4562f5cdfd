//! Bundle entry IDs on arbitrary text: parsing, the standardised spelling
//! (which must parse again), and compatibility checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::entry_id::EntryId;

fuzz_target!(|input: (&str, &str, bool)| {
    let (a, b, hip_openmp) = input;
    let Ok(id) = EntryId::parse(a) else { return };
    let _ = (
        id.kind(),
        id.target_id(),
        id.raw_target_id(),
        id.is_kind_valid(),
    );
    let _ = id.is_triple_valid();
    if let Ok(std) = id.standardised() {
        // The standardised spelling always has the five pieces a reader
        // needs. It is not always a fixed point: LLVM picks the amdhsa
        // spelling from the OS piece as written, before normalising, so
        // re-standardising a normalised ID can differ, in 22 as here.
        let again = EntryId::parse(&std).expect("a standardised ID parses");
        let _ = again.standardised();
    }
    if let Ok(other) = EntryId::parse(b) {
        let _ = id.same_as(&other);
        let _ = id.is_compatible_code_object(&other, hip_openmp);
    }
});
