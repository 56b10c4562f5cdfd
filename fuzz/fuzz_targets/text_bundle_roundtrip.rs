//! Write-then-read for text bundles: entries whose IDs have no newline and
//! whose contents hold no marker line read back exactly, in order.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::text_bundle::{list, write, written_size};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    comment: u8,
    entries: Vec<(&'a [u8], &'a [u8])>,
}

fuzz_target!(|input: Input<'_>| {
    let comment = ["//", "#", ";"][usize::from(input.comment % 3)];
    let end_marker = format!("\n{comment} __CLANG_OFFLOAD_BUNDLE____END__ ");
    // The format cannot hold an ID with a newline, nor a content in which
    // (or at whose end) an END marker starts early: the reader ends an
    // entry at the first END marker. LLVM has the same limits.
    let clean = input.entries.iter().all(|(id, data)| {
        let mut probe = data.to_vec();
        probe.extend_from_slice(end_marker.as_bytes());
        let first = probe
            .windows(end_marker.len())
            .position(|w| w == end_marker.as_bytes());
        !id.contains(&b'\n') && first == Some(data.len())
    });
    if !clean {
        return;
    }
    let mut bytes = Vec::new();
    write(&mut bytes, comment, &input.entries).expect("writing to memory");
    assert_eq!(bytes.len() as u64, written_size(comment, &input.entries));
    let read = list(&bytes, comment).expect("our text bundle reads back");
    assert_eq!(read, input.entries);
});
