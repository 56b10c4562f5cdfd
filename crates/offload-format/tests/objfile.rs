//! The object-file layer over real files made by clang-22 and lld-22
//! (`tests/fixtures/objfile/gen.sh`), and over damaged copies of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use offload_format::bytes::Endian;
use offload_format::identify::{identify, FileKind};
use offload_format::objfile::elf::{self, ElfFile};
use offload_format::objfile::macho::{self, MachOFile};
use offload_format::objfile::{Error, Format, Object};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/objfile")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const OBJECTS: &[&str] = &[
    "elf-x86_64-pc-linux-gnu.o",
    "elf-aarch64-linux-gnu.o",
    "elf-powerpc64-linux-gnu.o",
    "elf-i686-pc-linux-gnu.o",
    "elf-x86_64.so",
    "elf-aarch64.so",
    "elf-amdgcn-gfx90a.o",
    "coff-x86_64.obj",
    "pe-x86_64.dll",
    "macho-x86_64.o",
    "macho-arm64.o",
    "macho-x86_64.exe",
    "macho-x86_64.dylib",
];

#[test]
fn every_format_finds_the_offload_sections() {
    let cases: &[(&str, Format, &[u8], u64)] = &[
        ("elf-x86_64-pc-linux-gnu.o", Format::Elf, b".hip_fatbin", 16),
        ("elf-powerpc64-linux-gnu.o", Format::Elf, b".hip_fatbin", 16),
        (
            "elf-i686-pc-linux-gnu.o",
            Format::Elf,
            b".hipFatBinSegment",
            16,
        ),
        ("elf-x86_64.so", Format::Elf, b".hipFatBinSegment", 24),
        ("coff-x86_64.obj", Format::Coff, b".hipFatBinSegment", 24),
        ("pe-x86_64.dll", Format::Pe, b".hip_fat", 16),
        ("macho-x86_64.o", Format::MachO, b"__hip_fatbin", 16),
        ("macho-x86_64.exe", Format::MachO, b"__hip_fatbin", 16),
        ("macho-x86_64.dylib", Format::MachO, b"__hip_wrapper", 24),
    ];
    for &(file, format, name, size) in cases {
        let data = read(file);
        let obj = Object::parse(&data).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(obj.format(), format, "{file}");
        let s = obj.section_by_name(name).unwrap().expect(file);
        assert_eq!(s.size, size, "{file}");
        let bytes = s.data().unwrap();
        assert_eq!(bytes.len() as u64, size, "{file}");
        let (off, len) = s.file_range.unwrap();
        assert_eq!(&data[off as usize..(off + len) as usize], bytes, "{file}");
        if name.ends_with(b"fatbin") || name == b".hip_fat" {
            assert_eq!(bytes, b"__CLANG_OFFLOAD_", "{file}");
        }
    }
    // The long COFF name comes from the string table.
    let coff = read("coff-x86_64.obj");
    let obj = Object::parse(&coff).unwrap();
    let s = obj
        .section_by_name(b"__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu")
        .unwrap()
        .unwrap();
    assert_eq!(s.data().unwrap(), &[0]);
    // Zero-fill sections have no file range and no bytes.
    let bss = obj.section_by_name(b".bss").unwrap().unwrap();
    assert_eq!((bss.size, bss.file_range), (256, None));
    let macho = read("macho-x86_64.o");
    let obj = Object::parse(&macho).unwrap();
    let common = obj.section_by_name(b"__common").unwrap().unwrap();
    assert_eq!(common.segment_name, Some(&b"__DATA"[..]));
    assert_eq!((common.file_range, common.data()), (None, Ok(&[][..])));
    let elf = read("elf-x86_64-pc-linux-gnu.o");
    let obj = Object::parse(&elf).unwrap();
    let bss = obj.section_by_name(b".bss").unwrap().unwrap();
    assert_eq!((bss.kind, bss.file_range), (elf::SHT_NOBITS, None));
}

