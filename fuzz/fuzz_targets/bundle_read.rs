//! Binary bundle headers: hostile counts, offsets, sizes and ID lengths
//! must give "no bundle", a typed error, or entries whose data really is
//! the stated range of the input; read from a prefix (as while
//! decompressing), the header is undecided or exactly what the whole gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::bundle::{parse, parse_header, parse_prefix};

fuzz_target!(|data: &[u8]| {
    check_prefixes(data);
    let Ok(header) = parse_header(data) else {
        assert!(parse(data).is_err());
        return;
    };
    for e in &header {
        assert_ne!(e.offset, 0);
        let end = e.offset.checked_add(e.size).expect("range checked");
        assert!(end <= data.len() as u64);
        assert_eq!(e.data, &data[e.offset as usize..end as usize]);
    }
    let visited = parse(data).expect("a header that parses gives entries");
    assert!(visited.len() <= header.len());
    for e in &visited {
        // Each visited entry is the last header entry with its ID.
        let last = header
            .iter()
            .rev()
            .find(|h| h.id == e.id)
            .expect("from the header");
        assert_eq!(last, e);
    }
});

fn check_prefixes(data: &[u8]) {
    let whole = parse(data).map(|v| {
        v.iter()
            .map(|e| (e.id, e.offset, e.size))
            .collect::<Vec<_>>()
    });
    let total = data.len() as u64;
    // A few cut points: the ends, and one chosen by the data.
    let pick = data.first().map_or(0, |&b| b as usize * 7) % (data.len() + 1);
    for n in [0, pick, data.len() / 2, data.len()] {
        match parse_prefix(&data[..n], total) {
            Ok(None) => assert!(n < data.len(), "whole input undecided"),
            other => {
                let got = other.map(|v| {
                    v.expect("decided")
                        .iter()
                        .map(|e| (e.id, e.offset, e.size))
                        .collect::<Vec<_>>()
                });
                assert_eq!(got, whole, "prefix {n}");
            }
        }
    }
}
