//! Error types of the archive module.

use std::fmt;

/// Errors from reading an archive. `Display` gives LLVM's texts.
#[derive(Debug)]
#[non_exhaustive]
pub enum ArchiveError {
    /// No archive magic (LLVM: "file too small to be an archive").
    NotAnArchive,
    /// An AIX big archive (`<bigaf>`), which we do not read.
    UnsupportedBigArchive,
    /// A structural problem; the text is what LLVM puts in parentheses
    /// after "truncated or malformed archive".
    Malformed(String),
    /// The same, with a text that quotes header bytes as stored (a member
    /// name, a size field; LLVM does not escape the length of a `#1/` name
    /// when it steps to a member):
    /// `Display` shows bytes that are not UTF-8 as U+FFFD,
    /// [`ArchiveError::to_bytes`] gives them as stored.
    MalformedBytes(Vec<u8>),
    /// The same, met resolving a member's name (a GNU long-name offset
    /// outside the string table, or not decimal, or a name there without
    /// its terminator): LLVM finds these when a tool asks for the name,
    /// and its tools report them as they are, unlike damage met stepping
    /// to the next header, which some of them never check.
    MalformedName(String),
    /// LLVM's generic parse failure (special members in an order no format
    /// allows).
    ParseFailed,
    /// A thin member could not be read from disk. `Display` gives
    /// `'<member name>': <OS error text>`.
    ThinMember {
        /// The member name as stored.
        name: Vec<u8>,
        /// The I/O error.
        error: std::io::Error,
    },
}

impl fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchiveError::NotAnArchive => f.write_str("file too small to be an archive"),
            ArchiveError::UnsupportedBigArchive => {
                f.write_str("AIX big archives are not supported")
            }
            ArchiveError::Malformed(what) | ArchiveError::MalformedName(what) => {
                write!(f, "truncated or malformed archive ({what})")
            }
            ArchiveError::MalformedBytes(what) => write!(
                f,
                "truncated or malformed archive ({})",
                String::from_utf8_lossy(what)
            ),
            ArchiveError::ParseFailed => {
                f.write_str("Invalid data was encountered while parsing the file")
            }
            ArchiveError::ThinMember { name, error } => {
                write!(
                    f,
                    "'{}': {}",
                    String::from_utf8_lossy(name),
                    crate::llvm::os_error_text(error)
                )
            }
        }
    }
}

impl ArchiveError {
    /// The message as bytes: [`Display`](fmt::Display)'s text, except that
    /// a thin member's name and the bytes a malformed header is quoted with
    /// are given as stored (LLVM prints them byte for byte).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ArchiveError::ThinMember { name, error } => {
                let mut m = b"'".to_vec();
                m.extend_from_slice(name);
                m.extend_from_slice(b"': ");
                m.extend_from_slice(crate::llvm::os_error_text(error).as_bytes());
                m
            }
            ArchiveError::MalformedBytes(what) => {
                let mut m = b"truncated or malformed archive (".to_vec();
                m.extend_from_slice(what);
                m.push(b')');
                m
            }
            other => other.to_string().into_bytes(),
        }
    }
}

impl std::error::Error for ArchiveError {}

/// A non-fatal problem found while writing an archive: a bitcode member
/// whose symbols could not be read is stored without symbols, and LLVM
/// prints `warning: '<member>': <message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberWarning {
    /// The member name.
    pub member: Vec<u8>,
    /// What went wrong.
    pub message: String,
}

impl MemberWarning {
    /// `'<member>': <message>` with the member name as stored (LLVM prints
    /// it byte for byte); `Display` shows bytes that are not UTF-8 as U+FFFD.
    pub fn to_bytes(&self) -> Vec<u8> {
        [
            b"'",
            self.member.as_slice(),
            b"': ",
            self.message.as_bytes(),
        ]
        .concat()
    }
}

impl fmt::Display for MemberWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

/// Errors from writing an archive.
#[derive(Debug)]
#[non_exhaustive]
pub enum ArchiveWriteError {
    /// Writing the output failed.
    Io(std::io::Error),
    /// A member's symbols could not be read (a broken object file); LLVM
    /// fails the whole archive with `'<member>': <reason>`.
    Member {
        /// The member name.
        name: Vec<u8>,
        /// What is wrong with it (`Display`: LLVM 22's text).
        reason: crate::objfile::Error,
    },
    /// A member does not fit the 10-digit size field.
    TooLarge {
        /// The member name.
        name: Vec<u8>,
    },
}

impl ArchiveWriteError {
    /// The message as bytes, member names as stored (LLVM prints them byte
    /// for byte); `Display` shows bytes that are not UTF-8 as U+FFFD.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ArchiveWriteError::Io(e) => crate::llvm::os_error_text(e).into_bytes(),
            ArchiveWriteError::Member { name, reason } => {
                [b"'", name.as_slice(), b"': ", reason.to_string().as_bytes()].concat()
            }
            ArchiveWriteError::TooLarge { name } => {
                [b"File ", name.as_slice(), b" exceeds size limit"].concat()
            }
        }
    }
}

impl fmt::Display for ArchiveWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

impl std::error::Error for ArchiveWriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArchiveWriteError::Io(e) => Some(e),
            ArchiveWriteError::Member { reason, .. } => Some(reason),
            ArchiveWriteError::TooLarge { .. } => None,
        }
    }
}

impl From<std::io::Error> for ArchiveWriteError {
    fn from(e: std::io::Error) -> Self {
        ArchiveWriteError::Io(e)
    }
}
