//! llvm-offload-binary, also installed as clang-offload-packager (LLVM 22).

use super::LLVM22;
use crate::cl::table::*;

/// The tool's table.
pub const OFFLOAD_BINARY: Tool = Tool {
    name: "llvm-offload-binary",
    overview: "A utility for bundling several object files into a single binary.\n\
The output binary can then be embedded into the host section table\n\
to create a fatbinary containing offloading code.",
    positional: Some(Positional {
        help: "Extract from <file>.",
        min: 0,
        max: Some(1),
    }),
    options: &[
        HELP.rank(0),
        flag("archive", "Write extracted files to a static archive").rank(1),
        HELP_HIDDEN.rank(2),
        VERSION.rank(3),
        HELP_LIST.rank(4),
        string("o", "file", "Write output to <file>.").rank(5),
        HELP_LIST_HIDDEN.rank(6),
        string(
            "image",
            "<key>=<value>,...",
            "List of key and value arguments. Required keywords are 'file' and 'triple'.",
        )
        .multi()
        .rank(7),
        PRINT_OPTIONS.rank(8),
        PRINT_ALL_OPTIONS.rank(9),
        // Help, after parsing; outside the tool's category.
        flag("h", "").never_shown(),
    ],
    build: LLVM22,
    manual: Manual {
        summary: "package device images into offload binaries, or extract them",
        description: "With -o, packs each --image (its file and its key=value strings such as \
triple and arch) into an offload binary and writes them, concatenated, to the output. \
With an input file (an offload binary, an object or archive holding offload sections), \
extracts the images each --image filter selects: to the filter's file, to a static \
archive with --archive, or to <input>-<triple>-<arch>.<n>.<ext> files when the filter \
names no file.\n\
\n\
A drop-in replacement for LLVM 22's tool of the same name. Invoked as \
clang-offload-packager it warns that the name is deprecated and otherwise behaves \
the same.",
        see_also: &[
            "clang-offload-bundler(1)",
            "llvm-offload-wrapper(1)",
            "clang(1)",
        ],
        environment: &[],
    },
};
