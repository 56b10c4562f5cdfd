//! Differential runs of `clang-offload-bundler` for compressed bundles
//! (area `ccob`) and object bundles (area `objects`) against LLVM 22's.
//!
//! `ccob`: bundling with compression through every switch (`-compress`,
//! `OFFLOAD_BUNDLER_COMPRESS`, levels, `COMPRESSED_BUNDLE_FORMAT_VERSION`,
//! `OFFLOAD_BUNDLER_IGNORE_ENV_VAR`, `-verbose`), and reading CCOBs made by
//! LLVM's tool, by ours, and forged ones (v1, zlib, damaged, bad hash,
//! trailing bytes).
//!
//! `objects`: `-type=o` with real host objects that clang-22 compiles for
//! several targets (ELF x86-64, AArch64, ppc64le, i386; COFF; Mach-O;
//! WebAssembly and XCOFF, which read as objects without bundles),
//! bundling with several device entries, `-###`, `-list` and unbundling of
//! fat objects made by LLVM's tool or ours, plain objects, non-object
//! reference inputs and device-only bundles.
//!
//! Output that is random or timing-dependent by design is normalised: the
//! speed figures of the verbose reports, the six random characters of the
//! temporary file names and the path of `llvm-objcopy` in `-###` lines.
//! Deliberate differences (docs/compat.md#clang-offload-bundler, docs/compat.md#compressed-bundles-ccob) are
//! counted separately.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{our_bin_dir, reference_tool, Case, Outcome, Rng, Suite};
use offload_format::ccob;

const TOOL: &str = "clang-offload-bundler";

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const DEVICES: &[&str] = &[
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hipv4-amdgcn-amd-amdhsa--gfx1030",
    "hip-amdgcn-amd-amdhsa--gfx1100",
    "openmp-nvptx64-nvidia-cuda--sm_70",
    "hip-spirv64-amd-amdhsa--amdgcnspirv",
];
const TYPES: &[&str] = &["bc", "o", "gch", "i", "hipi", "ll", "s"];

fn provide(s: &mut Suite) -> bool {
    match s.provide(TOOL) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("conformance {}: {e}", s.area);
            s.failed += 1;
            false
        }
    }
}

// ------------------------------------------------------------ normalising

