//! Inputs the fuzz targets (`fuzz/`) found to crash the library, each kept
//! as a test of the behaviour that replaced the crash. The same inputs are
//! seeds of the target that found them (`fuzz/corpus/<target>/regress-*`).

use offload_format::archive::{Archive, MemberContent};
use test_support::ar::{long_names, member_header};

/// archive_read: a long-name offset that points at the `\n` ending the
/// previous name panicked (slice start after end). LLVM's reader gives the
/// member an empty name (`llvm-ar-22 t` lists one empty line).
#[test]
fn long_name_offset_at_a_terminator_is_an_empty_name() {
    let table = b"ab/\n";
    let mut data = b"!<arch>\n".to_vec();
    data.extend(long_names(table));
    data.extend(member_header("/3", 2));
    data.extend_from_slice(b"hi");
    let archive = Archive::parse(&data).unwrap();
    let members: Vec<_> = archive.members().collect::<Result<_, _>>().unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].name, b"");
    assert_eq!(members[0].content, MemberContent::Inline(b"hi"));
}

/// object_bundle_roundtrip: a host whose sections have alignments near
/// 2^64 made the layout wrap to small offsets, and the "fat" object was
/// written with a section over the ELF header (the bundler exited 0 with
/// an unreadable object; LLVM 22's llvm-objcopy fails). LLVM rounds up by
/// dividing first; with the same arithmetic the size comes out as the one
/// llvm-objcopy-22 fails to allocate (0xf6000000000001d0), and is refused.
#[test]
fn huge_section_alignments_do_not_wrap_the_layout() {
    use offload_format::object_bundle::{add_bundle_sections, Error};
    let host = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/hostile/elf-host-two-huge-aligns.o"),
    )
    .unwrap();
    // What `clang-offload-bundler -type=o` adds: the host placeholder and
    // one device entry.
    let entries: [(&[u8], &[u8]); 2] = [
        (b"host-x86_64-unknown-linux-gnu-", b"\0"),
        (b"hip-amdgcn-amd-amdhsa--gfx906", b"DEV1"),
    ];
    match add_bundle_sections(&host, &entries) {
        Err(Error::OutputTooLarge { size }) => assert_eq!(size, 0xf600_0000_0000_01d0),
        other => panic!("expected OutputTooLarge, got {other:?}"),
    }
}

/// object_bundle_roundtrip: hosts llvm-objcopy-22 rewrites into objects
/// whose entries cannot be found (no section table: the data is appended
/// but listed nowhere; a NOBITS section aligned to 2^64-1: later sections
/// land on the headers). LLVM 22's bundler exits 0 with such output; we
/// refuse to write it.
#[test]
fn hosts_whose_rewrite_is_unreadable_are_refused() {
    use offload_format::object_bundle::{add_bundle_sections, Error};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hostile");
    let entries: [(&[u8], &[u8]); 2] = [
        (b"host-x86_64-unknown-linux-gnu-", b"\0"),
        (b"hip-amdgcn-amd-amdhsa--gfx906", b"DEV1"),
    ];
    let host = std::fs::read(dir.join("elf-host-no-section-table.o")).unwrap();
    assert_eq!(add_bundle_sections(&host, &entries), Err(Error::Unreadable));
    let host = std::fs::read(dir.join("elf-host-align-max.o")).unwrap();
    assert!(add_bundle_sections(&host, &entries).is_err());
}

/// member_symbols: an ELF member whose section header table offset is
/// 2^64-1 with `e_shnum` 0 (the real count then lives in the first section
/// header) made the reader add field offsets to that offset and overflow
/// (a panic in debug builds, a read of the wrong bytes in release builds).
/// LLVM 22 reports the table as past the end of the file (`llvm-ar-22 rc`:
/// "section header table goes past the end of the file: e_shoff =
/// 0xffffffffffffffff"), and so do we, through the archive writer too.
#[test]
fn section_table_offset_near_2_pow_64_is_past_the_end() {
    use offload_format::archive::{member_symbols, write_archive_to_vec, NewMember, WriteOptions};
    let expected =
        "section header table goes past the end of the file: e_shoff = 0xffffffffffffffff";
    // The input the fuzzer found, and a minimal one: a 64-bit little-endian
    // header with e_shoff = 2^64-1, e_shentsize = 64, e_shnum = 0.
    let found = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/member_symbols/regress-shoff-max-shnum-0"),
    )
    .unwrap();
    let mut minimal = vec![0u8; 64];
    minimal[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
    minimal[16..18].copy_from_slice(&1u16.to_le_bytes());
    minimal[18..20].copy_from_slice(&62u16.to_le_bytes());
    minimal[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    minimal[58..60].copy_from_slice(&64u16.to_le_bytes());
    for data in [&found, &minimal] {
        assert_eq!(member_symbols(data).unwrap_err().to_string(), expected);
        let members = [NewMember { name: b"m.o", data }];
        let e = write_archive_to_vec(&members, &WriteOptions::default()).unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
}
