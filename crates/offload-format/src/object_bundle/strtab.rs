//! ELF string tables laid out the way LLVM's `StringTableBuilder` (ELF kind)
//! lays them out when it is allowed to optimise.
//!
//! llvm-objcopy rebuilds every non-allocated `SHT_STRTAB` section from the
//! names that still refer to it, so byte identity needs the same order and
//! the same suffix sharing. The rules, observed on LLVM 22 output:
//!
//! * offset 0 holds the empty string;
//! * the distinct strings are sorted by their bytes read back to front, in
//!   descending order (a string that is a suffix of another sorts after it);
//! * walking that order, a string that is a suffix of the last string
//!   actually written reuses that string's tail; anything else is appended,
//!   followed by a NUL.

use std::collections::BTreeMap;

/// Builder for one tail-merged ELF string table.
#[derive(Debug, Default, Clone)]
pub(crate) struct StrTabBuilder {
    /// Distinct strings; the value is the offset once finalised.
    strings: BTreeMap<Vec<u8>, u32>,
    size: u64,
    finalized: bool,
}

impl StrTabBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Registers a string (duplicates are ignored).
    pub(crate) fn add(&mut self, s: &[u8]) {
        debug_assert!(!self.finalized);
        if !s.is_empty() {
            self.strings.entry(s.to_vec()).or_insert(0);
        }
    }

    /// Assigns offsets; returns the table size in bytes.
    pub(crate) fn finalize(&mut self) -> u64 {
        let mut order: Vec<&Vec<u8>> = self.strings.keys().collect();
        order.sort_by(|a, b| b.iter().rev().cmp(a.iter().rev()));
        let mut offsets: Vec<(Vec<u8>, u64)> = Vec::with_capacity(order.len());
        let mut size: u64 = 1;
        let mut previous: &[u8] = &[];
        for s in order {
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
            // Offsets of ELF string tables are 32-bit; callers check the size.
            self.strings.insert(s, off as u32);
        }
        self.size = size;
        self.finalized = true;
        size
    }

    /// Offset of a registered string (0 for the empty string).
    pub(crate) fn offset(&self, s: &[u8]) -> u32 {
        debug_assert!(self.finalized);
        if s.is_empty() {
            return 0;
        }
        self.strings.get(s).copied().unwrap_or(0)
    }

    /// Table size after [`finalize`](Self::finalize).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Writes the finalised table into `out`, which must be `size()` zeroed bytes.
    pub(crate) fn write_into(&self, out: &mut [u8]) {
        for (s, &off) in &self.strings {
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

    fn build(names: &[&str]) -> (Vec<u8>, StrTabBuilder) {
        let mut b = StrTabBuilder::new();
        for n in names {
            b.add(n.as_bytes());
        }
        let size = b.finalize();
        let mut out = vec![0u8; size as usize];
        b.write_into(&mut out);
        (out, b)
    }

    #[test]
    fn suffixes_share_storage() {
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
    fn high_bytes_compare_unsigned() {
        let (bytes, _) = build(&["a\u{e9}", "ab"]);
        // 0xa9 (last byte of é) > b'b', so the UTF-8 name comes first.
        assert_eq!(bytes, "\0a\u{e9}\0ab\0".as_bytes());
    }
}
