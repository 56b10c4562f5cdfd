fn main() -> std::process::ExitCode {
    llvm_offload_binary::main()
}
