//! HIP through `clang-22 -B <our bin dir>`: clang runs our bundler for
//! `-E`, `-S`, `-c -emit-llvm` and for compiling a bundled `.hipi`.
//!
//! clang finds `clang-offload-bundler` in the `-B` directory, where a shim
//! logs each call (proving our tool was used), runs our bundler, then runs
//! LLVM's with the same arguments and compares every output byte for byte
//! (clang's temporary inputs exist only during the call, so this is the one
//! moment both can see them). On top of that the final files of whole builds
//! are compared with LLVM-only builds where clang itself is deterministic.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::harness::{llvm22, our_bin_dir, reference_tool};

const SOURCE: &str = r#"#include <stddef.h>
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm,
                               hipStream_t s);
__attribute__((global)) void scale(float *p, float f) { p[0] *= f; }
__attribute__((device)) int twice(int x) { return 2 * x; }
int main() { return 0; }
"#;

/// Host-side stand-ins for the HIP runtime entry points that clang's
/// generated registration code calls, so that `--hip-link` can link an
/// executable without ROCm (with `-no-hip-rt`).
const RUNTIME_STUBS: &str = r#"void *__hipRegisterFatBinary(const void *d) { (void)d; return 0; }
void __hipRegisterFunction(void *m, const void *h, char *n, const char *dn, unsigned t,
                           void *a, void *b, void *c, void *d, int *e) {}
void __hipUnregisterFatBinary(void *m) {}
void __hipRegisterVar(void *m, void *h, char *n, const char *dn, int e, unsigned long s,
                      int c, int g) {}
void __hipRegisterManagedVar(void) {}
void __hipRegisterSurface(void) {}
void __hipRegisterTexture(void) {}
int hipLaunchKernel(void) { return 0; }
int __hipPopCallConfiguration(void *g, void *b, void *s, void *st) { return 0; }
int __hipPushCallConfiguration(void) { return 0; }
"#;

const ARCHS: &[&str] = &[
    "-nogpuinc",
    "-nogpulib",
    "--offload-arch=gfx906",
    "--offload-arch=gfx90a:xnack+",
];

fn shim(ours: &Path, llvm: &Path, log: &Path) -> String {
    format!(
        r#"#!/bin/sh
# Logs the call, runs our bundler, then LLVM's on the same arguments, and
# records any difference in status or output bytes.
log='{log}'
echo "CALL $*" >> "$log"
outs=""
for a in "$@"; do
  case "$a" in -output=*) outs="$outs ${{a#-output=}}";; esac
done
'{ours}' "$@"; rc=$?
for o in $outs; do [ -f "$o" ] && cp "$o" "$o.ours-copy"; done
'{llvm}' "$@"; rc2=$?
[ "$rc" = "$rc2" ] || echo "MISMATCH status ours=$rc llvm=$rc2: $*" >> "$log"
for o in $outs; do
  if [ -f "$o.ours-copy" ]; then
    cmp -s "$o" "$o.ours-copy" || echo "MISMATCH output $o: $*" >> "$log"
    mv "$o.ours-copy" "$o"
  elif [ -f "$o" ]; then
    echo "MISMATCH output $o written only by LLVM: $*" >> "$log"
  fi
done
exit $rc
"#,
        log = log.display(),
        ours = ours.display(),
        llvm = llvm.display()
    )
}

