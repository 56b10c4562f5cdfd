//! Signals mid-write, concurrent writers and output errors (see
//! `test_support::output_safety`). One output; `-` is a file name, as in
//! LLVM 22.

use test_support::output_safety::Tool;

const TOOL: Tool = Tool {
    flags: &["--kind=openmp", "--triple=x86_64-unknown-linux-gnu"],
    ..Tool::one_image(
        env!("CARGO_BIN_EXE_llvm-offload-wrapper"),
        "llvm-offload-wrapper-22",
    )
};

test_support::output_safety_tests!(TOOL);
