//! `offload size` on the NVIDIA fixtures (built by CUDA 13.5's nvcc) and
//! the AMD ones (clang-22): every byte of each file counted once, each
//! function's code as big as llvm-readelf-22 says, damaged images reported
//! without a panic.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../../xtask/src/json.rs"]
mod json;

fn fixtures(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(sub)
}

fn offload(dir: &Path, args: &[&str]) -> Output {
    test_support::run_in(env!("CARGO_BIN_EXE_offload"), Some(dir), args)
}

fn size_json(dir: &Path, args: &[&str]) -> (json::V, Output) {
    let mut a = vec!["size", "--json"];
    a.extend_from_slice(args);
    let o = offload(dir, &a);
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    (json::parse(&text), o)
}

fn num(v: &json::V, k: &str) -> u64 {
    v.get(k).num().unwrap_or_else(|| panic!("{k} missing"))
}

/// The images of file `k` of the document.
fn images_of(doc: &json::V, k: u64) -> Vec<&json::V> {
    doc.get("images")
        .arr()
        .iter()
        .filter(|i| num(i, "file") == k)
        .collect()
}

/// The stored name a function's `name` index stands for.
fn name_of<'a>(doc: &'a json::V, f: &json::V) -> &'a str {
    doc.get("names").arr()[num(f, "name") as usize]
        .get("name")
        .str()
        .unwrap()
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// Checks that every byte of each file in `doc` is counted once: the
/// categories add up to the file's size on disk, each image's functions
/// and shared parts to its uncompressed size, their file bytes to the
/// image's.
fn assert_adds_up(doc: &json::V, dir: &Path) {
    for (k, f) in doc.get("files").arr().iter().enumerate() {
        let path = dir.join(f.get("path").str().unwrap());
        let on_disk = fs::metadata(&path).unwrap().len();
        let size = num(f, "size");
        assert_eq!(size, on_disk, "{}", path.display());
        let images: u64 = images_of(doc, k as u64)
            .iter()
            .map(|i| num(i, "stored"))
            .sum();
        assert_eq!(images, num(f, "device"), "{}", path.display());
        assert_eq!(
            num(f, "host") + num(f, "other") + num(f, "overhead") + num(f, "device"),
            size,
            "{}",
            path.display()
        );
        let archs: u64 = f.get("archs").arr().iter().map(|a| num(a, "stored")).sum();
        assert_eq!(archs, num(f, "device"));
        for img in images_of(doc, k as u64) {
            let parts = img
                .get("functions")
                .arr()
                .iter()
                .chain(img.get("shared").arr());
            let (bytes, share) = parts.fold((0, 0), |(b, s), p| {
                (b + num(p, "bytes"), s + num(p, "share"))
            });
            assert_eq!(bytes, num(img, "uncompressed"), "{}", path.display());
            assert_eq!(share, num(img, "stored"), "{}", path.display());
        }
    }
}

const NVIDIA: [&str; 13] = [
    "embedded.o",
    "rdclib.so",
    "ldata.o",
    "lto.o",
    "app",
    "compress-all.o",
    "concat.o",
    "libk.a",
    "libk.so",
    "lz-big.o",
    "none.o",
    "plain.o",
    "rdc.o",
];

const AMD: [&str; 8] = [
    "lib.so", "libz2.so", "libz3.so", "hip.o", "omp.o", "gnu.a", "rdc.o", "bsd.a",
];

