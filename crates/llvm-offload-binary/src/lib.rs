//! `llvm-offload-binary` (also installed as `clang-offload-packager`).
//! Both binaries call [`main`]; behaviour differs only by argv[0].

/// Entry point shared by both binary names.
pub fn main() -> std::process::ExitCode {
    eprintln!("not implemented yet");
    std::process::ExitCode::FAILURE
}
