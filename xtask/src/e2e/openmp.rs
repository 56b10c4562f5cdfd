//! End to end: clang-22 builds OpenMP (and HIP/CUDA/offload-LTO) code with
//! OUR `llvm-offload-binary`, substituted through `-B`.
//!
//! Evidence that our tool did the work, and did it right:
//! 1. `clang-22 -###` with `-B <shim dir>` names the shim;
//! 2. the shim logs every call and keeps copies of its inputs and output;
//! 3. every logged call, replayed with LLVM 22's tool on the same inputs,
//!    gives the same bytes;
//! 4. the `.llvm.offloading` section of each host object is our output, and
//!    the whole object equals the one built with LLVM's own tool behind the
//!    same `-B` path;
//! 5. a full OpenMP program built through the shim runs its target region
//!    on the host-plugin device (a declare-target global that only the
//!    device copy sees unchanged) with `OMP_TARGET_OFFLOAD=MANDATORY`, and
//!    prints what the program built with LLVM's tools prints.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{llvm22, our_bin_dir};

const PROBE: &str = r#"#include <stdio.h>
#pragma omp declare target
int g = 0;
#pragma omp end declare target
int main(void) {
  int seen = -1, sum = 0;
  g = 1; /* host copy only: the device copy still holds 0 */
#pragma omp target map(from : seen) map(tofrom : sum)
  {
    seen = g;
    for (int i = 1; i <= 10; ++i)
      sum += i;
  }
  printf("target saw g=%d -> %s, sum=%d\n", seen, seen == 0 ? "DEVICE" : "HOST-FALLBACK", sum);
  return seen == 0 ? 0 : 1;
}
"#;

const OMP_SRC: &str = "int x = 1;\n#pragma omp declare target\nint dev_value = 0;\n\
#pragma omp end declare target\nint run(void) {\n#pragma omp target map(tofrom: x)\n\
  { x = 42; dev_value = 7; }\n  return x;\n}\n";

const HIP_SRC: &str =
    "__attribute__((device)) int dev_f(int x) { return x + 1; }\nint host_f(void) { return 2; }\n";

/// A `-c` build: file name, source, extra clang arguments.
const COMPILES: &[(&str, &str, &[&str])] = &[
    (
        "x86.c",
        OMP_SRC,
        &["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"],
    ),
    (
        "two.c",
        OMP_SRC,
        &[
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu,aarch64-unknown-linux-gnu",
        ],
    ),
    (
        "lto.c",
        OMP_SRC,
        &[
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-foffload-lto",
        ],
    ),
    (
        "amd.c",
        OMP_SRC,
        &[
            "-fopenmp",
            "--offload-arch=gfx90a:xnack+:sramecc-",
            "-foffload-lto",
            "-nogpulib",
        ],
    ),
    (
        "nv.c",
        OMP_SRC,
        &[
            "-fopenmp",
            "--offload-arch=sm_52",
            "-foffload-lto",
            "-nogpulib",
        ],
    ),
    (
        "d.hip",
        HIP_SRC,
        &[
            "-x",
            "hip",
            "--offload-arch=gfx90a",
            "-nogpulib",
            "-nogpuinc",
            "--offload-new-driver",
            "-fgpu-rdc",
        ],
    ),
    (
        "d.cu",
        HIP_SRC,
        &[
            "-x",
            "cuda",
            "--offload-arch=sm_52",
            "-nogpulib",
            "-nogpuinc",
            "--offload-new-driver",
            "-fgpu-rdc",
            "-foffload-lto",
        ],
    ),
];

fn run(cmd: &mut Command) -> Result<std::process::Output, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// The `-B` shim: logs the call, runs our tool, keeps copies of the images
/// (under their own file names, which decide the image kind) and output.
fn write_shim(dir: &Path, log: &Path, ours: &Path) -> Result<(), String> {
    let script = format!(
        r#"#!/bin/sh
d="{log}/call.$$"
mkdir -p "$d"
for a in "$@"; do printf '%s\n' "$a"; done > "$d/args"
"{ours}" "$@"
rc=$?
prev=""
i=0
for a in "$@"; do
  if [ "$prev" = "-o" ]; then cp "$a" "$d/output"; fi
  case "$a" in
    --image=*)
      old_ifs="$IFS"; IFS=','
      for piece in ${{a#--image=}}; do
        case "$piece" in
          file=*) i=$((i+1)); mkdir -p "$d/in$i"; cp "${{piece#file=}}" "$d/in$i/";;
        esac
      done
      IFS="$old_ifs";;
  esac
  prev="$a"
done
echo "$rc" > "$d/rc"
exit $rc
"#,
        log = log.display(),
        ours = ours.display()
    );
    let path = dir.join("llvm-offload-binary");
    fs::write(&path, script).map_err(|e| e.to_string())?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())
}

