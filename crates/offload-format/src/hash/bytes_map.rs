//! Hash tables keyed by byte strings read from a file (section, symbol
//! and kernel names, often hundreds of bytes long), hashed with [`xxh3`]
//! instead of std's SipHash, which costs several times more per byte.
//! Not keyed: a file can make its own lookups slower, never wrong.
//!
//! [`xxh3`]: super::xxh3

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// xxh3 of each piece a key hands over, folded together.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesHasher(u64);

impl BytesHasher {
    fn fold(&mut self, h: u64) {
        self.0 = (self.0.rotate_left(29) ^ h).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for BytesHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.fold(super::xxh3::xxh3_64(bytes));
    }

    fn write_u8(&mut self, n: u8) {
        self.fold(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.fold(n as u64);
    }

    fn finish(&self) -> u64 {
        // The table takes its bucket from the low bits and its tags from
        // the high ones: both depend on every input bit after xxh3's
        // avalanche, less so after the fold of a length.
        self.0 ^ (self.0 >> 32)
    }
}

/// A `HashMap` with [`BytesHasher`].
pub type BytesMap<K, V> = HashMap<K, V, BuildHasherDefault<BytesHasher>>;

/// A `HashSet` with [`BytesHasher`].
pub type BytesSet<K> = HashSet<K, BuildHasherDefault<BytesHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equal_and_lookups_find_them() {
        let names: Vec<Vec<u8>> = (0..2000)
            .map(|i| format!("_Z{i}kernel_with_a_long_name_{}", "x".repeat(i % 300)).into_bytes())
            .collect();
        let mut m: BytesMap<&[u8], usize> = BytesMap::default();
        for (i, n) in names.iter().enumerate() {
            m.insert(n, i);
        }
        assert_eq!(m.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(m.get(&n[..]), Some(&i));
        }
        assert_eq!(m.get(&b"_Z1kernel"[..]), None);
        let s: BytesSet<String> = ["a", "b", "a"].iter().map(|s| s.to_string()).collect();
        assert_eq!(s.len(), 2);
    }
}
