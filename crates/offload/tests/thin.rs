//! `offload thin` on files built by clang-22 (tests/fixtures/thin, made by
//! its make.sh): the thinned files hold exactly the kept entries with their
//! bytes unchanged, at the same places, and LLVM 22's own tools and a stub
//! HIP runtime agree; compressed bundles are what clang-offload-bundler-22
//! -compress writes for the kept entries. Checks that need clang-22, the
//! LLVM tools or a C compiler say so and are skipped where those are
//! missing (CI installs them).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use offload_format::archive::{Archive, MemberContent};
use offload_format::objfile::Object;
use offload_format::{bundle, ccob, hip_fatbin};
use test_support::{have, s};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/thin")
}

fn fixture(name: &str) -> PathBuf {
    fixtures().join(name)
}

fn offload(args: &[&str]) -> Output {
    test_support::run_in(env!("CARGO_BIN_EXE_offload"), None, args)
}

fn ok(o: &Output) -> String {
    String::from_utf8(ok_bytes(o)).unwrap()
}

fn ok_bytes(o: &Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout.clone()
}

/// One container found in a file: where, what, and its entries' bytes.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    offset: usize,
    len: usize,
    compressed: Option<ccob::Header>,
    entries: Vec<(String, Vec<u8>)>,
}

/// Every bundle of the `.hip_fatbin` sections of `data` (an object, a
/// shared library or an archive of objects), at offsets of `data`.
fn bundles(data: &[u8]) -> Vec<Found> {
    let mut out = Vec::new();
    if data.starts_with(b"!<arch>\n") {
        let a = Archive::parse(data).unwrap();
        for m in a.members() {
            if let MemberContent::Inline(bytes) = m.unwrap().content {
                let base = bytes.as_ptr() as usize - data.as_ptr() as usize;
                for mut f in bundles(bytes) {
                    f.offset += base;
                    out.push(f);
                }
            }
        }
        return out;
    }
    let Ok(obj) = Object::parse(data) else {
        return out;
    };
    for sec in obj.sections() {
        let sec = sec.unwrap();
        if sec.name != b".hip_fatbin" {
            continue;
        }
        let bytes = sec.data().unwrap();
        let base = bytes.as_ptr() as usize - data.as_ptr() as usize;
        let scan = hip_fatbin::scan(bytes, &[]);
        assert!(scan.damage.is_empty(), "{:?}", scan.damage);
        for item in scan.items {
            let (compressed, plain) = match item.kind {
                hip_fatbin::ItemKind::Bundle => (None, item.bytes.to_vec()),
                hip_fatbin::ItemKind::Ccob(h) => {
                    (Some(h), ccob::decompress(item.bytes).unwrap().data)
                }
            };
            let entries = bundle::parse_header(&plain)
                .unwrap()
                .iter()
                .map(|e| (String::from_utf8_lossy(e.id).into_owned(), e.data.to_vec()))
                .collect();
            out.push(Found {
                offset: base + item.offset,
                len: item.bytes.len(),
                compressed,
                entries,
            });
        }
    }
    out
}

fn is_gfx906(id: &str) -> bool {
    id.ends_with("gfx906")
}

/// Thins `name` to gfx90a into `dir` with `--keep-layout`; checks the
/// bundles against the original's: same places, the gfx906 entries gone,
/// the rest identical, zero bytes after each rewritten bundle up to its
/// old end.
fn thin_and_compare(name: &str, dir: &Path) -> (PathBuf, Vec<Found>) {
    let input = fixture(name);
    let out = dir.join(name);
    let report = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--keep-layout",
        "-o",
        s(&out),
        s(&input),
    ]));
    let before_bytes = fs::read(&input).unwrap();
    let after_bytes = fs::read(&out).unwrap();
    assert_eq!(before_bytes.len(), after_bytes.len());
    let before = bundles(&before_bytes);
    let after = bundles(&after_bytes);
    assert!(!before.is_empty());
    assert_eq!(before.len(), after.len(), "{name}: bundles");
    let mut dropped = 0;
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.offset, a.offset, "{name}: a bundle moved");
        assert!(a.len <= b.len);
        let want: Vec<_> = b
            .entries
            .iter()
            .filter(|(id, _)| !is_gfx906(id))
            .cloned()
            .collect();
        dropped += b.entries.len() - want.len();
        assert_eq!(a.entries, want, "{name}: kept entries differ");
        assert_eq!(
            a.compressed.map(|h| (h.version, h.method)),
            b.compressed.map(|h| (h.version, h.method))
        );
        // The freed space is zero, and nothing outside the bundles changed.
        assert!(after_bytes[a.offset + a.len..b.offset + b.len]
            .iter()
            .all(|&x| x == 0));
    }
    let mut masked = before_bytes.clone();
    for b in &before {
        masked[b.offset..b.offset + b.len]
            .copy_from_slice(&after_bytes[b.offset..b.offset + b.len]);
    }
    assert!(
        masked == after_bytes,
        "{name}: bytes outside the bundles changed"
    );
    assert!(
        report.contains(&format!("{dropped} entries dropped")),
        "{report}"
    );
    (out, after)
}

