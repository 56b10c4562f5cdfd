//! CCOB header decoding: any bytes either fail with a typed error or give a
//! header that re-encodes to exactly the bytes it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::ccob::{detect, Detection, Header};

fuzz_target!(|data: &[u8]| {
    let detection = detect(data);
    let Ok(header) = Header::parse(data) else {
        return;
    };
    assert_eq!(detection, Detection::Compressed);
    assert!(header.len() <= data.len(), "header longer than its input");
    let bytes = header
        .to_bytes()
        .expect("a header that was read can be written back");
    assert_eq!(bytes, &data[..header.len()], "header does not round-trip");
    assert_eq!(Header::parse(&bytes).as_ref(), Ok(&header));
    if let Ok(len) = header.ccob_len(data.len()) {
        assert!(len >= header.len() && len <= data.len());
    }
});
