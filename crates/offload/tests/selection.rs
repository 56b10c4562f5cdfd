//! The `offload` command line as a new user meets it (issue 25): options
//! that take one value per occurrence, picking one translation unit,
//! selection mistakes that are errors naming the file and the value, all
//! or nothing across inputs, and a closed standard output.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/offload")
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_offload");
    test_support::tool(exe, dir).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A temporary directory holding copies of fixtures.
fn with(files: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in files {
        fs::copy(fixtures().join(f), tmp.path().join(f)).unwrap();
    }
    tmp
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn keep_and_drop_take_one_value_each_and_lists() {
    let tmp = with(&["lib.so"]);
    let d = tmp.path();
    // The natural order: the option's value, then the file.
    let o = run_in(d, &["thin", "--keep", "gfx90a", "-o", "k.so", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 of 2 containers rewritten"),
        "{}",
        stdout(&o)
    );
    let o = run_in(d, &["thin", "--dry-run", "--keep", "gfx906", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("(dry run)"));
    // Repeated, or as a comma list: the same.
    let a = run_in(
        d,
        &[
            "thin",
            "--dry-run",
            "--drop",
            "gfx906",
            "--drop",
            "gfx90a:xnack+",
            "lib.so",
        ],
    );
    let b = run_in(
        d,
        &[
            "thin",
            "--dry-run",
            "--drop",
            "gfx906,gfx90a:xnack+",
            "lib.so",
        ],
    );
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    assert!(
        stdout(&a).contains("4 entries would be dropped"),
        "{}",
        stdout(&a)
    );
    // --target too.
    let o = run_in(
        d,
        &[
            "extract",
            "--target",
            "gfx906,gfx90a:xnack+",
            "-d",
            "out",
            "lib.so",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 4);
}

#[test]
fn bundle_picks_one_translation_unit() {
    let tmp = with(&["lib.so"]);
    let d = tmp.path();
    let id = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
    // Without --bundle: the error says which --bundle to give.
    let o = run_in(d, &["extract", "--target", id, "-o", "k.co", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("-o writes one entry, but 2 are selected"),
        "{err}"
    );
    assert!(
        err.contains(&format!("lib.so #0 {id}, lib.so #1 {id}")),
        "{err}"
    );
    assert!(err.contains("--bundle 0 or --bundle 1"), "{err}");
    assert!(!d.join("k.co").exists());
    // With it: the entry of that unit, at the place `ls` gives.
    let o = run_in(
        d,
        &[
            "extract", "--bundle", "1", "--target", id, "-o", "k.co", "lib.so",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let lib = fs::read(d.join("lib.so")).unwrap();
    assert_eq!(fs::read(d.join("k.co")).unwrap(), &lib[36864..36864 + 4528]);
    // Standard output the same.
    let o = run_in(d, &["extract", "-b", "1", "-t", id, "-o", "-", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, &lib[36864..36864 + 4528]);
    // Every entry of one unit.
    let o = run_in(d, &["extract", "--bundle", "0", "-d", "u0", "lib.so"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(names_in(&d.join("u0"))
        .iter()
        .all(|n| n.starts_with("lib.so.0.")));
    assert_eq!(names_in(&d.join("u0")).len(), 3);
    // An index the input does not have.
    let o = run_in(d, &["extract", "--bundle", "7", "-o", "-", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains("--bundle 7: lib.so has containers #0 to #1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn selection_mistakes_are_errors_naming_file_and_value() {
    let tmp = with(&["lib.so", "hip.o"]);
    let d = tmp.path();
    // An unknown kind: a usage error with the nearest valid spelling.
    let o = run_in(d, &["extract", "--kind", "hipv5", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("invalid value 'hipv5' for '--kind <K>'"),
        "{err}"
    );
    assert!(err.contains("'hipv4'"), "{err}");
    for k in ["host", "hip", "hipv4", "openmp", "cuda", "sycl"] {
        let o = run_in(d, &["extract", "--kind", k, "-d", "kinds", "lib.so"]);
        assert_ne!(o.status.code(), Some(2), "{k}: {}", stderr(&o));
    }
    // A GPU that does not exist: a usage error with the nearest name,
    // nothing rewritten.
    let before = fs::read(d.join("lib.so")).unwrap();
    let o = run_in(d, &["thin", "--in-place", "--drop", "gfx9o6", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(
        err,
        "offload: error: --drop gfx9o6: not an AMD GPU: unknown processor 'gfx9o6' \
         (did you mean gfx906?)\n"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert_eq!(fs::read(d.join("lib.so")).unwrap(), before);
    // A --drop of a real GPU that matches nothing: an error naming what
    // is there, nothing rewritten.
    let o = run_in(d, &["thin", "--in-place", "--drop", "gfx1100", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("error: --drop gfx1100 matches no entry of lib.so"),
        "{err}"
    );
    assert!(
        err.contains("targets present: gfx906, gfx90a:xnack+"),
        "{err}"
    );
    assert_eq!(fs::read(d.join("lib.so")).unwrap(), before);
    // Matching in one input of several is enough for --drop; the other
    // file's containers are counted.
    let o = run_in(
        d,
        &["thin", "--dry-run", "--drop", "gfx906", "lib.so", "hip.o"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A --keep that matches nothing in a file: an error naming both.
    let o = run_in(d, &["thin", "--dry-run", "--keep", "gfx1030", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--keep gfx1030 matches no entry of lib.so"),
        "{}",
        stderr(&o)
    );
    // --target: names the files and what is present.
    let o = run_in(
        d,
        &[
            "extract", "--target", "gfx1030", "-o", "-", "lib.so", "hip.o",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains("--target gfx1030 matches no entry of lib.so and hip.o"),
        "{}",
        stderr(&o)
    );
    // A GPU that does not exist: refused, with the nearest name.
    let o = run_in(d, &["extract", "--target", "gfx9066", "-o", "-", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains(
            "--target gfx9066: not an AMD GPU: unknown processor 'gfx9066' (did you mean gfx906?)"
        ),
        "{}",
        stderr(&o)
    );
    // Nothing selected by target and kind together: the files and the
    // selection are named, and no note contradicts it.
    let o = run_in(
        d,
        &[
            "extract", "--target", "gfx906", "--kind", "openmp", "lib.so",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("no entry of lib.so matches the selection (--target gfx906 --kind openmp)"),
        "{err}"
    );
    assert!(!err.contains("present"), "{err}");
    assert_eq!(names_in(d), ["hip.o", "kinds", "lib.so"]);
}

#[test]
fn extract_is_all_or_nothing_across_inputs() {
    let tmp = with(&["hip.o"]);
    let d = tmp.path();
    let o = run_in(d, &["extract", "hip.o", "missing.o"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("missing.o: cannot read"), "{err}");
    assert!(err.contains("nothing extracted: missing.o"), "{err}");
    assert_eq!(names_in(d), ["hip.o"]);
    let o = run_in(d, &["extract", "-o", "-", "hip.o", "missing.o"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    // -d: the directory is not left behind either.
    let o = run_in(d, &["extract", "-d", "out", "hip.o", "missing.o"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!d.join("out").exists());
}

/// Runs `offload ARGS`, reads one line of its standard output and closes
/// it; the status it then exits with.
fn first_line_then_close(args: &[&str]) -> (String, Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_offload"))
        .args(args)
        .current_dir(fixtures())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        // Dropped here: the pipe is closed.
    }
    let o = child.wait_with_output().unwrap();
    (line, o.status.code(), stderr(&o))
}

#[test]
fn a_closed_standard_output_ends_the_output() {
    // Far more than a pipe holds, so that the writes after the close fail.
    let mut many = vec!["ls", "--format=llvm"];
    many.extend(std::iter::repeat_n("lib.so", 400));
    let mut tree = vec!["ls"];
    tree.extend(std::iter::repeat_n("lib.so", 100));
    for args in [
        &["completions", "bash"][..],
        &["completions", "zsh"],
        &["man"],
        &["man", "thin"],
        &many,
        &tree,
        &["--help"],
    ] {
        let (line, code, err) = first_line_then_close(args);
        assert!(!line.is_empty(), "{args:?}");
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn a_man_page_for_every_subcommand() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let o = run_in(tmp.path(), &["man", "--dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pages = [
        "offload-completions.1",
        "offload-extract.1",
        "offload-ls.1",
        "offload-man.1",
        "offload-size.1",
        "offload-thin.1",
        "offload.1",
    ];
    assert_eq!(names_in(&dir), pages);
    assert_eq!(stdout(&o).lines().count(), pages.len());
    for p in pages {
        let text = fs::read_to_string(dir.join(p)).unwrap();
        assert!(text.starts_with(".ie"), "{p}");
        assert!(text.contains(".SH \"EXIT STATUS\""), "{p}");
        // Every page it points to is one of those written.
        for r in text.split("\\fB").skip(1) {
            let Some((name, rest)) = r.split_once("\\fR(1)") else {
                continue;
            };
            let _ = rest;
            let name = name.replace("\\-", "-");
            if name.starts_with("offload") {
                assert!(pages.contains(&format!("{name}.1").as_str()), "{p}: {name}");
            }
        }
        // The same as `offload man SUB`.
        let sub = p.trim_end_matches(".1").trim_start_matches("offload");
        let mut args = vec!["man"];
        if let Some(s) = sub.strip_prefix('-') {
            args.push(s);
        }
        assert_eq!(run_in(tmp.path(), &args).stdout, text.as_bytes(), "{p}");
    }
    // Examples as written: not filled.
    let thin = fs::read_to_string(dir.join("offload-thin.1")).unwrap();
    let ex = thin.split(".SH EXAMPLES\n").nth(1).unwrap();
    assert!(ex.starts_with(".nf\n"), "{ex}");
    assert!(
        ex.contains("offload thin \\-\\-keep gfx90a \\-o lib\\-gfx90a.so lib.so"),
        "{ex}"
    );
    let top = fs::read_to_string(dir.join("offload.1")).unwrap();
    assert!(top.contains("offload\\-thin(1)"), "{top}");
    // man renders them, where it is installed.
    if Command::new("man").arg("--version").output().is_ok() {
        for p in pages {
            let o = Command::new("man")
                .args(["-l", "--warnings"])
                .arg(dir.join(p))
                .env("MANWIDTH", "100")
                .env("MANPAGER", "cat")
                .output()
                .unwrap();
            assert!(o.status.success(), "{p}: {}", stderr(&o));
            assert!(stderr(&o).is_empty(), "{p}: {}", stderr(&o));
            assert!(stdout(&o).contains("EXIT STATUS"), "{p}");
        }
    }
}

/// The commands of issue 25's "Done means", run as a newcomer runs them,
/// with the results docs/tools/offload.md documents.
#[test]
fn newcomer() {
    let tmp = with(&["lib.so", "hip.o"]);
    let d = tmp.path();
    // offload thin --keep X FILE
    let o = run_in(d, &["thin", "--keep", "gfx90a", "--dry-run", "lib.so"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 of 2 containers would be rewritten"),
        "{}",
        stdout(&o)
    );
    let o = run_in(d, &["thin", "--keep", "gfx90a", "-o", "thin.so", "lib.so"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_in(d, &["ls", "--format=llvm", "thin.so"]);
    assert!(!stdout(&o).contains("gfx906"), "{}", stdout(&o));
    // extract ... -o on a multi-unit library: the error says how to pick
    // one, and the documented command then works.
    let id = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
    let o = run_in(d, &["extract", "--target", id, "-o", "k.co", "lib.so"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--bundle 0 or --bundle 1"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("k.co").exists());
    let o = run_in(
        d,
        &[
            "extract", "--bundle", "1", "--target", id, "-o", "k.co", "lib.so",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(fs::read(d.join("k.co")).unwrap().starts_with(b"\x7fELF"));
    // A typo'd --drop: an error naming the value and the nearest GPU;
    // nothing written.
    let o = run_in(d, &["thin", "--drop", "gfx9060", "--in-place", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "--drop gfx9060: not an AMD GPU: unknown processor 'gfx9060' (did you mean gfx906?)"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        fs::read(d.join("lib.so")).unwrap(),
        fs::read(fixtures().join("lib.so")).unwrap()
    );
    // A typo'd --kind: a usage error with the nearest spelling.
    let o = run_in(d, &["extract", "--kind", "hipv5", "lib.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'hipv4'"), "{}", stderr(&o));
    // extract good missing: exit 1, no outputs.
    let before = names_in(d);
    let o = run_in(d, &["extract", "hip.o", "missing.o"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(names_in(d), before);
    // completions | head -1: the first line, no panic, status 0.
    let (line, code, err) = first_line_then_close(&["completions", "bash"]);
    assert_eq!(line, "_offload() {\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}
