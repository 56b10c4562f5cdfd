//! Unit tests of the device-archive logic on archives built here (no LLVM
//! needed). Byte identity with LLVM 22 on real inputs is checked by the
//! fixture tests (`tests/device_archive.rs`) and `cargo xtask conformance
//! archive`.

use std::path::Path;

use super::*;
use crate::archive::{write_archive_to_vec, Archive, NewMember, WriteOptions};

/// A binary bundle written field by field, so that IDs may repeat or be
/// empty (the library writer refuses both).
fn raw_bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut header = crate::bundle::MAGIC.to_vec();
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let header_len = header.len() + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut offset = header_len as u64;
    let mut body = Vec::new();
    for (id, data) in entries {
        header.extend_from_slice(&offset.to_le_bytes());
        header.extend_from_slice(&(data.len() as u64).to_le_bytes());
        header.extend_from_slice(&(id.len() as u64).to_le_bytes());
        header.extend_from_slice(id.as_bytes());
        body.extend_from_slice(data);
        offset += data.len() as u64;
    }
    header.extend_from_slice(&body);
    header
}

fn archive_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let news: Vec<NewMember<'_>> = members
        .iter()
        .map(|(n, d)| NewMember {
            name: n.as_bytes(),
            data: d,
        })
        .collect();
    write_archive_to_vec(&news, &WriteOptions::default())
        .unwrap()
        .0
}

fn targets(list: &[&str]) -> Vec<Target> {
    list.iter().map(|t| Target::new(t).unwrap()).collect()
}

fn run(
    archive: &[u8],
    targets: &[Target],
    options: &Options,
) -> (Result<Vec<Vec<u8>>, Error>, Vec<Note>) {
    let mut notes = Vec::new();
    let mut input = Input::from_bytes(archive, Path::new("lib.a")).unwrap();
    let mut note = |n| notes.push(n);
    let r = Unbundled::read(&mut input, targets, options, "lib.a", &mut note)
        .and_then(|plan| plan.finish(&mut note))
        .and_then(|plan| plan.to_vecs(&mut input));
    (r, notes)
}

/// (member name, member data) of an output archive.
fn members_of(archive: &[u8]) -> Vec<(String, Vec<u8>)> {
    let a = Archive::parse(archive).unwrap();
    a.members()
        .map(|m| {
            let m = m.unwrap();
            let data = match m.content {
                crate::archive::MemberContent::Inline(d) => d.to_vec(),
                _ => panic!("thin output"),
            };
            (String::from_utf8(m.name.to_vec()).unwrap(), data)
        })
        .collect()
}

fn names_of(archive: &[u8]) -> Vec<String> {
    members_of(archive).into_iter().map(|m| m.0).collect()
}

const ALLOW: Options = Options {
    hip_openmp_compatible: false,
    allow_missing_bundles: true,
    check_input_archive: false,
    skip_host_objects: false,
    write: WriteOptions {
        symbol_table: true,
        sym64_threshold: crate::archive::SYM64_THRESHOLD,
    },
};

/// Selection: one member per code object, and which targets take it (the
/// shared table of `test_support::compatibility`, measured on LLVM 22), for
/// each spelling of the target.
#[test]
fn code_objects_go_to_every_compatible_target() {
    for row in test_support::compatibility::compatibility() {
        let bundle = raw_bundle(&[(row.code_object, b"code")]);
        let archive = archive_of(&[("m.o", bundle)]);
        let options = Options {
            hip_openmp_compatible: row.hip_openmp,
            ..ALLOW
        };
        for target in [row.target, row.other_spelling] {
            let (out, _) = run(&archive, &targets(&[target]), &options);
            let out = out.unwrap();
            let got = !names_of(&out[0]).is_empty();
            assert_eq!(got, row.compatible, "{row:?} (as {target})");
            if !row.compatible {
                assert_eq!(out[0], crate::archive::EMPTY_ARCHIVE);
            }
        }
    }
}

