//! Choosing a file-type handler, as LLVM does from `-type` and (for `o` and
//! `a`) the reference input, and walking a bundle's entries.
//!
//! Handlers: binary bundles, text bundles and object files (host object
//! with bundle sections, `offload_format::object_bundle`).

use std::borrow::Cow;

use offload_format::object_bundle::{BundleSection, Error as ObjError, ObjectFile};
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
/// ...). Anything else, including bitcode, archives, bundles and objects
/// LLVM rejects as malformed, goes to the binary handler.
pub fn is_object_file(data: &[u8]) -> bool {
    !matches!(ObjectFile::parse(data), Err(ObjError::NotAnObject(_)))
}

/// Walks a bundle's entries in the order LLVM visits them.
pub enum Reader<'a> {
    Binary {
        /// In LLVM's order, as LLVM accepts them ([`bundle::parse_ranges`]).
        entries: Vec<bundle::EntryRange<'a>>,
        data: &'a [u8],
        next: usize,
    },
    Text(text_bundle::Reader<'a>),
    /// Bundle sections in section-header order; reading stops at the first
    /// error, which is kept for [`Reader::finish`].
    Object {
        sections: std::vec::IntoIter<Result<BundleSection<'a>, ObjError>>,
        current: Option<BundleSection<'a>>,
        error: Option<ObjError>,
    },
}

/// An object-file error as the bundler prints it.
pub fn object_fail(e: &ObjError) -> Fail {
    Fail::msg(e.to_string())
}

impl<'a> Reader<'a> {
    /// Opens `data` with `handler`. `name` is the input as given, for
    /// messages.
    pub fn new(handler: Handler, data: &'a [u8], name: &str) -> Result<Reader<'a>, Fail> {
        match handler {
            Handler::Binary => {
                let entries =
                    bundle::parse_ranges(data).map_err(|e| Fail::msg(format!("'{name}': {e}")))?;
                Ok(Reader::Binary {
                    entries,
                    data,
                    next: 0,
                })
            }
            Handler::Text(c) => Ok(Reader::Text(text_bundle::Reader::new(data, c))),
            Handler::Object => {
                let sections: Vec<_> = match ObjectFile::parse(data) {
                    Ok(file) => file.bundle_sections().collect(),
                    // Formats we do not read (WebAssembly, XCOFF, GOFF, PE
                    // images): 22 opens them and finds no bundle sections
                    // in what clang writes, so they read as plain objects.
                    Err(ObjError::Unsupported { .. }) => Vec::new(),
                    Err(e) => return Err(object_fail(&e)),
                };
                Ok(Reader::Object {
                    sections: sections.into_iter(),
                    current: None,
                    error: None,
                })
            }
        }
    }

    /// The next entry's ID.
    pub fn next_id(&mut self) -> Option<&'a [u8]> {
        match self {
            Reader::Binary { entries, next, .. } => {
                let e = entries.get(*next)?;
                *next += 1;
                Some(e.id)
            }
            Reader::Text(r) => r.next_entry(),
            Reader::Object {
                sections,
                current,
                error,
            } => match sections.next()? {
                Ok(sec) => {
                    let id = sec.id;
                    *current = Some(sec);
                    Some(id)
                }
                Err(e) => {
                    *error = Some(e);
                    None
                }
            },
        }
    }

    /// The error that ended the walk early, if any (object section tables
    /// can fail part-way, after some IDs were seen).
    pub fn finish(&mut self) -> Result<(), Fail> {
        match self {
            Reader::Object { error: Some(e), .. } => Err(object_fail(e)),
            _ => Ok(()),
        }
    }

    /// Whether the entry last returned is an object's host placeholder (one
    /// zero byte): its output is then the host object, not the bytes.
    pub fn is_host_placeholder(&self) -> bool {
        matches!(self, Reader::Object { current: Some(s), .. } if s.is_host_placeholder())
    }

    /// The content of the entry last returned by [`Reader::next_id`]
    /// (reading it moves past it).
    pub fn content(&mut self, name: &str) -> Result<Cow<'a, [u8]>, Fail> {
        match self {
            // An entry whose range wraps past 2^64 is listed and passed
            // over as LLVM does; reading it is the error (LLVM reads out of
            // bounds there).
            Reader::Binary {
                entries,
                data,
                next,
            } => match next.checked_sub(1).and_then(|i| entries.get(i)) {
                Some(e) => e
                    .data_in(data)
                    .map(Cow::Borrowed)
                    .map_err(|err| Fail::msg(format!("'{name}': {err}"))),
                None => Ok(Cow::Borrowed(&[][..])),
            },
            Reader::Text(r) => r
                .take()
                .map(Cow::Borrowed)
                .map_err(|e| Fail::msg(format!("'{name}': {e}"))),
            Reader::Object { current, .. } => match current {
                Some(s) => s.contents().map(Cow::Borrowed).map_err(|e| object_fail(&e)),
                None => Ok(Cow::Borrowed(&[][..])),
            },
        }
    }

    /// After listing an entry, moves past it (text bundles skip to the END
    /// line; a missing END is an error).
    pub fn skip_listed(&mut self, name: &str) -> Result<(), Fail> {
        match self {
            Reader::Binary { .. } | Reader::Object { .. } => Ok(()),
            Reader::Text(r) => r
                .skip_to_end()
                .map_err(|e| Fail::msg(format!("'{name}': {e}"))),
        }
    }
}
