//! Text offload bundles: the entries of a preprocessed source, LLVM IR,
//! assembly or dependency file, one after another, each between a START and
//! an END marker line written as a comment of that language.
//!
//! ```text
//! \n<C> __CLANG_OFFLOAD_BUNDLE____START__ <id>\n
//! <entry bytes, unchanged>
//! \n<C> __CLANG_OFFLOAD_BUNDLE____END__ <id>\n
//! ```
//!
//! `<C>` is the line-comment string of the file type ([`comment_for_type`]).
//! A marker is only recognised with the newline in front of it, so a file
//! always begins with an empty line and an entry's content never includes the
//! newline that precedes its END marker.

use std::fmt;
use std::io::{self, Write};

const START: &[u8] = b" __CLANG_OFFLOAD_BUNDLE____START__ ";
const END: &[u8] = b" __CLANG_OFFLOAD_BUNDLE____END__ ";

/// The comment string the bundler uses for a text file type (`-type=`), or
/// `None` if the type is not a text type.
pub fn comment_for_type(file_type: &str) -> Option<&'static str> {
    match file_type {
        "i" | "ii" | "cui" | "hipi" => Some("//"),
        "d" | "s" => Some("#"),
        "ll" => Some(";"),
        _ => None,
    }
}

/// Errors reading a text bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextBundleError {
    /// An entry's START marker has no END marker after it. (LLVM 22 reads
    /// past the end of its buffer, or loops, on such files.)
    MissingEnd {
        /// The entry's ID, as written after the START marker.
        id: Vec<u8>,
        /// Byte offset of the START marker line (its leading newline).
        at: usize,
    },
}

impl fmt::Display for TextBundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextBundleError::MissingEnd { id, at } => write!(
                f,
                "malformed text bundle: entry '{}' (START marker at byte {at}) has no END marker",
                String::from_utf8_lossy(id)
            ),
        }
    }
}

impl std::error::Error for TextBundleError {}

fn marker(comment: &str, kind: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(1 + comment.len() + kind.len());
    m.push(b'\n');
    m.extend_from_slice(comment.as_bytes());
    m.extend_from_slice(kind);
    m
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let tail = hay.get(from..)?;
    if needle.is_empty() {
        return Some(from);
    }
    tail.windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Writes a text bundle of `entries` (ID, content) in the given order with the
/// comment string `comment` (see [`comment_for_type`]).
pub fn write<W: Write>(out: &mut W, comment: &str, entries: &[(&[u8], &[u8])]) -> io::Result<()> {
    let start = marker(comment, START);
    let end = marker(comment, END);
    for (id, data) in entries {
        out.write_all(&start)?;
        out.write_all(id)?;
        out.write_all(b"\n")?;
        out.write_all(data)?;
        out.write_all(&end)?;
        out.write_all(id)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Number of bytes [`write()`] produces.
pub fn written_size(comment: &str, entries: &[(&[u8], &[u8])]) -> u64 {
    let fixed = (2 + 2 * comment.len() + START.len() + END.len() + 2) as u64;
    entries
        .iter()
        .map(|(id, data)| fixed + 2 * id.len() as u64 + data.len() as u64)
        .sum()
}

/// A cursor over a text bundle that walks entries the way LLVM 22 does.
///
/// Call [`Reader::next_entry`] to find the next START marker. Then either
/// [`Reader::take`] the entry (the cursor moves past its END line) or skip it
/// by calling `next_entry` again: the search then resumes right after the
/// skipped entry's START line, so markers inside its content are found too,
/// exactly as in LLVM.
pub struct Reader<'a> {
    data: &'a [u8],
    start: Vec<u8>,
    end: Vec<u8>,
    /// Where the next START search begins; `None` once past the end.
    cursor: Option<usize>,
    /// START line offset and ID of the entry last returned.
    current: Option<(usize, &'a [u8])>,
}

impl<'a> Reader<'a> {
    /// A reader over `data` for the comment string `comment`.
    pub fn new(data: &'a [u8], comment: &str) -> Self {
        Reader {
            data,
            start: marker(comment, START),
            end: marker(comment, END),
            cursor: Some(0),
            current: None,
        }
    }

    /// The ID of the next entry, or `None` when there are no more START
    /// markers (or the last one has no newline after its ID).
    pub fn next_entry(&mut self) -> Option<&'a [u8]> {
        let from = self.cursor?;
        let Some(at) = find(self.data, &self.start, from) else {
            self.cursor = None;
            return None;
        };
        let id_start = at + self.start.len();
        let Some(nl) = find(self.data, b"\n", id_start) else {
            self.cursor = None;
            return None;
        };
        self.cursor = Some(nl + 1);
        let id = &self.data[id_start..nl];
        self.current = Some((at, id));
        Some(id)
    }

    /// The content of the entry last returned by [`Reader::next_entry`];
    /// moves the cursor past its END line.
    pub fn take(&mut self) -> Result<&'a [u8], TextBundleError> {
        self.take_range()
    }

    /// Moves past the END line of the entry last returned by
    /// [`Reader::next_entry`], as `-list` does after printing each ID.
    pub fn skip_to_end(&mut self) -> Result<(), TextBundleError> {
        self.take_range().map(|_| ())
    }

    fn take_range(&mut self) -> Result<&'a [u8], TextBundleError> {
        let (at, id) = self.current.take().unwrap_or((0, &[]));
        let begin = self.cursor.unwrap_or(self.data.len());
        let Some(end) = find(self.data, &self.end, begin) else {
            return Err(TextBundleError::MissingEnd {
                id: id.to_vec(),
                at,
            });
        };
        // After the END marker, skip to just past the end of its line (or to
        // the end of the file if the line has no newline).
        self.cursor = find(self.data, b"\n", end + 1).map(|nl| nl + 1);
        Ok(&self.data[begin..end])
    }
}

