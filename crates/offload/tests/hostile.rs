//! The hostile-input corpus (`tests/hostile/`) against `offload`: every
//! damaged input must be reported (exit 1, a message naming the file, no
//! panic or signal, bounded memory and time) and leave the directory as it
//! was: nothing extracted, nothing thinned, no input rewritten.

use test_support::hostile as runner;

#[test]
fn hostile_corpus_offload() {
    runner::check_tool("offload", env!("CARGO_BIN_EXE_offload").as_ref());
}
