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
use std::process::{Command, Output};

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
    Command::new(env!("CARGO_BIN_EXE_offload"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run offload")
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
    // sm_120a, sm_121a cubins; compute_100a and compute_90 PTX.
    assert_eq!(selected("variants.o", "sm_90"), ["variants.1.sm_90a.cubin"]);
    assert_eq!(
        selected("variants.o", "sm_90a"),
        ["variants.1.sm_90a.cubin"]
    );
    // A 10.3 GPU runs the sm_100f cubin and the sm_103a one, not sm_100a.
    assert_eq!(
        selected("variants.o", "sm_103"),
        ["variants.3.sm_100.cubin", "variants.4.sm_103a.cubin"]
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
            "sm_90",
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
