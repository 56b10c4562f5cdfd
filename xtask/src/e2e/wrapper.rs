//! End-to-end runs of programs whose only image registration code comes from
//! our wrappers, on the LLVM 22 OpenMP host plugin (no GPU needed).
//!
//! * OpenMP, LLVM 22: device and host halves compiled separately by clang-22,
//!   the device half linked into a shared object, wrapped by our
//!   `llvm-offload-wrapper` (raw and packaged), linked with libomptarget 22.
//!   A declare-target global tells device execution from host fallback.
//! * CUDA and HIP: no GPU, so the wrapped module is linked with a stub
//!   runtime that checks every registration call it receives.
//! * LLVM 14: `clang-14 -B<dir>` runs our `clang-offload-wrapper` as its own
//!   step; the `--offload-arch` variant (through the driver, and by hand with
//!   two images) is linked with a library that checks the image infos.

use crate::harness::our_bin_dir;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIBDIR: &str = "/usr/lib/llvm-22/lib";

/// The OpenMP probe: a declare-target global has a separate device copy.
const PROBE: &str = r#"#include <stdio.h>
#pragma omp declare target
int g = 0;
#pragma omp end declare target
int main(void) {
  int seen = -1;
  g = 1; /* host copy only */
#pragma omp target map(from: seen)
  { seen = g; }
  printf("target saw g=%d -> %s\n", seen, seen == 0 ? "DEVICE" : "HOST-FALLBACK");
  return seen == 0 ? 0 : 1;
}
"#;

/// Records `__tgt_register_image_info` calls and checks them against
/// `WRAPINFO_EXPECT` (comma-separated target IDs, in image order).
const IMAGE_INFO_STUB: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
struct image_info { int version, image_number, number_images; const char *arch; const char *opts; };
static int seen, expected = -1;
static char *archs[16];
static void load(void) {
  if (expected >= 0) return;
  const char *e = getenv("WRAPINFO_EXPECT");
  char *s = strdup(e ? e : "");
  expected = 0;
  for (char *t = strtok(s, ","); t && expected < 16; t = strtok(NULL, ",")) archs[expected++] = t;
}
void __tgt_register_image_info(struct image_info *i) {
  load();
  printf("image_info v%d %d/%d arch=%s opts=%s\n", i->version, i->image_number,
         i->number_images, i->arch, i->opts ? i->opts : "(null)");
  if (i->version != 1 || i->image_number != seen || i->number_images != expected ||
      seen >= expected || strcmp(i->arch, archs[seen]) != 0 || i->opts != NULL) {
    fprintf(stderr, "image_info mismatch at call %d\n", seen);
    fflush(stdout);
    _exit(3);
  }
  seen++;
}
__attribute__((destructor)) static void check_all(void) {
  load();
  if (seen != expected) {
    fprintf(stderr, "image_info: %d calls, expected %d\n", seen, expected);
    fflush(stdout);
    _exit(4);
  }
}
"#;

/// A fake CUDA/HIP runtime plus offload entries of several kinds; prints the
/// registration calls the wrapper's constructor makes. `P` is the runtime
/// prefix (`cuda`/`hip`), `KIND` the entry kind it must register.
const FATBIN_STUB: &str = r#"#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define RT(n) CAT(CAT(__, P), n)
struct entry { uint64_t reserved; uint16_t version, kind; uint32_t flags;
               void *addr; const char *name; uint64_t size, data; void *aux; };
struct fatbin_wrapper { int32_t magic, version; const char *image; void *reserved; };
int kernel_a, var_b, managed_c, managed_c_ptr, surf_d, tex_e, omp_f;
#define E(sym, k, fl, sz, dt, ax) \
  __attribute__((section("llvm_offload_entries"), used, aligned(8))) \
  static struct entry e_##sym = {0, 1, k, fl, &sym, #sym, sz, dt, ax};
