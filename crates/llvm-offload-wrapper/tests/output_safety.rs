//! Signals mid-write, concurrent writers and output errors (see the shared
//! support module). One output; `-` is a file name, as in LLVM 22.

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
        "--kind=openmp".into(),
        "--triple=x86_64-unknown-linux-gnu".into(),
        "img".into(),
        "-o".into(),
        outs[0].to_string(),
    ]
}

const TOOL: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_llvm-offload-wrapper"),
    llvm: "llvm-offload-wrapper-22",
    prepare,
    args,
    outputs: 1,
    dash_is_stdout: false,
};

output_safety_tests!(TOOL);