#[test]
fn every_byte_is_counted_once() {
    for (sub, names) in [("nvidia", &NVIDIA[..]), ("offload", &AMD[..])] {
        let dir = fixtures(sub);
        for name in names {
            let (doc, o) = size_json(&dir, &[name]);
            assert!(
                o.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_adds_up(&doc, &dir);
            assert!(!images_of(&doc, 0).is_empty(), "{name}: no images");
            // Every entry `ls` lists with bytes in the file is an image
            // (an empty host entry at the same offset as a device entry
            // included).
            let o = offload(&dir, &["ls", "--json", name]);
            let ls = json::parse(&String::from_utf8(o.stdout).unwrap());
            let listed = ls_entries(&ls)
                .iter()
                .filter(|(_, e)| {
                    e.get("kind").str() != Some("host")
                        && num(e, "size") > 0
                        && e.get("location").get("type").str() != Some("derived")
                })
                .count();
            assert_eq!(images_of(&doc, 0).len(), listed, "{name}");
        }
    }
}

/// The sizes of the functions `llvm-readelf-22 --symbols` lists in a code
/// object (STT_FUNC with a size), by name.
fn readelf_functions(path: &Path) -> Vec<(String, u64)> {
    let o = Command::new("llvm-readelf-22")
        .args(["--symbols", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut out: Vec<(String, u64)> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[3] == "FUNC" && f[2] != "0")
                .then(|| (f[7].to_owned(), f[2].parse().unwrap()))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn amd_function_code_is_what_llvm_readelf_says() {
    if !have("llvm-readelf-22") {
        return;
    }
    let dir = fixtures("offload");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for name in ["lib.so", "libz3.so", "hip.o"] {
        let (doc, _) = size_json(&dir, &[name]);
        let input = dir.join(name);
        let o = offload(tmp.path(), &["extract", input.to_str().unwrap()]);
        assert!(o.status.success());
        for img in images_of(&doc, 0) {
            if img.get("kind").str() != Some("code-object") {
                continue;
            }
            let file = format!(
                "{name}.{}.{}",
                num(img, "container"),
                img.get("entry").str().unwrap()
            );
            let want = readelf_functions(&tmp.path().join(&file));
            let mut got: Vec<(String, u64)> = img
                .get("functions")
                .arr()
                .iter()
                .map(|f| (name_of(&doc, f).to_owned(), num(f, "code")))
                .collect();
            got.sort();
            assert_eq!(got, want, "{file}");
            assert!(!want.is_empty());
            // A kernel owns its code, its 64-byte descriptor, and more.
            for f in img.get("functions").arr() {
                if f.get("kernel") == &json::V::Bool(true) {
                    assert!(num(f, "bytes") >= num(f, "code") + 64, "{file}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} code objects checked");
}

/// The `.text.<name>` sections of a cubin, as `llvm-readelf-22 -S` lists
/// them: (name, size).
fn readelf_text_sections(path: &Path) -> Vec<(String, u64)> {
    let o = Command::new("llvm-readelf-22")
        .args(["-S", "-W", path.to_str().unwrap()])
        .output()
        .unwrap();
    let mut out = Vec::new();
    for l in String::from_utf8(o.stdout).unwrap().lines() {
        let Some(at) = l.find("] ") else { continue };
        let f: Vec<&str> = l[at + 2..].split_whitespace().collect();
        if let Some(name) = f.first().and_then(|n| n.strip_prefix(".text.")) {
            out.push((name.to_owned(), u64::from_str_radix(f[4], 16).unwrap()));
        }
    }
    out
}

#[test]
fn cubin_function_code_is_its_text_section() {
    if !have("llvm-readelf-22") {
        return;
    }
    let dir = fixtures("nvidia");
    let tmp = tempfile::tempdir().unwrap();
    for name in ["libk.so", "rdc.o", "compress-all.o"] {
        let (doc, _) = size_json(&dir, &[name]);
        let input = dir.join(name);
        let o = offload(
            tmp.path(),
            &["extract", "-d", name, input.to_str().unwrap()],
        );
        assert!(o.status.success());
        // Per architecture, the sorted (name, .text size) of every cubin.
        let mut want: Vec<(String, String, u64)> = Vec::new();
        for e in fs::read_dir(tmp.path().join(name)).unwrap() {
            let p = e.unwrap().path();
            let file = p.file_name().unwrap().to_str().unwrap().to_owned();
            let Some(stem) = file.strip_suffix(".cubin") else {
                continue;
            };
            let arch = stem.rsplit('.').next().unwrap().to_owned();
            for (f, n) in readelf_text_sections(&p) {
                want.push((arch.clone(), f, n));
            }
        }
        let mut got: Vec<(String, String, u64)> = Vec::new();
        for img in images_of(&doc, 0) {
            if img.get("kind").str() != Some("cubin") {
                continue;
            }
            for f in img.get("functions").arr() {
                got.push((
                    img.get("arch").str().unwrap().to_owned(),
                    name_of(&doc, f).to_owned(),
                    num(f, "code"),
                ));
            }
        }
        want.sort();
        got.sort();
        assert!(!want.is_empty(), "{name}");
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn ptx_is_split_at_entries() {
    let dir = fixtures("nvidia");
    let (doc, _) = size_json(&dir, &["libk.so"]);
    let ptx: Vec<&json::V> = images_of(&doc, 0)
        .into_iter()
        .filter(|i| i.get("kind").str() == Some("ptx"))
        .collect();
    assert_eq!(ptx.len(), 1);
    let mut names: Vec<&str> = ptx[0]
        .get("functions")
        .arr()
        .iter()
        .map(|f| name_of(&doc, f))
        .collect();
    names.sort();
    assert_eq!(names, ["axpy", "fill"]);
    assert_eq!(ptx[0].get("arch").str(), Some("compute_90"));
}

#[test]
fn duplicates_are_copies_in_several_images_of_one_architecture() {
    // lib.so and hip.o: both hold kernel `ka` for gfx90a:xnack+.
    let dir = fixtures("offload");
    let (doc, _) = size_json(&dir, &["lib.so", "hip.o"]);
    let dups = doc.get("duplicates").arr();
    assert!(!dups.is_empty());
    let ka = dups
        .iter()
        .find(|d| name_of(&doc, d) == "ka" && d.get("arch").str() == Some("gfx90a:xnack+"))
        .expect("ka is duplicated");
    let files: Vec<u64> = ka
        .get("images")
        .arr()
        .iter()
        .map(|i| num(&doc.get("images").arr()[i.num().unwrap() as usize], "file"))
        .collect();
    assert!(files.contains(&0) && files.contains(&1), "{files:?}");
    for d in dups {
        let copies = num(d, "copies");
        assert!(copies > 1);
        assert_eq!(d.get("images").arr().len() as u64, copies);
        assert!(num(d, "extra_bytes") < num(d, "bytes"));
        assert!(num(d, "extra_bytes") * copies >= num(d, "bytes") * (copies - 1) / copies);
    }
    // Each row of `functions` with more than one copy is a duplicate.
    let multi = doc
        .get("functions")
        .arr()
        .iter()
        .filter(|f| num(f, "copies") > 1)
        .count();
    assert_eq!(multi, dups.len());
}

#[test]
fn filters_select_functions() {
    let dir = fixtures("nvidia");
    let (doc, o) = size_json(&dir, &["--filter", "^ax", "--arch", "sm_90", "libk.so"]);
    assert!(o.status.success());
    let fs = doc.get("functions").arr();
    assert!(!fs.is_empty());
    for f in fs {
        assert_eq!(name_of(&doc, f), "axpy");
        let arch = f.get("arch").str().unwrap();
        assert!(arch == "sm_90" || arch == "compute_90", "{arch}");
    }
    // The file's totals are not filtered.
    assert_adds_up(&doc, &dir);
    let (doc, _) = size_json(&dir, &["--top", "1", "libk.so"]);
    assert_eq!(doc.get("functions").arr().len(), 1);
    let o = offload(&dir, &["size", "--filter", "(", "libk.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--filter"));
}

/// The architectures of the function rows `--arch VALUE` leaves in
/// `file`'s profile (exit status checked).
fn arches_selected(dir: &Path, file: &str, values: &[&str]) -> Vec<String> {
    let mut args = Vec::new();
    for v in values {
        args.extend(["--arch", v]);
    }
    args.push(file);
    let (doc, o) = size_json(dir, &args);
    assert!(o.status.success(), "{values:?}");
    let mut a: Vec<String> = doc
        .get("functions")
        .arr()
        .iter()
        .map(|f| f.get("arch").str().unwrap().to_owned())
        .collect();
    a.sort();
    a.dedup();
    a
}

/// `--arch` values are read once, as `--keep` reads them: a cubin
/// architecture takes its PTX too, a virtual one only PTX, a bare number
/// is the real one, an AMD processor takes every feature setting and a
/// full target ID exactly its own (features in any order); a GPU that
/// does not exist is refused.
#[test]
fn arch_values_are_typed() {
    let nv = fixtures("nvidia");
    assert_eq!(
        arches_selected(&nv, "libk.so", &["sm_90"]),
        ["compute_90", "sm_90"]
    );
    assert_eq!(
        arches_selected(&nv, "libk.so", &["90"]),
        ["compute_90", "sm_90"]
    );
    assert_eq!(
        arches_selected(&nv, "libk.so", &["compute_90"]),
        ["compute_90"]
    );
    assert_eq!(arches_selected(&nv, "libk.so", &["sm_80"]), ["sm_80"]);
    assert_eq!(arches_selected(&nv, "libk.so", &["sm_90a"]), ["sm_90a"]);
    assert!(arches_selected(&nv, "libk.so", &["sm_75"]).is_empty());
    let amd = fixtures("offload");
    assert_eq!(
        arches_selected(&amd, "lib.so", &[]),
        ["gfx906", "gfx90a:xnack+"]
    );
    assert_eq!(
        arches_selected(&amd, "lib.so", &["gfx90a"]),
        ["gfx90a:xnack+"]
    );
    assert_eq!(
        arches_selected(&amd, "lib.so", &["gfx90a:xnack+"]),
        ["gfx90a:xnack+"]
    );
    assert!(arches_selected(&amd, "lib.so", &["gfx90a:xnack-"]).is_empty());
    assert_eq!(
        arches_selected(&amd, "lib.so", &["gfx906", "sm_90"]),
        ["gfx906"]
    );
    for (bad, why) in [("sm_99", "no CUDA GPU"), ("gfx9999", "not an AMD GPU")] {
        let o = offload(&amd, &["size", "--arch", bad, "lib.so"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(o.stdout.is_empty());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("--arch {bad}")) && err.contains(why),
            "{err}"
        );
    }
}

/// The text table of the NVIDIA library, as recorded.
#[test]
fn text_table_snapshot() {
    let dir = fixtures("nvidia");
    let o = offload(&dir, &["size", "libk.so"]);
    assert!(o.status.success());
    let want = fs::read_to_string(dir.join("libk.so.size")).unwrap();
    assert_eq!(String::from_utf8(o.stdout).unwrap(), want);
}

/// A 64-byte ELF64 header for `machine` with its section table at `shoff`
/// (`shnum` entries).
fn elf_header(machine: u16, shoff: u64, shnum: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[6] = 1;
    h[16..18].copy_from_slice(&1u16.to_le_bytes());
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[40..48].copy_from_slice(&shoff.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    h[60..62].copy_from_slice(&shnum.to_le_bytes());
    h
}

#[test]
fn damaged_images_are_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    // A cubin whose section table lies past its end.
    let mut cubin = elf_header(190, 1 << 40, 5);
    cubin.resize(256, 0xAB);
    let fatbin = test_support::fatbin(&[(2, 90, 0x11, &cubin, 0)]);
    fs::write(tmp.path().join("bad.fatbin"), &fatbin).unwrap();
    let (doc, o) = size_json(tmp.path(), &["bad.fatbin"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.fatbin") && err.contains("section"),
        "{err}"
    );
    assert_adds_up(&doc, tmp.path());
    // A container whose header says it is larger than the file.
    let mut lying = fatbin.clone();
    lying[8..16].copy_from_slice(&(1u64 << 50).to_le_bytes());
    fs::write(tmp.path().join("lying.fatbin"), &lying).unwrap();
    let (doc, o) = size_json(tmp.path(), &["lying.fatbin"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("lying.fatbin"));
    assert_adds_up(&doc, tmp.path());
}

/// PTX text of `n` one-line kernels.
fn ptx_of(n: usize) -> Vec<u8> {
    let mut t = b"//\n.version 8.0\n.target sm_80\n.address_size 64\n\n".to_vec();
    for i in 0..n {
        t.extend_from_slice(
            format!(".visible .entry k{i}(\n.param .u64 p\n)\n{{\n\tret;\n}}\n").as_bytes(),
        );
    }
    // NULs to a multiple of 8, so that the stored copy has no padding of
    // its own.
    t.resize((t.len() + 1).next_multiple_of(8), 0);
    t
}

#[test]
fn compressed_images_profile_as_their_stored_copies() {
    // Each PTX stored as is and zstd-compressed, one of 17 MB (decoded
    // into memory of its own: workers keep buffers of 16 MiB at most) and
    // one of 100 KB (into the worker's buffer): each compressed copy must
    // profile exactly as its stored twin.
    let tmp = tempfile::tempdir().unwrap();
    let (big, small) = (ptx_of(340_000), ptx_of(2_000));
    assert!(big.len() > 16 << 20 && small.len() < 1 << 20);
    let (zbig, zsmall) = (
        zstd::bulk::compress(&big, 3).unwrap(),
        zstd::bulk::compress(&small, 3).unwrap(),
    );
    let packed = |plain: &[u8], z: &'static [u8]| test_support::FatbinEntry {
        compressed_size: z.len() as u32,
        uncompressed_size: plain.len() as u64,
        ..test_support::FatbinEntry::new(1, 80, 0x8011, z)
    };
    let (zbig, zsmall): (&'static [u8], &'static [u8]) = (zbig.leak(), zsmall.leak());
    let fatbin = test_support::fatbin_with(&[
        test_support::FatbinEntry::new(1, 80, 0x11, &big),
        packed(&big, zbig),
        test_support::FatbinEntry::new(1, 80, 0x11, &small),
        packed(&small, zsmall),
    ]);
    fs::write(tmp.path().join("twins.fatbin"), &fatbin).unwrap();
    let (doc, o) = size_json(tmp.path(), &["twins.fatbin"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_adds_up(&doc, tmp.path());
    let images = images_of(&doc, 0);
    assert_eq!(images.len(), 4);
    let parts = |img: &json::V| -> (u64, Vec<(String, u64, u64)>) {
        let f = img
            .get("functions")
            .arr()
            .iter()
            .map(|f| (name_of(&doc, f).to_owned(), num(f, "code"), num(f, "bytes")))
            .collect();
        (num(img, "uncompressed"), f)
    };
    for (stored, packed, n, len) in [(0, 1, 340_000, big.len()), (2, 3, 2_000, small.len())] {
        let (size, functions) = parts(images[stored]);
        assert_eq!((size, functions.len()), (len as u64, n));
        assert_eq!(parts(images[packed]), (size, functions));
        assert!(num(images[packed], "stored") < num(images[stored], "stored") / 10);
    }
}

/// Every entry of an `ls --json` listing: (section names on its path,
/// entry).
fn ls_entries(doc: &json::V) -> Vec<(Vec<String>, json::V)> {
    fn walk(n: &json::V, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, json::V)>) {
        if let Some(name) = n.get("name").str() {
            path.push(name.to_owned());
        }
        for e in n.get("entries").arr() {
            out.push((path.clone(), e.clone()));
        }
        for c in n.get("children").arr() {
            walk(c, path, out);
        }
        if n.get("name").str().is_some() {
            path.pop();
        }
    }
    let mut out = Vec::new();
    for f in doc.get("files").arr() {
        walk(f, &mut Vec::new(), &mut out);
    }
    out
}

/// The bytes of every file in `dir`, sorted.
fn contents(dir: &Path) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = fs::read_dir(dir)
        .unwrap()
        .map(|e| fs::read(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    out
}

/// embedded.o (embedded.sh): libk.so's sm_80 cubin in .rodata and its fat
/// binary #1 in .data, each after other data, found, listed, extracted as
/// libk.so's own entries extract, and profiled.
#[test]
fn images_among_other_data_are_found_and_extracted_byte_identical() {
    let dir = fixtures("nvidia");
    let o = offload(&dir, &["ls", "--json", "embedded.o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = json::parse(&String::from_utf8(o.stdout).unwrap());
    let entries = ls_entries(&doc);
    let in_section = |s: &str| {
        entries
            .iter()
            .filter(|(path, _)| path.iter().any(|p| p == s))
            .count()
    };
    assert_eq!(in_section(".rodata"), 1);
    assert_eq!(in_section(".data"), 4);
    let tmp = tempfile::tempdir().unwrap();
    let (got, want) = (tmp.path().join("got"), tmp.path().join("want"));
    let o = offload(
        &dir,
        &["extract", "-d", got.to_str().unwrap(), "embedded.o"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for args in [
        &["--bundle", "1"][..],
        &["--target", "sm_80", "--bundle", "1"],
    ] {
        let mut a = vec!["extract", "-d", want.to_str().unwrap()];
        a.extend_from_slice(args);
        a.push("libk.so");
        let o = offload(&dir, &a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if args.len() == 2 {
            // The second run writes the sm_80 cubin again, under another
            // directory's name: keep one copy per image.
            fs::rename(&want, tmp.path().join("want1")).unwrap();
        }
    }
    let mut expected = contents(&tmp.path().join("want1"));
    expected.extend(contents(&want));
    expected.sort();
    assert_eq!(contents(&got), expected);
    let (doc, o) = size_json(&dir, &["embedded.o"]);
    assert!(o.status.success());
    assert_adds_up(&doc, &dir);
    assert_eq!(images_of(&doc, 0).len(), 5);
}

/// lto.o (nvcc 13.5, `code=lto_90 --compress-mode=speed`: NVVM IR flagged
/// 0x12011, and an LZ sm_80 cubin) and ldata.o (its fat binary in `.ldata`,
/// as cuFFT 11.4 keeps 11,651 of them): the NVVM IR is listed as
/// cuobjdump's `-all` lists it (recorded in lto.o.all), extracted as the
/// bytes its header bounds (lto.o.entries: header at 0x6f0, 120 bytes,
/// compressed size 2210), and sized as an `lto_90` image. Before, the
/// `.ldata` container was counted as "not listed".
#[test]
fn nvvm_ir_is_listed_extracted_as_stored_and_sized() {
    let dir = fixtures("nvidia");
    // cuobjdump -all's blocks: (kind, arch, compressed), in file order.
    let all = fs::read_to_string(dir.join("lto.o.all")).unwrap();
    let mut blocks: Vec<(String, String, bool)> = Vec::new();
    for line in all.lines() {
        if let Some(k) = line.strip_prefix("Fatbin ") {
            let kind = k.trim_end_matches(" code:").to_owned();
            blocks.push((kind, String::new(), false));
        } else if let (Some(b), Some(a)) = (blocks.last_mut(), line.strip_prefix("arch = ")) {
            b.1 = a.to_owned();
        } else if let (Some(b), "compressed") = (blocks.last_mut(), line) {
            b.2 = true;
        }
    }
    assert_eq!(
        blocks,
        [
            ("nvvm".to_owned(), "sm_90".to_owned(), true),
            ("elf".to_owned(), "sm_80".to_owned(), true)
        ]
    );
    let lto = fs::read(dir.join("lto.o")).unwrap();
    let stored = &lto[0x6f0 + 120..0x6f0 + 120 + 2210];
    for (name, section) in [("lto.o", "__nv_relfatbin"), ("ldata.o", ".ldata")] {
        let o = offload(&dir, &["ls", "--json", "--verify", name]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc = json::parse(&String::from_utf8(o.stdout).unwrap());
        let nvvm: Vec<_> = ls_entries(&doc)
            .into_iter()
            .filter(|(_, e)| e.get("cuda").get("kind").str() == Some("nvvm"))
            .collect();
        assert_eq!(nvvm.len(), 1, "{name}");
        // The same entries as cuobjdump's blocks.
        let listed: Vec<(String, String, bool)> = ls_entries(&doc)
            .iter()
            .map(|(_, e)| {
                let kind = match e.get("cuda").get("kind").str() {
                    Some("cubin") => "elf",
                    other => other.unwrap(),
                };
                (
                    kind.to_owned(),
                    e.get("cuda").get("arch").str().unwrap().to_owned(),
                    e.get("compression").str().is_some(),
                )
            })
            .collect();
        assert_eq!(listed, blocks, "{name}");
        let (path, e) = &nvvm[0];
        assert!(path.iter().any(|p| p == section), "{name}: {path:?}");
        assert_eq!(e.get("cuda").get("arch").str(), Some("sm_90"));
        assert_eq!(e.get("compression").str(), Some("nvidia-lz"));
        assert_eq!(num(e, "uncompressed_size"), 2692);
        let data = fs::read(dir.join(name)).unwrap();
        let at = num(e.get("location"), "offset") as usize;
        assert_eq!(&data[at..at + num(e, "size") as usize], stored, "{name}");
        let tmp = tempfile::tempdir().unwrap();
        let o = offload(&dir, &["extract", "-d", tmp.path().to_str().unwrap(), name]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let files: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".sm_90.nvvm"))
            .collect();
        assert_eq!(files.len(), 1, "{name}");
        assert_eq!(fs::read(&files[0]).unwrap(), stored, "{name}");
        let (doc, o) = size_json(&dir, &[name]);
        assert!(o.status.success());
        assert_adds_up(&doc, &dir);
        let img: Vec<_> = images_of(&doc, 0)
            .into_iter()
            .filter(|i| i.get("kind").str() == Some("nvvm"))
            .collect();
        assert_eq!(img.len(), 1, "{name}");
        assert_eq!(img[0].get("arch").str(), Some("lto_90"));
        assert_eq!(
            (num(img[0], "stored"), num(img[0], "uncompressed")),
            (2210, 2692)
        );
        assert!(img[0].get("damage").arr().is_empty());
    }
}

/// rdclib.so (nvcc 13.5, `-shared -rdc=true`): the device-linked sm_80
/// cubin in `.nv_fatbin` and the relocatable one in `__nv_relfatbin`, each
/// with kernels `double_all` and `double_first` (STO_CUDA_ENTRY) and the
/// device function `twice`. The relocatable copies are no duplicates (as
/// cubloaty 0.2 counts them: 2 kernels, 0 duplicates), and `twice` is no
/// kernel although the relocatable cubin has a `.nv.info._Z5twicef`.
/// Before, 3 duplicates and 3 kernels.
#[test]
fn relocatable_copies_are_no_duplicates_and_device_functions_no_kernels() {
    let dir = fixtures("nvidia");
    let (doc, o) = size_json(&dir, &["rdclib.so"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_adds_up(&doc, &dir);
    assert_eq!(images_of(&doc, 0).len(), 2);
    let mut rows: Vec<(String, bool, u64, u64)> = doc
        .get("functions")
        .arr()
        .iter()
        .map(|f| {
            (
                name_of(&doc, f).to_owned(),
                f.get("kernel") == &json::V::Bool(true),
                num(f, "copies"),
                num(f, "relocatable"),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("_Z5twicef".to_owned(), false, 2, 1),
            ("double_all".to_owned(), true, 2, 1),
            ("double_first".to_owned(), true, 2, 1),
        ]
    );
    assert!(doc.get("duplicates").arr().is_empty());
    // The relocatable cubin does name `twice` in a `.nv.info` section.
    let tmp = tempfile::tempdir().unwrap();
    let o = offload(
        &dir,
        &["extract", "-d", tmp.path().to_str().unwrap(), "rdclib.so"],
    );
    assert!(o.status.success());
    let rel = fs::read(tmp.path().join("rdclib.nv_relfatbin.1.sm_80.cubin")).unwrap();
    assert!(rel.windows(18).any(|w| w == b".nv.info._Z5twicef"));
    let o = offload(&dir, &["size", "rdclib.so"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("* twice(float)"), "{text}");
    assert!(text.contains("Duplicates: 0 functions"), "{text}");
}

/// variants.o: the `code=sm_100f` cubin (cuobjdump lists it as `sm_100`)
/// is an architecture of its own, `sm_100f`, as cubloaty 0.2 names it;
/// before, it was counted under `sm_100`.
#[test]
fn family_cubins_keep_their_variant() {
    let dir = fixtures("nvidia");
    let (doc, o) = size_json(&dir, &["variants.o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_adds_up(&doc, &dir);
    let mut archs: Vec<&str> = doc.get("files").arr()[0]
        .get("archs")
        .arr()
        .iter()
        .map(|a| a.get("arch").str().unwrap())
        .collect();
    archs.sort();
    assert_eq!(
        archs,
        [
            "compute_100a",
            "compute_90",
            "sm_100a",
            "sm_100f",
            "sm_103a",
            "sm_120a",
            "sm_121a",
            "sm_90a"
        ]
    );
    let o = offload(&dir, &["ls", "variants.o"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("sm_100.cubin"));
}

#[test]
fn damaged_images_among_other_data_are_damage() {
    let dir = fixtures("nvidia");
    let o = offload(&dir, &["ls", "--json", "embedded.o"]);
    let doc = json::parse(&String::from_utf8(o.stdout).unwrap());
    let entries = ls_entries(&doc);
    let at = |section: &str| {
        let (_, e) = entries
            .iter()
            .find(|(p, _)| p.iter().any(|s| s == section))
            .unwrap();
        num(e.get("location"), "offset") as usize
    };
    let cubin = at(".rodata");
    // The fat binary container's header: 16 bytes before its first entry
    // header (64 bytes), which is 64 bytes before the first payload.
    let fatbin = at(".data") - 64 - 16;
    let bytes = fs::read(dir.join("embedded.o")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A cubin whose section table lies outside it; a container header that
    // records more bytes than the section has.
    for (name, at, value) in [
        ("shoff.o", cubin + 40, 1u64 << 40),
        ("lying.o", fatbin + 8, 1u64 << 40),
    ] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&value.to_le_bytes());
        fs::write(tmp.path().join(name), &b).unwrap();
        let o = offload(tmp.path(), &["ls", name]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(name) && err.contains("among other data"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        let (doc, o) = size_json(tmp.path(), &[name]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert_adds_up(&doc, tmp.path());
    }
}

/// thin rewrites a fat binary container among other data in place (its
/// start unchanged) and leaves a bare cubin alone, saying so.
#[test]
fn thin_leaves_bare_cubins_alone_and_says_so() {
    let dir = fixtures("nvidia");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("thinned.o");
    let o = offload(
        &dir,
        &[
            "thin",
            "--keep",
            "sm_90",
            "-o",
            out.to_str().unwrap(),
            "embedded.o",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("section .rodata: left alone: bare cubins among other data"),
        "{text}"
    );
    let before = fs::read(dir.join("embedded.o")).unwrap();
    let after = fs::read(&out).unwrap();
    assert_eq!(before.len(), after.len());
    // The .rodata cubin is where it was, byte for byte.
    let o = offload(&dir, &["ls", "--json", "embedded.o"]);
    let doc = json::parse(&String::from_utf8(o.stdout).unwrap());
    let (_, cubin) = ls_entries(&doc)
        .into_iter()
        .find(|(p, _)| p.iter().any(|s| s == ".rodata"))
        .unwrap();
    let at = num(cubin.get("location"), "offset") as usize;
    let n = num(cubin.get("location"), "size") as usize;
    assert_eq!(before[at..at + n], after[at..at + n]);
    let o = offload(tmp.path(), &["ls", "--json", "thinned.o"]);
    let doc = json::parse(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(ls_entries(&doc).len(), 4);
}
