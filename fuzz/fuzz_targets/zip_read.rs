//! Zip archives (Python wheels) through the format library's reader and
//! writer: any bytes parse to members whose data lies inside the input,
//! or to an error; each member decodes to at most its recorded size (an
//! error otherwise), never a panic. An archive that parses is written
//! again member by member (as `offload thin` copies unchanged members)
//! and must parse to the same members; a RECORD update never panics.

#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use offload_format::wheel;
use offload_format::zip::write::{central_header, end_records, local_header, Entry};
use offload_format::zip::Archive;

/// At most this much of each member is decoded.
const LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(a) = Archive::parse(data) else {
        return;
    };
    for m in &a.members {
        let off = m.data.as_ptr() as usize - data.as_ptr() as usize;
        assert!(off + m.data.len() <= data.len());
        assert!((off as u64) < a.central_offset || m.data.is_empty());
        let mut out = Counter(0);
        if let Ok(n) = m.decode(&mut out, LIMIT) {
            assert!(n <= m.uncompressed_size.min(LIMIT));
            assert_eq!(n, out.0);
        }
        let _ = wheel::update_record(
            m.data,
            &[wheel::Change {
                name: m.name,
                sha256: [0; 32],
                size: 1,
            }],
        );
    }
    // Written again, as stored bytes with their headers, it reads back.
    let mut z = Vec::new();
    let mut central = Vec::new();
    for m in &a.members {
        let e = Entry::from_member(m);
        central.extend(central_header(&e, z.len() as u64));
        z.extend(local_header(&e));
        z.extend_from_slice(m.data);
    }
    let at = z.len() as u64;
    z.extend(&central);
    z.extend(end_records(
        a.members.len() as u64,
        at,
        central.len() as u64,
        a.comment,
    ));
    let b = Archive::parse(&z).expect("a rewritten archive parses");
    assert_eq!(a.members.len(), b.members.len());
    for (x, y) in a.members.iter().zip(&b.members) {
        assert_eq!((x.name, x.data, x.crc32), (y.name, y.data, y.crc32));
        assert_eq!(x.uncompressed_size, y.uncompressed_size);
    }
});

/// A writer that only counts.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
