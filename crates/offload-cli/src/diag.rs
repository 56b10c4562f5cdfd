//! Diagnostics printed the way LLVM's tools print them.
//!
//! The tools' own messages are `<argv0>: error: <text>` with `argv[0]` exactly
//! as invoked; `error: ` and `warning: ` are coloured only when stderr is a
//! terminal that supports colour, as LLVM's `WithColor` does, and
//! `NO_COLOR` is not set.

use std::ffi::OsStr;
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;

/// Writes diagnostics for one tool invocation.
#[derive(Debug, Clone)]
pub struct Diag {
    prefix: Vec<u8>,
    colour: bool,
}

impl Diag {
    /// `argv0` is printed verbatim before each message.
    pub fn new(argv0: &OsStr) -> Diag {
        Diag {
            prefix: argv0.as_bytes().to_vec(),
            colour: stderr_has_colour(),
        }
    }

    /// `<argv0>: error: <msg>`
    pub fn error(&self, msg: impl AsRef<[u8]>) {
        self.emit(Some(b"error: "), b"\x1b[0;1;31m", msg.as_ref());
    }

    /// `<argv0>: warning: <msg>`
    pub fn warning(&self, msg: impl AsRef<[u8]>) {
        self.emit(Some(b"warning: "), b"\x1b[0;1;35m", msg.as_ref());
    }

    /// `<argv0>: note: <msg>`
    pub fn note(&self, msg: impl AsRef<[u8]>) {
        self.emit(Some(b"note: "), b"\x1b[0;1;30m", msg.as_ref());
    }

    /// `<argv0>: note: <msg>`, only when explanations are asked for
    /// ([`crate::explain`]).
    pub fn explain(&self, msg: impl AsRef<[u8]>) {
        if crate::explain::enabled() {
            self.note(msg);
        }
    }

    /// `<argv0>: warning: <msg>`, only when explanations are asked for.
    pub fn explain_warning(&self, msg: impl AsRef<[u8]>) {
        if crate::explain::enabled() {
            self.warning(msg);
        }
    }

    /// `<argv0>: error: <message>` for `e` (`LLVM ERROR: <message>` for
    /// LLVM's fatal errors), then its explanation when explanations are
    /// asked for.
    pub fn fail(&self, e: &crate::error::Error) {
        if e.llvm_fatal {
            // LLVM's fatal errors: `LLVM ERROR: <msg>`, no program name.
            let mut line = b"LLVM ERROR: ".to_vec();
            line.extend_from_slice(&e.message);
            line.push(b'\n');
            write_stderr(&line);
        } else {
            self.error(&e.message);
        }
        if let Some(x) = &e.explanation {
            self.explain(x);
        }
    }

    /// `warning: <msg>` with no program prefix.
    pub fn bare_warning(&self, msg: impl AsRef<[u8]>) {
        let mut line = Vec::new();
        push_label(&mut line, self.colour, b"warning: ", b"\x1b[0;1;35m");
        line.extend_from_slice(msg.as_ref());
        line.push(b'\n');
        write_stderr(&line);
    }

    fn emit(&self, label: Option<&[u8]>, colour: &[u8], msg: &[u8]) {
        let mut line = self.prefix.clone();
        line.extend_from_slice(b": ");
        if let Some(label) = label {
            push_label(&mut line, self.colour, label, colour);
        }
        line.extend_from_slice(msg);
        line.push(b'\n');
        write_stderr(&line);
    }
}

fn push_label(line: &mut Vec<u8>, colour: bool, label: &[u8], code: &[u8]) {
    if colour {
        line.extend_from_slice(code);
        line.extend_from_slice(label);
        line.extend_from_slice(b"\x1b[0m");
    } else {
        line.extend_from_slice(label);
    }
}

/// Writes a whole message to stderr in one call, so lines from concurrent
/// tools don't interleave mid-line. Errors writing diagnostics are ignored,
/// as there is nowhere left to report them.
pub fn write_stderr(bytes: &[u8]) {
    let _ = io::stderr().lock().write_all(bytes);
}

/// Colour on a terminal that supports it, unless `NO_COLOR` is set (to
/// anything but empty: <https://no-color.org>).
fn stderr_has_colour() -> bool {
    if !io::stderr().is_terminal() {
        return false;
    }
    let env = crate::env::get();
    if env.var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    env.var("TERM").is_some_and(|t| t != "dumb")
}

/// The bare OS text of an I/O error, as LLVM's messages show it (the one
/// rule lives in the format library's [`offload_format::llvm`]).
pub use offload_format::llvm::os_error_text;
