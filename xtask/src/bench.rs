//! `cargo xtask bench`: wall time and peak memory of our tools against
//! LLVM 22's and against the physical floor (`cp`, `cat`, the `zstd`
//! command) on the same inputs, alternating in one run.
//!
//! Each measurement is one child process; peak memory is that child's
//! maximum resident set size from wait4(2). Results are medians over the
//! repetitions, reported as ratios so that machines can be compared.

use crate::harness::{our_bin_dir, workspace_root, Rng};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One program run to measure.
#[derive(Clone)]
struct Cmd {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Cmd {
    fn new(program: impl Into<PathBuf>, args: &[&str]) -> Cmd {
        Cmd {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
        }
    }
}

/// Wall seconds and peak RSS in KiB of one run.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    maxrss_kib: u64,
}

fn measure(cmd: &Cmd, dir: &Path) -> Result<Sample, String> {
    let start = Instant::now();
    let child = Command::new(&cmd.program)
        .args(&cmd.args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", cmd.program.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: plain FFI call on a child we spawned and have not reaped;
    // `status` and `usage` are valid, writable locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    if r != pid {
        return Err(format!("wait4 failed for {}", cmd.program.display()));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let mut err = String::new();
        if let Some(mut e) = child.stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        return Err(format!(
            "{} {:?} failed (status {status}): {err}",
            cmd.program.display(),
            cmd.args
        ));
    }
    Ok(Sample {
        secs,
        maxrss_kib: usage.ru_maxrss as u64,
    })
}

/// A scenario: inputs made for a size, and the three commands to compare.
struct Scenario {
    name: &'static str,
    /// Whether the input size matters (else it runs once per repetition
    /// at a fixed size).
    scales: bool,
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
}

impl Tools {
    fn ours(&self, tool: &str, args: &[&str]) -> Cmd {
        Cmd::new(self.ours.join(tool), args)
    }
    fn llvm(&self, tool: &str, args: &[&str]) -> Cmd {
        Cmd::new(self.llvm.join(tool), args)
    }
}