/// One code object feeds every compatible target, and one target takes
/// every compatible code object of a member (unlike plain unbundling).
#[test]
fn one_to_many_and_many_to_one() {
    let bundle = raw_bundle(&[
        ("hip-amdgcn-amd-amdhsa--gfx906", b"plain"),
        ("hip-amdgcn-amd-amdhsa--gfx906:xnack+", b"xnack-on"),
    ]);
    let archive = archive_of(&[("k.o", bundle)]);
    let t = targets(&[
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
        "hip-amdgcn-amd-amdhsa--gfx906",
    ]);
    let (out, _) = run(&archive, &t, &ALLOW);
    let out = out.unwrap();
    let plus = members_of(&out[0]);
    // StringMap order of the two IDs decides the order within the member.
    let mut datas: Vec<&[u8]> = plus.iter().map(|m| m.1.as_slice()).collect();
    datas.sort();
    assert_eq!(datas, [b"plain".as_slice(), b"xnack-on".as_slice()]);
    assert_eq!(names_of(&out[1]), ["k-hip-amdgcn-amd-amdhsa--gfx906k.bc"]);
    assert_eq!(names_of(&out[2]), ["k-hip-amdgcn-amd-amdhsa--gfx906k.bc"]);
}

/// Members in archive order; within a binary bundle, LLVM's StringMap
/// order; an empty ID ends the member.
#[test]
fn member_and_entry_order() {
    let ids = [
        "hipv4-amdgcn-amd-amdhsa--gfx906",
        "",
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    ];
    // 22 visits this bundle as hipv4, "", hip, hip:xnack+ and stops at "".
    let four = raw_bundle(&[
        (ids[0], b"0"),
        (ids[1], b"1"),
        (ids[2], b"2"),
        (ids[3], b"3"),
    ]);
    let order = crate::bundle::parse(&four).unwrap();
    let visited: Vec<&[u8]> = order.iter().map(|e| e.id).collect();
    assert_eq!(
        visited,
        [ids[0].as_bytes(), b"", ids[2].as_bytes(), ids[3].as_bytes()]
    );

    let first = raw_bundle(&[
        (ids[0], b"0"),
        (ids[1], b"1"),
        (ids[2], b"2"),
        (ids[3], b"3"),
    ]);
    let second = raw_bundle(&[(ids[2], b"second")]);
    let archive = archive_of(&[("z.o", first), ("a.o", second)]);
    let (out, _) = run(
        &archive,
        &targets(&["hip-amdgcn-amd-amdhsa--gfx906:xnack+"]),
        &ALLOW,
    );
    assert_eq!(
        names_of(&out.unwrap()[0]),
        [
            "z-hipv4-amdgcn-amd-amdhsa--gfx906z.bc",
            "a-hip-amdgcn-amd-amdhsa--gfx906a.bc"
        ]
    );
}

#[test]
fn missing_targets_error_or_empty_archive() {
    let archive = archive_of(&[(
        "k.o",
        raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"x")]),
    )]);
    let t = targets(&[
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx1030",
    ]);
    let (out, _) = run(&archive, &t, &ALLOW);
    assert_eq!(out.unwrap()[1], b"!<arch>\n");
    let (out, _) = run(&archive, &t, &Options::default());
    assert_eq!(
        out.unwrap_err().to_string(),
        "no compatible code object found for the target 'hip-amdgcn-amd-amdhsa--gfx1030' in heterogeneous archive library: lib.a"
    );
}

