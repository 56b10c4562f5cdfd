//! Thinned libraries and programs still load and register exactly the kept
//! device code, proven without a GPU (issue 31).
//!
//! The tests build a stand-in CUDA and HIP runtime (tests/fixtures/standin/
//! runtime.c) as libcudart.so.12 / .13 and libamdhip64.so.5 / .6, with the
//! sonames and symbol versions of NVIDIA's and AMD's libraries. Libraries
//! and programs linked against it register their device code on load; the
//! stand-in checks that every wrapper record points at a valid container
//! inside the loaded file, and logs each container's entries (IDs, sizes,
//! and a hash of their bytes as found in memory). The log of a thinned file
//! must equal what `offload ls --json` says of that file, and hold exactly
//! the original's entries that the selection keeps, byte for byte.
//!
//! Inputs: HIP libraries built here by clang-22 (their constructors are
//! clang's), NVIDIA-like libraries and programs built here by `cc` from
//! nvcc's fat binaries in tests/fixtures/nvidia with nvcc's host layout
//! (nvtu.c), and the nvcc-built libk.so and app fixtures themselves. Each is
//! thinned with `-o` and `--in-place`. Then readelf, eu-elflint, nm,
//! llvm-readobj-22 and clang-offload-bundler-22 read the results: they
//! complain of nothing they did not complain of in the original, every
//! dynamic symbol keeps its address, and LLVM lists the kept entries.
//!
//! The checks hold for either layout `thin` writes (in place or shrunk);
//! the libraries and programs that free a page or more must have shrunk. Tests
//! need a C compiler with libzstd-dev and zlib1g-dev (CI installs them) and
//! say why they skip where one is missing; clang-22 and the LLVM tools
//! likewise.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use md5::{Digest, Md5};
use offload_format::ccob;
use offload_format::objfile::Object;
use test_support::{have, s};

/// The JSON reader xtask's real-world checks use too.
#[path = "../../../xtask/src/json.rs"]
mod json;

/// cuobjdump's lines, made from the JSON listing.
#[path = "../../../xtask/src/cuobjdump.rs"]
mod cuobjdump;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn standin(name: &str) -> PathBuf {
    repo().join("tests/fixtures/standin").join(name)
}

fn run_ok(c: &mut Command) -> Output {
    let o = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        o.status.success(),
        "{c:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn offload(args: &[&str]) -> Output {
    run_ok(Command::new(env!("CARGO_BIN_EXE_offload")).args(args))
}

/// The runtimes the stand-in poses as: file name, version node, symbols.
const RUNTIMES: [(&str, &str, &str); 4] = [
    ("libcudart.so.12", "libcudart.so.12", "__cuda*; cuda*;"),
    ("libcudart.so.13", "libcudart.so.13", "__cuda*; cuda*;"),
    ("libamdhip64.so.5", "hip_4.2", "__hip*; hip*;"),
    ("libamdhip64.so.6", "hip_4.2", "__hip*; hip*;"),
];

/// A scratch directory with the stand-in runtimes (in `rt`, with the
/// unversioned names linkers look for) and the dlopen loader.
struct Lab {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    rt: PathBuf,
    loader: PathBuf,
}

fn lab() -> Option<Lab> {
    if !have("cc") {
        eprintln!("skipped: the load tests build their runtimes with a C compiler");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let rt = dir.join("rt");
    fs::create_dir(&rt).unwrap();
    for (file, node, symbols) in RUNTIMES {
        let map = dir.join(format!("{file}.map"));
        fs::write(&map, format!("{node} {{ global: {symbols} local: *; }};\n")).unwrap();
        run_ok(
            Command::new("cc")
                .args(["-shared", "-fPIC", "-O1", "-o"])
                .arg(rt.join(file))
                .arg(format!("-Wl,-soname,{file}"))
                .arg(format!("-Wl,--version-script={}", s(&map)))
                .arg(standin("runtime.c"))
                .args(["-lzstd", "-lz"]),
        );
    }
    std::os::unix::fs::symlink("libcudart.so.13", rt.join("libcudart.so")).unwrap();
    std::os::unix::fs::symlink("libamdhip64.so.6", rt.join("libamdhip64.so")).unwrap();
    let loader = dir.join("load");
    run_ok(
        Command::new("cc")
            .arg("-o")
            .arg(&loader)
            .arg(standin("load.c"))
            .arg("-ldl"),
    );
    Some(Lab {
        _tmp: tmp,
        dir,
        rt,
        loader,
    })
}

/// What the stand-in logged when `target` was loaded (dlopen'ed by the
/// loader, or run when it is a program): one sorted line per registered
/// container. Fails on any error the stand-in found, and unless every
/// registration was undone.
fn registrations(lab: &Lab, target: &Path, program: bool) -> Vec<String> {
    let log = lab.dir.join("standin.log");
    let _ = fs::remove_file(&log);
    let mut c = if program {
        Command::new(target)
    } else {
        let mut c = Command::new(&lab.loader);
        c.arg(target);
        c
    };
    c.env("LD_LIBRARY_PATH", &lab.rt)
        .env("OFFLOAD_STANDIN_LOG", &log);
    run_ok(&mut c);
    let text = fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("error"), "{}: {text}", target.display());
    let mut regs: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("nv") || l.starts_with("hip"))
        .map(str::to_owned)
        .collect();
    let undone = text
        .lines()
        .filter(|l| l.starts_with("unregister "))
        .count();
    assert_eq!(undone, regs.len(), "{}: {text}", target.display());
    assert!(!regs.is_empty(), "{}: nothing registered", target.display());
    regs.sort();
    regs
}

