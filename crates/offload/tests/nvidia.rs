//! `offload ls` and `offload extract` on NVIDIA fat binaries built by nvcc
//! 13.5 (tests/fixtures/nvidia, made by its gen.sh), checked against what
//! cuobjdump 13.5 recorded there: `cuobjdump --list-elf --list-ptx` (the
//! `.list` files) and the md5 of every file `cuobjdump -xelf all -xptx
//! all` wrote (the `.md5` files). The builds cover every storage nvcc 13
//! writes: stored, zstd (default PTX, `-compress-all`, `--compress-mode=
//! size`), NVIDIA's LZ format (`--compress-mode=speed`), long literal runs
//! and matches (`lz-big`), `a`/`f` variants, concatenated entries
//! (`--concat`), objects, a shared library, an executable, an archive and
//! relocatable device code.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use md5::{Digest, Md5};

/// The JSON reader xtask's real-world checks use too.
#[path = "../../../xtask/src/json.rs"]
mod json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nvidia")
}

/// The nvcc builds, each with its `.list` and `.md5`.
const BUILDS: &[&str] = &[
    "plain.o",
    "compress-all.o",
    "size.o",
    "speed.o",
    "none.o",
    "variants.o",
    "libk.so",
    "app",
    "libk.a",
    "rdc.o",
    "concat.o",
    "lz-big.o",
    "lz-big-ptx.o",
];

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_offload");
    test_support::tool(exe, dir).args(args).output().unwrap()
}

/// Asserts that the output `out` contains `needle`, showing it if not.
fn has(out: &[u8], needle: &str) {
    let t = text(out);
    assert!(t.contains(needle), "{t}");
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn md5_hex(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `<md5>  <name>` lines as a map from name to md5.
fn md5_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(sum, name)| (name.to_owned(), sum.to_owned()))
        .collect()
}

/// cuobjdump's lines, made from the JSON listing (shared with xtask's
/// real-world checks).
#[path = "../../../xtask/src/cuobjdump.rs"]
mod cuobjdump;

/// `offload ls --json FILE`.
fn ls_json(file: &str) -> json::V {
    let o = run_in(&fixtures(), &["ls", "--json", file]);
    assert!(o.status.success(), "{file}: {}", text(&o.stderr));
    let doc = json::parse(&text(&o.stdout));
    assert_eq!(doc.get("schema_version").num(), Some(2));
    doc
}

#[test]
fn listings_name_and_number_every_entry_as_cuobjdump_does() {
    for file in BUILDS {
        let recorded = fs::read_to_string(fixtures().join(format!("{file}.list"))).unwrap();
        let doc = ls_json(file);
        let entries = cuobjdump::entries(&doc);
        assert_eq!(
            cuobjdump::list_lines(file, &entries),
            cuobjdump::recorded_lines(&recorded),
            "{file}"
        );
        for e in &entries {
            // Every payload is named, compressed or not, and agrees with
            // its header.
            let payload = e.get("payload").get("type").str();
            assert!(matches!(payload, Some("cubin" | "ptx")), "{file}: {e:?}");
            assert_eq!(
                e.get("payload").get("matches_entry"),
                &json::V::Bool(true),
                "{file}: {e:?}"
            );
            if e.get("compression").str().is_some() {
                assert!(e.get("uncompressed_size").num().is_some(), "{file}: {e:?}");
            }
        }
    }
}

#[test]
fn every_extracted_file_is_cuobjdumps_byte_for_byte() {
    for file in BUILDS {
        let tmp = tempfile::tempdir().unwrap();
        let input = fixtures().join(file);
        let o = run_in(tmp.path(), &["extract", input.to_str().unwrap()]);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
        let mut ours = BTreeMap::new();
        for f in fs::read_dir(tmp.path()).unwrap() {
            let f = f.unwrap();
            let name = f.file_name().to_string_lossy().into_owned();
            ours.insert(name, md5_hex(&fs::read(f.path()).unwrap()));
        }
        let recorded = fs::read_to_string(fixtures().join(format!("{file}.md5"))).unwrap();
        assert_eq!(ours, md5_lines(&recorded), "{file}");
    }
}

