//! Every input gets a plain answer, and a request the tool would not carry
//! out is refused: the symptoms a newcomer's walkthrough found (issue
//! 33), each as the command and what it must print and exit with.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offload"))
        .current_dir(dir)
        .args(args)
        .env("LC_ALL", "C")
        .env_remove("OFFLOAD_TOOLS_VERSION")
        .output()
        .unwrap()
}

/// Runs with `stdin` as standard input.
fn run_stdin(dir: &Path, args: &[&str], stdin: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offload"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::from(fs::File::open(stdin).unwrap()))
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory holding copies of fixtures.
fn with(files: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in files {
        let name = Path::new(f).file_name().unwrap();
        fs::copy(fixture(f), d.path().join(name)).unwrap();
    }
    d
}

fn names_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_missing_file_is_a_plain_error() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        &["ls", "gone.so"][..],
        &["extract", "gone.so"],
        &["thin", "--keep", "gfx90a", "--dry-run", "gone.so"],
    ] {
        let o = run_in(d.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            err(&o).contains("offload: error: gone.so: cannot read: No such file or directory"),
            "{args:?}: {}",
            err(&o)
        );
        assert!(!out(&o).contains("DAMAGE"), "{args:?}: {}", out(&o));
    }
}

#[test]
fn inputs_without_device_code_are_told_plainly() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(p.join("notes.txt"), "hello\n").unwrap();
    fs::write(p.join("empty"), "").unwrap();
    fs::create_dir(p.join("docs")).unwrap();
    fs::write(p.join("docs/a.txt"), "a").unwrap();
    fs::write(p.join("docs/b.txt"), "b").unwrap();
    let o = run_in(p, &["ls", "notes.txt", "empty"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        out(&o),
        "notes.txt: no device code found\nempty: no device code found\n"
    );
    let o = run_in(p, &["ls", "docs"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(out(&o), "docs: no device code found in 2 files\n");
    let o = run_in(p, &["extract", "notes.txt"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o),
        "offload: error: no device code found in notes.txt\n"
    );
    // thin -o: no copy, exit 1; a tree without device code: exit 1 too.
    let o = run_in(p, &["thin", "--keep", "gfx90a", "-o", "out", "notes.txt"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o),
        "offload: error: notes.txt: no device code found; nothing written\n"
    );
    assert!(!p.join("out").exists());
    let o = run_in(p, &["thin", "--keep", "gfx90a", "--in-place", "docs"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("no device code found under docs; nothing to thin"),
        "{}",
        err(&o)
    );
}

#[test]
fn extract_refuses_a_directory_and_its_own_input_as_output() {
    let d = with(&["offload/lib.so"]);
    let p = d.path();
    fs::create_dir(p.join("dir")).unwrap();
    let o = run_in(p, &["extract", "dir"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o),
        "offload: error: dir: a directory; extract reads files (`offload ls dir` lists those \
         with device code)\n"
    );
    let before = fs::read(p.join("lib.so")).unwrap();
    let o = run_in(
        p,
        &[
            "extract",
            "--bundle",
            "0",
            "--target",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "-o",
            "lib.so",
            "lib.so",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("-o lib.so: that is the input lib.so"),
        "{}",
        err(&o)
    );
    assert_eq!(fs::read(p.join("lib.so")).unwrap(), before);
}

/// `-` is standard input for every subcommand: the same entries as the
/// file, a wheel included.
#[test]
fn standard_input_reads_as_the_file_does() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let lib = fixture("offload/lib.so");
    let o = run_stdin(p, &["ls", "--format=llvm", "-"], &lib);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).lines().count(), 6);
    let args = [
        "extract", "--bundle", "1", "--target", "gfx90a", "-o", "-", "-",
    ];
    let o = run_stdin(p, &args, &lib);
    assert!(o.status.success(), "{}", err(&o));
    let mut file_args = args;
    file_args[7] = lib.to_str().unwrap();
    assert_eq!(o.stdout, run_in(p, &file_args).stdout);
    let o = run_stdin(p, &["thin", "--keep", "gfx906", "-o", "t.so", "-"], &lib);
    assert!(o.status.success(), "{}", err(&o));
    let o = run_in(
        p,
        &[
            "thin",
            "--keep",
            "gfx906",
            "-o",
            "u.so",
            lib.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        fs::read(p.join("t.so")).unwrap(),
        fs::read(p.join("u.so")).unwrap()
    );
    // A wheel on standard input: its members are read from it.
    let wheel = fixture("wheel/demo-1.0-py3-none-any.whl");
    fs::create_dir(p.join("w")).unwrap();
    let o = run_stdin(
        &p.join("w"),
        &["extract", "--target", "sm_90a", "-"],
        &wheel,
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(!names_in(&p.join("w")).is_empty());
}

#[test]
fn a_keep_matching_nothing_fails_alike_on_a_wheel_and_a_tree() {
    let d = with(&["wheel/demo-1.0-py3-none-any.whl"]);
    let p = d.path();
    let o = run_in(
        p,
        &[
            "thin",
            "--keep",
            "sm_70",
            "-o",
            "out.whl",
            "demo-1.0-py3-none-any.whl",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("--keep sm_70 matches no entry of demo-1.0-py3-none-any.whl"),
        "{}",
        err(&o)
    );
    assert!(!p.join("out.whl").exists());
    fs::create_dir(p.join("tree")).unwrap();
    fs::copy(
        p.join("demo-1.0-py3-none-any.whl"),
        p.join("tree/demo-1.0-py3-none-any.whl"),
    )
    .unwrap();
    let o = run_in(p, &["thin", "--keep", "sm_70", "--dry-run", "tree"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("--keep sm_70 matches no entry"),
        "{}",
        err(&o)
    );
}

/// A wheel's containers are numbered across it, by `ls`, `extract
/// --bundle` and `thin` alike.
#[test]
fn one_container_numbering_in_a_wheel() {
    let d = with(&["wheel/demo-1.0-py3-none-any.whl"]);
    let p = d.path();
    let ls = out(&run_in(p, &["ls", "demo-1.0-py3-none-any.whl"]));
    let thin = out(&run_in(
        p,
        &[
            "thin",
            "--keep",
            "sm_90",
            "--dry-run",
            "demo-1.0-py3-none-any.whl",
        ],
    ));
    // speed.o's one container is the wheel's last (#5): thin says so too.
    assert!(ls.contains("fatbin #5"), "{ls}");
    assert!(thin.contains("fatbin #5 @"), "{thin}");
    assert!(!thin.contains("fatbin #0 @ 0x710"), "{thin}");
    let o = run_in(
        p,
        &[
            "extract",
            "--bundle",
            "5",
            "--target",
            "sm_80",
            "-d",
            "x",
            "demo-1.0-py3-none-any.whl",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("speed."), "{}", out(&o));
}

#[test]
fn conflicting_or_impossible_options_are_refused() {
    let d = with(&["offload/lib.so", "thin/libhipz.so"]);
    let p = d.path();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "thin",
                "--keep",
                "gfx906",
                "--drop",
                "gfx906",
                "--dry-run",
                "lib.so",
            ],
            "--keep gfx906 and --drop gfx906 contradict each other",
        ),
        (
            &[
                "thin",
                "--keep",
                "gfx906",
                "--compression-level",
                "-5",
                "-o",
                "o",
                "libhipz.so",
            ],
            "invalid value '-5' for '--compression-level <N>'",
        ),
        (
            &[
                "thin",
                "--keep",
                "gfx906",
                "--compression-level",
                "99",
                "-o",
                "o",
                "libhipz.so",
            ],
            "invalid value '99' for '--compression-level <N>'",
        ),
        (
            &["ls", "--summary", "--format=llvm", "lib.so"],
            "'--summary' cannot be used with '--format <FORMAT>'",
        ),
        (
            &["ls", "--summary", "--verify", "lib.so"],
            "'--summary' cannot be used with '--verify'",
        ),
        (
            &["thin", "--keep", "sm_95", "--dry-run", "lib.so"],
            "--keep sm_95: no CUDA GPU has compute capability 9.5",
        ),
        (
            &["extract", "--target", "gfx999", "lib.so"],
            "--target gfx999: not an AMD GPU: unknown processor 'gfx999'",
        ),
        (
            &["extract", "--target", "sm_95", "lib.so"],
            "--target sm_95: no CUDA GPU has compute capability 9.5",
        ),
    ];
    for (args, needle) in cases {
        let o = run_in(p, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(
            err(&o).starts_with("offload: error: "),
            "{args:?}: {}",
            err(&o)
        );
        assert!(err(&o).contains(needle), "{args:?}: {}", err(&o));
        assert!(!p.join("o").exists(), "{args:?}");
    }
}

#[test]
fn version_and_help() {
    let p = std::env::temp_dir();
    let plain = out(&run_in(&p, &["--version"]));
    assert_eq!(plain, format!("offload {}\n", env!("CARGO_PKG_VERSION")));
    let o = Command::new(env!("CARGO_BIN_EXE_offload"))
        .arg("--version")
        .env("OFFLOAD_TOOLS_VERSION", "1")
        .output()
        .unwrap();
    let long = out(&o);
    assert!(long.starts_with(&format!("offload {} (commit ", env!("CARGO_PKG_VERSION"))));
    assert!(long.contains("compression: "), "{long}");
    let help = out(&run_in(&p, &["--help"]));
    for word in ["thin", "trees", "wheel"] {
        assert!(help.contains(word), "{word}: {help}");
    }
    let thin = out(&run_in(&p, &["thin", "--help"]));
    let thin = thin.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        thin.starts_with(
            "Rewrite files, trees and wheels without the device code of unwanted GPUs, \
             smaller (to -o FILE, --in-place, or a --dry-run report)"
        ),
        "{thin}"
    );
    // One error style for usage errors too.
    let o = run_in(&p, &["ls", "--no-such-option", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).starts_with("offload: error: unexpected argument"),
        "{}",
        err(&o)
    );
}

/// What `extract --help` and the top-level help show is true.
#[test]
fn the_help_examples_of_selection_hold() {
    let d = with(&["offload/lib.so", "nvidia/app"]);
    let p = d.path();
    // `--target gfx90a -d out app`: any xnack setting (lib.so's are xnack+).
    let o = run_in(p, &["extract", "--target", "gfx90a", "-d", "out", "lib.so"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).lines().count(), 2);
    // `--target gfx90a:xnack-`: none of lib.so's runs with xnack off.
    let o = run_in(p, &["extract", "--target", "gfx90a:xnack-", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!err(&o).contains("did you mean"), "{}", err(&o));
    assert!(
        err(&o).contains("no gfx90a entry runs with those settings; gfx90a:xnack+ is present"),
        "{}",
        err(&o)
    );
    // `--target sm_90.cubin --bundle 0 -o - app > k.cubin`.
    let o = run_in(
        p,
        &[
            "extract",
            "--target",
            "sm_90.cubin",
            "--bundle",
            "0",
            "-o",
            "-",
            "app",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(o.stdout.starts_with(b"\x7fELF"));
    // `--target sm_90 app`: cubins and PTX.
    fs::create_dir(p.join("nv")).unwrap();
    let o = run_in(&p.join("nv"), &["extract", "--target", "sm_90", "../app"]);
    assert!(o.status.success(), "{}", err(&o));
    let names = names_in(&p.join("nv"));
    assert!(names.iter().any(|n| n.ends_with(".ptx")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".cubin")), "{names:?}");
    // `extract -o k.co 'file://lib.so#offset=16384&size=3408'`.
    let o = run_in(
        p,
        &[
            "extract",
            "-o",
            "k.co",
            "file://lib.so#offset=16384&size=3408",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let co = fs::read(p.join("k.co")).unwrap();
    assert_eq!(co.len(), 3408);
    assert_eq!(co, fs::read(p.join("lib.so")).unwrap()[16384..16384 + 3408]);
}

/// Every URI `ls --format=llvm` prints, `extract` takes back: the same
/// bytes as `--bundle K --target ID` extracts.
#[test]
fn ls_uris_are_extract_inputs() {
    let d = with(&["offload/lib.so", "wheel/demo-1.0-py3-none-any.whl"]);
    let p = d.path();
    for input in ["lib.so", "demo-1.0-py3-none-any.whl"] {
        let lines = out(&run_in(p, &["ls", "--format=llvm", input]));
        assert!(lines.lines().count() >= 6, "{lines}");
        for line in lines.lines() {
            let (_, uri) = line.split_once('\t').unwrap();
            let o = run_in(p, &["extract", "-o", "-", uri]);
            assert!(o.status.success(), "{uri}: {}", err(&o));
            let frag = uri.rsplit_once('#').unwrap().1;
            let size: usize = frag.split_once("size=").unwrap().1.parse().unwrap();
            assert_eq!(o.stdout.len(), size, "{uri}");
            if input == "lib.so" {
                let offset: usize = frag
                    .strip_prefix("offset=")
                    .unwrap()
                    .split_once('&')
                    .unwrap()
                    .0
                    .parse()
                    .unwrap();
                let bytes = fs::read(p.join("lib.so")).unwrap();
                assert_eq!(o.stdout, bytes[offset..offset + size], "{uri}");
            }
        }
    }
    // A URI beyond the file, or not a URI of ls: refused, nothing written.
    let o = run_in(
        p,
        &["extract", "-o", "x", "file://lib.so#offset=49000&size=1000"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("lie outside the file"), "{}", err(&o));
    let o = run_in(p, &["extract", "file://lib.so#size=3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!p.join("x").exists());
}

/// The summary: two decimals, numeric order, one unit, and no GPU that
/// cannot run the code is suggested.
#[test]
fn the_summary_reads_as_people_read() {
    let d = with(&["nvidia/variants.o", "nvidia/compress-all.o"]);
    let p = d.path();
    let o = run_in(p, &["ls", "--summary", "variants.o", "compress-all.o"]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    // sm_80 before sm_90 before sm_100 before sm_120.
    let at = |a: &str| {
        s.find(&format!(" {a} "))
            .unwrap_or_else(|| panic!("{a}: {s}"))
    };
    assert!(
        at("sm_80") < at("sm_90a") && at("sm_90a") < at("sm_100a"),
        "{s}"
    );
    assert!(at("sm_100f") < at("sm_120a"), "{s}");
    // Percentages with two decimals.
    assert!(s.contains("of the device code"), "{s}");
    let pct: Vec<&str> = s.lines().filter(|l| l.starts_with("  --keep ")).collect();
    assert!(!pct.is_empty(), "{s}");
    for l in &pct {
        let p = l
            .split_whitespace()
            .find(|w| w.ends_with('%'))
            .unwrap_or_else(|| panic!("no percentage: {l}"));
        let number = p.trim_end_matches('%');
        assert_eq!(number.split_once('.').map(|(_, d)| d.len()), Some(2), "{l}");
    }
    // One unit throughout the table.
    let units: Vec<&str> = ["KiB", "MiB", "GiB"]
        .into_iter()
        .filter(|u| s.contains(u))
        .collect();
    assert_eq!(units.len(), 1, "{s}");
    // No other GPU is suggested for a GPU that matches nothing: sm_90
    // code is no answer to a request for sm_90a.
    let o = run_in(
        p,
        &["thin", "--keep", "sm_90a", "--dry-run", "compress-all.o"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("--keep sm_90a matches no entry"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("did you mean"), "{}", err(&o));
    // Each GPU the summary names runs code there: thin keeps something
    // for it (in a tree, as the summary counts).
    fs::create_dir(p.join("t")).unwrap();
    for f in ["variants.o", "compress-all.o"] {
        fs::copy(p.join(f), p.join("t").join(f)).unwrap();
    }
    for gpu in s.lines().filter_map(|l| l.trim().strip_prefix("--keep ")) {
        let gpu = gpu.split_whitespace().next().unwrap();
        let o = run_in(p, &["thin", "--keep", gpu, "--dry-run", "t"]);
        assert!(o.status.success(), "{gpu}: {}", err(&o));
    }
}
