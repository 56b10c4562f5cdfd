//! `offload thin` shrinking PE32+ DLLs: DLLs that clang-22 and lld-link
//! build with nvcc's host layout (fat binaries in `.nv_fatb`, their
//! `__fatBinC_Wrapper_t` records in `.nvFatBi`) shrink; the shrunk DLL
//! reads back in `llvm-readobj-22` and `llvm-objdump-22` without
//! complaint, keeps its exports, base relocations and every section's
//! address, each record points at a fat binary's first byte, and the kept
//! entries are byte for byte those of the layout-preserving rewrite. A
//! HIP DLL (`.hip_fat`, `.hipFatB`) keeps its bundles 4096-aligned and
//! `clang-offload-bundler-22` lists each with only the kept target.
//! Hostile DLLs (a record into the middle of a container, two records
//! for one container, a signed DLL, another pointer or an export into the
//! section) fall back to that rewrite, byte for byte. A DLL with a
//! `CheckSum` (lld-link `/release`) gets the checksum of the shrunk file,
//! and of the layout-preserving rewrite.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use offload_format::objfile::coff::CoffFile;
use offload_format::objfile::elf::ElfFile;
use test_support::{have, s, stdout_ok as ok};

fn offload(args: &[&str]) -> Output {
    test_support::run_in(env!("CARGO_BIN_EXE_offload"), None, args)
}

/// nvcc's fat binary from lz-big.o: sm_80 and sm_90 cubins, sm_80 PTX.
fn fatbin() -> Vec<u8> {
    let nv = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nvidia/lz-big.o"),
    )
    .unwrap();
    let elf = ElfFile::parse(&nv[..]).unwrap();
    let i = elf.section_index_by_name(b".nv_fatbin").unwrap().unwrap();
    elf.section_bytes(i).unwrap().to_vec()
}

/// Builds `name.dll` in `d`: two fat binaries in `.nv_fatb`, a record for
/// each in `.nvFatBi`, exported functions, and `extra` source (`ARRAY`
/// in it stands for the fat binary's bytes).
fn build(d: &Path, name: &str, extra: &str) -> Option<PathBuf> {
    build_with(d, name, &NVIDIA, &fatbin(), extra)
}

/// Where a vendor's host code puts containers and records.
struct Vendor {
    section: &'static str,
    records: &'static str,
    magic: u32,
    align: u32,
}

const NVIDIA: Vendor = Vendor {
    section: ".nv_fatb",
    records: ".nvFatBi",
    magic: 0x466243b1,
    align: 8,
};

/// clang's HIP host code on Windows: `.hip_fat` (4096-aligned bundles),
/// `__hip_fatbin_wrapper` records in `.hipFatB`.
const HIP: Vendor = Vendor {
    section: ".hip_fat",
    records: ".hipFatB",
    magic: 0x48495046,
    align: 4096,
};

/// [`build`] for `v`'s sections with `container` twice.
fn build_with(d: &Path, name: &str, v: &Vendor, container: &[u8], extra: &str) -> Option<PathBuf> {
    build_linked(d, name, v, container, extra, &[])
}