E(kernel_a, KIND, 0, 0, 0, 0)
E(omp_f, 1, 0, 0, 0, 0)
E(var_b, KIND, 8 | 16, 4, 0, 0)
E(managed_c, KIND, 1, 4, 16, &managed_c_ptr)
E(surf_d, KIND, 2 | 8, 4, 2, 0)
E(tex_e, KIND, 3 | 32, 4, 3, 0)
static void *const HANDLE = (void *)0x1234;
static const char *name_of(void *p) {
  return p == &kernel_a ? "kernel_a" : p == &var_b ? "var_b" : p == &managed_c ? "managed_c"
       : p == &surf_d ? "surf_d" : p == &tex_e ? "tex_e" : p == &omp_f ? "omp_f"
       : p == &managed_c_ptr ? "managed_c_ptr" : "?";
}
static void check(void *h, const char *n1, const char *n2) {
  if (h != HANDLE || strcmp(n1, n2) != 0) { printf("BAD ARGUMENTS\n"); fflush(stdout); exit(5); }
}
void *RT(RegisterFatBinary)(struct fatbin_wrapper *w) {
  printf("RegisterFatBinary magic=%#x version=%d image=%.12s reserved=%p\n",
         (unsigned)w->magic, w->version, w->image, w->reserved);
  return HANDLE;
}
void __cudaRegisterFatBinaryEnd(void *h) { printf("RegisterFatBinaryEnd %d\n", h == HANDLE); }
void RT(UnregisterFatBinary)(void *h) { printf("UnregisterFatBinary %d\n", h == HANDLE); }
int RT(RegisterFunction)(void *h, void *addr, char *n1, char *n2, int limit, void *a, void *b,
                         void *c, void *d, int *e) {
  check(h, n1, n2);
  printf("RegisterFunction %s %s %d %d\n", name_of(addr), n1, limit, !a && !b && !c && !d && !e);
  return 0;
}
void RT(RegisterVar)(void *h, void *addr, char *n1, char *n2, int ext, int64_t size, int cnst,
                     int global) {
  check(h, n1, n2);
  printf("RegisterVar %s extern=%d size=%lld constant=%d %d\n", name_of(addr), ext,
         (long long)size, cnst, global);
}
void RT(RegisterManagedVar)(void *h, void *aux, void *addr, char *n, int64_t size, int align) {
  check(h, n, n);
  printf("RegisterManagedVar %s %s size=%lld align=%d\n", name_of(aux), name_of(addr),
         (long long)size, align);
}
void RT(RegisterSurface)(void *h, void *addr, char *n1, char *n2, int dim, int ext) {
  check(h, n1, n2);
  printf("RegisterSurface %s dim=%d extern=%d\n", name_of(addr), dim, ext);
}
void RT(RegisterTexture)(void *h, void *addr, char *n1, char *n2, int dim, int norm, int ext) {
  check(h, n1, n2);
  printf("RegisterTexture %s dim=%d normalized=%d extern=%d\n", name_of(addr), dim, norm, ext);
}
int main(void) { printf("main\n"); return 0; }
"#;

const CUDA_LOG: &str =
    "RegisterFatBinary magic=0x466243b1 version=1 image=FATBIN-IMAGE reserved=(nil)
RegisterFunction kernel_a kernel_a -1 1
RegisterVar var_b extern=1 size=4 constant=1 0
RegisterManagedVar managed_c_ptr managed_c size=4 align=16
RegisterFatBinaryEnd 1
main
UnregisterFatBinary 1
";

const HIP_LOG: &str =
    "RegisterFatBinary magic=0x48495046 version=1 image=FATBIN-IMAGE reserved=(nil)
RegisterFunction kernel_a kernel_a -1 1
RegisterVar var_b extern=1 size=4 constant=1 0
RegisterManagedVar managed_c_ptr managed_c size=4 align=16
RegisterSurface surf_d dim=2 extern=1
RegisterTexture tex_e dim=3 normalized=1 extern=0
main
UnregisterFatBinary 1
";

struct Env {
    dir: tempfile::TempDir,
    bin: PathBuf,
    clang22: PathBuf,
    omptarget: PathBuf,
}