#[test]
fn non_bundles_are_skipped_and_bad_ids_rejected() {
    let archive = archive_of(&[
        ("notes.txt", b"just text, long enough".to_vec()),
        ("tiny", b"ab".to_vec()),
        ("bc.bc", b"BC\xc0\xde not really".to_vec()),
        (
            "k.o",
            raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"x")]),
        ),
    ]);
    let t = targets(&["hip-amdgcn-amd-amdhsa--gfx906"]);
    let (out, _) = run(&archive, &t, &ALLOW);
    assert_eq!(
        names_of(&out.unwrap()[0]),
        ["k-hip-amdgcn-amd-amdhsa--gfx906k.bc"]
    );

    let bad = archive_of(&[("k.o", raw_bundle(&[("hip-amdgcn-amd", b"x")]))]);
    let (out, _) = run(&bad, &t, &ALLOW);
    assert_eq!(
        out.unwrap_err().to_string(),
        "Invalid bundle id read from code object"
    );
}

#[test]
fn check_input_archive_uses_the_asymmetric_rule_per_member() {
    type Case = (
        &'static [&'static str],
        Option<(&'static str, &'static str)>,
    );
    let cases: &[Case] = &[
        (
            &[
                "hip-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            ],
            Some((
                "hip-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            )),
        ),
        (
            &[
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
                "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
            ],
            None,
        ),
        (
            &[
                "hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
            ],
            None,
        ),
        (
            &[
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+",
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
            ],
            Some((
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+",
            )),
        ),
        (
            &[
                "hip-amdgcn-amd-amdhsa--gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx906:xnack+",
            ],
            None,
        ),
    ];
    let options = Options {
        check_input_archive: true,
        ..ALLOW
    };
    let t = targets(&["hip-amdgcn-amd-amdhsa--gfx906"]);
    for (ids, conflict) in cases {
        let entries: Vec<(&str, &[u8])> = ids.iter().map(|id| (*id, b"x".as_slice())).collect();
        let archive = archive_of(&[("good.o", b"plain".to_vec()), ("m.o", raw_bundle(&entries))]);
        let (out, _) = run(&archive, &t, &options);
        match conflict {
            None => assert!(out.is_ok(), "{ids:?}: {:?}", out.err()),
            Some((a, b)) => assert_eq!(
                out.unwrap_err().to_string(),
                format!("conflicting TargetIDs [{a}, {b}] found in m.o of lib.a"),
                "{ids:?}"
            ),
        }
        // The same IDs spread over two members never conflict.
        let split: Vec<(String, Vec<u8>)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (format!("m{i}.o"), raw_bundle(&[(id, b"x")])))
            .collect();
        let split: Vec<(&str, Vec<u8>)> =
            split.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
        let (out, _) = run(&archive_of(&split), &t, &options);
        assert!(out.is_ok());
    }
}

/// Compressed members are expanded; under `-check-input-archive` they are
/// looked at raw, so a conflict inside one passes.
#[test]
fn compressed_members() {
    let inner = raw_bundle(&[
        ("hip-amdgcn-amd-amdhsa--gfx906", b"zz"),
        ("hip-amdgcn-amd-amdhsa--gfx906:xnack+", b"zz+"),
    ]);
    let ccob = crate::ccob::compress(&inner, &crate::ccob::CompressOptions::default())
        .unwrap()
        .bytes;
    let archive = archive_of(&[("z.o", ccob.clone())]);
    let options = Options {
        check_input_archive: true,
        ..ALLOW
    };
    let (out, notes) = run(
        &archive,
        &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]),
        &options,
    );
    let out = out.unwrap();
    assert_eq!(members_of(&out[0])[0].1, b"zz");
    assert!(matches!(&notes[0], Note::Decompressed(r)
            if crate::ccob::report::format_decompress_report(r).starts_with("Compressed bundle format version: 3\n")));

    // Trailing bytes after a zstd CCOB: 22's zstd call fails.
    let mut trailing = ccob.clone();
    trailing.extend_from_slice(b"xx");
    let (out, _) = run(
        &archive_of(&[("z.o", trailing)]),
        &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]),
        &ALLOW,
    );
    assert_eq!(
        out.unwrap_err().to_string(),
        "Failed to decompress code object: Could not decompress embedded file contents: Src size is incorrect"
    );

    // A wrong stored hash (v3: bytes 24..32), which 22 does not check: our
    // message, naming the archive and the member.
    let mut bad_hash = ccob;
    bad_hash[24] ^= 1;
    let (out, _) = run(
        &archive_of(&[("z.o", bad_hash)]),
        &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]),
        &ALLOW,
    );
    let e = out.unwrap_err().to_string();
    assert!(
        e.starts_with(
            "'lib.a(z.o)': Failed to decompress code object: Compressed bundle hash mismatch: stored "
        ),
        "{e}"
    );
}