/// Writes `size` bytes of data that compresses roughly 3:1, streaming.
fn semi_compressible(path: &Path, size: u64, seed: u64) -> Result<(), String> {
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
    let mut buf = Vec::with_capacity(1 << 16);
    while left > 0 {
        buf.clear();
        while buf.len() < (1 << 16) {
            if rng.chance(1, 4) {
                buf.extend_from_slice(&rng.bytes(8));
            } else {
                let word: &Vec<u8> = rng.pick(&words);
                buf.extend_from_slice(word);
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
            .push(name(i).as_bytes(), m.len() as u64, &member_symbols(&m)?)
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
fn host_and_device(d: &Path, size: u64, seed: u64) -> Result<(), String> {
    fs::write(d.join("h.bc"), b"host\n").map_err(|e| e.to_string())?;
    semi_compressible(&d.join("g.bc"), size, seed)
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
    Trio {
        ours: t.ours("clang-offload-bundler", &args),
        llvm: t.llvm("clang-offload-bundler", &args),
        floor,
    }
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "bundle-tiny",
        scales: false,
        setup: |d, _, t| {
            host_and_device(d, 7, 0)?;
            Ok(bundle_trio(t, &[], None))
        },
    },
    Scenario {
        name: "bundle-large",
        scales: true,
        setup: |d, size, t| {
            host_and_device(d, size, 1)?;
            let floor = Cmd::new("cp", &[&p(d, "g.bc"), &p(d, "floor.out")]);
            Ok(bundle_trio(t, &[], Some(floor)))
        },
    },
    Scenario {
        name: "unbundle-large",
        scales: true,
        setup: |d, size, t| {
            host_and_device(d, size, 2)?;
            let made = Command::new(t.llvm.join("clang-offload-bundler"))
                .current_dir(d)
                .args([
                    "-type=bc",
                    BUNDLE_TARGETS,
                    "-input=h.bc",
                    "-input=g.bc",
                    "-output=b.bc",
                ])
                .status()
                .map_err(|e| e.to_string())?;
            if !made.success() {
                return Err("making the bundle failed".into());
            }
            let args = [
                "-type=bc",
                BUNDLE_TARGETS,
                "-unbundle",
                "-input=b.bc",
                "-output=h.out",
                "-output=g.out",
            ];
            Ok(Trio {
                ours: t.ours("clang-offload-bundler", &args),
                llvm: t.llvm("clang-offload-bundler", &args),
                floor: Some(Cmd::new("cp", &[&p(d, "b.bc"), &p(d, "floor.out")])),
            })
        },
    },
    Scenario {
        name: "compress",
        scales: true,
        setup: |d, size, t| {
            host_and_device(d, size, 3)?;
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
        scales: true,
        setup: |d, size, t| {
            host_and_device(d, size, 5)?;
            run_in(
                d,
                &t.llvm.join("clang-offload-bundler"),
                &[
                    "-type=bc",
                    "-compress",
                    BUNDLE_TARGETS,
                    "-input=h.bc",
                    "-input=g.bc",
                    "-output=b.bc",
                ],
            )?;
            run_in(
                d,
                Path::new("zstd"),
                &["-q", "-f", "-3", "--long", "g.bc", "-o", "g.zst"],
            )?;
            let args = [
                "-type=bc",
                BUNDLE_TARGETS,
                "-unbundle",
                "-input=b.bc",
                "-output=h.out",
                "-output=g.out",
            ];
            Ok(Trio {
                ours: t.ours("clang-offload-bundler", &args),
                llvm: t.llvm("clang-offload-bundler", &args),
                floor: Some(Cmd::new(
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
                )),
            })
        },
    },
    Scenario {
        name: "archive-unbundle",
        scales: false,
        setup: |d, _, t| {
            device_archive(d, 1000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-4k",
        scales: false,
        setup: |d, _, t| {
            device_archive(d, 4000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-16k",
        scales: false,
        setup: |d, _, t| {
            device_archive(d, 16000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "archive-unbundle-hip",
        scales: false,
        setup: |d, _, t| {
            hip_device_archive(d, 1000)?;
            Ok(archive_unbundle_trio(d, t))
        },
    },
    Scenario {
        name: "package-large",
        scales: true,
        setup: |d, size, t| {
            semi_compressible(&d.join("dev.o"), size, 4)?;
            let args = [
                "-o",
                "out.bin",
                "--image=file=dev.o,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp",
            ];
            Ok(Trio {
                ours: t.ours("llvm-offload-binary", &args),
                llvm: t.llvm("llvm-offload-binary", &args),
                floor: Some(Cmd::new("cp", &[&p(d, "dev.o"), &p(d, "floor.out")])),
            })
        },
    },
];

struct Row {
    scenario: &'static str,
    size: u64,
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

fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mul) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| format!("bad size {s}"))
}

fn human(size: u64) -> String {
    if size >= 1 << 30 {
        format!("{} GiB", size >> 30)
    } else if size >= 1 << 20 {
        format!("{} MiB", size >> 20)
    } else {
        format!("{} KiB", size >> 10)
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut sizes = vec![1 << 20, 16 << 20, 256 << 20];
    let mut reps = 5;
    let mut only: Vec<String> = Vec::new();
    let mut write_docs = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => {
                sizes = vec![1 << 20];
                reps = 1;
            }
            "--reps" => reps = it.next().and_then(|v| v.parse().ok()).ok_or("--reps N")?,
            "--sizes" => {
                sizes = it
                    .next()
                    .ok_or("--sizes LIST")?
                    .split(',')
                    .map(parse_size)
                    .collect::<Result<_, _>>()?
            }
            "--write-docs" => write_docs = true,
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s => only.push(s.to_string()),
        }
    }
    let tools = Tools {
        ours: our_bin_dir()?,
        llvm: PathBuf::from("/usr/lib/llvm-22/bin"),
    };
    if !tools.llvm.join("clang-offload-bundler").exists() {
        return Err("LLVM 22 tools are not installed".into());
    }
    let scratch = tempfile::Builder::new()
        .prefix("bench-")
        .tempdir_in(workspace_root().join("target"))
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for sc in SCENARIOS {
        if !only.is_empty() && !only.iter().any(|o| o == sc.name) {
            continue;
        }
        let sizes_here: Vec<u64> = if sc.scales { sizes.clone() } else { vec![0] };
        for &size in &sizes_here {
            let dir = scratch.path().join(format!("{}-{size}", sc.name));
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let (mut o, mut l, mut f) = (Vec::new(), Vec::new(), Vec::new());
            let measured = (|| -> Result<(), String> {
                let trio = (sc.setup)(&dir, size, &tools)?;
                for _ in 0..reps {
                    // Alternate so drifting machine load hits every side alike.
                    o.push(measure(&trio.ours, &dir)?);
                    l.push(measure(&trio.llvm, &dir)?);
                    if let Some(fl) = &trio.floor {
                        f.push(measure(fl, &dir)?);
                    }
                }
                Ok(())
            })();
            if let Err(e) = measured {
                let kept = scratch.keep();
                return Err(format!("{e}\n(inputs kept in {})", kept.display()));
            }
            let row = Row {
                scenario: sc.name,
                size,
                ours: median(&mut o),
                llvm: median(&mut l),
                floor: (!f.is_empty()).then(|| median(&mut f)),
            };
            println!("{}", format_row(&row));
            rows.push(row);
            let _ = fs::remove_dir_all(&dir);
        }
    }
    if write_docs {
        let docs = workspace_root().join("docs/bench");
        fs::create_dir_all(&docs).map_err(|e| e.to_string())?;
        fs::write(docs.join("results.md"), markdown(&rows, reps)).map_err(|e| e.to_string())?;
        fs::write(docs.join("chart.svg"), chart(&rows)).map_err(|e| e.to_string())?;
        println!("wrote docs/bench/results.md and docs/bench/chart.svg");
    }
    Ok(())
}

fn format_row(r: &Row) -> String {
    let mut s =
        format!(
        "{:<16} {:>8}  ours {:>8.3}s {:>8} KiB | llvm {:>8.3}s {:>8} KiB | time x{:.2} mem x{:.2}",
        r.scenario,
        if r.size == 0 { "-".into() } else { human(r.size) },
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
    s
}

fn markdown(rows: &[Row], reps: usize) -> String {
    let mut s = String::from("# Benchmark results\n\n");
    let _ = writeln!(
        s,
        "Made by `cargo xtask bench --write-docs` ({reps} repetitions, medians; \
         peak memory is the child's maximum RSS). Ratios below 1 favour ours.\n"
    );
    s.push_str("| scenario | size | ours (s) | LLVM 22 (s) | floor (s) | ours/LLVM time | ours/floor time | ours (MiB) | LLVM (MiB) | ours/LLVM memory |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {} | {:.2} | {} | {:.1} | {:.1} | {:.2} |",
            r.scenario,
            if r.size == 0 {
                "-".into()
            } else {
                human(r.size)
            },
            r.ours.secs,
            r.llvm.secs,
            r.floor
                .map(|f| format!("{:.3}", f.secs))
                .unwrap_or("-".into()),
            r.ours.secs / r.llvm.secs,
            r.floor
                .map(|f| format!("{:.2}", r.ours.secs / f.secs))
                .unwrap_or("-".into()),
            r.ours.maxrss_kib as f64 / 1024.0,
            r.llvm.maxrss_kib as f64 / 1024.0,
            r.ours.maxrss_kib as f64 / r.llvm.maxrss_kib as f64,
        );
    }
    s
}

/// A small SVG: per scaling scenario, time and memory against input size
/// (log-log), ours solid and LLVM dashed.
fn chart(rows: &[Row]) -> String {
    let scaled: Vec<&Row> = rows.iter().filter(|r| r.size > 0).collect();
    let (w, h, pad) = (900.0, 420.0, 60.0);
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{}' font-family='sans-serif' font-size='12'>\n",
        h * 2.0 + 40.0
    );
    if scaled.is_empty() {
        s.push_str("</svg>\n");
        return s;
    }
    let names: Vec<&str> = {
        let mut v: Vec<&str> = scaled.iter().map(|r| r.scenario).collect();
        v.dedup();
        v
    };
    let colours = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    ];
    let lx = |v: f64| v.max(1e-9).log10();
    let xs: Vec<f64> = scaled.iter().map(|r| lx(r.size as f64)).collect();
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::MAX, f64::min),
        xs.iter().cloned().fold(f64::MIN, f64::max).max(xs[0] + 1.0),
    );
    for (panel, title, get) in [
        (
            0.0,
            "wall time (s, log)",
            (|s: &Sample| s.secs) as fn(&Sample) -> f64,
        ),
        (1.0, "peak memory (MiB, log)", |s: &Sample| {
            s.maxrss_kib as f64 / 1024.0
        }),
    ] {
        let top = panel * (h + 20.0) + 20.0;
        let vals: Vec<f64> = scaled
            .iter()
            .flat_map(|r| [lx(get(&r.ours)), lx(get(&r.llvm))])
            .collect();
        let y0 = vals.iter().cloned().fold(f64::MAX, f64::min);
        let y1 = vals.iter().cloned().fold(f64::MIN, f64::max).max(y0 + 1.0);
        let px = |x: f64| pad + (x - x0) / (x1 - x0) * (w - 2.0 * pad);
        let py = |y: f64| top + h - pad - (y - y0) / (y1 - y0) * (h - 2.0 * pad);
        let _ = writeln!(
            s,
            "<text x='{pad}' y='{}'>{title} against input size (log)</text>",
            top + 14.0
        );
        let _ = writeln!(
            s,
            "<rect x='{pad}' y='{}' width='{}' height='{}' fill='none' stroke='#999'/>",
            top + pad,
            w - 2.0 * pad,
            h - 2.0 * pad
        );
        for (i, name) in names.iter().enumerate() {
            let c = colours[i % colours.len()];
            for (side, dash) in [(0, ""), (1, " stroke-dasharray='5,4'")] {
                let pts: Vec<String> = scaled
                    .iter()
                    .filter(|r| r.scenario == *name)
                    .map(|r| {
                        let v = if side == 0 {
                            get(&r.ours)
                        } else {
                            get(&r.llvm)
                        };
                        format!("{:.1},{:.1}", px(lx(r.size as f64)), py(lx(v)))
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "<polyline fill='none' stroke='{c}' stroke-width='2'{dash} points='{}'/>",
                    pts.join(" ")
                );
            }
            let _ = writeln!(
                s,
                "<text x='{}' y='{}' fill='{c}'>{name} (solid: ours, dashed: LLVM 22)</text>",
                w - pad - 330.0,
                top + pad + 16.0 + 14.0 * i as f64
            );
        }
        for r in scaled.iter().filter(|r| r.scenario == names[0]) {
            let _ = writeln!(
                s,
                "<text x='{:.1}' y='{}' text-anchor='middle'>{}</text>",
                px(lx(r.size as f64)),
                top + h - pad + 16.0,
                human(r.size)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
