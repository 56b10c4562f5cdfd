//! ELF string tables laid out the way LLVM's `StringTableBuilder` (ELF kind)
//! lays them out when it is allowed to optimise.
//!
//! llvm-objcopy rebuilds every non-allocated `SHT_STRTAB` section from the
//! names that still refer to it, so byte identity needs the same order and
//! the same suffix sharing. The rules, observed on LLVM 22 output:
//!
//! * ELF tables start with one NUL byte (the empty string); COFF tables start
//!   with their 4-byte size;
//! * strings with a priority (COFF section names) come before the others;
//!   within one priority the distinct strings are sorted by their bytes read
//!   back to front, in descending order (a string that is a suffix of another
//!   sorts after it);
//! * walking that order, a string that is a suffix of the last string
//!   actually written reuses that string's tail; anything else is appended,
//!   followed by a NUL.

use std::collections::BTreeMap;

/// Builder for one tail-merged string table.
#[derive(Debug, Default, Clone)]
pub(crate) struct StrTabBuilder {
    /// Distinct strings; the value is (priority, offset once finalised).
    strings: BTreeMap<Vec<u8>, (u8, u32)>,
    /// Bytes before the first string: 1 (ELF) or 4 (COFF).
    header: u64,
    size: u64,
    finalized: bool,
}

impl StrTabBuilder {
    /// An ELF string table.
    pub(crate) fn new() -> Self {
        StrTabBuilder {
            header: 1,
            ..Self::default()
        }
    }

    /// A COFF string table (offsets count the 4-byte size field).
    pub(crate) fn new_coff() -> Self {
        StrTabBuilder {
            header: 4,
            ..Self::default()
        }
    }

    /// Registers a string that is placed before all strings of lower
    /// priority; the highest priority given for a string counts.
    pub(crate) fn add_with_priority(&mut self, s: &[u8], priority: u8) {
        debug_assert!(!self.finalized);
        if !s.is_empty() {
            let e = self.strings.entry(s.to_vec()).or_insert((0, 0));
            e.0 = e.0.max(priority);
        }
    }

    /// Registers a string (duplicates are ignored).
    pub(crate) fn add(&mut self, s: &[u8]) {
        debug_assert!(!self.finalized);
        self.add_with_priority(s, 0);
    }

    /// Assigns offsets; returns the table size in bytes.
    pub(crate) fn finalize(&mut self) -> u64 {
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
    pub(crate) fn offset(&self, s: &[u8]) -> u32 {
        debug_assert!(self.finalized);
        if s.is_empty() {
            return 0;
        }
        self.strings.get(s).map_or(0, |e| e.1)
    }

    /// Table size after [`finalize`](Self::finalize).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Writes the finalised table into `out`, which must be `size()` zeroed bytes.
    pub(crate) fn write_into(&self, out: &mut [u8]) {
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
    fn coff_priority_strings_come_first() {
        let mut b = StrTabBuilder::new_coff();
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
