//! The one error type of the tools: a message already worded for the
//! user, printed as `<argv0>: error: <message>` (or, for LLVM's own fatal
//! errors, `LLVM ERROR: <message>`), with LLVM's `'<file>': <what>` form
//! for problems with a file.

use std::io;

use offload_format::llvm::os_error_text;

/// A fatal error of a tool. The message may hold any bytes (file names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The text after `<argv0>: error: ` (or `LLVM ERROR: `).
    pub message: Vec<u8>,
    /// Printed as `LLVM ERROR: <message>`, with no tool name.
    pub llvm_fatal: bool,
    /// What the message leaves out, printed after it as a note only when
    /// explanations are asked for ([`crate::explain`]).
    pub explanation: Option<Vec<u8>>,
}

impl Error {
    /// An error with this text.
    pub fn msg(text: impl Into<String>) -> Error {
        Error::bytes(text.into().into_bytes())
    }

    /// An error whose text may hold any bytes.
    pub fn bytes(message: impl Into<Vec<u8>>) -> Error {
        Error {
            message: message.into(),
            llvm_fatal: false,
            explanation: None,
        }
    }

    /// An error LLVM reports as `LLVM ERROR: <text>`.
    pub fn fatal(text: impl Into<String>) -> Error {
        Error {
            message: text.into().into_bytes(),
            llvm_fatal: true,
            explanation: None,
        }
    }

    /// The same error, with `text` as its explanation.
    pub fn explained(mut self, text: impl Into<Vec<u8>>) -> Error {
        self.explanation = Some(text.into());
        self
    }

    /// The bare OS text of an I/O error.
    pub fn io(error: &io::Error) -> Error {
        Error::msg(os_error_text(error))
    }

    /// `'<file>': <what>`: LLVM's form for a problem with a file.
    pub fn file(file: impl AsRef<[u8]>, what: impl AsRef<[u8]>) -> Error {
        Error::bytes(quoted(file.as_ref(), what.as_ref()))
    }

    /// `'<file>': <OS error text>`.
    pub fn file_io(file: impl AsRef<[u8]>, error: &io::Error) -> Error {
        Error::file(file, os_error_text(error))
    }
}

/// `'<file>': <what>` as bytes.
pub fn quoted(file: &[u8], what: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(file.len() + what.len() + 4);
    m.push(b'\'');
    m.extend_from_slice(file);
    m.extend_from_slice(b"': ");
    m.extend_from_slice(what);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_read_like_llvm() {
        let e = Error::file_io(b"in.o", &io::Error::from_raw_os_error(2));
        assert_eq!(e.message, b"'in.o': No such file or directory");
        assert!(!e.llvm_fatal);
        assert!(Error::fatal("x").llvm_fatal);
    }
}
