//! Says so at build time when the bundler is built without the system's
//! compression libraries: its compressed bundles can then differ from LLVM's.

fn main() {
    if std::env::var_os("CARGO_FEATURE_SYSTEM_COMPRESSION").is_none() {
        println!(
            "cargo::warning=clang-offload-bundler is built with the bundled zstd 1.5.7 \
             and pure-Rust deflate (no `system-compression` feature): `-compress` output \
             can differ from LLVM's; `OFFLOAD_TOOLS_VERSION=1 clang-offload-bundler \
             --version` says which libraries a binary links"
        );
    }
}
