//! The pool of real inputs the device-archive checks read: HIP and C
//! objects, bundles, CCOBs and archives made with clang-22,
//! clang-offload-bundler-22 and llvm-ar-22, for the `hda` fixtures,
//! `cargo xtask conformance archive` and `cargo xtask e2e hda`
//! ([`build_pool`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{llvm22, reference_tool, run_checked};

const TOOL: &str = "clang-offload-bundler";

/// The minimal HIP declarations a `-nogpuinc` compile needs.
pub(crate) const MINI_H: &str = "#pragma once
typedef __SIZE_TYPE__ size_t;
struct dim3 { unsigned x, y, z; };
extern \"C\" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t s, void *st);
extern \"C\" int hipConfigureCall(dim3 g, dim3 b, size_t s = 0, void *st = 0);
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
";

/// HIP sources: (file, text).
pub(crate) const HIP_SOURCES: &[(&str, &str)] = &[
    (
        "a.hip",
        "#include \"mini.h\"
__device__ int a_counter = 1;
__device__ int a_scale(int x) { return x * a_counter; }
extern \"C\" __global__ void a_kernel(int *p) { *p = a_scale(*p); }
",
    ),
    (
        "b.hip",
        "#include \"mini.h\"
__device__ int b_table[4] = {1, 2, 3, 4};
static __device__ int b_hidden(int i) { return b_table[i & 3]; }
__device__ __attribute__((weak)) int b_weak(int i) { return b_hidden(i); }
template <typename T> __device__ T b_twice(T v) { return v + v; }
extern \"C\" __global__ void b_kernel(int *p) { *p = b_twice(b_weak(*p)); }
",
    ),
    (
        "c.hip",
        "#include \"mini.h\"
extern __device__ int a_counter;
__device__ int c_use(int x) { return x + a_counter; }
extern \"C\" __global__ void c_kernel(int *p, int n) { for (int i = 0; i < n; ++i) p[i] = c_use(p[i]); }
",
    ),
];

const C_SOURCE: &str = "int c_global = 5;
static int c_static(int x) { return x + 1; }
__attribute__((weak)) int c_weak(int x) { return c_static(x); }
int c_func(int x) { return c_weak(x) * c_global; }
";

const ASM_SOURCE: &str = "asm(\".globl asm_defined\\nasm_defined:\\n\");
int asm_user(int x) { return x + 2; }
";

/// The pool's other clang-22 builds, in order: device bitcode (HIP,
/// CUDA, OpenMP for AMD; one with module asm), a device-only HIP fat
/// binary and a plain host object.
const CLANG_BUILDS: &[&str] = &[
    "-x hip --cuda-device-only -fgpu-rdc -nogpuinc -nogpulib --offload-arch=gfx908 -c a.hip -o dev908.bc",
    "-x hip --cuda-device-only -fgpu-rdc -nogpuinc -nogpulib --offload-arch=gfx90a:sramecc+:xnack- -c b.hip -o dev90a.bc",
    "-x hip --cuda-device-only -nogpuinc -nogpulib --offload-arch=gfx906 --offload-arch=gfx90a -c b.hip -o fat.hipfb",
    "-target nvptx64-nvidia-cuda -march=sm_70 -Xclang -target-feature -Xclang +ptx75 -emit-llvm -c c.c -o sm70.bc",
    "-target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -emit-llvm -c c.c -o omp906.bc",
    "-target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -emit-llvm -c asm.c -o asm.bc",
    "-c c.c -o plain.o",
];

/// Runs `program` (LLVM 22's where installed) with `args` in `dir`; fails
/// with its stderr.
pub(crate) fn run_in(
    dir: &Path,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(), String> {
    let path = llvm22(program).unwrap_or_else(|| PathBuf::from(program));
    run_checked(
        Command::new(&path)
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied()),
    )
    .map(drop)
}

fn bundler(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let tool = reference_tool(TOOL).ok_or("LLVM's clang-offload-bundler is not installed")?;
    run_checked(
        Command::new(&tool)
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied()),
    )
    .map(drop)
}

