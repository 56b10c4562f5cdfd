//! `clang-offload-packager`: the same tool as `llvm-offload-binary`, under
//! the name older LLVM releases give it.

fn main() -> std::process::ExitCode {
    llvm_offload_binary::main()
}
