//! Deliberate differences from LLVM 22 for compressed bundles and object
//! bundles (docs/compat.md#clang-offload-bundler, docs/compat.md#compressed-bundles-ccob,
//! docs/compat.md#object-bundles-clang-offload-bundler--typeo), checked against committed fixtures made
//! by LLVM 22's tools, so no LLVM installation is needed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::{assert_error, file_names as names};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";
const GFX908: &str = "hip-amdgcn-amd-amdhsa--gfx908";

fn fixture(rel: &str) -> Vec<u8> {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel);
    fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = test_support::tool(env!("CARGO_BIN_EXE_clang-offload-bundler"), dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The CCOB fixtures' plain bundle holds an aarch64 host, gfx906 and gfx908.
const CCOB_TARGETS: &str =
    "-targets=host-aarch64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx908";

fn unbundle_ccob(dir: &Path, name: &str, extra: &[&str]) -> Output {
    fs::write(dir.join("in.ccob"), fixture(&format!("ccob/{name}"))).unwrap();
    let mut args = vec![
        "-type=bc",
        CCOB_TARGETS,
        "-input=in.ccob",
        "-output=h",
        "-output=a",
        "-output=b",
        "-unbundle",
    ];
    args.extend_from_slice(extra);
    run(dir, &args, &[])
}

#[test]
fn stored_hash_is_verified() {
    // 22 accepts this file silently ("Hashes match: No" with -verbose).
    let d = tempfile::tempdir().unwrap();
    let o = unbundle_ccob(d.path(), "small.bad-hash-forged.ccob", &["-verbose"]);
    assert_error(
        &o,
        "error: 'in.ccob': Failed to decompress input: Compressed bundle hash mismatch",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Hashes match: No"), "{err}");
    assert_eq!(names(d.path()), ["in.ccob"], "no partial outputs");
}

/// Checks LLVM 22 does not make (it accepts these files) have messages of
/// our own, which name the input after LLVM's `Failed to decompress
/// input:` form; the problems 22 reports keep its text, which names no
/// file. (Memory: the corpus case `ccob-zstd-bomb.bc`.)
#[test]
fn own_ccob_checks_name_the_input() {
    let d = tempfile::tempdir().unwrap();
    for (name, ours) in [
        (
            "small.bad-hash-forged.ccob",
            Some("Compressed bundle hash mismatch: stored 0x7766554433221100, computed "),
        ),
        (
            "small.total-long-forged.ccob",
            Some("Compressed bundle is truncated: its header records 637 bytes but only 636"),
        ),
        (
            "small.v2-total-long-forged.ccob",
            Some("Compressed bundle is truncated: its header records 4294967295 bytes"),
        ),
        (
            "small.total-zero-forged.ccob",
            Some("Compressed bundle total size 0 is smaller than its 32-byte header"),
        ),
        (
            "small.usize-large-forged.ccob",
            Some(
                "Could not decompress embedded file contents: decompressed size 1604 does not \
                 match the size recorded in the header (1605)",
            ),
        ),
        (
            "small.zlib-usize-large-forged.ccob",
            Some("Could not decompress embedded file contents: decompressed size 1604"),
        ),
        ("small.method2-forged.ccob", None),
        ("small.version4-forged.ccob", None),
        ("small.usize-small-forged.ccob", None),
        ("small.method-zlib-on-zstd-forged.ccob", None),
    ] {
        fs::write(d.path().join(name), fixture(&format!("ccob/{name}"))).unwrap();
        let input = format!("-input={name}");
        let unbundle = [
            "-unbundle",
            CCOB_TARGETS,
            "-output=h",
            "-output=a",
            "-output=b",
        ];
        for mode in [&["-list"][..], &unbundle] {
            let mut args = vec!["-type=bc", input.as_str()];
            args.extend_from_slice(mode);
            let o = run(d.path(), &args, &[]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            match ours {
                Some(text) => assert!(
                    err.contains(&format!(
                        ": error: '{name}': Failed to decompress input: {text}"
                    )),
                    "{name}: {err}"
                ),
                None => {
                    assert!(
                        err.contains(": error: Failed to decompress input: "),
                        "{name}: {err}"
                    );
                    assert!(!err.contains(name), "{name}: {err}");
                }
            }
        }
        assert!(!d.path().join("h").exists(), "{name}: no partial outputs");
    }
}

#[test]
fn trailing_bytes_after_a_ccob_are_ignored() {
    // 22 fails with zstd's "Src size is incorrect"; the CCOB's recorded
    // total size says where it ends.
    let d = tempfile::tempdir().unwrap();
    let o = unbundle_ccob(d.path(), "small.trailing-bytes-forged.ccob", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plain = tempfile::tempdir().unwrap();
    let p = unbundle_ccob_plain(plain.path());
    assert!(p.status.success());
    for f in ["h", "a", "b"] {
        assert_eq!(
            fs::read(d.path().join(f)).unwrap(),
            fs::read(plain.path().join(f)).unwrap()
        );
    }
}

fn unbundle_ccob_plain(dir: &Path) -> Output {
    fs::write(dir.join("in.bundle"), fixture("ccob/small.bundle")).unwrap();
    run(
        dir,
        &[
            "-type=bc",
            CCOB_TARGETS,
            "-input=in.bundle",
            "-output=h",
            "-output=a",
            "-output=b",
            "-unbundle",
        ],
        &[],
    )
}

#[test]
fn truncated_ccob_is_reported_by_size() {
    let d = tempfile::tempdir().unwrap();
    let o = unbundle_ccob(d.path(), "small.total-long-forged.ccob", &[]);
    assert_error(
        &o,
        "error: 'in.ccob': Failed to decompress input: Compressed bundle is truncated",
    );
    assert_eq!(names(d.path()), ["in.ccob"]);
}

#[test]
fn every_22_written_ccob_unbundles_to_its_plain_bundle() {
    for (ccob, plain) in [
        ("small.v2.ccob", "small.bundle"),
        ("small.v3-l19.ccob", "small.bundle"),
        ("medium.v3.ccob", "medium.bundle"),
        ("medium.zlib-v3-forged.ccob", "medium.bundle"),
        ("large.v2.ccob", "large.bundle"),
    ] {
        // `-list` of the compressed file equals `-list` of the plain one.
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("c"), fixture(&format!("ccob/{ccob}"))).unwrap();
        fs::write(d.path().join("p"), fixture(&format!("ccob/{plain}"))).unwrap();
        let a = run(d.path(), &["-type=bc", "-list", "-input=c"], &[]);
        let b = run(d.path(), &["-type=bc", "-list", "-input=p"], &[]);
        assert!(
            a.status.success(),
            "{ccob}: {}",
            String::from_utf8_lossy(&a.stderr)
        );
        assert_eq!(a.stdout, b.stdout, "{ccob}");
        assert!(!a.stdout.is_empty());
    }
}

#[test]
fn compress_round_trip_through_our_reader() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(p.join("h"), b"host ".repeat(100)).unwrap();
    fs::write(p.join("a"), b"device a ".repeat(100)).unwrap();
    fs::write(p.join("b"), b"").unwrap();
    let t = format!("-targets={HOST},{GFX906},{GFX908}");
    for (ty, version) in [("bc", "2"), ("hipi", "3"), ("o", "3")] {
        let out = format!("z.{ty}");
        let o = run(
            p,
            &[
                &format!("-type={ty}"),
                &t,
                "-input=h",
                "-input=a",
                "-input=b",
                &format!("-output={out}"),
            ],
            &[
                ("OFFLOAD_BUNDLER_COMPRESS", "1"),
                ("COMPRESSED_BUNDLE_FORMAT_VERSION", version),
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let z = fs::read(p.join(&out)).unwrap();
        assert_eq!(
            &z[..6],
            &[b'C', b'C', b'O', b'B', version.parse::<u8>().unwrap(), 0]
        );
        let o = run(
            p,
            &[
                &format!("-type={ty}"),
                &t,
                &format!("-input={out}"),
                "-output=h2",
                "-output=a2",
                "-output=b2",
                "-unbundle",
            ],
            &[],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for (x, y) in [("h", "h2"), ("a", "a2"), ("b", "b2")] {
            assert_eq!(
                fs::read(p.join(x)).unwrap(),
                fs::read(p.join(y)).unwrap(),
                "{ty} {x}"
            );
        }
    }
}

#[test]
fn device_only_object_bundle_is_an_error_not_a_crash() {
    // 22 dereferences the missing host input and dies of SIGSEGV.
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(
        p.join("obj.o"),
        fixture("object_bundle/host-x86_64-unknown-linux-gnu.o"),
    )
    .unwrap();
    fs::write(p.join("dev"), b"device").unwrap();
    let o = run(
        p,
        &[
            "-type=o",
            &format!("-targets={GFX906},{GFX908}"),
            "-input=obj.o",
            "-input=dev",
            "-output=out.o",
        ],
        &[],
    );
    assert_error(&o, "needs a host target");
    assert_eq!(names(p), ["dev", "obj.o"]);
}

#[test]
fn mach_o_host_is_refused_without_partial_output() {
    // 22 leaves a 0-byte output after llvm-objcopy refuses Mach-O.
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A minimal 64-bit x86-64 Mach-O object header with no load commands.
    let mut m = vec![0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 1, 0, 0, 0];
    m.extend_from_slice(&[0; 16]);
    fs::write(p.join("host.o"), &m).unwrap();
    fs::write(p.join("dev"), b"device").unwrap();
    let o = run(
        p,
        &[
            "-type=o",
            &format!("-targets={HOST},{GFX906}"),
            "-input=host.o",
            "-input=dev",
            "-output=out.o",
        ],
        &[],
    );
    assert_error(&o, "MachO");
    assert_eq!(names(p), ["dev", "host.o"]);
}

#[test]
fn host_is_extracted_from_a_compressed_fat_object() {
    // 22 hands the compressed file itself to llvm-objcopy, which fails; we
    // extract the host from the decompressed object.
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let fat = fixture("object_bundle/fat-x86_64-unknown-linux-gnu.o");
    let z = offload_format::ccob::compress(&fat, &Default::default()).unwrap();
    fs::write(p.join("fat.o"), &z.bytes).unwrap();
    let list = run(p, &["-type=o", "-list", "-input=fat.o"], &[]);
    assert!(list.status.success());
    let ids = String::from_utf8(list.stdout).unwrap();
    assert_eq!(
        ids,
        String::from_utf8(fixture("object_bundle/list-x86_64-unknown-linux-gnu.txt")).unwrap()
    );
    let host = ids
        .lines()
        .find(|l| l.starts_with("host-"))
        .unwrap()
        .to_string();
    let o = run(
        p,
        &[
            "-type=o",
            &format!("-targets={host}"),
            "-input=fat.o",
            "-output=h.o",
            "-unbundle",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        fs::read(p.join("h.o")).unwrap(),
        fixture("object_bundle/unb-host-x86_64-unknown-linux-gnu.o")
    );
}

#[test]
fn concatenated_ccobs_are_all_read() {
    // 22 fails with zstd's "Src size is incorrect"; each CCOB is bounded by
    // its recorded total size, and zero padding between them is skipped.
    let plain = tempfile::tempdir().unwrap();
    fs::write(plain.path().join("p"), fixture("ccob/small.bundle")).unwrap();
    let one = run(plain.path(), &["-type=bc", "-list", "-input=p"], &[]).stdout;
    for (name, count) in [
        ("concat.v3-v2-forged.ccob", 2),
        ("concat.mixed-padded-forged.ccob", 3),
    ] {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fs::write(p.join("c"), fixture(&format!("ccob/{name}"))).unwrap();
        let o = run(p, &["-type=bc", "-list", "-input=c", "-verbose"], &[]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.matches("Hashes match: Yes").count(),
            count,
            "{name}: {err}"
        );
        // Every fixture bundle holds the same three IDs.
        assert_eq!(o.stdout, one.repeat(count), "{name}");
    }
}

#[test]
fn object_host_from_stdin_is_bundled() {
    // 22 drains stdin, then hands `-` to llvm-objcopy, which finds nothing.
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let host = fixture("object_bundle/host-x86_64-unknown-linux-gnu.o");
    fs::write(p.join("host.o"), &host).unwrap();
    fs::write(p.join("dev"), b"device").unwrap();
    let t = format!("-targets={HOST},{GFX906}");
    let o = run(
        p,
        &["-type=o", &t, "-input=host.o", "-input=dev", "-output=a.o"],
        &[],
    );
    assert!(o.status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_clang-offload-bundler"))
        .args(["-type=o", &t, "-input=-", "-input=dev", "-output=b.o"])
        .current_dir(p)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&host).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        fs::read(p.join("a.o")).unwrap(),
        fs::read(p.join("b.o")).unwrap()
    );
}
