//! Replays the heterogeneous-device-archive cases recorded from LLVM 22
//! (`cargo xtask fixtures hda`, layout in `xtask/src/fixtures/hda.rs`)
//! against our `clang-offload-bundler -unbundle -type=a`: same status,
//! stdout, stderr and output bytes, except for the documented deviations
//! (`docs/compat.md#heterogeneous-device-archives-clang-offload-bundler--unbundle--typea`). Needs no LLVM installation.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hda")
}

/// Masks what is random or machine-specific by design: the decompression
/// speed, and the `-###` command's program path and temporary names.
fn normalise(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("Decompression speed: ") {
            out.push_str("Decompression speed: <masked>\n");
        } else if line.contains("\"--remove-section=__CLANG_OFFLOAD_BUNDLE__.*\"") {
            out.push_str("<llvm-objcopy host extraction command>\n");
        } else {
            out.push_str(line);
        }
    }
    out
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_file() {
                v.push((
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read(&p).unwrap(),
                ));
            } else if p.is_dir() {
                for (n, b) in files(&p) {
                    v.push((format!("{}/{n}", e.file_name().to_string_lossy()), b));
                }
            }
        }
    }
    v.sort();
    v
}

fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn replay(case: &Path, bin_dir: &Path) -> Result<(), String> {
    let inputs_dir = root().join("inputs");
    let work = tempfile::tempdir().unwrap();
    let mut initial = Vec::new();
    for name in lines(&case.join("inputs")) {
        let bytes = fs::read(inputs_dir.join(&name)).unwrap();
        fs::write(work.path().join(&name), &bytes).unwrap();
        initial.push((name, bytes));
    }
    initial.sort();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("clang-offload-bundler")
        .args(lines(&case.join("args")))
        .current_dir(work.path())
        .env("PATH", path)
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_IGNORE_ENV_VAR")
        .env_remove("SYM64_THRESHOLD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdin = fs::read(case.join("stdin")).unwrap_or_default();
    let mut pipe = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();

    let deviation = fs::read_to_string(case.join("deviation")).unwrap_or_default();
    let deviation = deviation.trim();
    let mut status: i32 = fs::read_to_string(case.join("status"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut stderr = fs::read(case.join("stderr")).unwrap();
    let mut want_new = files(&case.join("out"));
    match deviation {
        "" => {
            if status != 0 && !want_new.is_empty() {
                return Err("fixture: a failing case without a deviation wrote files".into());
            }
        }
        "all-or-nothing" => {
            assert_ne!(status, 0);
            assert!(!want_new.is_empty(), "fixture: 22 wrote nothing");
            want_new.clear();
        }
        "reported" => {
            status = 1;
            stderr = fs::read(case.join("ours.stderr")).unwrap();
            want_new.clear();
        }
        other => return Err(format!("unknown deviation {other}")),
    }
    let mut problems = Vec::new();
    if out.status.code() != Some(status) {
        problems.push(format!(
            "status: want {status}, got {:?}",
            out.status.code()
        ));
    }
    let want_stdout = fs::read(case.join("stdout")).unwrap();
    if out.stdout != want_stdout {
        problems.push("stdout differs".to_string());
    }
    if normalise(&out.stderr) != normalise(&stderr) {
        problems.push(format!(
            "stderr differs:\n--- want\n{}--- got\n{}",
            normalise(&stderr),
            normalise(&out.stderr)
        ));
    }
    let got_new: Vec<(String, Vec<u8>)> = files(work.path())
        .into_iter()
        .filter(|f| !initial.contains(f))
        .collect();
    if got_new != want_new {
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        problems.push(format!(
            "outputs differ: want {:?}, got {:?}",
            names(&want_new),
            names(&got_new)
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn recorded_llvm22_archive_cases() {
    let mut cases: Vec<PathBuf> = fs::read_dir(root().join("cases"))
        .expect("tests/fixtures/hda/cases exists")
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 30, "expected the recorded cases");
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_clang-offload-bundler"),
        bin.path().join("clang-offload-bundler"),
    )
    .unwrap();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            replay(c, bin.path())
                .err()
                .map(|e| format!("== {}\n{e}", c.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
