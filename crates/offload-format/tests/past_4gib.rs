//! Offsets and sizes past 4 GiB, without 4 GiB of memory or disk.
//!
//! Each test builds its input in a zero-filled buffer of a little more than
//! 4 GiB. Such a buffer is mapped lazily by the kernel, so only the pages a
//! test writes or a parser reads cost memory: a parser that works on
//! borrowed slices (as ours must) touches a few pages, while one that
//! copied or scanned the whole input would show up as a slow test. The
//! tests are skipped, with a note, where the kernel would refuse the
//! mapping.
//!
//! Forged small inputs whose fields point past 4 GiB are in the hostile
//! corpus (`tests/hostile/`, `*-past-4g*`); these tests check the other
//! half: real data beyond 4 GiB is found at the right place, not at its
//! offset modulo 2^32.

use std::io::{self, Write};

use offload_format::archive::{
    write_archive, Archive, MemberContent, NewMember, WriteOptions, SYM64_THRESHOLD,
};
use offload_format::ccob::{decompress, segments, truncated_md5, Segment};
use test_support::ar::member_header;

const FOUR_GIB: usize = 1 << 32;

/// A zero-filled buffer of `len` bytes, if the kernel will map it without
/// committing memory; `None` (after saying why) otherwise.
fn lazy_zeros(len: usize) -> Option<Vec<u8>> {
    if usize::BITS < 64 {
        eprintln!("skipped: needs a 64-bit address space");
        return None;
    }
    let policy = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .map_or(0, |kb: u64| kb * 1024)
    };
    let fits = match policy.trim() {
        // Always overcommit.
        "1" => true,
        // Strict accounting: the whole mapping counts.
        "2" => field("CommitLimit:").saturating_sub(field("Committed_AS:")) > len as u64,
        // The default heuristic refuses one mapping larger than RAM + swap.
        _ => field("MemTotal:") + field("SwapTotal:") > len as u64 + (1 << 30),
    };
    if !fits {
        eprintln!("skipped: the kernel would not map {len} bytes lazily here");
        return None;
    }
    Some(vec![0u8; len])
}

/// A CCOB v3 header.
fn ccob_v3(total: u64, uncompressed: u64, hash: u64) -> Vec<u8> {
    let mut v = b"CCOB\x03\x00\x01\x00".to_vec();
    v.extend_from_slice(&total.to_le_bytes());
    v.extend_from_slice(&uncompressed.to_le_bytes());
    v.extend_from_slice(&hash.to_le_bytes());
    v
}

/// A zstd frame holding `data` (< 256 bytes) as one raw block.
fn zstd_raw_frame(data: &[u8]) -> Vec<u8> {
    let mut v = vec![0x28, 0xB5, 0x2F, 0xFD, 0x20, data.len() as u8];
    let header: u32 = 1 | ((data.len() as u32) << 3);
    v.extend_from_slice(&header.to_le_bytes()[..3]);
    v.extend_from_slice(data);
    v
}

/// The header of a zstd skippable frame with `len` bytes of content.
fn zstd_skippable(len: u32) -> Vec<u8> {
    let mut v = vec![0x50, 0x2A, 0x4D, 0x18];
    v.extend_from_slice(&len.to_le_bytes());
    v
}

