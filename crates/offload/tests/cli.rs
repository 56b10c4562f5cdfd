//! `offload ls` and `offload extract` on inputs built by clang-22
//! (tests/fixtures/offload, made by its make.sh), checked against what LLVM
//! 22 recorded there: `llvm-readobj-22 --offloading` lines, and
//! `clang-offload-bundler-22 -list` of every bundle cut out of the
//! libraries. Damaged copies are made here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/offload")
}

/// Runs the tool in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_offload");
    test_support::tool(exe, dir).args(args).output().unwrap()
}

fn run(args: &[&str]) -> Output {
    run_in(&fixtures(), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The JSON reader xtask's real-world checks use too.
#[path = "../../../xtask/src/json.rs"]
mod json;

/// Every entry of a JSON listing, depth first, with the index of the
/// container holding it.
fn entries(doc: &json::V) -> Vec<(Option<u64>, json::V)> {
    let mut out = Vec::new();
    for n in json::nodes(doc) {
        for e in n.get("entries").arr() {
            out.push((n.get("index").num(), e.clone()));
        }
    }
    out
}

fn ls_json(args: &[&str]) -> json::V {
    let mut a = vec!["ls", "--json"];
    a.extend_from_slice(args);
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json::parse(&stdout(&o));
    assert_eq!(doc.get("schema_version").num(), Some(2));
    doc
}

/// Where LLVM 22 is right (uncompressed bundles), `--format=llvm` prints
/// exactly its lines.
#[test]
fn llvm_lines_equal_llvm_readobj() {
    for f in ["hip.o", "lib.so"] {
        let o = run(&["ls", "--format=llvm", f]);
        assert!(o.status.success(), "{}", stderr(&o));
        let want = fs::read_to_string(fixtures().join(format!("{f}.readobj"))).unwrap();
        assert_eq!(stdout(&o), want, "{f}");
    }
}

/// Every bundle of the libraries, as LLVM lists it cut out on its own,
/// is what we list, bundle by bundle; compressed (v2, v3) and not.
#[test]
fn bundles_match_the_bundler_listing_of_each_bundle_cut_out() {
    for lib in ["lib.so", "libz2.so", "libz3.so"] {
        let doc = ls_json(&[lib]);
        let mut ours: Vec<String> = entries(&doc)
            .iter()
            .map(|(k, e)| format!("{}\t{}", k.unwrap(), e.get("id").str().unwrap()))
            .collect();
        ours.sort();
        let mut want: Vec<String> = fs::read_to_string(fixtures().join(format!("{lib}.list")))
            .unwrap()
            .lines()
            .map(|l| l.split('\t').take(2).collect::<Vec<_>>().join("\t"))
            .collect();
        want.sort();
        assert_eq!(ours, want, "{lib}");
    }
}

/// The payload of every uncompressed entry names the target its ID names
/// (the code object's e_flags agree with the entry ID).
#[test]
fn code_objects_agree_with_their_ids() {
    let doc = ls_json(&[
        "hip.o",
        "lib.so",
        "gnu.a",
        "bsd.a",
        "thin.a",
        "coff.o",
        "rocm5.bundle",
    ]);
    let mut checked = 0;
    for (_, e) in entries(&doc) {
        let id = e.get("id").str().unwrap().to_owned();
        if id.starts_with("hipv4-") {
            assert_eq!(
                e.get("payload").get("type").str(),
                Some("amdgpu-code-object"),
                "{id}"
            );
            assert_eq!(
                e.get("payload").get("matches_entry"),
                &json::V::Bool(true),
                "{id}"
            );
            let target = e.get("payload").get("target").str().unwrap();
            assert!(id.ends_with(&format!("--{target}")), "{id} vs {target}");
            checked += 1;
        }
    }
    assert!(checked >= 14, "{checked}");
}

/// Extracting everything gives, entry by entry, the bytes LLVM's bundler
/// unbundles from each bundle cut out of the library (compressed v2, v3
/// and uncompressed).
#[test]
fn extracted_entries_equal_the_bundler_unbundling() {
    use md5::{Digest, Md5};
    let tmp = tempfile::tempdir().unwrap();
    for lib in ["lib.so", "libz2.so", "libz3.so"] {
        let out = tmp.path().join(lib);
        fs::create_dir(&out).unwrap();
        let o = run(&["extract", "-d", out.to_str().unwrap(), lib]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).lines().count(), 6, "{}", stdout(&o));
        let list = fs::read_to_string(fixtures().join(format!("{lib}.list"))).unwrap();
        for line in list.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let got = fs::read(out.join(format!("{lib}.{}.{}", f[0], f[1]))).unwrap();
            assert_eq!(got.len().to_string(), f[2], "{lib}: {line}");
            let md5: String = Md5::digest(&got)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(md5, f[3], "{lib}: {line}");
        }
    }
}

