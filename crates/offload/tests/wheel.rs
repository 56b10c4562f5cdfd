//! `offload ls`, `extract` and `thin` on zip archives (Python wheels),
//! with the fixtures Python's zipfile made (tests/fixtures/wheel/gen.py)
//! from the nvcc 13.5 builds of tests/fixtures/nvidia. What is read inside
//! a wheel must be what is read in the unpacked files: the same listing,
//! the bytes cuobjdump 13.5 extracted (its recorded md5s), the same
//! thinning; a thinned wheel must be a valid zip whose RECORD is right.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use md5::Md5;
use offload_format::zip::Archive;
use sha2::{Digest, Sha256};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn wheel(name: &str) -> PathBuf {
    root().join("wheel").join(name)
}

const WHEELS: [&str; 2] = ["demo-1.0-py3-none-any.whl", "stream-1.0-py3-none-any.whl"];

/// The members with device code: (name in the wheel, fixture file).
const CODE: [(&str, &str); 3] = [
    ("demo/lib/libk.so", "libk.so"),
    ("demo/bin/app", "app"),
    ("demo/obj/speed.o", "speed.o"),
];

fn offload(dir: &Path, args: &[&str]) -> Output {
    test_support::run_in(env!("CARGO_BIN_EXE_offload"), Some(dir), args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn decoded(zip: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let a = Archive::parse(zip).expect("a valid zip");
    a.members
        .iter()
        .map(|m| {
            let mut v = Vec::new();
            m.decode(&mut v, u64::MAX)
                .expect("member decodes, CRC right");
            (m.name_lossy(), v)
        })
        .collect()
}

/// `ls` of a wheel lists each member with device code as the unpacked
/// file is listed; only the names and paths differ.
#[test]
fn ls_reads_members_as_the_unpacked_files() {
    for w in WHEELS {
        let o = offload(&root().join("wheel"), &["ls", w]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let listing = text(&o.stdout);
        for (member, file) in CODE {
            let o = offload(&root().join("nvidia"), &["ls", "--format", "llvm", file]);
            let want = text(&o.stdout).replace(
                &format!("file://{file}#"),
                &format!("file://{w}!/{member}#"),
            );
            let o = offload(&root().join("wheel"), &["ls", "--format", "llvm", w]);
            let got = text(&o.stdout);
            assert!(!want.is_empty());
            assert!(got.contains(&want), "{w}: {member}:\n{got}\nwant:\n{want}");
            assert!(listing.contains(&format!("member {member} ")), "{listing}");
        }
        // Python code and metadata are passed over.
        assert!(!listing.contains("__init__.py"), "{listing}");
    }
}

/// `extract` from a wheel writes what cuobjdump 13.5 wrote from the
/// unpacked files, under the same names.
#[test]
fn extract_matches_cuobjdump_on_the_unpacked_files() {
    for w in WHEELS {
        let tmp = tempfile::tempdir().unwrap();
        let o = offload(
            tmp.path(),
            &["extract", "-d", "out", wheel(w).to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        for (_, file) in CODE {
            let sums =
                fs::read_to_string(root().join("nvidia").join(format!("{file}.md5"))).unwrap();
            for line in sums.lines() {
                let (sum, name) = line.split_once("  ").unwrap();
                let got = fs::read(tmp.path().join("out").join(name))
                    .unwrap_or_else(|e| panic!("{w}: {name}: {e}"));
                let hex: String = Md5::digest(&got)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                assert_eq!(hex, sum, "{w}: {name}");
            }
        }
    }
}

/// `thin -o` of a wheel: a valid zip; each thinned member is what
/// thinning the unpacked file gives, byte for byte; every other member
/// is as it was; RECORD has the new digests and sizes and nothing else
/// changed in it.
#[test]
fn thin_writes_a_wheel_with_a_right_record() {
    for w in WHEELS {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("thin.whl");
        let o = offload(
            tmp.path(),
            &[
                "thin",
                "--keep",
                "sm_90",
                "-o",
                out.to_str().unwrap(),
                wheel(w).to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let report = text(&o.stdout);
        assert!(
            report.contains("members with device code thinned"),
            "{report}"
        );
        let before = decoded(&fs::read(wheel(w)).unwrap());
        let after = decoded(&fs::read(&out).unwrap());
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>()
        );
        let mut changed = 0;
        for (member, file) in CODE {
            let single = tmp.path().join(file);
            let o = offload(
                &root().join("nvidia"),
                &[
                    "thin",
                    "--keep",
                    "sm_90",
                    "-o",
                    single.to_str().unwrap(),
                    file,
                ],
            );
            assert!(o.status.success(), "{}", text(&o.stderr));
            let want = fs::read(&single).unwrap();
            assert_eq!(after[member], want, "{w}: {member}");
            if want != before[member] {
                changed += 1;
            }
        }
        assert!(changed >= 2, "{w}: the keep must thin something");
        let record = "demo-1.0.dist-info/RECORD";
        for (name, data) in &after {
            if !CODE.iter().any(|(m, _)| m == name) && name != record {
                assert_eq!(data, &before[name], "{w}: {name} unchanged");
            }
        }
        // RECORD: every line's digest and size are those of the member.
        let lines = text(&after[record]);
        let old = text(&before[record]);
        assert_eq!(lines.lines().count(), old.lines().count());
        for line in lines.lines() {
            let mut f = line.rsplitn(3, ',');
            let (size, hash, name) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            if name == record {
                assert_eq!((hash, size), ("", ""));
                continue;
            }
            let data = &after[name];
            let digest =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(data));
            assert_eq!(hash, format!("sha256={digest}"), "{w}: {name}");
            assert_eq!(size, data.len().to_string(), "{w}: {name}");
            if after[name] == before[name] {
                assert!(old.contains(line), "{w}: an unchanged line moved: {line}");
            }
        }
        // The modes stay.
        let a = Archive::parse(&fs::read(&out).unwrap())
            .unwrap()
            .members
            .iter()
            .map(|m| (m.name_lossy(), m.external_attrs))
            .collect::<Vec<_>>();
        let b = Archive::parse(&fs::read(wheel(w)).unwrap())
            .unwrap()
            .members
            .iter()
            .map(|m| (m.name_lossy(), m.external_attrs))
            .collect::<Vec<_>>();
        assert_eq!(a, b);
        // The thinned wheel lists as thinned: nothing left for sm_90 to drop.
        let o = offload(
            tmp.path(),
            &["thin", "--keep", "sm_90", "--dry-run", "thin.whl"],
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains(" 0 entries would be dropped, 0 bytes"),
            "{}",
            text(&o.stdout)
        );
    }
}

/// `--dry-run` writes nothing; `--in-place` replaces the wheel; both say
/// the same figures.
#[test]
fn dry_run_and_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join(WHEELS[0]);
    fs::copy(wheel(WHEELS[0]), &w).unwrap();
    let dry = offload(
        tmp.path(),
        &["thin", "--keep", "sm_90", "--dry-run", WHEELS[0]],
    );
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert_eq!(fs::read(&w).unwrap(), fs::read(wheel(WHEELS[0])).unwrap());
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    let real = offload(
        tmp.path(),
        &["thin", "--keep", "sm_90", "--in-place", WHEELS[0]],
    );
    assert!(real.status.success(), "{}", text(&real.stderr));
    let figures = |o: &Output| {
        let t = text(&o.stdout);
        let last = t.lines().last().unwrap().to_owned();
        last.split(" bytes")
            .next()
            .unwrap()
            .replace("would be ", "")
    };
    assert_eq!(figures(&dry), figures(&real));
    assert_ne!(fs::read(&w).unwrap(), fs::read(wheel(WHEELS[0])).unwrap());
    Archive::parse(&fs::read(&w).unwrap()).unwrap();
}

/// A damaged wheel is reported, naming it, and nothing is written.
#[test]
fn damaged_wheels_are_refused() {
    let good = fs::read(wheel(WHEELS[0])).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Cut short, and a flipped byte late in libk.so's deflated data (its
    // first bytes still say ELF: members that do not are passed over
    // unread, as in a directory tree).
    let a = Archive::parse(&good).unwrap();
    let so = a
        .members
        .iter()
        .find(|m| m.name == b"demo/lib/libk.so")
        .unwrap();
    let mut flipped = good.clone();
    flipped[(so.data_offset + so.compressed_size) as usize - 40] ^= 0x55;
    for (name, bytes) in [
        ("cut.whl", &good[..good.len() - 30]),
        ("flip.whl", &flipped[..]),
    ] {
        fs::write(tmp.path().join(name), bytes).unwrap();
        let o = offload(tmp.path(), &["ls", name]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(
            text(&o.stderr).contains(name),
            "{name}: {}",
            text(&o.stderr)
        );
        let o = offload(
            tmp.path(),
            &["thin", "--keep", "sm_90", "-o", "out.whl", name],
        );
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(text(&o.stderr).contains(name), "{}", text(&o.stderr));
        assert!(!tmp.path().join("out.whl").exists(), "{name}");
    }
    // A RECORD without a line for a member that thinning changes: the
    // wheel cannot be made right, so nothing is written.
    let members: Vec<(String, Vec<u8>)> = decoded(&good)
        .into_iter()
        .map(|(n, d)| {
            if n.ends_with("/RECORD") {
                let kept: String = text(&d)
                    .lines()
                    .filter(|l| !l.starts_with("demo/lib/libk.so,"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                (n, kept.into_bytes())
            } else {
                (n, d)
            }
        })
        .collect();
    fs::write(tmp.path().join("norecord.whl"), stored_zip(&members)).unwrap();
    let o = offload(tmp.path(), &["ls", "norecord.whl"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = offload(
        tmp.path(),
        &["thin", "--keep", "sm_90", "-o", "out.whl", "norecord.whl"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("RECORD has no line for demo/lib/libk.so"),
        "{}",
        text(&o.stderr)
    );
    assert!(!tmp.path().join("out.whl").exists());
}

/// A zip of `members`, all stored, made with the format library's writer.
fn stored_zip(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    use offload_format::zip::write::{Entry, Layout};
    use offload_format::zip::Method;
    let mut out = Vec::new();
    let mut layout = Layout::new();
    for (name, data) in members {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let size = data.len() as u64;
        let e = Entry::new(name.as_bytes(), Method::Stored, crc.sum(), size, size);
        out.extend(layout.member(&e));
        out.extend(data);
    }
    out.extend(layout.finish(b""));
    out
}

/// `ls --summary` of a wheel counts what the unpacked files hold, and
/// counts them as files.
#[test]
fn summary_of_a_wheel_is_that_of_its_files() {
    let o = offload(&root().join("wheel"), &["ls", "--summary", WHEELS[0]]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let files: Vec<&str> = CODE.iter().map(|(_, f)| *f).collect();
    let mut args = vec!["ls", "--summary"];
    args.extend(&files);
    let u = offload(&root().join("nvidia"), &args);
    // The same table, the same total of files.
    assert_eq!(text(&o.stdout), text(&u.stdout));
}
