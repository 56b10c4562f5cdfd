//! `extract`, `thin` and `ls --summary` read the same typed facts and
//! give the same answers: `extract --target X` and `thin --keep X` select
//! the same entries for every spelling X of a table, over the fixtures;
//! and the bytes `ls --summary` says `thin --keep GPU` frees are the
//! bytes `thin --dry-run --keep GPU` reports, on AMD (compressed bundles
//! included), NVIDIA and mixed files, wheels and trees.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The JSON reader xtask's real-world checks use too.
#[path = "../../../xtask/src/json.rs"]
mod json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn offload(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offload"))
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Fixtures with AMD bundles (uncompressed, compressed) and NVIDIA fat
/// binaries.
const FILES: &[&str] = &[
    "offload/lib.so",
    "offload/libz3.so",
    "offload/rocm5.bundle",
    "thin/libhipz.so",
    "ccob/medium.v3.ccob",
    "nvidia/compress-all.o",
    "nvidia/variants.o",
    "nvidia/app",
    "nvidia/libk.so",
];

/// AMD and NVIDIA spellings of `--target` / `--keep`.
const SPELLINGS: &[&str] = &[
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx90a:xnack+",
    "gfx90a:xnack-",
    "gfx906:xnack+",
    "gfx906:xnack-",
    "gfx906:sramecc-",
    "gfx90a:sramecc+:xnack+",
    "gfx1030",
    "hipv4-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa--gfx908",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "sm_80",
    "sm_86",
    "sm_90",
    "sm_90a",
    "sm_100",
    "sm_100a",
    "sm_100f",
    "sm_103",
    "sm_120",
    "compute_80",
    "compute_90",
    "compute_100",
    "80",
    "90",
    "100",
];

/// Whether an entry of `ls --json` is device code for a GPU of `vendor`.
fn of_vendor(e: &json::V, vendor: &str) -> bool {
    let triple = e.get("triple").str().unwrap_or("");
    let target = e.get("target_id").str().unwrap_or("");
    match vendor {
        "AMD" => triple.starts_with("amdgcn") && !target.is_empty(),
        _ => triple.starts_with("nvptx"),
    }
}

/// The containers of a listing: index, name and entries.
fn containers(doc: &json::V) -> Vec<(u64, String, Vec<json::V>)> {
    json::nodes(doc)
        .into_iter()
        .filter_map(|n| {
            let k = n.get("index").num()?;
            let name = n.get("name").str().unwrap_or("").to_owned();
            Some((k, name, n.get("entries").arr().to_vec()))
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The IDs `extract --target X --bundle K` writes (from the names of the
/// files written: `<input>.<K>.<ID>`, or cuobjdump's `<stem>.<n>.<ID>`).
fn extracted(file: &Path, x: &str, k: u64) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let o = offload(&[
        "extract",
        "--target",
        x,
        "--bundle",
        &k.to_string(),
        "-d",
        tmp.path().to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    if !o.status.success() {
        assert_eq!(o.status.code(), Some(1), "{x} #{k}: {}", text(&o.stderr));
        return Vec::new();
    }
    let stem = file.file_name().unwrap().to_str().unwrap().to_owned();
    let names = text(&o.stdout);
    let ids = names
        .lines()
        .map(|l| {
            let name = Path::new(l)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            match name.strip_prefix(&format!("{stem}.{k}.")) {
                Some(id) => id.to_owned(),
                // cuobjdump's name: stem, number, then the ID.
                None => name.splitn(3, '.').nth(2).unwrap().to_owned(),
            }
        })
        .collect();
    sorted(ids)
}

/// What `thin --dry-run --keep X` says of each container: the IDs it
/// would drop, or `None` where it leaves the container alone.
fn thin_report(file: &Path, x: &str) -> (Option<i32>, BTreeMap<String, Option<Vec<String>>>) {
    let o = offload(&["thin", "--dry-run", "--keep", x, file.to_str().unwrap()]);
    let mut out = BTreeMap::new();
    for line in text(&o.stdout).lines() {
        let line = line.trim_start();
        if let Some((name, rest)) = line.split_once(" @ 0x") {
            if let Some(ids) = rest.split_once(" entries (").map(|(_, r)| r) {
                let ids = ids.split_once("),").unwrap().0;
                let ids = ids.split(", ").map(str::to_owned).collect();
                out.insert(name.to_owned(), Some(sorted(ids)));
            }
        } else if let Some((name, _)) = line.split_once(": left alone") {
            out.insert(name.to_owned(), None);
        }
    }
    (o.status.code(), out)
}

#[test]
fn extract_target_and_thin_keep_select_the_same_entries() {
    let mut compared = 0;
    for f in FILES {
        let file = fixture(f);
        let ls = offload(&["ls", "--json", file.to_str().unwrap()]);
        assert!(ls.status.success(), "{f}");
        let doc = json::parse(&text(&ls.stdout));
        let all = containers(&doc);
        for x in SPELLINGS {
            let vendor = if x.contains("gfx") { "AMD" } else { "NVIDIA" };
            let theirs: Vec<_> = all
                .iter()
                .filter(|(_, _, es)| es.iter().any(|e| of_vendor(e, vendor)))
                .collect();
            if theirs.is_empty() {
                // thin leaves another vendor's code alone; nothing to
                // compare.
                continue;
            }
            let (status, report) = thin_report(&file, x);
            let whole = offload(&[
                "extract",
                "--target",
                x,
                "-o",
                "/dev/null",
                file.to_str().unwrap(),
            ]);
            let none = text(&whole.stderr).contains("matches no entry");
            if none {
                // Neither selects anything: both say so, exit 1.
                assert_eq!(
                    status,
                    Some(1),
                    "{f} {x}: thin --keep takes what extract does not"
                );
                continue;
            }
            assert_eq!(
                status,
                Some(0),
                "{f} {x}: extract selects, thin --keep fails"
            );
            for (k, name, entries) in theirs {
                let Some(dropped) = report.get(name).cloned().unwrap_or(Some(Vec::new())) else {
                    continue;
                };
                let mut kept: Vec<String> = entries
                    .iter()
                    .filter(|e| of_vendor(e, vendor))
                    .map(|e| e.get("id").str().unwrap().to_owned())
                    .collect();
                for d in &dropped {
                    let at = kept
                        .iter()
                        .position(|k| k == d)
                        .expect("a dropped ID is listed");
                    kept.remove(at);
                }
                let selected = extracted(&file, x, *k);
                assert_eq!(selected, sorted(kept), "{f}, {name}, --target/--keep {x}");
                compared += 1;
            }
        }
    }
    // The table did compare: containers of both vendors, many spellings.
    assert!(compared > 100, "{compared}");
}

/// The last `N bytes would be freed` of a dry run's report.
fn freed(out: &str) -> u64 {
    let last = out
        .lines()
        .rev()
        .find(|l| l.contains(" bytes would be freed"))
        .unwrap_or_else(|| panic!("no total in:\n{out}"));
    let at = last.find(" bytes would be freed").unwrap();
    last[..at].rsplit(' ').next().unwrap().parse().unwrap()
}

/// `ls --summary --json` of `inputs`: rows' (stored, decoded) totals and
/// each GPU's figures (bytes freed, the files' size after).
fn summary(inputs: &[&str]) -> (u64, u64, Vec<(String, u64, u64)>) {
    let mut args = vec!["ls", "--summary", "--json"];
    args.extend(inputs);
    let o = offload(&args);
    assert!(o.status.success(), "{inputs:?}: {}", text(&o.stderr));
    let doc = json::parse(&text(&o.stdout));
    let s = doc.get("summary");
    let rows = s.get("rows").arr();
    let sum = |f: &str| rows.iter().map(|r| r.get(f).num().unwrap()).sum();
    let keep = s
        .get("keep")
        .arr()
        .iter()
        .map(|k| {
            (
                k.get("gpu").str().unwrap().to_owned(),
                k.get("frees_bytes").num().unwrap(),
                k.get("files_bytes_after").num().unwrap(),
            )
        })
        .collect();
    (sum("stored_bytes"), sum("decoded_bytes"), keep)
}

/// Libraries and objects of both vendors whose summaries are checked
/// against thin (the last, nvcc's libk.so, only by size).
const SUMMED: [&str; 6] = [
    "offload/lib.so",
    "offload/libz3.so",
    "thin/libhipz.so",
    "nvidia/compress-all.o",
    "nvidia/variants.o",
    "nvidia/libk.so",
];

#[test]
fn the_summary_promises_what_thin_frees() {
    let tree = tempfile::tempdir().unwrap();
    for f in SUMMED[..5]
        .iter()
        .chain(["wheel/demo-1.0-py3-none-any.whl"].iter())
    {
        let name = f.replace('/', "-");
        fs::copy(fixture(f), tree.path().join(name)).unwrap();
    }
    fs::write(tree.path().join("README.txt"), "no device code").unwrap();
    let tree_path = tree.path().to_str().unwrap().to_owned();
    let sets: Vec<Vec<String>> = [
        "offload/lib.so",
        "offload/libz3.so",
        "thin/libhipz.so",
        "ccob/medium.v3.ccob",
        "nvidia/compress-all.o",
        "nvidia/variants.o",
        "nvidia/libk.so",
        "wheel/demo-1.0-py3-none-any.whl",
    ]
    .iter()
    .map(|f| vec![fixture(f).to_str().unwrap().to_owned()])
    .chain([vec![tree_path]])
    .collect();
    let mut checked = 0;
    for inputs in &sets {
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let (stored, decoded, keep) = summary(&inputs);
        assert!(stored <= decoded, "{inputs:?}");
        assert!(!keep.is_empty(), "{inputs:?}");
        for (gpu, frees, _) in keep {
            let mut args = vec!["thin", "--dry-run", "--keep", &gpu];
            args.extend(&inputs);
            let o = offload(&args);
            assert!(o.status.success(), "{inputs:?} {gpu}: {}", text(&o.stderr));
            assert_eq!(frees, freed(&text(&o.stdout)), "{inputs:?}: --keep {gpu}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}

/// A compressed bundle's entries count by the bytes they take in the
/// file: the summary's stored bytes are the CCOB's, not its decoded size.
#[test]
fn compressed_bundles_count_by_their_stored_size() {
    let file = fixture("ccob/medium.v3.ccob");
    let len = fs::metadata(&file).unwrap().len();
    let (stored, decoded, _) = summary(&[file.to_str().unwrap()]);
    assert!(stored <= len, "{stored} > {len}");
    assert!(stored > len * 9 / 10, "{stored} of {len}");
    assert!(decoded > 3 * len, "{decoded}");
}

/// The summary's size after thinning is the size `thin` writes: for each
/// GPU, a library or object thinned with `-o` is exactly as long as
/// `files_bytes_after` says (shrunk where it can be, else its old size).
#[test]
fn the_summary_states_the_size_thin_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut shrunk = 0;
    for f in SUMMED {
        let file = fixture(f);
        let len = fs::metadata(&file).unwrap().len();
        let (_, _, keep) = summary(&[file.to_str().unwrap()]);
        for (gpu, _, after) in keep {
            let out = dir.path().join("out");
            let _ = fs::remove_file(&out);
            let o = offload(&[
                "thin",
                "--keep",
                &gpu,
                "-o",
                out.to_str().unwrap(),
                file.to_str().unwrap(),
            ]);
            let written = if o.status.success() {
                fs::metadata(&out).unwrap().len()
            } else {
                // Nothing for that GPU to drop or keep: nothing written,
                // the file stays as it is.
                assert!(!out.exists(), "{f} {gpu}");
                len
            };
            assert_eq!(after, written, "{f}: --keep {gpu}: {}", text(&o.stderr));
            if written < len {
                shrunk += 1;
            }
        }
    }
    assert!(shrunk > 0, "no fixture shrank");
}
