//! Write-then-read for binary bundles: every bundle our writer produces
//! reads back with the same entries, and has the size it announced.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::bundle::{parse, write, written_size};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    entries: Vec<(&'a [u8], &'a [u8])>,
    align: u16,
}

fuzz_target!(|input: Input<'_>| {
    let align = u32::from(input.align % 4097);
    let Ok(size) = written_size(&input.entries, align) else {
        // Only alignment 0 and duplicate IDs are refused.
        let mut ids: Vec<_> = input.entries.iter().map(|e| e.0).collect();
        ids.sort();
        ids.dedup();
        assert!(align == 0 || ids.len() < input.entries.len());
        return;
    };
    let mut bytes = Vec::new();
    write(&mut bytes, &input.entries, align).expect("checked by written_size");
    assert_eq!(bytes.len() as u64, size);
    let read = parse(&bytes).expect("our bundle parses");
    assert_eq!(read.len(), input.entries.len());
    for (id, data) in &input.entries {
        let e = read
            .iter()
            .find(|e| e.id == *id)
            .expect("every entry is found");
        assert_eq!(e.data, *data);
        assert_eq!(e.offset % u64::from(align), 0);
    }
});
