//! The hostile-input corpus (`tests/hostile/`) against `llvm-offload-binary`
//! and `clang-offload-packager`: every case must fail cleanly (exit 1, a
//! message, no panic or signal, bounded memory and time, no output created
//! or changed).

use test_support::hostile as runner;

#[test]
fn hostile_corpus_llvm_offload_binary() {
    runner::check_tool(
        "llvm-offload-binary",
        env!("CARGO_BIN_EXE_llvm-offload-binary").as_ref(),
    );
}

#[test]
fn hostile_corpus_clang_offload_packager() {
    runner::check_tool(
        "clang-offload-packager",
        env!("CARGO_BIN_EXE_clang-offload-packager").as_ref(),
    );
}
