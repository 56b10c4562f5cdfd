//! `cargo xtask install --prefix DIR`: builds every tool in release mode and
//! installs it under DIR, ready for `clang -B DIR/bin` and for `PATH`:
//!
//! * `bin/`: every binary target of the workspace's tool crates, under the
//!   name LLVM gives it (`clang-offload-bundler`, `llvm-offload-binary`,
//!   `clang-offload-packager`, ...): the list comes from cargo's build
//!   messages, so a new tool crate is installed without a change here;
//! * `share/man/man1/`: the man pages, from `cargo xtask man` (generated from
//!   the option tables that also make `--help`), when the workspace has it;
//! * the man pages and shell completions of the tools that have their own
//!   command line (the `offload` inspector: `offload man --dir` writes
//!   `offload.1` and `offload-ls.1`, `offload-extract.1`, ... one per
//!   subcommand; `offload completions SHELL`).
//!
//! Compression: the tools link the system's libzstd and zlib (as LLVM does,
//! so compressed output is byte-identical to LLVM's) when pkg-config finds
//! libzstd; otherwise, or with `--vendored`, they are built with the bundled
//! zstd and pure-Rust deflate, and this says so loudly.
//!
//! `--check` then tests the installed prefix: the expected files, each tool's
//! `--version` (and the identification output), a tool found through `PATH`,
//! and `clang-22 -B DIR/bin` building the README's HIP example with our
//! bundler, byte-identical to a plain `clang-22` build.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::{llvm22, workspace_root};

/// The shells `offload completions` is asked for, and where each looks.
const COMPLETIONS: &[(&str, &str)] = &[
    ("bash", "share/bash-completion/completions/{}"),
    ("zsh", "share/zsh/site-functions/_{}"),
    ("fish", "share/fish/vendor_completions.d/{}.fish"),
];

struct Options {
    prefix: PathBuf,
    vendored: bool,
    check: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut prefix = None;
    let (mut vendored, mut check) = (false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => prefix = Some(PathBuf::from(it.next().ok_or("--prefix needs a value")?)),
            "--vendored" => vendored = true,
            "--check" => check = true,
            _ => {
                return Err(format!(
                    "unknown argument {a} (usage: install --prefix DIR [--vendored] [--check])"
                ))
            }
        }
    }
    let prefix = prefix.ok_or("usage: cargo xtask install --prefix DIR [--vendored] [--check]")?;
    // Absolute, so that what clang is told with -B does not depend on the
    // directory it runs in.
    let prefix = std::path::absolute(&prefix).map_err(|e| e.to_string())?;
    Ok(Options {
        prefix,
        vendored,
        check,
    })
}

/// Whether pkg-config finds the libzstd the default build links.
fn system_zstd_available() -> bool {
    Command::new("pkg-config")
        .args(["--exists", "libzstd"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Builds the tools; the paths of the binaries cargo made.
fn build(vendored: bool) -> Result<Vec<PathBuf>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root()).args([
        "build",
        "--release",
        "--workspace",
        "--exclude",
        "xtask",
        "--bins",
        "--message-format=json-render-diagnostics",
    ]);
    if vendored {
        cmd.arg("--no-default-features");
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running cargo build: {e}"))?;
    if !out.status.success() {
        return Err("cargo build --release of the tools failed".into());
    }
    // One JSON object per line; a binary's artifact line carries its path as
    // "executable":"...". Paths of a cargo target directory need no JSON
    // unescaping beyond `\\` and `\"`, which a path here never holds.
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.contains(r#""reason":"compiler-artifact""#) {
            continue;
        }
        if let Some(rest) = line.split(r#""executable":""#).nth(1) {
            if let Some(path) = rest.split('"').next() {
                bins.push(PathBuf::from(path));
            }
        }
    }
    bins.sort();
    bins.dedup();
    if bins.is_empty() {
        return Err("cargo build reported no binaries".into());
    }
    Ok(bins)
}

/// Copies `from` to `to` through a temporary name in `to`'s directory, so
/// that a tool in use is replaced whole (a running binary keeps its inode).
fn install_file(from: &Path, to: &Path) -> Result<(), String> {
    let tmp = to.with_extension("xtask-install-tmp");
    fs::copy(from, &tmp)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), tmp.display()))?;
    fs::rename(&tmp, to).map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), to.display()))
}

