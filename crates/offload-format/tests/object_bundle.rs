//! Object bundles (`-type=o`) against fixtures made by clang-offload-bundler-22
//! (which runs llvm-objcopy-22), plus hostile inputs. The differential tests
//! at the end need the LLVM 22 tools and skip (with a message) without them.

use offload_format::object_bundle::{self as ob, ElfError, Error, NotObject};
use offload_format::objfile::Error as ObjError;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/object_bundle")
}

fn read(name: &str) -> Vec<u8> {
    let p = fixture_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn manifest() -> Vec<Vec<String>> {
    let text = String::from_utf8(read("manifest.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn entry_data(file: &str) -> Vec<u8> {
    match file {
        "-host" => ob::HOST_PLACEHOLDER.to_vec(),
        "-empty" => Vec::new(),
        f => read(f),
    }
}

#[test]
fn bundling_reproduces_llvm_22_byte_for_byte() {
    let mut checked = 0;
    for line in manifest().iter().filter(|l| l[0] == "bundle") {
        let (fat, host) = (&line[1], &line[2]);
        let owned: Vec<(String, Vec<u8>)> = line[3..]
            .iter()
            .map(|spec| {
                let (id, file) = spec.rsplit_once('=').unwrap();
                (id.to_string(), entry_data(file))
            })
            .collect();
        let entries: Vec<(&str, &[u8])> = owned
            .iter()
            .map(|(i, d)| (i.as_str(), d.as_slice()))
            .collect();
        let ours =
            ob::add_bundle_sections(&read(host), &entries).unwrap_or_else(|e| panic!("{fat}: {e}"));
        assert!(
            ours == read(fat),
            "{fat}: differs from clang-offload-bundler-22"
        );
        checked += 1;
    }
    assert_eq!(checked, 38, "manifest lost bundle cases");
}

#[test]
fn host_extraction_reproduces_llvm_22_byte_for_byte() {
    let mut checked = 0;
    for line in manifest().iter().filter(|l| l[0] == "strip") {
        let ours = ob::strip_bundle_sections(&read(&line[1]))
            .unwrap_or_else(|e| panic!("{}: {e}", line[1]));
        assert!(ours == read(&line[2]), "{}: host object differs", line[1]);
        checked += 1;
    }
    assert_eq!(checked, 31);
}

/// The rest of a manifest line, from word `from` on, rejoined with spaces.
fn message(line: &[String], from: usize) -> String {
    line[from..].join(" ")
}

#[test]
fn refusals_match_llvm_objcopy_22_messages() {
    let mut checked = 0;
    for line in manifest().iter() {
        let result = match line[0].as_str() {
            "bundle-error" => ob::add_bundle_sections(
                &read(&line[1]),
                &[
                    ("host-x86_64-unknown-linux-gnu-", ob::HOST_PLACEHOLDER),
                    (
                        "hip-amdgcn-amd-amdhsa--gfx906",
                        &read("dev-payload.bin")[..],
                    ),
                ],
            ),
            "strip-error" => ob::strip_bundle_sections(&read(&line[1])),
            _ => continue,
        };
        let err = result.expect_err(&line[1]);
        assert!(matches!(err, Error::Elf(_) | Error::Coff(_)), "{err:?}");
        assert_eq!(err.to_string(), message(line, 2), "{}", line[1]);
        checked += 1;
    }
    assert_eq!(checked, 6);
}

/// Found by `cargo xtask mutate`: a group section whose `sh_entsize` is
/// not 4 (here 0x4100000000000004). llvm-objcopy 22 keeps entry sizes in
/// 32 bits and writes 4; we copied the input's value. The expected bytes are clang-offload-bundler-22's host
/// extraction of the same file.
#[test]
fn group_entry_size_is_rewritten_as_objcopy_does() {
    let input = read("mutate/group-entsize.o");
    let want = read("mutate/group-entsize.host.o");
    let got = ob::strip_bundle_sections(&input).unwrap();
    assert!(got == want, "host extraction differs from LLVM 22's");
}

/// Found by `cargo xtask mutate`: extracting the host from a fat object
/// whose group signature symbol lives in a bundle section.
/// clang-offload-bundler-22 succeeds, but its llvm-objcopy drops the
/// symbol and keeps the group pointing at it: `llvm-objcopy-22` itself
/// then rejects the result ("info field value '2' in section '.group' is
/// not a valid symbol index"). We refuse, with the message llvm-objcopy
/// gives for the unbundled object (compat policy 4, no corrupt outputs).
#[test]
fn a_group_signature_in_a_bundle_section_is_refused() {
    let fat = read("edge/group_signature_in_bundle.add.out");
    let err = ob::strip_bundle_sections(&fat).unwrap_err();
    assert_eq!(
        err.to_string(),
        "symbol 'sig' cannot be removed because it is referenced by the section '.group'"
    );
}

#[test]
fn listing_matches_llvm_22() {
    let mut checked = 0;
    for line in manifest().iter().filter(|l| l[0] == "list") {
        let fat = read(&line[1]);
        let ids: Vec<u8> = ob::bundle_sections(&fat)
            .unwrap()
            .iter()
            .flat_map(|s| {
                let mut v = s.id.to_vec();
                v.push(b'\n');
                v
            })
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&ids),
            String::from_utf8_lossy(&read(&line[2])),
            "{}",
            line[1]
        );
        checked += 1;
    }
    assert_eq!(checked, 15);
}

#[test]
fn entries_extract_like_llvm_22() {
    let mut checked = 0;
    for line in manifest().iter().filter(|l| l[0] == "entry") {
        let fat = read(&line[1]);
        let sections = ob::bundle_sections(&fat).unwrap();
        // The first section with the ID wins, as in the bundler.
        let s = sections
            .iter()
            .find(|s| s.id == line[2].as_bytes())
            .unwrap_or_else(|| panic!("{}: no {}", line[1], line[2]));
        assert!(!s.is_host_placeholder());
        assert!(
            s.contents().unwrap() == read(&line[3]),
            "{} {}",
            line[1],
            line[2]
        );
        checked += 1;
    }
    assert_eq!(checked, 22);
}

#[test]
fn zero_byte_device_entry_is_taken_for_the_host() {
    let fat = read("zerodev-x86_64-unknown-linux-gnu.o");
    let sections = ob::bundle_sections(&fat).unwrap();
    assert_eq!(sections.len(), 2);
    assert!(sections.iter().all(|s| s.is_host_placeholder()));
    // 22 writes the stripped host object for the device target, too.
    assert_eq!(
        ob::strip_bundle_sections(&fat).unwrap(),
        read("unb-zerodev-gfx906-x86_64-unknown-linux-gnu.o")
    );
}

#[test]
fn empty_entry_is_an_empty_section() {
    let fat = read("fatcxx-x86_64-unknown-linux-gnu.o");
    let s = ob::bundle_sections(&fat).unwrap();
    let empty = s
        .iter()
        .find(|s| s.id == b"hip-amdgcn-amd-amdhsa--gfx90a")
        .unwrap();
    assert_eq!(empty.contents().unwrap(), b"");
    assert!(!empty.is_host_placeholder());
}

#[test]
fn duplicate_ids_are_refused_like_objcopy() {
    let host = read("host-x86_64-unknown-linux-gnu.o");
    let e = ob::add_bundle_sections(&host, &[("a-b-c-d-e", &b"1"[..]), ("a-b-c-d-e", &b"2"[..])])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set-section-flags set multiple times for section '__CLANG_OFFLOAD_BUNDLE__a-b-c-d-e'"
    );
}

