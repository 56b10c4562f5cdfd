//! `cargo xtask mutate`: differential mutation testing against LLVM 22.
//!
//! Takes real inputs (the committed fixtures and the hostile corpus:
//! bundles, CCOBs, offload binaries, archives, objects, bitcode), mutates
//! them at random (bit flips, byte sets, truncations, splices of two
//! inputs, edits of header fields at known offsets: counts, offsets,
//! sizes, versions) and runs our tool and LLVM's on each with the same
//! command line (several per format). Reported:
//!
//! - every case where we crash (a signal, a panic), hang (timeout) or
//!   exceed the memory bound (`prlimit --as`);
//! - every case where LLVM exits cleanly (status 0 or 1, no signal, no
//!   stack dump) and we differ in exit status, stdout, stderr or the bytes
//!   of the files left in the directory. Differences that are documented
//!   policies (docs/compat.md) are counted separately, by policy.
//!
//! Findings (the input bytes, the command line, both outcomes) are written
//! under `--findings DIR` (default `target/mutate/findings`), a few per
//! class and command, to become regression tests. At most two cases run
//! at once. `--replay DIR` runs saved findings again (after a fix).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::harness::{our_bin_dir, reference_tool, run_with_timeout, workspace_root, Rng};

const USAGE: &str = "cargo xtask mutate [--seed N] [--seconds S | --cases N] [--jobs 1|2] [--findings DIR] [--max-size BYTES] [--bin-dir DIR] [--replay FINDINGS-DIR] [--recheck RUN-FINDINGS-DIR --seed N]";

/// Our tools run under this address-space limit.
const MEMORY_LIMIT: u64 = 512 << 20;
/// Either tool is killed after this long.
const TIME_LIMIT: Duration = Duration::from_secs(10);
/// Findings kept per (class, command kind).
const KEEP: usize = 20;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Format {
    Bundle,
    Ccob,
    OffloadBinary,
    Archive,
    Object,
    Bitcode,
}

impl Format {
    fn sniff(b: &[u8]) -> Option<Format> {
        Some(if b.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") {
            Format::Bundle
        } else if b.starts_with(b"CCOB") {
            Format::Ccob
        } else if b.starts_with(&[0x10, 0xFF, 0x10, 0xAD]) {
            Format::OffloadBinary
        } else if b.starts_with(b"!<arch>\n") || b.starts_with(b"!<thin>\n") {
            Format::Archive
        } else if b.starts_with(b"\x7fELF")
            || b.starts_with(&[0x64, 0x86])
            || b.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
        {
            Format::Object
        } else if b.starts_with(b"BC\xC0\xDE") || b.starts_with(&[0xDE, 0xC0, 0x17, 0x0B]) {
            Format::Bitcode
        } else {
            return None;
        })
    }

    fn name(self) -> &'static str {
        match self {
            Format::Bundle => "bundle",
            Format::Ccob => "ccob",
            Format::OffloadBinary => "offload-binary",
            Format::Archive => "archive",
            Format::Object => "object",
            Format::Bitcode => "bitcode",
        }
    }
}

