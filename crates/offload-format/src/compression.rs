//! Which compression libraries this build links: compressed bytes are
//! LLVM's only with the same libzstd and zlib as LLVM's build (decompression
//! is the same in every build).

/// Where a compression library comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The system's shared library, found by pkg-config at build time (as
    /// LLVM links it).
    System,
    /// A copy built into the binary from a Rust crate's sources.
    Bundled,
}

/// The compression libraries of this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Libraries {
    /// libzstd's version, as the library reports it (`ZSTD_versionString`).
    pub zstd_version: &'static str,
    /// Where the linked libzstd comes from.
    pub zstd: Origin,
    /// The deflate implementation: `"zlib"` (C zlib, system or bundled by
    /// libz-sys) or `"miniz_oxide"` (pure Rust).
    pub deflate: &'static str,
    /// Where the deflate implementation comes from (pure Rust is bundled).
    pub zlib: Origin,
}

/// The compression libraries this build links.
pub fn libraries() -> Libraries {
    Libraries {
        zstd_version: zstd::zstd_safe::version_string(),
        zstd: if cfg!(feature = "system-zstd") {
            Origin::System
        } else {
            Origin::Bundled
        },
        deflate: if cfg!(feature = "system-zlib") {
            "zlib"
        } else {
            "miniz_oxide"
        },
        zlib: if cfg!(feature = "system-zlib") && !cfg!(offload_zlib_bundled) {
            Origin::System
        } else {
            Origin::Bundled
        },
    }
}

impl Libraries {
    /// Whether compressed output can be byte-identical to an LLVM that links
    /// the system's libraries: both come from the system.
    pub fn all_system(&self) -> bool {
        self.zstd == Origin::System && self.zlib == Origin::System
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linked_zstd_reports_its_version() {
        let libs = libraries();
        // "1.5.4", "1.5.7": three numbers.
        assert_eq!(libs.zstd_version.split('.').count(), 3, "{libs:?}");
        if cfg!(not(feature = "system-zstd")) {
            // zstd-sys 2.1.2 bundles 1.5.7.
            assert_eq!(libs.zstd_version, "1.5.7");
        }
    }
}