#[test]
fn non_objects_are_not_objects() {
    for data in [
        &b""[..],
        b"BC\xc0\xde\x35\x14\x00\x00",
        b"__CLANG_OFFLOAD_BUNDLE__\x02\x00\x00\x00\x00\x00\x00\x00",
        b"!<arch>\n",
        b"\x7fELF\x02\x01\x01",
    ] {
        assert!(matches!(
            ob::ObjectFile::parse(data),
            Err(Error::NotAnObject(_))
        ));
        assert!(matches!(
            ob::strip_bundle_sections(data),
            Err(Error::NotAnObject(_))
        ));
    }
}

#[test]
fn mach_o_and_other_formats() {
    // Mach-O: an object (its section names are too short to hold a bundle
    // prefix, so it has no bundles); llvm-objcopy 22 cannot add sections.
    let mut macho = vec![0xcfu8, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 1, 0, 0, 0];
    macho.resize(32, 0);
    let obj = ob::ObjectFile::parse(&macho).unwrap();
    assert_eq!(obj.format(), ob::ObjectFormat::MachO);
    assert!(obj.collect_bundle_sections().unwrap().is_empty());
    let e = ob::add_bundle_sections(&macho, &[("host-x-y-z-", ob::HOST_PLACEHOLDER)]).unwrap_err();
    assert_eq!(
        e,
        Error::Unsupported {
            format: ob::ObjectFormat::MachO,
            reason: "option is not supported for MachO"
        }
    );
    // A Mach-O magic with file type 0 is not an object to LLVM.
    let mut not_macho = macho.clone();
    not_macho[12] = 0;
    assert!(matches!(
        ob::ObjectFile::parse(&not_macho),
        Err(Error::NotAnObject(_))
    ));
    // WebAssembly: recognised, not handled (22's objcopy refuses the flags).
    let wasm = b"\0asm\x01\0\0\0";
    assert!(matches!(
        ob::ObjectFile::parse(wasm),
        Err(Error::Unsupported { .. })
    ));
    assert_eq!(
        ob::add_bundle_sections(wasm, &[("host-x-y-z-", ob::HOST_PLACEHOLDER)])
            .unwrap_err()
            .to_string(),
        "WebAssembly host objects are not supported: only flags for section dumping, removal, and addition are supported"
    );
    // PE images are refused.
    let mut pe = vec![0u8; 0x100];
    pe[..2].copy_from_slice(b"MZ");
    pe[0x3c] = 0x80;
    pe[0x80..0x84].copy_from_slice(b"PE\0\0");
    assert!(matches!(
        ob::ObjectFile::parse(&pe),
        Err(Error::Unsupported {
            format: ob::ObjectFormat::Coff,
            ..
        })
    ));
}

