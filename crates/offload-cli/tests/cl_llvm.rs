//! The `cl` layer against messages recorded from LLVM 22's
//! llvm-offload-binary (same option set as the struct below), invoked as
//! `/usr/lib/llvm-22/bin/llvm-offload-binary`.

use clap::Parser;
use offload_cli::cl::{self, HelpKind, Spec};
use std::ffi::OsString;

#[derive(Parser, Debug, PartialEq)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Args {
    #[arg(long = "o")]
    output: Option<OsString>,
    #[arg(long = "image", action = clap::ArgAction::Append)]
    image: Vec<OsString>,
    #[arg(long = "archive", action = clap::ArgAction::SetTrue)]
    archive: bool,
    input: Option<OsString>,
}

#[derive(Parser, Debug, PartialEq)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Bundler {
    #[arg(long = "type", required = true)]
    ty: String,
    #[arg(long = "targets", action = clap::ArgAction::Append, value_delimiter = ',')]
    targets: Vec<String>,
    #[arg(long = "bundle-align", value_parser = clap::value_parser!(u32))]
    align: Option<u32>,
    #[arg(long = "unbundle", action = clap::ArgAction::SetTrue)]
    unbundle: bool,
    #[arg(long = "verbose")]
    verbose: Option<bool>,
}

fn help(k: HelpKind, prog: &str) -> String {
    format!("{k:?} {prog}\n")
}
fn version() -> String {
    "v\n".into()
}

const SPEC: Spec = Spec {
    help,
    version,
    suggest: &[
        "help",
        "help-list",
        "version",
        "o",
        "image",
        "archive",
        "print-options",
        "print-all-options",
        "help-hidden",
        "help-list-hidden",
    ],
    llvm14: false,
};

const BSPEC: Spec = Spec {
    help,
    version,
    suggest: &[
        "help",
        "version",
        "type",
        "targets",
        "bundle-align",
        "unbundle",
        "verbose",
        "list",
    ],
    llvm14: false,
};

const ARGV0: &str = "/usr/lib/llvm-22/bin/llvm-offload-binary";

fn run<T: clap::CommandFactory + clap::FromArgMatches>(
    spec: &Spec,
    args: &[&str],
) -> (Option<T>, String, String) {
    let mut argv: Vec<OsString> = vec![ARGV0.into()];
    argv.extend(args.iter().map(OsString::from));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let r = cl::parse_to::<T>(spec, argv, &mut out, &mut err);
    (
        r.ok().map(|p| p.args),
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn errors(args: &[&str]) -> String {
    let (r, _, err) = run::<Args>(&SPEC, args);
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
    let (r, _, _) = run::<Args>(&SPEC, &["--archive=0", "-archive=1", "--", "-o"]);
    let a = r.unwrap();
    assert!(a.archive);
    assert_eq!(a.input, Some("-o".into()));
}

#[test]
fn help_stops_parsing_but_keeps_earlier_errors() {
    let (r, out, err) = run::<Args>(&SPEC, &["--foo", "--help", "--bar"]);
    assert!(r.is_none());
    assert_eq!(out, "Help llvm-offload-binary\n");
    assert!(err.contains("'--foo'") && !err.contains("--bar"));
    assert_eq!(
        errors(&["--help=0"]),
        "llvm-offload-binary: for the --help option: does not allow a value! '0' specified.\n"
    );
}

#[test]
fn last_value_wins_and_lists_append() {
    let (r, _, err) = run::<Args>(&SPEC, &["-o", "x", "--o=y", "-image", "a,b", "-image=c"]);
    assert_eq!(err, "");
    let a = r.unwrap();
    assert_eq!(a.output, Some("y".into()));
    assert_eq!(a.image, vec![OsString::from("a,b"), "c".into()]);
}

#[test]
fn bundler_style_options() {
    let (r, _, err) = run::<Bundler>(
        &BSPEC,
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
    assert_eq!(b.ty, "bc");
    assert_eq!(b.targets, ["A", "", "B", "", "C"]);
    assert_eq!(b.align, Some(16));
    assert_eq!(b.verbose, Some(false));
    let (r, _, err) = run::<Bundler>(&BSPEC, &["-bundle-align=-1", "-unbundle=yes"]);
    assert!(r.is_none());
    assert_eq!(
        err,
        "llvm-offload-binary: for the --bundle-align option: '-1' value invalid for uint argument!\n\
         llvm-offload-binary: for the --unbundle option: 'yes' is invalid value for boolean argument! Try 0 or 1\n\
         llvm-offload-binary: for the --type option: must be specified at least once!\n"
    );
    let (_, _, err) = run::<Bundler>(&BSPEC, &["-typ=bc", "extra"]);
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
    let (r, _, err) = run::<Args>(&SPEC, &[&arg, "@/no/such/file"]);
    assert_eq!(err, "");
    let a = r.unwrap();
    assert_eq!(a.output, Some("a b".into()));
    assert!(a.archive);
    assert_eq!(a.input, Some("@/no/such/file".into()));
}