/// The logged calls, oldest first.
fn calls(log: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = fs::read_dir(log)
        .map_err(|e| e.to_string())?
        .map(|e| e.unwrap().path())
        .collect();
    v.sort_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok());
    Ok(v)
}

/// Replays a logged call with LLVM 22's tool on the kept copies and checks
/// the bytes match ours. Returns our output.
fn replay(call: &Path, llvm: &Path) -> Result<Vec<u8>, String> {
    let args = fs::read_to_string(call.join("args")).map_err(|e| e.to_string())?;
    let rc = fs::read_to_string(call.join("rc")).map_err(|e| e.to_string())?;
    if rc.trim() != "0" {
        return Err(format!("our tool failed in {}", call.display()));
    }
    let mut replay: Vec<String> = Vec::new();
    let mut prev = String::new();
    let mut i = 0;
    for a in args.lines() {
        if prev == "-o" {
            replay.push(call.join("llvm-output").display().to_string());
        } else if let Some(image) = a.strip_prefix("--image=") {
            let pieces: Vec<String> = image
                .split(',')
                .map(|p| match p.strip_prefix("file=") {
                    Some(f) => {
                        i += 1;
                        let base = Path::new(f).file_name().unwrap_or_default();
                        format!("file={}", call.join(format!("in{i}")).join(base).display())
                    }
                    None => p.to_string(),
                })
                .collect();
            replay.push(format!("--image={}", pieces.join(",")));
        } else {
            replay.push(a.to_string());
        }
        prev = a.to_string();
    }
    if !args
        .lines()
        .any(|a| a.starts_with("--image=file=") || a.contains(",file="))
    {
        return Err(format!("no image in the logged call {}", call.display()));
    }
    run(Command::new(llvm).args(&replay))?;
    let ours = fs::read(call.join("output")).map_err(|e| e.to_string())?;
    let theirs = fs::read(call.join("llvm-output")).map_err(|e| e.to_string())?;
    if ours != theirs {
        return Err(format!(
            "packager output differs from LLVM 22's for {}: {} vs {} bytes",
            call.display(),
            ours.len(),
            theirs.len()
        ));
    }
    Ok(ours)
}

