//! `offload thin` shrinking shared libraries (the default; `--keep-layout`
//! keeps the old layout): on the HIP libraries clang-22 built
//! (tests/fixtures/thin), the shrunk file holds exactly the bundles of the
//! layout-preserving rewrite, every dynamic symbol and every section other
//! than `.hip_fatbin` keeps its address, elfutils finds nothing new, and a
//! stub HIP runtime loads it and finds the kept targets. Libraries made
//! hostile (registration records pointing into the middle of a container,
//! outside the section or twice at one container, another relocation into
//! the section, overlapping sections) fall back to the layout-preserving
//! rewrite, byte for byte, and say why. An NVIDIA library built with cc
//! around nvcc's fat binary shrinks with its records following.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use offload_format::archive::{Archive, MemberContent};
use offload_format::objfile::elf::{ElfFile, SHT_RELA};
use offload_format::{bundle, ccob, hip_fatbin};
use test_support::{have, s, stdout_ok as ok};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/thin")
        .join(name)
}

fn offload(args: &[&str]) -> Output {
    test_support::run_in(env!("CARGO_BIN_EXE_offload"), None, args)
}

/// The bundles of the `.hip_fatbin` section: compressed header (version,
/// method) and entries (ID, bytes), in order.
type Bundles = Vec<(Option<(u16, ccob::Method)>, Vec<(String, Vec<u8>)>)>;

fn bundles(data: &[u8]) -> Bundles {
    let elf = ElfFile::parse(data).unwrap();
    let i = elf.section_index_by_name(b".hip_fatbin").unwrap().unwrap();
    let bytes = elf.section_bytes(i).unwrap();
    let scan = hip_fatbin::scan(bytes, &[]);
    assert!(scan.damage.is_empty(), "{:?}", scan.damage);
    scan.items
        .iter()
        .map(|item| {
            let (compressed, plain) = match item.kind {
                hip_fatbin::ItemKind::Bundle => (None, item.bytes.to_vec()),
                hip_fatbin::ItemKind::Ccob(h) => (
                    Some((h.version.number(), h.method)),
                    ccob::decompress(item.bytes).unwrap().data,
                ),
            };
            let entries = bundle::parse_header(&plain)
                .unwrap()
                .iter()
                .map(|e| (String::from_utf8_lossy(e.id).into_owned(), e.data.to_vec()))
                .collect();
            (compressed, entries)
        })
        .collect()
}

/// Thins `input` with the `select` options twice: shrunk (the default)
/// into `out`, and with `--keep-layout` into `kept`; returns both reports.
fn thin_both(select: &[&str], input: &Path, out: &Path, kept: &Path) -> (String, String) {
    let run = |extra: &[&str], to: &Path| {
        ok(&offload(
            &[&["thin"][..], select, extra, &["-o", s(to), s(input)]].concat(),
        ))
    };
    (run(&[], out), run(&["--keep-layout"], kept))
}

/// `llvm-readelf-22` (or readelf) output for `args`, the file name masked.
fn readelf(args: &[&str], p: &Path) -> Option<String> {
    let tool = if have("llvm-readelf-22") {
        "llvm-readelf-22"
    } else if have("readelf") {
        "readelf"
    } else {
        return None;
    };
    let o = Command::new(tool).args(args).arg(p).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(String::from_utf8(o.stdout).unwrap().replace(s(p), "FILE"))
}

/// Each section's name and address (the `.hip_fatbin` line left out: its
/// size changes), from `readelf -SW`.
fn section_addresses(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('['))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
            Some((f.first()?.to_string(), f.get(2)?.to_string()))
        })
        .filter(|(n, _)| n != ".hip_fatbin")
        .collect()
}

/// Builds the stub HIP runtime with the dlopen driver into `out`.
fn build_stub(out: &Path) -> bool {
    if !have("cc") {
        return false;
    }
    let o = Command::new("cc")
        .args(["-O1", "-rdynamic", "-o", s(out)])
        .arg(fixture("stub_hip.c"))
        .arg(fixture("main_dlopen.c"))
        .args(["-ldl", "-lzstd", "-lz"])
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!(
            "skipped: cannot build the stub HIP runtime: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        return false;
    }
    true
}