/// Masks what differs between runs by design: the codec speed figures, the
/// random part of temporary names and the `llvm-objcopy` location.
fn normalise(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if let Some(r) = rest.strip_prefix(b"speed: ") {
            if let Some(end) = r.windows(5).position(|w| w == b" MB/s") {
                out.extend_from_slice(b"speed: N MB/s");
                i += 7 + end + 5;
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix(b"clang-offload-bundler-") {
            if r.len() >= 10 && &r[6..10] == b".tmp" {
                out.extend_from_slice(b"clang-offload-bundler-XXXXXX.tmp");
                i += 22 + 10;
                continue;
            }
        }
        if rest.starts_with(b"\"") && (i == 0 || b[i - 1] == b'\n') {
            let line_end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            let first = &rest[1..line_end];
            if let Some(q) = first.iter().position(|&c| c == b'"') {
                if first[..q].ends_with(b"llvm-objcopy") {
                    out.extend_from_slice(b"\"OBJCOPY\"");
                    i += q + 2;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

// ------------------------------------------------------------ helpers

fn pick_targets(rng: &mut Rng, devices: usize, host: bool) -> Vec<String> {
    let mut d: Vec<&str> = DEVICES.to_vec();
    rng.shuffle(&mut d);
    let mut t: Vec<String> = d.into_iter().take(devices).map(String::from).collect();
    if host {
        let pos = rng.below(t.len() + 1);
        t.insert(pos, HOST.to_string());
    }
    t
}

fn content(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0 => Vec::new(),
        1 => vec![0],
        2 => {
            // Large and compressible: long-distance matching matters here.
            let n = rng.range(50_000, 300_000);
            let k = rng.range(50, 4000);
            let unit = rng.bytes(k);
            unit.iter().cycle().take(n).copied().collect()
        }
        3..=5 => {
            let n = rng.range(1, 3000);
            rng.bytes(n)
        }
        _ => {
            let lines = rng.range(1, 80);
            let mut v = Vec::new();
            for l in 0..lines {
                v.extend_from_slice(format!("line {l} value {}\n", rng.below(50)).as_bytes());
            }
            v
        }
    }
}

/// Runs a bundler (LLVM's or ours) in a scratch directory with `files`
/// and returns the bytes of `out`, if it succeeded.
fn make_with(
    program: &Path,
    args: &[String],
    files: &[(String, Vec<u8>)],
    env: &[(&str, &str)],
    out: &str,
) -> Option<Vec<u8>> {
    let dir = tempfile::tempdir().ok()?;
    for (n, b) in files {
        fs::write(dir.path().join(n), b).ok()?;
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir.path())
        .env_remove("OFFLOAD_BUNDLER_VERBOSE")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_COMPRESSION_LEVEL")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_IGNORE_ENV_VAR")
        .stderr(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let st = cmd.status().ok()?;
    if !st.success() {
        return None;
    }
    fs::read(dir.path().join(out)).ok()
}

/// LLVM's tool, or ours, chosen at random (both directions of the cross
/// cases).
fn maker(rng: &mut Rng) -> (&'static str, PathBuf) {
    if rng.chance(1, 2) {
        (
            "made by LLVM 22",
            reference_tool(TOOL).expect("provided before"),
        )
    } else {
        (
            "made by ours",
            our_bin_dir().expect("built before").join(TOOL),
        )
    }
}

/// A bundle of random entries (and how it was made), for reading cases.
fn random_bundle(
    rng: &mut Rng,
    ty: &str,
    host_obj: Option<&[u8]>,
    compress: bool,
) -> (String, Vec<String>, Vec<u8>) {
    let ndev = rng.range(1, 4);
    let targets = pick_targets(rng, ndev, true);
    let mut files = Vec::new();
    let mut args = vec![
        format!("-type={ty}"),
        format!("-targets={}", targets.join(",")),
    ];
    for (i, t) in targets.iter().enumerate() {
        let name = format!("in{i}");
        let bytes = match (t.as_str(), host_obj) {
            (HOST, Some(h)) => h.to_vec(),
            _ => content(rng),
        };
        files.push((name.clone(), bytes));
        args.push(format!("-input={name}"));
    }
    args.push("-output=out".into());
    if compress {
        args.push("-compress".into());
        if rng.chance(1, 3) {
            args.push(format!(
                "--compression-level={}",
                rng.pick(&[1, 3, 9, 19, -5])
            ));
        }
    }
    let v2 = [("COMPRESSED_BUNDLE_FORMAT_VERSION", "2")];
    let env: &[(&str, &str)] = if compress && rng.chance(1, 3) {
        &v2
    } else {
        &[]
    };
    let (who, prog) = maker(rng);
    let bytes = make_with(&prog, &args, &files, env, "out").unwrap_or_default();
    (who.to_string(), targets, bytes)
}

fn flag(rng: &mut Rng, args: &mut Vec<String>, name: &str) {
    let dashes = if rng.chance(1, 2) { "-" } else { "--" };
    let v = *rng.pick(&["", "", "=true", "=1"]);
    args.push(format!("{dashes}{name}{v}"));
}

fn case(label: String, args: Vec<String>, files: Vec<(String, Vec<u8>)>) -> Case {
    let mut c = Case::new(TOOL);
    c.label = label;
    c.args = args.into_iter().map(Into::into).collect();
    c.files = files;
    c
}

fn initial_files(case: &Case) -> Vec<(String, Vec<u8>)> {
    let mut v = case.files.clone();
    // The harness lists directories too, as `dir/`.
    for (name, _) in &case.files {
        if let Some((dir, _)) = name.rsplit_once('/') {
            let d = format!("{dir}/");
            if !v.iter().any(|(n, _)| *n == d) {
                v.push((d, Vec::new()));
            }
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn last_error(o: &Outcome) -> String {
    let s = o.stderr.strip_suffix(b"\n").unwrap_or(&o.stderr);
    let l = s.rsplit(|&c| c == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(l).into_owned()
}

/// Our clean failure: status 1, an error line, nothing written.
fn clean_failure(case: &Case, ours: &Outcome) -> bool {
    ours.status == 1
        && ours.stdout.is_empty()
        && ours.files == initial_files(case)
        && last_error(ours).starts_with(&format!("{TOOL}: error: "))
}

// ------------------------------------------------------------ area ccob

/// Area `ccob`.
pub fn run_ccob(s: &mut Suite) {
    if !provide(s) {
        return;
    }
    s.normalise = Some(normalise);
    s.accept = Some(accept_ccob);
    let n = s.count(400);
    for i in 0..n {
        let mut rng = s.rng.clone();
        let c = match i % 8 {
            0..=3 => compress_case(&mut rng),
            4 | 5 => read_ccob_case(&mut rng),
            6 => forged_ccob_case(&mut rng),
            _ => env_only_case(&mut rng),
        };
        s.rng = rng;
        s.check(&c);
    }
}

fn accept_ccob(case: &Case, llvm: &Outcome, ours: &Outcome) -> Option<&'static str> {
    let err = last_error(ours);
    if case.label.contains("bad hash")
        && llvm.status == 0
        && clean_failure(case, ours)
        && err.contains("hash mismatch")
    {
        return Some("stored hash verified");
    }
    if case.label.contains("trailing")
        && llvm.status == 1
        && String::from_utf8_lossy(&llvm.stderr).contains("Src size is incorrect")
        && ours.status == 0
    {
        return Some("CCOB ends at its recorded total size");
    }
    // zlib ignores trailing bytes, so 22 succeeds too; only the verbose
    // "Size before decompression" (22: to the end of the input) differs.
    if case.label.contains("trailing")
        && llvm.status == 0
        && ours.status == 0
        && llvm.stdout == ours.stdout
        && llvm.files == ours.files
    {
        return Some("CCOB ends at its recorded total size (verbose payload size)");
    }
    if case.label.contains("concatenated")
        && llvm.status == 1
        && String::from_utf8_lossy(&llvm.stderr).contains("Src size is incorrect")
        && (ours.status == 0 || clean_failure(case, ours))
    {
        return Some("concatenated CCOBs are all read");
    }
    if case.label.contains("truncated payload")
        && llvm.status == 1
        && clean_failure(case, ours)
        && err.contains("Compressed bundle is truncated")
    {
        return Some("recorded total size checked (truncated CCOB)");
    }
    if case.label.contains("usize large") && llvm.status == 0 && clean_failure(case, ours) {
        return Some("recorded uncompressed size checked");
    }
    if llvm.status == 1
        && llvm.stderr == ours.stderr
        && llvm.stdout == ours.stdout
        && ours.files == initial_files(case)
    {
        return Some("no partial outputs after an error");
    }
    None
}

fn env_compression(rng: &mut Rng, c: &mut Case) {
    if rng.chance(1, 3) {
        c.env.push((
            "OFFLOAD_BUNDLER_COMPRESSION_LEVEL".into(),
            rng.pick(&["1", "3", "9", "0", "-5", "19", "22", "23", "x", "", "3 "])
                .to_string(),
        ));
    }
    if rng.chance(1, 3) {
        c.env.push((
            "COMPRESSED_BUNDLE_FORMAT_VERSION".into(),
            rng.pick(&["2", "3", "02", "1", "4", "x", "-1", "65538", " 2"])
                .to_string(),
        ));
    }
    if rng.chance(1, 4) {
        c.env.push((
            "OFFLOAD_BUNDLER_VERBOSE".into(),
            rng.pick(&["1", "0"]).to_string(),
        ));
    }
    if rng.chance(1, 10) {
        c.env.push((
            "OFFLOAD_BUNDLER_IGNORE_ENV_VAR".into(),
            rng.pick(&["1", "0"]).to_string(),
        ));
    }
}

/// Bundling with compression switched on (or off) in every way.
fn compress_case(rng: &mut Rng) -> Case {
    let ty = *rng.pick(TYPES);
    let hip_only = rng.chance(1, 5);
    let ndev = rng.range(1, 4);
    let targets = if hip_only {
        let mut t: Vec<String> = DEVICES
            .iter()
            .filter(|d| d.starts_with("hip"))
            .map(|s| s.to_string())
            .collect();
        rng.shuffle(&mut t);
        t.truncate(ndev);
        t
    } else {
        pick_targets(rng, ndev, true)
    };
    let mut args = vec![
        format!("-type={ty}"),
        format!("-targets={}", targets.join(",")),
    ];
    let mut files = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        // `-type=o` here always has a non-object reference (clang's
        // `-input=/dev/null` host), so the binary format is compressed.
        if t == HOST && rng.chance(1, 2) {
            args.push("-input=/dev/null".into());
            continue;
        }
        let name = format!("in{i}");
        let mut bytes = content(rng);
        if ty == "o" && bytes.starts_with(b"\x7fELF") {
            bytes.clear();
        }
        files.push((name.clone(), bytes));
        args.push(format!("-input={name}"));
    }
    args.push("-output=out".into());
    let mut c = Case::new(TOOL);
    match rng.below(6) {
        0 | 1 => flag(rng, &mut args, "compress"),
        2 => c.env.push(("OFFLOAD_BUNDLER_COMPRESS".into(), "1".into())),
        3 => {
            c.env.push((
                "OFFLOAD_BUNDLER_COMPRESS".into(),
                rng.pick(&["1", "true", "0"]).to_string(),
            ));
            args.push(
                rng.pick(&["-compress=false", "-compress=0", "-compress"])
                    .to_string(),
            );
        }
        4 => {
            flag(rng, &mut args, "compress");
            args.push(format!(
                "--compression-level={}",
                rng.pick(&["1", "3", "6", "9", "12", "19", "0", "-5", "22", "23", "-1"])
            ));
        }
        _ => {
            flag(rng, &mut args, "compress");
            args.push(format!(
                "-compression-level={}",
                rng.pick(&["2", "5", "abc", "0x5"])
            ));
        }
    }
    if rng.chance(1, 2) {
        flag(rng, &mut args, "verbose");
    }
    if rng.chance(1, 5) {
        args.push(format!("-bundle-align={}", rng.pick(&[1, 2, 8, 64, 4096])));
    }
    env_compression(rng, &mut c);
    c.label = format!("compress {ty}");
    c.args = args.into_iter().map(Into::into).collect();
    c.files = files;
    c
}

/// Unbundling and listing CCOBs made by LLVM's tool or ours.
fn read_ccob_case(rng: &mut Rng) -> Case {
    let ty = *rng.pick(&["bc", "o", "hipi", "ll", "gch"]);
    let (who, targets, bytes) = random_bundle(rng, ty, None, true);
    let mut args = vec![format!("-type={ty}"), "-input=fat".into()];
    let label = if rng.chance(1, 3) {
        args.push("-list".into());
        format!("list compressed {ty} {who}")
    } else {
        let mut want: Vec<String> = targets.into_iter().filter(|_| rng.chance(2, 3)).collect();
        if want.is_empty() || rng.chance(1, 6) {
            want.push(rng.pick(DEVICES).to_string());
            want.dedup();
        }
        want.sort();
        want.dedup();
        args.push(format!("-targets={}", want.join(",")));
        for i in 0..want.len() {
            args.push(format!("-output=out{i}"));
        }
        args.push("-unbundle".into());
        if rng.chance(1, 3) {
            args.push("-allow-missing-bundles".into());
        }
        format!("unbundle compressed {ty} {who}")
    };
    if rng.chance(2, 3) {
        flag(rng, &mut args, "verbose");
    }
    let mut c = case(label, args, vec![("fat".into(), bytes)]);
    env_compression(rng, &mut c);
    c
}

/// A v1 header (which 22 reads but never writes) in front of a payload.
fn v1(method: ccob::Method, bundle: &[u8]) -> Vec<u8> {
    let opts = ccob::CompressOptions {
        method,
        level: None,
        version: ccob::Version::V3,
    };
    let c = ccob::compress(bundle, &opts).expect("compressible");
    let mut v = b"CCOB".to_vec();
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&method.code().to_le_bytes());
    v.extend_from_slice(&(bundle.len() as u32).to_le_bytes());
    v.extend_from_slice(&c.bytes[24..32]);
    v.extend_from_slice(&c.bytes[32..]);
    v
}

/// Hand-made CCOBs: v1, zlib, damaged headers, bad hash, trailing bytes.
fn forged_ccob_case(rng: &mut Rng) -> Case {
    let (_, targets, plain) = random_bundle(rng, "bc", None, false);
    let method = if rng.chance(1, 2) {
        ccob::Method::Zlib
    } else {
        ccob::Method::Zstd
    };
    let version = if rng.chance(1, 2) {
        ccob::Version::V2
    } else {
        ccob::Version::V3
    };
    let good = ccob::compress(
        &plain,
        &ccob::CompressOptions {
            method,
            level: None,
            version,
        },
    )
    .expect("compressible")
    .bytes;
    let hl = version.header_len();
    let (what, bytes) = match rng.below(10) {
        9 => {
            // Two zstd CCOBs, as a linked .hip_fatbin holds them (22 fails
            // with "Src size is incorrect"; upstream later lists both).
            let (_, _, second) = random_bundle(rng, "bc", None, false);
            let opts = ccob::CompressOptions {
                method: ccob::Method::Zstd,
                level: None,
                version,
            };
            let mut b = ccob::compress(&plain, &opts).expect("compressible").bytes;
            if rng.chance(1, 2) {
                let pad = b.len().next_multiple_of(4096) - b.len();
                b.resize(b.len() + pad, 0);
            }
            b.extend_from_slice(&ccob::compress(&second, &opts).expect("compressible").bytes);
            ("concatenated", b)
        }
        0 | 1 => ("v1", v1(method, &plain)),
        2 => ("v2/v3 zlib or zstd", good),
        3 => {
            let mut b = good;
            let at = hl - 1 - rng.below(8);
            b[at] ^= 0x5a;
            ("bad hash", b)
        }
        4 => {
            let mut b = good;
            let k = rng.range(1, 40);
            b.extend_from_slice(&rng.bytes(k));
            ("trailing bytes", b)
        }
        5 => {
            let mut b = good;
            b[6] = rng.range(2, 9) as u8;
            ("unknown method", b)
        }
        6 => {
            let cut = rng.range(4, hl - 1);
            ("truncated header", good[..cut].to_vec())
        }
        7 => {
            let mut b = good;
            b[4] = *rng.pick(&[0u8, 4, 9]);
            ("unknown version", b)
        }
        _ => {
            let mut b = good;
            let cut = rng.range(hl, b.len() - 1);
            b.truncate(cut);
            ("truncated payload", b)
        }
    };
    let mut args = vec!["-type=bc".to_string(), "-input=fat".into()];
    if rng.chance(1, 3) {
        args.push("-list".into());
    } else {
        args.push(format!("-targets={}", targets.join(",")));
        for i in 0..targets.len() {
            args.push(format!("-output=out{i}"));
        }
        args.push("-unbundle".into());
    }
    if rng.chance(1, 2) {
        args.push("-verbose".into());
    }
    case(
        format!("forged CCOB: {what} ({method:?}, {version:?})"),
        args,
        vec![("fat".into(), bytes)],
    )
}

/// Environment variables only (including their warnings in `-list` runs).
fn env_only_case(rng: &mut Rng) -> Case {
    let z = rng.chance(1, 2);
    let (_, _, bytes) = random_bundle(rng, "bc", None, z);
    let mut c = case(
        "environment with -list".into(),
        vec!["-type=bc".into(), "-list".into(), "-input=fat".into()],
        vec![("fat".into(), bytes)],
    );
    env_compression(rng, &mut c);
    if c.env.is_empty() {
        c.env
            .push(("OFFLOAD_BUNDLER_COMPRESSION_LEVEL".into(), "bad".into()));
    }
    c
}

// ------------------------------------------------------------ area objects

/// Host objects compiled by clang-22: (name, bytes).
fn host_objects(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Some(clang) =
        crate::harness::llvm22("clang-22").or_else(|| crate::harness::llvm22("clang"))
    else {
        return Vec::new();
    };
    let src = dir.join("host.c");
    let _ = fs::write(
        &src,
        "int counter;\nstatic int helper(int x) { return x * 7; }\nint entry(int a) { return helper(a) + counter; }\nconst char *name(void) { return \"host\"; }\n",
    );
    let mut out = Vec::new();
    let variants: &[(&str, &[&str])] = &[
        ("x86_64-unknown-linux-gnu", &[]),
        ("x86_64-unknown-linux-gnu", &["-g", "-ffunction-sections"]),
        ("aarch64-unknown-linux-gnu", &[]),
        ("powerpc64le-unknown-linux-gnu", &[]),
        ("i386-unknown-linux-gnu", &["-O2"]),
        ("x86_64-pc-windows-msvc", &[]),
        ("x86_64-apple-darwin", &[]),
        ("wasm32-unknown-unknown", &[]),
        ("powerpc64-ibm-aix", &[]),
    ];
    for (i, (triple, extra)) in variants.iter().enumerate() {
        let obj = dir.join(format!("host{i}.o"));
        let ok = Command::new(&clang)
            .arg("-c")
            .arg(format!("--target={triple}"))
            .args(*extra)
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .status()
            .is_ok_and(|s| s.success());
        if let (true, Ok(b)) = (ok, fs::read(&obj)) {
            out.push((format!("{triple}{}", extra.join("")), b));
        }
    }
    out
}

/// Area `objects`.
pub fn run_objects(s: &mut Suite) {
    if !provide(s) {
        return;
    }
    let cache = s.scratch_dir().join("host-objects");
    let _ = fs::create_dir_all(&cache);
    let hosts = host_objects(&cache);
    if hosts.is_empty() {
        eprintln!("conformance objects: clang-22 could not make host objects; skipped");
        return;
    }
    s.normalise = Some(normalise);
    s.accept = Some(accept_objects);
    let n = s.count(400);
    for i in 0..n {
        let mut rng = s.rng.clone();
        let (hname, host) = rng.pick(&hosts).clone();
        let c = match i % 10 {
            0..=3 => object_bundle_case(&mut rng, &hname, &host),
            4 | 5 => object_unbundle_case(&mut rng, &hname, &host),
            6 => object_list_case(&mut rng, &hname, &host),
            7 => plain_object_case(&mut rng, &hname, &host),
            8 => device_only_case(&mut rng, &hname, &host),
            _ => non_object_reference_case(&mut rng),
        };
        s.rng = rng;
        s.check(&c);
    }
}

fn accept_objects(case: &Case, llvm: &Outcome, ours: &Outcome) -> Option<&'static str> {
    if llvm.status >= 128 && clean_failure(case, ours) {
        return Some("where LLVM 22 crashed (device-only -type=o with an object)");
    }
    let lerr = String::from_utf8_lossy(&llvm.stderr);
    // 22 hands the compressed file itself to llvm-objcopy to extract the
    // host, which fails; we extract it from the decompressed object.
    if case.label.contains("compressed")
        && llvm.status == 1
        && lerr.contains("The file was not recognized as a valid object file")
        && ours.status == 0
    {
        return Some("host extracted from a compressed fat object");
    }
    if llvm.status == 1 && lerr.contains("'llvm-objcopy' tool failed") && clean_failure(case, ours)
    {
        return Some("host format llvm-objcopy refuses (our message, no 0-byte output)");
    }
    if llvm.status == 1
        && llvm.stderr == ours.stderr
        && llvm.stdout == ours.stdout
        && ours.files == initial_files(case)
    {
        return Some("no partial outputs after an error");
    }
    None
}

fn object_bundle_case(rng: &mut Rng, hname: &str, host: &[u8]) -> Case {
    let ndev = rng.range(1, 5);
    let targets = pick_targets(rng, ndev, true);
    let mut args = vec![
        "-type=o".to_string(),
        format!("-targets={}", targets.join(",")),
    ];
    let mut files = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let name = if t == HOST {
            "host.o".to_string()
        } else {
            format!("dev{i}")
        };
        let bytes = if t == HOST {
            host.to_vec()
        } else {
            content(rng)
        };
        files.push((name.clone(), bytes));
        args.push(format!("-input={name}"));
    }
    args.push("-output=fat.o".into());
    if rng.chance(1, 4) {
        args.push("-###".into());
    }
    if rng.chance(1, 5) {
        flag(rng, &mut args, "compress");
    }
    if rng.chance(1, 4) {
        flag(rng, &mut args, "verbose");
    }
    if rng.chance(1, 6) {
        args.push(format!("-bundle-align={}", rng.pick(&[1, 16, 4096])));
    }
    let mut c = case(format!("bundle -type=o host {hname}"), args, files);
    tmpdir_env(rng, &mut c);
    c
}

/// Sometimes a temporary directory other than the default: relative,
/// empty (the working directory), missing, or with a trailing slash.
fn tmpdir_env(rng: &mut Rng, c: &mut Case) {
    if rng.chance(1, 5) {
        let v = *rng.pick(&["", ".", "sub", "missing", "/tmp/", "/nonexistent-dir"]);
        if v == "sub" {
            c.files.push(("sub/keep".into(), Vec::new()));
        }
        let var = *rng.pick(&["TMPDIR", "TMPDIR", "TMP", "TEMP"]);
        c.env.push((var.into(), v.into()));
    }
}

fn fat_object(rng: &mut Rng, host: &[u8]) -> (String, Vec<String>, Vec<u8>) {
    let (who, targets, bytes) = random_bundle(rng, "o", Some(host), false);
    (who, targets, bytes)
}

fn object_unbundle_case(rng: &mut Rng, hname: &str, host: &[u8]) -> Case {
    let (who, targets, mut bytes) = fat_object(rng, host);
    let mut compressed = "";
    if rng.chance(1, 5) && !bytes.is_empty() {
        bytes = ccob::compress(&bytes, &ccob::CompressOptions::default())
            .expect("compressible")
            .bytes;
        compressed = " compressed";
    }
    let mut want: Vec<String> = targets.into_iter().filter(|_| rng.chance(3, 4)).collect();
    if want.is_empty() || rng.chance(1, 5) {
        want.push(rng.pick(DEVICES).to_string());
    }
    want.sort();
    want.dedup();
    rng.shuffle(&mut want);
    let mut args = vec![
        "-type=o".to_string(),
        "-input=fat.o".into(),
        format!("-targets={}", want.join(",")),
    ];
    for i in 0..want.len() {
        args.push(format!("-output=out{i}"));
    }
    args.push("-unbundle".into());
    if rng.chance(1, 3) {
        args.push("-allow-missing-bundles".into());
    }
    if rng.chance(1, 4) {
        args.push("-###".into());
    }
    if rng.chance(1, 4) {
        flag(rng, &mut args, "verbose");
    }
    case(
        format!("unbundle{compressed} fat object ({hname}) {who}"),
        args,
        vec![("fat.o".into(), bytes)],
    )
}

fn object_list_case(rng: &mut Rng, hname: &str, host: &[u8]) -> Case {
    let (who, _, bytes) = fat_object(rng, host);
    let mut args = vec!["-type=o".to_string(), "-list".into(), "-input=fat.o".into()];
    if rng.chance(1, 3) {
        flag(rng, &mut args, "verbose");
    }
    case(
        format!("list fat object ({hname}) {who}"),
        args,
        vec![("fat.o".into(), bytes)],
    )
}

/// A plain host object: no bundles (with and without
/// `-allow-missing-bundles`), and `-list`.
fn plain_object_case(rng: &mut Rng, hname: &str, host: &[u8]) -> Case {
    let mut args = vec!["-type=o".to_string(), "-input=plain.o".into()];
    if rng.chance(1, 3) {
        args.push("-list".into());
    } else {
        let k = rng.range(0, 2);
        let t = pick_targets(rng, k, true);
        args.push(format!("-targets={}", t.join(",")));
        for i in 0..t.len() {
            args.push(format!("-output=out{i}"));
        }
        args.push("-unbundle".into());
        if rng.chance(2, 3) {
            args.push("-allow-missing-bundles".into());
        }
    }
    case(
        format!("plain object {hname}"),
        args,
        vec![("plain.o".into(), host.to_vec())],
    )
}

/// Only offload targets with `-type=o`: a non-object first input gives a
/// binary bundle; an object makes 22 crash.
fn device_only_case(rng: &mut Rng, hname: &str, host: &[u8]) -> Case {
    let mut t: Vec<String> = DEVICES
        .iter()
        .filter(|d| d.starts_with("hip"))
        .map(|s| s.to_string())
        .collect();
    rng.shuffle(&mut t);
    t.truncate(rng.range(1, 3));
    let mut args = vec!["-type=o".to_string(), format!("-targets={}", t.join(","))];
    let mut files = Vec::new();
    let first_is_object = rng.chance(1, 2);
    for i in 0..t.len() {
        let bytes = if i == 0 && first_is_object {
            host.to_vec()
        } else {
            content(rng)
        };
        files.push((format!("d{i}"), bytes));
        args.push(format!("-input=d{i}"));
    }
    args.push("-output=out".into());
    case(
        format!("device-only -type=o (first input object: {first_is_object}, {hname})"),
        args,
        files,
    )
}

/// `-type=o` whose reference input is not an object: the binary format.
fn non_object_reference_case(rng: &mut Rng) -> Case {
    let ndev = rng.range(1, 3);
    let targets = pick_targets(rng, ndev, true);
    let mut args = vec![
        "-type=o".to_string(),
        format!("-targets={}", targets.join(",")),
    ];
    let mut files = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        if t == HOST && rng.chance(1, 2) {
            args.push("-input=/dev/null".into());
            continue;
        }
        let mut bytes = content(rng);
        if bytes.starts_with(b"\x7fELF") {
            bytes.clear();
        }
        files.push((format!("in{i}"), bytes));
        args.push(format!("-input=in{i}"));
    }
    args.push("-output=out".into());
    args.push(format!("-bundle-align={}", rng.pick(&[1, 4096])));
    if rng.chance(1, 4) {
        args.push("-###".into());
    }
    case("-type=o with a non-object reference".into(), args, files)
}
