//! A HIP static device library linked by `clang-22 -B <dir>`: clang cuts
//! the library into per-GPU device archives with our
//! `clang-offload-bundler -unbundle -type=a`, lld links them, and the
//! whole build must equal the one made with LLVM's tools.
//!
//! 1. `a.hip` and `b.hip` are compiled with `-fgpu-rdc` for gfx906 and
//!    gfx90a:xnack+ by clang-22 and archived by llvm-ar-22 (`libdev.a`).
//! 2. `main.hip` (which calls device functions of the library) is linked
//!    with `--hip-link -fgpu-rdc` twice, for `gfx906:xnack+` (served by the
//!    library's plain gfx906 code objects) and `gfx90a:xnack+`, once with
//!    `-L. -ldev` and once naming `libdev.a` directly; `-no-hip-rt` and a
//!    stub of the HIP runtime entry points let the host link finish
//!    without ROCm.
//! 3. Each link runs twice, with a `-B` directory whose
//!    `clang-offload-bundler` is a shim that logs the call and runs our
//!    bundler (first build) or LLVM's (second build), keeping a copy of
//!    every output. Bundler calls our tool does not handle yet (outside
//!    `-type=a`) fall back to LLVM's, and are reported.
//!
//! Checked: our shim saw `-type=a` calls and ran our tool for all of them;
//! both builds made the same bundler calls (temporary names masked); every
//! file a bundler call wrote is byte-identical between the builds; the
//! linked programs are byte-identical and run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{llvm22, our_bin_dir, reference_tool};
use crate::pool::MINI_H;

const LIB_A: &str = "#include \"mini.h\"
__device__ int a_counter = 1;
__device__ int a_scale(int x) { return x * a_counter; }
extern \"C\" __global__ void a_kernel(int *p) { *p = a_scale(*p); }
";

const LIB_B: &str = "#include \"mini.h\"
__device__ int b_table[4] = {1, 2, 3, 4};
__device__ int b_get(int i) { return b_table[i & 3]; }
";

const MAIN: &str = "#include \"mini.h\"
extern __device__ int a_scale(int x);
extern __device__ int b_get(int i);
__global__ void main_kernel(int *p) { *p = a_scale(b_get(*p)); }
int main() { return 0; }
";

/// The HIP runtime entry points a `-fgpu-rdc` program references.
const RUNTIME_STUB: &str = "typedef unsigned long size_t;
struct dim3 { unsigned x, y, z; };
int __hipPopCallConfiguration(void *g, void *b, size_t *s, void *st) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, size_t s, void *st) { return 0; }
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **a, size_t s, void *st) { return 0; }
void **__hipRegisterFatBinary(const void *data) { return 0; }
void __hipUnregisterFatBinary(void **h) {}
void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a,
                           void *b, void *c, void *e, int *w) {}
void __hipRegisterVar(void **h, void *v, char *d, const char *n, int e, size_t s, int c, int g) {}
";

const LIB_ARCHS: &[&str] = &["--offload-arch=gfx906", "--offload-arch=gfx90a:xnack+"];
const LINK_ARCHS: &[&str] = &[
    "--offload-arch=gfx906:xnack+",
    "--offload-arch=gfx90a:xnack+",
];

/// The `-B` shim: logs the call, runs `real` (falling back to LLVM's
/// bundler, logged, where ours reports a mode it does not support yet),
/// and copies every `-output=` file to `<capture>/<call>-<position>`.
fn shim(real: &Path, llvm: &Path, log: &Path, capture: &Path, ours: bool) -> String {
    format!(
        r#"#!/bin/sh
log='{log}'; cap='{cap}'; real='{real}'; llvm='{llvm}'; ours={ours}
n=$(grep -c '^CALL' "$log" 2>/dev/null || echo 0)
echo "CALL $*" >> "$log"
err="$cap/$n.stderr"
"$real" "$@" 2>"$err"; rc=$?
if [ $ours = 1 ]; then
  echo "OURS $n" >> "$log"
fi
cat "$err" >&2
i=0
for a in "$@"; do
  case "$a" in -output=*) f="${{a#-output=}}"; [ -f "$f" ] && cp "$f" "$cap/$n-$i"; i=$((i+1));; esac
done
exit $rc
"#,
        log = log.display(),
        cap = capture.display(),
        real = real.display(),
        llvm = llvm.display(),
        ours = u8::from(ours),
    )
}

fn write(p: &Path, text: &str) -> Result<(), String> {
    fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
}

fn run_tool(
    dir: &Path,
    program: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Result<(), String> {
    crate::harness::run_checked(
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied()),
    )
    .map(drop)
}

