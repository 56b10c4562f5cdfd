//! `cargo xtask compress-identity`: the claim that compressed output is
//! LLVM's, checked the way a user would. Our `clang-offload-bundler
//! -compress` against `clang-offload-bundler-22 -compress`, with the default
//! and an explicit `-compression-level=`, on inputs from 1 KiB to 256 MiB;
//! then `clang-22 -B <our bin dir> --offload-compress` against plain
//! `clang-22` on `docs/examples/k.hip`. Every output must be byte-identical,
//! and compressing the largest input must take at most a quarter of LLVM's
//! peak memory (`/usr/bin/time -v`). Needs the default build (the system's
//! libzstd and zlib, as LLVM links) and the LLVM 22 tools.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::{parse_size, semi_compressible};
use crate::harness::{llvm22, our_bin_dir, reference_tool, workspace_root};

const DEFAULT_SIZES: &str = "1K,11K,1M,64M,256M";
/// Our peak memory over LLVM's when compressing the largest input.
const MAX_MEMORY_RATIO: f64 = 0.25;
const TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx906";

struct Run {
    bytes: Vec<u8>,
    peak_kib: u64,
}

/// Runs `program args` under `/usr/bin/time -v`; the output file's bytes and
/// the peak resident set size.
fn run_timed(program: &Path, args: &[String], output: &Path) -> Result<Run, String> {
    let _ = fs::remove_file(output);
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(program)
        .args(args)
        .output()
        .map_err(|e| format!("/usr/bin/time: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{} {args:?} failed:\n{stderr}", program.display()));
    }
    let peak_kib = stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no peak memory in /usr/bin/time's report")?;
    let bytes = fs::read(output).map_err(|e| format!("{}: {e}", output.display()))?;
    Ok(Run { bytes, peak_kib })
}

fn label(size: u64) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut sizes = DEFAULT_SIZES.to_string();
    let mut bin_dir: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => sizes = it.next().ok_or("--sizes needs a value")?.clone(),
            "--bin-dir" => bin_dir = Some(it.next().ok_or("--bin-dir needs a value")?.into()),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let sizes: Vec<u64> = sizes.split(',').map(parse_size).collect::<Result<_, _>>()?;
    let llvm = reference_tool("clang-offload-bundler")
        .ok_or("LLVM 22's clang-offload-bundler is not installed")?;
    let clang = llvm22("clang").ok_or("clang-22 is not installed")?;
    let bin_dir = match bin_dir {
        Some(d) => d,
        None => our_bin_dir()?,
    };
    let ours = bin_dir.join("clang-offload-bundler");
    let ident = Command::new(&ours)
        .arg("--version")
        .env("OFFLOAD_TOOLS_VERSION", "1")
        .output()
        .map_err(|e| format!("{}: {e}", ours.display()))?;
    print!("{}", String::from_utf8_lossy(&ident.stdout));

    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path();
    let host = d.join("host.bin");
    fs::write(&host, b"host code\n").map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    println!("| input | level | bytes (ours = LLVM) | peak ours / LLVM |");
    println!("|---|---|---|---|");
    let largest = sizes.iter().copied().max().unwrap_or(0);
    for &size in &sizes {
        let input = d.join("device.bin");
        semi_compressible(&input, size, size)?;
        for level in [None, Some(9)] {
            let output = d.join("out.ccob");
            let mut argv = vec![
                "-type=bc".to_string(),
                TARGETS.to_string(),
                format!("-input={}", host.display()),
                format!("-input={}", input.display()),
                format!("-output={}", output.display()),
                "-compress".to_string(),
            ];
            if let Some(l) = level {
                argv.push(format!("-compression-level={l}"));
            }
            let theirs = run_timed(&llvm, &argv, &output)?;
            let mine = run_timed(&ours, &argv, &output)?;
            let same = theirs.bytes == mine.bytes;
            let ratio = mine.peak_kib as f64 / theirs.peak_kib as f64;
            println!(
                "| {} | {} | {} ({} bytes) | {} / {} MiB = {ratio:.2} |",
                label(size),
                level.map_or("default".to_string(), |l| l.to_string()),
                if same { "identical" } else { "DIFFERENT" },
                theirs.bytes.len(),
                mine.peak_kib / 1024,
                theirs.peak_kib / 1024,
            );
            if !same {
                failures.push(format!("{} level {level:?}: bytes differ", label(size)));
            }
            if size == largest && size >= 256 << 20 && ratio > MAX_MEMORY_RATIO {
                failures.push(format!(
                    "{}: peak memory {ratio:.2} of LLVM's (at most {MAX_MEMORY_RATIO})",
                    label(size)
                ));
            }
        }
    }

    // clang-22 through -B: the HIP example of the README. A fixed -cuid,
    // because clang otherwise derives one that differs from run to run.
    let source = workspace_root().join("docs/examples/k.hip");
    for extra in [
        &[][..],
        &["--offload-compress"][..],
        &["--offload-compress", "--offload-compression-level=9"][..],
    ] {
        let mut objects = Vec::new();
        for b in [Some(&bin_dir), None] {
            let object = d.join(if b.is_some() { "ours.o" } else { "llvm.o" });
            let mut cmd = Command::new(&clang);
            if let Some(b) = b {
                cmd.arg("-B").arg(b);
            }
            let st = cmd
                .args(crate::harness::HIP_GFX906_ARGS)
                .args(extra)
                .arg("-c")
                .arg(&source)
                .arg("-o")
                .arg(&object)
                .status()
                .map_err(|e| format!("clang-22: {e}"))?;
            if !st.success() {
                return Err(format!("clang-22 {extra:?} -c {} failed", source.display()));
            }
            objects.push(fs::read(&object).map_err(|e| e.to_string())?);
        }
        let same = objects[0] == objects[1];
        println!(
            "| clang-22 -B, k.hip {} | | {} ({} bytes) | |",
            extra.join(" "),
            if same { "identical" } else { "DIFFERENT" },
            objects[1].len()
        );
        if !same {
            failures.push(format!("clang-22 -B {extra:?}: the objects differ"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
