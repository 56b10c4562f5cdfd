//! Object bundles (`-type=o`): hostile ELF and COFF host objects must be
//! read, listed, checked and stripped of bundle sections with typed
//! errors, never a panic or a read outside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::object_bundle::{
    check_layout, sniff_format, strip_bundle_sections, ObjectFile, SECTION_PREFIX,
};

fuzz_target!(|data: &[u8]| {
    let _ = sniff_format(data);
    let Ok(object) = ObjectFile::parse(data) else {
        return;
    };
    let _ = object.format();
    let mut sections = 0usize;
    for section in object.bundle_sections() {
        let Ok(section) = section else { break };
        sections += 1;
        if let Ok(contents) = section.contents() {
            assert!(contents.len() <= data.len());
        }
        let _ = section.is_host_placeholder();
    }
    let _ = check_layout(data);
    // What remains after stripping has no bundle sections left.
    if let Ok(stripped) = strip_bundle_sections(data) {
        if let Ok(again) = ObjectFile::parse(&stripped) {
            let left = again.bundle_sections().filter(|s| s.is_ok()).count();
            assert_eq!(
                left, 0,
                "{sections} bundle sections, {left} left after stripping"
            );
        }
    }
    let _ = SECTION_PREFIX;
});
