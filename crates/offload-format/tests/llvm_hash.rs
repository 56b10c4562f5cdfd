//! LLVM's string hash and `DenseMap` iteration order, checked against values
//! libLLVM 22 computed itself (`tests/fixtures/packager/hash-vectors.txt`,
//! made by `cargo xtask fixtures packager`).

use offload_format::hash::city::hash_value;
use offload_format::hash::dense_map::StringDenseMap;
use test_support::unescape;

#[test]
fn hashes_and_orders_match_libllvm() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/packager/hash-vectors.txt"
    );
    let text = std::fs::read_to_string(path).expect("hash vectors present");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let mut groups = 0;
    let mut keys_checked = 0;
    while let Some(keys_line) = lines.next() {
        let keys: Vec<Vec<u8>> = keys_line
            .strip_prefix("keys\t")
            .expect("a keys line")
            .split('\t')
            .map(unescape)
            .collect();
        let hashes: Vec<u64> = lines
            .next()
            .unwrap()
            .strip_prefix("hashes")
            .unwrap()
            .split_whitespace()
            .map(|h| u64::from_str_radix(h, 16).unwrap())
            .collect();
        let order: Vec<usize> = lines
            .next()
            .unwrap()
            .strip_prefix("order")
            .unwrap()
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(keys.len(), hashes.len());
        for (k, h) in keys.iter().zip(&hashes) {
            assert_eq!(hash_value(k), *h, "hash of {k:?}");
            keys_checked += 1;
        }
        let mut map = StringDenseMap::new();
        for (i, k) in keys.iter().enumerate() {
            map.try_insert(k.as_slice(), i);
        }
        let ours: Vec<usize> = map.iter().map(|(_, &i)| i).collect();
        assert_eq!(ours, order, "iteration order of a {}-key map", keys.len());
        groups += 1;
    }
    assert!(groups > 300 && keys_checked > 2000, "{groups} groups");
}
