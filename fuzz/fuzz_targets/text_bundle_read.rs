//! Text bundles: any text walked the way unbundling and listing walk it
//! (taking some entries, skipping others) gives entries that are slices of
//! the input, or the missing-END error; never a panic or a loop.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::text_bundle::{list, Reader};

fuzz_target!(|input: (u8, u64, &[u8])| {
    let (comment, choices, data) = input;
    let comment = ["//", "#", ";"][usize::from(comment % 3)];
    let _ = list(data, comment);
    let mut r = Reader::new(data, comment);
    let mut steps = 0usize;
    while let Some(id) = r.next_entry() {
        steps += 1;
        // Each step moves past at least one START marker.
        assert!(steps <= data.len(), "the reader does not advance");
        assert!(id.len() <= data.len());
        if choices >> (steps % 64) & 1 == 1 {
            match r.take() {
                Ok(content) => assert!(content.len() <= data.len()),
                Err(_) => break,
            }
        }
    }
});
