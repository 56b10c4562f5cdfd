//! Signals mid-write, concurrent writers and output errors (see the shared
//! support module): bundling writes one output, unbundling several.

#[path = "../../offload-cli/tests/support/output_safety.rs"]
#[macro_use]
mod support;

use std::path::Path;
use support::{pattern, Tool};

const TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu";

fn prepare(tool: &Tool, dir: &Path, variant: u8, size: usize) {
    std::fs::write(dir.join("host.bc"), pattern(variant, size / 2)).unwrap();
    std::fs::write(dir.join("dev.bc"), pattern(variant ^ 0x80, size / 2)).unwrap();
    let ok = std::process::Command::new(tool.exe)
        .current_dir(dir)
        .args(["-type=bc", TARGETS, "-input=host.bc", "-input=dev.bc"])
        .arg("-output=bundle.bc")
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn args(outs: &[&str], _variant: u8) -> Vec<String> {
    let mut v = vec!["-type=bc".to_string(), TARGETS.to_string()];
    if let [out] = outs {
        v.extend(["-input=host.bc".into(), "-input=dev.bc".into()]);
        v.push(format!("-output={out}"));
    } else {
        v.push("-input=bundle.bc".into());
        v.extend(outs.iter().map(|o| format!("-output={o}")));
        v.push("-unbundle".into());
    }
    v
}

const TOOL: Tool = Tool {
    exe: env!("CARGO_BIN_EXE_clang-offload-bundler"),
    llvm: "clang-offload-bundler-22",
    prepare,
    args,
    outputs: 2,
    dash_is_stdout: true,
};

output_safety_tests!(TOOL);