/// FNV-1a 64, as the stand-in hashes entries.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn ls(file: &Path) -> json::V {
    let o = offload(&["ls", "--json", s(file)]);
    json::parse(&String::from_utf8(o.stdout).unwrap())
}

/// Every container node of a listing, depth first.
fn containers(doc: &json::V) -> Vec<&json::V> {
    json::nodes(doc)
        .into_iter()
        .filter(|n| {
            matches!(
                n.get("type").str(),
                Some("fatbin" | "bundle" | "compressed-bundle")
            )
        })
        .collect()
}

fn at(data: &[u8], offset: Option<u64>, size: Option<u64>) -> &[u8] {
    let o = offset.unwrap() as usize;
    &data[o..o + size.unwrap() as usize]
}

/// What the stand-in must log for `file`, by `offload ls --json` and the
/// bytes it locates: one sorted line per container.
fn listed(file: &Path) -> Vec<String> {
    let data = fs::read(file).unwrap();
    let mut lines = Vec::new();
    for c in containers(&ls(file)) {
        let kind = c.get("type").str().unwrap();
        let mut line = String::from(if kind == "fatbin" { "nv" } else { "hip" });
        let plain = (kind == "compressed-bundle").then(|| {
            let e = c.get("entries").arr()[0].get("location");
            let bytes = at(
                &data,
                e.get("bundle_offset").num(),
                e.get("bundle_size").num(),
            );
            ccob::decompress(bytes).unwrap().data
        });
        for e in c.get("entries").arr() {
            let l = e.get("location");
            let bytes = match &plain {
                Some(p) => at(p, l.get("offset_in_bundle").num(), l.get("size").num()),
                None => at(&data, l.get("offset").num(), l.get("size").num()),
            };
            let hash = fnv(bytes);
            if kind == "fatbin" {
                let cuda = e.get("cuda");
                let code = match cuda.get("kind").str() {
                    Some("ptx") => 1,
                    Some("cubin") => 2,
                    other => panic!("unexpected NVIDIA entry kind {other:?}"),
                };
                line += &format!(
                    " {code}:{}:{}:{hash:016x}",
                    cuda.get("number").num().unwrap(),
                    bytes.len()
                );
            } else {
                line += &format!(
                    " {}:{}:{hash:016x}",
                    e.get("id").str().unwrap(),
                    bytes.len()
                );
            }
        }
        lines.push(line);
    }
    lines.sort();
    lines
}

/// The entries of registration lines: `KIND:SM:SIZE:HASH` or
/// `ID:SIZE:HASH`.
fn tokens(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .flat_map(|l| l.split(' ').skip(1).map(str::to_owned))
        .collect()
}

/// Whether every container ls lists registers on load (nvcc's libk.so
/// also holds a device-link fat binary behind a version 2 wrapper that its
/// constructors do not register), or some of them.
#[derive(Clone, Copy, PartialEq)]
enum Registers {
    All,
    Some,
}

/// The registrations of `file` are what ls lists of it (or some of it).
fn assert_listed(regs: &[String], file: &Path, how: Registers) {
    let listed = listed(file);
    if how == Registers::All {
        assert_eq!(regs, listed, "{}", file.display());
    } else {
        for r in regs {
            assert!(
                listed.contains(r),
                "{}: {r} not in {listed:?}",
                file.display()
            );
        }
    }
}

/// Which entries (by registration token) a selection keeps.
type Kept = fn(&str) -> bool;

/// Loads `original` and `thinned`: each registers what ls lists of it,
/// and the thinned file holds the original's entries that `kept` selects
/// (by token), no others, byte for byte, and at least one fewer.
fn check_load(
    lab: &Lab,
    original: &Path,
    thinned: &Path,
    program: bool,
    how: Registers,
    kept: Kept,
) {
    let before = registrations(lab, original, program);
    assert_listed(&before, original, how);
    let after = registrations(lab, thinned, program);
    assert_listed(&after, thinned, how);
    assert_eq!(before.len(), after.len(), "every container still registers");
    let want: BTreeSet<String> = tokens(&before).into_iter().filter(|t| kept(t)).collect();
    assert!(
        want.len() < tokens(&before).len(),
        "the selection drops something"
    );
    assert_eq!(tokens(&after), want, "{}", thinned.display());
}

/// What a tool says about a file, line by line, with the file's name
/// masked; its status too.
fn says(tool: &str, args: &[&str], file: &Path) -> (bool, BTreeSet<String>) {
    let o = Command::new(tool).args(args).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let lines = text.lines().map(|l| l.replace(s(file), "FILE")).collect();
    (o.status.success(), lines)
}

