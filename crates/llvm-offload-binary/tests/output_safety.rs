//! Signals mid-write, concurrent writers and output errors (see the shared
//! support module) for `llvm-offload-binary` and its
//! `clang-offload-packager` name: packaging writes one output, extraction
//! several.

#[path = "../../offload-cli/tests/support/output_safety.rs"]
#[macro_use]
mod support;

use std::path::Path;
use support::{pattern, Tool};

const TRIPLE: &str = "triple=x86_64-unknown-linux-gnu";

fn prepare(tool: &Tool, dir: &Path, variant: u8, size: usize) {
    std::fs::write(dir.join("img"), pattern(variant, size)).unwrap();
    std::fs::write(dir.join("small"), pattern(variant ^ 0x80, 4096)).unwrap();
    let ok = std::process::Command::new(tool.exe)
        .current_dir(dir)
        .arg(format!("--image=file=img,{TRIPLE},arch=sm_70,kind=openmp"))
        .arg(format!(
            "--image=file=small,{TRIPLE},arch=sm_80,kind=openmp"
        ))
        .args(["-o", "bin"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn args(outs: &[&str], _variant: u8) -> Vec<String> {
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

const TOOL: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_llvm-offload-binary"),
    llvm: "llvm-offload-binary-22",
    prepare,
    args,
    outputs: 2,
    dash_is_stdout: true,
};

const PACKAGER: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_clang-offload-packager"),
    llvm: "clang-offload-packager-22",
    ..TOOL
};

mod llvm_offload_binary {
    output_safety_tests!(super::TOOL);
}

mod clang_offload_packager {
    output_safety_tests!(super::PACKAGER);
}
