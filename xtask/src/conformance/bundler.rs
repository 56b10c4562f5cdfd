//! Differential runs of `clang-offload-bundler` against LLVM 22's.
//!
//! Random cases cover every file type, 1-8 targets in random orders with
//! and without a host, alignments, empty and newline-less inputs, `-list`,
//! unbundling with exact and compatible IDs, missing bundles, damaged
//! bundles, every validation error and LLVM's option syntax variants
//! (`-o=v`, `--o v`, boolean values, comma lists, deprecated options,
//! response files).
//!
//! Deliberate differences (docs/compat.md#clang-offload-bundler) are recognised and counted
//! separately: where 22 crashes we exit 1 with an error, and when a run fails
//! we leave no partial outputs.

use crate::harness::{Case, Outcome, Rng, Suite};
use offload_format::{bundle, text_bundle};

const TOOL: &str = "clang-offload-bundler";

/// Spellings that standardise to the same entry ID, one family per ID.
const FAMILIES: &[&[&str]] = &[
    &[
        "host-x86_64-unknown-linux-gnu",
        "host-x86_64--linux-gnu",
        "host-x86_64-unknown-linux-gnu-",
    ],
    &["host-x86_64-pc-linux-gnu"],
    &[
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa-unknown-gfx906",
        "hip-amdgcn-amd-amdhsa-gnu-gfx906",
    ],
    &["hipv4-amdgcn-amd-amdhsa--gfx906"],
    &[
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "hip-amdgcn-amd-amdhsa-unknown-gfx90a:xnack+",
    ],
    &["hip-amdgcn-amd-amdhsa--gfx90a:xnack-"],
    &["hip-amdgcn-amd-amdhsa--gfx90a"],
    &["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"],
    &[
        "hip-amdgcn-amd-amdhsa--gfx1030",
        "hip-amdgcn-amd-amdhsa-elf-gfx1030",
    ],
    &["hip-amdgcn-amd-amdhsa--gfx1100"],
    &["hip-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-"],
    &["hip-amdgcn-amd-amdhsa--gfx9-generic"],
    &["hip-amdgcn-amd-amdhsa--"],
    &["hip-spirv64-amd-amdhsa--amdgcnspirv"],
    &[
        "openmp-nvptx64-nvidia-cuda--sm_70",
        "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
    ],
    &["openmp-nvptx64-nvidia-cuda--sm_80"],
    &["openmp-nvptx64-nvidia-cuda-sm_80"],
    &["openmp-amdgcn-amd-amdhsa--gfx906"],
    &["openmp-x86_64-pc-linux-gnu-"],
    &["openmp-amdgcn-amd-amdhsa--gfx90a:xnack+"],
];

/// Entry IDs as stored in files (standardised forms of the families, plus
/// forms LLVM 14 and hand-made files use).
const FILE_IDS: &[&str] = &[
    "host-x86_64-unknown-linux-gnu-",
    "host-x86_64-pc-linux-gnu-",
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hipv4-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx90a",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx1030",
    "hip-amdgcn-amd-amdhsa--gfx1100",
    "hip-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx908",
    "hip-amdgcn-amd-amdhsa--gfx9-generic",
    "hip-spirv64-amd-amdhsa--amdgcnspirv",
    "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
    "openmp-nvptx64-nvidia-cuda-unknown-sm_80",
    "openmp-amdgcn-amd-amdhsa--gfx906",
    "openmp-x86_64-pc-linux-gnu-",
    "host-x86_64-unknown-linux-gnu",
    "hip-amdgcn-amd-amdhsa-gfx906",
    "hip-amdgcn-amd-amdhsa-unknown-gfx906",
    "openmp-nvptx64-nvidia-cuda",
    "",
];

/// Requested targets for unbundling: the families plus compatible-only
/// spellings.
const EXTRA_REQUESTS: &[&str] = &[
    "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx906:sramecc-:xnack+",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx908:xnack-:sramecc+",
    "openmp-amdgcn-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa-gfx906",
    "openmp-nvptx64-nvidia-cuda-gnu-sm_70",
    "host-x86_64-unknown-linux-musl",
];