/// readelf, eu-elflint and nm read the thinned file as they read the
/// original: no complaint the original did not draw, and every defined
/// dynamic symbol at its address.
fn other_tools_agree(original: &Path, thinned: &Path) {
    if have("readelf") {
        // readelf's complaints go to stderr, and start "readelf:".
        let complaints = |f: &Path| -> BTreeSet<String> {
            let o = Command::new("readelf")
                .arg("-a")
                .arg("-W")
                .arg(f)
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .map(|l| l.replace(s(f), "FILE"))
                .collect()
        };
        let new: Vec<_> = complaints(thinned)
            .difference(&complaints(original))
            .cloned()
            .collect();
        assert!(
            new.is_empty(),
            "readelf -a on {}: {new:?}",
            thinned.display()
        );
    }
    if have("eu-elflint") {
        let (_, before) = says("eu-elflint", &["--gnu-ld"], original);
        let (_, after) = says("eu-elflint", &["--gnu-ld"], thinned);
        let new: Vec<_> = after.difference(&before).cloned().collect();
        assert!(
            new.is_empty(),
            "eu-elflint --gnu-ld on {}: {new:?}",
            thinned.display()
        );
    }
    if have("nm") {
        // Every defined dynamic symbol keeps its address. So does every
        // static one, but for those naming a container (nvcc's
        // fatbinData): a shrunk file moves them with the container, still
        // inside the offload section.
        let dynamic = |f: &Path| {
            let o = run_ok(Command::new("nm").args(["-D", "--defined-only"]).arg(f));
            String::from_utf8(o.stdout).unwrap()
        };
        let before = dynamic(original);
        assert!(!before.is_empty() || program_without_exports(original));
        assert_eq!(
            before,
            dynamic(thinned),
            "dynamic symbols of {}",
            thinned.display()
        );
        let (outside_before, inside_before) = static_symbols(original);
        let (outside_after, inside_after) = static_symbols(thinned);
        assert_eq!(
            outside_before,
            outside_after,
            "symbols of {}",
            thinned.display()
        );
        assert_eq!(
            inside_before.len(),
            inside_after.len(),
            "{}",
            thinned.display()
        );
    }
}

/// Whether `file` is a program that exports no symbol (nothing for
/// `nm -D --defined-only` to compare).
fn program_without_exports(file: &Path) -> bool {
    let data = fs::read(file).unwrap();
    Object::parse(&data)
        .unwrap()
        .section_by_name(b".interp")
        .unwrap()
        .is_some()
}

/// The address ranges of a file's offload sections.
fn offload_sections(file: &Path) -> Vec<(u64, u64)> {
    let data = fs::read(file).unwrap();
    let obj = Object::parse(&data).unwrap();
    obj.sections()
        .map(Result::unwrap)
        .filter(|s| matches!(s.name, b".nv_fatbin" | b"__nv_relfatbin" | b".hip_fatbin"))
        .map(|s| (s.address, s.address + s.size))
        .collect()
}

/// `nm --defined-only` lines of `file`: those outside its offload
/// sections, and those inside (each checked to be inside).
fn static_symbols(file: &Path) -> (Vec<String>, Vec<String>) {
    let sections = offload_sections(file);
    let o = Command::new("nm")
        .arg("--defined-only")
        .arg(file)
        .output()
        .unwrap();
    let (mut outside, mut inside) = (Vec::new(), Vec::new());
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let address = line
            .split(' ')
            .next()
            .and_then(|a| u64::from_str_radix(a, 16).ok());
        match address {
            Some(a) if sections.iter().any(|&(lo, hi)| a >= lo && a < hi) => {
                inside.push(line.to_owned())
            }
            _ => outside.push(line.to_owned()),
        }
    }
    (outside, inside)
}

/// `offload thin --keep KEEP` of `input` with `-o` and with `--in-place`
/// (on a copy): both outputs, which must be the same bytes.
fn thin_both_ways(lab: &Lab, input: &Path, keep: &str) -> PathBuf {
    let name = input.file_name().unwrap().to_str().unwrap();
    let out = lab.dir.join(format!("thin-o-{name}"));
    offload(&["thin", "--keep", keep, "-o", s(&out), s(input)]);
    let copy = lab.dir.join(format!("thin-i-{name}"));
    fs::copy(input, &copy).unwrap();
    offload(&["thin", "--keep", keep, "--in-place", s(&copy)]);
    assert!(
        fs::read(&out).unwrap() == fs::read(&copy).unwrap(),
        "-o and --in-place write the same file"
    );
    out
}

// ---- HIP ----

const HIP_KEEP: &str = "gfx90a:xnack+";

fn hip_kept(token: &str) -> bool {
    let id = token.split(':').next().unwrap_or_default();
    id.starts_with("host-") || token.starts_with("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+:")
}

/// A HIP shared library of two translation units for gfx906 and
/// gfx90a:xnack+, built by clang-22 against the stand-in libamdhip64
/// (`extra`: more options).
fn hip_library(lab: &Lab, name: &str, extra: &[&str]) -> Option<PathBuf> {
    if !have("clang-22") {
        return None;
    }
    let fixtures = repo().join("tests/fixtures/thin");
    let out = lab.dir.join(name);
    run_ok(
        Command::new("clang-22")
            .args(["-x", "hip", "-nogpuinc", "-nogpulib"])
            .args(["--offload-arch=gfx906", "--offload-arch=gfx90a:xnack+"])
            .args(["-fPIC", "-shared"])
            .arg(fixtures.join("a.hip"))
            .arg(fixtures.join("b.hip"))
            .arg("-L")
            .arg(&lab.rt)
            .args(extra)
            .arg("-o")
            .arg(&out),
    );
    Some(out)
}

