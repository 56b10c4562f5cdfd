//! `offload size`'s parsers: any bytes as a device image (cubin, AMD code
//! object, PTX) are attributed with every byte counted once (functions and
//! shared parts add up to the image's length) and each function's code
//! within it; any bytes as a data section give embedded images inside it,
//! each a slice of it, in order, not overlapping; never a panic, a loop
//! or a read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::profile::embedded::{self, Image};
use offload_format::profile;

fuzz_target!(|data: &[u8]| {
    let p = profile::profile(data);
    assert_eq!(p.size, data.len() as u64);
    assert_eq!(p.total(), p.size);
    for f in &p.functions {
        assert!(f.bytes <= p.size);
    }
    // The file bytes of an image split over its parts add up.
    let weights: Vec<u64> = p.functions.iter().map(|f| f.bytes).collect();
    let stored = data.len() as u64 / 3;
    assert_eq!(
        profile::split_proportional(stored, &weights).iter().sum::<u64>(),
        if weights.is_empty() { 0 } else { stored }
    );
    let found = embedded::scan(data);
    let mut end = 0usize;
    for img in &found.images {
        let at = img.offset();
        assert!(at >= end, "images overlap or are out of order");
        let len = img.len() as usize;
        assert!(at + len <= data.len());
        if let Image::Cubin { bytes, .. } = img {
            assert_eq!(bytes.as_ptr(), data[at..].as_ptr());
            // A cubin found is one the profiler reads as one.
            assert_eq!(profile::profile(bytes).kind, profile::ImageKind::Cubin);
        }
        end = at + len;
    }
});