/// [`build_with`], `link` passed to lld-link as well.
fn build_linked(
    d: &Path,
    name: &str,
    v: &Vendor,
    container: &[u8],
    extra: &str,
    link: &[&str],
) -> Option<PathBuf> {
    if !have("clang-22") || !have("lld-link-22") {
        return None;
    }
    let array: Vec<String> = container.iter().map(|b| b.to_string()).collect();
    let array = array.join(",");
    let src = d.join(format!("{name}.c"));
    fs::write(
        &src,
        format!(
            "struct wrapper {{ int magic; int version; const void *data; void *unused; }};\n\
             #pragma section(\"{sec}\", read)\n\
             #pragma section(\"{rec}\", read, write)\n\
             __declspec(allocate(\"{sec}\")) __declspec(align({al})) static const unsigned char fb0[] = {{{array}}};\n\
             __declspec(allocate(\"{sec}\")) __declspec(align({al})) static const unsigned char fb1[] = {{{array}}};\n\
             __declspec(allocate(\"{rec}\")) __declspec(align(8)) static struct wrapper w0 = {{{magic}, 1, fb0, 0}};\n\
             __declspec(allocate(\"{rec}\")) __declspec(align(8)) static struct wrapper w1 = {{{magic}, 1, fb1, 0}};\n\
             __declspec(dllexport) int answer(void) {{ return 42; }}\n\
             __declspec(dllexport) const void *wrappers(int i) {{ return i ? &w1 : &w0; }}\n\
             {}\n",
            extra.replace("ARRAY", &array),
            sec = v.section,
            rec = v.records,
            al = v.align,
            magic = v.magic as i32,
        ),
    )
    .unwrap();
    let obj = d.join(format!("{name}.obj"));
    let dll = d.join(format!("{name}.dll"));
    let o = Command::new("clang-22")
        .args(["--target=x86_64-pc-windows-msvc", "-O1", "-c", "-o"])
        .args([s(&obj), s(&src)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = format!("/out:{}", s(&dll));
    let o = Command::new("lld-link-22")
        .args([
            "/dll",
            "/noentry",
            "/nodefaultlib",
            "/Brepro",
            &out,
            s(&obj),
        ])
        .args(link)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(dll)
}

/// Thins `input` to sm_90 (PTX dropped) shrunk and with `--keep-layout`:
/// the shrink report, and both outputs.
fn thin_both(input: &Path) -> (String, Vec<u8>, Vec<u8>) {
    let (out, kept) = (
        input.with_extension("out.dll"),
        input.with_extension("kept.dll"),
    );
    let run = |extra: &[&str], to: &Path| {
        ok(&offload(
            &[
                &["thin", "--keep", "sm_90", "--drop-ptx"][..],
                extra,
                &["-o", s(to), s(input)],
            ]
            .concat(),
        ))
    };
    let report = run(&[], &out);
    run(&["--keep-layout"], &kept);
    (report, fs::read(&out).unwrap(), fs::read(&kept).unwrap())
}

/// A section's header and its raw bytes.
fn section<'a>(
    data: &'a [u8],
    name: &[u8],
) -> (offload_format::objfile::coff::SectionHeader, &'a [u8]) {
    let c = CoffFile::parse_image(data).unwrap();
    let i = (0..c.section_count())
        .find(|&i| c.section_name(i).unwrap() == name)
        .unwrap();
    let h = c.section_header(i).unwrap();
    let at = h.pointer_to_raw_data as usize;
    (h, &data[at..at + h.size_of_raw_data as usize])
}

/// The entries of every fat binary in `.nv_fatb`.
fn entries(data: &[u8]) -> Vec<Vec<u8>> {
    let (h, raw) = section(data, b".nv_fatb");
    let raw = &raw[..raw.len().min(h.virtual_size as usize)];
    let scan = offload_format::nvidia::fatbin::scan(raw);
    assert!(scan.damage.is_empty());
    scan.containers
        .iter()
        .flat_map(|c| c.entries.iter().map(|e| e.payload.to_vec()))
        .collect()
}

/// Each record's pointer (absolute address).
fn record_targets(data: &[u8]) -> Vec<u64> {
    let (h, raw) = section(data, b".nvFatBi");
    raw[..h.virtual_size as usize]
        .chunks_exact(24)
        .filter(|r| r[..4] == 0x466243b1u32.to_le_bytes())
        .map(|r| u64::from_le_bytes(r[8..16].try_into().unwrap()))
        .collect()
}

fn tool_text(tool: &str, args: &[&str], p: &Path) -> Option<String> {
    if !have(tool) {
        return None;
    }
    let o = Command::new(tool).args(args).arg(p).output().unwrap();
    assert!(
        o.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{tool}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8(o.stdout).unwrap().replace(s(p), "FILE"))
}

/// The lines of `text` that name an address, export, relocation or
/// section name (not file offsets and sizes).
fn addresses(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            [
                "VirtualAddress",
                "VirtualSize",
                "Name:",
                "Address:",
                "Type:",
                "RVA",
                "ImageBase",
                "SizeOfImage",
            ]
            .iter()
            .any(|k| l.contains(k))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn dlls_shrink_with_records_following_and_addresses_kept() {
    let dir = tempfile::tempdir().unwrap();
    let Some(dll) = build(dir.path(), "nv", "") else {
        return;
    };
    let (report, after, kept) = thin_both(&dll);
    let before = fs::read(&dll).unwrap();
    assert!(report.contains("  shrunk: "), "{report}");
    assert!(after.len() < before.len(), "{report}");
    // Whole FileAlignment units left the file.
    assert_eq!((before.len() - after.len()) % 512, 0);
    // The kept entries, byte for byte those of the in-place rewrite.
    assert_eq!(entries(&after), entries(&kept));
    assert_eq!(entries(&after).len(), 2);
    // Each record points at a fat binary's first byte in the section.
    let (h, raw) = section(&after, b".nv_fatb");
    let va = 0x1_8000_0000 + u64::from(h.virtual_address);
    let targets = record_targets(&after);
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0], va);
    assert!(targets[1] > targets[0]);
    for t in &targets {
        let at = (t - va) as usize;
        assert_eq!(
            raw[at..at + 4],
            [0x50, 0xed, 0x55, 0xba],
            "fat binary magic"
        );
    }
    // Its raw data is shorter; its virtual size is not.
    assert!(h.size_of_raw_data < section(&before, b".nv_fatb").0.size_of_raw_data);
    assert_eq!(h.virtual_size, section(&before, b".nv_fatb").0.virtual_size);
    // Other tools read it; addresses, exports and relocations unchanged.
    let out = dll.with_extension("out.dll");
    let args = [
        "--file-headers",
        "--sections",
        "--coff-basereloc",
        "--coff-exports",
    ];
    if let Some(text) = tool_text("llvm-readobj-22", &args, &out) {
        let orig = tool_text("llvm-readobj-22", &args, &dll).unwrap();
        assert_eq!(addresses(&text), addresses(&orig));
    }
    if let Some(text) = tool_text("llvm-objdump-22", &["-p"], &out) {
        let orig = tool_text("llvm-objdump-22", &["-p"], &dll).unwrap();
        let differ: Vec<_> = text
            .lines()
            .zip(orig.lines())
            .filter(|(a, b)| a != b)
            .collect();
        // Only SizeOfInitializedData changes.
        assert_eq!(differ.len(), 1, "{differ:?}");
        assert!(differ[0].0.starts_with("SizeOfInitializedData"));
    }
    // offload ls reads back one sm_90 cubin per container.
    let ls = ok(&offload(&["ls", s(&out)]));
    assert_eq!(ls.matches("sm_90.cubin").count(), 2, "{ls}");
    assert!(!ls.contains("sm_80"), "{ls}");
}