/// LLVM's tools list the kept entries of a thinned HIP library:
/// llvm-readobj-22 --offloading (IDs and sizes) and
/// clang-offload-bundler-22 -list of each bundle cut out of it.
fn llvm_reads_hip(lab: &Lab, thinned: &Path) {
    let doc = ls(thinned);
    let mut listed: Vec<(String, u64)> = Vec::new();
    for c in containers(&doc) {
        for e in c.get("entries").arr() {
            listed.push((
                e.get("id").str().unwrap().to_owned(),
                e.get("size").num().unwrap(),
            ));
        }
    }
    listed.sort();
    if have("llvm-readobj-22") {
        let o = run_ok(
            Command::new("llvm-readobj-22")
                .arg("--offloading")
                .arg(thinned),
        );
        let mut read: Vec<(String, u64)> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let (id, uri) = l.split_once('\t')?;
                let size = uri.rsplit_once("size=")?.1.parse().ok()?;
                Some((id.to_owned(), size))
            })
            .collect();
        read.sort();
        assert_eq!(
            read,
            listed,
            "llvm-readobj-22 --offloading {}",
            thinned.display()
        );
    }
    if have("clang-offload-bundler-22") {
        let data = fs::read(thinned).unwrap();
        for (i, c) in containers(&doc).iter().enumerate() {
            let cut = lab.dir.join(format!("bundle-{i}"));
            fs::write(&cut, at(&data, c.get("offset").num(), c.get("size").num())).unwrap();
            let o = run_ok(
                Command::new("clang-offload-bundler-22")
                    .args(["-list", "-type=o"])
                    .arg(format!("-input={}", s(&cut))),
            );
            let mut got: Vec<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            got.sort();
            let mut want: Vec<String> = c
                .get("entries")
                .arr()
                .iter()
                .map(|e| e.get("id").str().unwrap().to_owned())
                .collect();
            want.sort();
            assert_eq!(
                got,
                want,
                "bundler -list of bundle {i} of {}",
                thinned.display()
            );
        }
    }
}

/// The thinned file is smaller than the original: the freed bytes left
/// it (thin shrinks shared libraries that free at least a page).
fn assert_shrunk(original: &Path, thinned: &Path) {
    let (before, after) = (size(original), size(thinned));
    assert!(
        after < before,
        "{}: {before} -> {after} bytes",
        thinned.display()
    );
}

fn size(file: &Path) -> u64 {
    fs::metadata(file).unwrap().len()
}

#[test]
fn hip_libraries_register_exactly_the_kept_bundle_entries() {
    let Some(lab) = lab() else { return };
    // The compressed library's bundles are small: thinning frees less than
    // a page, and it is rewritten in place. It links against ROCm 5's
    // runtime (clang's own -lamdhip64 is ROCm 6's).
    for (name, extra, shrinks) in [
        ("libhip.so", &[][..], true),
        (
            "libhipz.so",
            &["--offload-compress", "-no-hip-rt", "-l:libamdhip64.so.5"][..],
            false,
        ),
    ] {
        let Some(lib) = hip_library(&lab, name, extra) else {
            return;
        };
        let thinned = thin_both_ways(&lab, &lib, HIP_KEEP);
        if shrinks {
            assert_shrunk(&lib, &thinned);
        } else {
            assert_eq!(size(&lib), size(&thinned));
        }
        check_load(&lab, &lib, &thinned, false, Registers::All, hip_kept);
        other_tools_agree(&lib, &thinned);
        llvm_reads_hip(&lab, &thinned);
    }
}

// ---- NVIDIA ----

/// nvcc objects of tests/fixtures/nvidia whose fat binaries hold an sm_80
/// cubin, compute_80 PTX and an sm_90 cubin, compressed with zstd, stored
/// and compressed with NVIDIA's LZ: one translation unit each.
const NV_UNITS: [&str; 3] = ["compress-all.o", "none.o", "speed.o"];

/// `--keep sm_90` drops the sm_80 cubins and keeps the rest (PTX for
/// compute_80 can be compiled for sm_90).
fn nv_kept(token: &str) -> bool {
    !token.starts_with("2:80:")
}

/// Compiles one nvtu.c unit around the fat binary of an nvcc object.
fn nv_unit(lab: &Lab, object: &str, pic: bool) -> PathBuf {
    nv_unit_in(lab, object, pic, ".nv_fatbin", "")
}