const INVALID_TARGETS: &[&str] = &[
    "cuda-nvptx64-nvidia-cuda-",
    "host-foo-unknown-linux-gnu",
    "cuda-foo-unknown-linux-gnu",
    "openmp-nvptx64-nvidia-cuda",
    "host-x86_64-unknown-linux",
    "",
    "HOST-x86_64-unknown-linux-gnu",
    "hip-AMDGCN-amd-amdhsa--gfx906",
    "sycl-spir64-unknown-unknown-",
];

const BINARY_TYPES: &[&str] = &["bc", "gch", "ast", "o"];
const TEXT_TYPES: &[&str] = &["i", "ii", "cui", "hipi", "d", "ll", "s"];

/// Runs the suite.
pub fn run(s: &mut Suite) {
    match s.provide(TOOL) {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            eprintln!("conformance bundler: {e}");
            s.failed += 1;
            return;
        }
    }
    s.accept = Some(accept);
    let n = s.count(1200);
    for i in 0..n {
        let mut rng = s.rng.clone();
        let case = match i % 10 {
            0..=2 => bundle_case(&mut rng),
            3 => list_case(&mut rng),
            4..=6 => unbundle_case(&mut rng),
            7 => damaged_case(&mut rng),
            _ => error_case(&mut rng),
        };
        s.rng = rng;
        s.check(&case);
    }
}

/// Our tool and LLVM's may differ only in the documented ways.
fn accept(case: &Case, llvm: &Outcome, ours: &Outcome) -> Option<&'static str> {
    let initial = case.sorted_files();
    let last_line = ours
        .stderr
        .strip_suffix(b"\n")
        .unwrap_or(&ours.stderr)
        .rsplit(|&c| c == b'\n')
        .next()
        .unwrap_or_default();
    let error = String::from_utf8_lossy(last_line);
    let ours_clean = ours.status == 1
        && ours.stdout.is_empty()
        && ours.files == initial
        && error.starts_with(&format!("{TOOL}: error: "));
    if llvm.status >= 128 && ours_clean {
        return Some("where LLVM 22 crashed");
    }
    // A bad header entry after a good one leaves LLVM 22 walking an
    // uninitialised iterator: it crashes, or not, depending on heap contents.
    if ours_clean
        && (error.contains("malformed offload bundle")
            || error.contains("truncated offload bundle header"))
    {
        return Some("damaged header where LLVM 22 is undefined");
    }
    if ours.same_error_without_outputs(llvm, &initial) {
        return Some("no partial outputs after an error");
    }
    None
}

// ---------------------------------------------------------------- helpers

/// A random input: binary, text with or without a final newline, empty.
fn content(rng: &mut Rng, text: bool) -> Vec<u8> {
    match rng.below(8) {
        0 => Vec::new(),
        1 => b"\n".to_vec(),
        2 if !text => {
            let n = rng.range(1, 300);
            rng.bytes(n)
        }
        _ => {
            let lines = rng.range(1, 6);
            let mut v = Vec::new();
            for l in 0..lines {
                v.extend_from_slice(format!("line {l} {}", rng.below(1000)).as_bytes());
                if rng.chance(1, 10) {
                    v.push(b'\r');
                }
                if l + 1 < lines || rng.chance(1, 2) {
                    v.push(b'\n');
                }
            }
            v
        }
    }
}

/// Picks `n` targets from distinct families (so no two standardise alike).
fn pick_targets(rng: &mut Rng, n: usize, host: bool) -> Vec<String> {
    let mut fams: Vec<usize> = (2..FAMILIES.len()).collect();
    rng.shuffle(&mut fams);
    let mut out: Vec<String> = fams
        .into_iter()
        .take(n.saturating_sub(host as usize))
        .map(|f| rng.pick(FAMILIES[f]).to_string())
        .collect();
    if host {
        let h = rng.pick(&FAMILIES[..2]);
        let pos = rng.below(out.len() + 1);
        out.insert(pos, rng.pick(h).to_string());
    }
    out
}

