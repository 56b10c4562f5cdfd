//! Zip archives (Python wheels) as inputs: which members are worth
//! reading, and a compressed member's decoded bytes as an input of their
//! own (an unnamed scratch file, mapped), so that reading a wheel needs no
//! unpacking and no more memory than reading the library itself.

use offload_cli::diag::os_error_text;
use offload_cli::fsio::{self, Input};
use offload_format::zip;
use offload_format::zip::{Archive, Member};

use crate::model::Source;

/// How many first bytes of a member are decoded to see what it is.
pub const SNIFF: u64 = 4096;

/// The first [`SNIFF`] bytes of a member (fewer if it is shorter).
pub fn head(m: &Member<'_>) -> Result<Vec<u8>, zip::ZipError> {
    if let Some(s) = m.stored() {
        return Ok(s[..s.len().min(SNIFF as usize)].to_vec());
    }
    let mut v = Vec::with_capacity(SNIFF as usize);
    m.decode(&mut v, SNIFF)?;
    Ok(v)
}

/// Why a member could not be decoded.
#[derive(Debug)]
pub enum DecodeError {
    /// The scratch file could not be made or read.
    Scratch(&'static str, std::io::Error),
    /// The member's data (the message names the member).
    Member(zip::ZipError),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Scratch(doing, e) => write!(f, "{doing}: {}", os_error_text(e)),
            DecodeError::Member(e) => write!(f, "{e}"),
        }
    }
}

impl DecodeError {
    /// The error of the archive `shown`, its cause kept.
    pub fn within(self, shown: &str) -> crate::error::Error {
        match self {
            DecodeError::Scratch(doing, e) => crate::error::Error::io_doing(shown, doing, e),
            DecodeError::Member(e) => crate::error::Error::input(shown, None, e),
        }
    }
}

/// Decodes a member of `zip` into a scratch file and maps it. The pages
/// of `zip` holding the member are let go of as they are read. Errors
/// about the member name it.
pub fn decode(zip: &Input, m: &Member<'_>) -> Result<Input, DecodeError> {
    let mut file =
        fsio::scratch_file().map_err(|e| DecodeError::Scratch("cannot make a scratch file", e))?;
    let at = m.data_offset as usize;
    let mut release = |n: usize| zip.release(at..at + n);
    m.decode_with_progress(&mut file, u64::MAX, &mut release)
        .map_err(DecodeError::Member)?;
    release(m.data.len());
    Input::from_file(file).map_err(|e| DecodeError::Scratch("cannot read the scratch file", e))
}

/// The bytes a node's offsets refer to: the file, or the decoded zip
/// member (of `archive`, the archive's bytes, when already read: standard
/// input is read once). The error says what is wrong, not where (the
/// caller names `source`).
pub fn open(source: &Source, archive: Option<&Input>) -> Result<Input, String> {
    let read = |p: &std::path::Path| {
        fsio::read_input(p.as_os_str()).map_err(|e| os_error_text(&e).to_string())
    };
    match source {
        Source::File(p) => read(p),
        Source::ZipMember { zip, index, .. } => {
            let owned;
            let input = match archive {
                Some(a) => a,
                None => {
                    owned = read(zip)?;
                    &owned
                }
            };
            let archive = Archive::parse(input).map_err(|e| e.to_string())?;
            let m = archive
                .members
                .get(*index)
                .ok_or_else(|| "the archive changed while being read".to_owned())?;
            decode(input, m).map_err(|e| e.to_string())
        }
    }
}
