//! `llvm-offload-binary`: the tool, whose code is the library's `main`.

fn main() -> std::process::ExitCode {
    llvm_offload_binary::main()
}
