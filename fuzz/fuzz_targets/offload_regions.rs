//! What `offload ls` reads without an object file around it: `.hip_fatbin`
//! regions (bundles and CCOBs with padding, with or without known starts),
//! CCOB entry tables read by partial decompression, HIP wrapper records,
//! NVIDIA fat binaries and payload classification. Hostile input gives
//! items that tile the region in order, damage inside it, and fat binary
//! entries inside their containers; never a panic, a loop or a read out of
//! bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::nvidia::fatbin;
use offload_format::{hip_fatbin, payload};

fuzz_target!(|data: &[u8]| {
    // The first byte picks known starts (every 64th byte where its bits
    // say so), as wrapper records would give them.
    let (switch, region) = data.split_first().unwrap_or((&0, &[]));
    let starts: Vec<usize> = (0..8)
        .filter(|b| switch & (1 << b) != 0)
        .map(|b| b * 64)
        .collect();
    let scan = hip_fatbin::scan(region, &starts);
    let mut end = 0usize;
    for item in &scan.items {
        assert!(item.offset >= end, "items overlap or go back");
        let item_end = item.offset + item.bytes.len();
        assert!(item_end <= region.len());
        assert_eq!(region[item.offset..item_end].as_ptr(), item.bytes.as_ptr());
        end = item_end;
        if let hip_fatbin::ItemKind::Ccob(_) = item.kind {
            if let Ok(b) = hip_fatbin::ccob_bundle_header(item.bytes) {
                assert!(b.decoded <= (hip_fatbin::MAX_HEADER + (128 << 10)) as u64);
                let ranges: Vec<(u64, u64)> =
                    b.entries.iter().map(|e| (e.offset, e.size)).collect();
                if let Ok(heads) = hip_fatbin::ccob_entry_heads(item.bytes, &ranges, 4096) {
                    assert_eq!(heads.len(), ranges.len());
                    for (h, &(_, size)) in heads.iter().zip(&ranges) {
                        assert_eq!(h.len() as u64, size.min(4096));
                    }
                }
                for e in b.entries.iter().take(2) {
                    if e.size <= 1 << 20 {
                        if let Ok(bytes) = hip_fatbin::ccob_entry(item.bytes, e.offset, e.size) {
                            assert_eq!(bytes.len() as u64, e.size);
                            let _ = payload::classify(&bytes);
                        }
                    }
                }
            }
        }
    }
    for d in &scan.damage {
        assert!(d.offset < region.len());
    }
    for w in hip_fatbin::parse_wrappers(region, 8, switch & 1 != 0) {
        assert!(w.pointer_offset + 8 <= region.len());
    }
    let nv = if switch & 2 != 0 {
        fatbin::scan_embedded(region)
    } else {
        fatbin::scan(region)
    };
    for c in &nv.containers {
        assert!(c.offset as u64 + c.len() <= region.len() as u64);
        for e in &c.entries {
            assert!(e.offset >= c.offset);
            assert!(e.payload_offset + e.payload.len() <= c.offset + c.len() as usize);
            let _ = payload::classify(e.payload);
            if let Ok(head) = e.head(4096) {
                assert!(head.len() <= 4096);
                // The header against what its payload names (issue 32).
                let named = payload::classify(&head);
                let _ = payload::check_nvidia_header(e.kind, e.arch, &named, &head);
                // A prefix that needs no more is named, and checked, as
                // the whole head is.
                let first = &head[..head.len().min(256)];
                if !payload::needs_more(first) {
                    assert_eq!(payload::classify(first), named);
                    assert_eq!(
                        payload::check_nvidia_header(e.kind, e.arch, &payload::classify(first), first),
                        payload::check_nvidia_header(e.kind, e.arch, &named, &head)
                    );
                }
            }
            // Decoding a whole stream keeps nothing and never gives more
            // than the header records (small claims only: a few bytes can
            // claim gigabytes, which the decoder would produce).
            if e.uncompressed_size > 16 << 20 {
                continue;
            }
            if let Ok(n) = e.check_stream() {
                assert!(e.codec().is_none() || n <= e.uncompressed_size);
            }
        }
    }
    for d in &nv.damage {
        assert!(d.offset < region.len());
    }
    let _ = payload::classify(region);
});
