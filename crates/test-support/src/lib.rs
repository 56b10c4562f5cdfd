//! Helpers shared by the workspace's tests (not published): running a tool
//! in a clean environment, sparse files, and the hostile-corpus runner
//! ([`hostile`]) that every tool crate's `tests/hostile.rs` and `cargo
//! xtask hostile` use. Standard library and `tempfile` only.

use std::fmt::Debug;
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub mod compatibility;
pub mod hostile;
pub mod output_safety;

/// The environment variables that change the bundler's behaviour
/// (LLVM 22 reads them): a test must not inherit them.
const BUNDLER_ENV: &[&str] = &[
    "OFFLOAD_BUNDLER_VERBOSE",
    "OFFLOAD_BUNDLER_COMPRESS",
    "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
    "COMPRESSED_BUNDLE_FORMAT_VERSION",
    "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
];

/// A command for the tool at `exe` (a test's `env!("CARGO_BIN_EXE_…")`)
/// run in `dir`, with none of the bundler's environment variables and
/// stdin closed.
pub fn tool(exe: &str, dir: &Path) -> Command {
    let mut c = Command::new(exe);
    c.current_dir(dir).stdin(Stdio::null());
    for v in BUNDLER_ENV {
        c.env_remove(v);
    }
    c
}

/// Runs `cmd` and asserts that it exits with status 0; the failure names
/// `what` (typically the arguments) and shows the tool's stderr.
pub fn run_ok(cmd: &mut Command, what: impl Debug) -> Output {
    let o = cmd.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Writes `pieces` at their offsets into a file of `len` bytes, holes
/// elsewhere. False (after a note) if the file takes real disk space.
pub fn sparse_file(path: &Path, len: u64, pieces: &[(u64, &[u8])]) -> bool {
    let mut f = File::create(path).unwrap();
    for (at, bytes) in pieces {
        f.seek(SeekFrom::Start(*at)).unwrap();
        f.write_all(bytes).unwrap();
    }
    f.set_len(len).unwrap();
    drop(f);
    let used = fs::metadata(path).unwrap().blocks() * 512;
    if used > 64 << 20 {
        eprintln!("skipped: the file system does not keep {len} bytes sparse ({used} used)");
        fs::remove_file(path).unwrap();
        return false;
    }
    true
}