/// An entry of a text bundle: (ID, content).
pub(crate) type TextEntry<'a> = (&'a [u8], &'a [u8]);

/// All entries of a text bundle in file order, as `-list` sees them: each
/// entry's END line is skipped before looking for the next START marker.
pub fn list<'a>(data: &'a [u8], comment: &str) -> Result<Vec<TextEntry<'a>>, TextBundleError> {
    let mut r = Reader::new(data, comment);
    let mut out = Vec::new();
    while let Some(id) = r.next_entry() {
        out.push((id, r.take()?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(comment: &str, entries: &[(&str, &[u8])]) -> Vec<u8> {
        let e: Vec<(&[u8], &[u8])> = entries.iter().map(|(i, d)| (i.as_bytes(), *d)).collect();
        let mut v = Vec::new();
        write(&mut v, comment, &e).unwrap();
        assert_eq!(v.len() as u64, written_size(comment, &e));
        v
    }

    #[test]
    fn spec_example_bytes() {
        let b = bundle(
            "//",
            &[
                (
                    "host-x86_64-unknown-linux-gnu-",
                    b"host line 1\nhost line 2\n",
                ),
                ("hip-amdgcn-amd-amdhsa--gfx906", b"dev line 1\ndev line 2"),
            ],
        );
        let want = "\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\n\
host line 1\nhost line 2\n\n// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n\
\n// __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx906\n\
dev line 1\ndev line 2\n// __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx906\n";
        assert_eq!(b, want.as_bytes());
        assert_eq!(b.len(), 315);
    }

    #[test]
    fn round_trip_keeps_bytes() {
        let contents: [&[u8]; 4] = [b"", b"\n", b"no newline", b"a\r\nb\r\n"];
        for c in ["//", "#", ";"] {
            let entries: Vec<(&str, &[u8])> = vec![
                ("a", contents[0]),
                ("b", contents[1]),
                ("c", contents[2]),
                ("d", contents[3]),
            ];
            let b = bundle(c, &entries);
            let got = list(&b, c).unwrap();
            let want: Vec<(&[u8], &[u8])> =
                entries.iter().map(|(i, d)| (i.as_bytes(), *d)).collect();
            assert_eq!(got, want);
            // The wrong comment string sees no entries.
            let other = if c == "#" { ";" } else { "#" };
            assert!(list(&b, other).unwrap().is_empty());
        }
    }

    #[test]
    fn first_marker_needs_a_leading_newline() {
        let b = bundle("//", &[("a", b"x")]);
        assert!(list(&b[1..], "//").unwrap().is_empty());
    }

    #[test]
    fn skipped_entry_resumes_after_its_start_line() {
        // The content of entry "outer" contains a full entry "inner".
        let inner = bundle("#", &[("inner", b"I")]);
        let b = bundle("#", &[("outer", &inner)]);
        let mut r = Reader::new(&b, "#");
        assert_eq!(r.next_entry(), Some(&b"outer"[..]));
        assert_eq!(r.next_entry(), Some(&b"inner"[..]));
        assert_eq!(r.take().unwrap(), b"I");
        // After inner's END line, the next marker is outer's END: no more STARTs.
        assert_eq!(r.next_entry(), None);
    }

    #[test]
    fn missing_end_is_an_error() {
        let b = b"\n; __CLANG_OFFLOAD_BUNDLE____START__ x\nabc\n";
        assert_eq!(
            list(b, ";"),
            Err(TextBundleError::MissingEnd {
                id: b"x".to_vec(),
                at: 0
            })
        );
        // A START marker whose ID line never ends is not an entry.
        assert!(list(b"\n; __CLANG_OFFLOAD_BUNDLE____START__ x", ";")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn end_line_without_newline_ends_the_file() {
        let mut b = bundle(";", &[("a", b"x\n")]);
        b.pop();
        assert_eq!(list(&b, ";").unwrap(), vec![(&b"a"[..], &b"x\n"[..])]);
    }

    #[test]
    fn comment_strings() {
        for t in ["i", "ii", "cui", "hipi"] {
            assert_eq!(comment_for_type(t), Some("//"));
        }
        assert_eq!(comment_for_type("d"), Some("#"));
        assert_eq!(comment_for_type("s"), Some("#"));
        assert_eq!(comment_for_type("ll"), Some(";"));
        assert_eq!(comment_for_type("bc"), None);
    }
}
