//! Tail-merged string tables (ELF and COFF flavours, with priorities):
//! every string added is found, NUL-terminated, at the offset reported.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::string_table::{Builder, StringTable};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    strings: Vec<(&'a [u8], u8)>,
    coff: bool,
}

fuzz_target!(|input: Input<'_>| {
    let strings: Vec<(&[u8], u8)> = input
        .strings
        .into_iter()
        .filter(|(s, _)| !s.contains(&0))
        .collect();
    let table = StringTable::build(strings.iter().map(|(s, _)| *s));
    let bytes = table.bytes();
    assert_eq!(bytes.first(), Some(&0));
    for (s, _) in &strings {
        let at = table.offset(s).expect("added strings have offsets") as usize;
        assert_eq!(&bytes[at..at + s.len()], *s);
        assert_eq!(bytes[at + s.len()], 0);
    }

    let mut b = if input.coff {
        Builder::new_coff()
    } else {
        Builder::new()
    };
    for (s, p) in &strings {
        b.add_with_priority(s, *p);
    }
    let size = b.finalize() as usize;
    let mut out = vec![0u8; size];
    b.write_into(&mut out);
    for (s, _) in &strings {
        if s.is_empty() {
            continue;
        }
        let at = b.offset(s) as usize;
        assert_eq!(&out[at..at + s.len()], *s, "string misplaced");
        assert_eq!(out[at + s.len()], 0, "string not terminated");
    }
});