fn put(data: &mut [u8], at: usize, v: &[u8]) {
    data[at..at + v.len()].copy_from_slice(v);
}

/// The file offset of the PE optional header.
fn opt(data: &[u8]) -> usize {
    u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize + 24
}

#[test]
fn hostile_dlls_fall_back_to_the_layout_preserving_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(dll) = build(d, "nv", "") else {
        return;
    };
    let base = fs::read(&dll).unwrap();
    let (wh, _) = section(&base, b".nvFatBi");
    let rec = wh.pointer_to_raw_data as usize;
    let first = u64::from_le_bytes(base[rec + 8..rec + 16].try_into().unwrap());
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut middle = base.clone();
    put(&mut middle, rec + 8, &(first + 16).to_le_bytes());
    cases.push(("middle", middle, "middle of a container"));
    let mut twice = base.clone();
    put(&mut twice, rec + 24 + 8, &first.to_le_bytes());
    cases.push(("twice", twice, "two registration records"));
    let mut signed = base.clone();
    let o = opt(&signed);
    put(&mut signed, o + 112 + 4 * 8, &0x400u32.to_le_bytes());
    put(&mut signed, o + 112 + 4 * 8 + 4, &0x10u32.to_le_bytes());
    cases.push(("signed", signed, "signed"));
    if let Some(p) = build(d, "stray", "const void *stray = fb1 + 8;") {
        cases.push(("stray", fs::read(p).unwrap(), "not a registration record"));
    }
    if let Some(p) = build(
        d,
        "exported",
        "__declspec(allocate(\".nv_fatb\")) __declspec(dllexport) __declspec(align(8)) \
         const unsigned char fb2[] = {ARRAY};",
    ) {
        cases.push(("exported", fs::read(p).unwrap(), "an export points into"));
    }
    for (name, data, why) in cases {
        let p = d.join(format!("h-{name}.dll"));
        fs::write(&p, &data).unwrap();
        let (report, after, kept) = thin_both(&p);
        assert!(report.contains("not shrunk ("), "{name}: {report}");
        assert!(report.contains(why), "{name}: {report}");
        assert_eq!(after, kept, "{name}");
        assert_eq!(after.len(), data.len(), "{name}");
    }
}

