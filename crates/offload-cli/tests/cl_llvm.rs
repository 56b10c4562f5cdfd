//! The `cl` layer against messages recorded from LLVM 22's
//! llvm-offload-binary (same option set as the struct below), invoked as
//! `/usr/lib/llvm-22/bin/llvm-offload-binary`.

use offload_cli::cl::table::{flag, string, uint, Build, Dialect, Manual, Tool, HELP, VERSION};
use offload_cli::cl::tools::OFFLOAD_BINARY;
use offload_cli::cl::{self, Parsed};
use std::ffi::OsString;

/// Bundler-style options under a small table of their own.
static BUNDLER: Tool = Tool {
    name: "t",
    overview: "",
    positional: None,
    options: &[
        HELP.rank(0),
        VERSION.rank(1),
        string("type", "string", "").required().rank(2),
        string("targets", "string", "").comma().rank(3),
        uint("bundle-align", "uint", "").rank(4),
        flag("unbundle", "").rank(5),
        flag("verbose", "").rank(6),
    ],
    build: Build {
        version: "v\n",
        dialect: Dialect::Llvm22,
        empty_categories: &[],
    },
    manual: Manual {
        summary: "",
        description: "",
        see_also: &[],
        environment: &[],
    },
};

const ARGV0: &str = "/usr/lib/llvm-22/bin/llvm-offload-binary";

fn run(tool: &'static Tool, args: &[&str]) -> (Option<Parsed>, String, String) {
    let mut argv: Vec<OsString> = vec![ARGV0.into()];
    argv.extend(args.iter().map(OsString::from));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let r = cl::parse_to(tool, argv, &mut out, &mut err);
    (
        r.ok(),
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn errors(args: &[&str]) -> String {
    let (r, _, err) = run(&OFFLOAD_BINARY, args);
    assert!(r.is_none(), "{args:?} should fail");
    err
}

#[test]
fn grouping_and_missing_values() {
    assert_eq!(
        errors(&["-ofoo"]),
        "llvm-offload-binary: for the -o option: may not occur within a group!\n\
         llvm-offload-binary: Unknown command line argument '-ofoo'.  Try: '/usr/lib/llvm-22/bin/llvm-offload-binary --help'\n\
         llvm-offload-binary: Did you mean '-o'?\n"
    );
    assert_eq!(
        errors(&["-o"]),
        "llvm-offload-binary: for the -o option: requires a value!\n"
    );
}

#[test]
fn suggestions_carry_values() {
    let try_ = "Try: '/usr/lib/llvm-22/bin/llvm-offload-binary --help'";
    for (arg, near) in [
        ("--imag=x", "--image=x"),
        ("--arch", "--archive"),
        ("-unknown=3", "--o=3"),
        ("-x", "-o"),
        ("-i", "-o"),
        ("-archiv=1", "--archive=1"),
        ("--=x", "--o=x"),
        ("---o", "-o"),
    ] {
        assert_eq!(
            errors(&[arg]),
            format!(
                "llvm-offload-binary: Unknown command line argument '{arg}'.  {try_}\n\
                 llvm-offload-binary: Did you mean '{near}'?\n"
            ),
            "{arg}"
        );
    }
}

#[test]
fn booleans_and_positionals() {
    assert_eq!(
        errors(&["--archive=maybe"]),
        "llvm-offload-binary: for the --archive option: 'maybe' is invalid value for boolean argument! Try 0 or 1\n"
    );
    assert_eq!(
        errors(&["a", "b"]),
        "llvm-offload-binary: Too many positional arguments specified!\n\
         Can specify at most 1 positional arguments: See: /usr/lib/llvm-22/bin/llvm-offload-binary --help\n"
    );
    let (r, _, _) = run(&OFFLOAD_BINARY, &["--archive=0", "-archive=1", "--", "-o"]);
    let a = r.unwrap();
    assert!(a.flag("archive"));
    assert_eq!(a.positionals, ["-o"]);
}

#[test]
fn help_stops_parsing_but_keeps_earlier_errors() {
    let (r, out, err) = run(&OFFLOAD_BINARY, &["--foo", "--help", "--bar"]);
    assert!(r.is_none());
    assert!(out.starts_with("OVERVIEW: A utility for bundling"));
    assert!(out.contains("USAGE: llvm-offload-binary [options]"));
    assert!(err.contains("'--foo'") && !err.contains("--bar"));
    assert_eq!(
        errors(&["--help=0"]),
        "llvm-offload-binary: for the --help option: does not allow a value! '0' specified.\n"
    );
}

#[test]
fn last_value_wins_and_lists_append() {
    let (r, _, err) = run(
        &OFFLOAD_BINARY,
        &["-o", "x", "--o=y", "-image", "a,b", "-image=c"],
    );
    assert_eq!(err, "");
    let a = r.unwrap();
    assert_eq!(a.value("o"), Some("y".as_ref()));
    assert_eq!(a.values("image"), ["a,b", "c"]);
}

#[test]
fn bundler_style_options() {
    let (r, _, err) = run(
        &BUNDLER,
        &[
            "-type",
            "ii",
            "--type=bc",
            "-targets=A,,B,",
            "-targets",
            "C",
            "-bundle-align=0x10",
            "-verbose=false",
        ],
    );
    assert_eq!(err, "");
    let b = r.unwrap();
    assert_eq!(b.value("type"), Some("bc".as_ref()));
    assert_eq!(b.values("targets"), ["A", "", "B", "", "C"]);
    assert_eq!(b.uint("bundle-align"), Some(16));
    assert_eq!(b.bool("verbose"), Some(false));
    assert!(!b.flag("unbundle"));
    let (r, _, err) = run(&BUNDLER, &["-bundle-align=-1", "-unbundle=yes"]);
    assert!(r.is_none());
    assert_eq!(
        err,
        "llvm-offload-binary: for the --bundle-align option: '-1' value invalid for uint argument!\n\
         llvm-offload-binary: for the --unbundle option: 'yes' is invalid value for boolean argument! Try 0 or 1\n\
         llvm-offload-binary: for the --type option: must be specified at least once!\n"
    );
    let (_, _, err) = run(&BUNDLER, &["-typ=bc", "extra"]);
    assert_eq!(
        err,
        "llvm-offload-binary: Unknown command line argument '-typ=bc'.  Try: '/usr/lib/llvm-22/bin/llvm-offload-binary --help'\n\
         llvm-offload-binary: Did you mean '--type=bc'?\n\
         llvm-offload-binary: Unknown command line argument 'extra'.  Try: '/usr/lib/llvm-22/bin/llvm-offload-binary --help'\n\
         llvm-offload-binary: for the --type option: must be specified at least once!\n"
    );
}

#[test]
fn response_files_expand() {
    let d = tempfile::tempdir().unwrap();
    let rsp = d.path().join("r");
    let nested = d.path().join("n");
    std::fs::write(&nested, "--archive").unwrap();
    std::fs::write(&rsp, format!("-o 'a b' @{}", nested.display())).unwrap();
    let arg = format!("@{}", rsp.display());
    let (r, _, err) = run(&OFFLOAD_BINARY, &[&arg, "@/no/such/file"]);
    assert_eq!(err, "");
    let a = r.unwrap();
    assert_eq!(a.value("o"), Some("a b".as_ref()));
    assert!(a.flag("archive"));
    assert_eq!(a.positionals, ["@/no/such/file"]);
}