/// Two v3 CCOBs back to back, the first longer than 4 GiB (its payload is
/// a small frame followed by skippable frames of zeros), so the second
/// starts past 4 GiB. The splitter must use the full 64-bit total size.
#[test]
fn ccob_v3_total_size_past_4gib() {
    let first_data = b"first bundle";
    let second_data = b"second bundle";
    let frame1 = zstd_raw_frame(first_data);
    let frame2 = zstd_raw_frame(second_data);
    // Skippable frames of at most u32::MAX bytes each fill the first CCOB
    // to 4 GiB + 96 bytes.
    let first_len = FOUR_GIB + 96;
    let skip1 = 0xFFFF_0000u32;
    let skip2 = (first_len - 32 - frame1.len() - 8 - skip1 as usize - 8) as u32;
    let second_len = 32 + frame2.len();
    let Some(mut buf) = lazy_zeros(first_len + second_len) else {
        return;
    };
    let mut at = 0;
    let put = |buf: &mut Vec<u8>, at: &mut usize, bytes: &[u8]| {
        buf[*at..*at + bytes.len()].copy_from_slice(bytes);
        *at += bytes.len();
    };
    put(
        &mut buf,
        &mut at,
        &ccob_v3(
            first_len as u64,
            first_data.len() as u64,
            truncated_md5(first_data),
        ),
    );
    put(&mut buf, &mut at, &frame1);
    put(&mut buf, &mut at, &zstd_skippable(skip1));
    at += skip1 as usize;
    put(&mut buf, &mut at, &zstd_skippable(skip2));
    at += skip2 as usize;
    assert_eq!(at, first_len);
    put(
        &mut buf,
        &mut at,
        &ccob_v3(
            second_len as u64,
            second_data.len() as u64,
            truncated_md5(second_data),
        ),
    );
    put(&mut buf, &mut at, &frame2);
    assert_eq!(at, buf.len());

    let parts: Vec<_> = segments(&buf).collect::<Result<_, _>>().unwrap();
    assert_eq!(
        parts.len(),
        2,
        "{:?}",
        parts.iter().map(seg_offset).collect::<Vec<_>>()
    );
    let Segment::Ccob {
        offset,
        bytes,
        header,
    } = parts[1]
    else {
        panic!("second segment is not a CCOB");
    };
    assert_eq!(offset, first_len);
    assert_eq!(header.total_size, Some(second_len as u64));
    assert_eq!(decompress(bytes).unwrap().data, second_data);
    // The first one decompresses too: the skippable frames are skipped.
    let Segment::Ccob { bytes, .. } = parts[0] else {
        panic!("first segment is not a CCOB");
    };
    assert_eq!(bytes.len(), first_len);
    let out = decompress(bytes).unwrap();
    assert_eq!(out.data, first_data);
    assert_eq!(out.ccob_len, first_len);
}

fn seg_offset(s: &Segment<'_>) -> usize {
    match s {
        Segment::Uncompressed(_) => 0,
        Segment::Ccob { offset, .. } | Segment::Gap { offset, .. } => *offset,
    }
}

/// An archive whose first member is 4 GiB + 2 bytes: the second member's
/// header is past 4 GiB and must be found there.
#[test]
fn archive_member_past_4gib() {
    let big = FOUR_GIB as u64 + 2;
    let second_at = 8 + 60 + big as usize;
    let Some(mut buf) = lazy_zeros(second_at + 60 + 4) else {
        return;
    };
    buf[..8].copy_from_slice(b"!<arch>\n");
    buf[8..68].copy_from_slice(&member_header("big.bin/", big));
    // A wrong (32-bit) size would land here, inside the big member.
    buf[68 + 2..68 + 2 + 60].copy_from_slice(&member_header("decoy.o/", 4));
    buf[second_at..second_at + 60].copy_from_slice(&member_header("k.o/", 4));
    buf[second_at + 60..].copy_from_slice(b"DATA");

    let archive = Archive::parse(&buf).unwrap();
    let members: Vec<_> = archive.members().collect::<Result<_, _>>().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[0].name, b"big.bin");
    let MemberContent::Inline(data) = members[0].content else {
        panic!("thin?")
    };
    assert_eq!(data.len() as u64, big);
    assert_eq!(members[1].name, b"k.o");
    assert_eq!(members[1].header_offset, second_at as u64);
    assert_eq!(members[1].content, MemberContent::Inline(b"DATA"));
}

/// Counts what is written and keeps only the start.
struct Head {
    kept: Vec<u8>,
    total: u64,
}

impl Write for Head {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = (1usize << 16).saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..buf.len().min(room)]);
        self.total += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writing an archive whose last member starts past 4 GiB switches to the