pub fn openmp() -> Result<(), String> {
    let (Some(clang), Some(llvm), Some(objcopy)) = (
        llvm22("clang"),
        llvm22("llvm-offload-binary"),
        llvm22("llvm-objcopy"),
    ) else {
        eprintln!("e2e openmp: clang-22 / llvm-offload-binary-22 / llvm-objcopy-22 not installed; skipped");
        return Ok(());
    };
    let ours = our_bin_dir()?.join("llvm-offload-binary");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let t = tmp.path();
    let shim = t.join("shim");
    let log = t.join("log");
    fs::create_dir_all(&shim).map_err(|e| e.to_string())?;
    write_shim(&shim, &log, &ours)?;
    let b = format!("-B{}", shim.display());

    // 1. The driver picks the shim.
    let src = t.join("x86.c");
    fs::write(&src, OMP_SRC).map_err(|e| e.to_string())?;
    let out = run(Command::new(&clang)
        .args([
            "-###",
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-c",
        ])
        .arg(&b)
        .arg(&src))?;
    let plan = String::from_utf8_lossy(&out.stderr);
    let shim_tool = shim.join("llvm-offload-binary").display().to_string();
    if !plan.contains(&format!("\"{shim_tool}\"")) {
        return Err(format!("clang -### does not run {shim_tool}:\n{plan}"));
    }
    eprintln!("e2e openmp: clang-22 -### runs {shim_tool}");

    // 2-4. Object builds, each packager call replayed with LLVM's tool.
    let mut checked = 0;
    for (name, source, flags) in COMPILES {
        let src = t.join(name);
        fs::write(&src, source).map_err(|e| e.to_string())?;
        let _ = fs::remove_dir_all(&log);
        fs::create_dir_all(&log).map_err(|e| e.to_string())?;
        let with_ours = t.join(format!("{name}.ours.o"));
        let with_llvm = t.join(format!("{name}.llvm.o"));
        let obj = t.join(format!("{name}.o"));
        // Both builds use the same command line, -B path and output name
        // (HIP and CUDA hash the command line into a symbol name); only the
        // tool behind the shim changes.
        write_shim(&shim, &log, &ours)?;
        let compile = || {
            run(Command::new(&clang)
                .args(*flags)
                .arg(&b)
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .current_dir(t))
        };
        compile()?;
        fs::rename(&obj, &with_ours).map_err(|e| e.to_string())?;
        let calls = calls(&log)?;
        write_shim(&shim, &t.join("llvm-log"), &llvm)?;
        compile()?;
        fs::rename(&obj, &with_llvm).map_err(|e| e.to_string())?;
        write_shim(&shim, &log, &ours)?;
        if calls.len() != 1 {
            return Err(format!(
                "{name}: expected one packager call, saw {}",
                calls.len()
            ));
        }
        let packaged = replay(&calls[0], &llvm)?;
        let section = t.join(format!("{name}.section"));
        run(Command::new(&objcopy)
            .arg(format!(
                "--dump-section=.llvm.offloading={}",
                section.display()
            ))
            .arg(&with_ours)
            .arg(t.join("discard.o")))?;
        if fs::read(&section).map_err(|e| e.to_string())? != packaged {
            return Err(format!(
                "{name}: the embedded section is not our packager output"
            ));
        }
        if fs::read(&with_ours).map_err(|e| e.to_string())?
            != fs::read(&with_llvm).map_err(|e| e.to_string())?
        {
            return Err(format!(
                "{name}: host object differs from the one built with LLVM's tool"
            ));
        }
        let args = fs::read_to_string(calls[0].join("args")).unwrap_or_default();
        eprintln!(
            "e2e openmp: {name}: our packager ({} bytes) == LLVM 22's; object identical; {}",
            packaged.len(),
            args.lines()
                .filter(|l| l.starts_with("--image="))
                .collect::<Vec<_>>()
                .join(" ")
        );
        checked += 1;
    }

    // 5. A full program, run on the host-plugin device.
    let probe = t.join("probe.c");
    fs::write(&probe, PROBE).map_err(|e| e.to_string())?;
    let _ = fs::remove_dir_all(&log);
    fs::create_dir_all(&log).map_err(|e| e.to_string())?;
    // Debian ships libomptarget only as libomptarget.so.22.1; the driver
    // links -lomptarget, so give it an unversioned name.
    let libs = t.join("libs");
    fs::create_dir_all(&libs).map_err(|e| e.to_string())?;
    let lib = "/usr/lib/llvm-22/lib";
    let versioned = fs::read_dir(lib)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libomptarget.so"))
        })
        .ok_or("libomptarget is not installed")?;
    std::os::unix::fs::symlink(&versioned, libs.join("libomptarget.so"))
        .map_err(|e| e.to_string())?;
    let libs_flag = format!("-L{}", libs.display());
    let exe_ours = t.join("probe-ours");
    let exe_llvm = t.join("probe-llvm");
    for (exe, with_shim) in [(&exe_ours, true), (&exe_llvm, false)] {
        let mut cmd = Command::new(&clang);
        cmd.args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"])
            .arg(&libs_flag);
        if with_shim {
            cmd.arg(&b);
        }
        run(cmd.arg(&probe).arg("-o").arg(exe).current_dir(t))?;
    }
    let calls = calls(&log)?;
    if calls.len() != 1 {
        return Err(format!(
            "probe build: expected one packager call, saw {}",
            calls.len()
        ));
    }
    replay(&calls[0], &llvm)?;
    let mut outputs = Vec::new();
    for exe in [&exe_ours, &exe_llvm] {
        let out = Command::new(exe)
            .env("LD_LIBRARY_PATH", lib)
            .env("OMP_TARGET_OFFLOAD", "MANDATORY")
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        outputs.push((out.status.code(), out.stdout));
    }
    let text = String::from_utf8_lossy(&outputs[0].1).into_owned();
    if outputs[0].0 != Some(0) || !text.contains("-> DEVICE") {
        return Err(format!(
            "the program built with our packager did not run on the device: {:?} {text}",
            outputs[0].0
        ));
    }
    if outputs[0] != outputs[1] {
        return Err(format!(
            "outputs differ: ours {:?} {text:?}, LLVM's {:?} {:?}",
            outputs[0].0,
            outputs[1].0,
            String::from_utf8_lossy(&outputs[1].1)
        ));
    }
    // Control: with offloading disabled the same binary reports the host
    // fallback, so the probe really tells device from host.
    let control = Command::new(&exe_ours)
        .env("LD_LIBRARY_PATH", lib)
        .env("OMP_TARGET_OFFLOAD", "DISABLED")
        .output()
        .map_err(|e| e.to_string())?;
    if !String::from_utf8_lossy(&control.stdout).contains("HOST-FALLBACK") {
        return Err("the probe does not detect host fallback".into());
    }
    eprintln!(
        "e2e openmp: {checked} object builds checked; program built through our packager printed {:?} (same as with LLVM's tools)",
        text.trim()
    );
    Ok(())
}