const KEPT: &str = "fatbin: host-x86_64-unknown-linux-gnu- hipv4-amdgcn-amd-amdhsa--gfx90a";

/// `fatbin:` lines the stub runtime prints on loading `lib`.
fn registered(stub: &Path, lib: &Path) -> Vec<String> {
    let text = ok(&Command::new(stub).arg(lib).output().unwrap());
    assert!(!text.contains("error"), "{text}");
    text.lines()
        .filter(|l| l.starts_with("fatbin:"))
        .map(str::to_owned)
        .collect()
}

/// Writes `r.hip` into `d`: a kernel reading a table of 64 KiB of
/// pseudo-random numbers, one table per processor, so that a compressor
/// finds no copy and each processor's entry is large compressed too.
fn random_hip_source(d: &Path) -> PathBuf {
    let mut next = test_support::xorshift(12345);
    let mut tables = [String::new(), String::new()];
    for t in &mut tables {
        for _ in 0..16384 {
            t.push_str(&format!("{}u,", next() as u32));
        }
    }
    let [gfx906, other] = tables;
    let src = d.join("r.hip");
    fs::write(
        &src,
        format!(
            "#define __global__ __attribute__((global))\n\
             #define __device__ __attribute__((device))\n\
             typedef struct {{ unsigned x, y, z; }} dim3;\n\
             typedef struct ihipStream_t *hipStream_t;\n\
             extern \"C\" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long, hipStream_t);\n\
             #ifdef __gfx906__\n\
             __device__ const unsigned table[16384] = {{{gfx906}}};\n\
             #else\n\
             __device__ const unsigned table[16384] = {{{other}}};\n\
             #endif\n\
             extern \"C\" __global__ void pick(unsigned *x) {{ x[0] = table[x[1] % 16384]; }}\n"
        ),
    )
    .unwrap();
    src
}

/// Builds, with clang-22, HIP shared libraries of two translation units
/// (the fixture's a.hip, and a kernel reading a table of 64 KiB that
/// does not compress, so that its gfx906 entry takes more than a page
/// compressed too).
fn build_random(d: &Path) -> Vec<PathBuf> {
    if !have("clang-22") {
        return Vec::new();
    }
    let src = random_hip_source(d);
    let mut out = Vec::new();
    // Compressed bundles (versions 3 and 2); packed relative relocations
    // (DT_RELR, the records' pointers stored in place); lld's layout (the
    // section in the first segment, a PT_PHDR).
    let lld = Command::new("ld.lld-22").arg("--version").output().is_ok()
        || Command::new("ld.lld").arg("--version").output().is_ok();
    let mut builds = vec![
        ("librandz.so", "3", &["--offload-compress"][..]),
        ("librandz2.so", "2", &["--offload-compress"][..]),
        ("librelr.so", "3", &["-Wl,-z,pack-relative-relocs"][..]),
    ];
    if lld {
        builds.push(("liblld.so", "3", &["-fuse-ld=lld"][..]));
    }
    for (name, version, extra) in builds {
        let lib = d.join(name);
        let o = Command::new("clang-22")
            .args(["-x", "hip", "-nogpuinc", "-nogpulib"])
            .args(["--offload-arch=gfx906", "--offload-arch=gfx90a", "-fPIC"])
            .args(["-shared", "-no-hip-rt"])
            .args(extra)
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .arg(fixture("a.hip"))
            .env("COMPRESSED_BUNDLE_FORMAT_VERSION", version)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.push(lib);
    }
    out
}