/// 64-bit symbol table (`/SYM64/`), with the member's full offset.
#[test]
fn archive_writer_sym64_offsets_past_4gib() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/archive/elf-mixed.a");
    let fixture = std::fs::read(&fixture).unwrap();
    let archive = Archive::parse(&fixture).unwrap();
    let elf = archive
        .members()
        .filter_map(Result::ok)
        .find_map(|m| match m.content {
            MemberContent::Inline(d) if d.starts_with(b"\x7fELF") => Some(d.to_vec()),
            _ => None,
        })
        .expect("an ELF member in elf-mixed.a");

    let Some(mut big) = lazy_zeros(FOUR_GIB) else {
        return;
    };
    // Two zero bytes at the start would make it a COFF object of unknown
    // machine to LLVM's file sniffing; this is plain data.
    big[..8].copy_from_slice(b"BIGDATA!");
    let members = [
        NewMember {
            name: b"big.bin",
            data: &big,
        },
        NewMember {
            name: b"k.o",
            data: &elf,
        },
    ];
    let mut out = Head {
        kept: Vec::new(),
        total: 0,
    };
    let report = write_archive(&members, &WriteOptions::default(), &mut out).unwrap();
    assert!(report.sym64);
    assert_eq!(WriteOptions::default().sym64_threshold, SYM64_THRESHOLD);
    let head = &out.kept;
    assert_eq!(&head[..8], b"!<arch>\n");
    assert_eq!(&head[8..15], b"/SYM64/");
    let table_size: u64 = std::str::from_utf8(&head[8 + 48..8 + 58])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let table = &head[68..68 + table_size as usize];
    let word = |i: usize| u64::from_be_bytes(table[i * 8..i * 8 + 8].try_into().unwrap());
    let count = word(0);
    assert!(count > 0, "the ELF member defines symbols");
    // Every symbol is the ELF member's: its header follows the symbol
    // table and the big member (header, data, no padding: even size).
    let expected = 68 + table_size + 60 + FOUR_GIB as u64;
    assert!(expected > u64::from(u32::MAX));
    for i in 1..=count as usize {
        assert_eq!(word(i), expected);
    }
    let elf_padded = elf.len() as u64 + elf.len() as u64 % 2;
    assert_eq!(out.total, expected + 60 + elf_padded);
}

const HOST: &[u8] = b"host-x86_64-unknown-linux-gnu-";
const GFX906: &[u8] = b"hip-amdgcn-amd-amdhsa--gfx906";

/// A binary bundle whose second entry lies past 4 GiB; a decoy sits where
/// its offset modulo 2^32 points.
#[test]
fn bundle_entry_past_4gib() {
    let header_len = 32 + (24 + HOST.len()) + (24 + GFX906.len());
    let far = FOUR_GIB + header_len + 8;
    let Some(mut buf) = lazy_zeros(far + 4) else {
        return;
    };
    let mut h = offload_format::bundle::MAGIC.to_vec();
    h.extend_from_slice(&2u64.to_le_bytes());
    for (offset, size, id) in [(header_len, 8, HOST), (far, 4, GFX906)] {
        h.extend_from_slice(&(offset as u64).to_le_bytes());
        h.extend_from_slice(&(size as u64).to_le_bytes());
        h.extend_from_slice(&(id.len() as u64).to_le_bytes());
        h.extend_from_slice(id);
    }
    assert_eq!(h.len(), header_len);
    buf[..header_len].copy_from_slice(&h);
    buf[header_len..header_len + 8].copy_from_slice(b"HOSTDATA");
    buf[far - FOUR_GIB..far - FOUR_GIB + 4].copy_from_slice(b"BAD!");
    buf[far..].copy_from_slice(b"DEV1");

    let entries = offload_format::bundle::parse(&buf).unwrap();
    let dev = entries.iter().find(|e| e.id == GFX906).unwrap();
    assert_eq!(dev.offset, far as u64);
    assert_eq!(dev.data, b"DEV1");
    let host = entries.iter().find(|e| e.id == HOST).unwrap();
    assert_eq!(host.data, b"HOSTDATA");
}