fn hip_targets(rng: &mut Rng, n: usize) -> Vec<String> {
    let hips: Vec<&[&str]> = FAMILIES
        .iter()
        .copied()
        .filter(|f| f[0].starts_with("hip"))
        .collect();
    let mut idx: Vec<usize> = (0..hips.len()).collect();
    rng.shuffle(&mut idx);
    idx.into_iter()
        .take(n)
        .map(|i| rng.pick(hips[i]).to_string())
        .collect()
}

/// Builds the argument list for an option in one of LLVM's spellings.
fn opt(rng: &mut Rng, args: &mut Vec<String>, name: &str, value: &str) {
    let dashes = if rng.chance(1, 2) { "-" } else { "--" };
    if rng.chance(2, 3) || value.is_empty() || value.starts_with('-') {
        args.push(format!("{dashes}{name}={value}"));
    } else {
        args.push(format!("{dashes}{name}"));
        args.push(value.to_string());
    }
}

fn flag(rng: &mut Rng, args: &mut Vec<String>, name: &str) {
    let dashes = if rng.chance(1, 2) { "-" } else { "--" };
    let v = *rng.pick(&["", "", "", "=true", "=1", "=TRUE", "=True"]);
    args.push(format!("{dashes}{name}{v}"));
}

/// `-targets` as one list, several occurrences, or one per target.
fn targets_opt(rng: &mut Rng, args: &mut Vec<String>, targets: &[String]) {
    if targets.len() > 1 && rng.chance(1, 3) {
        let split = rng.range(1, targets.len() - 1);
        opt(rng, args, "targets", &targets[..split].join(","));
        opt(rng, args, "targets", &targets[split..].join(","));
    } else {
        opt(rng, args, "targets", &targets.join(","));
    }
}

fn files_opt(rng: &mut Rng, args: &mut Vec<String>, name: &str, files: &[String]) {
    let commas_ok = files.iter().all(|f| !f.contains(','));
    if commas_ok && rng.chance(1, 8) {
        opt(rng, args, &format!("{name}s"), &files.join(","));
    } else {
        for f in files {
            opt(rng, args, name, f);
        }
    }
}

fn finish(
    rng: &mut Rng,
    label: String,
    mut args: Vec<String>,
    files: Vec<(String, Vec<u8>)>,
) -> Case {
    // Random order of the whole command line does not matter to LLVM except
    // for list order of -input/-output/-targets, which we keep relative.
    if rng.chance(1, 4) {
        args.push(format!("-type={}", rng.pick(&["bc", "ii"])));
        let last = args.len() - 1;
        // Keep the real -type last so that it wins.
        let t = args.iter().position(|a| a.contains("type")).unwrap_or(last);
        if t != last {
            args.swap(t, last);
        }
    }
    if rng.chance(1, 12) {
        flag(rng, &mut args, "verbose");
    }
    let mut case = Case::new(TOOL);
    case.label = label;
    case.files = files;
    if rng.chance(1, 15) {
        let rsp: String = args
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(if rng.chance(1, 2) { " " } else { "\n" });
        case.files.push(("args.rsp".into(), rsp.into_bytes()));
        case.args.push("@args.rsp".into());
    } else {
        case.args = args.into_iter().map(Into::into).collect();
    }
    if rng.chance(1, 20) {
        case.env.push((
            "OFFLOAD_BUNDLER_VERBOSE".into(),
            rng.pick(&["1", "0", "true"]).to_string(),
        ));
    }
    if rng.chance(1, 30) {
        case.env.push((
            "OFFLOAD_BUNDLER_COMPRESSION_LEVEL".into(),
            rng.pick(&["5", "-3", "x", ""]).to_string(),
        ));
    }
    if rng.chance(1, 30) {
        case.env.push((
            "COMPRESSED_BUNDLE_FORMAT_VERSION".into(),
            rng.pick(&["2", "3", "02", "4", "x", "-1", "65538"])
                .to_string(),
        ));
    }
    case
}

