//! Write-then-read for object bundles: adding bundle sections to a host
//! object (a seed ELF or COFF object, mutated) and reading them back gives
//! the same entries in order, and stripping them leaves none. (Hosts that
//! llvm-objcopy 22 would turn into unreadable objects are refused by
//! `add_bundle_sections` itself.)
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
    let found = bundle_sections(&fat).expect("our fat object reads back");
    // A section named just the prefix is no entry (LLVM 22 skips it too).
    let listed: Vec<_> = entries.iter().filter(|(id, _)| !id.is_empty()).collect();
    // The host may already carry bundle sections; ours come last.
    assert!(found.len() >= listed.len());
    let ours = &found[found.len() - listed.len()..];
    for (section, (id, content)) in ours.iter().zip(listed) {
        assert_eq!(section.id, *id);
        assert_eq!(
            section.contents().expect("contents inside the file"),
            *content
        );
    }
    // Stripping lays the object out again and may refuse where
    // llvm-objcopy 22 fails too (an alignment that only wraps without the
    // added sections); what it returns has no bundle section left.
    if let Ok(thin) = strip_bundle_sections(&fat) {
        assert!(bundle_sections(&thin)
            .expect("the stripped object reads")
            .is_empty());
    }
});
