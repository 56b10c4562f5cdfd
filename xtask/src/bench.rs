//! `cargo xtask bench`: wall time and peak memory of our tools against
//! LLVM 22's and against the physical floor (`cp`, `cat`, the `zstd`
//! command) on the same inputs, alternating in one run.
//!
//! Each measurement is one child process, started by a tiny C meter so
//! that its figures are its own; peak memory is that child's maximum
//! resident set size from wait4(2) (which also covers processes the child
//! waited for, such as the `llvm-objcopy` LLVM's bundler runs).
//! Results are medians over the repetitions, reported as ratios so that
//! machines can be compared, and checked against the goals of issue 8.

use crate::harness::{our_bin_dir, workspace_root, Rng};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Sizes of the default run: 15 minutes on 2 cores shared with a load of
/// about 6, less on a quiet machine; `--sizes 1M,16M,256M,2G` reaches the
/// issue's 2 GiB in about twice that.
const DEFAULT_SIZES: [u64; 4] = [MIB, 16 * MIB, 256 * MIB, GIB];
/// Repetitions of the default run.
const DEFAULT_REPS: usize = 5;
/// From this input size on, at most `BIG_REPS` repetitions: one run takes
/// seconds and its spread is small next to its length.
const BIG_SIZE: u64 = GIB;
const BIG_REPS: usize = 3;

/// One program run to measure.
#[derive(Clone)]
struct Cmd {
    program: PathBuf,
    args: Vec<OsString>,
    /// File (in the run's directory) that receives standard output, for
    /// floors such as `cat a b`; otherwise standard output is discarded.
    stdout: Option<&'static str>,
}

impl Cmd {
    fn new(program: impl Into<PathBuf>, args: &[&str]) -> Cmd {
        Cmd {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            stdout: None,
        }
    }
}

/// Wall seconds and peak RSS in KiB of one run.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    maxrss_kib: u64,
}

impl Sample {
    fn mib(&self) -> f64 {
        self.maxrss_kib as f64 / 1024.0
    }
}

/// C source of the meter: runs its arguments 2.. as a child and writes
/// `<wall seconds> <peak RSS KiB> <wait status>` to the file named by its
/// first argument.
///
/// Linux counts in a child's peak RSS the peak of the memory image it
/// replaced at exec: for a child forked straight from xtask, that is
/// xtask's own peak (tens of MiB after building the archive inputs), which
/// would hide every small figure. The meter is a fresh process of about
/// 1 MiB, so what its child reports is the child's own.
const METER_C: &str = r#"#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  struct timespec t0, t1;
  struct rusage ru;
  int status;
  pid_t pid;
  FILE *out;
  if (argc < 3)
    return 125;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid = fork();
  if (pid < 0)
    return 125;
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  if (wait4(pid, &status, 0, &ru) != pid)
    return 125;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out = fopen(argv[1], "w");
  if (!out)
    return 125;
  fprintf(out, "%.9f %ld %d\n",
          (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
          ru.ru_maxrss, status);
  return fclose(out) == 0 ? 0 : 125;
}
"#;

/// Compiles the meter with LLVM's clang into `dir`.
fn build_meter(dir: &Path, clang: &Path) -> Result<PathBuf, String> {
    let src = dir.join("meter.c");
    let exe = dir.join("meter");
    fs::write(&src, METER_C).map_err(|e| e.to_string())?;
    let src_arg = src.to_string_lossy().into_owned();
    let exe_arg = exe.to_string_lossy().into_owned();
    run_in(dir, clang, &["-O2", "-w", &src_arg, "-o", &exe_arg])
        .map_err(|e| format!("building the meter: {e}"))?;
    Ok(exe)
}