// ---------------------------------------------------------------- cases

fn type_opt(rng: &mut Rng, args: &mut Vec<String>, ty: &str) {
    opt(rng, args, "type", ty);
}

fn bundle_case(rng: &mut Rng) -> Case {
    let text = rng.chance(1, 2);
    let ty = if text {
        *rng.pick(TEXT_TYPES)
    } else {
        *rng.pick(BINARY_TYPES)
    };
    let n = rng.range(1, 8);
    let hip_only = rng.chance(1, 4);
    let targets = if hip_only {
        hip_targets(rng, n)
    } else {
        pick_targets(rng, n.max(1), true)
    };
    let mut files = Vec::new();
    let mut inputs = Vec::new();
    for (i, _) in targets.iter().enumerate() {
        if rng.chance(1, 15) {
            inputs.push("/dev/null".to_string());
        } else {
            let name = format!("in{i}");
            files.push((name.clone(), content(rng, text)));
            inputs.push(name);
        }
    }
    let mut args = Vec::new();
    type_opt(rng, &mut args, ty);
    targets_opt(rng, &mut args, &targets);
    files_opt(rng, &mut args, "input", &inputs);
    let out = if rng.chance(1, 10) {
        "-".to_string()
    } else {
        format!("out.{ty}")
    };
    opt(rng, &mut args, "output", &out);
    if rng.chance(2, 3) {
        let a = *rng.pick(&[
            "1", "2", "3", "8", "16", "64", "4096", "0x10", "010", "0b100", "7", "1000",
        ]);
        opt(rng, &mut args, "bundle-align", a);
    }
    if rng.chance(1, 10) {
        args.push(
            rng.pick(&[
                "-###",
                "--###",
                "-hip-openmp-compatible",
                "-allow-missing-bundles",
                "-list=false",
                "-unbundle=0",
            ])
            .to_string(),
        );
    }
    let stdin = if rng.chance(1, 12) {
        // One input (or two: the second reads an empty, drained stdin) from stdin.
        let data = content(rng, text);
        for a in args.iter_mut() {
            if a.ends_with("=in0") || a == "in0" {
                *a = a.replace("in0", "-");
            }
        }
        Some(data)
    } else {
        None
    };
    let label = format!("bundle -type={ty} {} targets", targets.len());
    let mut c = finish(rng, label, args, files);
    c.stdin = stdin;
    c
}

/// Entries (ID, content) for a bundle, IDs from FILE_IDS without repeats
/// (usually), in random order.
fn file_entries(rng: &mut Rng, text: bool) -> Vec<(String, Vec<u8>)> {
    let n = rng.range(1, 8);
    let mut ids: Vec<usize> = (0..FILE_IDS.len()).collect();
    rng.shuffle(&mut ids);
    // Mostly well-formed IDs; odd ones now and then.
    let mut out = Vec::new();
    for i in ids {
        if out.len() == n {
            break;
        }
        if i >= 18 && !rng.chance(1, 6) {
            continue;
        }
        out.push((FILE_IDS[i].to_string(), content(rng, text)));
    }
    if out.is_empty() {
        out.push((FILE_IDS[2].to_string(), content(rng, text)));
    }
    if rng.chance(1, 15) {
        let dup = out[rng.below(out.len())].0.clone();
        out.push((dup, content(rng, text)));
    }
    out
}

fn make_bundle(
    rng: &mut Rng,
    text_comment: Option<&str>,
    entries: &[(String, Vec<u8>)],
) -> Vec<u8> {
    let e: Vec<(&[u8], &[u8])> = entries
        .iter()
        .map(|(i, d)| (i.as_bytes(), d.as_slice()))
        .collect();
    let mut v = Vec::new();
    match text_comment {
        Some(c) => text_bundle::write(&mut v, c, &e).expect("in-memory write"),
        None => {
            if e.iter()
                .enumerate()
                .any(|(i, (id, _))| e[..i].iter().any(|(p, _)| p == id))
            {
                // Duplicate IDs: lay the header out by hand (our writer refuses).
                write_binary_with_duplicates(&mut v, &e);
            } else {
                let align = *rng.pick(&[1u32, 1, 4, 16, 4096]);
                bundle::write(&mut v, &e, align).expect("in-memory write");
            }
        }
    }
    v
}