pub fn run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let vendored = o.vendored || !system_zstd_available();
    if vendored && !o.vendored {
        eprintln!(
            "\nWARNING: pkg-config does not find libzstd (Debian: apt-get install pkg-config \
             libzstd-dev zlib1g-dev).\nWARNING: building with the bundled zstd 1.5.7 and \
             pure-Rust deflate instead: `-compress` and `--offload-compress` output can \
             differ from LLVM's.\n"
        );
    }
    let bins = build(vendored)?;
    let bin_dir = o.prefix.join("bin");
    fs::create_dir_all(&bin_dir).map_err(|e| format!("{}: {e}", bin_dir.display()))?;
    let mut installed = Vec::new();
    for b in &bins {
        let name = b.file_name().ok_or("a binary without a name")?;
        let to = bin_dir.join(name);
        install_file(b, &to)?;
        installed.push(to);
    }

    // Man pages, when the workspace can make them (`cargo xtask man`).
    let man_dir = o.prefix.join("share/man/man1");
    if let Some((_, man, _)) = crate::TASKS.iter().find(|(n, _, _)| *n == "man") {
        fs::create_dir_all(&man_dir).map_err(|e| format!("{}: {e}", man_dir.display()))?;
        man(&["--out".to_string(), man_dir.to_string_lossy().into_owned()])?;
        installed.extend(files_in(&man_dir)?);
    } else {
        eprintln!("install: no `cargo xtask man` in this workspace yet: no man pages installed");
    }

    // The tools with a command line of their own (not LLVM's) make their
    // man pages and shell completions.
    for b in &installed.clone() {
        if b.parent() != Some(&bin_dir) || b.file_name().and_then(|n| n.to_str()) != Some("offload")
        {
            continue;
        }
        // offload(1) and a page per subcommand (offload-ls(1), ...), all
        // from its clap definitions.
        let out = Command::new(b)
            .args(["man", "--dir"])
            .arg(&man_dir)
            .output()
            .map_err(|e| format!("{}: {e}", b.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} man --dir failed: {}",
                b.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for page in String::from_utf8_lossy(&out.stdout).lines() {
            let page = PathBuf::from(page);
            if !installed.contains(&page) {
                installed.push(page);
            }
        }
        for (shell, pattern) in COMPLETIONS {
            let out = Command::new(b)
                .args(["completions", shell])
                .output()
                .map_err(|e| format!("{}: {e}", b.display()))?;
            if !out.status.success() {
                return Err(format!("{} completions {shell} failed", b.display()));
            }
            let to = o.prefix.join(pattern.replace("{}", "offload"));
            if let Some(dir) = to.parent() {
                fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            fs::write(&to, &out.stdout).map_err(|e| format!("{}: {e}", to.display()))?;
            installed.push(to);
        }
    }

    println!("installed under {}:", o.prefix.display());
    for f in &installed {
        println!("  {}", f.strip_prefix(&o.prefix).unwrap_or(f).display());
    }
    println!(
        "use: clang-22 -B {} ...   or   PATH={}:$PATH",
        bin_dir.display(),
        bin_dir.display()
    );
    if o.check {
        check(&o.prefix, &installed, vendored)?;
        println!("install --check: all good");
    }
    Ok(())
}

fn files_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// The clean-prefix test: what was installed is there and works.
fn check(prefix: &Path, installed: &[PathBuf], vendored: bool) -> Result<(), String> {
    let bin_dir = prefix.join("bin");
    // The drop-in tools, by the names clang looks for.
    let mut expected = vec![
        "clang-offload-bundler",
        "llvm-offload-binary",
        "clang-offload-packager",
        "llvm-offload-wrapper",
        "clang-offload-wrapper",
    ];
    if workspace_root().join("crates/offload").is_dir() {
        expected.push("offload");
        for sub in ["ls", "extract", "thin", "completions", "man"] {
            let page = prefix.join(format!("share/man/man1/offload-{sub}.1"));
            if !installed.contains(&page) {
                return Err(format!("{} is not installed", page.display()));
            }
        }
        for (_, pattern) in COMPLETIONS {
            let f = prefix.join(pattern.replace("{}", "offload"));
            if !installed.contains(&f) {
                return Err(format!("{} is not installed", f.display()));
            }
        }
    }
    for name in &expected {
        let p = bin_dir.join(name);
        if !installed.contains(&p) {
            return Err(format!("{} is not installed", p.display()));
        }
    }
    let man_dir = prefix.join("share/man/man1");
    let have_man = crate::TASKS.iter().any(|(n, _, _)| *n == "man");
    for f in installed {
        let meta = fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
        if meta.len() == 0 {
            return Err(format!("{} is empty", f.display()));
        }
        if f.parent() == Some(&bin_dir) {
            // Every binary answers --version; with OFFLOAD_TOOLS_VERSION it
            // names the project and the compression libraries.
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let out = Command::new(f)
                .arg("--version")
                .env("OFFLOAD_TOOLS_VERSION", "1")
                .output()
                .map_err(|e| format!("{}: {e}", f.display()))?;
            let text = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() || text.trim().is_empty() {
                return Err(format!(
                    "{name} --version: status {:?}, output {text:?}",
                    out.status
                ));
            }
            // The drop-in tools print LLVM's version text, then the
            // identification; `offload` has a version of its own. The
            // wrappers compress nothing: they name the libraries only when
            // a workspace build links them anyway.
            let names_libraries =
                !name.ends_with("-offload-wrapper") || text.contains("compression:");
            if name != "offload" && names_libraries {
                let want = if vendored {
                    "(bundled)"
                } else {
                    "(system libzstd)"
                };
                if !text.contains("offload-tools ") || !text.contains(want) {
                    return Err(format!("{name}: the identification lacks {want}: {text:?}"));
                }
            }
            if (have_man || name == "offload") && !man_dir.join(format!("{name}.1")).is_file() {
                return Err(format!("no man page for {name} in {}", man_dir.display()));
            }
            let shown = text.lines().find(|l| l.contains("offload-tools"));
            println!(
                "  ok {name}: {}",
                shown.or(text.lines().next()).unwrap_or_default()
            );
        }
    }
    // Found through PATH, before LLVM's.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir.clone()];
    dirs.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(dirs).map_err(|e| e.to_string())?;
    let out = Command::new("sh")
        .args(["-c", "command -v clang-offload-bundler"])
        .env("PATH", &path)
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if Path::new(&found) != bin_dir.join("clang-offload-bundler") {
        return Err(format!("on PATH, clang-offload-bundler is {found:?}"));
    }
    println!("  ok PATH finds {found}");

    // clang-22 -B: the README's HIP example, compressed; clang must run our
    // bundler, and the object must equal a plain clang-22 build's.
    let Some(clang) = llvm22("clang") else {
        println!("  skipped clang-22 -B: clang-22 is not installed");
        return Ok(());
    };
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let source = workspace_root().join("docs/examples/k.hip");
    let hip = |b: Option<&Path>, extra: &[&str], out: &Path| {
        let mut cmd = Command::new(&clang);
        if let Some(b) = b {
            cmd.arg("-B").arg(b);
        }
        cmd.args(crate::harness::HIP_GFX906_ARGS)
            .args(["--offload-compress", "-c"])
            .args(extra)
            .arg(&source)
            .arg("-o")
            .arg(out)
            .output()
            .map_err(|e| format!("clang-22: {e}"))
    };
    let plan = hip(Some(&bin_dir), &["-###"], &tmp.path().join("x.o"))?;
    let plan = String::from_utf8_lossy(&plan.stderr);
    let ours = format!("\"{}\"", bin_dir.join("clang-offload-bundler").display());
    if !plan.contains(&ours) {
        return Err(format!(
            "clang-22 -B {} does not run {ours}:\n{plan}",
            bin_dir.display()
        ));
    }
    let (a, b) = (tmp.path().join("ours.o"), tmp.path().join("llvm.o"));
    for (dir, out) in [(Some(bin_dir.as_path()), &a), (None, &b)] {
        let r = hip(dir, &[], out)?;
        if !r.status.success() {
            return Err(format!(
                "clang-22 on k.hip failed:\n{}",
                String::from_utf8_lossy(&r.stderr)
            ));
        }
    }
    let same =
        fs::read(&a).map_err(|e| e.to_string())? == fs::read(&b).map_err(|e| e.to_string())?;
    if !same && !vendored {
        return Err(
            "clang-22 -B with the installed bundler: the object differs from LLVM's".into(),
        );
    }
    println!(
        "  ok clang-22 -B {} -x hip --offload-compress -c k.hip (object {} plain clang-22's)",
        bin_dir.display(),
        if same {
            "identical to"
        } else {
            "differs from (bundled zstd)"
        }
    );
    Ok(())
}