/// The payloads inside CCOBs are named from their first bytes (decoded no
/// further than the last entry's); `--verify` decompresses whole CCOBs and
/// checks their hashes too.
#[test]
fn compressed_payloads_are_named_and_verify_checks_hashes() {
    for args in [
        &["libz2.so", "libz3.so"][..],
        &["--verify", "libz2.so", "libz3.so"],
    ] {
        let doc = ls_json(args);
        let mut named = 0;
        for (_, e) in entries(&doc) {
            assert_eq!(
                e.get("location").get("type").str(),
                Some("compressed-bundle")
            );
            if e.get("kind").str() == Some("hipv4") {
                assert_eq!(
                    e.get("payload").get("type").str(),
                    Some("amdgpu-code-object"),
                    "{args:?}"
                );
                assert_eq!(e.get("payload").get("matches_entry"), &json::V::Bool(true));
                named += 1;
            } else {
                assert_eq!(e.get("payload").get("type").str(), Some("empty"));
            }
        }
        assert_eq!(named, 8, "{args:?}");
    }
    // A wrong stored hash: only --verify sees it.
    let tmp = tempfile::tempdir().unwrap();
    let mut lib = fs::read(fixtures().join("libz3.so")).unwrap();
    lib[0x3000 + 24] ^= 1;
    fs::write(tmp.path().join("h.so"), &lib).unwrap();
    assert!(run_in(tmp.path(), &["ls", "h.so"]).status.success());
    let o = run_in(tmp.path(), &["ls", "--verify", "h.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("hash mismatch"), "{}", stderr(&o));
    // extract checks the hash too, and then writes nothing.
    let o = run_in(tmp.path(), &["extract", "h.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("hash mismatch"), "{}", stderr(&o));
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
}

/// A container inside a compressed bundle is opened and listed as one
/// inside an uncompressed bundle is, and its entries can be extracted.
#[test]
fn containers_inside_compressed_bundles_are_opened() {
    use offload_format::{bundle, ccob};
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&[
        "extract",
        "-o",
        "-",
        "--target",
        "hipv4-amdgcn-amd-amdhsa--gfx906",
        "hip.o",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let code = o.stdout;
    let mut inner = Vec::new();
    bundle::write(
        &mut inner,
        &[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx906", &code),
        ],
        4096,
    )
    .unwrap();
    let mut outer = Vec::new();
    bundle::write(
        &mut outer,
        &[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx908", &inner),
        ],
        4096,
    )
    .unwrap();
    let c = ccob::compress(&outer, &ccob::CompressOptions::default()).unwrap();
    fs::write(tmp.path().join("n.ccob"), &c.bytes).unwrap();
    let o = run_in(tmp.path(), &["ls", "--json", "n.ccob"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = entries(&json::parse(&stdout(&o)));
    let ids: Vec<(&str, Option<&str>)> = all
        .iter()
        .map(|(_, e)| {
            (
                e.get("id").str().unwrap(),
                e.get("payload").get("type").str(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("host-x86_64-unknown-linux-gnu-", Some("empty")),
            ("hipv4-amdgcn-amd-amdhsa--gfx908", Some("offload-bundle")),
            ("host-x86_64-unknown-linux-gnu-", Some("empty")),
            (
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                Some("amdgpu-code-object")
            ),
        ]
    );
    assert_eq!(
        all[3].1.get("payload").get("matches_entry"),
        &json::V::Bool(true)
    );
    let o = run_in(
        tmp.path(),
        &["extract", "--target", "gfx906", "-o", "k.co", "n.ccob"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fs::read(tmp.path().join("k.co")).unwrap(), code);
}

/// A compressed bundle whose last entry starts far in is not decoded that
/// far to name the payloads (memory would grow with it); `--verify` names
/// them.
#[test]
fn payloads_deep_in_a_compressed_bundle_are_named_by_verify_only() {
    use offload_format::{bundle, ccob};
    let tmp = tempfile::tempdir().unwrap();
    let big = vec![0u8; 33 << 20];
    let mut b = Vec::new();
    bundle::write(
        &mut b,
        &[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx906", &big),
            (b"hipv4-amdgcn-amd-amdhsa--gfx908", b"\x7fELF"),
        ],
        4096,
    )
    .unwrap();
    let c = ccob::compress(&b, &ccob::CompressOptions::default()).unwrap();
    fs::write(tmp.path().join("deep.ccob"), &c.bytes).unwrap();
    let o = run_in(tmp.path(), &["ls", "--json", "deep.ccob"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("payloads not named: the last starts 33 MiB"),
        "{out}"
    );
    let all = entries(&json::parse(&out));
    assert_eq!(all.len(), 3);
    assert!(all
        .iter()
        .all(|(_, e)| e.get("payload").get("type") == &json::V::Null));
    let o = run_in(tmp.path(), &["ls", "--json", "--verify", "deep.ccob"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = entries(&json::parse(&stdout(&o)));
    assert!(all
        .iter()
        .all(|(_, e)| e.get("payload").get("type").str().is_some()));
}

/// A `--target` naming a GPU set up in a way none of its entries runs on
/// (xnack off, where every gfx90a entry is built with xnack+) selects
/// nothing, and the message says what is there.
#[test]
fn a_target_selecting_nothing_names_what_is_there() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let o = run(&["extract", "-d", d, "--target", "gfx90a:xnack-", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("error: --target gfx90a:xnack- matches no entry of lib.so\n"),
        "{err}"
    );
    assert!(
        err.contains(
            "note: --target gfx90a:xnack-: no gfx90a entry runs with those settings; \
             gfx90a:xnack+ is present"
        ),
        "{err}"
    );
    assert!(
        err.contains("note: targets present: gfx906, gfx90a:xnack+"),
        "{err}"
    );
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    // With another request that selects something: still an error (a
    // typo must not pass), and nothing is written.
    let o = run(&[
        "extract",
        "-d",
        d,
        "--target",
        "gfx90a:xnack-",
        "--target",
        "gfx906",
        "lib.so",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("note: --target gfx90a:xnack-: no gfx90a entry runs"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    // No feature hint for a processor the file has nothing for; the
    // nearest spelling present instead.
    let o = run(&["extract", "-d", d, "--target", "gfx1100", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("no entry for"), "{}", stderr(&o));
    let o = run(&["extract", "-d", d, "--target", "gfx9066", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "error: --target gfx9066: not an AMD GPU: unknown processor 'gfx9066' (did you mean gfx906?)"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn target_selection_takes_what_runs_on_the_gpu() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    // An entry runs on a GPU set up as the value says: the features the
    // value gives are set alike or not at all in the entry.
    let o = run(&["extract", "-d", d, "--target", "gfx90a:xnack+", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "lib.so.0.hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "lib.so.1.hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"
        ]
    );
    // A bare processor: its entries, whatever their settings.
    let o = run(&["extract", "-d", d, "--target", "gfx90a", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    // An entry built without xnack runs with xnack on (gfx906).
    let o = run(&[
        "extract",
        "-d",
        d,
        "--target",
        "gfx906:xnack+",
        "--kind",
        "hip",
        "hip.o",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
    // A whole entry ID, hip for hipv4, in the old spelling's bundle.
    let o = run(&[
        "extract",
        "-o",
        "-",
        "--target",
        "hip-amdgcn-amd-amdhsa--gfx906",
        "rocm5.bundle",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.starts_with(b"\x7fELF"));
    // The host entry of the ROCm 5 bundle, by kind.
    let o = run(&["extract", "-d", d, "--kind", "host", "rocm5.bundle"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("rocm5.bundle.0.host-x86_64-unknown-linux"));
}

#[test]
fn one_output_means_one_entry_and_nothing_is_written_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("k.co");
    fs::write(&out, b"keep").unwrap();
    let o = run(&[
        "extract",
        "-o",
        out.to_str().unwrap(),
        "--target",
        "gfx906",
        "lib.so",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("-o writes one entry, but 2 are selected"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(&out).unwrap(), b"keep");
    // A failing output among several: none is written.
    let dir = tmp.path().join("d");
    fs::create_dir(&dir).unwrap();
    fs::create_dir(dir.join("lib.so.1.hipv4-amdgcn-amd-amdhsa--gfx906")).unwrap();
    let o = run(&["extract", "-d", dir.to_str().unwrap(), "lib.so"]);
    assert!(!o.status.success());
    let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "outputs left behind: {left:?}");
}

#[test]
fn old_rocm_spellings_are_shown_with_their_standard_form() {
    let doc = ls_json(&["rocm5.bundle"]);
    let e = entries(&doc);
    let host = &e[0].1;
    assert_eq!(host.get("id").str(), Some("host-x86_64-unknown-linux"));
    assert_eq!(host.get("kind").str(), Some("host"));
    assert_eq!(host.get("triple").str(), Some("x86_64-unknown-linux"));
    assert_eq!(
        host.get("note").str(),
        Some("three-part triple (ROCm 5 spelling)")
    );
    assert!(host.get("standardised_id").str().is_some());
    let dev = &e[1].1;
    assert_eq!(dev.get("target_id").str(), Some("gfx906"));
    assert_eq!(
        dev.get("location").get("uri").str(),
        Some("file://rocm5.bundle#offset=4096&size=3408")
    );
}

#[test]
fn archives_objects_and_offload_binaries() {
    for a in ["gnu.a", "bsd.a", "thin.a"] {
        let doc = ls_json(&[a]);
        let ids: Vec<String> = entries(&doc)
            .iter()
            .map(|(_, e)| e.get("id").str().unwrap().to_owned())
            .collect();
        assert_eq!(ids.len(), 6, "{a}: {ids:?}");
        assert!(
            ids.contains(&"hip-amdgcn-amd-amdhsa--gfx90a:xnack+".to_owned()),
            "{a}"
        );
        let members: Vec<&str> = doc.get("files").arr()[0]
            .get("children")
            .arr()
            .iter()
            .map(|m| m.get("name").str().unwrap())
            .collect();
        assert_eq!(members, ["hip.o", "rdc.o"], "{a}");
    }
    // GNU archive offsets point into the archive file: the entry's bytes
    // there are the member's entry.
    let doc = ls_json(&["gnu.a", "hip.o"]);
    let all = entries(&doc);
    let in_archive = all
        .iter()
        .find(|(_, e)| e.get("id").str() == Some("hipv4-amdgcn-amd-amdhsa--gfx906"))
        .unwrap();
    let in_object = all
        .iter()
        .rev()
        .find(|(_, e)| e.get("id").str() == Some("hipv4-amdgcn-amd-amdhsa--gfx906"))
        .unwrap();
    let bytes = |file: &str, e: &json::V| {
        let d = fs::read(fixtures().join(file)).unwrap();
        let o = e.get("location").get("offset").num().unwrap() as usize;
        let s = e.get("size").num().unwrap() as usize;
        d[o..o + s].to_vec()
    };
    assert_eq!(bytes("gnu.a", &in_archive.1), bytes("hip.o", &in_object.1));
    // OpenMP: an offload binary in .llvm.offloading, with a host ELF image.
    let doc = ls_json(&["omp.o"]);
    let e = entries(&doc);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].1.get("kind").str(), Some("openmp"));
    assert_eq!(e[0].1.get("triple").str(), Some("x86_64-pc-linux-gnu"));
    assert_eq!(e[0].1.get("payload").get("type").str(), Some("elf"));
    // COFF: .hip_fatbin there too.
    let doc = ls_json(&["coff.o"]);
    assert_eq!(entries(&doc).len(), 2);
}

/// Damage is reported at its place; everything else is still listed, and
/// the exit status is 1.
#[test]
fn damage_is_reported_where_it_is_and_the_rest_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = fs::read(fixtures().join("libz3.so")).unwrap();
    // The first CCOB of .hip_fatbin is at 0x3000 (see `offload ls`): give
    // it an unknown version.
    assert_eq!(&lib[0x3000..0x3004], b"CCOB");
    let mut bad = lib.clone();
    bad[0x3004] = 9;
    fs::write(tmp.path().join("bad.so"), &bad).unwrap();
    let o = run_in(tmp.path(), &["ls", "--json", "bad.so"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("bad.so: .hip_fatbin: at offset 12288:"),
        "{err}"
    );
    let doc = json::parse(&stdout(&o));
    assert_eq!(entries(&doc).len(), 3, "the second bundle is still listed");
    // Damaged compressed payload: the bundle's entries cannot be read, the
    // other bundle's can; extract of the readable one works.
    let mut bad = lib.clone();
    for b in &mut bad[0x3000 + 40..0x3000 + 200] {
        *b ^= 0x5a;
    }
    fs::write(tmp.path().join("bad2.so"), &bad).unwrap();
    let o = run_in(tmp.path(), &["ls", "bad2.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("compressed bundle"), "{}", stderr(&o));
    assert!(stdout(&o).contains("bundle #1"));
    // A section name table that does not exist fails every section's
    // name alike: one report, not one per section.
    let mut bad = fs::read(fixtures().join("hip.o")).unwrap();
    bad[62..64].copy_from_slice(&0xfff0u16.to_le_bytes());
    fs::write(tmp.path().join("bad3.o"), &bad).unwrap();
    let o = run_in(tmp.path(), &["ls", "bad3.o"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert_eq!(out.matches("DAMAGE").count(), 1, "{out}");
    assert!(
        out.contains("section header string table index 65520 does not exist"),
        "{out}"
    );
    // Cut short anywhere: never a panic, always a listing.
    for cut in (0..lib.len()).step_by(997) {
        fs::write(tmp.path().join("cut.so"), &lib[..cut]).unwrap();
        let o = run_in(tmp.path(), &["ls", "cut.so"]);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "cut {cut}"
        );
        assert!(!stderr(&o).contains("panicked"), "cut {cut}");
    }
}

/// hip.o's `.hip_fatbin` in Mach-O (clang-22 does not offload for Mach-O
/// targets; make.sh places it with the assembler): an x86_64 object and a
/// universal file of x86_64 and arm64. Every entry reads the same bytes as
/// hip.o's, at the offset the listing gives.
#[test]
fn mach_o_objects_and_universal_files() {
    let entry_bytes = |file: &str| -> Vec<(String, Vec<u8>)> {
        let data = fs::read(fixtures().join(file)).unwrap();
        entries(&ls_json(&[file]))
            .into_iter()
            .map(|(_, e)| {
                let loc = e.get("location");
                let at = loc.get("offset").num().unwrap() as usize;
                let size = loc.get("size").num().unwrap() as usize;
                (
                    e.get("id").str().unwrap().to_owned(),
                    data[at..at + size].to_vec(),
                )
            })
            .collect()
    };
    let elf = entry_bytes("hip.o");
    assert_eq!(elf.len(), 3);
    assert_eq!(entry_bytes("macho.o"), elf);
    let both = entry_bytes("macho-universal.o");
    assert_eq!(both.len(), 6);
    assert_eq!(both[..3], elf[..]);
    assert_eq!(both[3..], elf[..]);
    let doc = ls_json(&["macho-universal.o"]);
    let slices: Vec<_> = doc.get("files").arr()[0]
        .get("children")
        .arr()
        .iter()
        .map(|c| (c.get("type").str(), c.get("name").str()))
        .collect();
    assert_eq!(
        slices,
        [
            (Some("slice"), Some("x86_64")),
            (Some("slice"), Some("arm64"))
        ]
    );
    let o = run(&["ls", "--format=llvm", "macho.o"]);
    assert_eq!(
        stdout(&o).lines().next(),
        Some("host-x86_64-unknown-linux-gnu-\tfile://macho.o#offset=4384&size=0")
    );
    // A slice past the end of the file is damage, named.
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = fs::read(fixtures().join("macho-universal.o")).unwrap();
    bad[8 + 20 + 8..8 + 20 + 12].copy_from_slice(&0x7fff_0000u32.to_be_bytes());
    fs::write(tmp.path().join("bad.o"), &bad).unwrap();
    let o = run_in(tmp.path(), &["ls", "bad.o"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.o"), "{}", stderr(&o));
    assert!(stdout(&o).contains("x86_64"), "{}", stdout(&o));
}

/// DPC++'s SYCL bundles (as in Intel GPU builds of PyTorch extensions):
/// `__CLANG_OFFLOAD_BUNDLE__sycl-spir64` sections whose IDs name the
/// architecture only, holding zstd-compressed images.
#[test]
fn sycl_sections_of_dpcpp() {
    let tmp = tempfile::tempdir().unwrap();
    let host =
        fs::read(fixtures().join("../object_bundle/fat-x86_64-unknown-linux-gnu.o")).unwrap();
    // zstd frames of an archive (ahead-of-time images) and of a SPIR-V
    // module.
    let gen: &[u8] = &zstd::bulk::compress(b"!<arch>\npad_0/  ", 3).unwrap();
    let spirv: &[u8] = &zstd::bulk::compress(&[3, 2, 0x23, 7, 0, 1, 0, 0], 3).unwrap();
    let obj = offload_format::object_bundle::add_bundle_sections(
        &host,
        &[("sycl-spir64_gen", gen), ("sycl-spir64", spirv)],
    )
    .unwrap();
    fs::write(tmp.path().join("xpu.o"), &obj).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_offload"))
        .args(["ls", "--json", "xpu.o"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json::parse(&stdout(&o));
    let e: Vec<_> = entries(&doc)
        .into_iter()
        .filter(|(_, e)| e.get("kind").str() == Some("sycl"))
        .collect();
    assert_eq!(e.len(), 2);
    for ((_, entry), (id, triple)) in e
        .iter()
        .zip([("sycl-spir64_gen", "spir64_gen"), ("sycl-spir64", "spir64")])
    {
        assert_eq!(entry.get("id").str(), Some(id));
        assert_eq!(entry.get("kind").str(), Some("sycl"));
        assert_eq!(entry.get("triple").str(), Some(triple));
        assert_eq!(entry.get("payload").get("type").str(), Some("zstd-frame"));
        let inner = if triple == "spir64" {
            "spirv"
        } else {
            "archive"
        };
        assert_eq!(
            entry
                .get("note")
                .str()
                .map(|n| n.ends_with(&format!("a zstd frame holding: {inner}"))),
            Some(true),
            "{id}"
        );
        // LLVM 22 has no spelling for the sycl kind.
        assert_eq!(entry.get("standardised_id").str(), None);
    }
    // Selected by architecture, by kind and architecture, or all of a kind;
    // the output directory is made.
    for (target, want) in [
        ("spir64", vec![spirv]),
        ("sycl-spir64", vec![spirv]),
        ("spir64_gen", vec![gen]),
        ("sycl-spir64_gen", vec![gen]),
    ] {
        let dir = tmp.path().join("out").join(target);
        let o = Command::new(env!("CARGO_BIN_EXE_offload"))
            .args(["extract", "--target", target, "-d"])
            .arg(&dir)
            .arg(tmp.path().join("xpu.o"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{target}: {}", stderr(&o));
        let mut got: Vec<Vec<u8>> = fs::read_dir(&dir)
            .unwrap()
            .map(|f| fs::read(f.unwrap().path()).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, want, "{target}");
    }
    // Nothing selected: no directory is left behind.
    let dir = tmp.path().join("none/deeper");
    let o = Command::new(env!("CARGO_BIN_EXE_offload"))
        .args(["extract", "--target", "spir32", "-d"])
        .arg(&dir)
        .arg(tmp.path().join("xpu.o"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!tmp.path().join("none").exists());
}

#[test]
fn unreadable_input_is_an_error_naming_it() {
    let o = run(&["ls", "no-such-file"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("offload: error: no-such-file: cannot read: No such file or directory"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn nvidia_fat_binaries() {
    // Two containers: an sm_80 ELF (an ELF header with e_machine 190, sm 80
    // in e_flags) and zstd-compressed sm_90a PTX. (Real nvcc builds are in
    // tests/nvidia.rs.)
    let mut cubin = b"\x7fELF\x02\x01\x01\x33\x07".to_vec();
    cubin.resize(64, 0);
    cubin[18..20].copy_from_slice(&190u16.to_le_bytes());
    cubin[48..52].copy_from_slice(&0x0050_0550u32.to_le_bytes());
    let ptx = b"//\n.version 9.0\n.target sm_90a\n.address_size 64\n\0";
    let zptx = zstd::bulk::compress(ptx, 3).unwrap();
    let mut data = test_support::fatbin(&[(2, 80, 0x11, &cubin, 0)]);
    data.extend(test_support::fatbin_with(&[test_support::FatbinEntry {
        kind: 1,
        arch: 90,
        flags: 0x10_8011,
        payload: &zptx,
        compressed_size: zptx.len() as u32,
        uncompressed_size: ptx.len() as u64,
        header_size: 80,
    }]));
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("k.fatbin"), &data).unwrap();
    let o = run_in(tmp.path(), &["ls", "--json", "k.fatbin"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json::parse(&stdout(&o));
    let e = entries(&doc);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].1.get("id").str(), Some("sm_80.cubin"));
    assert_eq!(e[0].1.get("payload").get("target").str(), Some("sm_80"));
    assert_eq!(
        e[0].1.get("payload").get("matches_entry"),
        &json::V::Bool(true)
    );
    assert_eq!(e[0].1.get("location").get("offset").num(), Some(16 + 64));
    assert_eq!(e[1].1.get("id").str(), Some("sm_90a.ptx"));
    assert_eq!(e[1].1.get("target_id").str(), Some("sm_90a"));
    assert_eq!(e[1].1.get("compression").str(), Some("zstd"));
    assert_eq!(
        e[1].1.get("uncompressed_size").num(),
        Some(ptx.len() as u64)
    );
    // The payload of a compressed entry is named from its decoded head.
    assert_eq!(e[1].1.get("payload").get("type").str(), Some("ptx"));
    assert_eq!(e[1].1.get("cuda").get("variant").str(), Some("a"));
    assert_eq!(e[1].1.get("cuda").get("index").num(), Some(1));
    assert_eq!(
        e[1].1.get("cuda").get("listed_by_cuobjdump"),
        &json::V::Bool(true)
    );
    // Extracted decoded, named as cuobjdump names them.
    let o = run_in(tmp.path(), &["extract", "k.fatbin"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fs::read(tmp.path().join("k.1.sm_80.cubin")).unwrap(), cubin);
    assert_eq!(
        fs::read(tmp.path().join("k.1.sm_90a.ptx")).unwrap(),
        &ptx[..ptx.len() - 1]
    );
    // --raw: as stored.
    let raw = tmp.path().join("raw");
    let o = run_in(tmp.path(), &["extract", "--raw", "-d", "raw", "k.fatbin"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fs::read(raw.join("k.1.sm_90a.ptx.zst")).unwrap(), zptx);
    // A compressed entry whose recorded size lies: ls reports it (exit
    // 1), extract writes nothing.
    let mut bad = data.clone();
    let at = bad.len() - zptx.len().next_multiple_of(8) - 80 + 56;
    bad[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    fs::write(tmp.path().join("bad.fatbin"), &bad).unwrap();
    let o = run_in(tmp.path(), &["ls", "bad.fatbin"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("sm_90a.ptx"), "{}", stderr(&o));
    let out = tmp.path().join("bad-out");
    let o = run_in(tmp.path(), &["extract", "-d", "bad-out", "bad.fatbin"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.fatbin"), "{}", stderr(&o));
    assert!(!out.join("bad.1.sm_80.cubin").exists());
}

#[test]
fn tree_output_and_generated_docs() {
    let o = run(&["ls", "lib.so"]);
    assert!(o.status.success());
    let t = stdout(&o);
    assert!(t.contains("bundle #1 @ 0x"), "{t}");
    assert!(t.contains("2 containers, 6 entries"), "{t}");
    let o = run(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("offload"));
    let o = run(&["man"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with(".ie"), "{}", &stdout(&o)[..40]);
    let o = run(&["--help"]);
    assert!(stdout(&o).contains("Examples:"));
    let o = run(&["ls"]);
    assert_eq!(o.status.code(), Some(2));
}