#[test]
fn shared_libraries_keep_exactly_the_kept_entries_in_place() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["libhip.so", "libhipz.so", "libhipz2.so", "libk.a"] {
        let (out, _) = thin_and_compare(name, dir.path());
        // offload ls sees the kept entries only.
        let ls = ok(&offload(&["ls", "--format=llvm", s(&out)]));
        assert!(!ls.contains("gfx906"), "{ls}");
        assert!(ls.contains("gfx90a"), "{ls}");
        // The file mode is the input's.
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&out).unwrap().permissions().mode(),
            fs::metadata(fixture(name)).unwrap().permissions().mode()
        );
    }
}

#[test]
fn llvm_sees_the_same_program_headers_sections_and_symbols() {
    if !have("llvm-readelf-22") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["libhip.so", "libhipz.so", "libhipz2.so"] {
        let (out, _) = thin_and_compare(name, dir.path());
        let readelf = |p: &Path| {
            let o = Command::new("llvm-readelf-22")
                .args(["-lS", "--dyn-syms", s(p)])
                .output()
                .unwrap();
            // The file name is printed; the rest must be identical.
            String::from_utf8(o.stdout).unwrap().replace(s(p), "FILE")
        };
        assert_eq!(readelf(&fixture(name)), readelf(&out), "{name}");
    }
}

