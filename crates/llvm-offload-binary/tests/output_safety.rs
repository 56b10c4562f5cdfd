//! Signals mid-write, concurrent writers and output errors (see
//! `test_support::output_safety`) for `llvm-offload-binary` and its
//! `clang-offload-packager` name: packaging writes one output, extraction
//! several.

use std::path::Path;
use test_support::output_safety::{pattern, Tool};

const TRIPLE: &str = "triple=x86_64-unknown-linux-gnu";

fn prepare(tool: &Tool, dir: &Path, variant: u8, size: usize) {
    std::fs::write(dir.join("img"), pattern(variant, size)).unwrap();
    std::fs::write(dir.join("small"), pattern(variant ^ 0x80, 4096)).unwrap();
    let args = [
        format!("--image=file=img,{TRIPLE},arch=sm_70,kind=openmp"),
        format!("--image=file=small,{TRIPLE},arch=sm_80,kind=openmp"),
        "-o".into(),
        "bin".into(),
    ];
    tool.make_input(dir, &args);
}

fn args(_: &Tool, outs: &[&str], _variant: u8) -> Vec<String> {
    match outs {
        [out] => vec![
            format!("--image=file=img,{TRIPLE},arch=sm_70,kind=openmp"),
            "-o".into(),
            out.to_string(),
        ],
        [a, b] => vec![
            "bin".into(),
            format!("--image=file={a},arch=sm_70"),
            format!("--image=file={b},arch=sm_80"),
        ],
        _ => unreachable!(),
    }
}

const TOOL: Tool = Tool::two_outputs(
    env!("CARGO_BIN_EXE_llvm-offload-binary"),
    "llvm-offload-binary-22",
    prepare,
    args,
);

const PACKAGER: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_clang-offload-packager"),
    llvm: "clang-offload-packager-22",
    ..TOOL
};

mod llvm_offload_binary {
    test_support::output_safety_tests!(super::TOOL);
}

mod clang_offload_packager {
    test_support::output_safety_tests!(super::PACKAGER);
}
