//! Opt-in explanations: with the environment variable `OFFLOAD_TOOLS_EXPLAIN`
//! set (to anything but empty or `0`), the tools add `note:` and `warning:`
//! lines after LLVM's messages where those leave a user stuck (what a
//! bundle holds when a target is not found, a target ID that loses its GPU
//! name, a listing or a filter that finds nothing, the file an OS error is
//! about). Unset, the output is LLVM's byte for byte: every explanation
//! goes through [`enabled`].

/// The environment variable that turns explanations on.
pub const VAR: &str = "OFFLOAD_TOOLS_EXPLAIN";

/// Whether explanations are asked for.
pub fn enabled() -> bool {
    crate::env::get()
        .var(VAR)
        .is_some_and(|v| !v.is_empty() && v != "0")
}