/// The PE image checksum of `data` as the test computes it, on its own:
/// the 16-bit little-endian words (the `CheckSum` field as zero, an odd
/// last byte padded), each sum folded to 16 bits, plus the length.
fn pe_checksum(data: &[u8]) -> u32 {
    let field = opt(data) + 64;
    let mut sum = 0u32;
    for (i, pair) in data.chunks(2).enumerate() {
        let word = if i * 2 == field || i * 2 == field + 2 {
            0
        } else {
            u32::from(pair[0]) | u32::from(*pair.get(1).unwrap_or(&0)) << 8
        };
        sum += word;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum + data.len() as u32
}

fn stored_checksum(data: &[u8]) -> u32 {
    let at = opt(data) + 64;
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

/// lld-link `/release` writes a `CheckSum`; the test's own computation
/// gives the same value on the original (which proves it), and the
/// shrunk DLL's stored checksum is its own computed checksum, not the
/// original's. A DLL whose stored checksum was wrong gets the right one;
/// one without keeps zero.
#[test]
fn dlls_with_a_checksum_shrink_with_it_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(dll) = build_linked(d, "sum", &NVIDIA, &fatbin(), "", &["/release"]) else {
        return;
    };
    let before = fs::read(&dll).unwrap();
    assert_ne!(stored_checksum(&before), 0, "lld-link /release sets it");
    assert_eq!(stored_checksum(&before), pe_checksum(&before));
    let (report, after, kept) = thin_both(&dll);
    assert!(report.contains("  shrunk: "), "{report}");
    assert!(after.len() < before.len());
    assert_eq!(stored_checksum(&after), pe_checksum(&after));
    assert_ne!(stored_checksum(&after), stored_checksum(&before));
    // The layout-preserving rewrite (--keep-layout, and every fallback)
    // recomputes it too.
    assert_eq!(kept.len(), before.len());
    assert_eq!(stored_checksum(&kept), pe_checksum(&kept));
    assert_ne!(stored_checksum(&kept), stored_checksum(&before));
    // A wrong stored checksum: the shrunk file's is right.
    let mut wrong = before.clone();
    let o = opt(&wrong);
    put(&mut wrong, o + 64, &0x1234u32.to_le_bytes());
    let p = d.join("wrong.dll");
    fs::write(&p, &wrong).unwrap();
    let (report, after_wrong, _) = thin_both(&p);
    assert!(report.contains("  shrunk: "), "{report}");
    assert_eq!(after_wrong, after);
    // Without /release: zero stays zero.
    let Some(plain) = build(d, "plain", "") else {
        return;
    };
    assert_eq!(stored_checksum(&fs::read(&plain).unwrap()), 0);
    let (report, after_plain, kept_plain) = thin_both(&plain);
    assert!(report.contains("  shrunk: "), "{report}");
    assert_eq!(stored_checksum(&after_plain), 0);
    assert_eq!(stored_checksum(&kept_plain), 0);
}

#[test]
fn hip_dlls_shrink_with_4096_aligned_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // clang-22's HIP bundle (gfx906 and gfx90a code objects) from the
    // shared library tests/fixtures/thin/libhip.so.
    let so =
        fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/thin/libhip.so"))
            .unwrap();
    let bundle = {
        let elf = ElfFile::parse(&so[..]).unwrap();
        let i = elf.section_index_by_name(b".hip_fatbin").unwrap().unwrap();
        let bytes = elf.section_bytes(i).unwrap();
        let scan = offload_format::hip_fatbin::scan(bytes, &[]);
        scan.items[0].bytes.to_vec()
    };
    let Some(dll) = build_with(d, "hip", &HIP, &bundle, "") else {
        return;
    };
    let out = dll.with_extension("out.dll");
    let report = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "-o",
        s(&out),
        s(&dll),
    ]));
    assert!(report.contains("  shrunk: "), "{report}");
    let (before, after) = (fs::read(&dll).unwrap(), fs::read(&out).unwrap());
    assert!(after.len() < before.len());
    let (h, raw) = section(&after, b".hip_fat");
    let va = 0x1_8000_0000 + u64::from(h.virtual_address);
    let mut targets = Vec::new();
    let (rh, rraw) = section(&after, b".hipFatB");
    for r in rraw[..rh.virtual_size as usize].chunks_exact(24) {
        if r[..4] == 0x48495046u32.to_le_bytes() {
            targets.push(u64::from_le_bytes(r[8..16].try_into().unwrap()));
        }
    }
    assert_eq!(targets.len(), 2);
    for t in &targets {
        // A bundle's first byte, at a 4096-aligned address.
        assert_eq!(t % 4096, 0);
        let at = (t - va) as usize;
        assert!(raw[at..].starts_with(b"__CLANG_OFFLOAD_BUNDLE__"));
        // The bundler reads each one back with only the kept target.
        if have("clang-offload-bundler-22") {
            let b = d.join(format!("b{at}.bin"));
            let end = offload_format::bundle::parse_header(&raw[at..])
                .unwrap()
                .iter()
                .map(|e| e.data.as_ptr() as usize - raw[at..].as_ptr() as usize + e.data.len())
                .max()
                .unwrap();
            fs::write(&b, &raw[at..at + end]).unwrap();
            let o = Command::new("clang-offload-bundler-22")
                .args(["-list", "-type=o", &format!("-input={}", s(&b))])
                .output()
                .unwrap();
            let list = String::from_utf8_lossy(&o.stdout);
            assert!(
                list.contains("gfx90a") && !list.contains("gfx906"),
                "{list}"
            );
        }
    }
    // llvm-readobj-22 reads it without complaint.
    tool_text(
        "llvm-readobj-22",
        &["--file-headers", "--sections", "--coff-basereloc"],
        &out,
    );
}