fn sh(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a built program with the LLVM 22 runtime; returns (status, stdout).
fn run_app(app: &Path, offload: &str, extra_env: &[(&str, &str)]) -> Result<(i32, String), String> {
    let mut cmd = Command::new(app);
    cmd.env("LD_LIBRARY_PATH", LIBDIR)
        .env("OMP_TARGET_OFFLOAD", offload);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{}: {e}", app.display()))?;
    Ok((
        out.status.code().unwrap_or(128),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

fn expect_device(app: &Path, extra_env: &[(&str, &str)]) -> Result<String, String> {
    let (rc, out) = run_app(app, "MANDATORY", extra_env)?;
    if rc != 0 || !out.contains("-> DEVICE") {
        return Err(format!("{}: rc {rc}, output {out:?}", app.display()));
    }
    Ok(out)
}

fn setup() -> Result<Option<Env>, String> {
    let Some(clang22) = crate::harness::llvm22("clang") else {
        eprintln!("e2e wrapper: clang-22 not installed; skipped");
        return Ok(None);
    };
    let omptarget = Path::new(LIBDIR).join("libomptarget.so.22.1");
    if !omptarget.exists() {
        eprintln!("e2e wrapper: libomptarget 22 not installed; skipped");
        return Ok(None);
    }
    let dir = tempfile::Builder::new()
        .prefix("e2e-wrapper-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    // clang-14's driver links -lomptarget, which the runtime package only
    // ships with its version suffix.
    let libs = dir.path().join("libs");
    fs::create_dir_all(&libs).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(&omptarget, libs.join("libomptarget.so"))
        .map_err(|e| e.to_string())?;
    fs::write(dir.path().join("g.c"), PROBE).map_err(|e| e.to_string())?;
    Ok(Some(Env {
        dir,
        bin: our_bin_dir()?,
        clang22,
        omptarget,
    }))
}

impl Env {
    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn clang22(&self) -> Command {
        let mut c = Command::new(&self.clang22);
        c.current_dir(self.dir.path());
        c
    }
}

/// The LLVM 22 pipeline with our llvm-offload-wrapper as the only
/// registration code, for a raw and a packaged device image.
fn openmp_22(env: &Env) -> Result<(), String> {
    let target = "-fopenmp-targets=x86_64-pc-linux-gnu";
    sh(env.clang22().args([
        "-fopenmp",
        target,
        "--offload-device-only",
        "-c",
        "g.c",
        "-o",
        "g.dev.o",
    ]))?;
    sh(env.clang22().args([
        "-fopenmp",
        target,
        "--offload-host-only",
        "-c",
        "g.c",
        "-o",
        "g.host.o",
    ]))?;
    sh(env
        .clang22()
        .args([
            "-shared",
            "-Wl,-Bsymbolic",
            "g.dev.o",
            "-o",
            "g.dev.so",
            "-L",
            LIBDIR,
            "-lomp",
        ])
        .arg(&env.omptarget))?;
    let mut inputs = vec![("raw", env.p("g.dev.so"))];
    match crate::harness::llvm22("llvm-offload-binary") {
        Some(packager) => {
            sh(Command::new(packager).current_dir(env.dir.path()).args([
                "-o",
                "g.dev.ob",
                "--image=file=g.dev.so,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp",
            ]))?;
            inputs.push(("packaged", env.p("g.dev.ob")));
        }
        None => eprintln!("e2e wrapper: llvm-offload-binary-22 missing; packaged case skipped"),
    }
    for (what, input) in inputs {
        let bc = env.p(&format!("wrap.{what}.bc"));
        let obj = env.p(&format!("wrap.{what}.o"));
        let app = env.p(&format!("app.{what}"));
        sh(Command::new(env.bin.join("llvm-offload-wrapper"))
            .arg("--kind=openmp")
            .arg(&input)
            .arg("-o")
            .arg(&bc))?;
        sh(env.clang22().arg("-c").arg(&bc).arg("-o").arg(&obj))?;
        sh(env
            .clang22()
            .args(["-fopenmp", "-fuse-ld=lld", "g.host.o"])
            .arg(&obj)
            .arg(&env.omptarget)
            .arg("-o")
            .arg(&app))?;
        expect_device(&app, &[])?;
        // Negative control: with offloading disabled the host copy is seen.
        let (rc, out) = run_app(&app, "DISABLED", &[])?;
        if rc != 1 || !out.contains("HOST-FALLBACK") {
            return Err(format!("{what}: offload disabled gave rc {rc} {out:?}"));
        }
        eprintln!("e2e wrapper: openmp {what}: device run ok");
    }
    Ok(())
}

/// CUDA and HIP registration, checked by a stub runtime.
fn fatbin_22(env: &Env) -> Result<(), String> {
    fs::write(env.p("fatbin.bin"), b"FATBIN-IMAGE and the rest").map_err(|e| e.to_string())?;
    fs::write(env.p("stub.c"), FATBIN_STUB).map_err(|e| e.to_string())?;
    for (kind, prefix, entry_kind, log) in [
        ("cuda", "cuda", "2", CUDA_LOG),
        ("hip", "hip", "4", HIP_LOG),
    ] {
        let bc = env.p(&format!("{kind}.bc"));
        sh(Command::new(env.bin.join("llvm-offload-wrapper"))
            .arg(format!("--kind={kind}"))
            .arg("--triple=x86_64-pc-linux-gnu")
            .arg(env.p("fatbin.bin"))
            .arg("-o")
            .arg(&bc))?;
        let app = env.p(&format!("{kind}.app"));
        sh(env
            .clang22()
            .arg(format!("-DP={prefix}"))
            .arg(format!("-DKIND={entry_kind}"))
            .arg("stub.c")
            .arg(&bc)
            .arg("-o")
            .arg(&app))?;
        let (rc, out) = run_app(&app, "DISABLED", &[])?;
        if rc != 0 || out != log {
            return Err(format!(
                "{kind}: rc {rc}, registration log:\n{out}\nexpected:\n{log}"
            ));
        }
        eprintln!("e2e wrapper: {kind} registration ok");
    }
    Ok(())
}

/// clang-14's driver runs our clang-offload-wrapper (plain, and with
/// `--offload-arch` added by a shim); plus a hand-made two-image pipeline.
fn clang14(env: &Env) -> Result<(), String> {
    let clang14 = Path::new("/usr/lib/llvm-14/bin/clang");
    if !clang14.exists() {
        eprintln!("e2e wrapper: clang-14 not installed; LLVM 14 cases skipped");
        return Ok(());
    }
    let ours = env.bin.join("clang-offload-wrapper");
    let plain = env.p("shim-plain");
    let amd = env.p("shim-amd");
    fs::create_dir_all(&plain).map_err(|e| e.to_string())?;
    fs::create_dir_all(&amd).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(&ours, plain.join("clang-offload-wrapper"))
        .map_err(|e| e.to_string())?;
    let script = amd.join("clang-offload-wrapper");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}' --offload-arch=x86_64 \"$@\"\n",
            ours.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
    }
    fs::write(env.p("info.c"), IMAGE_INFO_STUB).map_err(|e| e.to_string())?;
    let libs = env.p("libs");
    sh(env
        .clang22()
        .args(["-shared", "-fPIC", "info.c", "-o"])
        .arg(libs.join("libwrapinfo.so")))?;

    let driver = |shim: &Path, extra: &[&str], app: &str| -> Result<PathBuf, String> {
        let mut c = Command::new(clang14);
        c.current_dir(env.dir.path())
            .arg(format!("-B{}", shim.display()))
            .args([
                "-fopenmp=libomp",
                "-fopenmp-targets=x86_64-pc-linux-gnu",
                "g.c",
                "-o",
                app,
            ])
            .arg(format!("-L{}", libs.display()))
            .arg(format!("-L{LIBDIR}"))
            .args(extra);
        // The driver silently falls back to its own tool: make sure it
        // found ours.
        let mut dry = Command::new(clang14);
        dry.current_dir(env.dir.path())
            .arg(format!("-B{}", shim.display()))
            .args([
                "-fopenmp=libomp",
                "-fopenmp-targets=x86_64-pc-linux-gnu",
                "g.c",
                "-###",
            ]);
        let out = dry.output().map_err(|e| e.to_string())?;
        let wanted = format!("\"{}\"", shim.join("clang-offload-wrapper").display());
        if !String::from_utf8_lossy(&out.stderr).contains(&wanted) {
            return Err(format!("clang-14 would not run {wanted}"));
        }
        sh(&mut c)?;
        Ok(env.p(app))
    };

    let app = driver(&plain, &[], "app14")?;
    expect_device(&app, &[])?;
    eprintln!("e2e wrapper: clang-14 driver with our clang-offload-wrapper: device run ok");

    let rpath = format!("-Wl,-rpath,{}", libs.display());
    let app = driver(&amd, &["-lwrapinfo", &rpath], "app14amd")?;
    let out = expect_device(&app, &[("WRAPINFO_EXPECT", "x86_64")])?;
    if !out.contains("image_info v1 0/1 arch=x86_64 opts=(null)") {
        return Err(format!("--offload-arch via driver: {out:?}"));
    }
    // The stub really checks: a wrong expectation must fail.
    let (rc, _) = run_app(&app, "MANDATORY", &[("WRAPINFO_EXPECT", "gfx906")])?;
    if rc != 3 {
        return Err(format!(
            "image-info stub accepted a wrong target ID (rc {rc})"
        ));
    }
    eprintln!("e2e wrapper: clang-14 driver with --offload-arch: image info and device run ok");

    // Two images by hand: unbundle clang-14's object, link the device part,
    // wrap it twice with two target IDs.
    let bundler = Path::new("/usr/lib/llvm-14/bin/clang-offload-bundler");
    let c14 = |args: &[&str]| sh(Command::new(clang14).current_dir(env.dir.path()).args(args));
    c14(&[
        "-fopenmp=libomp",
        "-fopenmp-targets=x86_64-pc-linux-gnu",
        "-c",
        "g.c",
        "-o",
        "g14.o",
    ])?;
    sh(Command::new(bundler).current_dir(env.dir.path()).args([
        "-type=o",
        "-targets=host-x86_64-pc-linux-gnu,openmp-x86_64-pc-linux-gnu",
        "-inputs=g14.o",
        "-outputs=g14.host.o,g14.dev.o",
        "-unbundle",
    ]))?;
    c14(&[
        "-shared",
        "g14.dev.o",
        "-o",
        "g14.dev.so",
        &format!("-L{LIBDIR}"),
        "-lomp",
    ])?;
    sh(Command::new(&ours).current_dir(env.dir.path()).args([
        "--target=x86_64-pc-linux-gnu",
        "--offload-arch=x86_64",
        "--offload-arch=gfx90a:xnack+",
        "g14.dev.so",
        "g14.dev.so",
        "-o",
        "w2.bc",
    ]))?;
    c14(&["-c", "w2.bc", "-o", "w2.o"])?;
    c14(&[
        "-fopenmp=libomp",
        "g14.host.o",
        "w2.o",
        "-o",
        "app14two",
        &format!("-L{}", libs.display()),
        &format!("-L{LIBDIR}"),
        "-lomptarget",
        "-lwrapinfo",
        &rpath,
    ])?;
    let out = expect_device(
        &env.p("app14two"),
        &[("WRAPINFO_EXPECT", "x86_64,gfx90a:xnack+")],
    )?;
    for line in [
        "image_info v1 0/2 arch=x86_64 opts=(null)",
        "image_info v1 1/2 arch=gfx90a:xnack+ opts=(null)",
    ] {
        if !out.contains(line) {
            return Err(format!("two images: missing {line:?} in {out:?}"));
        }
    }
    eprintln!("e2e wrapper: two images with --offload-arch: image infos and device run ok");
    Ok(())
}

/// A 1 GiB image: the output must be the image plus a small constant, built
/// in linear time with memory close to one copy of the input.
fn big_image(env: &Env) -> Result<(), String> {
    const SIZE: usize = 1 << 30;
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        eprintln!("e2e wrapper: /usr/bin/time missing; big-image check skipped");
        return Ok(());
    }
    let input = env.p("big.bin");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(fs::File::create(&input).map_err(|e| e.to_string())?);
        let block: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8 + 1).collect();
        for _ in 0..SIZE >> 20 {
            f.write_all(&block).map_err(|e| e.to_string())?;
        }
        f.flush().map_err(|e| e.to_string())?;
    }
    for (tool, args) in [
        ("llvm-offload-wrapper", &["--kind=openmp"][..]),
        (
            "clang-offload-wrapper",
            &["--target=x86_64-pc-linux-gnu"][..],
        ),
    ] {
        let out = env.p("big.bc");
        let start = std::time::Instant::now();
        let o = Command::new(time)
            .args(["-f", "%M"])
            .arg(env.bin.join(tool))
            .args(args)
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .output()
            .map_err(|e| e.to_string())?;
        let secs = start.elapsed().as_secs_f64();
        if !o.status.success() {
            return Err(format!(
                "{tool} on 1 GiB: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        let rss_kib: u64 = String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .ok_or("no RSS from /usr/bin/time")?;
        let len = fs::metadata(&out).map_err(|e| e.to_string())?.len();
        let overhead = len - SIZE as u64;
        let _ = fs::remove_file(&out);
        eprintln!(
            "e2e wrapper: {tool} on 1 GiB: {secs:.1} s, max RSS {} MiB, output = input + {overhead} bytes",
            rss_kib >> 10
        );
        if overhead > 4096 || rss_kib > (SIZE as u64 >> 10) * 13 / 10 {
            return Err(format!(
                "{tool}: 1 GiB image used too much (RSS {rss_kib} KiB, overhead {overhead})"
            ));
        }
    }
    let _ = fs::remove_file(&input);
    Ok(())
}

pub fn run() -> Result<(), String> {
    let Some(env) = setup()? else {
        return Ok(());
    };
    openmp_22(&env)?;
    fatbin_22(&env)?;
    clang14(&env)?;
    big_image(&env)
}
