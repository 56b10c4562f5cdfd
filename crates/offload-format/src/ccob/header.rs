//! CCOB header layouts and detection.

use super::error::CcobError;
use super::fields::{Method, V2Field, Version};
use crate::bytes::{Bytes, Endian};

/// The four bytes every compressed bundle starts with.
pub const MAGIC: [u8; 4] = *b"CCOB";

/// Bytes shared by every header version: magic, version and method.
const COMMON_LEN: usize = 8;

/// How an input looks to the bundler's "decompress if necessary" step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detection {
    /// Shorter than 8 bytes: treated as uncompressed without comment, even if
    /// it starts with `CCOB`.
    TooShort,
    /// 8 bytes or more, not starting with `CCOB` (the bundler's `-verbose`
    /// says "Uncompressed bundle.").
    Uncompressed,
    /// Starts with `CCOB` and is at least 8 bytes long.
    Compressed,
}

/// Classify an input the way LLVM 22's bundler does before unbundling.
pub fn detect(input: &[u8]) -> Detection {
    if input.len() < COMMON_LEN {
        Detection::TooShort
    } else if input.starts_with(&MAGIC) {
        Detection::Compressed
    } else {
        Detection::Uncompressed
    }
}

/// A decoded CCOB header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Header version.
    pub version: Version,
    /// Compression method of the payload.
    pub method: Method,
    /// Header plus payload size in bytes; `None` for v1, which has no field.
    pub total_size: Option<u64>,
    /// Size of the uncompressed bundle in bytes.
    pub uncompressed_size: u64,
    /// Truncated MD5 of the uncompressed bundle (see [`super::truncated_md5`]).
    pub hash: u64,
}

fn u16_at(input: &[u8], offset: usize) -> Option<u16> {
    Bytes::new(input).u16_at(offset as u64, Endian::Little)
}

fn u32_at(input: &[u8], offset: usize) -> Option<u32> {
    Bytes::new(input).u32_at(offset as u64, Endian::Little)
}

fn u64_at(input: &[u8], offset: usize) -> Option<u64> {
    Bytes::new(input).u64_at(offset as u64, Endian::Little)
}

impl Header {
    /// Decode the header at the start of `input`.
    ///
    /// Checks, in LLVM's order: the magic, that the whole header of the
    /// stored version fits, the version, then the method. Sizes are not
    /// checked against the input here; see [`Header::ccob_len`].
    pub fn parse(input: &[u8]) -> Result<Header, CcobError> {
        if !input.starts_with(&MAGIC) {
            return Err(CcobError::NotCompressed);
        }
        let (version_number, method_code) = match (u16_at(input, 4), u16_at(input, 6)) {
            (Some(v), Some(m)) => (v, m),
            _ => {
                return Err(CcobError::HeaderTooSmall {
                    version: None,
                    needed: COMMON_LEN,
                    available: input.len(),
                })
            }
        };
        let Some(version) = Version::from_number(version_number) else {
            return Err(CcobError::UnknownVersion(version_number));
        };
        let needed = version.header_len();
        if input.len() < needed {
            return Err(CcobError::HeaderTooSmall {
                version: Some(version),
                needed,
                available: input.len(),
            });
        }
        let Some(method) = Method::from_code(method_code) else {
            return Err(CcobError::UnknownMethod(method_code));
        };
        // The length check above guarantees every read below succeeds; the
        // fallbacks only keep this free of panicking paths.
        let truncated = CcobError::HeaderTooSmall {
            version: Some(version),
            needed,
            available: input.len(),
        };
        let read = |r: Option<u64>| r.ok_or(truncated.clone());
        let header = match version {
            Version::V1 => Header {
                version,
                method,
                total_size: None,
                uncompressed_size: read(u32_at(input, 8).map(u64::from))?,
                hash: read(u64_at(input, 12))?,
            },
            Version::V2 => Header {
                version,
                method,
                total_size: Some(read(u32_at(input, 8).map(u64::from))?),
                uncompressed_size: read(u32_at(input, 12).map(u64::from))?,
                hash: read(u64_at(input, 16))?,
            },
            Version::V3 => Header {
                version,
                method,
                total_size: Some(read(u64_at(input, 8))?),
                uncompressed_size: read(u64_at(input, 16))?,
                hash: read(u64_at(input, 24))?,
            },
        };
        Ok(header)
    }

    /// Size of this header in bytes.
    pub fn len(&self) -> usize {
        self.version.header_len()
    }

    /// Always false: a header is never empty. Present for API symmetry with
    /// [`Header::len`].
    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many bytes of `input_len` this CCOB occupies, header included.
    ///
    /// v2/v3: the recorded total size, which must cover the header and fit
    /// in the input. v1 has no total size: the CCOB runs to the end of the
    /// input (callers splitting concatenations pass the span up to the next
    /// magic, see [`super::segments`]).
    pub fn ccob_len(&self, input_len: usize) -> Result<usize, CcobError> {
        let Some(total) = self.total_size else {
            return Ok(input_len);
        };
        let header_len = self.len();
        if total < header_len as u64 {
            return Err(CcobError::TotalSizeTooSmall { total, header_len });
        }
        match usize::try_from(total) {
            Ok(total) if total <= input_len => Ok(total),
            _ => Err(CcobError::TotalSizeBeyondInput {
                total,
                available: input_len,
            }),
        }
    }

    /// The compressed payload of the CCOB this header starts in `input`:
    /// the bytes after the header, up to [`Header::ccob_len`].
    pub fn payload<'a>(&self, input: &'a [u8]) -> Result<&'a [u8], CcobError> {
        let ccob_len = self.ccob_len(input.len())?;
        input
            .get(self.len()..ccob_len)
            .ok_or(CcobError::TotalSizeTooSmall {
                total: ccob_len as u64,
                header_len: self.len(),
            })
    }

    /// Serialize the header (little-endian, as every observed file is).
    ///
    /// Fields that do not fit the version's width are rejected rather than
    /// truncated: v1/v2 hold 32-bit sizes, and v2/v3 need a total size.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CcobError> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.number().to_le_bytes());
        out.extend_from_slice(&self.method.code().to_le_bytes());
        let narrow = |value: u64, what: V2Field| {
            u32::try_from(value).map_err(|_| CcobError::Version2Limit(what))
        };
        match self.version {
            Version::V1 => {
                out.extend_from_slice(
                    &narrow(self.uncompressed_size, V2Field::UncompressedSize)?.to_le_bytes(),
                );
            }
            Version::V2 => {
                let total = self.total_size.ok_or(CcobError::MissingTotalSize)?;
                out.extend_from_slice(&narrow(total, V2Field::TotalSize)?.to_le_bytes());
                out.extend_from_slice(
                    &narrow(self.uncompressed_size, V2Field::UncompressedSize)?.to_le_bytes(),
                );
            }
            Version::V3 => {
                let total = self.total_size.ok_or(CcobError::MissingTotalSize)?;
                out.extend_from_slice(&total.to_le_bytes());
                out.extend_from_slice(&self.uncompressed_size.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.hash.to_le_bytes());
        Ok(out)
    }
}