/// [`nv_unit`] with the fat binary in `section` (`.nv_fatbin`, or
/// `__nv_relfatbin` as in nvcc -rdc libraries), its names ending in
/// `tag` (so that units of one object link together).
fn nv_unit_in(lab: &Lab, object: &str, pic: bool, section: &str, tag: &str) -> PathBuf {
    let data = fs::read(repo().join("tests/fixtures/nvidia").join(object)).unwrap();
    let obj = Object::parse(&data).unwrap();
    let fatbin = obj
        .section_by_name(b".nv_fatbin")
        .unwrap()
        .unwrap()
        .data()
        .unwrap();
    assert_eq!(fatbin.len() % 8, 0);
    let words: String = fatbin
        .chunks(8)
        .map(|w| format!("0x{:016x}ull,\n", u64::from_le_bytes(w.try_into().unwrap())))
        .collect();
    let mut stem = object.trim_end_matches(".o").replace('-', "_");
    stem.push_str(tag);
    let header = lab.dir.join(format!("{stem}.words.h"));
    fs::write(&header, words).unwrap();
    let out = lab
        .dir
        .join(format!("{stem}.{}.o", if pic { "pic" } else { "nopic" }));
    run_ok(
        Command::new("cc")
            .args(["-c", "-O1", if pic { "-fPIC" } else { "-fno-pic" }])
            .arg(format!("-DFATBIN_WORDS=\"{}\"", s(&header)))
            .arg(format!("-DTU={stem}"))
            .arg(format!("-DFATBIN_SECTION=\"{section}\""))
            .arg(standin("nvtu.c"))
            .arg("-o")
            .arg(&out),
    );
    out
}

/// A shared library linked against the stand-in libcudart.so.13 from
/// copies of every [`NV_UNITS`] unit, `copies` per section named.
fn nv_shared(lab: &Lab, name: &str, flags: &[&str], sections: &[(&str, usize)]) -> PathBuf {
    let lib = lab.dir.join(name);
    let mut c = Command::new("cc");
    c.arg("-shared").args(flags);
    for &(section, copies) in sections {
        for copy in 0..copies {
            let tag = format!("_{}{copy}", &section[1..3]);
            for u in NV_UNITS {
                c.arg(nv_unit_in(lab, u, true, section, &tag));
            }
        }
    }
    c.arg("-L")
        .arg(&lab.rt)
        .arg("-l:libcudart.so.13")
        .arg("-o")
        .arg(&lib);
    run_ok(&mut c);
    lib
}

/// Links the NVIDIA units into `name` with the given link flags, against
/// the stand-in `runtime` (libcudart.so.12 or .13).
fn nv_link(lab: &Lab, name: &str, runtime: &str, pic: bool, flags: &[&str], main: bool) -> PathBuf {
    let out = lab.dir.join(name);
    let mut c = Command::new("cc");
    c.args(flags);
    for u in NV_UNITS {
        c.arg(nv_unit(lab, u, pic));
    }
    if main {
        c.arg(standin("main.c"));
    }
    c.arg("-L")
        .arg(&lab.rt)
        .arg(format!("-l:{runtime}"))
        .arg("-o")
        .arg(&out);
    run_ok(&mut c);
    out
}

#[test]
fn nvidia_like_library_registers_exactly_the_kept_fat_binary_entries() {
    let Some(lab) = lab() else { return };
    let lib = nv_link(
        &lab,
        "libnv.so",
        "libcudart.so.13",
        true,
        &["-shared"],
        false,
    );
    let thinned = thin_both_ways(&lab, &lib, "sm_90");
    assert_shrunk(&lib, &thinned);
    check_load(&lab, &lib, &thinned, false, Registers::All, nv_kept);
    other_tools_agree(&lib, &thinned);
    as_cuobjdump_read_it(&lab, &thinned);
}

/// Libraries whose fat binaries lie in two sections, `__nv_relfatbin`
/// and `.nv_fatbin`, as bitsandbytes' and NCCL's do: with two units of
/// each object in each section both sections shrink (the read-only
/// segment is split once per section); with one, `.nv_fatbin` frees no
/// whole page and keeps its layout while `__nv_relfatbin` shrinks. Each
/// registers exactly the kept entries of every container.
#[test]
fn nvidia_like_library_with_two_sections_registers_exactly_the_kept_entries() {
    let Some(lab) = lab() else { return };
    // The last one's segments are aligned to 2 MiB (as cuDNN's are): it
    // moves by 4 KiB pages, the moved segments aligned so.
    for (name, copies, splits, flags) in [
        ("libnv2.so", 2, 2, &[][..]),
        ("libnv1.so", 1, 1, &[]),
        ("libnv2m.so", 2, 2, &["-Wl,-z,max-page-size=0x200000"]),
    ] {
        let lib = nv_shared(
            &lab,
            name,
            flags,
            &[("__nv_relfatbin", copies), (".nv_fatbin", copies)],
        );
        let data = fs::read(&lib).unwrap();
        let obj = Object::parse(&data).unwrap();
        for section in [&b"__nv_relfatbin"[..], b".nv_fatbin"] {
            assert!(obj.section_by_name(section).unwrap().is_some());
        }
        let thinned = thin_both_ways(&lab, &lib, "sm_90");
        assert_shrunk(&lib, &thinned);
        // Each section that shrank split its segment: one program header
        // more each.
        let phnum = |f: &Path| u16::from_le_bytes(fs::read(f).unwrap()[56..58].try_into().unwrap());
        assert_eq!(phnum(&thinned), phnum(&lib) + splits, "{name}");
        if !flags.is_empty() {
            assert!(size(&lib) - size(&thinned) < 0x200000, "{name}");
            let thin_data = fs::read(&thinned).unwrap();
            let aligns: Vec<u64> = offload_format::objfile::elf::ElfFile::parse(&thin_data[..])
                .unwrap()
                .program_headers()
                .unwrap()
                .iter()
                .filter(|p| p.p_type == 1)
                .map(|p| p.align)
                .collect();
            assert_eq!(aligns[0], 0x200000, "the first segment keeps its alignment");
            assert!(aligns.contains(&0x1000), "{aligns:?}");
        }
        check_load(&lab, &lib, &thinned, false, Registers::All, nv_kept);
        other_tools_agree(&lib, &thinned);
        if name == "libnv2.so" {
            two_records_for_one_container_fall_back(&lab, &lib);
        }
    }
}

