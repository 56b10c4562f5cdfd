//! The rewriter of `offload thin` on any bytes, taken as an uncompressed
//! bundle, a compressed bundle, a section of offload binaries and an NVIDIA
//! fat binary container (entries whose sizes overlap, a container claiming
//! more than its range: never rewritten), with any
//! entries dropped: it never panics, never grows or moves a container, and
//! what it writes reads back with exactly the kept entries and their bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::nvidia::fatbin;
use offload_format::thin::{self, Thinned};
use offload_format::{bundle, ccob, offload_binary};

/// Entries to drop: bit i of `mask` drops the i-th entry seen.
fn dropper(mask: u8) -> impl FnMut(&[u8]) -> bool {
    let mut i = 0u32;
    move |_| {
        let keep = mask >> (i % 8) & 1 == 0;
        i += 1;
        keep
    }
}

fn check_size(t: &Thinned<'_>, len: usize) -> Vec<u8> {
    let total: u64 = t.pieces.iter().map(|p| p.len()).sum();
    assert_eq!(total, len as u64, "a container changed size");
    assert!(t.used <= len as u64);
    let out = t.to_vec();
    assert!(out[t.used as usize..].iter().all(|&b| b == 0));
    out
}

fn kept_ids(t: &Thinned<'_>) -> Vec<Vec<u8>> {
    t.kept.iter().map(|e| e.id.as_bytes().to_vec()).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mask, data)) = data.split_first() else {
        return;
    };
    if let Ok(Some(t)) = thin::bundle(data, &mut dropper(mask)) {
        let out = check_size(&t, data.len());
        let read = bundle::parse_header(&out[..t.used as usize]).expect("thinned bundle parses");
        let original = bundle::parse_header(data).expect("input parsed before");
        let ids: Vec<Vec<u8>> = read
            .iter()
            .map(|e| String::from_utf8_lossy(e.id).into_owned().into_bytes())
            .collect();
        assert_eq!(ids, kept_ids(&t));
        // Ids may repeat, so the kept entries are matched by position: the
        // dropper saw the entries in order, one call each.
        let expected: Vec<_> = original
            .iter()
            .enumerate()
            .filter(|(i, _)| mask >> (i % 8) & 1 == 0)
            .map(|(_, e)| e)
            .collect();
        assert_eq!(
            read.len(),
            expected.len(),
            "kept the wrong number of entries"
        );
        for (e, before) in read.iter().zip(expected) {
            assert_eq!(before.id, e.id, "a kept entry's id changed");
            assert_eq!(before.data, e.data, "a kept entry's bytes changed");
        }
    }
    if let Ok(Some(t)) = thin::ccob(data, &mut dropper(mask), Some(1)) {
        let out = check_size(&t, data.len());
        let inner = ccob::decompress(&out[..t.used as usize]).expect("thinned CCOB decodes");
        let read = bundle::parse_header(&inner.data).expect("the bundle inside parses");
        assert_eq!(read.len(), t.kept.len());
    }
    let mut drop = dropper(mask);
    if let Ok(Some(t)) = thin::offload_binaries(data, &mut |b| drop(b.triple())) {
        let out = check_size(&t, data.len());
        // Read back as offload ls reads a section: binaries, zeros between.
        let mut images = 0;
        let mut at = 0usize;
        while let Some(skip) = out[at..].iter().position(|&b| b != 0) {
            at += skip;
            let (found, next) = offload_binary::read::parse_one(&out, at as u64)
                .expect("thinned offload binaries parse");
            images += found.len();
            at = next as usize;
            if at >= out.len() {
                break;
            }
        }
        assert_eq!(images, t.kept.len());
    }
    if let Ok(Some(t)) = thin::fatbin(data, &mut |i, _| mask >> (i % 8) & 1 == 0) {
        let out = check_size(&t, data.len());
        // What stays is one container of exactly the kept entries, each
        // byte for byte as it was.
        let before = fatbin::scan(data);
        let after = fatbin::scan(&out[..t.used as usize]);
        assert!(after.damage.is_empty(), "a thinned container is damaged");
        assert_eq!(after.containers.len(), 1);
        let expected: Vec<_> = before.containers[0]
            .entries
            .iter()
            .enumerate()
            .filter(|(i, _)| mask >> (i % 8) & 1 == 0)
            .map(|(_, e)| e)
            .collect();
        let kept = &after.containers[0].entries;
        assert_eq!(kept.len(), expected.len());
        for (a, b) in kept.iter().zip(expected) {
            assert_eq!(a.payload, b.payload);
            assert_eq!(a.flags, b.flags);
            assert_eq!(a.arch, b.arch);
        }
    }
});
