//! Write-then-read: every archive our writer produces must read back with
//! the same member names and contents, and its symbol table must point at
//! member headers.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::archive::{
    write_archive_to_vec, Archive, MemberContent, NewMember, WriteOptions, HEADER_SIZE,
};

#[derive(Arbitrary, Debug)]
struct Input {
    members: Vec<(Name, Vec<u8>)>,
    /// Forces the 64-bit symbol table when small.
    sym64_threshold: Option<u16>,
}

/// Member names as the tools produce them (paths typed by a user): ASCII
/// path characters, never empty, never `/` alone. Names LLVM's reader gives
/// a special meaning to (`/`, `//`, `__.SYMDEF`, `#1/…`) are excluded: LLVM
/// writes them unchanged too, and the reader then takes them for special
/// members.
#[derive(Debug)]
struct Name(Vec<u8>);

impl<'a> Arbitrary<'a> for Name {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        const FIRST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
        const REST: &[u8] = b"abcxyzABCXYZ0189_.-/ ";
        let mut name = vec![*u.choose(FIRST)?];
        let len = u.int_in_range(0..=40)?;
        for _ in 0..len {
            name.push(*u.choose(REST)?);
        }
        // A trailing slash or space would be taken as the GNU terminator or
        // padding; the tools never produce such names.
        while matches!(name.last(), Some(b'/' | b' ')) {
            name.pop();
        }
        Ok(Name(name))
    }
}

fuzz_target!(|input: Input| {
    let members: Vec<NewMember<'_>> = input
        .members
        .iter()
        .map(|(name, data)| NewMember {
            name: &name.0,
            data,
        })
        .collect();
    let mut options = WriteOptions::default();
    if let Some(t) = input.sym64_threshold {
        options.sym64_threshold = u64::from(t);
    }
    let Ok((bytes, report)) = write_archive_to_vec(&members, &options) else {
        // Only a member that looks like a broken object fails the writer.
        return;
    };
    let archive = Archive::parse(&bytes).expect("our archive parses");
    let read: Vec<_> = archive
        .members()
        .collect::<Result<_, _>>()
        .expect("our archive's members read back");
    assert_eq!(read.len(), members.len());
    for (r, m) in read.iter().zip(&members) {
        assert_eq!(r.name, m.name);
        assert_eq!(r.content, MemberContent::Inline(m.data));
    }
    // Symbol table: count, then one big-endian offset per symbol, each the
    // offset of a member header.
    let table = archive.symbol_table();
    if table.is_empty() {
        return;
    }
    let word = if report.sym64 { 8 } else { 4 };
    let read_word = |at: usize| -> u64 {
        let b = &table[at..at + word];
        b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x))
    };
    let count = read_word(0) as usize;
    let headers: Vec<u64> = read.iter().map(|r| r.header_offset).collect();
    for i in 0..count {
        let offset = read_word(word * (i + 1));
        assert!(
            headers.contains(&offset),
            "symbol {i} points at {offset}, not a member"
        );
        assert!(offset as usize + HEADER_SIZE <= bytes.len());
    }
});
