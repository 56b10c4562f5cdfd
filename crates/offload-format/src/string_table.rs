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
//!
//! [`Builder`] is the general form, used where the table is part of a larger
//! layout (ELF and COFF objects rewritten the way llvm-objcopy does): it also
//! knows COFF tables (which start with their 4-byte size instead of a NUL)
//! and priorities (COFF section names are placed before symbol names).
//! [`StringTable`] is the simple finished ELF table.

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
        let mut b = Builder::new();
        let strings: Vec<&[u8]> = strings.into_iter().collect();
        for s in &strings {
            b.add(s);
        }
        let size = b.finalize();
        let mut bytes = vec![0u8; size as usize];
        b.write_into(&mut bytes);
        let mut offsets = BTreeMap::new();
        offsets.insert(Vec::new(), 0);
        for s in strings {
            offsets.insert(s.to_vec(), b.offset(s) as u64);
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

/// Builder for one tail-merged string table.
#[derive(Debug, Default, Clone)]
pub struct Builder {
    /// Distinct strings; the value is (priority, offset once finalised).
    strings: BTreeMap<Vec<u8>, (u8, u32)>,
    /// Bytes before the first string: 1 (ELF) or 4 (COFF).
    header: u64,
    size: u64,
    finalized: bool,
}

impl Builder {
    /// An ELF string table.
    pub fn new() -> Self {
        Builder {
            header: 1,
            ..Self::default()
        }
    }

    /// A COFF string table (offsets count the 4-byte size field).
    pub fn new_coff() -> Self {
        Builder {
            header: 4,
            ..Self::default()
        }
    }

    /// Registers a string that is placed before all strings of lower
    /// priority; the highest priority given for a string counts.
    pub fn add_with_priority(&mut self, s: &[u8], priority: u8) {
        debug_assert!(!self.finalized);
        if !s.is_empty() {
            let e = self.strings.entry(s.to_vec()).or_insert((0, 0));
            e.0 = e.0.max(priority);
        }
    }

    /// Registers a string (duplicates are ignored).
    pub fn add(&mut self, s: &[u8]) {
        debug_assert!(!self.finalized);
        self.add_with_priority(s, 0);
    }

    /// Assigns offsets; returns the table size in bytes.
    pub fn finalize(&mut self) -> u64 {
        let mut order: Vec<(&Vec<u8>, u8)> = self.strings.iter().map(|(k, v)| (k, v.0)).collect();
        order.sort_by(|(a, pa), (b, pb)| {
            pb.cmp(pa).then_with(|| b.iter().rev().cmp(a.iter().rev()))
        });
        let mut offsets: Vec<(Vec<u8>, u64)> = Vec::with_capacity(order.len());
        let mut size: u64 = self.header;
        let mut previous: &[u8] = &[];
        for (s, _) in order {
            if previous.ends_with(s) {
                // Reuse the tail of the previous string: its NUL is at size - 1.
                offsets.push((s.clone(), size - 1 - s.len() as u64));
                continue;
            }
            offsets.push((s.clone(), size));
            size += s.len() as u64 + 1;
            previous = s;
        }
        for (s, off) in offsets {
            // Offsets are 32-bit in both formats; callers check the size.
            if let Some(e) = self.strings.get_mut(&s) {
                e.1 = off as u32;
            }
        }
        self.size = size;
        self.finalized = true;
        size
    }

    /// Offset of a registered string (0 for the empty string).
    pub fn offset(&self, s: &[u8]) -> u32 {
        debug_assert!(self.finalized);
        if s.is_empty() {
            return 0;
        }
        self.strings.get(s).map_or(0, |e| e.1)
    }

    /// Table size after [`finalize`](Self::finalize).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Writes the finalised table into `out`, which must be `size()` zeroed bytes.
    pub fn write_into(&self, out: &mut [u8]) {
        for (s, &(_, off)) in &self.strings {
            let start = off as usize;
            if let Some(dst) = out.get_mut(start..start + s.len()) {
                dst.copy_from_slice(s);
            }
        }
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

    // Builder-level cases (object files).

    fn build(names: &[&str]) -> (Vec<u8>, Builder) {
        let mut b = Builder::new();
        for n in names {
            b.add(n.as_bytes());
        }
        let size = b.finalize();
        let mut out = vec![0u8; size as usize];
        b.write_into(&mut out);
        (out, b)
    }

    #[test]
    fn builder_suffixes_share_storage() {
        let (bytes, b) = build(&[".text", ".rela.text", "xt", ".data"]);
        // ".rela.text" sorts first (…"txet." vs "atad."), ".text" and "xt" reuse it.
        assert_eq!(bytes, b"\0.rela.text\0.data\0");
        assert_eq!(b.offset(b".rela.text"), 1);
        assert_eq!(b.offset(b".text"), 6);
        assert_eq!(b.offset(b"xt"), 9);
        assert_eq!(b.offset(b".data"), 12);
        assert_eq!(b.offset(b""), 0);
    }

    #[test]
    fn only_the_last_written_string_is_a_merge_candidate() {
        let (bytes, _) = build(&["b", "ab", "xab", "cb"]);
        // Reversed descending: "bc"("cb") > "bax"("xab") > "ba"("ab") > "b".
        assert_eq!(bytes, b"\0cb\0xab\0");
    }

    #[test]
    fn empty_table_is_one_nul() {
        let (bytes, _) = build(&[]);
        assert_eq!(bytes, b"\0");
    }

    #[test]
    fn coff_priority_strings_come_first() {
        let mut b = Builder::new_coff();
        b.add(b"zzzzzzzzzz_symbol");
        b.add_with_priority(b".llvm_addrsig", 255);
        b.add_with_priority(b"__CLANG_OFFLOAD_BUNDLE__x", 255);
        let size = b.finalize();
        let mut out = vec![0u8; size as usize];
        b.write_into(&mut out);
        // Section names (priority) first, each group in reverse-string order
        // ('x' > 'g'); the symbol name, though it would sort first, comes last.
        assert_eq!(
            &out[4..],
            &b"__CLANG_OFFLOAD_BUNDLE__x\0.llvm_addrsig\0zzzzzzzzzz_symbol\0"[..]
        );
        assert_eq!(b.offset(b"__CLANG_OFFLOAD_BUNDLE__x"), 4);
        assert_eq!(b.offset(b".llvm_addrsig"), 30);
    }

    #[test]
    fn high_bytes_compare_unsigned() {
        let (bytes, _) = build(&["a\u{e9}", "ab"]);
        // 0xa9 (last byte of é) > b'b', so the UTF-8 name comes first.
        assert_eq!(bytes, "\0a\u{e9}\0ab\0".as_bytes());
    }
}
