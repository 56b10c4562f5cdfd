//! Replays the cases recorded from LLVM 22's clang-offload-bundler
//! (`cargo xtask fixtures bundler`, layout described in
//! `xtask/src/fixtures/bundler.rs`) against our binary: same exit status,
//! stdout, stderr and files. Needs no LLVM installation.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bundler")
}

/// Every regular file under `dir`, by relative path, sorted.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v
}

/// Replaces the number in each `speed: <n> MB/s` (wall-clock figures).
fn mask_speed(b: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(b);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match (line.find("speed: "), line.find(" MB/s")) {
            (Some(a), Some(z)) if a < z => {
                out.push_str(&line[..a + 7]);
                out.push('N');
                out.push_str(&line[z..]);
            }
            _ => out.push_str(line),
        }
    }
    out.into_bytes()
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in files(from) {
        let p = to.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
}

fn run_fixture(dir: &Path, bin_dir: &Path) -> Result<(), String> {
    let args: Vec<String> = fs::read_to_string(dir.join("args"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let work = tempfile::tempdir().unwrap();
    copy_tree(&dir.join("in"), work.path());
    let mut cmd = Command::new("clang-offload-bundler");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.args(&args)
        .current_dir(work.path())
        .env("PATH", path)
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_COMPRESSION_LEVEL")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_IGNORE_ENV_VAR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::piped());
    if let Ok(env) = fs::read_to_string(dir.join("env")) {
        for line in env.lines() {
            let (k, v) = line.split_once('=').unwrap();
            cmd.env(k, v);
        }
    }
    let stdin = fs::read(dir.join("stdin")).unwrap_or_default();
    let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
    let mut pipe = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let mut problems = Vec::new();
    let want_status: i32 = fs::read_to_string(dir.join("status"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if out.status.code() != Some(want_status) {
        problems.push(format!(
            "status: want {want_status}, got {:?}",
            out.status.code()
        ));
    }
    let want_stdout = fs::read(dir.join("stdout")).unwrap();
    if out.stdout != want_stdout {
        problems.push(format!(
            "stdout differs:\n--- want\n{}\n--- got\n{}",
            String::from_utf8_lossy(&want_stdout),
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    // The codec speed figures of the -verbose reports are timing.
    let want_stderr = mask_speed(&fs::read(dir.join("stderr")).unwrap());
    let got_stderr = mask_speed(&out.stderr);
    if got_stderr != want_stderr {
        problems.push(format!(
            "stderr differs:\n--- want\n{}\n--- got\n{}",
            String::from_utf8_lossy(&want_stderr),
            String::from_utf8_lossy(&got_stderr)
        ));
    }
    // LLVM 22 leaves the outputs written before an error on disk; we commit
    // all outputs or none (docs/compat.md#clang-offload-bundler). On failure the expected
    // state is therefore the initial one.
    let want_files = if want_status == 0 {
        files(&dir.join("out"))
    } else {
        files(&dir.join("in"))
    };
    let got_files = files(work.path());
    if want_files != got_files {
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
        let differing: Vec<String> = want_files
            .iter()
            .filter(|w| got_files.iter().any(|g| g.0 == w.0 && g.1 != w.1))
            .map(|w| w.0.clone())
            .collect();
        problems.push(format!(
            "files differ: want {:?}, got {:?}, contents differ in {:?}",
            names(&want_files),
            names(&got_files),
            differing
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn recorded_llvm22_cases() {
    let root = fixtures_root();
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("tests/fixtures/bundler exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("args").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 50, "expected the recorded fixtures");
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_clang-offload-bundler"),
        bin_dir.path().join("clang-offload-bundler"),
    )
    .unwrap();
    let mut failures = Vec::new();
    for d in &dirs {
        if let Err(e) = run_fixture(d, bin_dir.path()) {
            failures.push(format!(
                "== {}\n{e}",
                d.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures differ:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