#[test]
fn shared_libraries_shrink_with_the_same_bundles_symbols_and_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stub = d.join("dl");
    let stub_built = build_stub(&stub);
    let mut inputs = vec![fixture("libhip.so")];
    inputs.extend(build_random(d));
    for input in &inputs {
        let name = input.file_name().unwrap().to_str().unwrap();
        let input = input.clone();
        let shrunk = d.join(format!("shrunk-{name}"));
        let kept = d.join(format!("kept-{name}"));
        let (report, kept_report) = thin_both(&["--keep", "gfx90a"], &input, &shrunk, &kept);
        assert!(
            kept_report.contains("  rewritten in place (--keep-layout)\n")
                && !kept_report.contains("shrunk"),
            "{kept_report}"
        );
        let (before, after, layout) = (
            fs::read(&input).unwrap(),
            fs::read(&shrunk).unwrap(),
            fs::read(&kept).unwrap(),
        );
        assert_eq!(layout.len(), before.len());
        assert!(after.len() < before.len(), "{name}: {report}");
        assert!(
            report.contains(&format!(
                "shrunk: {} -> {} bytes ({} bytes smaller)",
                before.len(),
                after.len(),
                before.len() - after.len()
            )),
            "{report}"
        );
        // The page size divides what was taken out.
        assert_eq!((before.len() - after.len()) % 4096, 0);
        // Exactly the bundles of the layout-preserving rewrite.
        let want = bundles(&layout);
        assert_eq!(bundles(&after), want, "{name}");
        assert!(want
            .iter()
            .all(|(_, e)| e.iter().all(|(id, _)| !id.ends_with("gfx906"))));
        // Every dynamic symbol, and every other section, where it was.
        if let Some(dynsyms) = readelf(&["--dyn-syms", "-W"], &input) {
            assert_eq!(
                readelf(&["--dyn-syms", "-W"], &shrunk).unwrap(),
                dynsyms,
                "{name}"
            );
            let secs = |p: &Path| section_addresses(&readelf(&["-SW"], p).unwrap());
            assert_eq!(secs(&shrunk), secs(&input), "{name}");
        }
        // elfutils finds nothing it did not find in the original.
        if have("eu-elflint") {
            let lint = |p: &Path| {
                let o = Command::new("eu-elflint")
                    .args(["--gnu-ld", s(p)])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&o.stdout).replace(s(p), "FILE")
            };
            assert_eq!(lint(&shrunk), lint(&input), "{name}");
        }
        // The loader maps it, its constructors register each kept bundle.
        if stub_built {
            assert_eq!(registered(&stub, &shrunk), vec![KEPT, KEPT], "{name}");
        }
        // Thinning the shrunk file again finds nothing to drop.
        let again = ok(&offload(&[
            "thin",
            "--keep",
            "gfx90a",
            "--dry-run",
            s(&shrunk),
        ]));
        assert!(again.contains("0 entries would be dropped"), "{again}");
    }
}

/// The file offset and contents of the `.rela.dyn` entries whose target
/// lies in `.hipFatBinSegment` (the registration records' pointers), and
/// the addresses of `.hip_fatbin` and `.rodata`.
struct Facts {
    /// (file offset of the entry, r_offset, addend)
    records: Vec<(usize, u64, u64)>,
    /// Another RELATIVE relocation: (file offset of the entry, addend).
    other: Option<(usize, u64)>,
    fatbin: (u64, u64),
    rodata: u64,
    /// File offset of `.eh_frame_hdr`'s section header.
    eh_frame_hdr_header: usize,
}

fn facts(data: &[u8]) -> Facts {
    let elf = ElfFile::parse(data).unwrap();
    let sec = |n: &[u8]| elf.section_index_by_name(n).unwrap().unwrap();
    let seg = *elf.section_header(sec(b".hipFatBinSegment")).unwrap();
    let fb = *elf.section_header(sec(b".hip_fatbin")).unwrap();
    let rodata = elf.section_header(sec(b".rodata")).unwrap().addr;
    let mut records = Vec::new();
    let mut other = None;
    for (i, h) in elf.section_headers().iter().enumerate() {
        if h.sh_type != SHT_RELA {
            continue;
        }
        for (k, r) in elf.relocations(i).unwrap().iter().enumerate() {
            let at = h.offset as usize + k * 24;
            if r.offset >= seg.addr && r.offset < seg.addr + seg.size {
                records.push((at, r.offset, r.addend.unwrap() as u64));
            } else if r.r_type == 8 && r.symbol == 0 {
                other = Some((at, r.addend.unwrap() as u64));
            }
        }
    }
    let shoff = elf.header().shoff as usize;
    Facts {
        records,
        other,
        fatbin: (fb.addr, fb.size),
        rodata,
        eh_frame_hdr_header: shoff + sec(b".eh_frame_hdr") * 64,
    }
}

