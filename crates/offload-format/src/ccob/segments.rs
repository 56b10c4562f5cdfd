//! Splitting an input that holds several concatenated compressed bundles.
//!
//! Device libraries often hold many CCOBs back to back (one per translation
//! unit). The magic `CCOB` can occur by chance inside compressed data, so the
//! end of a v2/v3 CCOB is taken from its recorded total size; only v1, which
//! has no such field, falls back to looking for the next magic.

use super::error::CcobError;
use super::header::{detect, Detection, Header, MAGIC};

/// One piece of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    /// The whole input, which does not start with a CCOB (or is shorter
    /// than 8 bytes): a plain bundle. Only ever the first and last segment.
    Uncompressed(&'a [u8]),
    /// One compressed bundle, header included.
    Ccob {
        /// Offset of its magic in the input.
        offset: usize,
        /// Its decoded header.
        header: Header,
        /// Its bytes: exactly the recorded total size (v2/v3), or up to the
        /// next magic or the end of the input (v1).
        bytes: &'a [u8],
    },
    /// Bytes after a CCOB that are not the start of another one: padding
    /// between bundles, or trailing data. Runs up to the next magic or the
    /// end of the input.
    Gap {
        /// Offset in the input.
        offset: usize,
        /// The bytes.
        bytes: &'a [u8],
    },
}

/// Iterator over the [`Segment`]s of an input; see [`segments`].
#[derive(Clone, Debug)]
pub struct Segments<'a> {
    input: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Split `input` into compressed bundles (and the bytes between them).
///
/// An input that does not start with a CCOB yields a single
/// [`Segment::Uncompressed`]. Otherwise each CCOB is bounded by its recorded
/// total size (v2/v3) or by the next magic (v1); bytes after a CCOB that do
/// not start another one form a [`Segment::Gap`] that ends at the next magic.
/// A header error (truncated header, unknown version or method, impossible
/// total size) is yielded once and ends the iteration.
pub fn segments(input: &[u8]) -> Segments<'_> {
    Segments {
        input,
        pos: 0,
        failed: false,
    }
}

/// Offset of the next `CCOB` magic in `input` at or after `from`.
fn find_magic(input: &[u8], from: usize) -> Option<usize> {
    let tail = input.get(from..)?;
    tail.windows(MAGIC.len())
        .position(|w| w == MAGIC)
        .map(|p| p + from)
}

impl<'a> Iterator for Segments<'a> {
    type Item = Result<Segment<'a>, CcobError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.input.len() {
            // An empty input is still one (empty) uncompressed bundle.
            if self.pos == 0 && self.input.is_empty() && !self.failed {
                self.failed = true;
                return Some(Ok(Segment::Uncompressed(self.input)));
            }
            return None;
        }
        let start = self.pos;
        let rest = self.input.get(start..)?;
        if start == 0 && detect(rest) != Detection::Compressed {
            self.pos = self.input.len();
            return Some(Ok(Segment::Uncompressed(rest)));
        }
        if detect(rest) != Detection::Compressed {
            let end = find_magic(self.input, start + 1).unwrap_or(self.input.len());
            self.pos = end;
            return Some(Ok(Segment::Gap {
                offset: start,
                bytes: self.input.get(start..end)?,
            }));
        }
        let parsed = Header::parse(rest).and_then(|header| {
            let len = match header.total_size {
                Some(_) => header.ccob_len(rest.len())?,
                // v1: up to the next magic after this header, or the end.
                None => find_magic(rest, header.len()).unwrap_or(rest.len()),
            };
            Ok((header, len))
        });
        match parsed {
            Ok((header, len)) => {
                self.pos = start + len;
                Some(Ok(Segment::Ccob {
                    offset: start,
                    header,
                    bytes: rest.get(..len)?,
                }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