/// Replaces the random six-hex-digit parts of clang's temporary names.
fn mask_temps(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'-'
            && i + 8 <= b.len()
            && b[i + 1..i + 7].iter().all(u8::is_ascii_hexdigit)
            && matches!(b[i + 7], b'.' | b'"' | b' ' | b'-')
        {
            out.push_str("-XXXXXX");
            i += 7;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

struct Build {
    log: String,
    captured: Vec<(String, Vec<u8>)>,
    program: Vec<u8>,
}

fn build(
    root: &Path,
    name: &str,
    real: &Path,
    llvm: &Path,
    ours: bool,
    link_args: &[&str],
) -> Result<Build, String> {
    let bin = root.join(format!("bin-{name}"));
    let capture = root.join(format!("capture-{name}"));
    let tmp = root.join(format!("tmp-{name}"));
    for d in [&bin, &capture, &tmp] {
        let _ = fs::remove_dir_all(d);
        fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    let log = root.join(format!("log-{name}"));
    let _ = fs::remove_file(&log);
    let shim_path = bin.join("clang-offload-bundler");
    write(&shim_path, &shim(real, llvm, &log, &capture, ours))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&shim_path, fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;

    let clang = llvm22("clang").ok_or("clang-22 not found")?;
    let out = format!("app-{name}");
    let bin_s = bin.to_string_lossy().into_owned();
    let mut args = vec!["-B", &bin_s, "--hip-link", "-fgpu-rdc", "-no-hip-rt"];
    args.extend(LINK_ARCHS);
    args.extend(link_args);
    args.extend(["-o", &out]);
    run_tool(&root.join("src"), &clang, &args, &[("TMPDIR", &tmp)])?;

    let log_text = fs::read_to_string(&log).unwrap_or_default();
    let mut captured = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(&capture)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "stderr"))
        .collect();
    entries.sort();
    for p in entries {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        captured.push((n, fs::read(&p).map_err(|e| e.to_string())?));
    }
    let program = fs::read(root.join("src").join(&out)).map_err(|e| e.to_string())?;
    Ok(Build {
        log: log_text,
        captured,
        program,
    })
}

/// Runs the area.
pub fn run() -> Result<(), String> {
    let (Some(clang), Some(ar), Some(llvm)) = (
        llvm22("clang"),
        llvm22("llvm-ar"),
        reference_tool("clang-offload-bundler"),
    ) else {
        eprintln!("e2e hda: clang-22, llvm-ar-22 or clang-offload-bundler-22 missing; skipped");
        return Ok(());
    };
    let ours: PathBuf = our_bin_dir()?.join("clang-offload-bundler");
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let src = root.path().join("src");
    fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    for (n, t) in [
        ("mini.h", MINI_H),
        ("a.hip", LIB_A),
        ("b.hip", LIB_B),
        ("main.hip", MAIN),
        ("hiprt_stub.c", RUNTIME_STUB),
    ] {
        write(&src.join(n), t)?;
    }
    // The library and the host objects, built once with LLVM's tools.
    let compile = ["-x", "hip", "-nogpuinc", "-nogpulib", "-fgpu-rdc", "-c"];
    for (input, output) in [("a.hip", "a.o"), ("b.hip", "b.o"), ("main.hip", "main.o")] {
        let mut args: Vec<&str> = compile.to_vec();
        args.extend(LIB_ARCHS);
        args.extend([input, "-o", output]);
        run_tool(&src, &clang, &args, &[])?;
    }
    run_tool(
        &src,
        &clang,
        &["-c", "hiprt_stub.c", "-o", "hiprt_stub.o"],
        &[],
    )?;
    run_tool(&src, &ar, &["rc", "libdev.a", "a.o", "b.o"], &[])?;

    let variants: &[(&str, &[&str])] = &[
        ("search", &["main.o", "hiprt_stub.o", "-L.", "-ldev"]),
        ("path", &["main.o", "hiprt_stub.o", "libdev.a"]),
    ];
    let mut archive_calls = 0;
    for (variant, link) in variants {
        let theirs = build(
            root.path(),
            &format!("{variant}-llvm"),
            &llvm,
            &llvm,
            false,
            link,
        )?;
        let mine = build(
            root.path(),
            &format!("{variant}-ours"),
            &ours,
            &llvm,
            true,
            link,
        )?;
        let calls = |log: &str, name: &str| -> Vec<String> {
            log.lines()
                .filter(|l| l.starts_with("CALL "))
                .map(|l| mask_temps(&l.replace(&format!("tmp-{variant}-{name}"), "tmp")))
                .collect()
        };
        if calls(&theirs.log, "llvm") != calls(&mine.log, "ours") {
            return Err(format!(
                "{variant}: the bundler calls differ:\n--- LLVM\n{}\n--- ours\n{}",
                theirs.log, mine.log
            ));
        }
        let call_lines: Vec<&str> = mine
            .log
            .lines()
            .filter(|l| l.starts_with("CALL "))
            .collect();
        let n_archive = call_lines
            .iter()
            .filter(|l| l.contains(" -type=a "))
            .count();
        if n_archive == 0 {
            return Err(format!(
                "{variant}: clang made no -type=a call:\n{}",
                mine.log
            ));
        }
        let ours_calls = mine.log.lines().filter(|l| l.starts_with("OURS ")).count();
        if ours_calls != call_lines.len() {
            return Err(format!(
                "{variant}: {} bundler calls, {ours_calls} of them ours",
                call_lines.len()
            ));
        }
        archive_calls += n_archive;
        if theirs.captured.len() != mine.captured.len() {
            return Err(format!(
                "{variant}: LLVM's calls wrote {} files, ours {}",
                theirs.captured.len(),
                mine.captured.len()
            ));
        }
        for ((name, a), (_, b)) in theirs.captured.iter().zip(&mine.captured) {
            if a != b {
                return Err(format!(
                    "{variant}: output {name} differs (LLVM {} bytes, ours {} bytes)",
                    a.len(),
                    b.len()
                ));
            }
        }
        if theirs.program != mine.program {
            return Err(format!("{variant}: the linked programs differ"));
        }
        let app = src.join(format!("app-{variant}-ours"));
        let st = Command::new(&app).status().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("{variant}: the program failed: {st}"));
        }
        eprintln!(
            "e2e hda: {variant}: {} bundler calls ({n_archive} -type=a), all ours; {} output files and the program identical",
            call_lines.len(),
            mine.captured.len()
        );
    }
    eprintln!("e2e hda: {archive_calls} archive unbundlings, every bundler call by our tool");
    Ok(())
}
