//! The inspector's errors: what failed, on which file and where in it,
//! with the cause kept (the `io::Error` itself, not its text), so that a
//! caller can tell a full disk from damage. `Display` gives the messages
//! the tool prints after `offload: error: `.

use std::fmt;
use std::io;

use offload_cli::diag::os_error_text;
use offload_cli::fsio;

/// An error of `thin`, of reading a zip member, of an object file.
#[derive(Debug)]
pub enum Error {
    /// Reading or writing a file failed.
    Io {
        /// The file, as shown.
        file: String,
        /// What was being done (`compressing`, `cannot make a scratch
        /// file`), when the file alone does not say.
        doing: Option<&'static str>,
        /// The cause.
        source: io::Error,
    },
    /// An input is not as it should be.
    Input {
        /// The file (or `ARCHIVE!/MEMBER`), as shown.
        file: String,
        /// Where in it (`bundle #0`, a section), if known.
        place: Option<String>,
        /// What is wrong.
        what: String,
    },
    /// A file is not thinned, and why (damage; a `--keep` naming nothing
    /// in it): the whole message, which names the file.
    Refused(String),
    /// Committing the outputs failed: nothing was written.
    Commit(io::Error),
}

impl Error {
    /// An I/O error on `file`.
    pub fn io(file: impl fmt::Display, source: io::Error) -> Error {
        Error::Io {
            file: file.to_string(),
            doing: None,
            source,
        }
    }

    /// An I/O error on `file` while `doing` something.
    pub fn io_doing(file: impl fmt::Display, doing: &'static str, source: io::Error) -> Error {
        Error::Io {
            file: file.to_string(),
            doing: Some(doing),
            source,
        }
    }

    /// Something wrong with `file` at `place`.
    pub fn input(file: impl fmt::Display, place: Option<&str>, what: impl fmt::Display) -> Error {
        Error::Input {
            file: file.to_string(),
            place: place.map(str::to_owned),
            what: what.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                file,
                doing: Some(doing),
                source,
            } => write!(f, "{file}: {doing}: {}", os_error_text(source)),
            Error::Io {
                file,
                doing: None,
                source,
            } => write!(f, "{file}: {}", os_error_text(source)),
            Error::Input {
                file,
                place: Some(place),
                what,
            } => write!(f, "{file}: {place}: {what}"),
            Error::Input {
                file,
                place: None,
                what,
            } => write!(f, "{file}: {what}"),
            Error::Refused(why) => f.write_str(why),
            Error::Commit(e) => {
                let text = os_error_text(e);
                let text = if text == "changed while being read" {
                    format!("{text} (written to by another program while thinned; not replaced)")
                } else {
                    text.to_string()
                };
                match fsio::failed_output(e) {
                    Some(p) => write!(f, "{}: {text}", p.display()),
                    None => f.write_str(&text),
                }
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } | Error::Commit(source) => Some(source),
            _ => None,
        }
    }
}