/// The sections agree with llvm-readobj's (names, sizes, file offsets).
#[test]
fn sections_agree_with_llvm_readobj() {
    if Command::new("llvm-readobj-22")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("llvm-readobj-22 not installed: differential check skipped");
        return;
    }
    for file in OBJECTS {
        let out = Command::new("llvm-readobj-22")
            .arg("--sections")
            .arg(fixtures().join(file))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let names: Vec<String> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Name: "))
            .map(|l| l.split(" (").next().unwrap_or("").to_string())
            .collect();
        let data = read(file);
        let obj = Object::parse(&data).unwrap();
        let ours: Vec<String> = obj
            .sections()
            .map(|s| String::from_utf8_lossy(s.unwrap().name).into_owned())
            .collect();
        assert_eq!(ours, names, "{file}");
    }
}

#[test]
fn elf_headers_notes_and_amdgpu_flags() {
    let data = read("elf-amdgcn-gfx90a.o");
    let e = ElfFile::parse(&data[..]).unwrap();
    let h = e.header();
    assert_eq!(h.machine, elf::EM_AMDGPU);
    assert_eq!((h.os_abi, h.abi_version), (64, 4)); // HSA, code object v6
    assert_eq!(h.flags, 0x73f); // gfx90a, xnack+, sramecc any
    let idx = e.section_of_type(elf::SHT_NOTE).unwrap();
    let notes: Vec<_> = e.section_notes(idx).unwrap().collect();
    let note = notes
        .iter()
        .map(|n| n.as_ref().unwrap())
        .find(|n| n.n_type == elf::NT_AMDGPU_METADATA)
        .unwrap();
    assert_eq!(note.name, b"AMDGPU");
    assert!(note.desc.windows(6).any(|w| w == b"gfx90a"));

    let be = read("elf-powerpc64-linux-gnu.o");
    let e = ElfFile::parse(&be[..]).unwrap();
    assert!(e.class().is64 && e.class().big_endian);
    assert_eq!(e.header().machine, 21);
    let i686 = read("elf-i686-pc-linux-gnu.o");
    let e = ElfFile::parse(&i686[..]).unwrap();
    assert!(!e.class().is64 && !e.class().big_endian);
}

#[test]
fn elf_symbols_and_relocations() {
    let data = read("elf-x86_64-pc-linux-gnu.o");
    let e = ElfFile::parse(&data[..]).unwrap();
    let symtab = e.section_of_type(elf::SHT_SYMTAB).unwrap();
    let syms = e.symbols(symtab).unwrap();
    let w = syms
        .iter()
        .find(|s| s.name == b"__hip_fatbin_wrapper")
        .unwrap();
    assert_eq!((w.size, w.binding(), w.sym_type()), (24, 1, 1));
    let seg = e
        .section_index_by_name(b".hipFatBinSegment")
        .unwrap()
        .unwrap();
    assert_eq!(usize::from(w.shndx), seg);
    let rela = e
        .section_headers()
        .iter()
        .position(|s| s.sh_type == elf::SHT_RELA && s.info as usize == seg)
        .unwrap();
    let relocs = e.relocations(rela).unwrap();
    assert_eq!(relocs.len(), 1);
    assert_eq!(relocs[0].offset, 8);
    assert_eq!(relocs[0].r_type, 1); // R_X86_64_64
}