#[test]
fn zero_bytes_are_a_coff_object_from_20_bytes_on() {
    // LLVM reads two leading zero bytes as "COFF, unknown machine"; with a
    // whole header (20 bytes) it is an empty COFF object.
    assert!(matches!(
        ob::ObjectFile::parse(&[0u8; 19]),
        Err(Error::NotAnObject(_))
    ));
    let obj = ob::ObjectFile::parse(&[0u8; 20]).unwrap();
    assert_eq!(obj.format(), ob::ObjectFormat::Coff);
    assert!(obj.collect_bundle_sections().unwrap().is_empty());
}

#[test]
fn coff_names_and_hostile_coff() {
    let fat = read("fat-x86_64-pc-windows-msvc.o");
    let secs = ob::bundle_sections(&fat).unwrap();
    assert_eq!(secs.len(), 3);
    // Long section names live in the string table ("/NN").
    let nsec = u16::from_le_bytes([fat[2], fat[3]]) as usize;
    let names: Vec<&[u8]> = (0..nsec)
        .map(|i| &fat[20 + 40 * i..20 + 40 * i + 8])
        .collect();
    assert!(names.iter().filter(|n| n[0] == b'/').count() >= 3);
    // Truncate the string table: names can no longer be resolved.
    let symptr = u32::from_le_bytes(fat[8..12].try_into().unwrap()) as usize;
    let nsyms = u32::from_le_bytes(fat[12..16].try_into().unwrap()) as usize;
    let strtab = symptr + 18 * nsyms;
    let mut bad = fat.clone();
    bad[strtab..strtab + 4].copy_from_slice(&4u32.to_le_bytes());
    let e = ob::bundle_sections(&bad).unwrap_err();
    assert_eq!(e.to_string(), "string table empty");
    // A section name "/abc" does not decode.
    let mut bad = fat.clone();
    let first_long = names.iter().position(|n| n[0] == b'/').unwrap();
    bad[20 + 40 * first_long..20 + 40 * first_long + 8].copy_from_slice(b"/abc\0\0\0\0");
    assert_eq!(
        ob::bundle_sections(&bad).unwrap_err().to_string(),
        "invalid section name"
    );
    // The section table past the end: not an object.
    let mut bad = fat.clone();
    bad[2..4].copy_from_slice(&0x7000u16.to_le_bytes());
    assert!(matches!(
        ob::ObjectFile::parse(&bad),
        Err(Error::NotAnObject(_))
    ));
    // Symbols announced without a symbol table: LLVM 22 opens the file
    // (it counts no symbols without a table), then the long section names
    // find no string table.
    let mut bad = fat.clone();
    bad[8..12].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        ob::bundle_sections(&bad).unwrap_err().to_string(),
        "string table empty"
    );
    // Relocations past the end of the file: LLVM would read out of bounds.
    let mut bad = read("host-x86_64-pc-windows-msvc.o");
    let text = 20; // first section header
    bad[text + 24..text + 28].copy_from_slice(&0xfff0u32.to_le_bytes());
    assert_eq!(
        ob::strip_bundle_sections(&bad).unwrap_err(),
        Error::Coff(ob::CoffError::RelocationsPastEnd)
    );
}

