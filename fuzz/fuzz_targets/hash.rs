//! LLVM hash and hash-table models: no panics on any key, and the map
//! models stay consistent under any sequence of inserts and removals (each
//! present key iterated exactly once; no probe loop without end, which the
//! fuzzer's timeout would catch).
#![no_main]

use std::collections::BTreeSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::hash::city::{hash32, hash_value};
use offload_format::hash::dense_map::StringDenseMap;
use offload_format::hash::xxh3::{string_map_hash, xxh3_64, StringMapOrder};

#[derive(Arbitrary, Debug)]
enum Op<'a> {
    Insert(&'a [u8]),
    Remove(&'a [u8]),
    /// A short key from a small set, so removals hit and tombstones pile up.
    InsertSmall(u8),
    RemoveSmall(u8),
}

fuzz_target!(|ops: Vec<Op<'_>>| {
    let mut map = StringMapOrder::new();
    let mut dense: StringDenseMap<Vec<u8>, usize> = StringDenseMap::new();
    let mut model: BTreeSet<Vec<u8>> = BTreeSet::new();
    for op in &ops {
        let (key, insert) = match op {
            Op::Insert(k) => (k.to_vec(), true),
            Op::Remove(k) => (k.to_vec(), false),
            Op::InsertSmall(b) => (vec![b'k', b % 32], true),
            Op::RemoveSmall(b) => (vec![b'k', b % 32], false),
        };
        let _ = (
            xxh3_64(&key),
            string_map_hash(&key),
            hash_value(&key),
            hash32(&key),
        );
        if insert {
            let (i, new) = map.insert(&key);
            assert_eq!(new, model.insert(key.clone()));
            assert_eq!(map.key(i), key.as_slice());
            let had = dense.contains_key(&key);
            let n = dense.len();
            let (_, fresh) = dense.try_insert(key.clone(), n);
            assert_eq!(fresh, !had);
            assert_eq!(dense.len(), n + usize::from(fresh));
        } else {
            assert_eq!(map.remove(&key), model.remove(&key));
        }
        assert_eq!(map.len(), model.len());
    }
    let mut seen = BTreeSet::new();
    for i in map.iter() {
        assert!(seen.insert(map.key(i).to_vec()), "a key iterated twice");
    }
    assert_eq!(seen, model);
    for k in &model {
        assert!(map.find(k).is_some());
        assert!(dense.contains_key(k));
    }
    assert_eq!(dense.iter().count(), dense.len());
});