/// The wrapper's pointer in a shared library is a RELATIVE relocation:
/// its addend is the virtual address of the fat binary.
#[test]
fn shared_library_pointers_resolve_through_relative_relocations() {
    for (file, relative) in [
        ("elf-x86_64.so", elf::R_X86_64_RELATIVE),
        ("elf-aarch64.so", elf::R_AARCH64_RELATIVE),
    ] {
        let data = read(file);
        let e = ElfFile::parse(&data[..]).unwrap();
        assert_eq!(e.header().e_type, elf::ET_DYN);
        let phdrs = e.program_headers().unwrap();
        assert!(phdrs.iter().any(|p| p.p_type == elf::PT_LOAD));
        let seg = e
            .section_index_by_name(b".hipFatBinSegment")
            .unwrap()
            .unwrap();
        let wrapper = e.section_headers()[seg];
        let pointer_at = wrapper.addr + 8;
        let rela = e.section_index_by_name(b".rela.dyn").unwrap().unwrap();
        let r = e
            .relocations(rela)
            .unwrap()
            .into_iter()
            .find(|r| r.offset == pointer_at)
            .unwrap();
        assert_eq!(r.r_type, relative, "{file}");
        let target = r.addend.unwrap() as u64;
        let fatbin = e.section_index_by_name(b".hip_fatbin").unwrap().unwrap();
        assert_eq!(target, e.section_headers()[fatbin].addr, "{file}");
        let off = e.vaddr_to_offset(target).unwrap().unwrap();
        assert_eq!(&data[off as usize..off as usize + 16], b"__CLANG_OFFLOAD_");
        assert_eq!(
            e.read_at_vaddr(target, 16).unwrap(),
            Some(&b"__CLANG_OFFLOAD_"[..])
        );
        // The wrapper's magic, read through its virtual address.
        let magic = e.read_at_vaddr(wrapper.addr, 4).unwrap().unwrap();
        assert_eq!(magic, 0x4849_5046u32.to_le_bytes());
    }
}

#[test]
fn pe_images_map_addresses_to_offsets() {
    let data = read("pe-x86_64.dll");
    let obj = Object::parse(&data).unwrap();
    let coff = obj.as_coff().unwrap();
    assert_eq!(coff.image_base(), Some(0x1_8000_0000));
    let s = obj.section_by_name(b".hip_fat").unwrap().unwrap();
    assert_eq!(s.address, 0x5000);
    assert_eq!(obj.address_to_offset(0x5004).unwrap(), Some(0xa04));
    let data_sec = obj.section_by_name(b".data").unwrap().unwrap();
    assert_eq!(data_sec.file_range, None);
}

#[test]
fn macho_segments_and_universal_slices() {
    let data = read("macho-x86_64.exe");
    let m = MachOFile::parse(&data).unwrap();
    assert_eq!(m.header().filetype, macho::MH_EXECUTE);
    assert!(m.segments().iter().any(|s| s.name == b"__TEXT"));
    let dylib = read("macho-x86_64.dylib");
    assert_eq!(
        MachOFile::parse(&dylib).unwrap().header().filetype,
        macho::MH_DYLIB
    );
    let fat = read("macho-universal.o");
    assert_eq!(identify(&fat), FileKind::MachOUniversal);
    let slices = macho::parse_fat(&fat).unwrap();
    assert_eq!(slices.len(), 2);
    let cpus: Vec<u32> = slices.iter().map(|s| s.cputype).collect();
    assert_eq!(cpus, [0x0100_0007, 0x0100_000c]);
    for (s, file) in slices.iter().zip(["macho-x86_64.o", "macho-arm64.o"]) {
        let slice = &fat[s.offset as usize..(s.offset + s.size) as usize];
        assert_eq!(slice, read(file), "{file}");
        let obj = Object::parse(slice).unwrap();
        assert!(obj.section_by_name(b"__hip_fatbin").unwrap().is_some());
    }
}

#[test]
fn identify_names_every_fixture() {
    for file in OBJECTS {
        let data = read(file);
        let kind = identify(&data);
        match kind {
            FileKind::Elf(id) => {
                assert!(file.starts_with("elf-"));
                assert_eq!(
                    id.machine,
                    Some(ElfFile::parse(&data[..]).unwrap().header().machine)
                );
            }
            FileKind::Coff { bigobj, .. } => assert!(file.starts_with("coff-") && !bigobj),
            FileKind::Pe => assert!(file.starts_with("pe-")),
            FileKind::MachO(m) => {
                assert!(file.starts_with("macho-"));
                assert_eq!(m.endian, Endian::Little);
            }
            other => panic!("{file}: {other:?}"),
        }
    }
    let bigobj =
        std::fs::read(fixtures().join("../object_bundle/hostbig-x86_64-w64-mingw32.o")).unwrap();
    assert!(matches!(
        identify(&bigobj),
        FileKind::Coff {
            bigobj: true,
            machine: 0x8664
        }
    ));
    let obj = Object::parse(&bigobj).unwrap();
    assert!(obj.as_coff().unwrap().is_bigobj());
    assert!(obj.section_by_name(b".text").unwrap().is_some());
}

