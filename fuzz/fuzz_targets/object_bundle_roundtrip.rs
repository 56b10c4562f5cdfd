//! Write-then-read for object bundles: adding bundle sections to a host
//! object (a seed ELF or COFF object, mutated) and reading them back gives
//! the same entries in order, and stripping them leaves none.
//!
//! Input layout (so real objects can be seeds): one byte with the entry
//! count (mod 5), then per entry an ID length byte, the ID, a 2-byte
//! little-endian content length and the content; the rest is the host.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::object_bundle::{add_bundle_sections, bundle_sections, strip_bundle_sections};

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = data.split_at_checked(n)?;
    *data = rest;
    Some(head)
}

fn entries<'a>(data: &mut &'a [u8]) -> Option<Vec<(&'a [u8], &'a [u8])>> {
    let count = take(data, 1)?[0] % 5;
    let mut out = Vec::new();
    for _ in 0..count {
        let id_len = usize::from(take(data, 1)?[0]);
        let id = take(data, id_len)?;
        let len = take(data, 2)?;
        let content = take(data, usize::from(u16::from_le_bytes([len[0], len[1]])))?;
        out.push((id, content));
    }
    Some(out)
}

/// Whether `data` is an ELF file without a section header table
/// (`e_shoff` 0 or `e_shnum` 0). For a host without a usable section table
/// (none, or no section name table) llvm-objcopy 22 writes the added
/// sections' data but no section header table, so nothing lists them. Our
/// rewriter gives the same bytes (checked against llvm-objcopy-22 on the
/// fuzzer's finds) and the bundler's `-type=o` output equals LLVM's; the
/// entries are lost in both. Such output is accepted here, as long as it
/// lists no section at all.
fn elf_without_sections(data: &[u8]) -> bool {
    if !data.starts_with(b"\x7fELF") {
        return false;
    }
    let zero = |r: Option<&[u8]>| r.is_some_and(|b| b.iter().all(|&x| x == 0));
    match data.get(4) {
        Some(1) => zero(data.get(0x20..0x24)) || zero(data.get(0x30..0x32)),
        _ => zero(data.get(0x28..0x30)) || zero(data.get(0x3c..0x3e)),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let Some(entries) = entries(&mut rest) else {
        return;
    };
    let host = rest;
    let Ok(fat) = add_bundle_sections(host, &entries) else {
        return;
    };
    // Section names cannot hold a NUL; such IDs are outside the format.
    if entries.iter().any(|(id, _)| id.contains(&0)) {
        return;
    }
    if elf_without_sections(&fat) {
        return;
    }
    let found = bundle_sections(&fat).expect("our fat object reads back");
    // The host may already carry bundle sections; ours come last.
    assert!(found.len() >= entries.len());
    let ours = &found[found.len() - entries.len()..];
    for (section, (id, content)) in ours.iter().zip(&entries) {
        assert_eq!(section.id, *id);
        assert_eq!(
            section.contents().expect("contents inside the file"),
            *content
        );
    }
    let thin = strip_bundle_sections(&fat).expect("our fat object can be stripped");
    assert!(bundle_sections(&thin)
        .expect("the stripped object reads")
        .is_empty());
});