// ----- hostile inputs -------------------------------------------------------

/// Byte offsets of ELF64 header fields and section headers of a fixture.
struct Elf64 {
    data: Vec<u8>,
    shoff: usize,
    shnum: usize,
}

impl Elf64 {
    fn load(name: &str) -> Self {
        let data = read(name);
        let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes(data[0x3c..0x3e].try_into().unwrap()) as usize;
        Elf64 { data, shoff, shnum }
    }
    fn sh(&self, i: usize) -> usize {
        self.shoff + 64 * i
    }
    fn put(&mut self, at: usize, bytes: &[u8]) -> &mut Self {
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
        self
    }
}

fn fat64() -> Elf64 {
    Elf64::load("fat-x86_64-unknown-linux-gnu.o")
}

fn list_err(data: &[u8]) -> (Vec<String>, Option<Error>) {
    let obj = match ob::ObjectFile::parse(data) {
        Ok(o) => o,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut ids = Vec::new();
    for s in obj.bundle_sections() {
        match s {
            Ok(s) => ids.push(String::from_utf8_lossy(s.id).into_owned()),
            Err(e) => return (ids, Some(e)),
        }
    }
    (ids, None)
}

// The expected messages below are what clang-offload-bundler-22 -list prints
// for the same corruptions (checked when the fixtures were made).

#[test]
fn shstrndx_pointing_at_code_is_llvms_error() {
    let mut f = fat64();
    f.put(0x3e, &2u16.to_le_bytes());
    let (ids, err) = list_err(&f.data);
    assert!(ids.is_empty());
    assert_eq!(
        err.unwrap().to_string(),
        "invalid sh_type for string table section [index 2]: expected SHT_STRTAB, but got SHT_PROGBITS"
    );
}

#[test]
fn bad_sh_name_reports_after_the_earlier_ids() {
    let mut f = fat64();
    let last = f.sh(f.shnum - 1);
    f.put(last, &0xfffffff0u32.to_le_bytes());
    let (ids, err) = list_err(&f.data);
    assert_eq!(
        ids,
        [
            "host-x86_64-unknown-linux-gnu-",
            "hip-amdgcn-amd-amdhsa--gfx906"
        ]
    );
    assert_eq!(
        err.unwrap().to_string(),
        "a section [index 15] has an invalid sh_name (0xfffffff0) offset which goes past the end of the section name string table"
    );
}

#[test]
fn section_data_past_the_end_lists_but_does_not_extract() {
    let mut f = fat64();
    let len = f.data.len() as u64;
    let last = f.sh(f.shnum - 1);
    f.put(last + 24, &(len + 100).to_le_bytes());
    let secs = ob::bundle_sections(&f.data).unwrap();
    assert_eq!(secs.len(), 3);
    assert_eq!(
        secs[2].contents().unwrap_err().to_string(),
        "The end of the file was unexpectedly encountered"
    );
    // Rewriting needs every section's data.
    assert!(matches!(
        ob::strip_bundle_sections(&f.data),
        Err(Error::Elf(ElfError::Read(ObjError::ElfSectionPastEnd {
            index: 15,
            ..
        })))
    ));
    // An offset so large that offset + size wraps.
    let mut f = fat64();
    let mid = f.sh(f.shnum - 2);
    f.put(mid + 24, &0xffff_ffff_ffff_ff00u64.to_le_bytes());
    let secs = ob::bundle_sections(&f.data).unwrap();
    assert!(secs[1].contents().is_err());
    assert!(ob::strip_bundle_sections(&f.data).is_err());
}

#[test]
fn broken_section_tables_are_not_objects() {
    let len = fat64().data.len() as u64;
    let mut cases: Vec<(Vec<u8>, ObjError)> = Vec::new();
    let mut f = fat64();
    f.put(0x28, &(len + 8).to_le_bytes());
    cases.push((
        f.data.clone(),
        ObjError::ElfSectionTableStartPastEnd { shoff: len + 8 },
    ));
    let f = fat64();
    cases.push((
        f.data[..f.data.len() / 2].to_vec(),
        ObjError::ElfSectionTableStartPastEnd {
            shoff: f.shoff as u64,
        },
    ));
    let mut f = fat64();
    f.put(0x3a, &40u16.to_le_bytes());
    cases.push((f.data.clone(), ObjError::ElfBadShentsize(40)));
    let mut f = fat64();
    f.data[4] = 3;
    cases.push((f.data.clone(), ObjError::ElfInvalidClass));
    let mut f = fat64();
    f.data[5] = 0;
    cases.push((f.data.clone(), ObjError::ElfInvalidData));
    let mut f = fat64();
    let s0 = f.sh(0);
    f.put(0x3c, &0u16.to_le_bytes())
        .put(s0 + 32, &0x1000_0000_0000_0000u64.to_le_bytes());
    cases.push((
        f.data.clone(),
        ObjError::ElfBadSectionCount(0x1000_0000_0000_0000),
    ));
    let mut f = fat64();
    f.put(0x3c, &60u16.to_le_bytes());
    cases.push((f.data.clone(), ObjError::ElfSectionTablePastEnd));
    cases.push((
        fat64().data[..40].to_vec(),
        ObjError::ElfTooSmall {
            size: 40,
            header: 64,
        },
    ));
    for (data, want) in cases {
        assert_eq!(
            ob::ObjectFile::parse(&data).unwrap_err(),
            Error::NotAnObject(NotObject::Header(want.clone()))
        );
        assert_eq!(
            ob::add_bundle_sections(&data, &[("x-y-z-w-", &b"d"[..])]).unwrap_err(),
            Error::NotAnObject(NotObject::Header(want))
        );
    }
}

#[test]
fn unaligned_tables_are_fine_as_in_llvm() {
    // LLVM's ELF structures are byte-aligned: a section header table at an
    // odd offset is accepted. Move the table 4 bytes past the end of the file.
    let mut f = fat64();
    let table = f.data[f.shoff..].to_vec();
    let new_off = f.data.len() as u64 + 4;
    assert_eq!(new_off % 8, 4);
    f.data.extend_from_slice(&[0; 4]);
    f.data.extend_from_slice(&table);
    f.put(0x28, &new_off.to_le_bytes());
    assert_eq!(ob::bundle_sections(&f.data).unwrap().len(), 3);
    // The rewrite lays the file out afresh, table aligned again.
    let stripped = ob::strip_bundle_sections(&f.data).unwrap();
    assert_eq!(stripped, read("unb-host-x86_64-unknown-linux-gnu.o"));
}

#[test]
fn string_table_defects_are_llvms_errors() {
    let mut f = fat64();
    let s1 = f.sh(1);
    let size = u64::from_le_bytes(f.data[s1 + 32..s1 + 40].try_into().unwrap());
    f.put(s1 + 32, &(size - 1).to_le_bytes());
    assert_eq!(
        list_err(&f.data).1.unwrap().to_string(),
        "SHT_STRTAB string table section [index 1] is non-null terminated"
    );
    let mut f = fat64();
    f.put(s1 + 32, &0u64.to_le_bytes());
    assert_eq!(
        list_err(&f.data).1.unwrap().to_string(),
        "SHT_STRTAB string table section [index 1] is empty"
    );
    let mut f = fat64();
    f.put(0x3e, &200u16.to_le_bytes());
    assert_eq!(
        list_err(&f.data).1.unwrap().to_string(),
        "section header string table index 200 does not exist"
    );
}

#[test]
fn absurd_alignment_is_refused_not_allocated() {
    // A section aligned to 2^40 would make the rewritten file a terabyte.
    let mut f = Elf64::load("host-x86_64-unknown-linux-gnu.o");
    let text = f.sh(2);
    f.put(text + 48, &(1u64 << 40).to_le_bytes());
    assert!(matches!(
        ob::add_bundle_sections(&f.data, &[("a-b-c-d-", &b"x"[..])]),
        Err(Error::OutputTooLarge { .. })
    ));
    // Alignment 2^63 wraps LLVM's arithmetic; still refused.
    f.put(text + 48, &(1u64 << 63).to_le_bytes());
    assert!(ob::add_bundle_sections(&f.data, &[("a-b-c-d-", &b"x"[..])]).is_err());
}

#[test]
fn overlap_check_is_available() {
    let f = fat64();
    ob::check_layout(&f.data).unwrap();
    let mut g = fat64();
    let last = g.sh(g.shnum - 1);
    g.put(last + 24, &0u64.to_le_bytes());
    assert!(matches!(
        ob::check_layout(&g.data),
        Err(Error::Overlap { .. })
    ));
    // LLVM itself tolerates it: the entry is just whatever bytes are there.
    let secs = ob::bundle_sections(&g.data).unwrap();
    assert_eq!(&secs[2].contents().unwrap()[..4], b"\x7fELF");
}

/// Deterministic xorshift generator for mutation tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn exercise(data: &[u8]) {
    if let Ok(obj) = ob::ObjectFile::parse(data) {
        for s in obj.bundle_sections().flatten() {
            let _ = s.contents();
        }
    }
    let _ = ob::strip_bundle_sections(data);
    let _ = ob::add_bundle_sections(data, &[("host-a-b-c-", ob::HOST_PLACEHOLDER)]);
    let _ = ob::check_layout(data);
}

