//! Replays the command lines recorded with LLVM 22's llvm-offload-binary
//! (`tests/fixtures/packager/cases`, made by `cargo xtask fixtures
//! packager`) against our binaries: same exit status, stdout, stderr, and
//! the same files left behind, byte for byte. Needs no LLVM.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use test_support::unescape;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/packager/cases")
}

fn copy_tree(from: &Path, to: &Path) {
    let Ok(entries) = fs::read_dir(from) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Every path under `dir`, sorted per directory by name, directories with
/// a trailing `/` (the order and the lossy UTF-8 spelling the fixture
/// generator records), with the real path of each.
fn tree(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if e.file_type().unwrap().is_dir() {
            out.push((format!("{rel}/"), e.path()));
            tree(root, &e.path(), out);
        } else {
            out.push((rel, e.path()));
        }
    }
}

fn check(case: &Path) -> Result<(), String> {
    let cmd = fs::read_to_string(case.join("cmd")).map_err(|e| e.to_string())?;
    let mut lines = cmd.lines();
    let tool = String::from_utf8(unescape(lines.next().ok_or("empty cmd")?)).unwrap();
    let args: Vec<OsString> = lines.map(|l| OsString::from_vec(unescape(l))).collect();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    copy_tree(&case.join("in"), work.path());
    let exe = if tool == "clang-offload-packager" {
        env!("CARGO_BIN_EXE_clang-offload-packager")
    } else {
        env!("CARGO_BIN_EXE_llvm-offload-binary")
    };
    let stdin = match fs::read(case.join("stdin")) {
        Ok(bytes) => {
            let p = work.path().join("..stdin");
            fs::write(&p, bytes).unwrap();
            let f = fs::File::open(&p).unwrap();
            fs::remove_file(&p).unwrap();
            Stdio::from(f)
        }
        Err(_) => Stdio::null(),
    };
    let out = Command::new(exe)
        .arg0(&tool)
        .args(&args)
        .current_dir(work.path())
        .env_remove("SYM64_THRESHOLD")
        .stdin(stdin)
        .output()
        .map_err(|e| e.to_string())?;
    let want_status: i32 = fs::read_to_string(case.join("status"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut problems = Vec::new();
    if out.status.code() != Some(want_status) {
        problems.push(format!(
            "status {:?}, want {want_status}",
            out.status.code()
        ));
    }
    for (what, got) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let want = fs::read(case.join(what)).unwrap();
        if *got != want {
            problems.push(format!(
                "{what}:\n--- want\n{}--- got\n{}",
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(got)
            ));
        }
    }
    let mut got = Vec::new();
    tree(work.path(), work.path(), &mut got);
    let got_tree: Vec<String> = got.iter().map(|(n, _)| n.clone()).collect();
    let want_tree: Vec<String> = fs::read_to_string(case.join("tree"))
        .unwrap()
        .lines()
        .map(|l| String::from_utf8(unescape(l)).unwrap())
        .collect();
    // Deliberate difference: where LLVM 22 fails after writing the outputs
    // of earlier filters, we fail with the same message and write nothing.
    let mut inputs = Vec::new();
    if case.join("in").is_dir() {
        tree(&case.join("in"), &case.join("in"), &mut inputs);
    }
    let input_tree: Vec<String> = inputs.iter().map(|(n, _)| n.clone()).collect();
    let all_or_nothing = want_status == 1 && got_tree == input_tree;
    if got_tree != want_tree && !all_or_nothing {
        problems.push(format!("files: {got_tree:?}, want {want_tree:?}"));
    } else {
        for (path, real) in got.iter().filter(|(p, _)| !p.ends_with('/')) {
            let want = fs::read(case.join("out").join(path))
                .or_else(|_| fs::read(case.join("in").join(path)))
                .map_err(|e| format!("{path}: no expected contents ({e})"))?;
            let got = fs::read(real).unwrap();
            if got != want {
                problems.push(format!(
                    "{path}: {} bytes, want {} bytes, first difference at {:?}",
                    got.len(),
                    want.len(),
                    got.iter().zip(&want).position(|(a, b)| a != b)
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn llvm_22_fixtures() {
    let mut dirs: Vec<PathBuf> = fs::read_dir(cases_dir())
        .expect("fixtures present")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() > 200, "fixture cases missing");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            check(d)
                .err()
                .map(|e| format!("{}: {e}", d.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
}