fn write_binary_with_duplicates(v: &mut Vec<u8>, e: &[(&[u8], &[u8])]) {
    v.extend_from_slice(bundle::MAGIC);
    v.extend_from_slice(&(e.len() as u64).to_le_bytes());
    let mut off = 32 + e.iter().map(|(i, _)| 24 + i.len()).sum::<usize>();
    for (id, d) in e {
        v.extend_from_slice(&(off as u64).to_le_bytes());
        v.extend_from_slice(&(d.len() as u64).to_le_bytes());
        v.extend_from_slice(&(id.len() as u64).to_le_bytes());
        v.extend_from_slice(id);
        off += d.len();
    }
    for (_, d) in e {
        v.extend_from_slice(d);
    }
}

fn list_case(rng: &mut Rng) -> Case {
    let text = rng.chance(1, 3);
    let ty = if text {
        *rng.pick(TEXT_TYPES)
    } else {
        *rng.pick(&["bc", "gch", "ast", "o", "a"])
    };
    let comment = text_bundle::comment_for_type(ty);
    let entries = file_entries(rng, text);
    let mut b = make_bundle(rng, comment, &entries);
    if text && rng.chance(1, 4) {
        let mut pre = content(rng, true);
        pre.extend_from_slice(&b);
        b = pre;
    }
    if rng.chance(1, 10) {
        // Read as the wrong kind.
        b = make_bundle(rng, if text { None } else { Some("//") }, &entries);
    }
    let mut args = Vec::new();
    type_opt(rng, &mut args, ty);
    flag(rng, &mut args, "list");
    let mut case_files = vec![("b".to_string(), b.clone())];
    let stdin = rng.chance(1, 8);
    opt(rng, &mut args, "input", if stdin { "-" } else { "b" });
    if stdin {
        case_files.clear();
    }
    let mut c = finish(rng, format!("list -type={ty}"), args, case_files);
    if stdin {
        c.stdin = Some(b);
    }
    c
}

fn unbundle_case(rng: &mut Rng) -> Case {
    let text = rng.chance(1, 3);
    let ty = if text {
        *rng.pick(TEXT_TYPES)
    } else {
        *rng.pick(BINARY_TYPES)
    };
    let comment = text_bundle::comment_for_type(ty);
    let input = match rng.below(12) {
        0 => None,
        1 => Some(content(rng, text)),
        _ => {
            let e = file_entries(rng, text);
            Some(make_bundle(rng, comment, &e))
        }
    };
    // Requests: distinct families, at most one host, plus extras.
    let n = rng.range(1, 6);
    let host = rng.chance(1, 2);
    let mut reqs = pick_targets(rng, n, host);
    if rng.chance(1, 3) {
        let extra = rng.pick(EXTRA_REQUESTS).to_string();
        let std_clash = reqs.iter().any(|r| same_family(r, &extra));
        if !std_clash {
            let pos = rng.below(reqs.len() + 1);
            reqs.insert(pos, extra);
        }
    }
    let mut outputs: Vec<String> = (0..reqs.len()).map(|i| format!("o{i}")).collect();
    if rng.chance(1, 10) {
        let i = rng.below(outputs.len());
        outputs[i] = "-".into();
    }
    if outputs.len() > 1 && rng.chance(1, 15) {
        outputs[1] = outputs[0].clone();
    }
    if rng.chance(1, 20) {
        let i = rng.below(outputs.len());
        outputs[i] = "nodir/x".into();
    }
    let mut args = Vec::new();
    type_opt(rng, &mut args, ty);
    flag(rng, &mut args, "unbundle");
    targets_opt(rng, &mut args, &reqs);
    let in_name = if input.is_none() { "/dev/null" } else { "b" };
    opt(rng, &mut args, "input", in_name);
    files_opt(rng, &mut args, "output", &outputs);
    if rng.chance(1, 2) {
        flag(rng, &mut args, "allow-missing-bundles");
    }
    if rng.chance(1, 4) {
        flag(rng, &mut args, "hip-openmp-compatible");
    }
    let mut files = Vec::new();
    if let Some(b) = input {
        files.push(("b".to_string(), b));
    }
    if rng.chance(1, 8) {
        files.push(("o0".to_string(), b"existing".to_vec()));
    }
    finish(
        rng,
        format!("unbundle -type={ty} {} targets", reqs.len()),
        args,
        files,
    )
}