#[test]
fn truncations_never_panic() {
    for name in [
        "fat-i386-unknown-linux-gnu.o",
        "fat-powerpc64-unknown-linux-gnu.o",
    ] {
        let data = read(name);
        for len in 0..data.len() {
            exercise(&data[..len]);
        }
    }
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for name in [
        "fat-x86_64-unknown-linux-gnu.o",
        "fat-mips-unknown-linux-gnu.o",
        "fatcxx-x86_64-unknown-linux-gnu.o",
        "fat-x86_64-pc-windows-msvc.o",
        "fatbig-x86_64-w64-mingw32.o",
    ] {
        let base = read(name);
        for _ in 0..500 {
            let mut d = base.clone();
            let n = 1 + rng.next() % 4;
            for _ in 0..n {
                let at = (rng.next() % d.len() as u64) as usize;
                d[at] = rng.next() as u8;
            }
            exercise(&d);
        }
        // Header-focused: hit the file header and the tables at the end more often.
        for _ in 0..500 {
            let mut d = base.clone();
            let shoff = u64::from_le_bytes(d[0x28..0x30].try_into().unwrap_or([0; 8])) as usize;
            let region = if rng.next() % 2 == 0 {
                0..64
            } else {
                shoff.min(d.len() - 1)..d.len()
            };
            let at = region.start + (rng.next() as usize % (region.end - region.start));
            d[at] = rng.next() as u8;
            exercise(&d);
        }
    }
}

