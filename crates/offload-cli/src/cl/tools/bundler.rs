//! clang-offload-bundler (LLVM 22).

use super::LLVM22;
use crate::cl::table::*;

/// The tool's table.
pub const BUNDLER: Tool = Tool {
    name: "clang-offload-bundler",
    overview: "A tool to bundle several input files of the specified type <type> \n\
referring to the same source file but different targets into a single \n\
one. The resulting file can also be unbundled into different files by \n\
this tool if -unbundle is provided.",
    positional: None,
    options: OPTIONS,
    build: Build {
        // The reference build prints its vendor and revision; the same line
        // lets scripts comparing versions see LLVM 22.1.8.
        version: "Debian clang-offload-bundler version 22.1.8 (1~deb12u1)\n",
        ..LLVM22
    },
    manual: Manual {
        summary: "bundle and unbundle offload device code",
        description: "Bundles per-target files compiled from one source (a host file and one \
file per offload target) into one file, lists the bundle entry IDs of a bundled file \
(-list), or extracts them again (-unbundle).\n\
\n\
A drop-in replacement for LLVM 22's tool of the same name: the same command line, \
messages, exit status and output bytes.",
        see_also: &["llvm-offload-binary(1)", "clang(1)", "llvm-objcopy(1)"],
        environment: &[
            ("OFFLOAD_BUNDLER_VERBOSE", "1: as -verbose."),
            ("OFFLOAD_BUNDLER_COMPRESS", "1: as -compress."),
            (
                "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
                "A decimal number: as -compression-level (another value is \
                 warned about and ignored).",
            ),
            (
                "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
                "1: the three variables above are ignored.",
            ),
        ],
    },
};

const TYPE_HELP: &str = "Type of the files to be bundled/unbundled.\n\
Current supported types are:\n  i    - cpp-output\n  ii   - c++-cpp-output\n  \
cui  - cuda-cpp-output\n  hipi - hip-cpp-output\n  d    - dependency\n  ll   - llvm\n  \
bc   - llvm-bc\n  s    - assembler\n  o    - object\n  a    - archive of objects\n  \
gch  - precompiled-header\n  ast  - clang AST file";

const OPTIONS: &[Opt] = &[
    HELP.rank(0),
    flag("list", "List bundle IDs in the bundled file.").rank(1),
    flag(
        "check-input-archive",
        "Check if input heterogeneous archive is valid in terms of TargetID rules.",
    )
    .rank(2),
    HELP_HIDDEN.rank(3),
    string(
        "output",
        "string",
        "Output file. Can be specified multiple times for multiple output files.",
    )
    .multi()
    .rank(4),
    flag("unbundle", "Unbundle bundled file into several output files.").rank(5),
    VERSION.rank(6),
    HELP_LIST.rank(7),
    int("compression-level", "n", "Specify the compression level (integer)").rank(8),
    flag(
        "allow-missing-bundles",
        "Create empty files if bundles are missing when unbundling.",
    )
    .rank(9),
    flag(
        "###",
        "Print any external commands that are to be executed instead of actually executing them - for testing purposes.",
    )
    .rank(10),
    string("type", "string", TYPE_HELP).required().rank(11),
    HELP_LIST_HIDDEN.rank(12),
    string("inputs", "string", "[<input file>,...] (deprecated)").comma().rank(13),
    flag("verbose", "Print debug information.").rank(14),
    string("targets", "string", "[<offload kind>-<target triple>,...]").comma().rank(15),
    PRINT_OPTIONS.rank(16),
    string(
        "input",
        "string",
        "Input file. Can be specified multiple times for multiple input files.",
    )
    .multi()
    .rank(17),
    uint("bundle-align", "uint", "Alignment of bundle for binary files").rank(18),
    string("outputs", "string", "[<output file>,...] (deprecated)").comma().rank(19),
    flag(
        "hip-openmp-compatible",
        "Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa.",
    )
    .rank(20),
    PRINT_ALL_OPTIONS.rank(21),
    flag("compress", "Compress output file when bundling.").rank(22),
    // The tool's own alias of --help-list, read after parsing (so it needs
    // -type); outside the tool's category, hence never shown.
    flag("h", "").never_shown(),
];
