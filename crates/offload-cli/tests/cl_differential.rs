//! The option tables and the `cl` parser against the installed LLVM tools
//! (skipped when one is missing): for command lines that end in parsing
//! (help, version, option errors, "Did you mean"), our output, error text
//! and exit status must be LLVM's byte for byte, for the same argv[0].

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use offload_cli::cl::tools;
use offload_cli::cl::{self, table::Tool};

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

/// SplitMix64, for reproducible random typos.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A mistyped option: one of the tool's names, or half of one joined to
/// half of another (often equally near to both, where LLVM's option-map
/// order decides), with one to three random edits, sometimes with a value,
/// behind one or two dashes.
fn typo(tool: &Tool, rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz-#=";
    let names: Vec<&str> = tool.options.iter().map(|o| o.name).collect();
    let mut s: Vec<u8> = names[rng.below(names.len())].as_bytes().to_vec();
    if rng.below(2) == 0 {
        let other = names[rng.below(names.len())].as_bytes();
        s.truncate(rng.below(s.len() + 1));
        s.extend_from_slice(&other[rng.below(other.len() + 1)..]);
        if s.is_empty() {
            s.push(b'x');
        }
    }
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(s.len() + 1);
        let c = ALPHABET[rng.below(ALPHABET.len())];
        match rng.below(4) {
            0 => s.insert(at, c),
            1 if at < s.len() => {
                s.remove(at);
            }
            2 if at < s.len() => s[at] = c,
            _ if at + 1 < s.len() => s.swap(at, at + 1),
            _ => s.push(c),
        }
    }
    if rng.below(4) == 0 {
        s.extend_from_slice(b"=v");
    }
    let dashes = if rng.below(2) == 0 { "-" } else { "--" };
    format!("{dashes}{}", String::from_utf8_lossy(&s))
}

/// "Did you mean" over random typos of every tool's option names: the
/// whole error output must be LLVM's. `CL_TYPOS` sets the count per tool.
#[test]
fn suggestions_for_random_typos() {
    let per_tool: usize = std::env::var("CL_TYPOS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let mut failed = 0;
    let mut total = 0;
    for (tool, exe) in [
        (&tools::BUNDLER, BUNDLER),
        (&tools::OFFLOAD_BINARY, BINARY),
        (&tools::LLVM_WRAPPER, WRAPPER22),
        (&tools::CLANG_WRAPPER, WRAPPER14),
    ] {
        if !present(exe) {
            continue;
        }
        let mut rng = Rng(0x5eed ^ exe.len() as u64);
        let mut list = Vec::new();
        while list.len() < per_tool {
            let args = vec![typo(tool, &mut rng)];
            // Our own extension is not an LLVM option.
            let name = args[0].trim_start_matches('-').split('=').next();
            if name == Some("offload-arch") {
                continue;
            }
            // Only typos that are errors (a few edits land on real options).
            if ours(tool, exe, &args).is_some_and(|o| o.2 == 1) {
                list.push(args);
            }
        }
        total += list.len();
        failed += check(tool, exe, &list);
    }
    println!("{failed} of {total} typos differ");
    assert_eq!(failed, 0, "{failed} of {total} typos differ");
}

/// The `cl` rules one command line at a time: unknown options and their
/// suggestions, missing values, `=`-less values, repeats, booleans, empty
/// list items, `--`, grouping, response files, positionals, required
/// options. Each case ends in parsing (an error, help or version), so the
/// whole output is comparable.
#[test]
fn command_line_edge_cases() {
    let d = tempfile::tempdir().unwrap();
    let rsp = d.path().join("args.rsp");
    std::fs::write(&rsp, "-bogus 'quoted arg' --help-list=1\n").unwrap();
    let at = format!("@{}", rsp.display());
    let at = at.as_str();
    let mut failed = 0;
    let bundler: &[&[&str]] = &[
        &["-typ=bc"],
        &["-type"],
        &["-type", "bc", "-bundle-align"],
        &["-type", "bc", "-bundle-align", "x"],
        &["-type=bc", "-bundle-align=-1", "-compression-level=0x"],
        &["-type=bc", "-unbundle=maybe", "-list=2", "-compress=yes"],
        &[
            "-type=bc",
            "-unbundle=true",
            "-list=0",
            "-verbose=FALSE",
            "-compress=1",
            "-zz",
        ],
        &["-type=bc", "-targets=,,", "-inputs=a,,b", "-nope"],
        &["-type=bc", "positional"],
        &["-type=bc", "--", "-list"],
        &["-type=bc", "-", "---list"],
        &["-type=bc", "-hlist"],
        &["-type=bc", "-h=2"],
        &["-type=bc", at],
        &["-type=bc", "@/no/such/file"],
        &["--type=bc", "--targets", "x", "-###=x"],
        &["-allow-missing-bundles=", "-hip-openmp-compatible=1", "-q"],
    ];
    let binary: &[&[&str]] = &[
        &["-o"],
        &["-ofile"],
        &["-o", "a", "x", "y"],
        &["--archive=maybe", "--image"],
        &["-abesion=v"],
        &["--=x"],
        &["---o"],
        &["-image=a,b", "-hx"],
        &["-ho"],
        &["-h=maybe"],
        &["--", "-o", "x", "y"],
        &[at],
        &["-print-options=x", "-print-all-options=2"],
    ];
    let wrapper22: &[&[&str]] = &[
        &[],
        &["--kind"],
        &["--kind=OpenMP", "a"],
        &["-kind", "hip"],
        &["-kind=hip", "-triple"],
        &["-kind=cuda", "-o"],
        &["-ho"],
        &["-kind=hip", "-kind=bad", "a"],
        &["-kind=hip", "a", "-hdlthldln"],
        &["-kind=hip", at],
        &["-h=", "-kind=x"],
    ];
    let wrapper14: &[&[&str]] = &[
        &[],
        &["-o", "x", "-o", "y", "--target=t", "a"],
        &["--target=t", "--target=u", "-o=x", "a"],
        &[
            "--print-options",
            "--print-options",
            "-o",
            "x",
            "--target=t",
            "a",
        ],
        &["--print-options=2"],
        &["--target"],
        &["-ox", "--target=t", "a"],
        &["--save-temps=x", "-o", "x", "--target=t", "a"],
        &["--tagret=t", "a"],
        &[at],
        &["-o", "x", "--", "-a", "--target=t"],
    ];
    for (tool, exe, list) in [
        (&tools::BUNDLER, BUNDLER, bundler),
        (&tools::OFFLOAD_BINARY, BINARY, binary),
        (&tools::LLVM_WRAPPER, WRAPPER22, wrapper22),
        (&tools::CLANG_WRAPPER, WRAPPER14, wrapper14),
    ] {
        if present(exe) {
            failed += check(tool, exe, &cases(list));
        }
    }
    assert_eq!(failed, 0);
}