// ----- differential tests against the installed LLVM 22 tools ---------------

/// An LLVM 22 tool. The LLVM bin directory comes first: the bundler runs the
/// `llvm-objcopy` next to its own path, and `/usr/bin/llvm-objcopy` may be
/// another LLVM version (it is LLVM 14's on the reference machine).
fn tool(name: &str) -> Option<PathBuf> {
    let candidates = [
        Path::new("/usr/lib/llvm-22/bin").join(name),
        Path::new("/usr/bin").join(format!("{name}-22")),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

fn need_llvm(names: &[&str]) -> Option<Vec<PathBuf>> {
    let found: Option<Vec<PathBuf>> = names.iter().map(|n| tool(n)).collect();
    if found.is_none() {
        eprintln!("skipping: LLVM 22 tools {names:?} not installed");
    }
    found
}

fn run(cmd: &mut Command) -> bool {
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

#[test]
fn differential_against_llvm_objcopy_22() {
    let Some(t) = need_llvm(&["clang", "llvm-objcopy"]) else {
        return;
    };
    let (clang, objcopy) = (&t[0], &t[1]);
    let dir = tempfile::tempdir().unwrap();
    let src = fixture_dir().join("src");
    let dev = read("dev-gfx906.o");
    let mut compared = 0;
    for (triple, file, flags) in [
        ("x86_64-unknown-linux-gnu", "host.cpp", &["-O0", "-g"][..]),
        (
            "x86_64-unknown-linux-gnu",
            "host.c",
            &["-O2", "-fPIC", "-gz=zlib", "-g"][..],
        ),
        (
            "i386-unknown-linux-gnu",
            "host.cpp",
            &["-O0", "-ffunction-sections"][..],
        ),
        (
            "aarch64-unknown-linux-gnu",
            "host.cpp",
            &["-O1", "-fdata-sections"][..],
        ),
        (
            "powerpc64le-unknown-linux-gnu",
            "host.c",
            &["-O1", "-g"][..],
        ),
        ("powerpc64-unknown-linux-gnu", "host.cpp", &["-O0"][..]),
        ("mips64el-unknown-linux-gnuabi64", "host.c", &["-O1"][..]),
        ("riscv64-unknown-linux-gnu", "host.cpp", &["-O1", "-g"][..]),
    ] {
        let obj = dir.path().join(format!("{triple}-{compared}.o"));
        if !run(Command::new(clang)
            .arg(format!("--target={triple}"))
            .args(flags)
            .arg("-c")
            .arg(src.join(file))
            .arg("-o")
            .arg(&obj))
        {
            eprintln!("skipping {triple}: clang-22 cannot compile for it here");
            continue;
        }
        let host_id = format!("host-{triple}-");
        let ph = dir.path().join("ph");
        std::fs::write(&ph, [0u8]).unwrap();
        let devp = fixture_dir().join("dev-gfx906.o");
        let fat_ref = dir.path().join("ref.o");
        let mut cmd = Command::new(objcopy);
        for (id, f) in [
            (&host_id, &ph),
            (&"hip-amdgcn-amd-amdhsa--gfx906".to_string(), &devp),
        ] {
            cmd.arg(format!(
                "--add-section=__CLANG_OFFLOAD_BUNDLE__{id}={}",
                f.display()
            ));
            cmd.arg(format!(
                "--set-section-flags=__CLANG_OFFLOAD_BUNDLE__{id}=readonly,exclude"
            ));
        }
        assert!(run(cmd.arg("--").arg(&obj).arg(&fat_ref)));
        let host = std::fs::read(&obj).unwrap();
        let ours = ob::add_bundle_sections(
            &host,
            &[
                (host_id.as_str(), ob::HOST_PLACEHOLDER),
                ("hip-amdgcn-amd-amdhsa--gfx906", dev.as_slice()),
            ],
        )
        .unwrap();
        let reference = std::fs::read(&fat_ref).unwrap();
        assert!(ours == reference, "{triple} {file} {flags:?}: add differs");

        let stripped_ref = dir.path().join("stripped.o");
        assert!(run(Command::new(objcopy)
            .args([
                "--regex",
                "--remove-section=__CLANG_OFFLOAD_BUNDLE__.*",
                "--"
            ])
            .arg(&fat_ref)
            .arg(&stripped_ref)));
        let ours = ob::strip_bundle_sections(&reference).unwrap();
        assert!(
            ours == std::fs::read(&stripped_ref).unwrap(),
            "{triple} {file} {flags:?}: strip differs"
        );
        compared += 1;
    }
    assert!(compared >= 4, "too few targets compiled");
}

#[test]
fn llvm_22_unbundles_and_links_our_output() {
    let Some(t) = need_llvm(&["clang-offload-bundler", "ld.lld"]) else {
        return;
    };
    let (bundler, lld) = (&t[0], &t[1]);
    let dir = tempfile::tempdir().unwrap();
    let host = read("host-x86_64-unknown-linux-gnu.o");
    let dev = read("dev-gfx90a.o");
    let ours = ob::add_bundle_sections(
        &host,
        &[
            ("hip-amdgcn-amd-amdhsa--gfx90a", dev.as_slice()),
            ("host-x86_64-unknown-linux-gnu-", ob::HOST_PLACEHOLDER),
        ],
    )
    .unwrap();
    let fat = dir.path().join("fat.o");
    std::fs::write(&fat, &ours).unwrap();
    let (h, d) = (dir.path().join("h.o"), dir.path().join("d.o"));
    assert!(run(Command::new(bundler)
        .args([
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a"
        ])
        .arg(format!("-input={}", fat.display()))
        .arg(format!("-output={}", h.display()))
        .arg(format!("-output={}", d.display()))));
    assert_eq!(std::fs::read(&d).unwrap(), dev);
    assert_eq!(
        std::fs::read(&h).unwrap(),
        ob::strip_bundle_sections(&ours).unwrap()
    );
    // ld.lld drops the SHF_EXCLUDE bundle sections from a final link: the
    // fat object links to the same executable as the plain host object.
    let (a, b) = (dir.path().join("a.out"), dir.path().join("b.out"));
    let hostp = fixture_dir().join("host-x86_64-unknown-linux-gnu.o");
    for (input, out) in [(&hostp, &a), (&fat, &b)] {
        assert!(run(Command::new(lld)
            .args(["-e", "host_entry", "--unresolved-symbols=ignore-all", "-o"])
            .arg(out)
            .arg(input)));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// Longer mutation run over every fixture object (`cargo test -- --ignored`;
/// `OBJB_FUZZ_ITERS` sets the mutations per file, default 2000).
#[test]
#[ignore = "slow; run on demand"]
fn long_mutation_run_never_panics() {
    let iters: usize = std::env::var("OBJB_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut names: Vec<String> = manifest()
        .iter()
        .filter(|l| l[0] == "bundle" || l[0] == "strip")
        .map(|l| l[1].clone())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let base = read(&name);
        if base.is_empty() {
            continue;
        }
        for _ in 0..iters {
            let mut d = base.clone();
            for _ in 0..1 + rng.next() % 8 {
                let at = (rng.next() % d.len() as u64) as usize;
                d[at] = match rng.next() % 4 {
                    0 => 0,
                    1 => 0xff,
                    _ => rng.next() as u8,
                };
            }
            exercise(&d);
        }
    }
}

#[test]
fn a_section_named_just_the_prefix_is_not_an_entry() {
    // LLVM 22 lists only the host entry of such an object (checked with
    // clang-offload-bundler-22 -list -type=o).
    let host = read("host-x86_64-unknown-linux-gnu.o");
    let fat = ob::add_bundle_sections(
        &host,
        &[
            (&b""[..], &b"data"[..]), // section name: just the prefix
            (&b"host-x86_64-unknown-linux-gnu"[..], &b"data"[..]),
        ],
    );
    let fat = fat.unwrap();
    let ids: Vec<&[u8]> = ob::bundle_sections(&fat)
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [&b"host-x86_64-unknown-linux-gnu"[..]]);
    // Stripping removes it with the others, as llvm-objcopy's regex does.
    let stripped = ob::strip_bundle_sections(&fat).unwrap();
    assert!(ob::bundle_sections(&stripped).unwrap().is_empty());
}
