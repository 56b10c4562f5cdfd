//! Help and version texts, identical to LLVM 22's for the same program name.

use offload_cli::cl::HelpKind;

const OVERVIEW: &str =
    "OVERVIEW: A tool to bundle several input files of the specified type <type> \n\
referring to the same source file but different targets into a single \n\
one. The resulting file can also be unbundled into different files by \n\
this tool if -unbundle is provided.\n";

/// The tool's own options, as (name as shown, description), sorted as LLVM
/// sorts them.
const TOOL_OPTIONS: &[(&str, &str)] = &[
    ("--###", "Print any external commands that are to be executed instead of actually executing them - for testing purposes."),
    ("--allow-missing-bundles", "Create empty files if bundles are missing when unbundling."),
    ("--bundle-align=<uint>", "Alignment of bundle for binary files"),
    ("--check-input-archive", "Check if input heterogeneous archive is valid in terms of TargetID rules."),
    ("--compress", "Compress output file when bundling."),
    ("--compression-level=<n>", "Specify the compression level (integer)"),
    ("--hip-openmp-compatible", "Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa."),
    ("--input=<string>", "Input file. Can be specified multiple times for multiple input files."),
    ("--inputs=<string>", "[<input file>,...] (deprecated)"),
    ("--list", "List bundle IDs in the bundled file."),
    ("--output=<string>", "Output file. Can be specified multiple times for multiple output files."),
    ("--outputs=<string>", "[<output file>,...] (deprecated)"),
    ("--targets=<string>", "[<offload kind>-<target triple>,...]"),
    ("--type=<string>", "Type of the files to be bundled/unbundled.\n\
Current supported types are:\n  i    - cpp-output\n  ii   - c++-cpp-output\n  cui  - cuda-cpp-output\n  hipi - hip-cpp-output\n  d    - dependency\n  ll   - llvm\n  bc   - llvm-bc\n  s    - assembler\n  o    - object\n  a    - archive of objects\n  gch  - precompiled-header\n  ast  - clang AST file"),
    ("--unbundle", "Unbundle bundled file into several output files."),
    ("--verbose", "Print debug information."),
];

/// Generic options: (name, description, shown only in the hidden variants).
const GENERIC_OPTIONS: &[(&str, &str, bool)] = &[
    (
        "--help",
        "Display available options (--help-hidden for more)",
        false,
    ),
    ("--help-hidden", "Display all available options", true),
    (
        "--help-list",
        "Display list of available options (--help-list-hidden for more)",
        false,
    ),
    (
        "--help-list-hidden",
        "Display list of all available options",
        true,
    ),
    (
        "--print-all-options",
        "Print all option values after command line parsing",
        true,
    ),
    (
        "--print-options",
        "Print non-default options after command line parsing",
        true,
    ),
    ("--version", "Display the version of this program", false),
];

/// Width of the option column: LLVM pads every name to the longest one.
const WIDTH: usize = 23;

fn option_line(out: &mut String, name: &str, desc: &str) {
    let mut lines = desc.split('\n');
    out.push_str(&format!(
        "  {name:<WIDTH$} - {}\n",
        lines.next().unwrap_or_default()
    ));
    for l in lines {
        out.push_str(&format!("{:indent$}{l}\n", "", indent = WIDTH + 5));
    }
}

/// The text printed for `kind`; `prog` is `argv[0]`'s file name.
pub fn help(kind: HelpKind, prog: &str) -> String {
    let hidden = matches!(kind, HelpKind::HelpHidden | HelpKind::HelpListHidden);
    let generic: Vec<(&str, &str)> = GENERIC_OPTIONS
        .iter()
        .filter(|(_, _, h)| hidden || !h)
        .map(|(n, d, _)| (*n, *d))
        .collect();
    let mut s = format!("{OVERVIEW}\nUSAGE: {prog} [options]\n\nOPTIONS:\n");
    match kind {
        HelpKind::Help | HelpKind::HelpHidden => {
            s.push_str("\nGeneric Options:\n\n");
            for (n, d) in &generic {
                option_line(&mut s, n, d);
            }
            s.push_str("\nclang-offload-bundler options:\n\n");
            for (n, d) in TOOL_OPTIONS {
                option_line(&mut s, n, d);
            }
        }
        HelpKind::HelpList | HelpKind::HelpListHidden => {
            let mut all: Vec<(&str, &str)> = TOOL_OPTIONS.to_vec();
            // The plain list leaves out `--help-list` itself (LLVM 22 does).
            all.extend(
                generic
                    .into_iter()
                    .filter(|(n, _)| hidden || *n != "--help-list"),
            );
            // LLVM sorts by option name; the names here start with "--" and
            // the value placeholders never change the order.
            all.sort_by(|a, b| sort_key(a.0).cmp(sort_key(b.0)));
            for (n, d) in all {
                option_line(&mut s, n, d);
            }
        }
    }
    s
}

fn sort_key(shown: &str) -> &str {
    let n = shown.trim_start_matches('-');
    n.split('=').next().unwrap_or(n)
}

/// The `--version` text.
pub fn version() -> String {
    // The reference build prints its vendor and revision; we print the same
    // line so that scripts comparing versions see LLVM 22.1.8.
    "Debian clang-offload-bundler version 22.1.8 (1~deb12u1)\n".to_string()
}