/// Runs clang-offload-bundler-22 with `args` (and the environment).
fn bundler(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("clang-offload-bundler-22");
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn llvm_bundler_lists_and_unbundles_each_thinned_bundle_and_compresses_alike() {
    if !have("clang-offload-bundler-22") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut checked = 0;
    for name in ["libhip.so", "libhipz.so", "libhipz2.so", "libk.a"] {
        let (out, after) = thin_and_compare(name, d);
        let bytes = fs::read(&out).unwrap();
        for (k, f) in after.iter().enumerate() {
            let cut = d.join(format!("{name}.{k}.bundle"));
            fs::write(&cut, &bytes[f.offset..f.offset + f.len]).unwrap();
            let list = bundler(&["-list", "-type=o", &format!("-input={}", s(&cut))], &[]);
            let ids: Vec<&str> = f.entries.iter().map(|(id, _)| id.as_str()).collect();
            let listed = String::from_utf8(list.stdout).unwrap();
            let mut listed: Vec<&str> = listed.lines().collect();
            listed.sort_unstable();
            let mut want = ids.clone();
            want.sort_unstable();
            assert_eq!(listed, want, "{name} bundle {k}");
            // Unbundle every kept entry: LLVM's bytes are ours.
            let outs: Vec<PathBuf> = ids
                .iter()
                .enumerate()
                .map(|(i, _)| d.join(format!("{name}.{k}.{i}.out")))
                .collect();
            let mut args = vec![
                "-unbundle".to_owned(),
                "-type=o".to_owned(),
                format!("-input={}", s(&cut)),
                format!("-targets={}", ids.join(",")),
            ];
            args.extend(outs.iter().map(|p| format!("-output={}", s(p))));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = bundler(&args, &[]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            for ((_, data), p) in f.entries.iter().zip(&outs) {
                assert_eq!(&fs::read(p).unwrap(), data, "{name} bundle {k}");
            }
            // A compressed bundle is what the bundler writes for the kept
            // entries with the same version and its default level.
            if let Some(h) = f.compressed {
                let version = h.version.number().to_string();
                let again = d.join(format!("{name}.{k}.again"));
                let mut args = vec![
                    "-type=o".to_owned(),
                    "-compress".to_owned(),
                    "-bundle-align=4096".to_owned(),
                    format!("-targets={}", ids.join(",")),
                    format!("-output={}", s(&again)),
                ];
                args.extend(outs.iter().map(|p| format!("-input={}", s(p))));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = bundler(
                    &args,
                    &[("COMPRESSED_BUNDLE_FORMAT_VERSION", version.as_str())],
                );
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                let llvm = fs::read(&again).unwrap();
                let ours = &bytes[f.offset..f.offset + f.len];
                if cfg!(feature = "system-compression") {
                    assert_eq!(
                        ours,
                        &llvm[..],
                        "{name} bundle {k}: recompressed bytes differ from LLVM's"
                    );
                } else {
                    // Another libzstd compresses differently; the bundle
                    // inside and the header's version must still agree.
                    eprintln!("byte comparison skipped: needs --features system-compression");
                    assert_eq!(
                        ccob::decompress(ours).unwrap().data,
                        ccob::decompress(&llvm).unwrap().data
                    );
                    assert_eq!(ours[..8], llvm[..8]);
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

/// Builds the stub HIP runtime with `extra` sources into `out`.
fn build_stub(extra: &[PathBuf], out: &Path) -> bool {
    if !have("cc") {
        return false;
    }
    let mut c = Command::new("cc");
    c.args(["-O1", "-rdynamic", "-o", s(out)])
        .arg(fixture("stub_hip.c"))
        .args(extra)
        .args(["-ldl", "-lzstd", "-lz"]);
    let o = c.output().unwrap();
    if !o.status.success() {
        eprintln!(
            "skipped: cannot build the stub HIP runtime (needs libzstd-dev, zlib1g-dev): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        return false;
    }
    true
}

/// The `fatbin:` lines of the stub runtime's output.
fn fatbins(o: &Output) -> Vec<String> {
    let text = ok(o);
    assert!(!text.contains("error"), "{text}");
    text.lines()
        .filter(|l| l.starts_with("fatbin:"))
        .map(str::to_owned)
        .collect()
}

const KEPT: &str = "fatbin: host-x86_64-unknown-linux-gnu- hipv4-amdgcn-amd-amdhsa--gfx90a";
const BOTH: &str = "fatbin: host-x86_64-unknown-linux-gnu- hipv4-amdgcn-amd-amdhsa--gfx906 \
                    hipv4-amdgcn-amd-amdhsa--gfx90a";

#[test]
fn a_stub_hip_runtime_loads_the_thinned_libraries_and_finds_the_kept_targets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = d.join("dl");
    if !build_stub(&[fixture("main_dlopen.c")], &prog) {
        return;
    }
    for name in ["libhip.so", "libhipz.so", "libhipz2.so"] {
        let before = fatbins(&Command::new(&prog).arg(fixture(name)).output().unwrap());
        assert_eq!(before, vec![BOTH, BOTH], "{name}");
        let (out, _) = thin_and_compare(name, d);
        let after = fatbins(&Command::new(&prog).arg(&out).output().unwrap());
        assert_eq!(after, vec![KEPT, KEPT], "{name}");
    }
}

#[test]
fn a_thinned_archive_of_hip_objects_links_into_a_program() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lib, _) = thin_and_compare("libk.a", d);
    let prog = d.join("linked");
    if !build_stub(&[fixture("main_linked.c"), lib], &prog) {
        return;
    }
    let found = fatbins(&Command::new(&prog).output().unwrap());
    assert_eq!(found.len(), 2);
    assert!(found.iter().all(|l| l == KEPT), "{found:?}");
}

#[test]
fn a_thinned_openmp_object_still_runs_its_target_region_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("omp.o");
    let report = ok(&offload(&[
        "thin",
        "--drop",
        "gfx90a",
        "-o",
        s(&out),
        s(&fixture("omp.o")),
    ]));
    assert!(report.contains("1 entry dropped"), "{report}");
    let ls = ok(&offload(&["ls", "--format=llvm", s(&out)]));
    assert!(ls.contains("openmp-x86_64-pc-linux-gnu"), "{ls}");
    assert!(!ls.contains("gfx90a"), "{ls}");
    // The kept image is byte for byte the one before.
    let image = |p: &Path| {
        ok_bytes(&offload(&[
            "extract",
            "--target",
            "x86_64-pc-linux-gnu",
            "-o",
            "-",
            s(p),
        ]))
    };
    assert_eq!(image(&fixture("omp.o")), image(&out));
    let omptarget = Path::new("/usr/lib/llvm-22/lib/libomptarget.so.22.1");
    if !have("clang-22") || !omptarget.exists() {
        eprintln!("skipped: running needs clang-22 and libomptarget (LLVM 22's libomp)");
        return;
    }
    // Debian ships libomptarget.so.22.1 without the development link.
    let lib = d.join("lib");
    fs::create_dir(&lib).unwrap();
    std::os::unix::fs::symlink(omptarget, lib.join("libomptarget.so")).unwrap();
    let prog = d.join("omp");
    let o = Command::new("clang-22")
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            &format!("-L{}", s(&lib)),
            "-Wl,-rpath,/usr/lib/llvm-22/lib",
            s(&out),
            "-o",
            s(&prog),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = Command::new(&prog)
        .env("OMP_TARGET_OFFLOAD", "MANDATORY")
        .output()
        .unwrap();
    assert_eq!(ok(&run), "x = 42\n");
}

#[test]
fn dry_run_writes_nothing_and_in_place_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let copy = d.join("libhip.so");
    fs::copy(fixture("libhip.so"), &copy).unwrap();
    let before = fs::read(&copy).unwrap();
    let dry = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--dry-run",
        s(&copy),
    ]));
    assert!(
        dry.contains("(dry run)")
            && dry.contains("2 entries would be dropped")
            && !dry.contains("containers rewritten"),
        "{dry}"
    );
    assert_eq!(fs::read(&copy).unwrap(), before);
    ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--in-place",
        s(&copy),
    ]));
    let after = fs::read(&copy).unwrap();
    assert_ne!(after, before);
    // Shrunk: the dry run said to what size.
    assert!(after.len() < before.len());
    assert!(
        dry.contains(&format!(
            "would shrink: {} -> {} bytes",
            before.len(),
            after.len()
        )),
        "{dry}"
    );
    assert_eq!(
        fs::read_dir(d).unwrap().count(),
        1,
        "a staging file was left"
    );
    // A second run has nothing to drop and leaves the file as it is.
    let again = ok(&offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--in-place",
        s(&copy),
    ]));
    assert!(again.contains("0 entries dropped"), "{again}");
    assert_eq!(fs::read(&copy).unwrap(), after);
}