/// Containers in a section of another name (cuBLASLt keeps some in
/// `.cask_resource`, right after `.nv_fatbin`, and points at them from
/// its own tables) keep their places: the library shrinks by what
/// `.nv_fatbin` frees, `.cask_resource` keeps its address and size, and
/// every container, moved or not, registers exactly its kept entries (here
/// records point into both sections). A library with containers only
/// there keeps its layout, saying why.
#[test]
fn containers_in_another_section_keep_their_places_while_the_library_shrinks() {
    let Some(lab) = lab() else { return };
    let link = |name: &str, sections: &[(&str, usize)]| nv_shared(&lab, name, &[], sections);
    let lib = link("libcask.so", &[(".nv_fatbin", 2), (".cask_resource", 1)]);
    let cask = |f: &Path| {
        let data = fs::read(f).unwrap();
        let elf = offload_format::objfile::elf::ElfFile::parse(&data[..]).unwrap();
        let i = elf
            .section_index_by_name(b".cask_resource")
            .unwrap()
            .unwrap();
        let h = elf.section_header(i).unwrap();
        let nv = elf.section_index_by_name(b".nv_fatbin").unwrap().unwrap();
        let nv = elf.section_header(nv).unwrap();
        (h.addr, h.size, h.offset, nv.offset)
    };
    let before = cask(&lib);
    assert!(before.2 > before.3, ".cask_resource follows .nv_fatbin");
    let thinned = thin_both_ways(&lab, &lib, "sm_90");
    assert_shrunk(&lib, &thinned);
    let after = cask(&thinned);
    assert_eq!((after.0, after.1), (before.0, before.1));
    assert!(after.2 < before.2, "its bytes moved down in the file");
    check_load(&lab, &lib, &thinned, false, Registers::All, nv_kept);
    other_tools_agree(&lib, &thinned);
    let only = link("libcaskonly.so", &[(".cask_resource", 2)]);
    falls_back(
        &lab,
        "libcaskonly.so.copy",
        &fs::read(&only).unwrap(),
        "the containers are in section .cask_resource, not .nv_fatbin, __nv_relfatbin or \
         .hip_fatbin",
    );
}

/// A record of `__nv_relfatbin` made to point at the first container of
/// `.nv_fatbin`, which another record points at: the library is not
/// shrunk but rewritten in place, as `--keep-layout` rewrites it.
fn two_records_for_one_container_fall_back(lab: &Lab, lib: &Path) {
    let mut data = fs::read(lib).unwrap();
    let (rel, nv, rela) = {
        let elf = offload_format::objfile::elf::ElfFile::parse(&data[..]).unwrap();
        let sec = |n: &[u8]| {
            let i = elf.section_index_by_name(n).unwrap().unwrap();
            let h = elf.section_header(i).unwrap();
            (h.offset, h.addr, h.size)
        };
        (
            sec(b"__nv_relfatbin"),
            sec(b".nv_fatbin"),
            sec(b".rela.dyn"),
        )
    };
    let at = (0..rela.2 as usize / 24)
        .map(|k| rela.0 as usize + k * 24)
        .find(|&at| {
            let addend = u64::from_le_bytes(data[at + 16..at + 24].try_into().unwrap());
            addend >= rel.1 && addend < rel.1 + rel.2
        })
        .expect("a record's relocation into __nv_relfatbin");
    data[at + 16..at + 24].copy_from_slice(&nv.1.to_le_bytes());
    falls_back(
        lab,
        "twice.so",
        &data,
        "two registration records point at the container",
    );
}

/// What cuobjdump 13.5 listed and extracted from the shrunk libnv.so
/// (tests/fixtures/standin/README.md says how it was recorded): our
/// listing names and numbers every entry as cuobjdump did, and our
/// extraction writes the same files, byte for byte.
fn as_cuobjdump_read_it(lab: &Lab, thinned: &Path) {
    const NAME: &str = "libnv-sm_90.so";
    let named = lab.dir.join(NAME);
    fs::copy(thinned, &named).unwrap();
    if let Some(dir) = std::env::var_os("OFFLOAD_STANDIN_RECORD") {
        fs::copy(thinned, Path::new(&dir).join(NAME)).unwrap();
    }
    let doc = ls(&named);
    let recorded = fs::read_to_string(standin(&format!("{NAME}.list"))).unwrap();
    assert_eq!(
        cuobjdump::list_lines(NAME, &cuobjdump::entries(&doc)),
        cuobjdump::recorded_lines(&recorded)
    );
    let x = lab.dir.join("extracted");
    fs::create_dir(&x).unwrap();
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_offload"))
            .arg("extract")
            .arg(&named)
            .current_dir(&x),
    );
    let mut ours = BTreeSet::new();
    for f in fs::read_dir(&x).unwrap() {
        let f = f.unwrap();
        let sum: String = Md5::digest(fs::read(f.path()).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        ours.insert(format!("{sum}  {}", f.file_name().to_string_lossy()));
    }
    let recorded = fs::read_to_string(standin(&format!("{NAME}.md5"))).unwrap();
    let theirs: BTreeSet<String> = recorded.lines().map(str::to_owned).collect();
    assert_eq!(ours, theirs);
}

