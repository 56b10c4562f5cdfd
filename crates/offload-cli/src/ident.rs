//! What identifies a build of the tools beyond `--version`, which prints
//! LLVM's text verbatim so that scripts parsing it keep working.
//!
//! With the environment variable `OFFLOAD_TOOLS_VERSION` set (to anything
//! but empty or `0`), `--version` prints LLVM's text and then the lines of
//! [`identification`]: project, version, commit, and the compression
//! libraries linked (with the `compression` feature: a tool that does not
//! compress links none and names none), and, in the Python wheel's build
//! (the `python-wheel` feature), that it is that build. LLVM's tools have
//! no such variable, so it cannot change what a script sees by accident.
//!
//! `offload`, which is not a drop-in, prints the same always:
//! [`long_version`] is its `--version` text.

#[cfg(feature = "compression")]
use offload_format::compression::{libraries, Origin};

/// The environment variable that asks `--version` for the identification.
pub const VERSION_VAR: &str = "OFFLOAD_TOOLS_VERSION";

/// The git commit the binary was built from ("unknown" outside git).
pub const COMMIT: &str = env!("OFFLOAD_TOOLS_COMMIT");

/// The build, where it is not a cargo build of the tool's own crate: the
/// Python wheel's (`pip install offload-tools`; crates/offload-tools), whose
/// binaries carry their codecs (the bundled zstd and pure-Rust deflate).
pub const BUILD: Option<&str> = if cfg!(feature = "python-wheel") {
    Some("Python wheel build")
} else {
    None
};

/// Whether `--version` should add the identification.
pub fn requested() -> bool {
    crate::env::get()
        .var(VERSION_VAR)
        .is_some_and(|v| !v.is_empty() && v != "0")
}

/// The identification lines for `tool` (the name it was invoked as).
pub fn identification(tool: &str) -> String {
    format!("{tool}: offload-tools {}", details())
}

/// The version, commit and build, then a line per fact of the build (the
/// compression libraries): what follows `offload-tools ` in
/// [`identification`].
fn details() -> String {
    let text = match BUILD {
        Some(build) => format!("{} (commit {COMMIT}), {build}\n", env!("CARGO_PKG_VERSION")),
        None => format!("{} (commit {COMMIT})\n", env!("CARGO_PKG_VERSION")),
    };
    #[cfg(feature = "compression")]
    let text = text + &compression();
    text
}

/// `offload --version`'s text after the program's name (clap's
/// `long_version`): the version, commit and build, and the compression
/// libraries, as [`identification`] gives them to the drop-ins.
pub fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| details().trim_end().to_string())
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
        assert_eq!(
            first.ends_with(", Python wheel build"),
            cfg!(feature = "python-wheel"),
            "{text}"
        );
    }

    /// `offload --version` says what the drop-ins' identification says.
    #[test]
    fn the_long_version_is_the_identification_after_the_project() {
        let ident = identification("offload");
        let rest = ident.strip_prefix("offload: offload-tools ").unwrap();
        assert_eq!(long_version(), rest.trim_end());
        assert!(long_version().starts_with(env!("CARGO_PKG_VERSION")));
    }
}
