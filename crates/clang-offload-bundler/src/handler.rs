//! Choosing a file-type handler, as LLVM does from `-type` and (for `o` and
//! `a`) the reference input, and walking a bundle's entries.
//!
//! Handlers: binary bundles, text bundles, object files (host object with
//! bundle sections) and, for unbundling `-type=a`, archives. The object and
//! archive handlers are provided by the object-bundle and archive modules
//! when they are integrated; until then they report that plainly.

use std::borrow::Cow;

use offload_format::{bundle, text_bundle};

use crate::job::Fail;

/// The format a file is handled as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// `__CLANG_OFFLOAD_BUNDLE__` binary bundle.
    Binary,
    /// Text bundle with this comment string.
    Text(&'static str),
    /// A host object file whose bundle entries are sections.
    Object,
}

/// LLVM's `CreateFileHandler`: the handler for `file_type`, looking at
/// `reference` (the host input, the first input of a HIP-only bundle, or the
/// input being read) for `o` and `a`.
pub fn select(file_type: &str, reference: &[u8]) -> Result<Handler, Fail> {
    if let Some(c) = text_bundle::comment_for_type(file_type) {
        return Ok(Handler::Text(c));
    }
    match file_type {
        "bc" | "gch" | "ast" => Ok(Handler::Binary),
        "o" | "a" => Ok(if is_object_file(reference) {
            Handler::Object
        } else {
            Handler::Binary
        }),
        _ => Err(Fail::msg(format!(
            "'{file_type}': invalid file type specified"
        ))),
    }
}

/// Whether LLVM would open `data` as an object file (ELF, COFF, Mach-O,
/// wasm, XCOFF). Anything else, including bitcode, archives and bundles,
/// goes to the binary handler.
///
/// This looks at magic numbers only; the object-bundle integration replaces
/// it with a real object parse (a malformed object falls back to binary in
/// LLVM).
fn is_object_file(data: &[u8]) -> bool {
    let m = |p: &[u8]| data.starts_with(p);
    m(b"\x7fELF")
        || m(&[0xfe, 0xed, 0xfa, 0xce])
        || m(&[0xfe, 0xed, 0xfa, 0xcf])
        || m(&[0xce, 0xfa, 0xed, 0xfe])
        || m(&[0xcf, 0xfa, 0xed, 0xfe])
        || m(b"\0asm")
        || m(&[0x64, 0x86])
        || m(&[0x4c, 0x01])
        || m(&[0x64, 0xaa])
        || m(b"MZ")
}

/// The message for paths that need a handler not integrated yet.
pub fn object_unsupported() -> Fail {
    Fail::msg("object files as bundles (-type=o with an object file) are not supported yet")
}

/// Walks a bundle's entries in the order LLVM visits them.
pub enum Reader<'a> {
    Binary {
        entries: Vec<bundle::Entry<'a>>,
        next: usize,
    },
    Text(text_bundle::Reader<'a>),
}

impl<'a> Reader<'a> {
    /// Opens `data` with `handler`. `name` is the input as given, for
    /// messages.
    pub fn new(handler: Handler, data: &'a [u8], name: &str) -> Result<Reader<'a>, Fail> {
        match handler {
            Handler::Binary => {
                let entries =
                    bundle::parse(data).map_err(|e| Fail::msg(format!("'{name}': {e}")))?;
                Ok(Reader::Binary { entries, next: 0 })
            }
            Handler::Text(c) => Ok(Reader::Text(text_bundle::Reader::new(data, c))),
            Handler::Object => Err(object_unsupported()),
        }
    }

    /// The next entry's ID.
    pub fn next_id(&mut self) -> Option<&'a [u8]> {
        match self {
            Reader::Binary { entries, next } => {
                let e = entries.get(*next)?;
                *next += 1;
                Some(e.id)
            }
            Reader::Text(r) => r.next_entry(),
        }
    }

    /// The content of the entry last returned by [`Reader::next_id`]
    /// (reading it moves past it).
    pub fn content(&mut self, name: &str) -> Result<Cow<'a, [u8]>, Fail> {
        match self {
            Reader::Binary { entries, next } => Ok(Cow::Borrowed(
                next.checked_sub(1)
                    .and_then(|i| entries.get(i))
                    .map_or(&[][..], |e| e.data),
            )),
            Reader::Text(r) => r
                .take()
                .map(Cow::Borrowed)
                .map_err(|e| Fail::msg(format!("'{name}': {e}"))),
        }
    }

    /// After listing an entry, moves past it (text bundles skip to the END
    /// line; a missing END is an error).
    pub fn skip_listed(&mut self, name: &str) -> Result<(), Fail> {
        match self {
            Reader::Binary { .. } => Ok(()),
            Reader::Text(r) => r
                .skip_to_end()
                .map_err(|e| Fail::msg(format!("'{name}': {e}"))),
        }
    }
}
