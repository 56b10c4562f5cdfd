//! Reading offload code out of a host object: an offload binary (what
//! `llvm-offload-binary` writes and clang embeds), the ELF section that
//! holds it, and every offload section of the file found through
//! [`objfile::Object`], the format-independent section reader.
//!
//! `cargo run -p offload-format --example offload_sections` prints what it
//! finds; `cargo test` runs it and checks every step. The object is built
//! here byte by byte, so the example needs no LLVM; on a real executable or
//! shared library the same code reads the sections clang and the linker
//! left there.

use offload_format::object_bundle;
use offload_format::objfile::{self, Object};
use offload_format::offload_binary::extract::extract;
use offload_format::offload_binary::write::ImageEntry;
use offload_format::offload_binary::{parse_binaries, ImageKind, OffloadKind};

/// `SHT_LLVM_OFFLOADING`, the type clang gives `.llvm.offloading`.
const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
/// `SHT_STRTAB`.
const SHT_STRTAB: u32 = 3;

fn main() {
    // 1. An offload binary: one image and its string metadata, as
    //    `llvm-offload-binary --image=file=k.o,triple=...,arch=gfx90a` makes it.
    let entry = ImageEntry::new(
        ImageKind::OBJECT,
        OffloadKind::HIP,
        vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")],
        b"device code for gfx90a",
    );
    let binary = entry.to_v1();

    // 2. Read it back: every binary in a blob (a section may hold several,
    //    one after another).
    let binaries = parse_binaries(&binary).expect("an offload binary");
    assert_eq!(binaries.len(), 1);
    let b = &binaries[0];
    println!(
        "offload binary: {} {} {} ({} bytes of {:?})",
        b.offload_kind.name(),
        String::from_utf8_lossy(b.triple()),
        String::from_utf8_lossy(b.arch()),
        b.image.len(),
        b.image_kind.extension(),
    );
    assert_eq!(b.triple(), b"amdgcn-amd-amdhsa");
    assert_eq!(b.arch(), b"gfx90a");
    assert_eq!(&*b.image, b"device code for gfx90a");

    // 3. A host object whose `.llvm.offloading` section holds that binary,
    //    plus a bundle section as `clang-offload-bundler -type=o` adds them.
    let host = elf_with_section(b".llvm.offloading", SHT_LLVM_OFFLOADING, &binary);
    let id = "hip-amdgcn-amd-amdhsa--gfx90a";
    let fat = object_bundle::add_bundle_sections(&host, &[(id, &b"bundled code"[..])])
        .expect("the bundler's section edit");

    // 4. Find the offload sections by name, whatever the object format.
    let obj = Object::parse(&fat).expect("an object file");
    let mut found = Vec::new();
    for section in obj.sections() {
        let section = section.expect("a readable section header");
        let name = String::from_utf8_lossy(section.name).into_owned();
        let is_offload = name.starts_with(".llvm.offloading")
            || name.starts_with(object_bundle::SECTION_PREFIX)
            || name == ".hip_fatbin"
            || name == ".nv_fatbin";
        if is_offload {
            let data = section.data().expect("section data inside the file");
            println!("{:?} section {name}: {} bytes", obj.format(), data.len());
            found.push((name, data));
        }
    }
    assert_eq!(found.len(), 2);
    assert_eq!(found[0], (".llvm.offloading".to_string(), &binary[..]));
    assert_eq!(found[1].0, format!("{}{id}", object_bundle::SECTION_PREFIX));
    assert_eq!(found[1].1, b"bundled code");

    // 5. Or let the library find every offload binary in the file (ELF and
    //    COFF sections, archive members, bitcode), as llvm-offload-binary
    //    does for its input.
    let images = extract(&fat, b"host.o").expect("offload binaries");
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].binary, binaries[0]);

    // The bundle sections, read the way `clang-offload-bundler -list` does.
    let listed: Vec<String> = object_bundle::bundle_sections(&fat)
        .expect("bundle sections")
        .iter()
        .map(|s| String::from_utf8_lossy(s.id).into_owned())
        .collect();
    assert_eq!(listed, [id]);

    // Errors never panic: a damaged object is an error with LLVM's text.
    assert!(matches!(
        Object::parse(&fat[..40]),
        Err(objfile::Error::ElfTooSmall { .. })
    ));
}

/// A little-endian ELF64 relocatable object with one section `name` of
/// type `sh_type` holding `contents`, and the section name table.
fn elf_with_section(name: &[u8], sh_type: u32, contents: &[u8]) -> Vec<u8> {
    let mut names = b"\0".to_vec();
    let name_at = names.len() as u32;
    names.extend_from_slice(name);
    names.push(0);
    let shstrtab_at = names.len() as u32;
    names.extend_from_slice(b".shstrtab\0");

    let mut f = vec![0x7f, b'E', b'L', b'F', 2, 1, 1];
    f.resize(64, 0);
    let put16 =
        |f: &mut Vec<u8>, at: usize, v: u16| f[at..at + 2].copy_from_slice(&v.to_le_bytes());
    put16(&mut f, 16, 1); // ET_REL
    put16(&mut f, 18, 62); // EM_X86_64
    f[20..24].copy_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    let data_at = f.len() as u64;
    f.extend_from_slice(contents);
    let names_at = f.len() as u64;
    f.extend_from_slice(&names);
    f.resize(f.len().next_multiple_of(8), 0);
    let shoff = f.len() as u64;
    f[40..48].copy_from_slice(&shoff.to_le_bytes());
    put16(&mut f, 52, 64); // e_ehsize
    put16(&mut f, 58, 64); // e_shentsize
    put16(&mut f, 60, 3); // e_shnum: null, the section, .shstrtab
    put16(&mut f, 62, 2); // e_shstrndx
    let sections = [
        (0, 0, 0, 0, 0),
        (name_at, sh_type, data_at, contents.len() as u64, 8),
        (shstrtab_at, SHT_STRTAB, names_at, names.len() as u64, 1),
    ];
    for (name, ty, offset, size, align) in sections {
        let mut sh = [0u8; 64];
        sh[0..4].copy_from_slice(&u32::to_le_bytes(name));
        sh[4..8].copy_from_slice(&u32::to_le_bytes(ty));
        sh[24..32].copy_from_slice(&u64::to_le_bytes(offset));
        sh[32..40].copy_from_slice(&u64::to_le_bytes(size));
        sh[48..56].copy_from_slice(&u64::to_le_bytes(align));
        f.extend_from_slice(&sh);
    }
    f
}

#[test]
fn finds_the_offload_sections() {
    main();
}
