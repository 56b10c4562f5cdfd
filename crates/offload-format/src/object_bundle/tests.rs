//! Unit tests on hand-built ELF images (no LLVM needed).

use super::*;

#[test]
fn non_objects_are_reported_as_such() {
    for data in [
        &b""[..],
        b"BC\xc0\xde",
        b"__CLANG_OFFLOAD_BUNDLE__",
        b"\x7fELF",
    ] {
        assert!(matches!(
            ObjectFile::parse(data),
            Err(Error::NotAnObject(_))
        ));
    }
}

/// Every object in the fixture directories (hosts, bundles, edge cases of
/// both formats).
fn fixture_objects() -> Vec<(String, Vec<u8>)> {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/object_bundle");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("edge"), root.join("edge-coff")] {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "o" || x == "out"))
            .collect();
        names.sort();
        for p in names {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    assert!(out.len() > 100, "fixtures missing");
    out
}

/// The read-back check gives the same verdict on the pieces as on the
/// assembled bytes, and for ordinary objects it never needs them assembled:
/// the device image is compared by identity, so it is never read.
#[test]
fn read_back_in_place_agrees_with_the_assembled_object() {
    let device: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let entries: [(&str, &[u8]); 2] = [
        ("host-x86_64-unknown-linux-gnu-", HOST_PLACEHOLDER),
        ("hip-amdgcn-amd-amdhsa--gfx906", &device),
    ];
    let (mut added, mut stripped) = (0, 0);
    for (name, data) in fixture_objects() {
        let ordinary = !name.contains("/edge");
        if let Ok(fat) = add_bundle_sections_pieces(&data, &entries) {
            let reader = PieceReader::new(&fat);
            assert!(entries_readable(Data::Pieces(&reader), &entries), "{name}");
            assert!(!ordinary || !reader.incomplete(), "{name}: assembled");
            let bytes = fat.to_vec();
            assert!(entries_readable(Data::Slice(&bytes), &entries), "{name}");
            // The image is handed out as itself, not as a copy.
            let file = ObjectFile::parse_data(Data::Pieces(&reader)).unwrap();
            let dev = file
                .bundle_sections()
                .map(Result::unwrap)
                .filter(|s| s.id == b"hip-amdgcn-amd-amdhsa--gfx906")
                .last()
                .unwrap();
            assert!(std::ptr::eq(dev.contents().unwrap(), &device[..]), "{name}");
            added += 1;
        }
        if let Ok(host) = strip_bundle_sections_pieces(&data) {
            let reader = PieceReader::new(&host);
            let verdict =
                |d| ObjectFile::parse_data(d).is_ok_and(|f| f.collect_bundle_sections().is_ok());
            let in_place = verdict(Data::Pieces(&reader));
            assert!(!ordinary || !reader.incomplete(), "{name}: assembled");
            if !reader.incomplete() {
                assert_eq!(in_place, verdict(Data::Slice(&host.to_vec())), "{name}");
            }
            stripped += 1;
        }
    }
    assert!(added > 50 && stripped > 50, "{added} {stripped}");
}

/// Objects whose read-back needs bytes from several pieces are checked on
/// the assembled bytes, with the same verdict as before.
#[test]
fn read_back_falls_back_when_a_read_spans_pieces() {
    // A 32-bit ELF header followed directly by a borrowed run: the
    // identification bytes are in the header, the rest is split.
    let host = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/object_bundle/host-i386-unknown-linux-gnu.o"),
    )
    .unwrap();
    let fat = add_bundle_sections_pieces(&host, &[("a-b-c-d-", &b"xyz"[..])]).unwrap();
    let reader = PieceReader::new(&fat);
    // A read across the end of the ELF header and into the next piece.
    assert_eq!(Data::Pieces(&reader).get(40..60), None);
    assert!(reader.incomplete());
    let calls = std::cell::Cell::new(0);
    let verdict = read_back(&fat, |d| {
        calls.set(calls.get() + 1);
        if let Data::Pieces(r) = d {
            let _ = d.get(40..60);
            assert!(r.incomplete());
        }
        d.get(0..4) == Some(&b"\x7fELF"[..])
    });
    assert!(verdict);
    assert_eq!(calls.get(), 2, "assembled and checked again");
}
