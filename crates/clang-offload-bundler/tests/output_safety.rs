//! Signals mid-write, concurrent writers and output errors (see
//! `test_support::output_safety`): bundling writes one output, unbundling several.

use std::path::Path;
use test_support::output_safety::{pattern, Tool};

const TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu";

fn prepare(tool: &Tool, dir: &Path, variant: u8, size: usize) {
    std::fs::write(dir.join("host.bc"), pattern(variant, size / 2)).unwrap();
    std::fs::write(dir.join("dev.bc"), pattern(variant ^ 0x80, size / 2)).unwrap();
    let args = [
        "-type=bc",
        TARGETS,
        "-input=host.bc",
        "-input=dev.bc",
        "-output=bundle.bc",
    ];
    tool.make_input(dir, &args.map(String::from));
}

fn args(_: &Tool, outs: &[&str], _variant: u8) -> Vec<String> {
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

const TOOL: Tool = Tool::two_outputs(
    env!("CARGO_BIN_EXE_clang-offload-bundler"),
    "clang-offload-bundler-22",
    prepare,
    args,
);

test_support::output_safety_tests!(TOOL);
