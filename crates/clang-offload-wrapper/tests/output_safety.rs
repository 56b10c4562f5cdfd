//! Signals mid-write, concurrent writers and output errors (see the shared
//! support module). One output; `-` is stdout, as in LLVM 14.

#[path = "../../offload-cli/tests/support/output_safety.rs"]
#[macro_use]
mod support;

use std::path::Path;
use support::{pattern, Tool};

fn prepare(_: &Tool, dir: &Path, variant: u8, size: usize) {
    std::fs::write(dir.join("img"), pattern(variant, size)).unwrap();
}

fn args(outs: &[&str], _variant: u8) -> Vec<String> {
    vec![
        "-target=x86_64-pc-linux-gnu".into(),
        "img".into(),
        "-o".into(),
        outs[0].to_string(),
    ]
}

const TOOL: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_clang-offload-wrapper"),
    llvm: "clang-offload-wrapper-14",
    prepare,
    args,
    outputs: 1,
    dash_is_stdout: true,
};

output_safety_tests!(TOOL);