/// Writing a bundle with a 4 GiB entry: the next entry's offset is stored
/// in full, and the padding is streamed (nothing of 4 GiB is buffered).
#[test]
fn bundle_writer_offsets_past_4gib() {
    let Some(big) = lazy_zeros(FOUR_GIB + 3) else {
        return;
    };
    let entries: [(&[u8], &[u8]); 2] = [(HOST, &big), (GFX906, b"DEV1")];
    let mut out = Head {
        kept: Vec::new(),
        total: 0,
    };
    offload_format::bundle::write(&mut out, &entries, 16).unwrap();
    let header_len = (32 + (24 + HOST.len()) + (24 + GFX906.len())) as u64;
    let first = header_len.next_multiple_of(16);
    let second = (first + big.len() as u64).next_multiple_of(16);
    assert!(second > u64::from(u32::MAX));
    let at = 32 + 24 + HOST.len();
    let field = |i: usize| u64::from_le_bytes(out.kept[i..i + 8].try_into().unwrap());
    assert_eq!(field(32), first);
    assert_eq!(field(at), second);
    assert_eq!(out.total, second + 4);
    assert_eq!(
        offload_format::bundle::written_size(&entries, 16).unwrap(),
        second + 4
    );
}

/// A version 1 offload binary with `image`, and two strings.
fn offload_entry(image: &[u8]) -> offload_format::offload_binary::ImageEntry<'_> {
    use offload_format::offload_binary::{ImageEntry, ImageKind, OffloadKind};
    ImageEntry {
        image_kind: ImageKind::OBJECT,
        offload_kind: OffloadKind(1),
        flags: 0,
        strings: vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx906")],
        image,
    }
}

/// Two concatenated offload binaries, the first with an image of a little
/// more than 4 GiB, so the second starts past 4 GiB; a decoy binary sits
/// where its offset modulo 2^32 points. The reader (alone, and through the
/// extraction that `llvm-offload-binary` uses) must find the second binary
/// at its full offset, and take its strings and image from there.
#[test]
fn offload_binary_past_4gib() {
    use offload_format::offload_binary::{extract::extract, parse_binaries};
    let image_len = FOUR_GIB + 24;
    let second = offload_entry(b"DEV2").to_v1();
    let decoy = offload_entry(b"BAD!").to_v1();
    // Only the first binary's size is needed to place the others.
    let Some(probe) = lazy_zeros(image_len) else {
        return;
    };
    let (prefix, layout) = offload_entry(&probe).v1_prefix();
    drop(probe);
    let far = layout.size as usize;
    assert!(far > FOUR_GIB);
    let Some(mut buf) = lazy_zeros(far + second.len()) else {
        return;
    };
    buf[..prefix.len()].copy_from_slice(&prefix);
    buf[layout.image as usize..layout.image as usize + 8].copy_from_slice(b"BIGIMAGE");
    let decoy_at = far - FOUR_GIB;
    assert!(
        decoy_at >= layout.image as usize,
        "the decoy lies in the image"
    );
    buf[decoy_at..decoy_at + decoy.len()].copy_from_slice(&decoy);
    buf[far..].copy_from_slice(&second);

    let binaries = parse_binaries(&buf).unwrap();
    assert_eq!(binaries.len(), 2);
    assert_eq!(binaries[0].image.len(), image_len);
    assert_eq!(&binaries[0].image[..8], b"BIGIMAGE");
    assert_eq!(binaries[1].offset, far as u64);
    assert_eq!(&binaries[1].image[..], b"DEV2");
    assert_eq!(binaries[1].arch(), b"gfx906");

    let found = extract(&buf, b"big.bin").unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(&found[1].binary.image[..], b"DEV2");
}

/// Writing an offload binary with an image of more than 4 GiB: the size
/// and image fields hold the full 64-bit values, and the image is written
/// from the caller's slice (no 4 GiB buffer).
#[test]
fn offload_binary_writer_sizes_past_4gib() {
    let Some(big) = lazy_zeros(FOUR_GIB + 3) else {
        return;
    };
    let entry = offload_entry(&big);
    let mut out = Head {
        kept: Vec::new(),
        total: 0,
    };
    entry.write_v1(&mut out).unwrap();
    let field = |at: usize| u64::from_le_bytes(out.kept[at..at + 8].try_into().unwrap());
    let layout = entry.layout_v1();
    // Header: magic, version, size; entry at 32: kinds and flags, string
    // offset, string count, image offset, image size.
    assert_eq!(field(8), layout.size);
    assert!(layout.size > u64::from(u32::MAX));
    assert_eq!(field(32 + 24), layout.image);
    assert_eq!(field(32 + 32), FOUR_GIB as u64 + 3);
    assert_eq!(out.total, layout.size);
    assert_eq!(layout.size % 8, 0);
}
