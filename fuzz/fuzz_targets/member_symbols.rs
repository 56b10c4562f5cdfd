//! Symbol listing for archive members: ELF, COFF, Mach-O and bitcode read
//! by the archive writer. Broken objects must be errors, not panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::archive::{member_symbols, write_archive_to_vec, NewMember, WriteOptions};

fuzz_target!(|data: &[u8]| {
    let symbols = member_symbols(data);
    // The writer must agree with the classification: a broken object fails
    // the archive, anything else is written.
    let members = [NewMember { name: b"m.o", data }];
    let written = write_archive_to_vec(&members, &WriteOptions::default());
    assert_eq!(symbols.is_err(), written.is_err());
});
