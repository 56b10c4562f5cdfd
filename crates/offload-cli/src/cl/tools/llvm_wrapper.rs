//! llvm-offload-wrapper (LLVM 22).

use super::LLVM22;
use crate::cl::table::*;

/// The tool's table.
pub const LLVM_WRAPPER: Tool = Tool {
    name: "llvm-offload-wrapper",
    overview: "Generate runtime registration code for a device binary image",
    positional: Some(Positional {
        help: "Wrap input from <file>",
        min: 1,
        max: None,
    }),
    options: &[
        HELP.rank(0),
        string("triple", "string", "Target triple for the wrapper module").rank(1),
        HELP_HIDDEN.rank(2),
        VERSION.rank(3),
        HELP_LIST.rank(4),
        HELP_LIST_HIDDEN.rank(5),
        string("o", "file", "Write output to <file>.").rank(6),
        choice(
            "kind",
            &[
                ("openmp", "Wrap OpenMP binaries"),
                ("cuda", "Wrap CUDA binaries"),
                ("hip", "Wrap HIP binaries"),
            ],
            "Wrap for offload kind:",
        )
        .required()
        .rank(7),
        PRINT_OPTIONS.rank(8),
        PRINT_ALL_OPTIONS.rank(9),
        // Help, after parsing; outside the tool's category.
        flag("h", "").never_shown(),
    ],
    build: LLVM22,
    manual: Manual {
        summary: "wrap device images in registration code for the offload runtime",
        description: "Writes an LLVM bitcode module that embeds the input device images and \
registers them with the OpenMP, CUDA or HIP runtime (--kind) when the program starts. \
The module is for the host target --triple (the default target when omitted).\n\
\n\
A drop-in replacement for LLVM 22's tool of the same name.",
        see_also: &[
            "llvm-offload-binary(1)",
            "clang-offload-wrapper(1)",
            "clang(1)",
        ],
        environment: &[],
    },
};