/// Reads everything a caller can ask for; must never panic.
fn read_all(data: &[u8]) {
    let _ = identify(data);
    let _ = macho::parse_fat(data);
    let Ok(obj) = Object::parse(data) else {
        return;
    };
    for s in obj.sections().flatten() {
        if let Ok(d) = s.data() {
            assert!(d.len() <= data.len());
        }
    }
    let _ = obj.section_by_name(b".hip_fatbin");
    let _ = obj.address_to_offset(0x1000);
    if let Some(e) = obj.as_elf() {
        if let Ok(phdrs) = e.program_headers() {
            for p in &phdrs {
                if let Ok(notes) = e.segment_notes(p) {
                    notes.for_each(drop);
                }
            }
        }
        for i in 0..e.section_headers().len() {
            let _ = e.symbols(i);
            let _ = e.relocations(i);
            if let Ok(notes) = e.section_notes(i) {
                notes.for_each(drop);
            }
        }
    }
    if let Some(c) = obj.as_coff() {
        let _ = c.symbols();
        for i in 0..c.section_count() {
            if let Ok(h) = c.section_header(i) {
                let _ = c.relocations(&h);
            }
        }
    }
}

#[test]
fn truncated_files_give_errors_not_panics() {
    for file in OBJECTS.iter().chain(&["macho-universal.o"]) {
        let data = read(file);
        for len in 0..data.len().min(2048) {
            read_all(&data[..len]);
        }
    }
}

#[test]
fn hostile_headers_give_errors() {
    let good = read("elf-x86_64-pc-linux-gnu.o");
    let set = |at: usize, v: &[u8]| {
        let mut d = good.clone();
        d[at..at + v.len()].copy_from_slice(v);
        d
    };
    // e_shoff near 2^64, e_shoff past the end, a huge e_shnum via entry 0.
    let cases: Vec<(Vec<u8>, Error)> = vec![
        (
            set(40, &u64::MAX.to_le_bytes()),
            Error::ElfSectionTableStartPastEnd { shoff: u64::MAX },
        ),
        (set(4, &[3]), Error::ElfInvalidClass),
        (set(5, &[0]), Error::ElfInvalidData),
        (set(58, &[1, 0]), Error::ElfBadShentsize(1)),
        (set(60, &[0xff, 0xff]), Error::ElfSectionTablePastEnd),
    ];
    for (data, want) in cases {
        assert_eq!(ElfFile::parse(&data[..]).unwrap_err(), want);
        read_all(&data);
    }
    assert_eq!(
        ElfFile::parse(&good[..40]).unwrap_err(),
        Error::ElfTooSmall {
            size: 40,
            header: 64
        }
    );
    // Every section's offset pushed to near 2^64: reads fail, listing works.
    let e = ElfFile::parse(&good[..]).unwrap();
    let shoff = e.header().shoff as usize;
    let mut bad = good.clone();
    let names = usize::from(e.header().shstrndx);
    for i in (1..e.section_headers().len()).filter(|&i| i != names) {
        let at = shoff + i * 64 + 24;
        bad[at..at + 8].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
    }
    let obj = Object::parse(&bad).unwrap();
    let text = obj.section_by_name(b".text").unwrap().unwrap();
    assert_eq!(text.data(), Err(Error::UnexpectedEof));
    read_all(&bad);

    // A Mach-O file claiming 2^32-1 load commands, and one whose segment
    // claims more sections than its command holds.
    let m = read("macho-x86_64.o");
    let mut many = m.clone();
    many[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(MachOFile::parse(&many).is_err());
    let mut nsects = m.clone();
    nsects[32 + 64..32 + 68].copy_from_slice(&0x0100_0000u32.to_le_bytes());
    assert!(matches!(
        MachOFile::parse(&nsects),
        Err(Error::Malformed { offset: 32, .. })
    ));
    // A universal file whose slice runs past the end.
    let mut fat = read("macho-universal.o");
    fat[8 + 12..8 + 16].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(macho::parse_fat(&fat).is_err());
    // A COFF section table past the end.
    let mut coff = read("coff-x86_64.obj");
    coff[2..4].copy_from_slice(&0xfff0u16.to_le_bytes());
    assert_eq!(Object::parse(&coff).unwrap_err(), Error::UnexpectedEof);
}

#[test]
fn byte_flips_never_panic() {
    // A cheap deterministic sweep over header bytes of every fixture.
    for file in OBJECTS.iter().chain(&["macho-universal.o"]) {
        let data = read(file);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..300 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut d = data.clone();
            let at = (seed as usize) % d.len().min(512);
            d[at] = (seed >> 32) as u8;
            let at2 = ((seed >> 16) as usize) % d.len();
            d[at2] = 0xff;
            read_all(&d);
        }
    }
}