#[test]
fn bad_inputs_and_usage_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = d.join("good.so");
    fs::copy(fixture("libhip.so"), &good).unwrap();
    // A damaged second input: neither output is written.
    let mut bad = fs::read(fixture("libhipz.so")).unwrap();
    let f = bundles(&bad)[1].clone();
    bad[f.offset + 40..f.offset + 60].fill(0xff);
    let bad_path = d.join("bad.so");
    fs::write(&bad_path, &bad).unwrap();
    let before = fs::read(&good).unwrap();
    let o = offload(&[
        "thin",
        "--keep",
        "gfx90a",
        "--in-place",
        s(&good),
        s(&bad_path),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.so"), "{err}");
    assert_eq!(fs::read(&good).unwrap(), before);
    assert_eq!(fs::read(&bad_path).unwrap(), bad);
    assert_eq!(
        fs::read_dir(d).unwrap().count(),
        2,
        "a staging file was left"
    );
    // A target the file does not have.
    let o = offload(&["thin", "--keep", "gfx1100", "-o", s(&d.join("x")), s(&good)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--keep gfx1100 matches no entry"));
    assert!(!d.join("x").exists());
    // Usage: where to write, what to keep.
    for args in [
        vec!["thin", "--keep", "gfx90a", s(&good)],
        vec!["thin", "--in-place", s(&good)],
        vec!["thin", "--keep", "gfx90a", "-o", "x", s(&good), s(&good)],
    ] {
        assert_eq!(offload(&args).status.code(), Some(2), "{args:?}");
    }
    // Nothing to read.
    let o = offload(&["thin", "--keep", "gfx90a", "--dry-run", s(&d.join("none"))]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn target_ids_select_as_the_bundler_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A full entry ID with the other kind spelling (hip for hipv4) keeps
    // the gfx90a entries.
    let out = d.join("a.so");
    ok(&offload(&[
        "thin",
        "--keep",
        "hip-amdgcn-amd-amdhsa--gfx90a",
        "-o",
        s(&out),
        s(&fixture("libhip.so")),
    ]));
    let ls = ok(&offload(&["ls", "--format=llvm", s(&out)]));
    assert!(!ls.contains("gfx906") && ls.contains("gfx90a"), "{ls}");
    // A target ID with a feature: an entry built without xnack serves it.
    let out = d.join("b.so");
    ok(&offload(&[
        "thin",
        "--keep",
        "gfx906:xnack+",
        "-o",
        s(&out),
        s(&fixture("libhip.so")),
    ]));
    let ls = ok(&offload(&["ls", "--format=llvm", s(&out)]));
    assert!(ls.contains("gfx906") && !ls.contains("gfx90a"), "{ls}");
}
