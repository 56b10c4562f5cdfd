//! Unit tests on hand-built ELF images (no LLVM needed).

use super::*;

#[test]
fn non_objects_are_reported_as_such() {
    for data in [
        &b""[..],
        b"BC\xc0\xde",
        b"__CLANG_OFFLOAD_BUNDLE__",
        b"\x7fELF",
    ] {
        assert!(matches!(
            ObjectFile::parse(data),
            Err(Error::NotAnObject(_))
        ));
    }
}