/// One real input and the command lines it is run with (`{in}` is the
/// mutated input, outputs are `o1`, `o2`).
struct Seed {
    path: PathBuf,
    bytes: Vec<u8>,
    format: Format,
    commands: Vec<(&'static str, Vec<String>)>,
}

/// Entry IDs found in the bytes (those of binary bundles and archives
/// are stored as text), for `-targets`.
fn ids_in(bytes: &[u8]) -> Vec<String> {
    let mut ids = Vec::new();
    let kinds: [&[u8]; 6] = [b"host-", b"hip-", b"hipv4-", b"openmp-", b"cuda-", b"sycl-"];
    let mut i = 0;
    while i < bytes.len() {
        if let Some(k) = kinds.iter().find(|k| bytes[i..].starts_with(k)) {
            let end = bytes[i..]
                .iter()
                .position(|&c| !(c.is_ascii_alphanumeric() || b"-_.:+".contains(&c)))
                .map_or(bytes.len(), |p| i + p);
            let id = String::from_utf8_lossy(&bytes[i..end]).into_owned();
            if id.len() > k.len() + 3 && id.matches('-').count() >= 2 && !ids.contains(&id) {
                ids.push(id);
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    ids
}

fn commands(format: Format, bytes: &[u8]) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut ids = ids_in(bytes);
    if ids.is_empty() {
        ids.push("hip-amdgcn-amd-amdhsa--gfx906".into());
    }
    let first = ids[0].clone();
    let two = ids.iter().take(2).cloned().collect::<Vec<_>>().join(",");
    let outs2: Vec<String> = (1..=ids.len().min(2))
        .map(|i| format!("-output=o{i}"))
        .collect();
    let mut v: Vec<(&'static str, Vec<String>)> = Vec::new();
    // The bundler's reading commands for a file type: listing, unbundling
    // the first ID to one file, and the first two IDs (missing ones allowed
    // where LLVM allows them for the type).
    let list = |ty: &str| s(&["-list", &format!("-type={ty}"), "-input=in"]);
    let unbundle_first = |ty: &str| {
        s(&[
            "-unbundle",
            &format!("-type={ty}"),
            &format!("-targets={first}"),
            "-input=in",
            "-output=o1",
        ])
    };
    let unbundle_two = |ty: &str, allow_missing: bool| {
        let mut c = s(&[
            "-unbundle",
            &format!("-type={ty}"),
            &format!("-targets={two}"),
            "-input=in",
        ]);
        c.extend(outs2.iter().cloned());
        if allow_missing {
            c.push("-allow-missing-bundles".into());
        }
        c
    };
    let bundler = |c| ("clang-offload-bundler", c);
    match format {
        Format::Bundle | Format::Ccob | Format::Bitcode => {
            v.push(bundler(list("bc")));
            v.push(bundler(unbundle_first("bc")));
            v.push(bundler(unbundle_two("bc", true)));
        }
        Format::Object => {
            v.push(bundler(list("o")));
            v.push(bundler(unbundle_two("o", false)));
        }
        Format::Archive => {
            v.push(bundler(unbundle_first("a")));
            v.push(bundler(unbundle_two("a", true)));
            v.push((
                "llvm-offload-binary",
                s(&["in", "--archive", "--image=file=o1,kind=openmp"]),
            ));
        }
        Format::OffloadBinary => {
            v.push(("llvm-offload-binary", s(&["in", "--image=file=o1"])));
            v.push((
                "llvm-offload-binary",
                s(&[
                    "in",
                    "--image=file=o1,arch=sm_70",
                    "--image=file=o2,kind=openmp",
                ]),
            ));
            v.push((
                "clang-offload-packager",
                s(&["in", "--image=file=o1,triple=amdgcn-amd-amdhsa"]),
            ));
            v.push((
                "llvm-offload-wrapper",
                s(&["--kind=openmp", "in", "-o", "o1"]),
            ));
        }
    }
    v
}

fn collect_seeds(max_size: usize) -> Result<Vec<Seed>, String> {
    let root = workspace_root();
    let mut files = Vec::new();
    for d in ["tests/fixtures", "tests/hostile"] {
        walk(&root.join(d), &mut files);
    }
    files.sort();
    let mut seen = std::collections::HashSet::new();
    let mut seeds = Vec::new();
    for path in files {
        let Ok(md) = fs::metadata(&path) else {
            continue;
        };
        if !md.is_file() || md.len() as usize > max_size || md.len() < 8 {
            continue;
        }
        let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(format) = Format::sniff(&bytes) else {
            continue;
        };
        if !seen.insert(bytes.clone()) {
            continue;
        }
        let commands = commands(format, &bytes);
        seeds.push(Seed {
            path,
            bytes,
            format,
            commands,
        });
    }
    Ok(seeds)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Interesting values for header fields.
fn interesting(rng: &mut Rng, len: usize) -> u64 {
    let l = len as u64;
    *rng.pick(&[
        0,
        1,
        2,
        3,
        4,
        7,
        8,
        16,
        0x7f,
        0x80,
        0xff,
        0x100,
        0xffff,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        0x1_0000_0000,
        i64::MAX as u64,
        u64::MAX,
        u64::MAX - 7,
        l,
        l.wrapping_sub(1),
        l + 1,
        l / 2,
        l.wrapping_mul(2),
    ])
}

/// Offsets of header fields worth editing, by format (counts, offsets,
/// sizes, versions); a random aligned offset near the start otherwise.
fn field_offsets(format: Format, b: &[u8]) -> Vec<(usize, usize)> {
    match format {
        // magic(24) count(8) then per entry: offset, size, id length (8 each).
        Format::Bundle => vec![(24, 8), (32, 8), (40, 8), (48, 8)],
        // magic, version(2), method(2), then sizes and hash by version.
        Format::Ccob => vec![(4, 2), (6, 2), (8, 4), (8, 8), (12, 4), (16, 8), (24, 8)],
        // magic, version(4), size(8), entry offset(8), entry size(8); an
        // entry: kind, flags, image offset/size, string offset/count.
        Format::OffloadBinary => vec![
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 8),
            (32, 2),
            (34, 2),
            (36, 4),
            (40, 8),
            (48, 8),
            (56, 8),
            (64, 8),
            (72, 8),
            (80, 8),
        ],
        // ELF header: e_shoff (40), e_shentsize (58), e_shnum (60),
        // e_shstrndx (62).
        Format::Object if b.starts_with(b"\x7fELF") => {
            vec![(40, 8), (58, 2), (60, 2), (62, 2), (32, 8)]
        }
        _ => Vec::new(),
    }
}

fn mutate(rng: &mut Rng, seed: &Seed, seeds: &[Seed]) -> (Vec<u8>, String) {
    let mut b = seed.bytes.clone();
    let mut what = Vec::new();
    let rounds = rng.range(1, 3);
    for _ in 0..rounds {
        if b.is_empty() {
            b.push(0);
        }
        match rng.below(7) {
            0 => {
                let n = rng.range(1, 8);
                for _ in 0..n {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
                what.push(format!("flip{n}"));
            }
            1 => {
                let n = rng.range(1, 4);
                for _ in 0..n {
                    let i = rng.below(b.len());
                    let random = rng.next_u64() as u8;
                    b[i] = *rng.pick(&[0, 0xff, 0x7f, 0x80, 1, random]);
                }
                what.push(format!("set{n}"));
            }
            2 => {
                let n = rng.below(b.len());
                b.truncate(n);
                what.push(format!("trunc@{n}"));
            }
            3 => {
                let other = rng.pick(seeds);
                let cut = rng.below(b.len() + 1);
                let from = rng.below(other.bytes.len() + 1);
                b.truncate(cut);
                b.extend_from_slice(&other.bytes[from..]);
                what.push(format!("splice@{cut}+{from}"));
            }
            4 | 5 => {
                let fields = field_offsets(seed.format, &b);
                let (at, width) = if fields.is_empty() || rng.chance(1, 4) {
                    let width = *rng.pick(&[2usize, 4, 8]);
                    (rng.below(b.len().min(256)) / width * width, width)
                } else {
                    *rng.pick(&fields)
                };
                let v = interesting(rng, b.len());
                let v = if rng.chance(1, 3) {
                    // A small change of what is there.
                    let mut cur = [0u8; 8];
                    let end = (at + width).min(b.len());
                    if at < end {
                        cur[..end - at].copy_from_slice(&b[at..end]);
                    }
                    u64::from_le_bytes(cur)
                        .wrapping_add(rng.range(0, 16) as u64)
                        .wrapping_sub(8)
                } else {
                    v
                };
                let bytes = v.to_le_bytes();
                for (k, byte) in bytes.iter().take(width).enumerate() {
                    if let Some(x) = b.get_mut(at + k) {
                        *x = *byte;
                    }
                }
                what.push(format!("field@{at}/{width}={v:#x}"));
            }
            _ => {
                // An archive member's decimal size, or bytes inserted/removed.
                if seed.format == Format::Archive && b.len() > 68 && rng.chance(1, 2) {
                    let v = format!("{:<10}", rng.below(b.len() * 2));
                    b[56..66].copy_from_slice(&v.as_bytes()[..10]);
                    what.push("member-size".into());
                } else {
                    let i = rng.below(b.len());
                    let n = rng.range(1, 64).min(b.len() - i);
                    if rng.chance(1, 2) {
                        b.drain(i..i + n);
                        what.push(format!("cut@{i}+{n}"));
                    } else {
                        let ins = rng.bytes(n);
                        b.splice(i..i, ins);
                        what.push(format!("insert@{i}+{n}"));
                    }
                }
            }
        }
    }
    (b, what.join(","))
}

/// What one run showed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    /// Exit status, 128 + signal, or -1 on timeout.
    status: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Files in the directory after the run, other than the input.
    files: BTreeMap<String, Vec<u8>>,
}

fn run_one(exe: &Path, tool: &str, args: &[String], input: &[u8], dir: &Path, limit: bool) -> Run {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).expect("scratch directory");
    fs::write(dir.join("in"), input).expect("write input");
    let mut cmd = if limit {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={MEMORY_LIMIT}")).arg("--").arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_VERBOSE");
    let (status, stdout, stderr) = match run_with_timeout(cmd, None, TIME_LIMIT) {
        Ok(r) => r,
        Err(_) => (-1, Vec::new(), Vec::new()),
    };
    // Messages quote argv[0]: show both as the bare tool name. llvm-objcopy
    // can name the bundler's temporary file, whose name is random.
    let exe_text = exe.to_string_lossy().into_owned();
    let stderr = String::from_utf8_lossy(&stderr)
        .replace(&exe_text, tool)
        .into_bytes();
    let stderr = test_support::llvm_text::mask_temp_names(&stderr);
    let mut files = BTreeMap::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != "in" {
                files.insert(name, fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    Run {
        status,
        stdout,
        stderr,
        files,
    }
}

/// The wrappers' bitcode is compared as LLVM reads it (as the conformance
/// suite does): the same module, not the same bytes (docs/compat.md).
/// Only outputs whose bytes differ are disassembled (`llvm-dis-22` is a
/// process start per file); `dirs` are where each run left its files.
fn compare_wrapper_modules(tool: &str, ours: &mut Run, llvm: &mut Run, dirs: [&Path; 2]) {
    if !tool.ends_with("-wrapper") || ours.files == llvm.files {
        return;
    }
    for (run, dir) in [ours, llvm].into_iter().zip(dirs) {
        for (name, bytes) in run.files.iter_mut() {
            if bytes.starts_with(b"BC\xC0\xDE") {
                *bytes = disassembly(&dir.join(name));
            }
        }
    }
}

/// `llvm-dis-22`'s reading of a bitcode file (its error text if it fails).
fn disassembly(path: &Path) -> Vec<u8> {
    let Some(dis) = crate::harness::llvm22("llvm-dis") else {
        return fs::read(path).unwrap_or_default();
    };
    match Command::new(dis).arg(path).args(["-o", "-"]).output() {
        Ok(o) => {
            let mut v = o.stdout;
            v.extend_from_slice(&o.stderr);
            // The module ID is the file's path.
            let text =
                String::from_utf8_lossy(&v).replace(&path.to_string_lossy().into_owned(), "FILE");
            text.into_bytes()
        }
        Err(e) => e.to_string().into_bytes(),
    }
}

/// A stack dump or a crash report: LLVM did not exit cleanly.
fn llvm_clean(r: &Run) -> bool {
    let text = String::from_utf8_lossy(&r.stderr);
    matches!(r.status, 0 | 1)
        && !text.contains("Stack dump")
        && !text.contains("PLEASE submit a bug report")
        && !text.contains("#0 0x")
        // Writing from an address outside its buffer: LLVM read past it.
        && !text.contains("IO failure on output stream: Bad address")
}

/// How LLVM 22's llvm-offload-binary ends when the output for an image
/// past the end of its binary cannot have the image's size: `ftruncate`
/// of a file, memory for standard output or a device, the archive
/// writer's member size.
const LLVM_OUTPUT_REFUSED: [&str; 4] = [
    "error: Invalid argument",
    "error: File too large",
    "error: Cannot allocate memory",
    "exceeds size limit",
];

/// The documented policy a difference falls under, if any.
fn policy(
    seed_format: Format,
    tool: &str,
    args: &[String],
    input: &[u8],
    ours: &Run,
    llvm: &Run,
) -> Option<&'static str> {
    let ours_text = String::from_utf8_lossy(&ours.stderr);
    let llvm_text = first_line(&llvm.stderr);
    if let Some(p) = unloaded_module_policy(tool, args, input, ours, llvm) {
        return Some(p);
    }
    if ours.status == llvm.status && ours.stderr == llvm.stderr && ours.stdout == llvm.stdout {
        // Only the files differ: LLVM left outputs behind an error.
        if llvm.status != 0 && ours.files.is_empty() {
            return Some("no partial outputs (compat policy 2)");
        }
    }
    if (ours_text.contains("hash") && seed_format == Format::Ccob)
        || ours_text.contains("Compressed bundle hash mismatch")
    {
        // Also a compressed code object inside an archive member.
        return Some("CCOB hash verified (compat policy 5)");
    }
    if [
        "Compressed bundle is truncated",
        "is smaller than its",
        "does not match the size recorded",
    ]
    .iter()
    .any(|t| ours_text.contains(t))
    {
        return Some("CCOB sizes checked (compat policy 5)");
    }
    // An offload binary of version 2 or 3 anywhere in the input (the
    // second of two, say), which LLVM 22 refuses.
    let v2_or_v3 = |w: &[u8]| w[..4] == [0x10, 0xFF, 0x10, 0xAD] && (w[4] == 2 || w[4] == 3);
    if llvm.status != 0
        && (input.get(..5).is_some_and(v2_or_v3)
            || (input.windows(5).any(v2_or_v3)
                && llvm_text.contains("Invalid data was encountered while parsing the file")))
    {
        return Some("offload binary versions 2 and 3 read (compat policy 6)");
    }
    if [
        "extends past the end of the offload binary",
        "extend past the end of the offload binary",
        "lies past the end of the offload binary",
    ]
    .iter()
    .any(|t| ours_text.contains(t))
        && ours.status == 1
        // An image past the end that LLVM 22 asks an output of its size
        // for: where the system refuses that size, LLVM fails cleanly with
        // the OS text (or the archive writer's), which is the text to print.
        && !LLVM_OUTPUT_REFUSED
            .iter()
            .any(|t| String::from_utf8_lossy(&llvm.stderr).trim_end().ends_with(t))
        // An image past the end that LLVM 22 never writes (no filter
        // selects it): it is never read, so there is nothing to refuse.
        && !(ours_text.contains("image at offset") && llvm.status == 0 && llvm.files.is_empty())
    {
        // LLVM 22 does not check these ranges and reads out of bounds
        // (crashing, or going on with whatever lies there).
        return Some(
            "offload binary ranges checked where LLVM reads out of bounds (compat policy 1)",
        );
    }
    // A BSD `#1/` member name cut by the end of the archive: LLVM reads the
    // rest of the name from beyond its buffer. Where those bytes are not
    // zeros, its text names the member with them; ours, with the bytes the
    // file has (what LLVM prints when they are zeros).
    if ours.status == llvm.status
        && ours_text.contains("truncated or malformed archive")
        && ours_text.trim_end().ends_with(')')
        && llvm_text.trim_end().ends_with(')')
    {
        let (a, b) = (ours_text.trim_end(), llvm_text.trim_end());
        let stem = &a[..a.len() - 1];
        if b.len() > a.len() && b.starts_with(stem) && b.ends_with(')') {
            return Some(
                "archive member name read past the end of the file by LLVM (compat policy 1)",
            );
        }
    }
    if ours_text.contains("would both be stored as")
        || ours_text.contains("both select the bundle entry")
    {
        return Some("targets that standardise alike refused (compat policy 4)");
    }
    if seed_format == Format::Ccob
        && ours.status == llvm.status
        && ours_text.contains("Could not decompress embedded file contents")
        && llvm_text.contains("Could not decompress embedded file contents")
    {
        // The payload ends at the recorded total size, where LLVM 22
        // decodes to the end of the input: the codec fails differently.
        return Some("CCOB ends at its recorded total size (compat policy 5)");
    }
    if seed_format == Format::Ccob
        && ours.status == 1
        && llvm.status == 1
        && ours_text.contains("Could not decompress embedded file contents")
        && !llvm_text.contains("decompress")
    {
        // A recorded total size below the payload's: we hand the codec
        // the payload up to it, which it refuses; LLVM 22 decodes to the
        // end of the input and fails later (a missing target, say).
        return Some("CCOB ends at its recorded total size (compat policy 5)");
    }
    if seed_format == Format::Ccob
        && ours.status == 0
        && llvm_text.contains("Could not decompress embedded file contents")
    {
        // Bytes after the recorded total size (trailing data, another
        // CCOB): LLVM 22 hands them to the codec, which fails.
        return Some("CCOB ends at its recorded total size (compat policy 5)");
    }
    if ours_text.contains("Compressed bundle header size too small") && llvm.status == 1 {
        // A header shorter than its version's: LLVM 22 reads its fields
        // past the end of the input, then fails in the codec.
        return Some("short CCOB header refused where LLVM reads past it (compat policy 1)");
    }
    if llvm.status == 1
        && ours.status == 1
        && String::from_utf8_lossy(&llvm.stderr).contains("'llvm-objcopy' tool failed")
        && ours_text.contains("The end of the file was unexpectedly encountered")
        && seed_format == Format::Object
        && coff_records_past_the_end(input)
    {
        // llvm-objcopy reads the records past the end without a bounds
        // check, then fails on what it read there (a relocation naming a
        // symbol it never saw); we stop at the end of the file.
        return Some("COFF records past the end of the file refused (compat: object bundles 3)");
    }
    if llvm.status == 1
        && String::from_utf8_lossy(&llvm.stderr).contains("'llvm-objcopy' tool failed")
        && ours.status == 1
        && ours.files.is_empty()
        // Unbundling a host llvm-objcopy refuses: we print its two lines.
        && !args.iter().any(|a| a == "-unbundle")
    {
        return Some("llvm-objcopy refuses the host: our message, no partial output (compat: object bundles)");
    }
    if ours_text.contains("truncated or malformed archive")
        && ours.status == 1
        && (llvm.status == 0 || !llvm_text.contains("truncated or malformed archive"))
        // A member cut by the end whose own error its bytes decide: LLVM
        // 22 reports that error first, and so must we.
        && !cut_member_decided(tool, input)
    {
        // docs/compat.md, device archives: a damaged member header after
        // the first member, or member data past the end of the archive.
        return Some("damaged archive reported (compat: device archives)");
    }
    if ours.status == 1
        && llvm.status == 1
        && ours_text.contains("has a size or ID length beyond 64 bits")
        && llvm_text.contains("Can't find bundles for")
    {
        // LLVM stopped reading the header at the entry whose sum wraps
        // (its wrapped sum fails its range check), then misses the target
        // asked for; we refuse the header.
        return Some("bundle header sums wrapping past 2^64 refused (compat: bundler)");
    }
    if llvm.status == 0 && ours.status == 1 {
        // LLVM went on without a word where we refuse: only the refusals
        // compat.md lists count as policy.
        if ours_text.contains("truncated offload binary: the") {
            // Offload wrappers: 22 reads out of bounds and embeds pointers
            // outside the image.
            return Some("packaged input outside the file refused (compat: offload wrappers)");
        }
        const UNREADABLE_HOST: &str =
            "host llvm-objcopy 22 would leave unreadable refused (compat: object bundles 3)";
        // The host object LLVM wrote, for the refusals of a host below.
        let llvm_host = matches!(seed_format, Format::Object | Format::Archive)
            .then(|| host_output(args).and_then(|name| llvm.files.get(&name)))
            .flatten();
        if ours_text.contains("cannot be removed because it is referenced by the section")
            && seed_format == Format::Object
        {
            // llvm-objcopy 22 drops the symbol and keeps what refers to it:
            // an object llvm-objcopy itself cannot read back.
            return Some(UNREADABLE_HOST);
        }
        if ours_text.contains("the result would not be a readable object")
            && llvm_host.is_some_and(|f| !llvm_reads_object(f))
        {
            // llvm-objcopy 22 wrote an output llvm-readobj-22 cannot open
            // (relocations over the file header, no section table, ...).
            return Some(UNREADABLE_HOST);
        }
        if ours_text.contains("the rewritten object would be")
            && llvm_host.is_some_and(|f| f.len() as u64 > input.len() as u64 + (64 << 20))
        {
            // LLVM wrote a host object more than 64 MiB larger than its
            // input because of one header word.
            return Some("output size cap (compat: object bundles 4)");
        }
        if ours_text.contains("The end of the file was unexpectedly encountered")
            && seed_format == Format::Object
            && coff_records_past_the_end(input)
        {
            // llvm-objcopy reads auxiliary symbol records and relocation
            // tables without a bounds check.
            return Some(
                "COFF records past the end of the file refused (compat: object bundles 3)",
            );
        }
        if ours_text.contains("holds symbol indexes but its size is not a multiple of 4")
            && seed_format == Format::Object
        {
            // llvm-objcopy maps the whole entries and writes the section's
            // last bytes from beyond the buffer holding the new ones.
            return Some(
                "COFF Control Flow Guard table with a partial entry refused (compat: object bundles 3)",
            );
        }
        if ours_text.contains("has a size or ID length beyond 64 bits") {
            return Some("bundle header sums wrapping past 2^64 refused (compat: bundler)");
        }
        if seed_format == Format::Ccob
            && [
                "Could not decompress embedded file contents",
                "Compressed bundle header size too small",
            ]
            .iter()
            .any(|t| ours_text.contains(t))
        {
            // A payload cut at its recorded total size, a recorded size
            // beyond what the data gives (or than the memory bound
            // allows), a cut CCOB after a first one.
            return Some("CCOB sizes checked (compat policy 5)");
        }
    }
    None
}

/// Whether `input` is an archive with a member cut by its end whose own
/// error, as `tool` reads members, the bytes present decide.
fn cut_member_decided(tool: &str, input: &[u8]) -> bool {
    if tool == "clang-offload-bundler" {
        offload_format::device_archive::first_cut_member_error(input).is_some()
    } else {
        offload_format::offload_binary::extract::first_cut_member_error(input).is_some()
    }
}

/// Our tool under the memory bound. A clean refusal to allocate more than
/// the bound allows (a real decompression bomb, say, that LLVM expands
/// without a limit) is run again without the bound, so that what is
/// compared is what the tool does, not what the harness allows; such runs
/// still go to HANG or CRASH if they misbehave.
fn run_ours(exe: &Path, tool: &str, args: &[String], input: &[u8], dir: &Path) -> Run {
    let bounded = run_one(exe, tool, args, input, dir, true);
    if bounded.status == 1 && String::from_utf8_lossy(&bounded.stderr).contains("cannot allocate") {
        return run_one(exe, tool, args, input, dir, false);
    }
    bounded
}

/// Texts of LLVM's bitstream layer (lib/Bitstream/Reader and the bitcode
/// header checks): a module that fails with one of these fails while its
/// blocks are being walked, which our reader does too, so a difference
/// there is ours to fix, never the module-level policy.
const BITSTREAM_TEXTS: &[&str] = &[
    "can't skip to bit",
    "can't enter sub-block",
    "Invalid abbrev number",
    "Fixed or VBR abbrev record with size > MaxChunkData",
    "Abbrev record with no operands",
    "Unterminated VBR",
    "Unexpected end of file",
    "Failed to read size",
    "Size is not plausible",
    "Array op not second to last",
    "Array element type has to be an encoding of a type",
    "Array element type can't be an Array or a Blob",
    "Abbreviation starts with an Array or a Blob",
    "Expected value symbol table subblock",
    "Blob ends too soon",
    "Invalid encoding",
    "Malformed block",
    "Invalid bitcode signature",
    "Invalid bitcode wrapper header",
    "file too small to contain bitcode header",
    "Invalid BLOCKINFO",
    "Unknown block",
];

/// True for a message of LLVM's bitcode reader that comes from reading a
/// module's IR (attribute groups, types, the data layout, ...), above the
/// bitstream layer.
fn module_level_text(message: &str) -> bool {
    !message.is_empty() && !BITSTREAM_TEXTS.iter().any(|t| message.contains(t))
}

/// The bitcode files in an input: the input itself, or an archive's
/// bitcode members.
fn bitcode_pieces(input: &[u8]) -> Vec<&[u8]> {
    if offload_format::bitcode::is_bitcode(input) {
        return vec![input];
    }
    let Ok(archive) = offload_format::archive::Archive::parse(input) else {
        return Vec::new();
    };
    archive
        .members()
        .map_while(Result::ok)
        .filter_map(|m| match m.content {
            offload_format::archive::MemberContent::Inline(d)
                if offload_format::bitcode::is_bitcode(d) =>
            {
                Some(d)
            }
            _ => None,
        })
        .collect()
}

/// What `llvm-dis-22` says about a bitcode file: `None` if it loads it,
/// else its error message (without the program name).
fn llvm_load_error(bitcode: &[u8]) -> Option<String> {
    let dis = crate::harness::llvm22("llvm-dis")?;
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().join("m.bc");
    fs::write(&path, bitcode).ok()?;
    let o = Command::new(dis)
        .arg(&path)
        .args(["-o", "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if o.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().find(|l| l.contains("error: "))?;
    Some(
        line.split_once("error: ")
            .map_or(line, |(_, m)| m)
            .to_string(),
    )
}

/// Whether `data` is a COFF object with auxiliary symbol records or a
/// relocation table that run past the end of the file (which llvm-objcopy
/// reads without a bounds check), as the crate's COFF reader sees it.
fn coff_records_past_the_end(data: &[u8]) -> bool {
    use offload_format::objfile::coff::CoffFile;
    let Ok(file) = CoffFile::parse(data) else {
        return false;
    };
    let relocations = (0..file.section_count())
        .filter_map(|i| file.section_header(i).ok())
        .any(|h| file.relocations(&h).is_err());
    let aux = match (file.symbol_table_offset(), file.symbols()) {
        (Some(base), Ok(symbols)) => symbols.iter().any(|s| {
            let records = 1 + u64::from(s.index) + u64::from(s.number_of_aux);
            s.number_of_aux > 0 && base + records * file.symbol_size() > data.len() as u64
        }),
        _ => false,
    };
    relocations || aux
}

/// The output a bundler command writes the host object to: the only
/// output when bundling, or the one in the host target's place when
/// unbundling.
fn host_output(args: &[String]) -> Option<String> {
    let outputs: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("-output="))
        .collect();
    if !args.iter().any(|a| a == "-unbundle") {
        return (outputs.len() == 1).then(|| outputs[0].to_string());
    }
    let targets = args.iter().find_map(|a| a.strip_prefix("-targets="))?;
    let host = targets.split(',').position(|t| t.starts_with("host-"))?;
    outputs.get(host).map(|o| o.to_string())
}

/// Whether `llvm-readobj-22` opens `data` as an object file (its file
/// headers print without an error).
fn llvm_reads_object(data: &[u8]) -> bool {
    let Some(readobj) = crate::harness::llvm22("llvm-readobj") else {
        return true;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return true;
    };
    let path = dir.path().join("out.o");
    if fs::write(&path, data).is_err() {
        return true;
    }
    Command::new(readobj)
        .arg("--file-headers")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Archives equal but for their symbol tables (members, names, order).
fn same_but_symbol_index(a: &[u8], b: &[u8]) -> bool {
    use offload_format::archive::Archive;
    let members = |data| -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let archive = Archive::parse(data).ok()?;
        archive
            .members()
            .map(|m| {
                let m = m.ok()?;
                match m.content {
                    offload_format::archive::MemberContent::Inline(d) => {
                        Some((m.name.to_vec(), d.to_vec()))
                    }
                    _ => None,
                }
            })
            .collect()
    };
    matches!((members(a), members(b)), (Some(x), Some(y)) if x == y)
}

/// docs/compat.md, device archives ("module-level IR not validated"):
/// LLVM 22 loads a bitcode module's IR (attribute groups, types, data
/// layout, ...) where we read only the parts we need, so a module damaged
/// there and only there is refused by LLVM and read by us. Counted only
/// when LLVM's own reader names a module-level fault, never a
/// bitstream-level one, and the outcomes differ in nothing else:
/// - `llvm-offload-binary --archive` (and the packager): LLVM fails with
///   "Failed to create module" where we go on; `llvm-dis-22` must refuse
///   a bitcode piece of the input with a module-level text;
/// - `clang-offload-bundler -type=a`, `llvm-offload-binary --archive`:
///   LLVM warns `'<member>': <text>`
///   with a module-level text and leaves the member's symbols out of the
///   output archive's index; our stderr is LLVM's without those warnings
///   (and without our own warning for such a member, when our reader went
///   past LLVM's module-level fault and met a bitstream fault further on)
///   and the archives hold the same members;
/// - the same commands, where such a member also has module-level inline
///   assembly: we refuse the archive (LLVM 22 crashes on that assembly
///   once the module is loaded), LLVM warns for the member it could not
///   load and goes on.
fn unloaded_module_policy(
    tool: &str,
    args: &[String],
    input: &[u8],
    ours: &Run,
    llvm: &Run,
) -> Option<&'static str> {
    const POLICY: &str = "bitcode module IR not validated (compat: device archives)";
    let llvm_text = String::from_utf8_lossy(&llvm.stderr);
    if matches!(tool, "llvm-offload-binary" | "clang-offload-packager")
        && llvm.status == 1
        && ours.status == 0
        && llvm_text
            .lines()
            .any(|l| l.ends_with("error: Failed to create module"))
    {
        let errors: Vec<String> = bitcode_pieces(input)
            .into_iter()
            .filter_map(llvm_load_error)
            .collect();
        if !errors.is_empty() && errors.iter().all(|e| module_level_text(e)) {
            return Some(POLICY);
        }
        return None;
    }
    let writes_archive = match tool {
        "clang-offload-bundler" => args.iter().any(|a| a == "-type=a"),
        _ => args.iter().any(|a| a == "--archive"),
    };
    // A member with module-level inline assembly: we refuse the archive
    // (LLVM 22 crashes once it has loaded such a module), but LLVM never
    // got that far when the module fails to load for an IR-level fault:
    // it warns and leaves the member out of the index.
    if writes_archive && ours.status == 1 && llvm.status == 0 {
        let ours_text = String::from_utf8_lossy(&ours.stderr);
        let refused = ours_text.lines().find_map(|l| {
            l.split_once("error: '")
                .and_then(|(_, r)| r.split_once("': bitcode with module-level inline assembly"))
                .map(|(member, _)| member.to_string())
        });
        if let Some(member) = refused {
            let warned = llvm_text.lines().any(|l| {
                l.strip_prefix("warning: '")
                    .and_then(|r| r.split_once("': "))
                    .is_some_and(|(m, text)| m == member && module_level_text(text.trim_end()))
            });
            if warned {
                return Some(POLICY);
            }
        }
    }
    if writes_archive && ours.status == llvm.status && ours.stdout == llvm.stdout {
        // Members LLVM refuses for a module-level fault our reader does
        // not check: we read such a member (no warning), or read on past
        // that fault and meet another one later in the same member (a
        // bitstream fault, or a module-level one of our reader's): either
        // way the member's symbols are left out. Warnings are matched in
        // order, so members with the same name stay apart.
        let llvm_lines: Vec<&str> = llvm_text.split_inclusive('\n').collect();
        let ours_lines: Vec<String> = String::from_utf8_lossy(&ours.stderr)
            .split_inclusive('\n')
            .map(str::to_string)
            .collect();
        let mut extra = 0;
        let mut failed = std::collections::HashSet::new();
        let aligned =
            align_member_warnings(&llvm_lines, &ours_lines, 0, 0, &mut extra, &mut failed);
        let files_match = ours.files.len() == llvm.files.len()
            && ours
                .files
                .iter()
                .zip(&llvm.files)
                .all(|((n1, a), (n2, b))| n1 == n2 && (a == b || same_but_symbol_index(a, b)));
        if aligned && extra > 0 && files_match {
            return Some(POLICY);
        }
    }
    None
}

/// `warning: '<member>': <text>` split into member and text.
fn member_warning(line: &str) -> Option<(&str, &str)> {
    line.strip_prefix("warning: '")
        .and_then(|r| r.split_once("': "))
        .map(|(member, text)| (member, text.trim_end()))
}

/// Texts of the module-level checks our bitcode reader makes as LLVM's
/// does (offload-format's `bitcode::ir`): where LLVM stops with one of
/// these, our reader should have stopped there too.
const OUR_READER_TEXTS: &[&str] = &[
    "Invalid record",
    "Invalid value",
    "Invalid type",
    "Invalid TYPE table",
    "Invalid ID",
    "Invalid alignment value",
    "Missing element type for old-style",
    "Invalid calling convention ID",
    "comdat ID",
    "Invalid global variable code model",
    "Comdat name size too large",
    "Malformed partition, too large.",
    "Malformed global initializer set",
    "Insufficient function protos",
    "Invalid multiple",
    "synchronization scope names block",
    "Invalid sync scope record",
    "Invalid operand bundle record",
    "Invalid parameter attribute record",
    "Invalid grp record",
    "Invalid version record",
    "too late in module",
    "Incompatible epoch",
    "Invalid numentry record",
    "Bitwidth for integer type out of range",
    "Invalid integer record",
    "Invalid pointer record",
    "Invalid opaque pointer record",
    "Invalid function record",
    "Invalid function argument type",
    "Invalid anon struct record",
    "Invalid named struct record",
    "Invalid opaque type record",
    "Invalid target extension type record",
    "Too many type parameters",
    "Integer parameter too large",
    "Invalid array type record",
    "Invalid vector type record",
    "Invalid vector length",
];

/// Whether LLVM's warnings (`llvm`, from `i`) and ours (from `j`) are the
/// same but for members LLVM refuses for a module-level fault our reader
/// does not check (see `unloaded_module_policy`); `extra` counts those.
fn align_member_warnings(
    llvm: &[&str],
    ours: &[String],
    i: usize,
    j: usize,
    extra: &mut usize,
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> bool {
    if i == llvm.len() {
        return j == ours.len();
    }
    if failed.contains(&(i, j)) {
        return false;
    }
    let ok = 'ok: {
        if let Some((member, text)) = member_warning(llvm[i]) {
            if module_level_text(text) {
                // We read the member: no warning.
                if align_member_warnings(llvm, ours, i + 1, j, extra, failed) {
                    *extra += 1;
                    break 'ok true;
                }
                // We met a later fault in it.
                let unchecked = !OUR_READER_TEXTS.iter().any(|t| text.contains(t));
                let later = ours
                    .get(j)
                    .and_then(|l| member_warning(l))
                    .is_some_and(|(m, u)| {
                        m == member && u != text && (!module_level_text(u) || unchecked)
                    });
                if later && align_member_warnings(llvm, ours, i + 1, j + 1, extra, failed) {
                    *extra += 1;
                    break 'ok true;
                }
            }
        }
        ours.get(j).is_some_and(|l| l == llvm[i])
            && align_member_warnings(llvm, ours, i + 1, j + 1, extra, failed)
    };
    if !ok {
        failed.insert((i, j));
    }
    ok
}

#[derive(Default)]
struct Tally {
    cases: usize,
    /// Lines of `cases.tsv` not written yet.
    log: String,
    by_format: BTreeMap<String, BTreeMap<String, usize>>,
    kept: BTreeMap<String, usize>,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut seed = 1u64;
    let mut seconds: Option<u64> = None;
    let mut cases: Option<usize> = None;
    let mut jobs = 2usize;
    let mut max_size = 256 * 1024;
    let mut findings = workspace_root().join("target/mutate/findings");
    let mut bin_dir: Option<PathBuf> = None;
    let mut replay_dir: Option<PathBuf> = None;
    let mut recheck_dir: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value ({USAGE})"));
        match a.as_str() {
            "--seed" => {
                seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--seconds" => {
                seconds = Some(
                    value("--seconds")?
                        .parse()
                        .map_err(|e| format!("--seconds: {e}"))?,
                )
            }
            "--cases" => {
                cases = Some(
                    value("--cases")?
                        .parse()
                        .map_err(|e| format!("--cases: {e}"))?,
                )
            }
            "--jobs" => {
                jobs = value("--jobs")?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?;
                jobs = jobs.clamp(1, 2);
            }
            "--max-size" => {
                max_size = value("--max-size")?
                    .parse()
                    .map_err(|e| format!("--max-size: {e}"))?
            }
            "--findings" => findings = PathBuf::from(value("--findings")?),
            "--bin-dir" => bin_dir = Some(PathBuf::from(value("--bin-dir")?)),
            "--replay" => replay_dir = Some(PathBuf::from(value("--replay")?)),
            "--recheck" => recheck_dir = Some(PathBuf::from(value("--recheck")?)),
            other => return Err(format!("unknown argument '{other}' ({USAGE})")),
        }
    }
    if let Some(dir) = replay_dir {
        let bin_dir = match bin_dir {
            Some(d) => fs::canonicalize(&d).map_err(|e| format!("{}: {e}", d.display()))?,
            None => our_bin_dir()?,
        };
        return replay(&dir, &bin_dir);
    }
    if seconds.is_none() && cases.is_none() {
        cases = Some(1000);
    }
    let bin_dir = match bin_dir {
        Some(d) => fs::canonicalize(&d).map_err(|e| format!("{}: {e}", d.display()))?,
        None => our_bin_dir()?,
    };
    let seeds = collect_seeds(max_size)?;
    if seeds.is_empty() {
        return Err("no inputs found under tests/".into());
    }
    if let Some(dir) = recheck_dir {
        return recheck(&dir, seed, &seeds, &bin_dir);
    }
    let mut per_format: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &seeds {
        *per_format.entry(s.format.name()).or_default() += 1;
    }
    eprintln!(
        "mutate: seed {seed}, {} inputs ({}), {} jobs",
        seeds.len(),
        per_format
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        jobs
    );
    let _ = fs::remove_dir_all(&findings);
    fs::create_dir_all(&findings).map_err(|e| format!("{}: {e}", findings.display()))?;
    let scratch = findings.with_file_name(format!(
        "scratch-{}",
        findings
            .file_name()
            .map_or("".into(), |n| n.to_string_lossy())
    ));
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let start = Instant::now();
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let (seeds, bin_dir, next, tally, findings, scratch) =
                (&seeds, &bin_dir, &next, &tally, &findings, &scratch);
            scope.spawn(move || loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if cases.is_some_and(|n| i >= n) {
                    break;
                }
                one_case(
                    seed,
                    i,
                    seeds,
                    bin_dir,
                    &scratch.join(format!("job{job}")),
                    tally,
                    findings,
                );
                if i % 500 == 499 {
                    let t = tally.lock().unwrap();
                    eprintln!(
                        "mutate: {} cases, {:.0} s",
                        t.cases,
                        start.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    let t = tally.into_inner().unwrap();
    let _ = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(findings.join("cases.tsv"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, t.log.as_bytes()));
    let report = summary(seed, &seeds, &t, start.elapsed());
    print!("{report}");
    fs::write(findings.join("summary.txt"), &report).map_err(|e| e.to_string())?;
    let bad: usize = t
        .by_format
        .values()
        .flat_map(|m| m.iter())
        .filter(|(k, _)| k.starts_with("CRASH") || k.starts_with("HANG") || k.starts_with("DIFF"))
        .map(|(_, v)| v)
        .sum();
    if bad > 0 {
        Err(format!(
            "{bad} findings (inputs and command lines under {})",
            findings.display()
        ))
    } else {
        Ok(())
    }
}

/// The outcome class of one case (see the module comment).
fn classify(
    format: Format,
    tool: &str,
    args: &[String],
    input: &[u8],
    ours: &Run,
    llvm: &Run,
) -> String {
    let ours_text = String::from_utf8_lossy(&ours.stderr);
    if ours.status == -1 {
        "HANG (ours timed out)".into()
    } else if ours.status >= 128 || ours_text.contains("panicked") {
        if ours_text.contains("memory allocation") || ours.status == 134 {
            "CRASH (ours aborted: memory bound?)".into()
        } else {
            "CRASH (ours)".into()
        }
    } else if !llvm_clean(llvm) {
        "llvm not clean (crash/hang/stack dump)".into()
    } else if ours == llvm {
        format!("same (exit {})", llvm.status)
    } else if let Some(p) = policy(format, tool, args, input, ours, llvm) {
        format!("policy: {p}")
    } else {
        let mut parts = Vec::new();
        if ours.status != llvm.status {
            parts.push("status");
        }
        if ours.stdout != llvm.stdout {
            parts.push("stdout");
        }
        if ours.stderr != llvm.stderr {
            parts.push("stderr");
        }
        if ours.files != llvm.files {
            parts.push("files");
        }
        format!("DIFF {}", parts.join("+"))
    }
}

/// Runs the findings under `dir` again (each `case.txt` with its `in`),
/// and prints what each gives now: how findings are checked after a fix.
fn replay(dir: &Path, bin_dir: &Path) -> Result<(), String> {
    let mut cases = Vec::new();
    walk(dir, &mut cases);
    cases.retain(|p| p.file_name().is_some_and(|n| n == "case.txt"));
    cases.sort();
    let scratch = std::env::temp_dir().join(format!("mutate-replay-{}", std::process::id()));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        let text = fs::read(case).map_err(|e| format!("{}: {e}", case.display()))?;
        let text = String::from_utf8_lossy(&text);
        let Some(command) = text.lines().find_map(|l| l.strip_prefix("command: ")) else {
            continue;
        };
        let mut words = command.split(' ').map(str::to_string);
        let Some(tool) = words.next() else { continue };
        let args: Vec<String> = words.collect();
        let input = fs::read(case.with_file_name("in")).map_err(|e| e.to_string())?;
        let Some(format) = text
            .lines()
            .find_map(|l| l.strip_prefix("seed input: "))
            .and_then(|p| fs::read(p).ok())
            .and_then(|b| Format::sniff(&b))
        else {
            continue;
        };
        let tool: &'static str = match tool.as_str() {
            "clang-offload-bundler" => "clang-offload-bundler",
            "llvm-offload-binary" => "llvm-offload-binary",
            "clang-offload-packager" => "clang-offload-packager",
            "llvm-offload-wrapper" => "llvm-offload-wrapper",
            _ => continue,
        };
        let Some((_, _, class)) = run_both(bin_dir, format, tool, &args, &input, &scratch) else {
            continue;
        };
        let before = case
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        println!("{}: {before} -> {class}", case.display());
        *counts
            .entry(format!(
                "{before} -> {}",
                class.split(" (exit").next().unwrap_or("")
            ))
            .or_default() += 1;
    }
    let _ = fs::remove_dir_all(&scratch);
    println!("replayed {} findings:", cases.len());
    for (k, n) in counts {
        println!("{n:6}  {k}");
    }
    Ok(())
}

fn one_case(
    seed: u64,
    i: usize,
    seeds: &[Seed],
    bin_dir: &Path,
    scratch: &Path,
    tally: &Mutex<Tally>,
    findings: &Path,
) {
    let (s, tool, args, input, how) = case_setup(seed, i, seeds);
    let Some((ours, llvm, class)) = run_both(bin_dir, s.format, tool, &args, &input, scratch)
    else {
        return;
    };
    let keep = {
        let mut t = tally.lock().unwrap();
        t.cases += 1;
        let line = format!(
            "{i}\t{}\t{tool}\t{}\t{class}\t{}\t{}\t{}\t{}\n",
            s.format.name(),
            args.join(" "),
            ours.status,
            llvm.status,
            first_line(&ours.stderr),
            first_line(&llvm.stderr),
        );
        t.log.push_str(&line);
        if t.log.len() > 1 << 16 {
            let _ = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(findings.join("cases.tsv"))
                .and_then(|mut f| std::io::Write::write_all(&mut f, t.log.as_bytes()));
            t.log.clear();
        }
        *t.by_format
            .entry(s.format.name().to_string())
            .or_default()
            .entry(class.clone())
            .or_default() += 1;
        let interesting = class.starts_with("CRASH")
            || class.starts_with("HANG")
            || class.starts_with("DIFF")
            || class.starts_with("policy");
        let key = format!("{class}|{tool}|{}", args.first().map_or("", String::as_str));
        let n = t.kept.entry(key).or_default();
        *n += 1;
        interesting && *n <= KEEP
    };
    if keep {
        let slug: String = class
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = findings.join(slug).join(format!("case{i:07}"));
        let _ = fs::create_dir_all(&dir);
        let _ = fs::write(dir.join("in"), &input);
        let mut text = String::new();
        let _ = writeln!(text, "seed input: {}", s.path.display());
        let _ = writeln!(text, "mutation: {how}");
        let _ = writeln!(text, "command: {tool} {}", args.join(" "));
        for (side, r) in [("ours", &ours), ("llvm", &llvm)] {
            let _ = writeln!(text, "--- {side}: exit {}", r.status);
            let _ = writeln!(text, "stdout: {}", String::from_utf8_lossy(&r.stdout));
            let _ = writeln!(text, "stderr: {}", String::from_utf8_lossy(&r.stderr));
            for (name, bytes) in &r.files {
                let _ = writeln!(text, "file {name}: {} bytes", bytes.len());
            }
        }
        let _ = fs::write(dir.join("case.txt"), text);
    }
}

/// Case `i` of a run with `seed`: the real input, the command and the
/// mutated bytes (with how they were made), the same on every call.
#[allow(clippy::type_complexity)]
fn case_setup(
    seed: u64,
    i: usize,
    seeds: &[Seed],
) -> (&Seed, &'static str, Vec<String>, Vec<u8>, String) {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let s = rng.pick(seeds);
    let (tool, args) = rng.pick(&s.commands).clone();
    let (input, how) = mutate(&mut rng, s, seeds);
    (s, tool, args, input, how)
}

/// Runs again, with the tools of `bin_dir` and the classification of this
/// build, every case of an earlier run (its `cases.tsv` under `dir`, made
/// with `seed`) that was a crash, a hang or a difference: each case is
/// made again from its index, and checked to be the same input format and
/// command line as logged. What the run found is then what the current
/// tools do on all of those inputs, not only on the few kept as findings.
fn recheck(dir: &Path, seed: u64, seeds: &[Seed], bin_dir: &Path) -> Result<(), String> {
    let log = dir.join("cases.tsv");
    let text = fs::read(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let text = String::from_utf8_lossy(&text);
    let scratch = std::env::temp_dir().join(format!("mutate-recheck-{}", std::process::id()));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut checked = 0usize;
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let [index, format, tool, args, class, ..] = cols[..] else {
            continue;
        };
        if !["CRASH", "HANG", "DIFF"]
            .iter()
            .any(|p| class.starts_with(p))
        {
            continue;
        }
        let i: usize = index.parse().map_err(|e| format!("{log:?}: {e}"))?;
        let (s, tool_now, args_now, input, _) = case_setup(seed, i, seeds);
        if s.format.name() != format || tool_now != tool || args_now.join(" ") != args {
            return Err(format!(
                "case {i} is not the one logged (other inputs under tests/ than in that run, or another seed)"
            ));
        }
        let Some((ours, llvm, now)) =
            run_both(bin_dir, s.format, tool_now, &args_now, &input, &scratch)
        else {
            continue;
        };
        println!(
            "{i}\t{format}\t{tool}\t{args}\t{class}\t{now}\t{}\t{}",
            first_line(&ours.stderr),
            first_line(&llvm.stderr)
        );
        *counts
            .entry(format!(
                "{class} -> {}",
                now.split(" (exit").next().unwrap_or("")
            ))
            .or_default() += 1;
        checked += 1;
    }
    let _ = fs::remove_dir_all(&scratch);
    println!("rechecked {checked} cases:");
    for (k, n) in counts {
        println!("{n:6}  {k}");
    }
    Ok(())
}

/// Runs a case with our `tool` (from `bin_dir`) and with LLVM's, each in
/// its own folder under `scratch`, and classifies the pair; `None` when
/// LLVM's tool is not installed.
fn run_both(
    bin_dir: &Path,
    format: Format,
    tool: &str,
    args: &[String],
    input: &[u8],
    scratch: &Path,
) -> Option<(Run, Run, String)> {
    // clang-offload-packager lives beside llvm-offload-binary.
    let llvm_exe = reference_tool(tool)
        .or_else(|| reference_tool("llvm-offload-binary").map(|p| p.with_file_name(tool)))?;
    let dirs = [scratch.join("ours"), scratch.join("llvm")];
    let mut ours = run_ours(&bin_dir.join(tool), tool, args, input, &dirs[0]);
    let mut llvm = run_one(&llvm_exe, tool, args, input, &dirs[1], false);
    compare_wrapper_modules(tool, &mut ours, &mut llvm, [&dirs[0], &dirs[1]]);
    let class = classify(format, tool, args, input, &ours, &llvm);
    Some((ours, llvm, class))
}

/// The first line of a tool's stderr, for the case log.
fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .find(|l| !l.starts_with("warning: 'clang-offload-packager' is deprecated"))
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

fn summary(seed: u64, seeds: &[Seed], t: &Tally, took: Duration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mutate: seed {seed}, {} mutated inputs from {} real ones, {:.0} s",
        t.cases,
        seeds.len(),
        took.as_secs_f64()
    );
    let _ = writeln!(s, "| format | outcome | cases |");
    let _ = writeln!(s, "|---|---|---:|");
    for (format, classes) in &t.by_format {
        for (class, n) in classes {
            let _ = writeln!(s, "| {format} | {class} | {n} |");
        }
    }
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for classes in t.by_format.values() {
        for (class, n) in classes {
            let key = if class.starts_with("same") {
                "same"
            } else if class.starts_with("policy") {
                "documented policy"
            } else if class.starts_with("DIFF") {
                "differences"
            } else if class.starts_with("CRASH") {
                "crashes"
            } else if class.starts_with("HANG") {
                "hangs"
            } else {
                "llvm not clean"
            };
            *totals.entry(key).or_default() += n;
        }
    }
    let _ = writeln!(s, "totals: {totals:?}");
    s
}

#[cfg(test)]
mod tests {
    use super::{align_member_warnings, policy, Format, Run};
    use std::collections::{BTreeMap, HashSet};

    fn run(status: i32, stderr: &str, files: &[&str]) -> Run {
        Run {
            status,
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
            files: files
                .iter()
                .map(|f| (f.to_string(), b"bytes".to_vec()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    /// An image past the end of its binary is policy only where LLVM 22
    /// reads it past its buffer (writes what lies there): not where it
    /// never touches it, nor where the system refuses the output's size.
    #[test]
    fn offload_binary_ranges_are_policy_only_where_llvm_reads_them() {
        let ours = run(
            1,
            "llvm-offload-binary: error: 'in': offload binary at offset 0: image at offset \
             144 of size 1000 extends past the end of the offload binary (size 152)\n",
            &[],
        );
        let classify = |llvm: &Run| {
            let args = ["in".to_string(), "--image=file=o1".to_string()];
            policy(
                Format::OffloadBinary,
                "llvm-offload-binary",
                &args,
                b"",
                &ours,
                llvm,
            )
        };
        assert!(classify(&run(0, "", &["o1"])).is_some(), "garbage written");
        assert_eq!(classify(&run(0, "", &[])), None, "never read");
        for text in [
            "Invalid argument",
            "File too large",
            "Cannot allocate memory",
            "File in exceeds size limit",
        ] {
            let llvm = run(1, &format!("llvm-offload-binary: error: {text}\n"), &[]);
            assert_eq!(classify(&llvm), None, "{text}");
        }
    }

    fn aligned(llvm: &[&str], ours: &[&str]) -> Option<usize> {
        let ours: Vec<String> = ours.iter().map(|s| s.to_string()).collect();
        let mut extra = 0;
        align_member_warnings(llvm, &ours, 0, 0, &mut extra, &mut HashSet::new()).then_some(extra)
    }

    const IR: &str = "warning: 'a.bc': Invalid attribute group entry (Producer: 'LLVM22.1.8' Reader: 'LLVM 22.1.8')\n";
    const BITSTREAM: &str =
        "warning: 'a.bc': Fixed or VBR abbrev record with size > MaxChunkData\n";

    /// Two members with the same name (seed 6161, case 68532): LLVM
    /// refuses the first for an attribute group we do not check, the
    /// second for a bitstream fault, which we report too.
    #[test]
    fn members_with_one_name_are_matched_in_order() {
        assert_eq!(aligned(&[IR, BITSTREAM], &[BITSTREAM]), Some(1));
        // Our warning for a later fault of the first member, then the
        // second member's.
        assert_eq!(aligned(&[IR, BITSTREAM], &[BITSTREAM, BITSTREAM]), Some(1));
    }

    /// A warning of ours that LLVM does not give, or a different text
    /// where LLVM stops at a check our reader makes, is a difference.
    #[test]
    fn real_differences_are_not_aligned() {
        assert_eq!(aligned(&[BITSTREAM], &[]), None);
        assert_eq!(aligned(&[], &[BITSTREAM]), None);
        let ours_check =
            "warning: 'a.bc': Invalid record (Producer: 'LLVM22.1.8' Reader: 'LLVM 22.1.8')\n";
        let other_check =
            "warning: 'a.bc': Invalid type (Producer: 'LLVM22.1.8' Reader: 'LLVM 22.1.8')\n";
        assert_eq!(aligned(&[ours_check], &[other_check]), None);
        // Where LLVM stops at a check we do not make, our later check's
        // warning is the policy.
        assert_eq!(aligned(&[IR], &[other_check]), Some(1));
    }
}
