use super::write::{central_header, end_records, local_header, Entry, Layout};
use super::*;

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn crc(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

/// An archive of `members` (name, contents, deflated?) made with the
/// writer.
fn build(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut layout = Layout::new();
    for (name, data, deflated) in members {
        let stored = if *deflated {
            deflate(data)
        } else {
            data.to_vec()
        };
        let method = if *deflated {
            Method::Deflated
        } else {
            Method::Stored
        };
        let e = Entry::new(
            name.as_bytes(),
            method,
            crc(data),
            stored.len() as u64,
            data.len() as u64,
        );
        out.extend(layout.member(&e));
        out.extend(stored);
    }
    out.extend(layout.finish(b""));
    out
}

fn decode(m: &Member<'_>) -> Result<Vec<u8>, ZipError> {
    let mut v = Vec::new();
    m.decode(&mut v, u64::MAX)?;
    Ok(v)
}

#[test]
fn members_read_back_as_written() {
    let big: Vec<u8> = (0..300_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    let z = build(&[
        ("a.txt", b"hello", false),
        ("lib/x.so", &big, true),
        ("d/", b"", false),
    ]);
    assert!(has_magic(&z));
    let a = Archive::parse(&z).unwrap();
    assert_eq!(a.members.len(), 3);
    assert_eq!(a.members[0].name, b"a.txt");
    assert_eq!(a.members[0].stored(), Some(&b"hello"[..]));
    assert_eq!(decode(&a.members[1]).unwrap(), big);
    assert!(a.members[2].is_dir());
    // A partial decoding stops at the limit.
    let mut head = Vec::new();
    assert_eq!(a.members[1].decode(&mut head, 4096).unwrap(), 4096);
    assert_eq!(head, &big[..4096]);
}

#[test]
fn members_with_data_descriptors_are_read() {
    // As a writer to a non-seekable stream makes them (Python's zipfile
    // among others): bit 3 set, zero sizes in the local header, and the
    // CRC and sizes in a descriptor after the data.
    let z: Vec<u8> = {
        let data = b"abc".repeat(100);
        let d = deflate(&data);
        let mut out = Vec::new();
        // Local header with bit 3 and zero sizes, then the descriptor.
        out.extend(LOCAL_MAGIC.to_le_bytes());
        out.extend(20u16.to_le_bytes());
        out.extend(8u16.to_le_bytes());
        out.extend(8u16.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend([0u8; 12]);
        out.extend(1u16.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(b"m");
        out.extend(&d);
        out.extend(0x0807_4b50u32.to_le_bytes());
        out.extend(crc(&data).to_le_bytes());
        out.extend((d.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        let e = Entry {
            name: b"m",
            method: Method::Deflated,
            flags: 8,
            version_made_by: 20,
            version_needed: 20,
            mod_time: 0,
            mod_date: 0,
            crc32: crc(&data),
            compressed_size: d.len() as u64,
            uncompressed_size: data.len() as u64,
            internal_attrs: 0,
            external_attrs: 0,
            local_extra: &[],
            central_extra: &[],
            comment: &[],
        };
        let mut c = central_header(&e, 0);
        // The writer clears bit 3; the archive read here had it.
        c[8] |= 8;
        let at = out.len() as u64;
        out.extend(&c);
        out.extend(end_records(1, at, c.len() as u64, b"comment"));
        out
    };
    let a = Archive::parse(&z).unwrap();
    assert_eq!(a.comment, b"comment");
    assert_eq!(decode(&a.members[0]).unwrap(), b"abc".repeat(100));
}

#[test]
fn zip64_records_are_written_and_read() {
    let e = Entry {
        name: b"huge",
        method: Method::Stored,
        flags: 0,
        version_made_by: 20,
        version_needed: 20,
        mod_time: 0,
        mod_date: 0,
        crc32: 0,
        compressed_size: 5 << 30,
        uncompressed_size: 5 << 30,
        internal_attrs: 0,
        external_attrs: 0,
        local_extra: &[],
        central_extra: &[],
        comment: &[],
    };
    let l = local_header(&e);
    assert_eq!(find_extra(&l[34..], ZIP64_EXTRA).map(<[u8]>::len), Some(16));
    let c = central_header(&e, 6 << 30);
    let extra = &c[46 + 4..];
    let z = Bytes::new(find_extra(extra, ZIP64_EXTRA).unwrap());
    assert_eq!(z.u64_at(0, LE), Some(5 << 30));
    assert_eq!(z.u64_at(8, LE), Some(5 << 30));
    assert_eq!(z.u64_at(16, LE), Some(6 << 30));
    // An archive with more than 65,534 members has ZIP64 end records.
    let names: Vec<String> = (0..70_000).map(|i| format!("{i}")).collect();
    let members: Vec<(&str, &[u8], bool)> = names
        .iter()
        .map(|n| (n.as_str(), &b""[..], false))
        .collect();
    let zb = build(&members);
    let a = Archive::parse(&zb).unwrap();
    assert_eq!(a.members.len(), 70_000);
    assert_eq!(a.members[69_999].name, b"69999");
}

#[test]
fn damage_is_reported_not_trusted() {
    let data = b"xyz".repeat(1000);
    let good = build(&[("m", &data, true)]);
    // Cut anywhere: an error, never a panic.
    for n in 0..good.len() {
        let _ = Archive::parse(&good[..n]).map(|a| a.members.iter().map(decode).count());
    }
    assert_eq!(Archive::parse(b"PK\x03\x04").unwrap_err(), ZipError::NoEnd);
    // A lying uncompressed size: decoding stops at it.
    let mut lie = good.clone();
    let cd = Archive::parse(&good).unwrap().central_offset as usize;
    lie[cd + 24..cd + 28].copy_from_slice(&10u32.to_le_bytes());
    let a = Archive::parse(&lie).unwrap();
    assert!(matches!(
        decode(&a.members[0]),
        Err(ZipError::SizeMismatch { recorded: 10, .. })
    ));
    // A wrong CRC.
    let mut bad = good.clone();
    bad[cd + 16] ^= 1;
    let a = Archive::parse(&bad).unwrap();
    assert!(matches!(decode(&a.members[0]), Err(ZipError::Crc { .. })));
    // A damaged deflate stream.
    let mut bad = good.clone();
    bad[31] = 0xff;
    bad[32] = 0xff;
    let a = Archive::parse(&bad).unwrap();
    assert!(decode(&a.members[0]).is_err());
    // An entry count larger than the directory can hold.
    let mut bad = good.clone();
    let end = bad.len() - 22;
    bad[end + 10..end + 12].copy_from_slice(&9u16.to_le_bytes());
    assert!(matches!(
        Archive::parse(&bad),
        Err(ZipError::CountMismatch { .. })
    ));
    // Two members sharing one data area (a zip bomb's trick).
    let two = build(&[("a", b"1", false), ("b", b"2", false)]);
    let a = Archive::parse(&two).unwrap();
    let mut bad = two.clone();
    let second = a.central_offset as usize + 46 + 1;
    bad[second + 42..second + 46].copy_from_slice(&0u32.to_le_bytes());
    // The local name ("a") no longer matches the entry ("b").
    assert!(Archive::parse(&bad).is_err());
    // Unsupported methods and encryption are named.
    let mut bad = good.clone();
    bad[cd + 10] = 12;
    let a = Archive::parse(&bad).unwrap();
    assert_eq!(
        decode(&a.members[0]).unwrap_err().to_string(),
        "member m is compressed with bzip2 (method 12), which is not read"
    );
}

/// Progress is told for stored members too, a step at a time, so that a
/// caller reading a mapping can let go of it as it goes.
#[test]
fn stored_members_report_progress_in_steps() {
    let big = vec![7u8; (17 << 20) + 5];
    let z = build(&[("big.bin", &big, false), ("small", b"abc", false)]);
    let a = Archive::parse(&z).unwrap();
    let mut told = Vec::new();
    let mut out = Vec::new();
    let n = a.members[0]
        .decode_with_progress(&mut out, u64::MAX, &mut |d| told.push(d))
        .unwrap();
    assert_eq!(n, big.len() as u64);
    assert_eq!(out, big);
    assert_eq!(told, [8 << 20, 16 << 20, big.len()]);
    // A limit stops the copy, and the progress with it.
    let mut told = Vec::new();
    let mut out = Vec::new();
    a.members[0]
        .decode_with_progress(&mut out, 100, &mut |d| told.push(d))
        .unwrap();
    assert_eq!((out.len(), told), (100, vec![100]));
}
