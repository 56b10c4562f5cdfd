//! The bundle entries of one archive member, in the order LLVM 22 visits
//! them.
//!
//! A member that is an object file keeps its entries in sections named
//! `__CLANG_OFFLOAD_BUNDLE__<id>`, visited in section order; anything else
//! is read as a binary bundle, visited in `StringMap` order (see
//! [`crate::bundle::parse`]). Members that are neither (bitcode, text,
//! plain host objects, garbage) have no entries.

use crate::bundle;
use crate::object_bundle;

/// Why a member's entries could not be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntriesError {
    /// A binary bundle whose header is damaged after its first entry
    /// (LLVM 22 crashes on these).
    Bundle(bundle::BundleError),
    /// An object file whose section names cannot be read (LLVM's message),
    /// or whose format is not read here.
    Object(object_bundle::Error),
}

impl std::fmt::Display for EntriesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntriesError::Bundle(e) => e.fmt(f),
            EntriesError::Object(e) => e.fmt(f),
        }
    }
}

/// Where an entry's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryData<'a> {
    /// These bytes of the member.
    Bytes(&'a [u8]),
    /// The host placeholder of an object bundle (one zero byte): the entry
    /// stands for the member object without its bundle sections.
    HostObject,
    /// The section contents cannot be read (reported only if the entry is
    /// wanted, as in LLVM); the reason.
    Unreadable(String),
}

/// One bundle entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The entry ID exactly as stored.
    pub id: &'a [u8],
    /// Its contents.
    pub data: EntryData<'a>,
}

/// The entries of `data` (a whole, decompressed member) in LLVM 22's
/// visiting order. The list ends early, with an error, where LLVM would
/// fail while walking it; entries before that point are listed.
///
/// For binary bundles the list also ends at an entry with an empty ID,
/// where LLVM's archive loop stops looking at the member; with
/// `keep_empty_ids` (the `-check-input-archive` walk, which does not stop
/// there) such entries are listed.
pub fn entries(data: &[u8], keep_empty_ids: bool) -> Vec<Result<Entry<'_>, EntriesError>> {
    let mut out = Vec::new();
    let file = match object_bundle::ObjectFile::parse(data) {
        Ok(file) => file,
        // LLVM does not open it as an object: the binary handler reads it.
        Err(object_bundle::Error::NotAnObject(_)) => {
            match bundle::parse(data) {
                Ok(list) => {
                    for e in list {
                        if e.id.is_empty() && !keep_empty_ids {
                            break;
                        }
                        out.push(Ok(Entry {
                            id: e.id,
                            data: EntryData::Bytes(e.data),
                        }));
                    }
                }
                Err(e) => out.push(Err(EntriesError::Bundle(e))),
            }
            return out;
        }
        Err(e) => {
            out.push(Err(EntriesError::Object(e)));
            return out;
        }
    };
    for section in file.bundle_sections() {
        match section {
            // LLVM's magic test needs at least one byte after the prefix,
            // so a section named just the prefix is not a bundle section.
            Ok(s) if s.id.is_empty() => {}
            Ok(s) => {
                let data = if s.is_host_placeholder() {
                    EntryData::HostObject
                } else {
                    match s.contents() {
                        Ok(bytes) => EntryData::Bytes(bytes),
                        Err(e) => EntryData::Unreadable(e.to_string()),
                    }
                };
                out.push(Ok(Entry { id: s.id, data }));
            }
            Err(e) => {
                out.push(Err(EntriesError::Object(e)));
                break;
            }
        }
    }
    out
}

/// The entry IDs of a raw member as `-check-input-archive` collects them
/// (no decompression, empty IDs included), or the first error.
pub(crate) fn ids_for_check(data: &[u8]) -> Result<Vec<&[u8]>, EntriesError> {
    entries(data, true)
        .into_iter()
        .map(|e| e.map(|e| e.id))
        .collect()
}