fn same_family(a: &str, b: &str) -> bool {
    let fa = FAMILIES.iter().position(|f| f.contains(&a));
    let fb = FAMILIES.iter().position(|f| f.contains(&b));
    // The extra requests standardise like these families.
    let extra_family = |x: &str| match x {
        "hip-amdgcn-amd-amdhsa-gfx906" => FAMILIES
            .iter()
            .position(|f| f[0] == "hip-amdgcn-amd-amdhsa--"),
        _ => None,
    };
    let fa = fa.or(extra_family(a));
    let fb = fb.or(extra_family(b));
    fa.is_some() && fa == fb
}

/// Truncated, bit-flipped or otherwise damaged bundles, listed or unbundled.
fn damaged_case(rng: &mut Rng) -> Case {
    let entries = file_entries(rng, false);
    let mut b = make_bundle(rng, None, &entries);
    match rng.below(6) {
        0 => {
            let cut = rng.below(b.len());
            b.truncate(cut);
        }
        1 => {
            // Overwrite one header word with a random or extreme value.
            let words = (b.len().min(200) - 24) / 8;
            let at = 24 + 8 * rng.below(words.max(1));
            let r = rng.next_u64() % 512;
            let v = *rng.pick(&[0u64, 1, u64::MAX, u64::MAX - 3, 1 << 40, r]);
            if at + 8 <= b.len() {
                b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        2 => {
            let i = rng.below(b.len());
            b[i] ^= 1 << rng.below(8);
        }
        3 => {
            let k = rng.range(1, 4);
            let mut p = rng.bytes(k);
            p.extend_from_slice(&b);
            b = p;
        }
        4 => {
            let k = rng.range(1, 64);
            let extra = rng.bytes(k);
            b.extend_from_slice(&extra);
            if rng.chance(1, 2) {
                let again = b.clone();
                b.extend_from_slice(&again);
            }
        }
        _ => b.truncate(rng.below(40)),
    }
    let mut args = Vec::new();
    let ty = *rng.pick(&["bc", "o", "ast"]);
    type_opt(rng, &mut args, ty);
    opt(rng, &mut args, "input", "b");
    if rng.chance(1, 2) {
        flag(rng, &mut args, "list");
    } else {
        flag(rng, &mut args, "unbundle");
        let (k, host) = (rng.range(1, 3), rng.chance(1, 2));
        let reqs = pick_targets(rng, k, host);
        targets_opt(rng, &mut args, &reqs);
        let outs: Vec<String> = (0..reqs.len()).map(|i| format!("o{i}")).collect();
        files_opt(rng, &mut args, "output", &outs);
        if rng.chance(1, 2) {
            flag(rng, &mut args, "allow-missing-bundles");
        }
    }
    finish(rng, "damaged bundle".into(), args, vec![("b".into(), b)])
}

/// A command line with one or more mistakes.
fn error_case(rng: &mut Rng) -> Case {
    let text = rng.chance(1, 2);
    let ty = if text {
        *rng.pick(TEXT_TYPES)
    } else {
        *rng.pick(BINARY_TYPES)
    };
    let n = rng.range(1, 5);
    let mut targets = pick_targets(rng, n, true);
    let mut inputs: Vec<String> = (0..targets.len()).map(|i| format!("in{i}")).collect();
    let files: Vec<(String, Vec<u8>)> = inputs
        .iter()
        .map(|n| (n.clone(), content(rng, text)))
        .collect();
    let mut outputs = vec!["out".to_string()];
    let mut ty = ty.to_string();
    let mut extra: Vec<String> = Vec::new();
    let mut unbundle = false;
    let mut list = false;
    let mut no_type = false;
    let mut no_targets = false;
    let mutations = rng.range(1, 2);
    for _ in 0..mutations {
        match rng.below(24) {
            0 => no_type = true,
            1 => extra.push("-inputs=".into()),
            2 => extra.push("-outputs=o2,o3".into()),
            3 => {
                list = true;
                unbundle = true
            }
            4 => list = true,
            5 => extra.push("-check-input-archive".into()),
            6 => outputs.clear(),
            7 => no_targets = true,
            8 => {
                unbundle = true;
                inputs.push("in0".into())
            }
            9 => {
                unbundle = true;
                outputs.push("o2".into())
            }
            10 => ty = "a".into(),
            11 => outputs.push("o2".into()),
            12 => {
                inputs.pop();
            }
            13 => {
                let t = targets[rng.below(targets.len())].clone();
                targets.push(t);
                inputs.push("in0".into());
            }
            14 => {
                let i = rng.below(targets.len() + 1);
                targets.insert(i, rng.pick(INVALID_TARGETS).to_string());
                inputs.push("in0".into());
            }
            15 => {
                targets.push("hip-amdgcn-amd-amdhsa--gfx90a".into());
                targets.push("hip-amdgcn-amd-amdhsa--gfx90a:sramecc+".into());
                inputs.push("in0".into());
                inputs.push("in0".into());
            }
            16 => {
                targets.retain(|t| !t.starts_with("host"));
                targets.push("openmp-nvptx64-nvidia-cuda--sm_70".into());
                inputs.truncate(targets.len());
                while inputs.len() < targets.len() {
                    inputs.push("in0".into());
                }
            }
            17 => {
                targets.push("host-x86_64-pc-linux-gnu".into());
                targets.push("host-x86_64-unknown-linux-gnu".into());
                inputs.push("in0".into());
                inputs.push("in0".into());
            }
            18 => {
                let i = rng.below(inputs.len().max(1));
                if let Some(x) = inputs.get_mut(i) {
                    *x = rng.pick(&["nonexist", ".", "nodir/x"]).to_string();
                }
            }
            19 => ty = rng.pick(&["zz", "", "BC", "obj"]).to_string(),
            20 => outputs = vec![rng.pick(&["nodir/out", "."]).to_string()],
            21 => extra.push(
                rng.pick(&[
                    "extra",
                    "-typ=bc",
                    "-t=x",
                    "--unbundle=yes",
                    "-bundle-align=abc",
                    "-bundle-align=-1",
                    "-bundle-align=4294967296",
                    "--compression-level=x",
                    "-list=2",
                    "@missing.rsp",
                    "-",
                    "--",
                    "-input",
                ])
                .to_string(),
            ),
            22 => extra.push("-bundle-align=0".into()),
            _ => extra.push("-h".into()),
        }
    }
    let mut args = Vec::new();
    if !no_type {
        type_opt(rng, &mut args, &ty);
    }
    if list {
        flag(rng, &mut args, "list");
    }
    if unbundle {
        flag(rng, &mut args, "unbundle");
    }
    if !no_targets && !targets.is_empty() {
        targets_opt(rng, &mut args, &targets);
    }
    for i in &inputs {
        opt(rng, &mut args, "input", i);
    }
    for o in &outputs {
        opt(rng, &mut args, "output", o);
    }
    let tail = extra.iter().any(|e| e == "-input");
    args.extend(extra.into_iter().filter(|e| e != "-input"));
    if tail {
        args.push("-input".into());
    }
    let mut c = Case::new(TOOL);
    c.label = "command-line error".into();
    c.args = args.into_iter().map(Into::into).collect();
    c.files = files;
    let _ = rng;
    c
}
