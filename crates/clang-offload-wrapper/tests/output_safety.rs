//! Signals mid-write, concurrent writers and output errors (see
//! `test_support::output_safety`). One output; `-` is stdout, as in LLVM 14.

use test_support::output_safety::Tool;

const TOOL: Tool = Tool {
    flags: &["-target=x86_64-pc-linux-gnu"],
    dash_is_stdout: true,
    ..Tool::one_image(
        env!("CARGO_BIN_EXE_clang-offload-wrapper"),
        "clang-offload-wrapper-14",
    )
};

test_support::output_safety_tests!(TOOL);
