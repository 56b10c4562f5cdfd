//! The option tables and the `cl` parser against the installed LLVM tools
//! (skipped when one is missing): for command lines that end in parsing
//! (help, version, option errors, "Did you mean"), our output, error text
//! and exit status must be LLVM's byte for byte, for the same argv[0].

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use offload_cli::cl::{self, table::Tool};
use offload_cli::tools;

const BUNDLER: &str = "/usr/lib/llvm-22/bin/clang-offload-bundler";
const BINARY: &str = "/usr/lib/llvm-22/bin/llvm-offload-binary";
const PACKAGER: &str = "/usr/lib/llvm-22/bin/clang-offload-packager";
const WRAPPER22: &str = "/usr/lib/llvm-22/bin/llvm-offload-wrapper";
const WRAPPER14: &str = "/usr/lib/llvm-14/bin/clang-offload-wrapper";

/// (stdout, stderr, exit status)
type Outcome = (String, String, i32);

fn llvm(exe: &str, dir: &Path, args: &[String]) -> Outcome {
    let o = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// Our parse of the same command line; `None` when it parsed (the tool
/// would go on to run).
fn ours(tool: &'static Tool, exe: &str, args: &[String]) -> Option<Outcome> {
    let mut argv: Vec<OsString> = vec![exe.into()];
    argv.extend(args.iter().map(OsString::from));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = cl::parse_to(tool, argv, &mut out, &mut err).err()?;
    let code = if format!("{code:?}") == format!("{:?}", std::process::ExitCode::SUCCESS) {
        0
    } else {
        1
    };
    Some((
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
        code,
    ))
}

fn present(exe: &str) -> bool {
    if Path::new(exe).exists() {
        return true;
    }
    println!("skipped: {exe} is not installed");
    false
}

fn check(tool: &'static Tool, exe: &str, cases: &[Vec<String>]) -> usize {
    let d = tempfile::tempdir().unwrap();
    let mut failed = 0;
    for args in cases {
        let want = llvm(exe, d.path(), args);
        let got = ours(tool, exe, args);
        match got {
            Some(got) if got == want => {}
            got => {
                failed += 1;
                eprintln!("{exe} {args:?}\n  LLVM: {want:?}\n  ours: {got:?}");
            }
        }
    }
    failed
}

fn cases(list: &[&[&str]]) -> Vec<Vec<String>> {
    list.iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// Every help variant, both dash forms, and help or version given a value.
const HELP_CASES: &[&[&str]] = &[
    &["--help"],
    &["-help"],
    &["--help-hidden"],
    &["-help-hidden"],
    &["--help-list"],
    &["-help-list"],
    &["--help-list-hidden"],
    &["--version"],
    &["-version"],
    &["--help=1"],
    &["-version=0"],
    &["--help-list=x"],
    &["--bogus", "--help", "--also-bogus"],
];

#[test]
fn help_and_version_texts() {
    let mut failed = 0;
    for (tool, exe) in [
        (&tools::BUNDLER, BUNDLER),
        (&tools::OFFLOAD_BINARY, BINARY),
        (&tools::OFFLOAD_BINARY, PACKAGER),
        (&tools::LLVM_WRAPPER, WRAPPER22),
        (&tools::CLANG_WRAPPER, WRAPPER14),
    ] {
        if present(exe) {
            failed += check(tool, exe, &cases(HELP_CASES));
        }
    }
    assert_eq!(failed, 0);
}
