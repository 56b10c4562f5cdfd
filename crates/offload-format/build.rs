//! Tells the library which zlib libz-sys linked (for `ccob::libraries`):
//! libz-sys reports `root` only when it built its own copy, having found
//! no system zlib.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(offload_zlib_bundled)");
    println!("cargo::rerun-if-env-changed=DEP_Z_ROOT");
    if std::env::var_os("DEP_Z_ROOT").is_some() {
        println!("cargo::rustc-cfg=offload_zlib_bundled");
    }
}