/// Runs `cmd` in `dir` under the meter.
fn measure(cmd: &Cmd, dir: &Path, meter: &Path) -> Result<Sample, String> {
    let stdout = match cmd.stdout {
        Some(name) => {
            Stdio::from(fs::File::create(dir.join(name)).map_err(|e| format!("{name}: {e}"))?)
        }
        None => Stdio::null(),
    };
    let report = meter.with_extension("out");
    let _ = fs::remove_file(&report);
    let out = Command::new(meter)
        .arg(&report)
        .arg(&cmd.program)
        .args(&cmd.args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{}: {e}", meter.display()))?;
    let text = fs::read_to_string(&report).unwrap_or_default();
    let mut words = text.split_whitespace();
    let (Some(secs), Some(kib), Some(status), true) = (
        words.next().and_then(|w| w.parse::<f64>().ok()),
        words.next().and_then(|w| w.parse::<u64>().ok()),
        words.next().and_then(|w| w.parse::<i32>().ok()),
        out.status.success(),
    ) else {
        return Err(format!(
            "the meter failed on {} ({}): {}",
            cmd.program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    };
    // A wait status: the exit code is in bits 8-15 when bits 0-6 are zero.
    if status != 0 {
        let how = if status & 0x7f == 0 {
            format!("exit status {}", (status >> 8) & 0xff)
        } else {
            format!("signal {}", status & 0x7f)
        };
        return Err(format!(
            "{} {:?} failed ({how}): {}",
            cmd.program.display(),
            cmd.args,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Sample {
        secs,
        maxrss_kib: kib,
    })
}

/// Which input sizes a scenario runs at.
#[derive(Clone, Copy, PartialEq)]
enum Sizes {
    /// Every size of `--sizes`.
    Scaling,
    /// Inputs of a fixed shape; the size column shows `-`.
    Fixed,
    /// One input of this many bytes (the smallest of `--sizes` in `--smoke`).
    Once(u64),
}

/// The goal issue 8 sets for a scenario; the docs table says whether the
/// run met it.
#[derive(Clone, Copy)]
enum Goal {
    /// Startup-bound runs: at most a tenth of LLVM's time, under 8 MiB.
    Tiny,
    /// Large uncompressed copies: at most 1.2x the floor's time (judged
    /// from `COPY_TIME_FROM` up, below that start-up dominates), under
    /// 32 MiB at every size.
    Copy,
    /// Compression: time at most LLVM's, memory at most a quarter of it.
    Compress,
    /// Archive unbundling: at most a fifth of LLVM's time.
    Archive,
    /// `offload thin` (issue 18): at most 1.5× the floor (`cp`), under
    /// 64 MiB.
    Thin,
    /// `offload ls`: at most 0.02x LLVM's time (judged from
    /// `LIST_TIME_FROM` up; below, start-up dominates) and under 16 MiB.
    List,
    /// `offload ls` of a CUDA library (issue 23): at most 0.05×
    /// cuobjdump's time where cuobjdump is installed, else at most 0.1 s;
    /// under 32 MiB.
    CudaList,
    /// `offload extract` of every entry of a CUDA library (issue 23): at
    /// most cuobjdump's time where it is installed; under 64 MiB.
    CudaExtract,
    /// `offload size` (issue 35): at most 0.1× cubloaty's time where
    /// cubloaty is installed; under 128 MiB.
    CudaSize,
    /// `offload thin --in-place` of a CUDA install (issue 24): at most
    /// 1.2× `cp -r` of the tree, under 64 MiB.
    TreeThin,
    /// `--dry-run` and `ls --summary` of that tree (issue 24): at most
    /// 0.05× `cp -r` of it.
    TreeScan,
    /// `offload ls` of a wheel (issue 24): at most the time `unzip -p`
    /// takes to inflate its libraries; under 64 MiB.
    WheelList,
    /// `offload thin` of a linked CUDA library (issue 31): at most 1.2×
    /// `cp` of the file (from 64 MiB), under 64 MiB.
    LibThin,
    /// The issue sets none; the table still shows the ratios.
    None,
}

/// Inputs smaller than this are start-up bound; the copy goal's time part
/// is judged only from here up.
const COPY_TIME_FROM: u64 = 64 * MIB;

/// The listing goal's time part is the issue's case, a library of more
/// than a gigabyte: LLVM's time grows with the file and ours does not, so
/// below that the ratio says more about start-up than about listing.
const LIST_TIME_FROM: u64 = GIB;

impl Goal {
    fn text(self) -> &'static str {
        match self {
            Goal::Tiny => "time ≤ 0.1× LLVM, memory < 8 MiB",
            Goal::Copy => "time ≤ 1.2× floor (from 64 MiB), memory < 32 MiB",
            Goal::Compress => "time ≤ LLVM, memory ≤ 0.25× LLVM",
            Goal::Archive => "time ≤ 0.2× LLVM",
            Goal::Thin => "time ≤ 1.5× floor (from 64 MiB), memory < 64 MiB",
            Goal::List => "time ≤ 0.02× LLVM (from 1 GiB), memory < 16 MiB",
            Goal::CudaList => "time ≤ 0.05× cuobjdump (without it: ≤ 0.1 s), memory < 32 MiB",
            Goal::CudaExtract => "time ≤ cuobjdump (where installed), memory < 64 MiB",
            Goal::CudaSize => "time ≤ 0.1× cubloaty (where installed), memory < 128 MiB",
            Goal::TreeThin => "time ≤ 1.2× `cp -r` (from 64 MiB), memory < 64 MiB",
            Goal::TreeScan => "time ≤ 0.05× `cp -r` (from 64 MiB)",
            Goal::WheelList => "time ≤ `unzip -p` of its libraries, memory < 64 MiB",
            Goal::LibThin => "time ≤ 1.2× `cp` (from 64 MiB), memory < 64 MiB",
            Goal::None => "none set",
        }
    }

    /// `None` if there is no goal, else "met" or what was missed.
    fn verdict(self, r: &Row) -> Option<String> {
        let mut missed = Vec::new();
        let time_vs_llvm = r.ours.secs / r.llvm.secs;
        let mem_vs_llvm = r.ours.maxrss_kib as f64 / r.llvm.maxrss_kib as f64;
        let mut partial = false;
        match self {
            Goal::None => return None,
            Goal::Tiny => {
                if time_vs_llvm > 0.1 {
                    missed.push(format!("time {time_vs_llvm:.2}× LLVM"));
                }
                if r.ours.maxrss_kib >= 8 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::Copy | Goal::Thin => {
                // Copy: 1.2× the floor, 32 MiB; thin: 1.5×, 64 MiB.
                let (times, mib) = if matches!(self, Goal::Copy) {
                    (1.2, 32)
                } else {
                    (1.5, 64)
                };
                match r.floor {
                    Some(f) if r.size >= COPY_TIME_FROM => {
                        let x = r.ours.secs / f.secs;
                        if x > times {
                            missed.push(format!("time {x:.2}× floor"));
                        }
                    }
                    _ => partial = true,
                }
                if r.ours.maxrss_kib >= mib * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::Compress => {
                if time_vs_llvm > 1.0 {
                    missed.push(format!("time {time_vs_llvm:.2}× LLVM"));
                }
                if mem_vs_llvm > 0.25 {
                    missed.push(format!("memory {mem_vs_llvm:.2}× LLVM"));
                }
            }
            Goal::Archive => {
                if time_vs_llvm > 0.2 {
                    missed.push(format!("time {time_vs_llvm:.2}× LLVM"));
                }
            }
            Goal::CudaList | Goal::CudaExtract => {
                let (times, mib) = if matches!(self, Goal::CudaList) {
                    (0.05, 32)
                } else {
                    (1.0, 64)
                };
                if cuobjdump().is_some() {
                    if time_vs_llvm > times {
                        missed.push(format!("time {time_vs_llvm:.3}× cuobjdump"));
                    }
                } else if matches!(self, Goal::CudaList) {
                    if r.ours.secs > 0.1 {
                        missed.push(format!("time {:.3} s", r.ours.secs));
                    }
                } else {
                    partial = true;
                }
                if r.ours.maxrss_kib >= mib * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::LibThin => {
                match r.floor {
                    Some(f) if r.size >= COPY_TIME_FROM => {
                        // Both other columns are `cp` of the same input:
                        // against the faster, so that a copy slowed by the
                        // disk (trimming what the run before deleted) does
                        // not pass a slow `thin`.
                        let x = r.ours.secs / f.secs.min(r.llvm.secs);
                        if x > 1.2 {
                            missed.push(format!("time {x:.3}× cp"));
                        }
                    }
                    _ => partial = true,
                }
                if r.ours.maxrss_kib >= 64 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::CudaSize => {
                if cubloaty().is_some() {
                    if time_vs_llvm > 0.1 {
                        missed.push(format!("time {time_vs_llvm:.3}× cubloaty"));
                    }
                } else {
                    partial = true;
                }
                if r.ours.maxrss_kib >= 128 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::TreeThin | Goal::TreeScan => {
                let times = if matches!(self, Goal::TreeThin) {
                    1.2
                } else {
                    0.05
                };
                match r.floor {
                    Some(f) if r.size >= COPY_TIME_FROM => {
                        // The tree rows' other column is `cp -r` too:
                        // against the faster of the two (see LibThin).
                        let x = r.ours.secs / f.secs.min(r.llvm.secs);
                        if x > times {
                            missed.push(format!("time {x:.3}× cp -r"));
                        }
                    }
                    _ => partial = true,
                }
                if matches!(self, Goal::TreeThin) && r.ours.maxrss_kib >= 64 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::WheelList => {
                if time_vs_llvm > 1.0 {
                    missed.push(format!("time {time_vs_llvm:.2}× unzip -p"));
                }
                if r.ours.maxrss_kib >= 64 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
            Goal::List => {
                if r.size < LIST_TIME_FROM {
                    partial = true;
                } else if time_vs_llvm > 0.02 {
                    missed.push(format!("time {time_vs_llvm:.3}× LLVM"));
                }
                if r.ours.maxrss_kib >= 16 * 1024 {
                    missed.push(format!("memory {:.1} MiB", r.ours.mib()));
                }
            }
        }
        Some(if !missed.is_empty() {
            format!("not met: {}", missed.join(", "))
        } else if partial && matches!(self, Goal::CudaExtract) {
            "met (memory; no cuobjdump to time against)".into()
        } else if partial {
            let from = if matches!(self, Goal::List) {
                LIST_TIME_FROM
            } else {
                COPY_TIME_FROM
            };
            format!("met (memory; time judged from {})", human(from))
        } else {
            "met".into()
        })
    }
}

/// A scenario: inputs made for a size, and the three commands to compare.
struct Scenario {
    name: &'static str,
    /// What is measured, and what the floor is (for the docs page).
    about: &'static str,
    sizes: Sizes,
    goal: Goal,
    /// LLVM's peak memory per input byte, roughly, where it is large
    /// enough to matter: the scenario is skipped at sizes this machine's
    /// free memory cannot hold, rather than have the kernel kill something.
    llvm_mem_per_byte: u64,
    setup: fn(&Path, u64, &Tools) -> Result<Trio, String>,
}

/// Our command, LLVM's command, and the floor (if the scenario has one).
struct Trio {
    ours: Cmd,
    llvm: Cmd,
    floor: Option<Cmd>,
}

struct Tools {
    ours: PathBuf,
    llvm: PathBuf,
    /// Where the generated input of each size is kept for the whole run,
    /// so scenarios link it instead of generating it again.
    data: PathBuf,
    /// The meter (see `METER_C`).
    meter: PathBuf,
}

impl Tools {
    fn ours(&self, tool: &str, args: &[&str]) -> Cmd {
        Cmd::new(self.ours.join(tool), args)
    }
    fn llvm(&self, tool: &str, args: &[&str]) -> Cmd {
        Cmd::new(self.llvm.join(tool), args)
    }
    /// The same command line for our tool and LLVM's.
    fn both(&self, tool: &str, args: &[&str], floor: Option<Cmd>) -> Trio {
        Trio {
            ours: self.ours(tool, args),
            llvm: self.llvm(tool, args),
            floor,
        }
    }
    /// Puts `size` bytes of semi-compressible data at `d/name` (a hard
    /// link to the run's copy of that size, made on first use).
    fn input(&self, d: &Path, name: &str, size: u64) -> Result<(), String> {
        let cached = self.data.join(format!("data-{size}"));
        if !cached.exists() {
            semi_compressible(&cached, size, size)?;
        }
        let at = d.join(name);
        fs::hard_link(&cached, &at)
            .or_else(|_| fs::copy(&cached, &at).map(|_| ()))
            .map_err(|e| format!("{}: {e}", at.display()))
    }
    /// Runs an LLVM program in `d` to make an input.
    fn llvm_run(&self, d: &Path, program: &str, args: &[&str]) -> Result<(), String> {
        run_in(d, &self.llvm.join(program), args)
    }
}

/// Writes `size` bytes of data that `zstd -3` shrinks about 1.8:1, streaming:
/// words from a small random vocabulary, with random runs between them.
pub(crate) fn semi_compressible(path: &Path, size: u64, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let f = fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let words: Vec<Vec<u8>> = (0..512)
        .map(|_| {
            let n = rng.range(2, 12);
            rng.bytes(n)
        })
        .collect();
    let mut left = size;
    let mut buf = Vec::with_capacity((1 << 16) + 16);
    while left > 0 {
        buf.clear();
        while buf.len() < (1 << 16) {
            // One draw picks both the branch and the word, so that making
            // gigabytes stays fast in xtask's unoptimised build.
            let r = rng.next_u64();
            if r & 3 == 0 {
                buf.extend_from_slice(&rng.next_u64().to_le_bytes());
            } else {
                buf.extend_from_slice(&words[(r >> 8) as usize % words.len()]);
            }
        }
        let n = (buf.len() as u64).min(left) as usize;
        w.write_all(&buf[..n]).map_err(|e| e.to_string())?;
        left -= n as u64;
    }
    w.flush().map_err(|e| e.to_string())
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

fn run_in(dir: &Path, program: &Path, args: &[&str]) -> Result<(), String> {
    let st = Command::new(program)
        .current_dir(dir)
        .args(args)
        .status()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{} {args:?} failed", program.display()))
    }
}

/// `cp <input> floor.out`: the floor of a run that copies `input`'s bytes.
fn cp_floor(d: &Path, input: &str) -> Option<Cmd> {
    Some(Cmd::new("cp", &[&p(d, input), &p(d, "floor.out")]))
}

const ARCHIVE_TARGETS: [&str; 4] = ["gfx906", "gfx908", "gfx90a", "gfx1030"];

/// `libdev.a`: `count` binary bundles, each with a host entry and one
/// 4 KiB code object for each of the four archive targets, as a device
/// library of HIP objects looks to the bundler. 1,000 members is the case
/// issue 6 names; more show how time and memory grow with the archive.
fn device_archive(d: &Path, count: usize) -> Result<(), String> {
    let ids: Vec<String> = std::iter::once("host-x86_64-unknown-linux-gnu".to_string())
        .chain(
            ARCHIVE_TARGETS
                .iter()
                .map(|a| format!("hip-amdgcn-amd-amdhsa--{a}")),
        )
        .collect();
    let member = |rng: &mut Rng, _: usize| -> Result<Vec<u8>, String> {
        let codes: Vec<Vec<u8>> = ids
            .iter()
            .enumerate()
            .map(|(i, _)| {
                // A fixed first word keeps random bytes from looking like a
                // file format LLVM would try to parse for symbols.
                let mut code = Vec::new();
                if i > 0 {
                    code.extend_from_slice(b"CODE");
                    code.extend(rng.bytes(4092));
                }
                code
            })
            .collect();
        let entries: Vec<(&[u8], &[u8])> = ids
            .iter()
            .zip(&codes)
            .map(|(id, c)| (id.as_bytes(), c.as_slice()))
            .collect();
        let mut b = Vec::new();
        offload_format::bundle::write(&mut b, &entries, 1).map_err(|e| e.to_string())?;
        Ok(b)
    };
    streamed_archive(&d.join("libdev.a"), count, 6, member)
}

/// `libdev.a`: `count` HIP fat objects as `clang -c -fgpu-rdc` makes them
/// (an x86-64 host object with one `__CLANG_OFFLOAD_BUNDLE__` section of
/// device bitcode per target), the members of a real static device
/// library. One object is compiled; each member is a copy whose symbol
/// names carry the member's number, so that every member differs.
fn hip_device_archive(d: &Path, count: usize) -> Result<(), String> {
    const TAG: &str = "k000000";
    let source = format!(
        "typedef __SIZE_TYPE__ size_t;\n\
         typedef struct {{ unsigned x, y, z; }} dim3;\n\
         extern \"C\" int hipLaunchKernel(const void *, dim3, dim3, void **, size_t, void *);\n\
         extern \"C\" int __hipPushCallConfiguration(dim3, dim3, size_t, void *);\n\
         extern \"C\" int __hipPopCallConfiguration(dim3 *, dim3 *, size_t *, void *);\n\
         extern \"C\" __attribute__((device)) int helper_{TAG}(int x) {{ return x * 3 + 1; }}\n\
         extern \"C\" __attribute__((device)) float scale_{TAG}(float x, int n) {{\n\
           for (int i = 0; i < n; ++i) x = x * 1.5f + (float)helper_{TAG}(i);\n\
           return x;\n\
         }}\n\
         extern \"C\" __attribute__((global)) void kern_{TAG}(float *p, int n) {{\n\
           for (int i = 0; i < n; ++i) p[i] = scale_{TAG}(p[i], i & 15);\n\
         }}\n\
         extern \"C\" int host_{TAG}(int a) {{ return a + 42; }}\n"
    );
    fs::write(d.join("k.hip"), source).map_err(|e| e.to_string())?;
    let offload_arch = format!("--offload-arch={}", ARCHIVE_TARGETS.join(","));
    run_in(
        d,
        Path::new("clang-22"),
        &[
            "-x",
            "hip",
            "-fgpu-rdc",
            "-nogpulib",
            "-nogpuinc",
            "-O2",
            "-c",
            &offload_arch,
            "k.hip",
            "-o",
            "k.o",
        ],
    )?;
    let template = fs::read(d.join("k.o")).map_err(|e| e.to_string())?;
    let _ = fs::remove_file(d.join("k.o"));
    // Names are raw bytes in the ELF string table and in the bitcode
    // string table blob, so a same-length rewrite keeps both valid.
    let tag_at: Vec<usize> = template
        .windows(TAG.len())
        .enumerate()
        .filter(|(_, w)| *w == TAG.as_bytes())
        .map(|(i, _)| i)
        .collect();
    if tag_at.is_empty() {
        return Err("the compiled HIP object does not name its symbols as expected".into());
    }
    let member = |_: &mut Rng, i: usize| -> Result<Vec<u8>, String> {
        let mut m = template.clone();
        let tag = format!("k{i:06}");
        for &at in &tag_at {
            m[at..at + TAG.len()].copy_from_slice(tag.as_bytes());
        }
        Ok(m)
    };
    streamed_archive(&d.join("libdev.a"), count, 0, member)
}

/// Writes the archive of `count` members made by `member` (called twice
/// per member, with the same generator state each time) without holding
/// the members in memory, byte for byte as LLVM's archive writer would.
fn streamed_archive(
    path: &Path,
    count: usize,
    seed: u64,
    mut member: impl FnMut(&mut Rng, usize) -> Result<Vec<u8>, String>,
) -> Result<(), String> {
    use offload_format::archive::{member_symbols, ArchiveHead, ArchiveLayout, WriteOptions};
    let name = |i: usize| format!("k{i}.o");
    let mut layout = ArchiveLayout::new(&WriteOptions::default());
    let mut rng = Rng::new(seed);
    for i in 0..count {
        let m = member(&mut rng, i)?;
        layout
            .push(
                name(i).as_bytes(),
                m.len() as u64,
                &member_symbols(&m).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
    }
    let head = layout.finish();
    let f = fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    head.write_head(&mut w).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(seed);
    for i in 0..count {
        let m = member(&mut rng, i)?;
        let size = m.len() as u64;
        let header = head
            .member_header(name(i).as_bytes(), size)
            .ok_or("member missing from the layout")?;
        w.write_all(&header)
            .and_then(|()| w.write_all(&m))
            .and_then(|()| w.write_all(ArchiveHead::member_padding(size)))
            .map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())
}

/// Unbundling `libdev.a` for the four archive targets; the floor copies
/// the input.
fn archive_unbundle_trio(d: &Path, t: &Tools) -> Trio {
    let outs: Vec<String> = ARCHIVE_TARGETS
        .iter()
        .map(|a| format!("-output=lib-{a}.a"))
        .collect();
    let targets = format!(
        "-targets={}",
        ARCHIVE_TARGETS
            .iter()
            .map(|a| format!("hip-amdgcn-amd-amdhsa--{a}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut args = vec!["-type=a", "-unbundle", "-input=libdev.a", targets.as_str()];
    args.extend(outs.iter().map(String::as_str));
    Trio {
        ours: t.ours("clang-offload-bundler", &args),
        llvm: t.llvm("clang-offload-bundler", &args),
        floor: Some(Cmd::new("cp", &[&p(d, "libdev.a"), &p(d, "floor.out")])),
    }
}

const BUNDLE_TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";

/// A tiny host file `h.bc` and a device file `g.bc` of `size` bytes.
fn host_and_device(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    fs::write(d.join("h.bc"), b"host\n").map_err(|e| e.to_string())?;
    t.input(d, "g.bc", size)
}

/// Bundling `h.bc` and `g.bc` into `out.bc`, with extra options first.
fn bundle_trio(t: &Tools, extra: &[&str], floor: Option<Cmd>) -> Trio {
    let mut args: Vec<&str> = vec!["-type=bc"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        BUNDLE_TARGETS,
        "-input=h.bc",
        "-input=g.bc",
        "-output=out.bc",
    ]);
    t.both("clang-offload-bundler", &args, floor)
}

/// `b.bc`: `h.bc` and `g.bc` bundled by LLVM, with extra options first.
fn llvm_bundle(d: &Path, t: &Tools, extra: &[&str]) -> Result<(), String> {
    let mut args: Vec<&str> = vec!["-type=bc"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[BUNDLE_TARGETS, "-input=h.bc", "-input=g.bc", "-output=b.bc"]);
    t.llvm_run(d, "clang-offload-bundler", &args)
}

/// Unbundling `b.bc` into `h.out` and `g.out`.
fn unbundle_trio(t: &Tools, floor: Option<Cmd>) -> Trio {
    let args = [
        "-type=bc",
        BUNDLE_TARGETS,
        "-unbundle",
        "-input=b.bc",
        "-output=h.out",
        "-output=g.out",
    ];
    t.both("clang-offload-bundler", &args, floor)
}

/// `host.o`: a real x86-64 host object, compiled by clang-22 from a tiny
/// C file.
fn host_object(d: &Path, t: &Tools) -> Result<(), String> {
    fs::write(
        d.join("host.c"),
        "int device_count(void) { return 1; }\nint main(void) { return device_count() - 1; }\n",
    )
    .map_err(|e| e.to_string())?;
    t.llvm_run(d, "clang", &["-O1", "-c", "host.c", "-o", "host.o"])
}

/// `-type=o` targets: the host object and one device image.
const OBJECT_TARGETS: &str = BUNDLE_TARGETS;

/// `fat.o`: `host.o` with `g.o` (`size` bytes) bundled in by LLVM.
fn fat_object(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    host_object(d, t)?;
    t.input(d, "g.o", size)?;
    t.llvm_run(
        d,
        "clang-offload-bundler",
        &[
            "-type=o",
            OBJECT_TARGETS,
            "-input=host.o",
            "-input=g.o",
            "-output=fat.o",
        ],
    )
}

/// `pkg.bin`: `dev.o` (`size` bytes) packaged by LLVM's llvm-offload-binary.
fn packaged(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    t.input(d, "dev.o", size)?;
    t.llvm_run(d, "llvm-offload-binary", &["-o", "pkg.bin", PACKAGE_IMAGE])
}

const PACKAGE_IMAGE: &str =
    "--image=file=dev.o,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp";

/// Extracting the image of `arch=generic` from `input` into `x.o`.
fn extract_trio(t: &Tools, input: &str, floor: Option<Cmd>) -> Trio {
    t.both(
        "llvm-offload-binary",
        &[input, "--image=file=x.o,arch=generic"],
        floor,
    )
}

/// `lib.o`: a host object whose `.hip_fatbin` holds 100 bundles of 8
/// entries (a host entry and 7 device entries), `size` bytes in all, each
/// bundle 4096-aligned as linkers place them: the shape of a large ROCm
/// library, for `offload ls` / `offload extract`.
fn hip_fatbin_object(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    hip_fatbin_object_with(d, size, t, None)
}

/// [`hip_fatbin_object`], and when `entries` is given, that directory with
/// one file for each entry (the bytes `offload extract` writes, in as many
/// files): what `cp -r` copies for the extraction's floor.
fn hip_fatbin_object_with(
    d: &Path,
    size: u64,
    t: &Tools,
    entries_dir: Option<&str>,
) -> Result<(), String> {
    const BUNDLES: u64 = 100;
    let entry = (size / (BUNDLES * DEVICES.len() as u64)).max(64) as usize;
    // Each device entry starts as a code object for its target does (the
    // ELF header, processor and features in e_flags), so that listing
    // names and checks real-looking payloads.
    let data: Vec<Vec<u8>> = DEVICES
        .iter()
        .map(|target| {
            let mut v: Vec<u8> = (0..entry).map(|i| (i % 251) as u8).collect();
            v[..64].copy_from_slice(&amdgpu_elf_header(target));
            v
        })
        .collect();
    let ids: Vec<String> = DEVICES
        .iter()
        .map(|p| format!("hipv4-amdgcn-amd-amdhsa--{p}"))
        .collect();
    let mut entries: Vec<(&[u8], &[u8])> = vec![(b"host-x86_64-unknown-linux-gnu-", b"")];
    entries.extend(ids.iter().zip(&data).map(|(id, d)| (id.as_bytes(), &d[..])));
    let region = d.join("region.bin");
    let mut out = std::io::BufWriter::new(fs::File::create(&region).map_err(|e| e.to_string())?);
    let mut written = 0u64;
    for _ in 0..BUNDLES {
        let pad = written.next_multiple_of(4096) - written;
        out.write_all(&vec![0u8; pad as usize])
            .map_err(|e| e.to_string())?;
        let mut one = Vec::new();
        offload_format::bundle::write(&mut one, &entries, 4096).map_err(|e| e.to_string())?;
        out.write_all(&one).map_err(|e| e.to_string())?;
        written += pad + one.len() as u64;
    }
    out.flush().map_err(|e| e.to_string())?;
    drop(out);
    if let Some(dir) = entries_dir {
        let dir = d.join(dir);
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for b in 0..BUNDLES {
            for (k, (_, bytes)) in entries.iter().enumerate() {
                fs::write(dir.join(format!("{b}.{k}")), bytes).map_err(|e| e.to_string())?;
            }
        }
    }
    host_object_with(d, t, ".hip_fatbin", 4096, "lib.o")
}

/// A host object (clang-22 -c of a one-function file) with `d/region.bin`
/// added as section `section`, aligned to `align`, written to `d/out`; the
/// region and the intermediate files are removed.
fn host_object_with(
    d: &Path,
    t: &Tools,
    section: &str,
    align: u64,
    out: &str,
) -> Result<(), String> {
    fs::write(d.join("host.c"), "int host(void) { return 0; }\n").map_err(|e| e.to_string())?;
    t.llvm_run(d, "clang", &["-c", "host.c", "-o", "host.o"])?;
    // Two steps: given with --add-section, the alignment is not applied
    // (the section would start at an odd offset, which no linked library
    // has; every entry would then sit off a page boundary).
    let add = format!("{section}=region.bin");
    t.llvm_run(
        d,
        "llvm-objcopy",
        &["--add-section", &add, "host.o", "added.o"],
    )?;
    let set = format!("{section}={align}");
    t.llvm_run(
        d,
        "llvm-objcopy",
        &["--set-section-alignment", &set, "added.o", "objcopy.o"],
    )?;
    // A copy, as a library is installed: llvm-objcopy writes through a
    // mapping, which leaves large folios in the page cache, and a later
    // mapping of such a file is charged a whole folio per page touched.
    fs::copy(d.join("objcopy.o"), d.join(out)).map_err(|e| e.to_string())?;
    for f in ["region.bin", "host.c", "host.o", "added.o", "objcopy.o"] {
        fs::remove_file(d.join(f)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// cuobjdump, from `$CUOBJDUMP` or PATH, if installed.
fn cuobjdump() -> Option<PathBuf> {
    crate::harness::external_tool("CUOBJDUMP", "cuobjdump")
}

/// flashinfer's cubloaty (`pip install cubloaty`), from `$CUBLOATY` or
/// PATH, if installed.
fn cubloaty() -> Option<PathBuf> {
    crate::harness::external_tool("CUBLOATY", "cubloaty")
}

/// The reference command of the CUDA rows: cuobjdump with `args`, or,
/// without it, `cp` of the library.
fn cuda_reference(d: &Path, args: &[&str]) -> Cmd {
    match cuobjdump() {
        Some(c) => Cmd::new(c, args),
        None => Cmd::new("cp", &["lib.so", &p(d, "copy.so")]),
    }
}

/// A CUDA library of about `size` bytes: an x86-64 object whose
/// `.nv_fatbin` holds containers of three zstd-compressed entries each (two
/// cubins, ELF headers as nvcc 13 writes them, and one PTX text), entry
/// headers as nvcc 13 writes them; each cubin about 400 KiB before
/// compression, as in `libtorch_cuda.so`.
fn cuda_library(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    cuda_region(d, size, CUBIN)?;
    host_object_with(d, t, ".nv_fatbin", 8, "lib.so")
}

/// The size of each cubin of [`cuda_region`]'s containers, as most rows
/// make them.
const CUBIN: usize = 400 << 10;

/// The cubin size of `cuda-lib-thin-many`: ~23,600 small containers in a
/// 1 GiB library (a real 270 MB one holds 23,530).
const SMALL_CUBIN: usize = 40 << 10;

/// A section of [`cubin_elf`].
struct CubinSection {
    name: Vec<u8>,
    kind: u32,
    flags: u64,
    info: u32,
    link: u32,
    entsize: u64,
    align: u64,
    data: Vec<u8>,
}

impl CubinSection {
    /// Section `name` of type `kind` with `flags`, aligned to `align`,
    /// holding `data` (none for `SHT_NOBITS`).
    fn new(name: impl Into<Vec<u8>>, kind: u32, flags: u64, align: u64, data: Vec<u8>) -> Self {
        CubinSection {
            name: name.into(),
            kind,
            flags,
            info: 0,
            link: 0,
            entsize: 0,
            align,
            data,
        }
    }

    /// With `sh_link` and `sh_info`.
    fn linked(mut self, link: u32, info: u32) -> Self {
        self.link = link;
        self.info = info;
        self
    }

    /// With `sh_entsize`.
    fn entries(mut self, entsize: u64) -> Self {
        self.entsize = entsize;
        self
    }
}

/// A cubin (ELF64, `EM_CUDA`, for `sm_<sm>`) that cuobjdump accepts:
/// the ELF header, `sections` (indices from 2) in order, each aligned,
/// then the section name table (index 1), then the section header table.
fn cubin_elf(sm: u32, sections: &[CubinSection]) -> Vec<u8> {
    let mut names = b"\0.shstrtab\0".to_vec();
    let mut name_at = Vec::with_capacity(sections.len());
    for s in sections {
        name_at.push(names.len() as u32);
        names.extend_from_slice(&s.name);
        names.push(0);
    }
    let mut v = vec![0u8; 64];
    let mut offsets = Vec::with_capacity(sections.len());
    for s in sections {
        v.resize(v.len().next_multiple_of(s.align.max(1) as usize), 0);
        offsets.push(v.len());
        v.extend_from_slice(&s.data);
    }
    let names_at = v.len();
    v.extend_from_slice(&names);
    let shoff = v.len().next_multiple_of(8);
    v.resize(shoff, 0);
    v[..4].copy_from_slice(b"\x7fELF");
    v[4] = 2;
    v[5] = 1;
    v[6] = 1;
    v[7] = 0x41;
    v[8] = 8;
    v[16..18].copy_from_slice(&2u16.to_le_bytes());
    v[18..20].copy_from_slice(&190u16.to_le_bytes());
    v[20..24].copy_from_slice(&1u32.to_le_bytes());
    v[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
    v[48..52].copy_from_slice(&(0x0600_0004 | (sm << 8)).to_le_bytes());
    v[52..54].copy_from_slice(&64u16.to_le_bytes());
    v[54..56].copy_from_slice(&56u16.to_le_bytes());
    v[58..60].copy_from_slice(&64u16.to_le_bytes());
    v[60..62].copy_from_slice(&(sections.len() as u16 + 2).to_le_bytes());
    v[62..64].copy_from_slice(&1u16.to_le_bytes());
    let header = |v: &mut Vec<u8>, name: u32, s: &CubinSection, off: usize, size: usize| {
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&s.kind.to_le_bytes());
        h[8..16].copy_from_slice(&s.flags.to_le_bytes());
        h[24..32].copy_from_slice(&(off as u64).to_le_bytes());
        h[32..40].copy_from_slice(&(size as u64).to_le_bytes());
        h[40..44].copy_from_slice(&s.link.to_le_bytes());
        h[44..48].copy_from_slice(&s.info.to_le_bytes());
        h[48..56].copy_from_slice(&s.align.to_le_bytes());
        h[56..64].copy_from_slice(&s.entsize.to_le_bytes());
        v.extend_from_slice(&h);
    };
    v.extend_from_slice(&[0u8; 64]);
    let shstrtab = CubinSection::new(Vec::new(), 3, 0, 1, Vec::new());
    header(&mut v, 1, &shstrtab, names_at, names.len());
    for (i, s) in sections.iter().enumerate() {
        header(&mut v, name_at[i], s, offsets[i], s.data.len());
    }
    v
}

/// `d/region.bin`: the `.nv_fatbin` of [`cuda_library`], about `size`
/// bytes, of containers of two cubins of `cubin` bytes (at least 16 KiB)
/// and a PTX entry; returns the offset of each container in it.
fn cuda_region(d: &Path, size: u64, cubin_size: usize) -> Result<Vec<u64>, String> {
    let per_container = (2 * cubin_size) as u64 * 10 / 18;
    let containers = (size / per_container).max(1);
    let body = d.join("body.bin");
    semi_compressible(&body, (cubin_size + 4096) as u64, 23)?;
    let body = fs::read(&body).map_err(|e| e.to_string())?;
    // A cubin cuobjdump accepts: the ELF header, one data section, the
    // section name table, the section header table.
    let cubin = |sm: u32, salt: u64| -> Vec<u8> {
        let payload = &body[(salt % 4096) as usize..][..cubin_size];
        let data = CubinSection::new(".nv.global.init", 1, 3, 8, payload.to_vec());
        cubin_elf(sm, &[data])
    };
    let ptx = |sm: u32| -> Vec<u8> {
        let mut v = format!("//\n.version 9.0\n.target sm_{sm}\n.address_size 64\n").into_bytes();
        v.extend(body[..16 << 10].iter().map(|b| b' ' + b % 90));
        v.push(0);
        v
    };
    let region = d.join("region.bin");
    let mut out = std::io::BufWriter::new(fs::File::create(&region).map_err(|e| e.to_string())?);
    let mut offsets = Vec::new();
    let mut at = 0u64;
    for c in 0..containers {
        offsets.push(at);
        let mut entries = fatbin_entry(2, 80, 64, &cubin(80, c));
        entries.extend(fatbin_entry(2, 90, 64, &cubin(90, c + 7)));
        entries.extend(fatbin_entry(1, 90, 80, &ptx(90)));
        let container = fatbin_container(&entries);
        out.write_all(&container).map_err(|e| e.to_string())?;
        at += container.len() as u64;
    }
    out.flush().map_err(|e| e.to_string())?;
    drop(out);
    fs::remove_file(d.join("body.bin")).map_err(|e| e.to_string())?;
    Ok(offsets)
}

/// A fat binary entry of `kind` (1 PTX, 2 cubin) for `sm_<sm>` with a
/// `header`-byte entry header, holding `plain` compressed with zstd.
fn fatbin_entry(kind: u16, sm: u32, header: usize, plain: &[u8]) -> Vec<u8> {
    let z = zstd::bulk::compress(plain, 3).expect("in-memory compression");
    let stored = z.len().next_multiple_of(8);
    let mut h = vec![0u8; header];
    h[0..2].copy_from_slice(&kind.to_le_bytes());
    h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    h[4..8].copy_from_slice(&(header as u32).to_le_bytes());
    h[8..16].copy_from_slice(&(stored as u64).to_le_bytes());
    h[16..20].copy_from_slice(&(z.len() as u32).to_le_bytes());
    if header > 64 {
        h[20..24].copy_from_slice(&64u32.to_le_bytes());
        h[64..68].copy_from_slice(&72u32.to_le_bytes());
    }
    let (minor, major) = if kind == 1 { (0u16, 9u16) } else { (8, 1) };
    h[24..26].copy_from_slice(&minor.to_le_bytes());
    h[26..28].copy_from_slice(&major.to_le_bytes());
    h[28..32].copy_from_slice(&sm.to_le_bytes());
    h[40..48].copy_from_slice(&0x8011u64.to_le_bytes());
    h[56..64].copy_from_slice(&(plain.len() as u64).to_le_bytes());
    h.extend_from_slice(&z);
    h.resize(header + stored, 0);
    h
}

/// A fat binary container (its 16-byte header) around `entries`.
fn fatbin_container(entries: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(16 + entries.len());
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    c.extend_from_slice(entries);
    c
}

/// A cubin laid out as nvcc makes one, with `names.len()` kernels: the
/// name, string and symbol tables, the sections every cubin has
/// (`.debug_frame`, notes, `.nv.info`, `.nv.compat`, `.nv.callgraph`,
/// constant banks, globals and their internal symbols), then per kernel
/// `.nv.info.<name>`, `.rela.text.<name>`, `.text.<name>` (taken from
/// `code` as `texts` says: offset and length), `.nv.shared.<name>` and
/// `.nv.constant0.<name>`; an entry symbol (`STO_CUDA_ENTRY`) and section
/// symbols for each.
fn kernel_cubin(sm: u32, names: &[String], code: &[u8], texts: &[(usize, usize)]) -> Vec<u8> {
    const SHT_CUDA_INFO: u32 = 0x7000_0000;
    const SHF_INFO_LINK: u64 = 0x40;
    const FIRST_KERNEL: usize = 14;
    const PER_KERNEL: usize = 5;
    let kernel_index = |i: usize, part: usize| (FIRST_KERNEL + PER_KERNEL * i + part) as u32;
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    let mut symbol = |name: &str, info: u8, other: u8, shndx: u32, value: u64, size: u64| {
        let mut sym = [0u8; 24];
        sym[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
        sym[4] = info;
        sym[5] = other;
        sym[6..8].copy_from_slice(&(shndx as u16).to_le_bytes());
        sym[8..16].copy_from_slice(&value.to_le_bytes());
        sym[16..24].copy_from_slice(&size.to_le_bytes());
        symtab.extend_from_slice(&sym);
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        (symtab.len() / 24 - 1) as u32
    };
    // STT_SECTION (3), STT_FUNC (2) and STT_OBJECT (1), local and global.
    symbol(".note.nv.tkinfo", 0x03, 0, 5, 0, 0);
    symbol(".note.nv.cuinfo", 0x03, 0, 6, 0, 0);
    let mut function_symbols = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let text = kernel_index(i, 2);
        function_symbols.push(symbol(name, 0x12, 0x10, text, 0, texts[i].1 as u64));
        symbol(&format!(".text.{name}"), 0x03, 0, text, 0, 0);
    }
    symbol(".nv.global", 0x03, 0, 13, 0, 0);
    let prefix = names[0].len() % 7;
    for j in 0..12u64 {
        let ident = format!(
            "_INTERNAL_{prefix}a95c9b20_moe_gemm_tma_ws_sm{sm}_generated_cu_c5419e52_{j}cuda3std3__45__cpo{j}beginE"
        );
        symbol(&format!("_ZN{}{ident}", ident.len()), 0x01, 0, 13, j, 1);
    }
    symbol(".debug_frame", 0x03, 0, 4, 0, 0);
    symbol(".nv.callgraph", 0x03, 0, 9, 0, 0);
    for (i, name) in names.iter().enumerate() {
        symbol(
            &format!(".nv.constant0.{name}"),
            0x03,
            0,
            kernel_index(i, 4),
            0,
            0,
        );
    }
    let bytes = |at: usize, n: usize| code[at % (code.len() - n)..][..n].to_vec();
    let mut sections = vec![
        CubinSection::new(".strtab", 3, 0, 1, strtab),
        CubinSection::new(".symtab", 2, 0, 8, symtab)
            .linked(2, 3)
            .entries(24),
        CubinSection::new(".debug_frame", 1, 0, 1, bytes(texts[0].0, 360)),
        CubinSection::new(".note.nv.tkinfo", 7, 0x0010_0000, 4, bytes(17, 168)),
        CubinSection::new(".note.nv.cuinfo", 7, 0x0010_0040, 4, bytes(33, 32)).linked(5, 8),
        CubinSection::new(".nv.info", SHT_CUDA_INFO, 0, 4, bytes(65, 48)).linked(3, 0),
        CubinSection::new(".nv.compat", SHT_CUDA_INFO + 0x86, 0, 4, bytes(129, 36)),
        CubinSection::new(".nv.callgraph", SHT_CUDA_INFO + 1, 0, 4, bytes(257, 32))
            .linked(3, 0)
            .entries(8),
        CubinSection::new(".rela.debug_frame", 4, SHF_INFO_LINK, 8, bytes(513, 120))
            .linked(3, 4)
            .entries(24),
        CubinSection::new(".nv.constant4", 1, 0x2, 8, bytes(1025, 152)),
        CubinSection::new(".nv.global.init", 1, 0x3, 4, bytes(texts[0].0 + 2049, 4096)),
        CubinSection::new(".nv.global", 8, 0x3, 1, Vec::new()),
    ];
    for (i, name) in names.iter().enumerate() {
        let (at, len) = texts[i];
        let text = kernel_index(i, 2);
        let info = bytes(at + 4096, 160 + len % 2048);
        sections.push(
            CubinSection::new(
                format!(".nv.info.{name}"),
                SHT_CUDA_INFO,
                SHF_INFO_LINK,
                4,
                info,
            )
            .linked(3, text),
        );
        sections.push(
            CubinSection::new(
                format!(".rela.text.{name}"),
                4,
                SHF_INFO_LINK,
                8,
                bytes(at + 8192, 48),
            )
            .linked(3, text)
            .entries(24),
        );
        let body = code[at..at + len].to_vec();
        sections.push(
            CubinSection::new(format!(".text.{name}"), 1, 0x6, 128, body)
                .linked(3, function_symbols[i]),
        );
        let shared = CubinSection::new(
            format!(".nv.shared.{name}"),
            8,
            0x3 | SHF_INFO_LINK,
            16,
            Vec::new(),
        );
        sections.push(shared.linked(0, text));
        let mut bank = vec![0u8; 352 + len % 512];
        bank[..64].copy_from_slice(&code[at..at + 64]);
        sections.push(
            CubinSection::new(
                format!(".nv.constant0.{name}"),
                1,
                0x2 | SHF_INFO_LINK,
                4,
                bank,
            )
            .linked(0, text),
        );
    }
    debug_assert_eq!(sections.len() + 2, FIRST_KERNEL + PER_KERNEL * names.len());
    cubin_elf(sm, &sections)
}

/// `d/region.bin` for `cuda-size`: about `size` bytes of containers each
/// holding an sm_80 and an sm_90 cubin of the same kernels, shaped as
/// real libraries' (onnxruntime-gpu's: 2,172 cubins, 74,690 functions,
/// 2.2 GB decoded from 236 MB). Every eighth container repeats
/// the kernels of the one before (the same kernel compiled into two
/// translation units), so both tools find duplicates.
fn cuda_kernel_region(d: &Path, size: u64) -> Result<(), String> {
    // Instruction-like code: 16-byte words from a small set, with a varying
    // register byte, which zstd compresses about as much as real SASS.
    let mut rng = Rng::new(31);
    let words: Vec<[u8; 16]> = (0..96)
        .map(|_| {
            let mut w = [0u8; 16];
            w[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
            w[12..16].copy_from_slice(&(rng.next_u64() as u32 & 0x0f0f_ff00).to_le_bytes());
            w
        })
        .collect();
    let code: Vec<u8> = (0..(16usize << 20) / 16)
        .flat_map(|_| {
            let r = rng.next_u64();
            let mut w = words[(r % 96) as usize];
            w[2] = (r >> 8) as u8 & 0x07;
            w
        })
        .collect();
    let region = d.join("region.bin");
    let mut out = std::io::BufWriter::new(fs::File::create(&region).map_err(|e| e.to_string())?);
    let mut at = 0u64;
    let mut c = 0usize;
    let mut names: Vec<String> = Vec::new();
    let mut texts: Vec<(usize, usize)> = Vec::new();
    while at < size {
        if c % 8 != 7 || names.is_empty() {
            // As onnxruntime-gpu's cubins: most hold a few kernels (median
            // 7), some hundreds (mean 34); names of 60 to 600 bytes (mean
            // 353), valid Itanium manglings; about 1 MB each decoded.
            let kernels = if rng.chance(1, 5) {
                rng.range(40, 300)
            } else {
                rng.range(2, 12)
            };
            names = (0..kernels)
                .map(|k| {
                    let mut ident = format!("gemm_c{c:05}_k{k:03}");
                    for _ in 0..rng.range(1, 14) {
                        ident.push_str("_tile128x128x32_stages4_warpspecialized");
                    }
                    format!("_Z{}{ident}PfPKfS1_iii", ident.len())
                })
                .collect();
            texts = (0..kernels)
                .map(|_| {
                    let len = rng.range(1, 28) * 2048;
                    (rng.below(code.len() - len - 64) / 16 * 16, len)
                })
                .collect();
        }
        let mut entries = fatbin_entry(2, 80, 64, &kernel_cubin(80, &names, &code, &texts));
        let shifted: Vec<(usize, usize)> = texts
            .iter()
            .map(|&(o, n)| ((o + 4096) % (code.len() - n - 64) / 16 * 16, n))
            .collect();
        entries.extend(fatbin_entry(
            2,
            90,
            64,
            &kernel_cubin(90, &names, &code, &shifted),
        ));
        let container = fatbin_container(&entries);
        out.write_all(&container).map_err(|e| e.to_string())?;
        at += container.len() as u64;
        c += 1;
    }
    out.flush().map_err(|e| e.to_string())
}

/// The `cuda-lib-thin` rows: `offload thin --keep sm_90 -o` of a
/// [`cuda_shared_library`] of `cubin`-sized cubins, against `cp` of it.
fn lib_thin(d: &Path, size: u64, cubin: usize, t: &Tools) -> Result<Trio, String> {
    cuda_shared_library(d, size, cubin, t)?;
    let ours = format!(
        "rm -f thin.so && {} thin --keep sm_90 -o thin.so lib.so",
        t.ours.join("offload").display()
    );
    Ok(Trio {
        ours: Cmd::new("sh", &["-c", &ours]),
        llvm: Cmd::new("cp", &["lib.so", "copy.so"]),
        floor: Some(Cmd::new("cp", &["lib.so", "floor.out"])),
    })
}

/// `d/lib.so`: a linked CUDA shared library of about `size` bytes laid out
/// as nvcc's host code lays it out (tests/fixtures/standin/nvtu.c is the
/// one-unit form): [`cuda_region`]'s containers in `.nv_fatbin` (aligned
/// 8, between `.rodata` and `.eh_frame`), one `__fatBinC_Wrapper_t` per
/// container in `.nvFatBinSegment` (an R_X86_64_RELATIVE relocation
/// each), and a constructor that registers them. Built by clang-22
/// (`.incbin` of the region).
fn cuda_shared_library(d: &Path, size: u64, cubin: usize, t: &Tools) -> Result<(), String> {
    let offsets = cuda_region(d, size, cubin)?;
    let mut c = String::from(
        "typedef struct { int magic; int version; const char *data; void *unused; } W;\n\
         void **__cudaRegisterFatBinary(void *);\n\
         void __cudaRegisterFatBinaryEnd(void **);\n\
         __asm__(\".section .nv_fatbin,\\\"a\\\",@progbits\\n.balign 8\\n\
         fatbin_region:\\n.incbin \\\"region.bin\\\"\\n.previous\\n\");\n\
         extern const char fatbin_region[] __attribute__((visibility(\"hidden\")));\n\
         static const W wrappers[] __attribute__((section(\".nvFatBinSegment\"), aligned(8))) = {\n",
    );
    for o in &offsets {
        let _ = writeln!(c, "  {{0x466243b1, 1, fatbin_region + {o}, 0}},");
    }
    c.push_str(
        "};\n\
         int cuda_answer(void) { return 42; }\n\
         __attribute__((constructor)) static void register_all(void) {\n\
           for (unsigned i = 0; i < sizeof wrappers / sizeof *wrappers; i++)\n\
             __cudaRegisterFatBinaryEnd(__cudaRegisterFatBinary((void *)&wrappers[i]));\n\
         }\n",
    );
    fs::write(d.join("lib.c"), c).map_err(|e| e.to_string())?;
    t.llvm_run(
        d,
        "clang",
        &["-shared", "-fPIC", "-O1", "lib.c", "-o", "built.so"],
    )?;
    // A copy, as a library is installed (see host_object_with).
    fs::copy(d.join("built.so"), d.join("lib.so")).map_err(|e| e.to_string())?;
    for f in ["region.bin", "lib.c", "built.so"] {
        fs::remove_file(d.join(f)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The size of the generated CUDA install of the tree rows: a PyTorch
/// virtualenv's libraries are 3-4 GB.
const CUDA_TREE: u64 = 3 * GIB + GIB / 2;

/// How many libraries the generated CUDA install has.
const TREE_LIBS: usize = 30;

/// `tree/`: a CUDA install of about `size` bytes: [`TREE_LIBS`]
/// libraries made by [`cuda_library`] (copies, each its own file, under
/// `lib/`) and 200 small Python files under `py/`.
fn cuda_tree(d: &Path, size: u64, t: &Tools) -> Result<(), String> {
    cuda_library(d, size / TREE_LIBS as u64, t)?;
    let lib = d.join("tree/lib");
    let py = d.join("tree/py");
    fs::create_dir_all(&lib).map_err(|e| e.to_string())?;
    fs::create_dir_all(&py).map_err(|e| e.to_string())?;
    for i in 0..TREE_LIBS {
        fs::copy(d.join("lib.so"), lib.join(format!("libcuda_{i:02}.so")))
            .map_err(|e| e.to_string())?;
    }
    fs::remove_file(d.join("lib.so")).map_err(|e| e.to_string())?;
    for i in 0..200 {
        let text = format!("def f{i}(x):\n    return x + {i}\n").repeat(40);
        fs::write(py.join(format!("m{i:03}.py")), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `out`: a wheel of the files under `d/dir`, each deflated (zlib's
/// fastest level, to keep the set-up short; inflating costs the same),
/// with the central directory a wheel has.
fn cuda_wheel(d: &Path, dir: &str, out: &str) -> Result<(), String> {
    use offload_format::zip::write::{Entry, Layout};
    use offload_format::zip::Method;
    let root = d.join(dir);
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let mut w = std::io::BufWriter::new(fs::File::create(d.join(out)).map_err(|e| e.to_string())?);
    let mut layout = Layout::new();
    for f in &files {
        let data = fs::read(f).map_err(|e| e.to_string())?;
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&data).map_err(|e| e.to_string())?;
        let z = z.finish().map_err(|e| e.to_string())?;
        let mut crc = flate2::Crc::new();
        crc.update(&data);
        let name = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let e = Entry {
            name: name.as_bytes(),
            method: Method::Deflated,
            flags: 0,
            version_made_by: 20,
            version_needed: 20,
            mod_time: 0,
            mod_date: 0x21,
            crc32: crc.sum(),
            compressed_size: z.len() as u64,
            uncompressed_size: data.len() as u64,
            internal_attrs: 0,
            external_attrs: 0o644 << 16,
            local_extra: &[],
            central_extra: &[],
            comment: &[],
        };
        w.write_all(&layout.member(&e)).map_err(|e| e.to_string())?;
        w.write_all(&z).map_err(|e| e.to_string())?;
    }
    w.write_all(&layout.finish(b""))
        .map_err(|e| e.to_string())?;
    w.flush().map_err(|e| e.to_string())
}

/// The device targets of each bundle of [`hip_fatbin_object`].
const DEVICES: &[&str] = &[
    "gfx803",
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a:xnack-",
    "gfx90a:xnack+",
    "gfx1030",
];

/// The 64-byte ELF header of an AMDGPU code object (v4, HSA) for
/// `target` (`gfx90a:xnack+`): processor and features in e_flags, as
/// clang writes them.
fn amdgpu_elf_header(target: &str) -> [u8; 64] {
    let (processor, features) = target.split_once(':').unwrap_or((target, ""));
    let mach = offload_format::payload::AMDGPU_MACH
        .iter()
        .find(|&&(_, n)| n == processor)
        .map_or(0, |&(m, _)| m);
    // xnack and sramecc: 1 any, 2 off, 3 on (code object v4).
    let setting = |name: &str| {
        if features.contains(&format!("{name}+")) {
            3
        } else if features.contains(&format!("{name}-")) {
            2
        } else {
            1
        }
    };
    let flags = mach | setting("xnack") << 8 | setting("sramecc") << 10;
    let mut h = [0u8; 64];
    h[..9].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 64, 2]);
    h[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    h[18..20].copy_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[48..52].copy_from_slice(&flags.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[54..56].copy_from_slice(&56u16.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    h
}

/// The wrapper's image size (the issue's 1 GiB).
const WRAPPER_SIZE: u64 = GIB;

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "offload-ls",
        about: "`offload ls` of an object whose `.hip_fatbin` holds 100 bundles of 8 entries, \
                against `llvm-readobj-22 --offloading` (which prints the same lines); no floor",
        sizes: Sizes::Scaling,
        goal: Goal::List,
        llvm_mem_per_byte: 1,
        setup: |d, size, t| {
            hip_fatbin_object(d, size, t)?;
            Ok(Trio {
                ours: t.ours("offload", &["ls", "--format=llvm", "lib.o"]),
                llvm: t.llvm("llvm-readobj", &["--offloading", "lib.o"]),
                floor: None,
            })
        },
    },
    Scenario {
        name: "offload-extract",
        about: "`offload extract` of every entry of that object, against `llvm-objdump-22 \
                --offloading` (which writes the same files); floor: `cp -r` of a directory \
                holding the same 800 files",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 1,
        setup: |d, size, t| {
            hip_fatbin_object_with(d, size, t, Some("entries"))?;
            Ok(Trio {
                ours: t.ours("offload", &["extract", "lib.o"]),
                llvm: t.llvm("llvm-objdump", &["--offloading", "lib.o"]),
                // The bytes written, in as many files: creating 800 files
                // costs more than copying 64 MiB, so `cp` of the object
                // alone is no floor for this.
                floor: Some(Cmd::new(
                    "cp",
                    &["-r", &p(d, "entries"), &p(d, "floor.out")],
                )),
            })
        },
    },
    Scenario {
        name: "cuda-ls",
        about: "`offload ls` of a generated CUDA library as large as PyTorch's \
                `libtorch_cuda.so` (450 MiB, ~2,800 zstd-compressed cubin and PTX entries \
                in 700 containers), against `cuobjdump --list-elf --list-ptx` where \
                cuobjdump is on PATH (or `$CUOBJDUMP`), else against `cp` of the file",
        sizes: Sizes::Once(450 * MIB),
        goal: Goal::CudaList,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_library(d, size, t)?;
            Ok(Trio {
                ours: t.ours("offload", &["ls", "lib.so"]),
                llvm: cuda_reference(d, &["--list-elf", "--list-ptx", "lib.so"]),
                floor: None,
            })
        },
    },
    Scenario {
        name: "cuda-extract",
        about: "`offload extract` of every entry of that library (each decoded, as \
                cuobjdump writes it), against `cuobjdump -xelf all -xptx all` where \
                cuobjdump is on PATH (or `$CUOBJDUMP`), else against `cp` of the file",
        sizes: Sizes::Once(450 * MIB),
        goal: Goal::CudaExtract,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_library(d, size, t)?;
            Ok(Trio {
                ours: t.ours("offload", &["extract", "lib.so"]),
                llvm: cuda_reference(d, &["-xelf", "all", "-xptx", "all", "lib.so"]),
                floor: None,
            })
        },
    },
    Scenario {
        name: "cuda-size",
        about: "`offload size` of a generated CUDA library shaped like onnxruntime-gpu's \
                (256 MiB of containers of sm_80 and sm_90 cubins laid out as nvcc's, 2 to \
                300 kernels each with long C++ names, every eighth container's kernels again; every entry decoded and profiled per \
                kernel), against flashinfer's `cubloaty` where it is on PATH (or \
                `$CUBLOATY`), else against `cp` of the file",
        sizes: Sizes::Once(256 * MIB),
        goal: Goal::CudaSize,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_kernel_region(d, size)?;
            host_object_with(d, t, ".nv_fatbin", 8, "lib.so")?;
            Ok(Trio {
                ours: t.ours("offload", &["size", "lib.so"]),
                llvm: match cubloaty() {
                    Some(c) => Cmd::new(c, &["lib.so"]),
                    None => Cmd::new("cp", &["lib.so", &p(d, "copy.so")]),
                },
                floor: None,
            })
        },
    },
    Scenario {
        name: "cuda-lib-thin",
        about: "`offload thin --keep sm_90 -o` of a generated linked CUDA library (1 GiB: \
                `.nv_fatbin` of ~2,300 containers of zstd-compressed sm_80 and sm_90 cubins \
                and PTX, a wrapper record and relocation per container, as nvcc lays \
                them out; a third of the bytes are dropped); no reference tool \
                (`nvprune` refuses shared libraries), both other columns are `cp` of the \
                library",
        sizes: Sizes::Once(GIB),
        goal: Goal::LibThin,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            lib_thin(d, size, CUBIN, t)
        },
    },
    Scenario {
        name: "cuda-lib-thin-many",
        about: "`cuda-lib-thin` with ~23,600 small containers (40 KiB cubins; the library \
                comes out 1.3 GB), as real libraries hold tens of thousands: memory must not \
                grow with the number of containers; both other columns are `cp` of the \
                library",
        sizes: Sizes::Once(GIB),
        goal: Goal::LibThin,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            lib_thin(d, size, SMALL_CUBIN, t)
        },
    },
    Scenario {
        name: "cuda-tree-thin",
        about: "`offload thin --keep sm_90 --in-place` of a generated CUDA install: 30 \
                libraries like `cuda-ls`'s (3.5 GiB, ~24,000 zstd-compressed entries) and \
                200 small Python files, linked into a fresh tree (`cp -rl`) for each run; \
                no reference tool (`nvprune` refuses shared libraries), both other columns \
                are `cp -r` of the tree",
        sizes: Sizes::Once(CUDA_TREE),
        goal: Goal::TreeThin,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_tree(d, size, t)?;
            let ours = format!(
                "cp -rl tree t && {} thin --keep sm_90 --in-place t",
                t.ours.join("offload").display()
            );
            Ok(Trio {
                ours: Cmd::new("sh", &["-c", &ours]),
                llvm: Cmd::new("cp", &["-r", "tree", "copy"]),
                floor: Some(Cmd::new("cp", &["-r", "tree", "floor.out"])),
            })
        },
    },
    Scenario {
        name: "cuda-tree-dry-run",
        about: "`offload thin --keep sm_90 --dry-run` of that tree (what would be freed, \
                per file); both other columns are `cp -r` of the tree",
        sizes: Sizes::Once(CUDA_TREE),
        goal: Goal::TreeScan,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_tree(d, size, t)?;
            Ok(Trio {
                ours: t.ours("offload", &["thin", "--keep", "sm_90", "--dry-run", "tree"]),
                llvm: Cmd::new("cp", &["-r", "tree", "copy"]),
                floor: Some(Cmd::new("cp", &["-r", "tree", "floor.out"])),
            })
        },
    },
    Scenario {
        name: "cuda-tree-summary",
        about: "`offload ls --summary` of that tree (bytes per GPU, what each `--keep` \
                frees); both other columns are `cp -r` of the tree",
        sizes: Sizes::Once(CUDA_TREE),
        goal: Goal::TreeScan,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_tree(d, size, t)?;
            Ok(Trio {
                ours: t.ours("offload", &["ls", "--summary", "tree"]),
                llvm: Cmd::new("cp", &["-r", "tree", "copy"]),
                floor: Some(Cmd::new("cp", &["-r", "tree", "floor.out"])),
            })
        },
    },
    Scenario {
        name: "wheel-ls",
        about: "`offload ls --summary` of a 1 GiB wheel (the tree's libraries, deflated, \
                and its Python files), read without unpacking, against `unzip -p` of its \
                `.so` members (inflating them to a pipe, the least unpacking costs)",
        sizes: Sizes::Once(GIB),
        goal: Goal::WheelList,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            cuda_tree(d, size, t)?;
            cuda_wheel(d, "tree", "lib.whl")?;
            fs::remove_dir_all(d.join("tree")).map_err(|e| e.to_string())?;
            Ok(Trio {
                ours: t.ours("offload", &["ls", "--summary", "lib.whl"]),
                llvm: Cmd::new("unzip", &["-p", "lib.whl", "*.so"]),
                floor: None,
            })
        },
    },
    Scenario {
        name: "bundle-tiny",
        about: "start-up cost: `-type=bc` bundling of two files of a few bytes; no floor",
        sizes: Sizes::Fixed,
        goal: Goal::Tiny,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            host_and_device(d, 7, t)?;
            Ok(bundle_trio(t, &[], None))
        },
    },
    Scenario {
        name: "unbundle-tiny",
        about: "start-up cost: `-unbundle` of such a tiny bundle; no floor",
        sizes: Sizes::Fixed,
        goal: Goal::Tiny,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            host_and_device(d, 7, t)?;
            llvm_bundle(d, t, &[])?;
            Ok(unbundle_trio(t, None))
        },
    },
    Scenario {
        name: "bundle-large",
        about: "`-type=bc` bundling of a tiny host file and a large device file; floor: `cp` of the device file",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            host_and_device(d, size, t)?;
            Ok(bundle_trio(t, &[], cp_floor(d, "g.bc")))
        },
    },
    Scenario {
        name: "unbundle-large",
        about: "`-unbundle` of such a bundle into both files; floor: `cp` of the bundle",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            host_and_device(d, size, t)?;
            llvm_bundle(d, t, &[])?;
            Ok(unbundle_trio(t, cp_floor(d, "b.bc")))
        },
    },
    Scenario {
        name: "list-large",
        about: "`-list` of such a bundle (only its header is needed); no floor",
        sizes: Sizes::Scaling,
        goal: Goal::None,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            host_and_device(d, size, t)?;
            llvm_bundle(d, t, &[])?;
            Ok(t.both(
                "clang-offload-bundler",
                &["-list", "-type=bc", "-input=b.bc"],
                None,
            ))
        },
    },
    Scenario {
        name: "object-bundle",
        about: "`-type=o` bundling of a clang-22 host object and a large device image \
                (LLVM runs llvm-objcopy); floor: `cat` of the two inputs into a file",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            host_object(d, t)?;
            t.input(d, "g.o", size)?;
            let args = [
                "-type=o",
                OBJECT_TARGETS,
                "-input=host.o",
                "-input=g.o",
                "-output=fat.o",
            ];
            let mut floor = Cmd::new("cat", &[&p(d, "host.o"), &p(d, "g.o")]);
            floor.stdout = Some("floor.out");
            Ok(t.both("clang-offload-bundler", &args, Some(floor)))
        },
    },
    Scenario {
        name: "object-unbundle",
        about: "`-type=o -unbundle` of such a fat object into the host object and the \
                device image; floor: `cp` of the fat object",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            fat_object(d, size, t)?;
            let args = [
                "-type=o",
                OBJECT_TARGETS,
                "-unbundle",
                "-input=fat.o",
                "-output=h.out",
                "-output=g.out",
            ];
            Ok(t.both("clang-offload-bundler", &args, cp_floor(d, "fat.o")))
        },
    },
    Scenario {
        name: "compress",
        about: "`-compress` bundling (zstd level 3 with long-distance matching, as LLVM); \
                floor: `zstd -3 --long` of the device file",
        sizes: Sizes::Scaling,
        goal: Goal::Compress,
        // LLVM 22 peaked at 1.25 GB on 256 MiB.
        llvm_mem_per_byte: 6,
        setup: |d, size, t| {
            host_and_device(d, size, t)?;
            let floor = Cmd::new(
                "zstd",
                &[
                    "-q",
                    "-f",
                    "-3",
                    "--long",
                    &p(d, "g.bc"),
                    "-o",
                    &p(d, "floor.zst"),
                ],
            );
            Ok(bundle_trio(t, &["-compress"], Some(floor)))
        },
    },
    Scenario {
        name: "decompress",
        about: "`-unbundle` of an LLVM-compressed bundle; floor: `zstd -d --long` of the \
                device file compressed alike",
        sizes: Sizes::Scaling,
        goal: Goal::Compress,
        // LLVM 22 peaked at 0.72 GB on 256 MiB.
        llvm_mem_per_byte: 4,
        setup: |d, size, t| {
            host_and_device(d, size, t)?;
            llvm_bundle(d, t, &["-compress"])?;
            run_in(
                d,
                Path::new("zstd"),
                &["-q", "-f", "-3", "--long", "g.bc", "-o", "g.zst"],
            )?;
            let floor = Cmd::new(
                "zstd",
                &[
                    "-q",
                    "-d",
                    "-f",
                    "--long",
                    &p(d, "g.zst"),
                    "-o",
                    &p(d, "floor.out"),
                ],
            );
            Ok(unbundle_trio(t, Some(floor)))
        },
    },
    Scenario {
        name: "archive-unbundle",
        about: "`-type=a -unbundle` of a 1,000-member device archive into 4 per-target \
                archives; floor: `cp` of the archive",
        sizes: Sizes::Fixed,
        goal: Goal::Archive,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            device_archive(d, 1000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-4k",
        about: "the same with 4,000 members (how time and memory grow with the archive); floor: `cp` of the archive",
        sizes: Sizes::Fixed,
        goal: Goal::None,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            device_archive(d, 4000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-16k",
        about: "the same with 16,000 members; floor: `cp` of the archive",
        sizes: Sizes::Fixed,
        goal: Goal::None,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            device_archive(d, 16000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-hip",
        about: "`-type=a -unbundle` of 1,000 HIP fat objects made by `clang-22 -x hip -fgpu-rdc` (device bitcode in bundle sections, symbol tables in every output) into 4 per-target archives; floor: `cp` of the archive",
        sizes: Sizes::Fixed,
        goal: Goal::None,
        llvm_mem_per_byte: 0,
        setup: |d, _, t| {
            hip_device_archive(d, 1000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "package-large",
        about: "llvm-offload-binary packaging of one large image; floor: `cp` of the image",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            t.input(d, "dev.o", size)?;
            let args = ["-o", "out.bin", PACKAGE_IMAGE];
            Ok(t.both("llvm-offload-binary", &args, cp_floor(d, "dev.o")))
        },
    },
    Scenario {
        name: "extract-large",
        about: "llvm-offload-binary extracting that image again (`--image=file=x.o,arch=generic`); \
                floor: `cp` of the packaged binary",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            packaged(d, size, t)?;
            Ok(extract_trio(t, "pkg.bin", cp_floor(d, "pkg.bin")))
        },
    },
    Scenario {
        name: "extract-object",
        about: "the same extraction from a host object whose `.llvm.offloading` section \
                holds the packaged binary; floor: `cp` of the object",
        sizes: Sizes::Scaling,
        goal: Goal::Copy,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| {
            packaged(d, size, t)?;
            host_object(d, t)?;
            // SHT_LLVM_OFFLOADING, the type clang gives the section.
            t.llvm_run(
                d,
                "llvm-objcopy",
                &[
                    "--add-section=.llvm.offloading=pkg.bin",
                    "--set-section-type=.llvm.offloading=0x6fff4c0b",
                    "host.o",
                    "fat.o",
                ],
            )?;
            fs::remove_file(d.join("pkg.bin")).map_err(|e| e.to_string())?;
            Ok(extract_trio(t, "fat.o", cp_floor(d, "fat.o")))
        },
    },
    Scenario {
        name: "thin",
        about: "`offload thin --keep gfx90a` of a bundle of four 4096-aligned device entries \
                (one quarter each) and a host entry; LLVM: `-unbundle` of the kept entries \
                and `-bundle` of them again, the nearest it offers (it cannot rewrite a \
                bundle inside a linked file); floor: `cp` of the bundle",
        sizes: Sizes::Scaling,
        goal: Goal::Thin,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| thin_setup(d, size, t, false),
    },
    Scenario {
        name: "thin-compressed",
        about: "the same with the bundle compressed (CCOB v3 zstd, `-compress`): thinning \
                decompresses and compresses again; LLVM: `-unbundle` and `-bundle -compress`; \
                floor: `cp` of the compressed bundle",
        sizes: Sizes::Scaling,
        goal: Goal::None,
        llvm_mem_per_byte: 0,
        setup: |d, size, t| thin_setup(d, size, t, true),
    },
    Scenario {
        name: "wrapper-1g",
        about: "llvm-offload-wrapper (`--kind=openmp`) embedding a 1 GiB image in bitcode; \
                floor: `cp` of the image",
        sizes: Sizes::Once(WRAPPER_SIZE),
        goal: Goal::None,
        // LLVM 22 peaks near 11.5 bytes per image byte (2.9 GB at 256 MiB).
        llvm_mem_per_byte: 12,
        setup: |d, size, t| {
            t.input(d, "img", size)?;
            let args = [
                "--kind=openmp",
                "--triple=x86_64-pc-linux-gnu",
                "-o",
                "w.bc",
                "img",
            ];
            Ok(t.both("llvm-offload-wrapper", &args, cp_floor(d, "img")))
        },
    },
];

/// The targets of the `thin` scenarios' bundle, host first.
const THIN_TARGETS: [&str; 5] = [
    "host-x86_64-unknown-linux-gnu-",
    "hipv4-amdgcn-amd-amdhsa--gfx906",
    "hipv4-amdgcn-amd-amdhsa--gfx908",
    "hipv4-amdgcn-amd-amdhsa--gfx90a",
    "hipv4-amdgcn-amd-amdhsa--gfx942",
];

/// A bundle of `size` bytes in four distinct device entries (as the HIP
/// driver aligns them), compressed or not, and the commands that thin it to
/// gfx90a.
fn thin_setup(d: &Path, size: u64, t: &Tools, compress: bool) -> Result<Trio, String> {
    fs::write(d.join("e0"), b"").map_err(|e| e.to_string())?;
    for i in 1..THIN_TARGETS.len() {
        semi_compressible(&d.join(format!("e{i}")), size / 4, size + i as u64)?;
    }
    let targets = format!("-targets={}", THIN_TARGETS.join(","));
    let mut args = vec![
        "-type=o".to_owned(),
        "-bundle-align=4096".to_owned(),
        targets,
        "-output=fat.bundle".to_owned(),
    ];
    args.extend((0..THIN_TARGETS.len()).map(|i| format!("-input=e{i}")));
    if compress {
        args.push("-compress".to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.llvm_run(d, "clang-offload-bundler", &args)?;
    for i in 0..THIN_TARGETS.len() {
        fs::remove_file(d.join(format!("e{i}"))).map_err(|e| e.to_string())?;
    }
    let bundler = t.llvm.join("clang-offload-bundler");
    let bundler = bundler.display();
    let kept = format!("{},{}", THIN_TARGETS[0], THIN_TARGETS[3]);
    let script = format!(
        "{bundler} -unbundle -type=o -input=fat.bundle -targets={kept} -output=k0 -output=k1 && \
         {bundler} -type=o -bundle-align=4096 {} -targets={kept} -input=k0 -input=k1 -output=llvm.out",
        if compress { "-compress" } else { "" }
    );
    Ok(Trio {
        ours: t.ours(
            "offload",
            &["thin", "--keep", "gfx90a", "-o", "ours.out", "fat.bundle"],
        ),
        llvm: Cmd::new("sh", &["-c", &script]),
        floor: cp_floor(d, "fat.bundle"),
    })
}

struct Row {
    sc: &'static Scenario,
    size: u64,
    reps: usize,
    ours: Sample,
    llvm: Sample,
    floor: Option<Sample>,
}

fn median(v: &mut [Sample]) -> Sample {
    v.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let t = v[v.len() / 2].secs;
    v.sort_by_key(|s| s.maxrss_kib);
    Sample {
        secs: t,
        maxrss_kib: v[v.len() / 2].maxrss_kib,
    }
}

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mul) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], KIB),
        Some(b'M') => (&s[..s.len() - 1], MIB),
        Some(b'G') => (&s[..s.len() - 1], GIB),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("bad size {s} (e.g. 512K, 16M, 2G)"))
}

fn human(size: u64) -> String {
    if size >= GIB && size & (GIB - 1) == 0 {
        format!("{} GiB", size / GIB)
    } else if size >= MIB && size & (MIB - 1) == 0 {
        format!("{} MiB", size / MIB)
    } else if size >= KIB && size & (KIB - 1) == 0 {
        format!("{} KiB", size / KIB)
    } else {
        format!("{size} B")
    }
}

fn size_label(size: u64) -> String {
    if size == 0 {
        "-".into()
    } else {
        human(size)
    }
}

/// Free memory the kernel could give a process now, from /proc/meminfo.
fn mem_available() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * KIB)
}

/// Whether `program` can be run (found on PATH when not a path itself).
fn on_path(program: &Path) -> bool {
    if program.components().count() > 1 {
        return program.exists();
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// Deletes everything in `dir` that set-up did not make, so that each
/// measured run starts without the previous run's outputs (replacing a
/// large file costs the replacer time), then runs `sync`, so that no
/// run's writes are still going to disk during the next one.
fn clear_outputs(dir: &Path, inputs: &[OsString]) -> Result<(), String> {
    for e in fs::read_dir(dir).map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        if !inputs.contains(&e.file_name()) {
            let path = e.path();
            let removed = if e.file_type().is_ok_and(|t| t.is_dir()) {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(|err| format!("{}: {err}", path.display()))?;
        }
    }
    // What the previous run wrote is put on disk now, not while the next
    // one runs: the kernel's writeback of gigabytes of dirty pages slowed
    // whichever command came next (`cp -r` of the CUDA tree took 4.4 s
    // after our run and 1.3 s after its own, in one run).
    let synced = Command::new("sync")
        .status()
        .map_err(|e| format!("sync: {e}"))?;
    if !synced.success() {
        return Err(format!("sync: {synced}"));
    }
    Ok(())
}

fn listing(dir: &Path) -> Result<Vec<OsString>, String> {
    fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .map(|e| e.map(|e| e.file_name()).map_err(|e| e.to_string()))
        .collect()
}

/// Removes scratch directories of earlier runs whose process is gone
/// (interrupted, or kept after a failure): they can hold gigabytes.
fn remove_stale_scratch(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("bench-") {
            continue;
        }
        let alive = fs::read_to_string(e.path().join("pid"))
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            println!("removing {} (left by an earlier run)", e.path().display());
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

const USAGE: &str = "cargo xtask bench [SCENARIO...] [--smoke] [--sizes 1M,16M,256M,2G] [--reps N] [--write-docs] [--list]";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut sizes = DEFAULT_SIZES.to_vec();
    let mut reps = DEFAULT_REPS;
    let mut smoke = false;
    let mut only: Vec<String> = Vec::new();
    let mut write_docs = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => {
                sizes = vec![MIB];
                reps = 1;
                smoke = true;
            }
            "--reps" => {
                reps = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps N (N > 0)")?
            }
            "--sizes" => {
                sizes = it
                    .next()
                    .ok_or("--sizes LIST")?
                    .split(',')
                    .map(parse_size)
                    .collect::<Result<_, _>>()?;
                sizes.sort_unstable();
                sizes.dedup();
            }
            "--write-docs" => write_docs = true,
            "--list" => {
                for sc in SCENARIOS {
                    println!("{:<16} {}", sc.name, sc.about);
                }
                return Ok(());
            }
            "--help" | "-h" => {
                println!("usage: {USAGE}");
                return Ok(());
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}\nusage: {USAGE}")),
            s => {
                if !SCENARIOS.iter().any(|sc| sc.name == s) {
                    let names: Vec<&str> = SCENARIOS.iter().map(|sc| sc.name).collect();
                    return Err(format!(
                        "unknown scenario {s} (one of: {})",
                        names.join(", ")
                    ));
                }
                only.push(s.to_string())
            }
        }
    }
    for program in ["cp", "cat", "zstd"] {
        if !on_path(Path::new(program)) {
            return Err(format!(
                "`{program}` is not on PATH; the floors need it (zstd: apt-get install zstd)"
            ));
        }
    }
    let llvm = PathBuf::from("/usr/lib/llvm-22/bin");
    for tool in [
        "clang-offload-bundler",
        "llvm-offload-binary",
        "llvm-offload-wrapper",
        "clang",
        "llvm-objcopy",
    ] {
        if !llvm.join(tool).exists() {
            return Err(format!(
                "LLVM 22's {tool} is not installed in {}",
                llvm.display()
            ));
        }
    }
    let scratch_root = workspace_root().join("target");
    fs::create_dir_all(&scratch_root).map_err(|e| e.to_string())?;
    remove_stale_scratch(&scratch_root);
    let scratch = tempfile::Builder::new()
        .prefix("bench-")
        .tempdir_in(&scratch_root)
        .map_err(|e| e.to_string())?;
    fs::write(scratch.path().join("pid"), std::process::id().to_string())
        .map_err(|e| e.to_string())?;
    let tools = Tools {
        ours: our_bin_dir()?,
        meter: build_meter(scratch.path(), &llvm.join("clang"))?,
        llvm,
        data: scratch.path().join("data"),
    };
    fs::create_dir_all(&tools.data).map_err(|e| e.to_string())?;
    let load_before = load_average();
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for sc in SCENARIOS {
        if !only.is_empty() && !only.iter().any(|o| o == sc.name) {
            continue;
        }
        let sizes_here: Vec<u64> = match sc.sizes {
            Sizes::Scaling => sizes.clone(),
            Sizes::Fixed => vec![0],
            Sizes::Once(n) if smoke => vec![sizes[0].min(n)],
            Sizes::Once(n) => vec![n],
        };
        for size in sizes_here {
            let need = sc.llvm_mem_per_byte.saturating_mul(size);
            if let Some(free) = mem_available().filter(|&free| need > free) {
                let why = format!(
                    "LLVM would need about {} of memory, {} is free",
                    human(need.next_multiple_of(GIB)),
                    human(free / GIB * GIB)
                );
                println!("{:<16} {:>8}  skipped: {why}", sc.name, size_label(size));
                skipped.push((sc.name, size, why));
                continue;
            }
            let reps = if size >= BIG_SIZE {
                reps.min(BIG_REPS)
            } else {
                reps
            };
            let dir = scratch.path().join(format!("{}-{size}", sc.name));
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let (mut o, mut l, mut f) = (Vec::new(), Vec::new(), Vec::new());
            let measured = (|| -> Result<(), String> {
                let trio = (sc.setup)(&dir, size, &tools)?;
                let inputs = listing(&dir)?;
                for rep in 0..reps {
                    // Alternate so drifting machine load hits every side
                    // alike, and start each repetition with the next side,
                    // so that none always runs after the same one (the
                    // `cp -r` after our in-place run of the CUDA tree took
                    // twice as long as the one after it).
                    let sides = if trio.floor.is_some() { 3 } else { 2 };
                    for k in 0..sides {
                        clear_outputs(&dir, &inputs)?;
                        match (rep + k) % sides {
                            0 => o.push(measure(&trio.ours, &dir, &tools.meter)?),
                            1 => l.push(measure(&trio.llvm, &dir, &tools.meter)?),
                            _ => {
                                if let Some(fl) = &trio.floor {
                                    f.push(measure(fl, &dir, &tools.meter)?);
                                }
                            }
                        }
                    }
                }
                Ok(())
            })();
            if let Err(e) = measured {
                // Keep only the failing scenario's directory: the shared
                // inputs can be gigabytes.
                let _ = fs::remove_dir_all(&tools.data);
                let kept = scratch.keep();
                return Err(format!(
                    "{}: {e}\n(inputs kept in {} until the next run)",
                    sc.name,
                    kept.join(dir.file_name().unwrap_or_default()).display()
                ));
            }
            let row = Row {
                sc,
                size,
                reps,
                ours: median(&mut o),
                llvm: median(&mut l),
                floor: (!f.is_empty()).then(|| median(&mut f)),
            };
            println!("{}", format_row(&row));
            rows.push(row);
            let _ = fs::remove_dir_all(&dir);
        }
    }
    println!(
        "{} rows in {:.0} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    if write_docs {
        let run = RunInfo {
            args: args.join(" "),
            load_before,
            load_after: load_average(),
        };
        let docs = workspace_root().join("docs/bench");
        fs::create_dir_all(&docs).map_err(|e| e.to_string())?;
        fs::write(docs.join("results.md"), markdown(&rows, &skipped, &run))
            .map_err(|e| e.to_string())?;
        fs::write(docs.join("chart.svg"), chart(&rows)).map_err(|e| e.to_string())?;
        println!("wrote docs/bench/results.md and docs/bench/chart.svg");
    }
    Ok(())
}

fn format_row(r: &Row) -> String {
    let mut s = format!(
        "{:<16} {:>8}  ours {:>8.3}s {:>8} KiB | llvm {:>8.3}s {:>8} KiB | time x{:.2} mem x{:.2}",
        r.sc.name,
        size_label(r.size),
        r.ours.secs,
        r.ours.maxrss_kib,
        r.llvm.secs,
        r.llvm.maxrss_kib,
        r.ours.secs / r.llvm.secs,
        r.ours.maxrss_kib as f64 / r.llvm.maxrss_kib as f64,
    );
    if let Some(f) = r.floor {
        let _ = write!(
            s,
            " | floor {:.3}s (ours x{:.2})",
            f.secs,
            r.ours.secs / f.secs
        );
    }
    if let Some(v) = r.sc.goal.verdict(r) {
        let _ = write!(s, " | goal {v}");
    }
    s
}

/// The 1-minute load average, from /proc/loadavg.
fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How the run was made, for the docs page.
struct RunInfo {
    args: String,
    load_before: Option<f64>,
    load_after: Option<f64>,
}

/// The line of `program --version` that names a version, else its first.
fn version_of(program: &Path) -> String {
    let Ok(out) = Command::new(program).arg("--version").output() else {
        return format!("{} (version unknown)", program.display());
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("version"))
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("");
    line.trim()
        .trim_start_matches("*** ")
        .trim_end_matches(" ***")
        .to_string()
}

/// CPU model, core count, memory and kernel of this machine.
fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|i| {
            let l = i.lines().find(|l| l.starts_with("MemTotal:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or("?".into(), |kib| {
            format!("{:.0}", kib as f64 / (1 << 20) as f64)
        });
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{cpu}, {cores} cores, {mem} GiB RAM, Linux {kernel}")
}

fn secs(v: f64) -> String {
    if v < 0.01 {
        format!("{v:.4}")
    } else if v < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

fn markdown(rows: &[Row], skipped: &[(&str, u64, String)], run: &RunInfo) -> String {
    let mut s = String::from("# Benchmark results\n\n");
    let load = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
    let cmd = if run.args.is_empty() {
        "cargo xtask bench --write-docs".to_string()
    } else {
        format!("cargo xtask bench {}", run.args)
    };
    let _ = writeln!(
        s,
        "Made by `{cmd}`. Each row alternates our tool, LLVM 22's and the floor \
         in one run and shows medians (`runs` repetitions each). Time is wall \
         time; memory is the child's peak resident set (getrusage through \
         wait4, which includes programs the child runs and waits for, such as \
         the `llvm-objcopy` of LLVM's `-type=o` bundling). Ratios below 1 \
         favour ours. Large inputs are generated data that `zstd -3` shrinks \
         about 1.8:1; they are in the page cache, and outputs are removed \
         before each run.\n"
    );
    let _ = writeln!(
        s,
        "Machine: {}. Tools: {}; {}. Load average (1 min): {} at the start, {} at the end.\n",
        machine(),
        version_of(Path::new("/usr/lib/llvm-22/bin/clang-offload-bundler")),
        version_of(Path::new("zstd")),
        load(run.load_before),
        load(run.load_after),
    );
    s.push_str("![Wall time and peak memory against input size](chart.svg)\n\n");
    s.push_str("## Results\n\n");
    s.push_str(
        "| scenario | size | runs | ours (s) | LLVM 22 (s) | floor (s) | ours/LLVM time | ours/floor time \
         | ours (MiB) | LLVM 22 (MiB) | floor (MiB) | ours/LLVM memory | goal |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {} | {:.1} | {:.1} | {} | {:.2} | {} |",
            r.sc.name,
            size_label(r.size),
            r.reps,
            secs(r.ours.secs),
            secs(r.llvm.secs),
            r.floor.map_or("-".into(), |f| secs(f.secs)),
            r.ours.secs / r.llvm.secs,
            r.floor
                .map_or("-".into(), |f| format!("{:.2}", r.ours.secs / f.secs)),
            r.ours.mib(),
            r.llvm.mib(),
            r.floor.map_or("-".into(), |f| format!("{:.1}", f.mib())),
            r.ours.maxrss_kib as f64 / r.llvm.maxrss_kib as f64,
            r.sc.goal.verdict(r).unwrap_or_else(|| "-".into()),
        );
    }
    for (name, size, why) in skipped {
        let _ = writeln!(s, "\n{name} at {} was skipped: {why}.", size_label(*size));
    }
    s.push_str("\n## Goals (issue 8)\n\n");
    for (goal, what) in [
        (Goal::Tiny, "tiny invocations (start-up cost)"),
        (
            Goal::Copy,
            "large uncompressed bundling, unbundling, packaging and extraction",
        ),
        (Goal::Compress, "compressed bundling and unbundling"),
        (Goal::Archive, "archive unbundling"),
    ] {
        let _ = writeln!(s, "- {what}: {}", goal.text());
    }
    s.push_str("\n## Scenarios\n\n| scenario | sizes | what it measures; floor | goal |\n|---|---|---|---|\n");
    for sc in SCENARIOS {
        let sizes = match sc.sizes {
            Sizes::Scaling => "each of `--sizes`".to_string(),
            Sizes::Fixed => "fixed".to_string(),
            Sizes::Once(n) => human(n),
        };
        let _ = writeln!(
            s,
            "| {} | {sizes} | {} | {} |",
            sc.name,
            sc.about,
            sc.goal.text()
        );
    }
    s
}

const OURS_COLOUR: &str = "#1f77b4";
const LLVM_COLOUR: &str = "#d62728";
const FLOOR_COLOUR: &str = "#7f7f7f";

/// One series of a panel: label, colour, dash pattern, getter.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Row) -> Option<Sample>,
);

fn series() -> [Series; 3] {
    [
        ("ours", OURS_COLOUR, "", |r| Some(r.ours)),
        ("LLVM 22", LLVM_COLOUR, "6,4", |r| Some(r.llvm)),
        ("floor", FLOOR_COLOUR, "2,3", |r| r.floor),
    ]
}

/// Tick values for a log axis spanning `lo..=hi` (decimal logarithms):
/// decades, plus 2 and 5 times them when the span is short.
fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let steps: &[u64] = if hi - lo <= 2.5 { &[1, 2, 5] } else { &[1] };
    let mut out = Vec::new();
    for k in (lo.floor() as i32 - 1)..=(hi.ceil() as i32 + 1) {
        for &m in steps {
            let v = m as f64 * 10f64.powi(k);
            if (lo..=hi).contains(&v.log10()) {
                // Written from m and k so that no float noise shows.
                let label = if k >= 0 {
                    format!("{}", m * 10u64.pow(k as u32))
                } else {
                    format!("0.{}{m}", "0".repeat((-k - 1) as usize))
                };
                out.push((v, label));
            }
        }
    }
    out
}

/// SVG of time and memory against input size, one row of two log-log
/// panels per scaling scenario (ours, LLVM 22 and the floor), then bars
/// for the fixed-size scenarios.
fn chart(rows: &[Row]) -> String {
    const W: f64 = 1000.0;
    const LEFT: f64 = 70.0;
    const PW: f64 = 390.0;
    const COL2: f64 = LEFT + PW + 110.0;
    const PH: f64 = 150.0;
    const ROW_H: f64 = PH + 70.0;
    let mut names: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.sc.sizes == Sizes::Scaling) {
        if !names.contains(&r.sc.name) {
            names.push(r.sc.name);
        }
    }
    let fixed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.sc.sizes != Sizes::Scaling)
        .collect();
    let bar_h = 3.0 * 18.0 + 40.0;
    let height = 80.0 + names.len() as f64 * ROW_H + 40.0 + fixed.len() as f64 * bar_h;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" \
         viewBox=\"0 0 {W} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Wall time and peak memory \
         against input size (medians; log-log)</text>"
    );
    for (i, (label, colour, dash, _)) in series().iter().enumerate() {
        let x = LEFT + i as f64 * 150.0;
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"46\" x2=\"{}\" y2=\"46\" stroke=\"{colour}\" stroke-width=\"2\" \
             stroke-dasharray=\"{dash}\"/><text x=\"{}\" y=\"50\">{label}</text>",
            x + 36.0,
            x + 42.0
        );
    }

    let sizes: Vec<f64> = rows
        .iter()
        .filter(|r| r.sc.sizes == Sizes::Scaling)
        .map(|r| (r.size as f64).log10())
        .collect();
    let (mut x0, mut x1) = (
        sizes.iter().cloned().fold(f64::MAX, f64::min),
        sizes.iter().cloned().fold(f64::MIN, f64::max),
    );
    if x1 - x0 < 0.5 {
        x0 -= 0.5;
        x1 += 0.5;
    } else {
        let pad = (x1 - x0) * 0.05;
        x0 -= pad;
        x1 += pad;
    }
    for (i, name) in names.iter().enumerate() {
        let top = 80.0 + i as f64 * ROW_H;
        let these: Vec<&Row> = rows.iter().filter(|r| r.sc.name == *name).collect();
        for (left, title, unit, get) in [
            (
                LEFT,
                "wall time",
                "s",
                (|s: &Sample| s.secs) as fn(&Sample) -> f64,
            ),
            (COL2, "peak memory", "MiB", |s: &Sample| s.mib()),
        ] {
            let _ = writeln!(
                s,
                "<text x=\"{left}\" y=\"{}\"><tspan font-weight=\"bold\">{name}</tspan>: {title} ({unit})</text>",
                top + 14.0
            );
            let py_top = top + 24.0;
            let vals: Vec<f64> = these
                .iter()
                .flat_map(|r| series().map(|(_, _, _, g)| g(r).map(|v| get(&v))))
                .flatten()
                .filter(|v| *v > 0.0)
                .map(f64::log10)
                .collect();
            let (mut lo, mut hi) = (
                vals.iter().cloned().fold(f64::MAX, f64::min),
                vals.iter().cloned().fold(f64::MIN, f64::max),
            );
            if hi - lo < 1.0 {
                let mid = (lo + hi) / 2.0;
                lo = mid - 0.5;
                hi = mid + 0.5;
            }
            let pad = (hi - lo) * 0.06;
            lo -= pad;
            hi += pad;
            let px = |x: f64| left + (x - x0) / (x1 - x0) * PW;
            let py = |y: f64| py_top + PH - (y - lo) / (hi - lo) * PH;
            let _ = writeln!(
                s,
                "<rect x=\"{left}\" y=\"{py_top}\" width=\"{PW}\" height=\"{PH}\" fill=\"none\" stroke=\"#999\"/>"
            );
            for (v, label) in log_ticks(lo, hi) {
                let y = py(v.log10());
                let _ = writeln!(
                    s,
                    "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
                     <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"10\">{label}</text>",
                    left + PW,
                    left - 4.0,
                    y + 3.5
                );
            }
            for r in &these {
                let x = px((r.size as f64).log10());
                let _ = writeln!(
                    s,
                    "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{}</text>",
                    py_top + PH + 13.0,
                    human(r.size)
                );
            }
            for (_, colour, dash, g) in series() {
                let pts: Vec<(f64, f64)> = these
                    .iter()
                    .filter_map(|r| g(r).map(|v| (r.size, get(&v))))
                    .filter(|(_, v)| *v > 0.0)
                    .map(|(size, v)| (px((size as f64).log10()), py(v.log10())))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let joined: Vec<String> =
                    pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    s,
                    "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" \
                     stroke-dasharray=\"{dash}\" points=\"{}\"/>",
                    joined.join(" ")
                );
                for (x, y) in pts {
                    let _ = writeln!(
                        s,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{colour}\"/>"
                    );
                }
            }
        }
    }

    let mut top = 80.0 + names.len() as f64 * ROW_H;
    if !fixed.is_empty() {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">Fixed-size scenarios (linear)</text>",
            top + 16.0
        );
        top += 40.0;
    }
    for r in fixed {
        for (left, title, get, fmt) in [
            (
                LEFT,
                "wall time",
                (|s: &Sample| s.secs) as fn(&Sample) -> f64,
                (|v: f64| format!("{} s", secs(v))) as fn(f64) -> String,
            ),
            (
                COL2,
                "peak memory",
                |s: &Sample| s.mib(),
                |v: f64| format!("{v:.1} MiB"),
            ),
        ] {
            let size = if r.size == 0 {
                String::new()
            } else {
                format!(" ({})", human(r.size))
            };
            let _ = writeln!(
                s,
                "<text x=\"{left}\" y=\"{top}\"><tspan font-weight=\"bold\">{}</tspan>{size}: {title}</text>",
                r.sc.name
            );
            let bars: Vec<(&str, &str, f64)> = series()
                .iter()
                .filter_map(|(label, colour, _, g)| g(r).map(|v| (*label, *colour, get(&v))))
                .collect();
            let max = bars.iter().map(|b| b.2).fold(0.0, f64::max).max(1e-12);
            let span = PW - 110.0;
            for (j, (label, colour, v)) in bars.iter().enumerate() {
                let y = top + 8.0 + j as f64 * 18.0;
                let len = (v / max * span).max(1.0);
                let _ = writeln!(
                    s,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\">{label}</text>\
                     <rect x=\"{left}\" y=\"{y}\" width=\"{len:.1}\" height=\"13\" fill=\"{colour}\"/>\
                     <text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{}</text>",
                    left - 4.0,
                    y + 11.0,
                    left + len + 4.0,
                    y + 11.0,
                    fmt(*v)
                );
            }
        }
        top += bar_h;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, size: u64, ours: (f64, u64), llvm: (f64, u64), floor: Option<f64>) -> Row {
        let sc = SCENARIOS.iter().find(|s| s.name == name).unwrap();
        let sample = |(secs, maxrss_kib)| Sample { secs, maxrss_kib };
        Row {
            sc,
            size,
            reps: 1,
            ours: sample(ours),
            llvm: sample(llvm),
            floor: floor.map(|secs| Sample {
                secs,
                maxrss_kib: 2048,
            }),
        }
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("512K"), Ok(512 * KIB));
        assert_eq!(parse_size("16M"), Ok(16 * MIB));
        assert_eq!(parse_size("2G"), Ok(2 * GIB));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0M").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999G").is_err());
        assert_eq!(human(2 * GIB), "2 GiB");
        assert_eq!(human(1536 * KIB), "1536 KiB");
        assert_eq!(human(7), "7 B");
    }

    #[test]
    fn log_ticks_are_clean_decimals_inside_the_range() {
        let t: Vec<String> = log_ticks(-3.1, -1.2).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0.001", "0.002", "0.005", "0.01", "0.02", "0.05"]);
        let t: Vec<String> = log_ticks(0.0, 4.0).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["1", "10", "100", "1000", "10000"]);
    }

    /// The bench's code object headers name the targets of their entries.
    #[test]
    fn code_object_headers_name_their_targets() {
        use offload_format::payload::{classify, Payload};
        for &target in DEVICES {
            match classify(&amdgpu_elf_header(target)) {
                Payload::AmdgpuCodeObject(t) => {
                    assert!(t.matches_target_id(target), "{target}: {}", t.target_id());
                    assert!(!t.matches_target_id("gfx1100"));
                }
                other => panic!("{target}: {other:?}"),
            }
        }
        match classify(&amdgpu_elf_header("gfx90a:xnack+")) {
            Payload::AmdgpuCodeObject(t) => assert!(!t.matches_target_id("gfx90a:xnack-")),
            other => panic!("{other:?}"),
        }
    }

    /// The `cuda-size` row's cubins are profiled as real ones are: one
    /// kernel per `.text.<name>`, its code the text's size, the parts
    /// adding up to the cubin.
    #[test]
    fn kernel_cubins_profile_per_kernel() {
        use offload_format::payload::{classify, Payload};
        use offload_format::profile::{profile, ImageKind};
        let code: Vec<u8> = (0..64u32 << 10).map(|i| (i * 7 % 251) as u8).collect();
        let names: Vec<String> = (0..5).map(|k| format!("_Z7kernel{k}v")).collect();
        let texts: Vec<(usize, usize)> = (0..5).map(|k| (k * 4096, 2048 * (k + 1))).collect();
        let cubin = kernel_cubin(90, &names, &code, &texts);
        assert_eq!(classify(&cubin), Payload::Cubin { sm: 90 });
        let p = profile(&cubin);
        assert_eq!(p.kind, ImageKind::Cubin);
        assert!(p.damage.is_empty(), "{:?}", p.damage);
        assert_eq!(p.total(), cubin.len() as u64);
        let got: Vec<(&str, bool, u64)> = p
            .functions
            .iter()
            .map(|f| (&*f.name, f.kernel, f.code))
            .collect();
        let want: Vec<(&str, bool, u64)> = names
            .iter()
            .zip(&texts)
            .map(|(n, &(_, len))| (n.as_str(), true, len as u64))
            .collect();
        assert_eq!(got, want);
        // Each kernel also owns its info, constant bank, symbol and names.
        for f in &p.functions {
            assert!(f.bytes > f.code + 352 + 64 + 24, "{f:?}");
        }
    }

    #[test]
    fn goals_follow_the_issue() {
        let v = |r: Row| r.sc.goal.verdict(&r);
        assert_eq!(
            v(row("bundle-tiny", 0, (0.002, 3000), (0.03, 70000), None)).as_deref(),
            Some("met")
        );
        assert_eq!(
            v(row("bundle-tiny", 0, (0.004, 9000), (0.03, 70000), None)).as_deref(),
            Some("not met: time 0.13× LLVM, memory 8.8 MiB")
        );
        // thin against the faster of its two `cp` columns.
        assert_eq!(
            v(row(
                "cuda-lib-thin-many",
                GIB,
                (0.869, 28672),
                (0.519, 2120),
                Some(2.103)
            ))
            .as_deref(),
            Some("not met: time 1.674× cp")
        );
        assert_eq!(
            v(row(
                "cuda-lib-thin",
                GIB,
                (0.396, 9204),
                (0.355, 2092),
                Some(0.404)
            ))
            .as_deref(),
            Some("met")
        );
        // Copies: time against the floor only from 64 MiB up.
        assert_eq!(
            v(row(
                "bundle-large",
                MIB,
                (0.01, 4000),
                (0.03, 70000),
                Some(0.002)
            ))
            .as_deref(),
            Some("met (memory; time judged from 64 MiB)")
        );
        assert_eq!(
            v(row(
                "extract-large",
                GIB,
                (1.3, 4000),
                (3.0, 70000),
                Some(1.0)
            ))
            .as_deref(),
            Some("not met: time 1.30× floor")
        );
        assert_eq!(
            v(row(
                "object-unbundle",
                GIB,
                (1.1, 40000),
                (3.0, 70000),
                Some(1.0)
            ))
            .as_deref(),
            Some("not met: memory 39.1 MiB")
        );
        // Listing: time against LLVM only from 1 GiB up (the issue's
        // 1.3 GB library); memory at every size.
        assert_eq!(
            v(row(
                "offload-ls",
                64 * MIB,
                (0.008, 9000),
                (0.1, 120000),
                None
            ))
            .as_deref(),
            Some("met (memory; time judged from 1 GiB)")
        );
        assert_eq!(
            v(row("offload-ls", GIB, (0.03, 9000), (0.9, 1000000), None)).as_deref(),
            Some("not met: time 0.033× LLVM")
        );
        assert_eq!(
            v(row("offload-ls", GIB, (0.01, 17000), (0.9, 1000000), None)).as_deref(),
            Some("not met: memory 16.6 MiB")
        );
        assert_eq!(
            v(row(
                "compress",
                GIB,
                (9.0, 20000),
                (10.0, 100000),
                Some(5.0)
            ))
            .as_deref(),
            Some("met")
        );
        assert_eq!(
            v(row(
                "decompress",
                GIB,
                (11.0, 30000),
                (10.0, 100000),
                Some(5.0)
            ))
            .as_deref(),
            Some("not met: time 1.10× LLVM, memory 0.30× LLVM")
        );
        assert_eq!(
            v(row(
                "archive-unbundle",
                0,
                (0.03, 5000),
                (0.1, 100000),
                Some(0.01)
            ))
            .as_deref(),
            Some("not met: time 0.30× LLVM")
        );
        assert_eq!(
            v(row("wrapper-1g", GIB, (1.0, 5000), (9.0, 9000), None)),
            None
        );
    }

    #[test]
    fn every_scenario_has_a_unique_name_and_a_description() {
        for (i, sc) in SCENARIOS.iter().enumerate() {
            assert!(!sc.about.is_empty(), "{}", sc.name);
            assert!(
                SCENARIOS[..i].iter().all(|o| o.name != sc.name),
                "{}",
                sc.name
            );
        }
    }

    #[test]
    fn chart_and_page_cover_every_row() {
        let rows = vec![
            row(
                "bundle-large",
                MIB,
                (0.01, 4000),
                (0.03, 70000),
                Some(0.002),
            ),
            row("bundle-large", GIB, (1.0, 4000), (3.0, 70000), Some(0.9)),
            row("bundle-tiny", 0, (0.002, 3000), (0.03, 70000), None),
        ];
        let svg = chart(&rows);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        // Three series of two points in each of the two panels.
        assert_eq!(svg.matches("<polyline").count(), 6);
        assert!(svg.contains("bundle-tiny"));
        let run = RunInfo {
            args: "--smoke".into(),
            load_before: None,
            load_after: None,
        };
        let md = markdown(&rows, &[("wrapper-1g", GIB, "no memory".into())], &run);
        assert!(md.contains("| bundle-large | 1 GiB | 1 | 1.000 | 3.000 | 0.900 | 0.33 | 1.11 |"));
        assert!(md.contains("wrapper-1g at 1 GiB was skipped: no memory."));
    }
}