/// The verbose note for a plain member of 8 bytes or more, none for a
/// shorter one.
#[test]
fn verbose_notes() {
    let archive = archive_of(&[("a", b"1234567".to_vec()), ("b", b"12345678".to_vec())]);
    let (_, notes) = run(
        &archive,
        &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]),
        &ALLOW,
    );
    assert_eq!(notes, [Note::Uncompressed]);
}

/// The second pass finds the members again; if the input is not the one
/// the plan was made from, writing fails instead of giving an archive
/// whose symbol table or sizes do not match its members.
#[test]
fn an_input_changed_between_the_passes_is_an_error() {
    let t = targets(&["hip-amdgcn-amd-amdhsa--gfx906"]);
    let planned = archive_of(&[(
        "k.o",
        raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"four")]),
    )]);
    let changed: Vec<Vec<u8>> = vec![
        // Another size.
        archive_of(&[(
            "k.o",
            raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"fives")]),
        )]),
        // Another name.
        archive_of(&[(
            "other-name-long-enough.o",
            raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"four")]),
        )]),
        // Another entry ID.
        archive_of(&[(
            "k.o",
            raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx908", b"four")]),
        )]),
        // A member more.
        archive_of(&[
            (
                "k.o",
                raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"four")]),
            ),
            (
                "j.o",
                raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"more")]),
            ),
        ]),
    ];
    for other in &changed {
        let mut input = Input::from_bytes(planned.as_slice(), Path::new("lib.a")).unwrap();
        let plan = Unbundled::read(&mut input, &t, &ALLOW, "lib.a", &mut |_| {})
            .and_then(|plan| plan.finish(&mut |_| {}))
            .unwrap();
        let mut out = Vec::new();
        let mut other = Input::from_bytes(other.as_slice(), Path::new("lib.a")).unwrap();
        let e = plan
            .write(&mut other, &mut [&mut out as &mut dyn std::io::Write])
            .unwrap_err();
        assert!(matches!(e, Error::Changed { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "'lib.a': the archive changed while it was being read"
        );
    }
}

/// 22 stops silently at a damaged member header after the first member;
/// we report the damage.
#[test]
fn damage_after_the_first_member_is_reported() {
    let good = archive_of(&[
        (
            "k.o",
            raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"x")]),
        ),
        ("j.o", b"more data".to_vec()),
    ]);
    let mut bad = good.clone();
    let at = bad.windows(4).position(|w| w == b"j.o/").unwrap();
    bad[at + 58] = b'x';
    let (out, _) = run(&bad, &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]), &ALLOW);
    let e = out.unwrap_err();
    assert!(matches!(e, Error::Damaged { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "'lib.a': truncated or malformed archive (terminator characters in archive member \"x\\n\" not the correct \"`\\n\" values for the archive member header for j.o)"
    );
    // Asked to check the archive first, 22 reports the same damage in its
    // own words, which name no file.
    let check = Options {
        check_input_archive: true,
        ..ALLOW
    };
    let (out, _) = run(&bad, &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]), &check);
    assert_eq!(
        out.unwrap_err().to_string(),
        "truncated or malformed archive (terminator characters in archive member \"x\\n\" not the correct \"`\\n\" values for the archive member header for j.o)"
    );
}

#[test]
fn not_an_archive() {
    let e = Input::from_bytes(b"definitely not".as_slice(), Path::new("x"))
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "file too small to be an archive");
}

