//! Helpers shared by the workspace's tests (not published): running a tool
//! in a clean environment, sparse files, and the hostile-corpus runner
//! ([`hostile`]) that every tool crate's `tests/hostile.rs` and `cargo
//! xtask hostile` use. Standard library and `tempfile` only.

use std::fmt::Debug;
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub mod ar;
pub mod compatibility;
pub mod hostile;
pub mod llvm_text;
pub mod output_safety;

/// The environment variables that change the bundler's behaviour
/// (LLVM 22 reads them): a test must not inherit them.
const BUNDLER_ENV: &[&str] = &[
    "OFFLOAD_BUNDLER_VERBOSE",
    "OFFLOAD_BUNDLER_COMPRESS",
    "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
    "COMPRESSED_BUNDLE_FORMAT_VERSION",
    "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
    "OFFLOAD_TOOLS_EXPLAIN",
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

/// [`tool`], with `OFFLOAD_TOOLS_EXPLAIN=1` when `explain` (the
/// explanations after LLVM's error lines).
pub fn tool_explained(exe: &str, dir: &Path, explain: bool) -> Command {
    let mut c = tool(exe, dir);
    if explain {
        c.env("OFFLOAD_TOOLS_EXPLAIN", "1");
    }
    c
}

/// Runs the tool at `exe` in `dir` (as [`tool`]) under the name `arg0`, so
/// that its diagnostics start with that name.
pub fn run_as(exe: &str, arg0: &str, dir: &Path, args: &[&str]) -> Output {
    tool(exe, dir).arg0(arg0).args(args).output().unwrap()
}

/// The names in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Exit 1, an `: error: ` line that contains `needle`, nothing on stdout.
pub fn assert_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(o.stdout.is_empty(), "stdout: {:?}", o.stdout);
    assert!(err.contains(": error: "), "stderr: {err}");
    assert!(err.contains(needle), "want {needle:?} in: {err}");
}

/// Reverses the escaping of the fixtures' `cmd` files (`\\` and `\xHH`).
pub fn unescape(line: &str) -> Vec<u8> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).expect("hex digits");
            out.push(u8::from_str_radix(hex, 16).expect("hex digits"));
            i += 4;
        } else if b[i] == b'\\' {
            out.push(b[i + 1]);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// A xorshift64 generator from `seed` (not zero): the tests' source of
/// deterministic noise.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
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

/// An NVIDIA fat-binary container (magic 0xBA55ED50, version 1, a 16-byte
/// header) holding `entries`, each (kind, arch, flags, payload, compressed
/// size): a 64-byte entry header (version 7.1) and the payload padded to 8
/// bytes. The tests' one builder of such containers.
pub fn fatbin(entries: &[(u16, u32, u64, &[u8], u32)]) -> Vec<u8> {
    let entries: Vec<FatbinEntry<'_>> = entries
        .iter()
        .map(
            |&(kind, arch, flags, payload, compressed_size)| FatbinEntry {
                compressed_size,
                ..FatbinEntry::new(kind, arch, flags, payload)
            },
        )
        .collect();
    fatbin_with(&entries)
}

/// One entry for [`fatbin_with`].
#[derive(Clone, Copy, Debug)]
pub struct FatbinEntry<'a> {
    /// 1 PTX, 2 ELF.
    pub kind: u16,
    /// The SM number.
    pub arch: u32,
    /// The flags word (0x2000 LZ, 0x8000 zstd, 0x100000 `a`...).
    pub flags: u64,
    /// The payload as stored (padded to 8 by the builder).
    pub payload: &'a [u8],
    /// The compressed-size field.
    pub compressed_size: u32,
    /// The uncompressed-size field.
    pub uncompressed_size: u64,
    /// The entry header's size (64, 80, 112...).
    pub header_size: u32,
}

impl<'a> FatbinEntry<'a> {
    /// An entry stored as is: no compressed or uncompressed size, a
    /// 64-byte header.
    pub fn new(kind: u16, arch: u32, flags: u64, payload: &'a [u8]) -> FatbinEntry<'a> {
        FatbinEntry {
            kind,
            arch,
            flags,
            payload,
            compressed_size: 0,
            uncompressed_size: 0,
            header_size: 64,
        }
    }
}

/// A fat binary container of `entries`, each with every field given.
pub fn fatbin_with(entries: &[FatbinEntry<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let stored = e.payload.len().div_ceil(8) * 8;
        let mut h = vec![0u8; e.header_size.max(64) as usize];
        h[0..2].copy_from_slice(&e.kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&e.header_size.to_le_bytes());
        h[8..16].copy_from_slice(&(stored as u64).to_le_bytes());
        h[16..20].copy_from_slice(&e.compressed_size.to_le_bytes());
        h[24..26].copy_from_slice(&7u16.to_le_bytes());
        h[26..28].copy_from_slice(&1u16.to_le_bytes());
        h[28..32].copy_from_slice(&e.arch.to_le_bytes());
        h[40..48].copy_from_slice(&e.flags.to_le_bytes());
        h[56..64].copy_from_slice(&e.uncompressed_size.to_le_bytes());
        body.extend_from_slice(&h);
        body.extend_from_slice(e.payload);
        body.resize(body.len() + stored - e.payload.len(), 0);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The bundler's stderr with what is random or machine-specific by design
/// masked, in LLVM 22's output and ours alike: the decompression speed, and
/// the `-###` objcopy command (its program path and temporary file names).
pub fn mask_bundler_noise(text: &[u8]) -> String {
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

/// Runs the tool at `exe` (a test's `env!("CARGO_BIN_EXE_…")`) with
/// `args`, in `dir` when given; its output, whatever the exit status.
pub fn run_in(exe: &str, dir: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(exe);
    c.args(args);
    if let Some(d) = dir {
        c.current_dir(d);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {exe}: {e}"))
}

/// The standard output of a run that must have succeeded; the failure
/// shows both streams.
pub fn stdout_ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A path as the `&str` an argument list takes (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Whether `tool` runs; says why a check is skipped when it does not.
pub fn have(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        eprintln!("skipped: {tool} is not installed");
    }
    found
}