fn put_u64(data: &mut [u8], at: usize, v: u64) {
    data[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn hostile_libraries_fall_back_to_the_layout_preserving_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let original = fs::read(fixture("libhip.so")).unwrap();
    let f = facts(&original);
    assert_eq!(f.records.len(), 2, "two registration records");
    let (first, second) = (f.records[0], f.records[1]);
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    // The second record points at the first container too.
    let mut twice = original.clone();
    put_u64(&mut twice, second.0 + 16, first.2);
    cases.push((
        "twice",
        twice,
        "two registration records point at the container",
    ));
    // A record points 16 bytes into a container: the walk reads a bundle
    // starting there, which runs over the next: refused, nothing written.
    let mut middle = original.clone();
    put_u64(&mut middle, second.0 + 16, second.2 + 16);
    let input = d.join("middle.so");
    fs::write(&input, &middle).unwrap();
    let out = d.join("middle.out");
    let o = offload(&["thin", "--keep", "gfx90a", "-o", s(&out), s(&input)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds damage"));
    assert!(!out.exists());
    // A record points outside the section.
    let mut outside = original.clone();
    put_u64(&mut outside, second.0 + 16, f.rodata);
    cases.push(("outside", outside, "points outside the offload section"));
    // Another relocation points into the section.
    {
        let (at, _) = f.other.expect("a relative relocation besides the records");
        let mut other = original.clone();
        put_u64(&mut other, at + 16, f.fatbin.0 + 64);
        cases.push(("other", other, "is not a registration record's pointer"));
    }
    // .eh_frame_hdr's header claims bytes inside .hip_fatbin.
    let mut overlap = original.clone();
    let fb_off = {
        let elf = ElfFile::parse(&original[..]).unwrap();
        let i = elf.section_index_by_name(b".hip_fatbin").unwrap().unwrap();
        elf.section_header(i).unwrap().offset
    };
    put_u64(
        &mut overlap,
        f.eh_frame_hdr_header + 24,
        fb_off + f.fatbin.1 - 8,
    );
    cases.push((
        "overlap",
        overlap,
        "section .eh_frame_hdr overlaps the offload section",
    ));
    for (what, bytes, why) in cases {
        let input = d.join(format!("{what}.so"));
        fs::write(&input, &bytes).unwrap();
        let out = d.join(format!("{what}.out"));
        let kept = d.join(format!("{what}.kept"));
        let (report, _) = thin_both(&["--keep", "gfx90a"], &input, &out, &kept);
        assert!(
            report.contains("not shrunk (") && report.contains(why),
            "{what}: {report}"
        );
        assert!(report.contains("): rewritten in place"), "{what}: {report}");
        assert!(
            fs::read(&out).unwrap() == fs::read(&kept).unwrap(),
            "{what}: the fallback is not the layout-preserving rewrite"
        );
        // The dry run says the same.
        let dry = ok(&offload(&[
            "thin",
            "--keep",
            "gfx90a",
            "--dry-run",
            s(&input),
        ]));
        assert!(
            dry.contains(why) && dry.contains("would be rewritten in place"),
            "{dry}"
        );
    }
}

#[test]
fn files_freeing_less_than_a_page_and_other_kinds_are_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let nvidia = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nvidia");
    let page = "which frees no whole page (4096 bytes) once the new program header table is placed";
    let cases = [
        // Offload binaries (.llvm.offloading): the last binary's recorded
        // size takes in the freed space, so the section keeps its size.
        (
            fixture("omp.o"),
            ["--drop", "gfx90a"],
            "the containers are in section .llvm.offloading, not .nv_fatbin, __nv_relfatbin or .hip_fatbin"
                .to_owned(),
        ),
        // Libraries whose dropped entries take less than a page.
        (
            fixture("libhipz.so"),
            ["--keep", "gfx90a"],
            format!("the packed section is only 310 bytes shorter, {page}"),
        ),
        (
            nvidia.join("libk.so"),
            ["--keep", "sm_90"],
            format!("the packed section is only 1736 bytes shorter, {page}"),
        ),
    ];
    for (input, select, why) in cases {
        let out = dir.path().join(input.file_name().unwrap());
        let report = ok(&offload(
            &[&["thin"][..], &select, &["-o", s(&out), s(&input)]].concat(),
        ));
        assert!(
            report.contains(&format!("not shrunk ({why}): rewritten in place")),
            "{report}"
        );
        assert_eq!(
            fs::metadata(&out).unwrap().len(),
            fs::metadata(&input).unwrap().len()
        );
    }
}

/// The entries (their stored bytes) of every fat binary in `.nv_fatbin`.
fn fatbin_entries(data: &[u8]) -> Vec<Vec<u8>> {
    let elf = ElfFile::parse(data).unwrap();
    let i = elf.section_index_by_name(b".nv_fatbin").unwrap().unwrap();
    let scan = offload_format::nvidia::fatbin::scan(elf.section_bytes(i).unwrap());
    assert!(scan.damage.is_empty());
    scan.containers
        .iter()
        .flat_map(|c| c.entries.iter().map(|e| e.payload.to_vec()))
        .collect()
}

#[test]
fn relocatable_objects_shrink_and_still_link_and_register() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // nvcc's object (tests/fixtures/nvidia): the kept cubin, byte for byte.
    let nv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nvidia/lz-big.o");
    let (out, kept) = (d.join("lz-big.o"), d.join("lz-big-kept.o"));
    let (report, _) = thin_both(&["--keep", "sm_90"], &nv, &out, &kept);
    let (before, after) = (fs::read(&nv).unwrap(), fs::read(&out).unwrap());
    assert!(after.len() < before.len(), "{report}");
    assert!(report.contains(&format!(
        "shrunk: {} -> {} bytes",
        before.len(),
        after.len()
    )));
    assert_eq!(
        fatbin_entries(&after),
        fatbin_entries(&fs::read(&kept).unwrap())
    );
    assert!(fatbin_entries(&after).len() < fatbin_entries(&before).len());
    if let Some(syms) = readelf(&["-sW"], &nv) {
        // The symbols keep their sections; only the fat binary's size
        // may change.
        let names = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| l.split_whitespace().nth(7).map(str::to_owned))
                .collect()
        };
        assert_eq!(names(&readelf(&["-sW"], &out).unwrap()), names(&syms));
    }
    // A HIP object clang-22 built: it links, and the stub runtime finds
    // the kept target in the library.
    if !have("clang-22") {
        return;
    }
    let src = random_hip_source(d);
    let obj = d.join("r.o");
    let o = Command::new("clang-22")
        .args(["-x", "hip", "-nogpuinc", "-nogpulib"])
        .args([
            "--offload-arch=gfx906",
            "--offload-arch=gfx90a",
            "-fPIC",
            "-c",
            "-o",
        ])
        .arg(&obj)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let thin = d.join("r-thin.o");
    let report = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "-o",
        s(&thin),
        s(&obj),
    ]));
    assert!(report.contains("  shrunk: "), "{report}");
    assert!(fs::metadata(&thin).unwrap().len() < fs::metadata(&obj).unwrap().len());
    // The record's relocation made to point 16 bytes into the bundle: the
    // walk reads a bundle there, which runs over the next; refused.
    let mut hostile = fs::read(&obj).unwrap();
    let at = {
        let elf = ElfFile::parse(&hostile[..]).unwrap();
        let i = elf
            .section_index_by_name(b".rela.hipFatBinSegment")
            .unwrap()
            .unwrap();
        elf.section_header(i).unwrap().offset as usize + 16
    };
    let addend = u64::from_le_bytes(hostile[at..at + 8].try_into().unwrap());
    put_u64(&mut hostile, at, addend + 16);
    let bad = d.join("bad.o");
    fs::write(&bad, &hostile).unwrap();
    let out = d.join("bad-thin.o");
    let o = offload(&["thin", "--keep", "gfx90a", "-o", s(&out), s(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds damage"));
    assert!(!out.exists());
    let stub = d.join("dl");
    if !build_stub(&stub) {
        return;
    }
    let lib = d.join("libr.so");
    let o = Command::new("cc")
        .args(["-shared", "-o", s(&lib), s(&thin)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(registered(&stub, &lib), vec![KEPT]);
}

/// The address the relocation of each `.nvFatBinSegment` record's
/// pointer gives (R_X86_64_RELATIVE addends), in address order.
fn nv_record_targets(data: &[u8]) -> Vec<u64> {
    let elf = ElfFile::parse(data).unwrap();
    let i = elf
        .section_index_by_name(b".nvFatBinSegment")
        .unwrap()
        .unwrap();
    let seg = *elf.section_header(i).unwrap();
    let mut out = Vec::new();
    for (i, h) in elf.section_headers().iter().enumerate() {
        if h.sh_type != SHT_RELA {
            continue;
        }
        for r in elf.relocations(i).unwrap() {
            if r.offset >= seg.addr
                && r.offset < seg.addr + seg.size
                && (r.offset - seg.addr) % 24 == 8
            {
                out.push(r.addend.unwrap() as u64);
            }
        }
    }
    out.sort_unstable();
    out
}

#[test]
fn nvidia_shared_libraries_shrink_and_their_records_follow_the_containers() {
    if !have("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // nvcc's fat binary (lz-big.o: sm_80 and sm_90 cubins, sm_80 PTX),
    // twice in a library's .nv_fatbin, each with its registration record
    // (__fatBinC_Wrapper_t: magic, version, pointer, null), static as in
    // nvcc's host code (an exported one is reached through a symbol
    // relocation, and the library keeps its layout: tested below).
    let nv = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nvidia/lz-big.o"),
    )
    .unwrap();
    let fatbin = {
        let elf = ElfFile::parse(&nv[..]).unwrap();
        let i = elf.section_index_by_name(b".nv_fatbin").unwrap().unwrap();
        elf.section_bytes(i).unwrap().to_vec()
    };
    let bytes: Vec<String> = fatbin.iter().map(|b| b.to_string()).collect();
    let array = bytes.join(",");
    let src = d.join("nv.c");
    fs::write(
        &src,
        format!(
            "struct wrapper {{ int magic; int version; const void *data; void *unused; }};\n\
             __attribute__((section(\".nv_fatbin\"), aligned(8), used)) static const unsigned char fb0[] = {{{array}}};\n\
             __attribute__((section(\".nv_fatbin\"), aligned(8), used)) static const unsigned char fb1[] = {{{array}}};\n\
             __attribute__((section(\".nvFatBinSegment\"), aligned(8), used)) static struct wrapper w0 = {{0x466243b1, 1, fb0, 0}};\n\
             __attribute__((section(\".nvFatBinSegment\"), aligned(8), used)) static struct wrapper w1 = {{0x466243b1, 1, fb1, 0}};\n\
             int answer(void) {{ return 42; }}\n"
        ),
    )
    .unwrap();
    let lib = d.join("libnv.so");
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o", s(&lib), s(&src)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (out, kept) = (d.join("out.so"), d.join("kept.so"));
    let select = ["--keep", "sm_90", "--drop-ptx"];
    let (report, _) = thin_both(&select, &lib, &out, &kept);
    let (before, after) = (fs::read(&lib).unwrap(), fs::read(&out).unwrap());
    assert!(report.contains("  shrunk: "), "{report}");
    assert!(after.len() < before.len());
    // The kept entries, byte for byte those of the in-place rewrite.
    assert_eq!(
        fatbin_entries(&after),
        fatbin_entries(&fs::read(&kept).unwrap())
    );
    assert_eq!(fatbin_entries(&after).len(), 2);
    // Each record points at a container's first byte, the two apart.
    let elf = ElfFile::parse(&after[..]).unwrap();
    let sec = *elf
        .section_header(elf.section_index_by_name(b".nv_fatbin").unwrap().unwrap())
        .unwrap();
    let targets = nv_record_targets(&after);
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0], sec.addr);
    assert!(targets[1] > targets[0]);
    for t in &targets {
        let at = (sec.offset + (t - sec.addr)) as usize;
        assert_eq!(
            after[at..at + 4],
            [0x50, 0xed, 0x55, 0xba],
            "fat binary magic"
        );
    }
    // The dynamic symbols keep their addresses; the library loads.
    if let Some(dynsyms) = readelf(&["--dyn-syms", "-W"], &lib) {
        assert_eq!(readelf(&["--dyn-syms", "-W"], &out).unwrap(), dynsyms);
    }
    if have("python3") {
        let o = Command::new("python3")
            .args([
                "-c",
                "import ctypes,sys; print(ctypes.CDLL(sys.argv[1]).answer())",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "42");
    }
    // Exported fat binaries: the records reach them through symbol
    // relocations, which another library could interpose; not shrunk.
    let text = fs::read_to_string(&src)
        .unwrap()
        .replace("static const unsigned char", "const unsigned char");
    fs::write(&src, text).unwrap();
    let exported = d.join("libexp.so");
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o", s(&exported), s(&src)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (out, kept) = (d.join("exp-out.so"), d.join("exp-kept.so"));
    let (report, _) = thin_both(&select, &exported, &out, &kept);
    assert!(
        report.contains("not shrunk (a relocation of section .rela.dyn refers to a symbol in the offload section): rewritten in place"),
        "{report}"
    );
    assert!(fs::read(&out).unwrap() == fs::read(&kept).unwrap());
}

#[test]
fn archives_of_objects_shrink_member_by_member_and_still_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, kept) = (d.join("libk.a"), d.join("libk-kept.a"));
    let input = fixture("libk.a");
    let (report, _) = thin_both(&["--keep", "gfx90a"], &input, &out, &kept);
    let (before, after) = (fs::read(&input).unwrap(), fs::read(&out).unwrap());
    assert!(
        report.contains(&format!(
            "shrunk: {} -> {} bytes",
            before.len(),
            after.len()
        )),
        "{report}"
    );
    assert!(after.len() < before.len());
    // Member by member, the bundles of the in-place rewrite.
    let members = |data: &[u8]| -> Vec<(Vec<u8>, Bundles)> {
        let a = Archive::parse(data).unwrap();
        a.members()
            .map(|m| {
                let m = m.unwrap();
                let MemberContent::Inline(bytes) = m.content else {
                    panic!("thin member")
                };
                (m.name.to_vec(), bundles(bytes))
            })
            .collect()
    };
    assert_eq!(members(&after), members(&fs::read(&kept).unwrap()));
    // Nothing is left to drop; the program links (through the archive's
    // symbol table) and registers the kept targets.
    let again = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--dry-run",
        s(&out),
    ]));
    assert!(again.contains("0 entries would be dropped"), "{again}");
    if !have("cc") {
        return;
    }
    let prog = d.join("linked");
    let o = Command::new("cc")
        .args(["-O1", "-rdynamic", "-o", s(&prog)])
        .arg(fixture("stub_hip.c"))
        .arg(fixture("main_linked.c"))
        .arg(&out)
        .args(["-ldl", "-lzstd", "-lz"])
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!("skipped: {}", String::from_utf8_lossy(&o.stderr));
        return;
    }
    let text = ok(&Command::new(&prog).output().unwrap());
    assert!(!text.contains("error"), "{text}");
    let found: Vec<&str> = text.lines().filter(|l| l.starts_with("fatbin:")).collect();
    assert_eq!(found, vec![KEPT, KEPT]);
}
