//! The values of a CCOB header's fields: the version, the compression
//! method, and which field a version 2 header narrows to 32 bits.

/// A CCOB header version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// 20-byte header, 32-bit uncompressed size, no total size.
    V1,
    /// 24-byte header, 32-bit total and uncompressed sizes.
    V2,
    /// 32-byte header, 64-bit total and uncompressed sizes.
    V3,
}

impl Version {
    /// The version number as stored in the header.
    pub fn number(self) -> u16 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }

    /// The version for a stored number, if it is one we know.
    pub fn from_number(number: u16) -> Option<Version> {
        match number {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            3 => Some(Version::V3),
            _ => None,
        }
    }

    /// Size of this version's header in bytes.
    pub fn header_len(self) -> usize {
        match self {
            Version::V1 => 20,
            Version::V2 => 24,
            Version::V3 => 32,
        }
    }
}

/// A compression method as stored in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// zlib stream (RFC 1950 wrapper around deflate), method 0.
    Zlib,
    /// zstd frame(s), method 1.
    Zstd,
}

impl Method {
    /// The stored method number.
    pub fn code(self) -> u16 {
        match self {
            Method::Zlib => 0,
            Method::Zstd => 1,
        }
    }

    /// The method for a stored number, if it is one we know.
    pub(crate) fn from_code(code: u16) -> Option<Method> {
        match code {
            0 => Some(Method::Zlib),
            1 => Some(Method::Zstd),
            _ => None,
        }
    }

    /// The name LLVM prints for this method (`zlib` or `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Zlib => "zlib",
            Method::Zstd => "zstd",
        }
    }

    /// The level LLVM 22's bundler uses when none is given: zstd 3 (with
    /// long-distance matching), zlib 6.
    pub(crate) fn default_level(self) -> i32 {
        match self {
            Method::Zlib => 6,
            Method::Zstd => 3,
        }
    }
}

/// Which 32-bit field of a narrow header could not hold its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V2Field {
    /// The uncompressed size.
    UncompressedSize,
    /// The total file size.
    TotalSize,
}
