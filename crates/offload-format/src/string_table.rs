//! ELF-style string tables with tail merging, laid out exactly as LLVM's
//! `StringTableBuilder` does in its ELF mode.
//!
//! The table starts with a NUL byte (offset 0 is the empty string). Distinct
//! strings are sorted so that every string directly follows the strings it is
//! a suffix of; a string that is a suffix of the previously stored one is not
//! stored again but points into it. Concretely the order is descending by the
//! byte-reversed string (bytes unsigned; a string whose reversal is a prefix
//! of another's sorts after it). The resulting layout depends only on the set
//! of strings, not on the order they were added in.

use std::collections::BTreeMap;

/// A finished string table: its bytes and the offset of every string in it.
#[derive(Debug, Clone)]
pub struct StringTable {
    bytes: Vec<u8>,
    offsets: BTreeMap<Vec<u8>, u64>,
}

impl StringTable {
    /// Builds the table for `strings` (duplicates are fine).
    pub fn build<'a, I>(strings: I) -> StringTable
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let mut distinct: Vec<&[u8]> = strings.into_iter().filter(|s| !s.is_empty()).collect();
        distinct.sort_unstable_by(|a, b| b.iter().rev().cmp(a.iter().rev()));
        distinct.dedup();

        let mut bytes = vec![0u8];
        let mut offsets = BTreeMap::new();
        offsets.insert(Vec::new(), 0);
        let mut prev: &[u8] = &[];
        for s in distinct {
            let offset = if prev.ends_with(s) {
                // Shares the tail of the string stored just before.
                bytes.len() - s.len() - 1
            } else {
                let at = bytes.len();
                bytes.extend_from_slice(s);
                bytes.push(0);
                prev = s;
                at
            };
            offsets.insert(s.to_vec(), offset as u64);
        }
        StringTable { bytes, offsets }
    }

    /// The table's bytes, starting with the NUL of the empty string.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Size of the table in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a table holds at least the empty string.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Offset of `s` inside the table, if it was added (the empty string is
    /// always present, at 0).
    pub fn offset(&self, s: &[u8]) -> Option<u64> {
        self.offsets.get(s).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_share_storage() {
        let t = StringTable::build([&b"c"[..], b"abc", b"bc"]);
        assert_eq!(t.bytes(), b"\0abc\0");
        assert_eq!(t.offset(b"abc"), Some(1));
        assert_eq!(t.offset(b"bc"), Some(2));
        assert_eq!(t.offset(b"c"), Some(3));
        assert_eq!(t.offset(b""), Some(0));
    }

    #[test]
    fn spec_example_layout() {
        let t = StringTable::build([&b"arch"[..], b"generic", b"triple", b"x86_64-pc-linux-gnu"]);
        assert_eq!(t.bytes(), b"\0x86_64-pc-linux-gnu\0arch\0triple\0generic\0");
    }

    #[test]
    fn order_of_addition_does_not_matter() {
        let a = StringTable::build([&b"xy"[..], b"y", b"zzy", b"", b"\xff"]);
        let b = StringTable::build([&b"\xff"[..], b"zzy", b"y", b"xy", b"y"]);
        assert_eq!(a.bytes(), b.bytes());
    }

    #[test]
    fn reversed_descending_order() {
        // Reversed: "bz" > "ba" > "b", so "zb" is stored first and "b" shares
        // the tail of "ab", the string stored just before it.
        let t = StringTable::build([&b"ab"[..], b"zb", b"b"]);
        assert_eq!(t.bytes(), b"\0zb\0ab\0");
        assert_eq!(t.offset(b"b"), Some(5));
    }
}