fn clang(dir: &Path, b: Option<&Path>, args: &[&str]) -> Result<(), String> {
    let clang = llvm22("clang").ok_or("clang-22 not found")?;
    let mut cmd = Command::new(clang);
    cmd.current_dir(dir);
    if let Some(b) = b {
        cmd.arg("-B").arg(b);
    }
    cmd.args(ARCHS).args(args);
    let out = cmd.output().map_err(|e| format!("running clang: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "clang {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> Result<(), String> {
    let x = fs::read(a).map_err(|e| format!("{}: {e}", a.display()))?;
    let y = fs::read(b).map_err(|e| format!("{}: {e}", b.display()))?;
    if x != y {
        return Err(format!("{} and {} differ", a.display(), b.display()));
    }
    Ok(())
}

pub fn run() -> Result<(), String> {
    let Some(llvm) = reference_tool("clang-offload-bundler") else {
        eprintln!("e2e hip: LLVM's clang-offload-bundler is not installed; skipped");
        return Ok(());
    };
    if llvm22("clang").is_none() {
        eprintln!("e2e hip: clang-22 is not installed; skipped");
        return Ok(());
    }
    let ours = our_bin_dir()?.join("clang-offload-bundler");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path();
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    let log = dir.join("bundler.log");
    let shim_path = bin.join("clang-offload-bundler");
    fs::write(&shim_path, shim(&ours, &llvm, &log)).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&shim_path, fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
    }
    // clang reaches the linker and device tools through its own directory;
    // only the bundler is taken from -B.
    fs::write(dir.join("k.hip"), SOURCE).map_err(|e| e.to_string())?;
    let b = Some(bin.as_path());
    let hip = ["-x", "hip", "k.hip"];

    // Bundling: text (-E, -S) and binary (-c -emit-llvm).
    clang(dir, b, &[&hip[..], &["-E", "-o", "k.hipi"]].concat())?;
    clang(dir, b, &[&hip[..], &["-S", "-o", "k.s"]].concat())?;
    clang(
        dir,
        b,
        &[&hip[..], &["-c", "-emit-llvm", "-o", "k.bc"]].concat(),
    )?;
    // Unbundling: clang compiles the bundled .hipi (unbundle -type=hipi,
    // then a .hipfb binary bundle with a /dev/null host for the object).
    clang(dir, b, &["-c", "k.hipi", "-o", "k-ours.o"])?;
    // The same with LLVM's bundler only, for the deterministic products.
    clang(
        dir,
        None,
        &[&hip[..], &["-E", "-o", "k-llvm.hipi"]].concat(),
    )?;
    clang(dir, None, &["-c", "k-llvm.hipi", "-o", "k-llvm.o"])?;
    same_file(&dir.join("k.hipi"), &dir.join("k-llvm.hipi"))?;
    same_file(&dir.join("k-ours.o"), &dir.join("k-llvm.o"))?;

    // Objects: the same builds in two directories (clang's output depends
    // on the output name), one through our bundler, one with LLVM's only.
    let products = objects_and_link(dir, &bin)?;

    let text = fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let calls: Vec<&str> = text.lines().filter(|l| l.starts_with("CALL ")).collect();
    let mismatches: Vec<&str> = text.lines().filter(|l| l.starts_with("MISMATCH")).collect();
    for want in [
        "-type=hipi",
        "-type=s",
        "-type=bc",
        "-unbundle",
        "-type=o",
        "--compress",
    ] {
        if !calls.iter().any(|c| c.contains(want)) {
            return Err(format!("no bundler call with {want}; log:\n{text}"));
        }
    }
    if !mismatches.is_empty() {
        return Err(format!(
            "our bundler differs from LLVM's:\n{}",
            mismatches.join("\n")
        ));
    }
    // The fat-object bundling (-fgpu-rdc) and its unbundling by --hip-link
    // went through our tool.
    let rdc_bundle = calls
        .iter()
        .any(|c| c.contains("-type=o") && c.contains("-output=krdc.o"));
    let rdc_unbundle = calls
        .iter()
        .any(|c| c.contains("-type=o") && c.contains("-input=krdc.o") && c.contains("-unbundle"));
    if !rdc_bundle || !rdc_unbundle {
        return Err(format!(
            "-fgpu-rdc bundling/unbundling did not reach our bundler; log:\n{text}"
        ));
    }
    eprintln!(
        "e2e hip: {} bundler calls through -B, all identical to LLVM's; k.hipi and the object from it identical; {} identical to LLVM-only builds",
        calls.len(),
        products.join(", ")
    );
    Ok(())
}

/// HIP `-c` (two offload archs), `-fgpu-rdc -c`, both with
/// `--offload-compress`, and `--hip-link -fgpu-rdc` of the fat objects into
/// an executable; built once in `ours/w` with `-B ../bin` holding the
/// comparing shim, and once in `llvm/w` with `-B ../bin` holding a link to
/// LLVM's bundler (clang hashes its command line, `-B` included, into the
/// HIP compilation-unit ID, so both sides must spell it alike), then
/// compared file by file. Returns the names of the compared products.
fn objects_and_link(dir: &Path, bin: &Path) -> Result<Vec<String>, String> {
    let builds: &[(&str, &[&str])] = &[
        ("k.o", &["-x", "hip", "../../k.hip", "-c"]),
        (
            "kc.o",
            &["-x", "hip", "../../k.hip", "-c", "--offload-compress"],
        ),
        ("krdc.o", &["-x", "hip", "../../k.hip", "-c", "-fgpu-rdc"]),
        (
            "krdcc.o",
            &[
                "-x",
                "hip",
                "../../k.hip",
                "-c",
                "-fgpu-rdc",
                "--offload-compress",
            ],
        ),
    ];
    let clang_path = llvm22("clang").ok_or("clang-22 not found")?;
    let llvm_bundler = reference_tool("clang-offload-bundler").ok_or("no LLVM bundler")?;
    let mut products = Vec::new();
    for side in ["ours", "llvm"] {
        let root = dir.join(side);
        let d = root.join("w");
        let sb = root.join("bin");
        fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        fs::create_dir_all(&sb).map_err(|e| e.to_string())?;
        let target = if side == "ours" {
            bin.join("clang-offload-bundler")
        } else {
            llvm_bundler.clone()
        };
        std::os::unix::fs::symlink(&target, sb.join("clang-offload-bundler"))
            .map_err(|e| e.to_string())?;
        // LLVM's bundler runs the llvm-objcopy beside the path it was called
        // by, else the first on PATH (which may be another LLVM's, writing
        // different bytes); give it 22's, as in a normal clang-22 install.
        if let Some(objcopy) = llvm22("llvm-objcopy") {
            std::os::unix::fs::symlink(&objcopy, sb.join("llvm-objcopy"))
                .map_err(|e| e.to_string())?;
        }
        let b = Some(Path::new("../bin"));
        for (out, args) in builds {
            clang(&d, b, &[*args, &["-o", out]].concat())?;
        }
        fs::write(d.join("stubs.c"), RUNTIME_STUBS).map_err(|e| e.to_string())?;
        let st = Command::new(&clang_path)
            .current_dir(&d)
            .args(["-c", "stubs.c", "-o", "stubs.o"])
            .status()
            .map_err(|e| e.to_string())?;
        if !st.success() {
            return Err("compiling the runtime stubs failed".into());
        }
        // --hip-link unbundles the fat objects (-type=o -unbundle), links
        // the device code with lld and the host with lld.
        for (app, obj) in [("app", "krdc.o"), ("appc", "krdcc.o")] {
            clang(
                &d,
                b,
                &[
                    "--hip-link",
                    "-fgpu-rdc",
                    "-fuse-ld=lld",
                    "-no-hip-rt",
                    obj,
                    "stubs.o",
                    "-o",
                    app,
                ],
            )?;
        }
    }
    for name in ["k.o", "kc.o", "krdc.o", "krdcc.o", "app", "appc"] {
        same_file(
            &dir.join("ours/w").join(name),
            &dir.join("llvm/w").join(name),
        )?;
        products.push(name.to_string());
    }
    // The compressed builds really hold CCOBs: the fat binary of kc.o and
    // nothing compressed in the -fgpu-rdc object (22 never compresses one).
    let kc = fs::read(dir.join("ours/w/kc.o")).map_err(|e| e.to_string())?;
    if !kc.windows(4).any(|w| w == b"CCOB") {
        return Err("kc.o holds no compressed bundle".into());
    }
    Ok(products)
}
