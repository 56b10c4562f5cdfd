//! What identifies a build of the tools beyond `--version`, which prints
//! LLVM's text verbatim so that scripts parsing it keep working.
//!
//! With the environment variable `OFFLOAD_TOOLS_VERSION` set (to anything
//! but empty or `0`), `--version` prints LLVM's text and then the lines of
//! [`identification`]: project, version, commit, and the compression
//! libraries linked (with the `compression` feature: a tool that does not
//! compress links none and names none). LLVM's tools have no such variable, so it cannot change
//! what a script sees by accident.

#[cfg(feature = "compression")]
use offload_format::compression::{libraries, Origin};

/// The environment variable that asks `--version` for the identification.
pub const VERSION_VAR: &str = "OFFLOAD_TOOLS_VERSION";

/// The git commit the binary was built from ("unknown" outside git).
pub const COMMIT: &str = env!("OFFLOAD_TOOLS_COMMIT");

/// Whether `--version` should add the identification.
pub fn requested() -> bool {
    crate::env::get()
        .var(VERSION_VAR)
        .is_some_and(|v| !v.is_empty() && v != "0")
}

/// The identification lines for `tool` (the name it was invoked as).
pub fn identification(tool: &str) -> String {
    let text = format!(
        "{tool}: offload-tools {} (commit {COMMIT})\n",
        env!("CARGO_PKG_VERSION"),
    );
    #[cfg(feature = "compression")]
    let text = text + &compression();
    text
}

/// The compression line, and a warning where the libraries are not the
/// system's.
#[cfg(feature = "compression")]
fn compression() -> String {
    let libs = libraries();
    let origin = |o: Origin, system: &str| match o {
        Origin::System => format!("system {system}"),
        Origin::Bundled => "bundled".to_string(),
    };
    let mut text = format!(
        "compression: zstd {} ({}), {} ({})\n",
        libs.zstd_version,
        origin(libs.zstd, "libzstd"),
        libs.deflate,
        origin(libs.zlib, "libz"),
    );
    if !libs.all_system() {
        text.push_str(
            "warning: not the system's compression libraries: compressed output \
             can differ from LLVM's (see docs/compat.md)\n",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_project_version_commit_and_libraries() {
        let text = identification("clang-offload-bundler");
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with(&format!(
                "clang-offload-bundler: offload-tools {} (commit ",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
        assert!(!COMMIT.is_empty());
        #[cfg(feature = "compression")]
        {
            let libs = text.lines().nth(1).unwrap();
            assert!(libs.starts_with("compression: zstd 1.5."), "{text}");
            assert_eq!(
                text.contains("warning: not the system's"),
                !libraries().all_system(),
                "{text}"
            );
        }
        #[cfg(not(feature = "compression"))]
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}