/// A program's headers are where every loader looks for them: `PT_PHDR`
/// describes the table at `e_phoff`, a `PT_LOAD` maps that file range at
/// `PT_PHDR`'s address, and kernels before Linux 5.18, which compute
/// `AT_PHDR` as the first `PT_LOAD`'s address minus its offset plus
/// `e_phoff`, get that address too. `PT_INTERP` is mapped by a `PT_LOAD`
/// and still names the original's interpreter.
fn program_headers_loadable(original: &Path, thinned: &Path) {
    use offload_format::objfile::elf::{ElfFile, ProgramHeader, PT_LOAD, PT_PHDR};
    let data = fs::read(thinned).unwrap();
    let elf = ElfFile::parse(&data[..]).unwrap();
    let h = elf.header();
    let phdrs = elf.program_headers().unwrap();
    let mapped = |p: &ProgramHeader| {
        phdrs.iter().any(|l| {
            l.p_type == PT_LOAD
                && p.offset >= l.offset
                && p.offset + p.filesz <= l.offset + l.filesz
                && p.vaddr - l.vaddr == p.offset - l.offset
        })
    };
    let ph = phdrs.iter().find(|p| p.p_type == PT_PHDR).expect("PT_PHDR");
    assert_eq!(ph.offset, h.phoff, "{}", thinned.display());
    assert_eq!(ph.filesz, u64::from(h.phnum) * 56);
    assert!(mapped(ph), "{}: PT_PHDR {ph:?}", thinned.display());
    let first = phdrs.iter().find(|p| p.p_type == PT_LOAD).unwrap();
    assert_eq!(first.vaddr - first.offset + h.phoff, ph.vaddr, "AT_PHDR");
    let interp = |d: &[u8]| {
        let e = ElfFile::parse(d).unwrap();
        let p = e
            .program_headers()
            .unwrap()
            .into_iter()
            .find(|p| p.p_type == 3);
        let p = p.expect("PT_INTERP");
        (
            p,
            d[p.offset as usize..(p.offset + p.filesz) as usize].to_vec(),
        )
    };
    let (p, name) = interp(&data);
    assert!(mapped(&p), "{}: PT_INTERP {p:?}", thinned.display());
    assert_eq!(name, interp(&fs::read(original).unwrap()).1);
}

/// `offload thin --keep sm_90` of `data` (written as `name`) is not shrunk,
/// the report saying `why`, and writes what `--keep-layout` writes.
fn falls_back(lab: &Lab, name: &str, data: &[u8], why: &str) {
    let input = lab.dir.join(name);
    fs::write(&input, data).unwrap();
    let (out, kept) = (
        lab.dir.join(format!("{name}.out")),
        lab.dir.join(format!("{name}.kept")),
    );
    let o = offload(&["thin", "--keep", "sm_90", "-o", s(&out), s(&input)]);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(report.contains(&format!("not shrunk ({why}")), "{report}");
    offload(&[
        "thin",
        "--keep",
        "sm_90",
        "--keep-layout",
        "-o",
        s(&kept),
        s(&input),
    ]);
    assert!(fs::read(&out).unwrap() == fs::read(&kept).unwrap());
}

/// Programs whose headers are not where the loaders look, or (not
/// position-independent) that store another address in the section,
/// keep their layout: `exe` edited so.
fn hostile_programs_fall_back(lab: &Lab, exe: &Path, pic: bool) {
    use offload_format::objfile::elf::{ElfFile, PT_PHDR};
    let data = fs::read(exe).unwrap();
    let (phoff, phnum, phdr, fatbin, dat) = {
        let elf = ElfFile::parse(&data[..]).unwrap();
        let h = elf.header();
        let phdrs = elf.program_headers().unwrap();
        let k = phdrs.iter().position(|p| p.p_type == PT_PHDR).unwrap();
        let sec = |n: &[u8]| {
            let i = elf.section_index_by_name(n).unwrap().unwrap();
            let h = elf.section_header(i).unwrap();
            (h.offset, h.addr)
        };
        (
            h.phoff as usize,
            usize::from(h.phnum),
            h.phoff as usize + k * 56,
            sec(b".nv_fatbin"),
            sec(b".data"),
        )
    };
    let name = exe.file_name().unwrap().to_str().unwrap();
    // PT_PHDR's address moved where no PT_LOAD maps its table.
    let mut bad = data.clone();
    let vaddr = u64::from_le_bytes(bad[phdr + 16..phdr + 24].try_into().unwrap());
    bad[phdr + 16..phdr + 24].copy_from_slice(&(vaddr + 0x4000_0000).to_le_bytes());
    falls_back(
        lab,
        &format!("{name}-phdr-unmapped"),
        &bad,
        "the program header table (PT_PHDR) is not mapped by a PT_LOAD at its address",
    );
    // The table copied to the end of the file, e_phoff and PT_PHDR
    // pointing there, outside every PT_LOAD.
    let mut bad = data.clone();
    let end = bad.len().next_multiple_of(8);
    bad.resize(end, 0);
    bad.extend_from_slice(&data[phoff..phoff + phnum * 56]);
    bad[32..40].copy_from_slice(&(end as u64).to_le_bytes());
    let moved = end + (phdr - phoff);
    bad[moved + 8..moved + 16].copy_from_slice(&(end as u64).to_le_bytes());
    falls_back(
        lab,
        &format!("{name}-phdr-at-end"),
        &bad,
        "the program header table (PT_PHDR) is not mapped by a PT_LOAD at its address",
    );
    // No PT_PHDR at all (made PT_NULL).
    let mut bad = data.clone();
    bad[phdr..phdr + 4].copy_from_slice(&0u32.to_le_bytes());
    falls_back(
        lab,
        &format!("{name}-no-phdr"),
        &bad,
        "the program header table of a program has no PT_PHDR",
    );
    if !pic {
        // The first container's address stored in .data as well as in
        // its record (a pointer with no relocation to find it by).
        let mut bad = data.clone();
        let at = dat.0 as usize;
        bad[at..at + 8].copy_from_slice(&fatbin.1.to_le_bytes());
        falls_back(
            lab,
            &format!("{name}-stray-pointer"),
            &bad,
            &format!(
                "an address stored in section .data at {:#x} points into the offload section",
                dat.1
            ),
        );
    }
}

