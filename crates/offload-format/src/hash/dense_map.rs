//! A model of LLVM's `DenseMap<StringRef, V>`: an open-addressing table whose
//! iteration order (ascending bucket index) is what some tools write out.
//!
//! The model keeps LLVM's exact growth and probing rules so that the bucket
//! each key lands in, and therefore the iteration order, is the same:
//!
//! * the table starts empty and grows to 64 buckets on the first insertion;
//!   before a new key is inserted with `E` keys present it doubles when
//!   `(E + 1) * 4 >= 3 * buckets`;
//! * growing re-inserts the existing keys in their old bucket order;
//! * probing is quadratic: start at `hash & (buckets - 1)`, then step by
//!   1, 2, 3, ... modulo the table size;
//! * the hash is the low 32 bits of [`super::city::hash_value`].
//!
//! Nothing is ever erased, so tombstones (and the rehash they trigger) do not
//! arise.

use super::city::hash32;

/// Insertion-only hash map that iterates like LLVM's `DenseMap<StringRef, V>`.
#[derive(Debug, Clone)]
pub struct StringDenseMap<K, V> {
    /// Each bucket holds an index into `entries`, or nothing.
    buckets: Vec<Option<usize>>,
    /// Keys, their cached hashes and values, in insertion order.
    entries: Vec<(K, u32, V)>,
}

impl<K: AsRef<[u8]>, V> Default for StringDenseMap<K, V> {
    fn default() -> Self {
        StringDenseMap::new()
    }
}

impl<K: AsRef<[u8]>, V> StringDenseMap<K, V> {
    /// An empty map (no buckets allocated, like a fresh `DenseMap`).
    pub fn new() -> Self {
        StringDenseMap {
            buckets: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key was inserted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of buckets currently allocated.
    #[cfg(test)]
    fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Where `key` is, or the empty bucket where it would go.
    fn probe(&self, key: &[u8], hash: u32) -> Result<usize, usize> {
        let mask = self.buckets.len() - 1;
        let mut i = hash as usize & mask;
        let mut step = 1;
        loop {
            match self.buckets[i] {
                None => return Err(i),
                Some(e) if self.entries[e].0.as_ref() == key => return Ok(e),
                Some(_) => {
                    i = (i + step) & mask;
                    step += 1;
                }
            }
        }
    }

    fn grow(&mut self, to: usize) {
        let old = std::mem::replace(&mut self.buckets, vec![None; to]);
        for e in old.into_iter().flatten() {
            let (ref key, hash, _) = self.entries[e];
            let slot = self
                .probe(key.as_ref(), hash)
                .expect_err("keys are distinct");
            self.buckets[slot] = Some(e);
        }
    }

    /// Inserts `key` with `value` unless it is present (LLVM's
    /// `try_emplace`). Returns the stored value and whether it was inserted.
    pub fn try_insert(&mut self, key: K, value: V) -> (&mut V, bool) {
        let hash = hash32(key.as_ref());
        if !self.buckets.is_empty() {
            if let Ok(e) = self.probe(key.as_ref(), hash) {
                return (&mut self.entries[e].2, false);
            }
        }
        let n = self.buckets.len();
        if (self.entries.len() + 1) * 4 >= n * 3 {
            self.grow((n * 2).max(64));
        }
        let slot = self
            .probe(key.as_ref(), hash)
            .expect_err("key was absent before growing");
        self.buckets[slot] = Some(self.entries.len());
        self.entries.push((key, hash, value));
        let last = self.entries.len() - 1;
        (&mut self.entries[last].2, true)
    }

    /// The value stored for `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.buckets.is_empty() {
            return None;
        }
        self.probe(key, hash32(key))
            .ok()
            .map(|e| &self.entries[e].2)
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Keys and values in LLVM's iteration order (ascending bucket index).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.buckets.iter().flatten().map(|&e| {
            let (k, _, v) = &self.entries[e];
            (k, v)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clang_keys_come_out_feature_arch_triple() {
        let mut m = StringDenseMap::new();
        for k in ["file", "triple", "arch", "kind", "feature"] {
            m.try_insert(k, ());
        }
        let order: Vec<&str> = m.iter().map(|(k, _)| *k).collect();
        assert_eq!(order, ["feature", "arch", "file", "triple", "kind"]);
        assert_eq!(m.bucket_count(), 64);
    }

    #[test]
    fn repeated_key_keeps_its_slot() {
        let mut m = StringDenseMap::new();
        m.try_insert("a", 1);
        m.try_insert("b", 2);
        let (v, inserted) = m.try_insert("a", 3);
        assert!(!inserted);
        assert_eq!(*v, 1);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn grows_at_the_48th_key() {
        let mut m = StringDenseMap::new();
        for i in 0..47 {
            m.try_insert(format!("k{i}"), ());
        }
        assert_eq!(m.bucket_count(), 64);
        m.try_insert("k47".to_string(), ());
        assert_eq!(m.bucket_count(), 128);
        for i in 48..95 {
            m.try_insert(format!("k{i}"), ());
        }
        assert_eq!(m.bucket_count(), 128);
        m.try_insert("k95".to_string(), ());
        assert_eq!(m.bucket_count(), 256);
        // Every key is still found after two rehashes.
        for i in 0..96 {
            assert!(m.contains_key(format!("k{i}").as_bytes()));
        }
        assert_eq!(m.iter().count(), 96);
    }
}