pub(crate) fn write(p: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    fs::write(p, bytes).map_err(|e| format!("{}: {e}", p.display()))
}

pub(crate) fn read(p: &Path) -> Result<Vec<u8>, String> {
    fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// A HIP `-fgpu-rdc` object for `archs`, made by clang-22.
pub(crate) fn hip_rdc_object(
    dir: &Path,
    source: &str,
    out: &str,
    archs: &[&str],
) -> Result<(), String> {
    let mut args = vec![
        "-x",
        "hip",
        "-nogpuinc",
        "-nogpulib",
        "-fgpu-rdc",
        "-c",
        source,
        "-o",
        out,
    ];
    let arch_args: Vec<String> = archs
        .iter()
        .map(|a| format!("--offload-arch={a}"))
        .collect();
    args.extend(arch_args.iter().map(String::as_str));
    run_in(dir, "clang", &args, &[])
}

/// Builds the input pool in `dir`: objects, bundles (plain and
/// compressed), non-bundle members, and the archives the cases read.
///
/// | file | what |
/// |---|---|
/// | `a.o`, `b.o`, `c.o` | clang-22 `-fgpu-rdc -c` fat objects (gfx906 + gfx90a:xnack+; gfx906:xnack- + gfx1030; gfx908:sramecc+:xnack- + gfx90a) |
/// | `dev908.bc` | HIP device bitcode |
/// | `fat.hipfb` | non-rdc device-only compile: a binary bundle of hipv4 AMDGPU ELF code objects |
/// | `bin.bundle` | binary bundle, hip gfx908 bitcode + hipv4 gfx90a:sramecc+:xnack- bitcode |
/// | `omp.bundle` | binary bundle: host, openmp nvptx64 sm_70 bitcode, openmp amdgcn gfx906 bitcode |
/// | `z3.bundle`, `z2.bundle` | `bin.bundle`'s inputs bundled with `-compress` (CCOB v3, v2) |
/// | `zo.ccob` | `a.o` wrapped in a CCOB (compressed ELF fat object) |
/// | `ll.bundle` | a text bundle (not read in archives) |
/// | `plain.o`, `notes.txt` | a host object without bundle sections; text |
/// | `conf.o` | `plain.o` with sections for gfx906 and gfx906:xnack+ (a conflict) |
/// | `badelf.bundle` | a gfx908 entry that is a truncated ELF file |
/// | `badbc.bundle` | a gfx906 entry that is unreadable bitcode |
/// | `asm.bundle` | amdgcn bitcode with module-level inline assembly |
/// | `lib*.a` | archives of the above, see the code |
pub(crate) fn build_pool(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    write(&dir.join("mini.h"), MINI_H.as_bytes())?;
    for (name, text) in HIP_SOURCES {
        write(&dir.join(name), text.as_bytes())?;
    }
    write(&dir.join("c.c"), C_SOURCE.as_bytes())?;
    write(&dir.join("asm.c"), ASM_SOURCE.as_bytes())?;

    hip_rdc_object(dir, "a.hip", "a.o", &["gfx906", "gfx90a:xnack+"])?;
    hip_rdc_object(dir, "b.hip", "b.o", &["gfx906:xnack-", "gfx1030"])?;
    hip_rdc_object(dir, "c.hip", "c.o", &["gfx908:sramecc+:xnack-", "gfx90a"])?;
    for args in CLANG_BUILDS {
        let args: Vec<&str> = args.split_whitespace().collect();
        run_in(dir, "clang", &args, &[])?;
    }
    write(
        &dir.join("notes.txt"),
        b"A member that is not a bundle at all.\n",
    )?;
    write(&dir.join("host.txt"), b"host part\n")?;
    write(
        &dir.join("dev.ll"),
        b"; device\ndefine void @f() { ret void }\n",
    )?;

    let bin_targets =
        "-targets=hip-amdgcn-amd-amdhsa--gfx908,hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
    bundler(
        dir,
        &[
            "-type=bc",
            bin_targets,
            "-input=dev908.bc",
            "-input=dev90a.bc",
            "-output=bin.bundle",
        ],
        &[],
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            bin_targets,
            "-input=dev908.bc",
            "-input=dev90a.bc",
            "-output=z3.bundle",
            "-compress",
        ],
        &[],
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            bin_targets,
            "-input=dev908.bc",
            "-input=dev90a.bc",
            "-output=z2.bundle",
            "-compress",
        ],
        &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "2")],
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda--sm_70,openmp-amdgcn-amd-amdhsa--gfx906",
            "-input=host.txt", "-input=sm70.bc", "-input=omp906.bc", "-output=omp.bundle",
        ],
        &[],
    )?;
    bundler(
        dir,
        &[
            "-type=ll",
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-input=dev.ll",
            "-input=dev.ll",
            "-output=ll.bundle",
        ],
        &[],
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            "-input=asm.bc",
            "-output=asm.bundle",
        ],
        &[],
    )?;
    write(
        &dir.join("badelf.o"),
        b"\x7fELF\x02\x01\x01\x00garbage after the ident",
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            "-targets=hip-amdgcn-amd-amdhsa--gfx908",
            "-input=badelf.o",
            "-output=badelf.bundle",
        ],
        &[],
    )?;
    write(
        &dir.join("badbc.bc"),
        b"BC\xc0\xde\x35\x14\x00\x00junkjunkjunk",
    )?;
    bundler(
        dir,
        &[
            "-type=bc",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            "-input=badbc.bc",
            "-output=badbc.bundle",
        ],
        &[],
    )?;
    run_in(
        dir,
        "llvm-objcopy",
        &[
            "--add-section=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906=dev908.bc",
            "--add-section=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906:xnack+=dev908.bc",
            "plain.o",
            "conf.o",
        ],
        &[],
    )?;
    // A compressed ELF fat object (22's bundler does not compress `-type=o`
    // output, but reads such members).
    let fat = read(&dir.join("a.o"))?;
    let ccob =
        offload_format::ccob::compress(&fat, &offload_format::ccob::CompressOptions::default())
            .map_err(|e| e.to_string())?;
    write(&dir.join("zo.ccob"), &ccob.bytes)?;
    fs::copy(dir.join("a.o"), dir.join("member_with_a_long_name.o")).map_err(|e| e.to_string())?;

    let ar = |args: &[&str]| run_in(dir, "llvm-ar", args, &[]);
    ar(&[
        "rc",
        "libgnu.a",
        "a.o",
        "b.o",
        "c.o",
        "bin.bundle",
        "omp.bundle",
        "fat.hipfb",
        "plain.o",
        "notes.txt",
        "ll.bundle",
    ])?;
    ar(&["rc", "libz.a", "z3.bundle", "z2.bundle", "zo.ccob", "b.o"])?;
    ar(&["rcT", "libthin.a", "a.o", "bin.bundle", "z3.bundle"])?;
    ar(&["--format=bsd", "rc", "libbsd.a", "a.o", "b.o", "bin.bundle"])?;
    ar(&["rc", "liblong.a", "member_with_a_long_name.o", "a.o"])?;
    ar(&["q", "liblong.a", "a.o", "member_with_a_long_name.o"])?;
    ar(&["rc", "libconf.a", "a.o", "conf.o"])?;
    ar(&["rc", "libbadelf.a", "a.o", "badelf.bundle"])?;
    ar(&["rc", "libasm.a", "a.o", "asm.bundle"])?;
    ar(&["rc", "libbadbc.a", "badbc.bundle", "a.o"])?;
    ar(&["rc", "libplain.a", "plain.o", "notes.txt"])?;
    write(&dir.join("libempty.a"), b"!<arch>\n")?;

    // Damage after the first member: 22 stops silently and succeeds.
    let gnu = read(&dir.join("libgnu.a"))?;
    let at = gnu
        .windows(4)
        .position(|w| w == b"b.o/")
        .ok_or("b.o not found in libgnu.a")?;
    let mut bad = gnu.clone();
    bad[at + 58] = b'x';
    write(&dir.join("libbadhdr.a"), &bad)?;
    Ok(())
}