/// Programs, position-independent or not, shrink like libraries: the new
/// program header table follows the packed `.nv_fatbin` in the part of
/// its segment that keeps its place, so every loader finds it (see
/// [`program_headers_loadable`]); run, each registers exactly the kept
/// entries. A non-PIE program's records hold plain addresses (no
/// relocations), which follow their containers.
#[test]
fn nvidia_like_programs_pie_and_not_register_exactly_the_kept_entries() {
    let Some(lab) = lab() else { return };
    for (name, runtime, pic, flags) in [
        ("nv-pie", "libcudart.so.12", true, &["-pie", "-fPIE"][..]),
        ("nv-nopie", "libcudart.so.13", false, &["-no-pie"][..]),
    ] {
        let exe = nv_link(&lab, name, runtime, pic, flags, true);
        let thinned = thin_both_ways(&lab, &exe, "sm_90");
        assert_shrunk(&exe, &thinned);
        program_headers_loadable(&exe, &thinned);
        check_load(&lab, &exe, &thinned, true, Registers::All, nv_kept);
        other_tools_agree(&exe, &thinned);
        hostile_programs_fall_back(&lab, &exe, pic);
    }
    // lld puts read-only data, the fat binaries with it, in the first
    // segment, before the code: the new table goes into the first
    // PT_LOAD (three copies of the units, so that a page is freed).
    if !have("clang-22") || !have("ld.lld-22") {
        eprintln!("skipped the lld program: no clang-22 or ld.lld-22");
        return;
    }
    let exe = lab.dir.join("nv-lld");
    let mut c = Command::new("clang-22");
    c.args(["-fuse-ld=lld", "-pie"]);
    for copy in ["a", "b", "c"] {
        for u in NV_UNITS {
            c.arg(nv_unit_in(&lab, u, true, ".nv_fatbin", &format!("_{copy}")));
        }
    }
    c.arg(standin("main.c"))
        .arg("-L")
        .arg(&lab.rt)
        .arg("-l:libcudart.so.13")
        .arg("-o")
        .arg(&exe);
    run_ok(&mut c);
    let thinned = thin_both_ways(&lab, &exe, "sm_90");
    assert_shrunk(&exe, &thinned);
    program_headers_loadable(&exe, &thinned);
    check_load(&lab, &exe, &thinned, true, Registers::All, nv_kept);
    other_tools_agree(&exe, &thinned);
}

#[test]
fn nvcc_built_library_and_program_register_exactly_the_kept_entries() {
    let Some(lab) = lab() else { return };
    let fixtures = repo().join("tests/fixtures/nvidia");
    // libk.so: sm_80, sm_90 + compute_90 PTX, sm_90a; keeping sm_80 keeps
    // the sm_80 cubins alone. app: sm_90 cubins + compute_90 PTX; keeping
    // sm_100 keeps the PTX alone (one container is left with no entry).
    fn libk_kept(t: &str) -> bool {
        t.starts_with("2:80:")
    }
    fn app_kept(t: &str) -> bool {
        t.starts_with("1:90:")
    }
    let cases: [(&str, &str, bool, Kept); 2] = [
        ("libk.so", "sm_80", false, libk_kept),
        ("app", "sm_100", true, app_kept),
    ];
    for (name, keep, program, kept) in cases {
        let input = lab.dir.join(name);
        fs::copy(fixtures.join(name), &input).unwrap();
        let thinned = thin_both_ways(&lab, &input, keep);
        if program {
            // nvcc's program frees a page once its sm_90 cubins go.
            assert_shrunk(&input, &thinned);
            program_headers_loadable(&input, &thinned);
        }
        check_load(&lab, &input, &thinned, program, Registers::Some, kept);
        other_tools_agree(&input, &thinned);
    }
}