#[test]
fn raw_keeps_the_stored_bytes() {
    // compress-all.o: zstd cubins and PTX; speed.o: LZ.
    for (file, ext) in [("compress-all.o", "zst"), ("speed.o", "nvlz")] {
        let tmp = tempfile::tempdir().unwrap();
        let input = fixtures().join(file);
        let o = run_in(tmp.path(), &["extract", "--raw", input.to_str().unwrap()]);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
        let stem = file.trim_end_matches(".o");
        let raw = fs::read(tmp.path().join(format!("{stem}.2.sm_90.cubin.{ext}"))).unwrap();
        let data = fs::read(&input).unwrap();
        // The stored stream is in the file, as is.
        assert!(
            data.windows(raw.len()).any(|w| w == raw.as_slice()),
            "{file}"
        );
        if ext == "zst" {
            let decoded = zstd::decode_all(raw.as_slice()).unwrap();
            let recorded =
                md5_lines(&fs::read_to_string(fixtures().join(format!("{file}.md5"))).unwrap());
            assert_eq!(
                Some(&md5_hex(&decoded)),
                recorded.get(&format!("{stem}.2.sm_90.cubin"))
            );
        }
    }
}

/// The names `extract --target T` writes for a fixture.
fn selected(file: &str, target: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let input = fixtures().join(file);
    let o = run_in(
        tmp.path(),
        &["extract", "--target", target, input.to_str().unwrap()],
    );
    assert!(o.status.success(), "{target}: {}", text(&o.stderr));
    let mut names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn targets_select_by_what_a_gpu_can_use() {
    // variants.o: sm_90a, sm_100a, sm_100f (listed as sm_100), sm_103a,
    // sm_120a, sm_121a cubins; compute_100a and compute_90 PTX. `sm_90`:
    // what a 9.0 GPU can use, the cubins it runs and the PTX it compiles.
    assert_eq!(
        selected("variants.o", "sm_90"),
        ["variants.1.sm_90a.cubin", "variants.2.sm_90.ptx"]
    );
    assert_eq!(
        selected("variants.o", "sm_90a"),
        ["variants.1.sm_90a.cubin"]
    );
    // A 10.3 GPU runs the sm_100f cubin and the sm_103a one, not sm_100a;
    // it compiles the compute_90 PTX.
    assert_eq!(
        selected("variants.o", "sm_103"),
        [
            "variants.2.sm_90.ptx",
            "variants.3.sm_100.cubin",
            "variants.4.sm_103a.cubin"
        ]
    );
    assert_eq!(
        selected("variants.o", "sm_100f"),
        ["variants.3.sm_100.cubin"]
    );
    // PTX: compute_90 PTX compiles for any later GPU; compute_100a only
    // on 10.0.
    assert_eq!(
        selected("variants.o", "compute_120"),
        ["variants.2.sm_90.ptx"]
    );
    assert_eq!(
        selected("variants.o", "compute_100"),
        ["variants.1.sm_100a.ptx", "variants.2.sm_90.ptx"]
    );
    assert_eq!(
        selected("variants.o", "100"),
        [
            "variants.1.sm_100a.ptx",
            "variants.2.sm_100a.cubin",
            "variants.2.sm_90.ptx",
            "variants.3.sm_100.cubin"
        ]
    );
    // compress-all.o: sm_80 and sm_90 cubins, compute_80 PTX; an 8.6 GPU
    // runs the sm_80 cubin.
    assert_eq!(
        selected("compress-all.o", "86"),
        ["compress-all.1.sm_80.cubin", "compress-all.1.sm_80.ptx"]
    );
    // lto.o (nvcc 13.5): lto_90 NVVM IR and an sm_80 cubin. NVVM IR is
    // what a library links for the GPU at run time (cuFFT's callbacks):
    // it goes where PTX would, for 9.0 and later, not 8.x; `compute_90`
    // names PTX only.
    assert_eq!(selected("lto.o", "sm_90"), ["lto.1.sm_90.nvvm"]);
    assert_eq!(selected("lto.o", "sm_100"), ["lto.1.sm_90.nvvm"]);
    assert_eq!(selected("lto.o", "sm_80"), ["lto.1.sm_80.cubin"]);
    // Numbered as cuobjdump numbers the cubin it extracts (NVVM IR, which
    // it never extracts, takes no cubin number), byte for byte.
    let tmp = tempfile::tempdir().unwrap();
    let lto = fixtures().join("lto.o");
    let o = run_in(
        tmp.path(),
        &["extract", "--target", "sm_80", lto.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let cubin = fs::read(tmp.path().join("lto.1.sm_80.cubin")).unwrap();
    let recorded = fs::read_to_string(fixtures().join("lto.o.md5")).unwrap();
    assert_eq!(md5_lines(&recorded)["lto.1.sm_80.cubin"], md5_hex(&cubin));
    let tmp = tempfile::tempdir().unwrap();
    let input = fixtures().join("lto.o");
    let o = run_in(
        tmp.path(),
        &[
            "thin",
            "--keep",
            "sm_90",
            "-o",
            "t.o",
            input.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    has(&o.stdout, "dropped 1 of 2 entries (sm_80.cubin)");
    let kept = ls_json(tmp.path().join("t.o").to_str().unwrap());
    let kinds: Vec<_> = json::nodes(&kept)
        .into_iter()
        .flat_map(|n| n.get("entries").arr().to_vec())
        .filter_map(|e| e.get("cuda").get("kind").str().map(str::to_owned))
        .collect();
    assert_eq!(kinds, ["nvvm"]);
}

#[test]
fn one_entry_to_standard_output_is_the_decoded_cubin() {
    let input = fixtures().join("compress-all.o");
    let o = run_in(
        &fixtures(),
        &[
            "extract",
            "--target",
            "sm_90a",
            "-o",
            "-",
            input.to_str().unwrap(),
        ],
    );
    // compress-all.o has no sm_90a cubin: nothing selected.
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let o = run_in(
        &fixtures(),
        &[
            "extract",
            "--target",
            "sm_90.cubin",
            "-o",
            "-",
            input.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recorded = md5_lines(&fs::read_to_string(fixtures().join("compress-all.o.md5")).unwrap());
    assert_eq!(
        Some(&md5_hex(&o.stdout)),
        recorded.get("compress-all.2.sm_90.cubin")
    );
}

/// The `offload thin` cases of tests/fixtures/nvidia/thin/gen.sh: output
/// name, input, options. cuobjdump 13.5 listed and extracted each output
/// there.
const THIN_CASES: &[(&str, &str, &[&str])] = &[
    ("libk-sm_90.so", "libk.so", &["--keep", "sm_90"]),
    (
        "variants-sm_90-noptx.o",
        "variants.o",
        &["--keep", "sm_90", "--drop-ptx"],
    ),
    ("variants-sm_100.o", "variants.o", &["--keep", "sm_100"]),
    (
        "compress-all-sm_80.o",
        "compress-all.o",
        &["--keep", "sm_80"],
    ),
    ("speed-compute_90.o", "speed.o", &["--keep", "compute_90"]),
    ("concat-sm_90.o", "concat.o", &["--keep", "sm_90"]),
    ("libk-sm_100.a", "libk.a", &["--keep", "sm_100"]),
];

/// The fat binary containers of a listing: (offset, size).
fn containers(doc: &json::V) -> Vec<(u64, u64)> {
    json::nodes(doc)
        .into_iter()
        .filter(|n| n.get("type").str() == Some("fatbin"))
        .map(|n| (n.get("offset").num().unwrap(), n.get("size").num().unwrap()))
        .collect()
}

#[test]
fn thinned_files_are_what_cuobjdump_reads_and_nothing_else_moves() {
    let records = fixtures().join("thin");
    for (name, input, options) in THIN_CASES {
        let tmp = tempfile::tempdir().unwrap();
        let src = fixtures().join(input);
        let mut args = vec!["thin", "--keep-layout", "-o", name, src.to_str().unwrap()];
        args.extend_from_slice(options);
        let o = run_in(tmp.path(), &args);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        let out = tmp.path().join(name);
        // What cuobjdump listed and extracted from our output.
        let o = run_in(tmp.path(), &["ls", "--json", name]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        let after = json::parse(&text(&o.stdout));
        let recorded = fs::read_to_string(records.join(format!("{name}.list"))).unwrap();
        assert_eq!(
            cuobjdump::list_lines(name, &cuobjdump::entries(&after)),
            cuobjdump::recorded_lines(&recorded),
            "{name}"
        );
        let x = tmp.path().join("x");
        fs::create_dir(&x).unwrap();
        let o = run_in(&x, &["extract", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        let mut ours = BTreeMap::new();
        for f in fs::read_dir(&x).unwrap() {
            let f = f.unwrap();
            let n = f.file_name().to_string_lossy().into_owned();
            ours.insert(n, md5_hex(&fs::read(f.path()).unwrap()));
        }
        let recorded = fs::read_to_string(records.join(format!("{name}.md5"))).unwrap();
        assert_eq!(ours, md5_lines(&recorded), "{name}");
        // Every entry left is one of the input's, byte for byte.
        let before: Vec<String> =
            md5_lines(&fs::read_to_string(fixtures().join(format!("{input}.md5"))).unwrap())
                .into_values()
                .collect();
        for sum in ours.values() {
            assert!(before.contains(sum), "{name}: an entry changed");
        }
        // Containers stay where they were; outside them no byte changes;
        // what a container no longer uses is zero.
        let data = fs::read(&src).unwrap();
        let thinned = fs::read(&out).unwrap();
        assert_eq!(data.len(), thinned.len(), "{name}");
        let old = containers(&ls_json(input));
        let new = containers(&after);
        assert_eq!(old.len(), new.len(), "{name}");
        let mut pos = 0usize;
        for ((o_at, o_len), (n_at, n_len)) in old.iter().zip(&new) {
            assert_eq!(o_at, n_at, "{name}");
            assert!(n_len <= o_len, "{name}");
            let (at, used, end) = (
                *o_at as usize,
                (o_at + n_len) as usize,
                (o_at + o_len) as usize,
            );
            assert_eq!(
                data[pos..at],
                thinned[pos..at],
                "{name}: bytes outside moved"
            );
            assert!(thinned[used..end].iter().all(|&b| b == 0), "{name}");
            pos = end;
        }
        assert_eq!(data[pos..], thinned[pos..], "{name}");
        // Shrunk (the default) or not, the same entries, byte for byte.
        let shrunk = tmp.path().join("shrunk");
        fs::create_dir(&shrunk).unwrap();
        let mut args = vec!["thin", "-o", name, src.to_str().unwrap()];
        args.extend_from_slice(options);
        let o = run_in(&shrunk, &args);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        assert!(fs::read(shrunk.join(name)).unwrap().len() <= thinned.len());
        let x = shrunk.join("x");
        fs::create_dir(&x).unwrap();
        let o = run_in(&x, &["extract", shrunk.join(name).to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        let mut again = BTreeMap::new();
        for f in fs::read_dir(&x).unwrap() {
            let f = f.unwrap();
            let n = f.file_name().to_string_lossy().into_owned();
            again.insert(n, md5_hex(&fs::read(f.path()).unwrap()));
        }
        assert_eq!(again, ours, "{name}: shrunk");
    }
}

#[test]
fn thinning_reports_what_a_gpu_is_left_without_and_leaves_other_vendors_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixtures().join("compress-all.o");
    let dry = |more: &[&str]| {
        let mut args = vec!["thin", "--dry-run", src.to_str().unwrap()];
        args.extend_from_slice(more);
        run_in(tmp.path(), &args)
    };
    // sm_80 and sm_90 cubins, compute_80 PTX: an sm_75 GPU can use none
    // of it, and --keep sm_75 names nothing there: an error, nothing
    // written.
    let o = run_in(
        tmp.path(),
        &[
            "thin",
            "-o",
            "out.o",
            src.to_str().unwrap(),
            "--keep",
            "sm_75",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(!tmp.path().join("out.o").exists());
    // --keep sm_90a: nothing for it here, but sm_90 is spelt near.
    let o = dry(&["--keep", "sm_90a"]);
    assert_eq!(o.status.code(), Some(1));
    // --keep compute_80 keeps the PTX an 8.0 GPU compiles and no cubin;
    // --drop-ptx drops PTX only where kept cubins cover every GPU asked
    // for, so the PTX stays.
    let o = dry(&["--keep", "compute_80", "--drop-ptx"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    assert!(report.contains("would drop 2 of 3 entries"), "{report}");
    // An AMD keep on an NVIDIA file: the NVIDIA code is left alone, and
    // the report says so.
    let o = dry(&["--keep", "gfx90a"]);
    let report = text(&o.stdout);
    assert!(
        report.contains("NVIDIA device code left alone"),
        "{report}{}",
        text(&o.stderr)
    );
    // A 12.1 GPU runs the sm_121a cubin and compiles the compute_90 PTX
    // of variants.o; the other 6 entries go.
    let v = fixtures().join("variants.o");
    let o = run_in(
        tmp.path(),
        &["thin", "--dry-run", v.to_str().unwrap(), "--keep", "sm_121"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    has(&o.stdout, "would drop 6 of 8 entries");
}

#[test]
fn trees_are_thinned_file_by_file_links_kept_damage_skipped() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("venv");
    let lib = root.join("lib");
    let sub = lib.join("sub");
    fs::create_dir_all(&sub).unwrap();
    for f in ["libk.so", "variants.o"] {
        fs::copy(fixtures().join(f), lib.join(f)).unwrap();
    }
    fs::copy(fixtures().join("speed.o"), sub.join("speed.o")).unwrap();
    fs::hard_link(lib.join("libk.so"), sub.join("libk-again.so")).unwrap();
    std::os::unix::fs::symlink("../libk.so", sub.join("link.so")).unwrap();
    fs::write(lib.join("README"), "no device code").unwrap();
    // A cut object: damage, skipped.
    let plain = fs::read(fixtures().join("plain.o")).unwrap();
    fs::write(sub.join("cut.o"), &plain[..3000]).unwrap();
    let before = fs::read(lib.join("libk.so")).unwrap();
    let o = run_in(
        tmp.path(),
        &[
            "thin",
            "--keep",
            "sm_90",
            "--in-place",
            root.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    has(&o.stderr, "cut.o");
    let report = text(&o.stdout);
    assert!(
        report.contains("in all: 3 files with device code thinned"),
        "{report}"
    );
    assert!(report.contains("1 skipped"), "{report}");
    // The damaged file is untouched; the others are thinned once, and the
    // hard link names the thinned file; the symbolic link is a link still.
    assert_eq!(fs::read(sub.join("cut.o")).unwrap(), &plain[..3000]);
    let after = fs::read(lib.join("libk.so")).unwrap();
    assert_eq!(after.len(), before.len());
    assert_ne!(after, before);
    let a = fs::metadata(lib.join("libk.so")).unwrap();
    let b = fs::metadata(sub.join("libk-again.so")).unwrap();
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
    assert!(fs::symlink_metadata(sub.join("link.so"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read_to_string(lib.join("README")).unwrap(),
        "no device code"
    );
    // Listing the tree: only files with device code, none left for sm_80.
    let o = run_in(
        tmp.path(),
        &["ls", "--json", "--summary", root.to_str().unwrap()],
    );
    let doc = json::parse(&text(&o.stdout));
    let rows = doc.get("summary").get("rows").arr();
    assert!(rows
        .iter()
        .all(|r| r.get("arch").str() != Some("sm_80") || r.get("kind").str() == Some("ptx")));
    // -o and a directory do not go together.
    let o = run_in(
        tmp.path(),
        &["thin", "--keep", "sm_90", "-o", "x", root.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
}

/// In a tree, a file with nothing a `--keep`'d GPU can use (cuFFT's lone
/// sm_75 stub in a CUDA 13 install) is left as it is and said so, without
/// failing the run; a `--keep` that matches nothing in any file is an
/// error.
#[test]
fn tree_files_with_nothing_for_the_gpu_are_left_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    fs::create_dir_all(&root).unwrap();
    for f in ["compress-all.o", "rdc.o"] {
        fs::copy(fixtures().join(f), root.join(f)).unwrap();
    }
    let rdc = fs::read(root.join("rdc.o")).unwrap();
    let both = fs::read(root.join("compress-all.o")).unwrap();
    let thin_tree = |keep: &str| {
        run_in(
            tmp.path(),
            &["thin", "--keep", keep, "--in-place", root.to_str().unwrap()],
        )
    };
    // rdc.o holds one sm_90 cubin, which an sm_80 GPU cannot run.
    let o = thin_tree("sm_80");
    let report = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{report}{}", text(&o.stderr));
    assert!(
        report.contains(
            "rdc.o: left unchanged: nothing in it for --keep sm_80; targets present: sm_90"
        ),
        "{report}"
    );
    assert!(
        report.contains("in all: 1 files with device code thinned")
            && report.contains("1 left unchanged"),
        "{report}"
    );
    assert_eq!(fs::read(root.join("rdc.o")).unwrap(), rdc);
    let thinned = fs::read(root.join("compress-all.o")).unwrap();
    // An object shrinks.
    assert!(thinned.len() < both.len());
    // Again: nothing left to drop, so nothing is written (same inode, same
    // modification time).
    let md = |f: &str| {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(root.join(f)).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let stamp = md("compress-all.o");
    let o = thin_tree("sm_80");
    let report = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{report}");
    assert!(
        report.contains("in all: 0 files with device code thinned, 0 bytes freed, 1 with nothing to drop, 1 left unchanged"),
        "{report}"
    );
    assert_eq!(md("compress-all.o"), stamp);
    assert_eq!(fs::read(root.join("compress-all.o")).unwrap(), thinned);
    // Nothing anywhere for an sm_75 GPU: an error, every file as it was.
    fs::write(root.join("compress-all.o"), &both).unwrap();
    let o = thin_tree("sm_75");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    has(
        &o.stderr,
        "offload: error: --keep sm_75 matches no entry of any file under the inputs",
    );
    assert_eq!(fs::read(root.join("rdc.o")).unwrap(), rdc);
    assert_eq!(fs::read(root.join("compress-all.o")).unwrap(), both);
    // Named on the command line, such a file is still an error.
    let o = run_in(
        tmp.path(),
        &[
            "thin",
            "--keep",
            "sm_80",
            "--dry-run",
            root.join("rdc.o").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    has(&o.stderr, "--keep sm_80 matches no entry of");
}

#[test]
fn the_summary_counts_bytes_per_gpu_and_what_each_keep_frees() {
    let o = run_in(
        &fixtures(),
        &["ls", "--summary", "--json", "compress-all.o"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc = json::parse(&text(&o.stdout));
    assert_eq!(doc.get("schema_version").num(), Some(2));
    let s = doc.get("summary");
    assert_eq!(s.get("files").num(), Some(1));
    // Each row's bytes are its entries' sizes as listed.
    let entries = ls_json("compress-all.o");
    let listed = cuobjdump::entries(&entries);
    let stored: u64 = listed.iter().map(|e| e.get("size").num().unwrap()).sum();
    let decoded: u64 = listed
        .iter()
        .map(|e| e.get("uncompressed_size").num().unwrap())
        .sum();
    let rows = s.get("rows").arr();
    assert_eq!(rows.len(), 3);
    let sum = |f: &str| -> u64 { rows.iter().map(|r| r.get(f).num().unwrap()).sum() };
    assert_eq!(sum("stored_bytes"), stored);
    assert_eq!(sum("decoded_bytes"), decoded);
    // --keep sm_90 frees the sm_80 cubin; --keep sm_80 the sm_90 cubin
    // (the compute_80 PTX serves both): what thin --dry-run frees, the
    // cubin and its entry header.
    let keep = s.get("keep").arr();
    let frees = |gpu: &str| {
        keep.iter()
            .find(|k| k.get("gpu").str() == Some(gpu))
            .and_then(|k| k.get("frees_bytes").num())
    };
    let size_of = |arch: &str| {
        listed
            .iter()
            .find(|e| e.get("id").str() == Some(arch))
            .and_then(|e| e.get("size").num())
            .unwrap()
    };
    let thin_frees = |gpu: &str| -> u64 {
        let o = run_in(
            &fixtures(),
            &["thin", "--dry-run", "--keep", gpu, "compress-all.o"],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        let last = out.lines().last().unwrap();
        let at = last.find(" bytes would be freed").unwrap();
        last[..at].rsplit(' ').next().unwrap().parse().unwrap()
    };
    for (gpu, other) in [("sm_90", "sm_80.cubin"), ("sm_80", "sm_90.cubin")] {
        let freed = frees(gpu).unwrap();
        assert_eq!(freed, thin_frees(gpu), "{gpu}");
        assert!(
            freed > size_of(other) && freed < size_of(other) + 128,
            "{gpu}"
        );
    }
}

/// The damaged copies of these fixtures in the hostile corpus
/// (`tests/hostile/`, made by `cargo xtask hostile --write-corpus`).
fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/hostile")
        .join(name)
}

/// One byte of an entry header turns compress-all.o's only sm_90 cubin
/// into sm_75; its e_flags still say sm_90. That is damage: `ls` says
/// where (file, section, container, entry) and exits 1, and `thin --keep
/// sm_90` leaves the file as it is and exits 1 instead of dropping the
/// cubin; in a tree, that file is skipped and the others thinned.
#[test]
fn a_header_its_payload_contradicts_is_damage_and_thin_leaves_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let flipped = fs::read(hostile("nv-cubin-arch-flipped.o")).unwrap();
    fs::write(tmp.path().join("k.o"), &flipped).unwrap();
    let place = "k.o: .nv_fatbin: fatbin #0: at offset 3488: fat binary entry sm_75.cubin \
                 (ELF file 2): the entry header says a cubin for sm_75, but its cubin's e_flags \
                 say sm_90";
    let o = run_in(tmp.path(), &["ls", "--json", "k.o"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), format!("offload: error: {place}\n"));
    let doc = json::parse(&text(&o.stdout));
    let entries = cuobjdump::entries(&doc);
    let cubin = entries
        .iter()
        .find(|e| e.get("id").str() == Some("sm_75.cubin"))
        .expect("the entry, as its header names it");
    assert_eq!(cubin.get("payload").get("target").str(), Some("sm_90"));
    assert_eq!(
        cubin.get("payload").get("matches_entry"),
        &json::V::Bool(false)
    );
    // thin: nothing written, in place or elsewhere; the message names the
    // file, the container and the entry.
    for args in [
        &["thin", "--keep", "sm_90", "--in-place", "k.o"][..],
        &["thin", "--keep", "sm_90", "-o", "out.o", "k.o"][..],
    ] {
        let o = run_in(tmp.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let (_, detail) = place.split_once("k.o: ").unwrap();
        assert_eq!(
            text(&o.stderr),
            format!(
                "offload: error: k.o: not thinned, it holds damage ({detail}; \
                 `offload ls` lists all 1)\n"
            ),
            "{args:?}"
        );
        assert_eq!(fs::read(tmp.path().join("k.o")).unwrap(), flipped);
        assert!(!tmp.path().join("out.o").exists());
    }
    // The undamaged file keeps that cubin.
    let o = run_in(
        tmp.path(),
        &[
            "thin",
            "--keep",
            "sm_90",
            "-o",
            "good.o",
            fixtures().join("compress-all.o").to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run_in(tmp.path(), &["ls", "--format=llvm", "good.o"]);
    has(&o.stdout, "sm_90.cubin\t");
    // A tree: the damaged file skipped and left as it is, the other
    // thinned, exit 1.
    let tree = tmp.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("k.o"), &flipped).unwrap();
    fs::copy(fixtures().join("compress-all.o"), tree.join("ok.o")).unwrap();
    let o = run_in(
        tmp.path(),
        &["thin", "--keep", "sm_90", "--in-place", "tree"],
    );
    assert_eq!(o.status.code(), Some(1));
    has(
        &o.stderr,
        "tree/k.o: not thinned, it holds damage (.nv_fatbin: fatbin #0",
    );
    has(&o.stdout, "1 files with device code thinned");
    assert_eq!(fs::read(tree.join("k.o")).unwrap(), flipped);
    // With nothing in it for the --keep (no code an sm_52 GPU runs), the
    // damage still comes first: a real run checks the payloads its walk
    // left to the write before it calls the file left unchanged.
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("k.o"), &flipped).unwrap();
    let o = run_in(
        tmp.path(),
        &["thin", "--keep", "sm_52", "--in-place", "other"],
    );
    assert_eq!(o.status.code(), Some(1));
    has(
        &o.stderr,
        "other/k.o: not thinned, it holds damage (.nv_fatbin: fatbin #0",
    );
    assert!(
        !text(&o.stdout).contains("left unchanged"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(fs::read(other.join("k.o")).unwrap(), flipped);
    // Reading headers only (a summary, a dry run), a compressed payload
    // is not decoded, so this header is not checked there: the real run
    // is what refuses. A stored payload's first bytes are read even then.
    let o = run_in(tmp.path(), &["ls", "--summary", "k.o"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run_in(tmp.path(), &["thin", "--keep", "sm_90", "--dry-run", "k.o"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stored = hostile("nv-stored-cubin-arch-flipped.o");
    for args in [
        &["ls", "--summary"][..],
        &["thin", "--keep", "sm_90", "--dry-run"][..],
    ] {
        let mut args = args.to_vec();
        args.push(stored.to_str().unwrap());
        let o = run_in(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            text(&o.stderr).contains(
                "fat binary entry sm_75.cubin (ELF file 2): the entry header says a cubin \
                 for sm_75, but its cubin's e_flags say sm_90"
            ),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// The other header fields thin decides on: a kind no reader knows over a
/// cubin, a PTX header whose architecture its `.target` contradicts.
#[test]
fn kinds_and_ptx_targets_are_checked_too() {
    for (file, what) in [
        (
            "nv-cubin-kind-flipped.o",
            "fat binary entry sm_90.bin (entry 3 of the container): the entry header says an \
             unknown kind (3) for sm_90, but its payload reads as cubin (sm_90)",
        ),
        (
            "nv-ptx-arch-flipped.o",
            "fat binary entry sm_90.ptx (PTX file 1): the entry header says PTX for sm_90, \
             but its PTX says .target sm_80",
        ),
    ] {
        let o = run_in(&hostile(""), &["ls", file]);
        assert_eq!(o.status.code(), Some(1), "{file}");
        assert!(
            text(&o.stderr).contains(what),
            "{file}: {}",
            text(&o.stderr)
        );
    }
}

/// `ls --verify` decodes every compressed entry to its end: a bit changed
/// past what naming the payload decodes (LZ: 20 bytes before the end of a
/// 49 KB PTX; zstd: the last-block bit of a frame's one block) passes `ls`
/// and is damage to `ls --verify`, which finds none in the nvcc builds.
#[test]
fn ls_verify_decodes_every_stream_to_its_end() {
    for (file, what) in [
        (
            "nv-lz-flipped-deep.o",
            "nv-lz-flipped-deep.o: .nv_fatbin: fatbin #0: at offset 14664: fat binary entry \
             sm_80.ptx: the payload decodes to 49308 bytes, its entry records 49309 (decoded \
             to its end)",
        ),
        (
            "nv-zstd-flipped-past-head.o",
            "nv-zstd-flipped-past-head.o: .nv_fatbin: fatbin #0: at offset 3488: fat binary \
             entry sm_90.cubin: zstd: incomplete frame (decoded to its end)",
        ),
    ] {
        let o = run_in(&hostile(""), &["ls", file]);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
        let o = run_in(&hostile(""), &["ls", "--verify", file]);
        assert_eq!(o.status.code(), Some(1), "{file}");
        assert_eq!(
            text(&o.stderr),
            format!("offload: error: {what}\n"),
            "{file}"
        );
    }
    for file in BUILDS {
        let o = run_in(&fixtures(), &["ls", "--verify", file]);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
    }
}

/// The `.nv_fatbin` bytes of a fixture (one container each here).
fn nv_fatbin_section(name: &str) -> Vec<u8> {
    let data = fs::read(fixtures().join(name)).unwrap();
    let doc = ls_json(name);
    let (offset, size) = containers(&doc)[0];
    data[offset as usize..(offset + size) as usize].to_vec()
}

/// `thin` keeps most NVIDIA containers packed (a few numbers each, not a
/// model node) and a concatenated one as a node: in one fat binary, a
/// concatenated container between two plain ones is planned in its place
/// and thinned as it is alone, so that the file is the three thinned
/// apart, put together (a raw fat binary is rewritten in place).
#[test]
fn packed_and_unpacked_containers_are_thinned_in_the_files_order() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let plain = nv_fatbin_section("compress-all.o");
    let concat = nv_fatbin_section("concat.o");
    fs::write(d.join("plain.fatbin"), &plain).unwrap();
    fs::write(d.join("concat.fatbin"), &concat).unwrap();
    fs::write(d.join("mix.fatbin"), [&plain[..], &concat, &plain].concat()).unwrap();
    let thin = |name: &str| {
        let o = run_in(
            d,
            &["thin", "--keep", "sm_90", "--drop-ptx", "-o", "out", name],
        );
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        (text(&o.stdout), fs::read(d.join("out")).unwrap())
    };
    let (report, mix) = thin("mix.fatbin");
    let lines: Vec<&str> = report.lines().filter(|l| l.contains(" @ ")).collect();
    assert_eq!(lines.len(), 3, "{report}");
    for (line, want) in lines.iter().zip([
        "fatbin #0 @ 0x0: dropped 2 of 3 entries (sm_80.cubin, sm_80.ptx)",
        &format!(
            "fatbin #1 @ {:#x}: dropped 1 of 2 entries (sm_80.ptx)",
            plain.len()
        ),
        &format!(
            "fatbin #2 @ {:#x}: dropped 2 of 3 entries (sm_80.cubin, sm_80.ptx)",
            plain.len() + concat.len()
        ),
    ]) {
        assert!(line.contains(want), "{line} / {want}");
    }
    let (_, plain_out) = thin("plain.fatbin");
    let (_, concat_out) = thin("concat.fatbin");
    assert_ne!(plain_out, plain);
    assert_ne!(concat_out, concat);
    assert_eq!(mix, [&plain_out[..], &concat_out, &plain_out].concat());
}
