//! The hostile-input corpus (`tests/hostile/`) against `llvm-offload-wrapper`: every
//! case must fail cleanly (exit 1, a message, no panic or signal, bounded
//! memory and time, no output created or changed).

use test_support::hostile as runner;

#[test]
fn hostile_corpus() {
    runner::check_tool(
        "llvm-offload-wrapper",
        env!("CARGO_BIN_EXE_llvm-offload-wrapper").as_ref(),
    );
}
