//! Binary bundle headers: hostile counts, offsets, sizes and ID lengths
//! must give "no bundle", a typed error, or entries whose data really is
//! the stated range of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::bundle::{parse, parse_header};

fuzz_target!(|data: &[u8]| {
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
