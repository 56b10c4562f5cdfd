//! clang-offload-wrapper (LLVM 14, plus AMD's --offload-arch).

use crate::cl::table::*;

/// The tool's table.
pub const CLANG_WRAPPER: Tool = Tool {
    name: "clang-offload-wrapper",
    overview: "A tool to create a wrapper bitcode for offload target binaries. Takes offload\n\
target binaries as input and produces bitcode file containing target binaries packaged\n\
as data and initialization code which registers target binaries in offload runtime.",
    positional: Some(Positional {
        help: "<input files>",
        min: 1,
        max: None,
    }),
    options: &[
        string("o", "filename", "Output filename").required().rank(0),
        PRINT_ALL_OPTIONS.rank(1),
        HELP_LIST.rank(2),
        HELP.rank(3),
        HELP_LIST_HIDDEN.rank(4),
        PRINT_OPTIONS.rank(5),
        string("target", "triple", "Target triple for the output module").required().rank(6),
        HELP_HIDDEN.rank(7),
        VERSION.rank(8),
        // LLVM 14 hides these outside the tool's category: never shown,
        // never suggested.
        flag(
            "save-temps",
            "Keep the temporary files --add-omp-offload-notes makes, and say where they are",
        )
        .never_shown(),
        flag(
            "add-omp-offload-notes",
            "Add LLVMOMPOFFLOAD ELF notes to ELF device images (runs llvm-objcopy)",
        )
        .never_shown(),
        // AMD's extension: the target ID of the image at the same position.
        string(
            "offload-arch",
            "target-id",
            "Record this target ID for the input image at the same position (AMD extension)",
        )
        .multi()
        .never_shown(),
        // Help, after parsing.
        flag("h", "").never_shown(),
    ],
    build: Build {
        version: "Debian clang-offload-wrapper version 14.0.6\n",
        dialect: Dialect::Llvm14,
        empty_categories: &[
            ("Color Options", ""),
            ("General options", ""),
            (
                "GlobalISel Combiner",
                "Control the rules which are enabled. These options all take a comma separated list of rules to disable and may be specified by number or number range (e.g. 1-10).",
            ),
            ("Polly Options", "Configure the polly loop optimizer"),
        ],
    },
    manual: Manual {
        summary: "wrap OpenMP device images in a host bitcode module (LLVM 14)",
        description: "Writes an LLVM bitcode module with typed pointers for the host target \
--target that embeds the input device images and registers them with the OpenMP offload \
runtime, as LLVM 14's tool does. An output of - is standard output.\n\
\n\
A drop-in replacement for LLVM 14's tool of the same name, with AMD's --offload-arch \
extension.",
        see_also: &["llvm-offload-wrapper(1)", "llvm-offload-binary(1)", "clang(1)"],
        environment: &[],
    },
};
