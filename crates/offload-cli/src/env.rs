//! The process environment, read once.
//!
//! Every tool reads its environment variables, its program name and the
//! `PATH` through [`get`], a snapshot taken the first time it is asked for,
//! so that no other module of the workspace looks at process state.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// What the tools read from the process: `argv[0]` and the environment
/// variables, as they were when first asked for.
#[derive(Debug)]
pub struct Snapshot {
    argv0: OsString,
    vars: Vec<(OsString, OsString)>,
}

/// The environment variables LLVM consults, in order, for the temporary
/// directory: the first one that is set wins, even when empty.
const TEMP_DIR_VARS: [&str; 4] = ["TMPDIR", "TMP", "TEMP", "TEMPDIR"];

/// How many threads the process may run at once
/// (`std::thread::available_parallelism`, 1 where it cannot tell), asked
/// once: the standard library reads the cgroup's CPU quota from `/proc`
/// and `/sys` on every call (three files opened), and a walk asks for
/// each fat binary section, embedded ones included: 24,071 times for
/// PyTorch's CUDA libraries, a third of a second.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The process's snapshot (taken at the first call).
pub fn get() -> &'static Snapshot {
    static SNAPSHOT: OnceLock<Snapshot> = OnceLock::new();
    SNAPSHOT.get_or_init(|| Snapshot {
        argv0: std::env::args_os().next().unwrap_or_default(),
        vars: std::env::vars_os().collect(),
    })
}

impl Snapshot {
    /// The program name as invoked (`argv[0]`; empty if there is none).
    pub fn argv0(&self) -> &OsStr {
        &self.argv0
    }

    /// An environment variable's value, if it is set (empty counts as set).
    pub fn var(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// A variable's value as bytes.
    pub fn var_bytes(&self, name: &str) -> Option<&[u8]> {
        self.var(name).map(OsStr::as_encoded_bytes)
    }

    /// A variable's value, if set and valid UTF-8.
    pub fn var_str(&self, name: &str) -> Option<&str> {
        self.var(name).and_then(OsStr::to_str)
    }

    /// The directory LLVM puts temporary files in: the first of `TMPDIR`,
    /// `TMP`, `TEMP`, `TEMPDIR` that is set (even if empty), else `/tmp`.
    pub fn temp_dir(&self) -> OsString {
        TEMP_DIR_VARS
            .iter()
            .find_map(|v| self.var(v))
            .map_or_else(|| OsString::from("/tmp"), OsStr::to_os_string)
    }

    /// The directories of `PATH`, in order.
    pub fn path_dirs(&self) -> Vec<PathBuf> {
        self.var("PATH")
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default()
    }
}