/// The containers of `.nv_fatb`, each rewritten as its first half.
fn halves(file: &[u8]) -> Vec<offload_format::shrink::Rewrite<'_>> {
    use offload_format::thin::{Piece, Thinned};
    let Ok(c) = CoffFile::parse_image(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..c.section_count() {
        if c.section_name(i).ok() != Some(&b".nv_fatb"[..]) {
            continue;
        }
        let h = c.section_header(i).unwrap();
        let (at, len) = (
            h.pointer_to_raw_data as usize,
            h.size_of_raw_data.min(h.virtual_size) as usize,
        );
        let Some(bytes) = file.get(at..at + len) else {
            continue;
        };
        for k in offload_format::nvidia::fatbin::scan(bytes).containers {
            let (offset, size) = ((at + k.offset) as u64, k.len());
            let used = size / 2;
            out.push(offload_format::shrink::Rewrite {
                offset,
                size,
                new: Thinned {
                    pieces: vec![
                        Piece::Input(&file[offset as usize..(offset + used) as usize]),
                        Piece::Zeros(size - used),
                    ],
                    used,
                    kept: Vec::new(),
                    dropped: Vec::new(),
                },
            });
        }
    }
    out
}

#[test]
fn damaged_dlls_never_panic_and_shrunk_layouts_tile_the_output() {
    use offload_format::shrink::{self, Out};
    let dir = tempfile::tempdir().unwrap();
    let Some(dll) = build(dir.path(), "nv", "") else {
        return;
    };
    let base = fs::read(&dll).unwrap();
    assert!(shrink::shrink(&base, &halves(&base)).is_ok());
    // Every header byte, the section table, the records and the base
    // relocations, each set to three values; and truncations.
    let c = CoffFile::parse_image(&base[..]).unwrap();
    let table_end = (c.header_offset() + 20 + 240 + 40 * c.section_count() as u64) as usize;
    let mut places: Vec<usize> = (0..table_end).collect();
    for name in [&b".nvFatBi"[..], b".reloc"] {
        let (h, _) = section(&base, name);
        let at = h.pointer_to_raw_data as usize;
        places.extend(at..at + h.virtual_size as usize);
    }
    let mut next = test_support::xorshift(31);
    let (mut shrunk, mut fell_back) = (0, 0);
    for (n, &p) in places.iter().enumerate() {
        for v in [0u8, 0xff, next() as u8] {
            let mut data = base.clone();
            data[p] = v;
            if n % 7 == 0 {
                data.truncate(base.len() - (next() as usize % base.len()));
            }
            let rewrites = halves(&data);
            if rewrites.is_empty() {
                continue;
            }
            let Ok(layout) = shrink::shrink(&data, &rewrites) else {
                fell_back += 1;
                continue;
            };
            shrunk += 1;
            let mut total = 0;
            for piece in &layout.pieces {
                total += match piece {
                    Out::Copy { from, len } => {
                        assert!(from + len <= data.len() as u64, "copy outside the input");
                        *len
                    }
                    Out::Container(i) => rewrites[*i].new.used,
                    Out::Bytes(b) => b.len() as u64,
                    Out::Zeros(z) => *z,
                };
            }
            assert_eq!(total, layout.len);
            assert!(layout.len < data.len() as u64);
            assert_eq!((data.len() as u64 - layout.len) % 512, 0);
            let out = layout.to_vec(&data, &rewrites);
            assert!(CoffFile::parse_image(&out[..]).is_ok(), "byte {p} = {v}");
        }
    }
    assert!(
        shrunk > 0 && fell_back > 0,
        "{shrunk} shrunk, {fell_back} fell back"
    );
}