/// The streamed output equals what the in-memory writer produces for the
/// same members.
#[test]
fn streamed_output_equals_write_archive() {
    let bundle = raw_bundle(&[
        ("hip-amdgcn-amd-amdhsa--gfx906", b"odd"),
        ("hip-amdgcn-amd-amdhsa--gfx908", b"even"),
    ]);
    let archive = archive_of(&[
        ("k.o", bundle.clone()),
        ("second-member-with-a-long-name.o", bundle),
    ]);
    let (out, _) = run(
        &archive,
        &targets(&[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx908",
        ]),
        &ALLOW,
    );
    let out = out.unwrap();
    for (got, (id, data)) in out
        .iter()
        .zip([("gfx906", b"odd".as_slice()), ("gfx908", b"even")])
    {
        let n1 = format!("k-hip-amdgcn-amd-amdhsa--{id}k.bc");
        let n2 = format!("second-member-with-a-long-name-hip-amdgcn-amd-amdhsa--{id}second-member-with-a-long-name.bc");
        let want = write_archive_to_vec(
            &[
                NewMember {
                    name: n1.as_bytes(),
                    data,
                },
                NewMember {
                    name: n2.as_bytes(),
                    data,
                },
            ],
            &WriteOptions::default(),
        )
        .unwrap()
        .0;
        assert_eq!(got, &want);
    }
}

/// Where LLVM 22 is undefined (a damaged binary-bundle header) or reads
/// sections through object formats not handled here, the member is named.
#[test]
fn members_that_cannot_be_listed_are_named() {
    let t = targets(&["hip-amdgcn-amd-amdhsa--gfx906"]);
    let mut bundle = raw_bundle(&[
        ("hip-amdgcn-amd-amdhsa--gfx906", b"first"),
        ("hip-amdgcn-amd-amdhsa--gfx908", b"second"),
    ]);
    // The second entry's size now runs past the end.
    let at = bundle.len() - 11 - 29 - 24 + 8;
    bundle[at..at + 8].copy_from_slice(&1000u64.to_le_bytes());
    let (out, _) = run(&archive_of(&[("m.o", bundle)]), &t, &ALLOW);
    let text = out.unwrap_err().to_string();
    assert!(
        text.starts_with("'lib.a(m.o)': malformed offload bundle: entry 2"),
        "{text}"
    );

    let wasm = b"\0asm\x01\0\0\0".to_vec();
    let (out, _) = run(&archive_of(&[("w.o", wasm)]), &t, &ALLOW);
    let text = out.unwrap_err().to_string();
    assert!(text.starts_with("'lib.a(w.o)': WebAssembly"), "{text}");
}

/// Found by `cargo xtask mutate`: a GNU long-name offset past the string
/// table, on a member after a good one. LLVM 22 meets it asking for the
/// member's name and reports it in its own words, naming no file (damage
/// met stepping between headers is what it never reports).
#[test]
fn a_bad_long_name_is_llvms_error_without_a_file_name() {
    let header = |name, size: usize| test_support::ar::member_header(name, size as u64);
    let bundle = raw_bundle(&[("hip-amdgcn-amd-amdhsa--gfx906", b"x")]);
    let table = b"k.o/\n\n";
    let mut a = b"!<arch>\n".to_vec();
    a.extend(header("//", table.len()));
    a.extend_from_slice(table);
    a.extend(header("/0", bundle.len()));
    a.extend_from_slice(&bundle);
    if a.len() % 2 == 1 {
        a.push(b'\n');
    }
    let at = a.len();
    a.extend(header("/99", 4));
    a.extend_from_slice(b"data");
    let (out, _) = run(&a, &targets(&["hip-amdgcn-amd-amdhsa--gfx906"]), &ALLOW);
    let e = out.unwrap_err();
    assert!(matches!(e, Error::Archive(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "truncated or malformed archive (long name offset 99 past the end of the string \
             table for archive member header at offset {at})"
        )
    );
}
