//! Archive reading: hostile `ar` files must give LLVM-style errors, never a
//! panic, a read past the end, or a member walk that does not advance.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::archive::{member_symbols, Archive, MemberContent, HEADER_SIZE};

fuzz_target!(|data: &[u8]| {
    let Ok(archive) = Archive::parse(data) else {
        return;
    };
    let _ = (
        archive.kind(),
        archive.symbol_table(),
        archive.string_table(),
    );
    let mut last_offset = None;
    for member in archive.members() {
        let Ok(member) = member else { break };
        // Members come in file order, each after the previous header.
        if let Some(last) = last_offset {
            assert!(
                member.header_offset >= last + HEADER_SIZE as u64,
                "member walk went back"
            );
        }
        last_offset = Some(member.header_offset);
        assert!(member.header_offset < data.len() as u64);
        assert_eq!(member.header.len(), HEADER_SIZE);
        if let MemberContent::Inline(bytes) = member.content {
            assert!(bytes.len() <= data.len());
            // Thin members would be read from disk; only inline ones are
            // looked at here.
            let _ = member_symbols(bytes);
        }
    }
});