/// Archive symbols of COFF and Mach-O members come from objfile's symbol
/// tables: the external defined symbols llvm-nm lists, in table order.
#[test]
fn coff_and_macho_archive_symbols() {
    use offload_format::archive::{member_symbols, MemberSymbols};
    let cases: &[(&str, &[&[u8]])] = &[
        (
            "coff-x86_64.obj",
            &[b"__hip_fatbin_wrapper", b"host", b"zeroed", b"entry"],
        ),
        (
            "macho-x86_64.o",
            &[b"___hip_fatbin_wrapper", b"_fatbin", b"_main", b"_zeroed"],
        ),
    ];
    for (file, want) in cases {
        let data = read(file);
        let MemberSymbols::Symbols(mut got) = member_symbols(&data).unwrap() else {
            panic!("{file}: not symbolic");
        };
        got.sort();
        let mut want: Vec<Vec<u8>> = want.iter().map(|w| w.to_vec()).collect();
        want.sort();
        assert_eq!(got, want, "{file}");
    }
    let arm = read("macho-arm64.o");
    let m = MachOFile::parse(&arm).unwrap();
    let names: Vec<&[u8]> = m
        .symbols()
        .unwrap()
        .iter()
        .filter(|s| s.n_type & macho::N_EXT != 0)
        .map(|s| s.name)
        .collect();
    assert!(names.contains(&&b"___hip_fatbin_wrapper"[..]));
}

/// The string table of an ELF member's symbol table is not SHT_STRTAB: the
/// section type is named as LLVM's `getELFSectionTypeName` names it (what
/// `llvm-ar-22 rcs` prints for these three members: `Unknown`,
/// `SHT_SHLIB`, `SHT_LLVM_OFFLOADING`), never as a number.
#[test]
fn archive_symbols_name_a_wrong_string_table_type_as_llvm_does() {
    use offload_format::archive::member_symbols;
    let data = read("elf-x86_64-pc-linux-gnu.o");
    let u16_at = |at: usize| u16::from_le_bytes([data[at], data[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    let (entsize, count) = (u16_at(0x3a), u16_at(0x3c));
    let link = (0..count)
        .map(|i| shoff + i * entsize)
        .find(|&h| u32_at(h + 4) == 2)
        .map(|h| u32_at(h + 40) as usize)
        .expect("a symbol table");
    for (sh_type, name) in [
        (0x12345u32, "Unknown"),
        (10, "SHT_SHLIB"),
        (0x6fff_4c0b, "SHT_LLVM_OFFLOADING"),
    ] {
        let mut bad = data.clone();
        let at = shoff + link * entsize + 4;
        bad[at..at + 4].copy_from_slice(&sh_type.to_le_bytes());
        assert_eq!(
            member_symbols(&bad).unwrap_err().to_string(),
            format!(
                "invalid sh_type for string table section [index {link}]: expected SHT_STRTAB, but got {name}"
            )
        );
    }
}
