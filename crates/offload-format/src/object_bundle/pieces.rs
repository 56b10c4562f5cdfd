//! Rewritten objects as a sequence of pieces instead of one buffer.
//!
//! A rewritten object is mostly bytes that already exist elsewhere: the
//! host's section data and the device images. Building it in a `Vec` would
//! make all of them resident (and copy them); [`Pieces`] instead keeps the
//! few bytes the rewriter makes (headers, tables, names) in one owned
//! buffer and borrows everything else, so a writer can hand each borrowed
//! run to its output in one call (which an output may turn into a kernel
//! copy of a mapped input).
//!
//! [`Data`] lets the object readers look at either a plain slice or a
//! [`Pieces`], so that a rewritten object can be read back (to check that
//! its entries are readable) without being assembled.

use std::cell::Cell;
use std::io::{self, Write};
use std::ops::Range;

/// A file image made of owned and borrowed byte runs.
///
/// [`Pieces::write_to`] writes each borrowed run with a single `write_all`
/// call, so a writer that recognises slices of a memory-mapped input can copy
/// them without reading them.
#[derive(Debug, Clone, Default)]
pub struct Pieces<'a> {
    /// Bytes made by the writer; owned runs are ranges of it.
    owned: Vec<u8>,
    /// The runs in file order, without gaps.
    runs: Vec<Run<'a>>,
    len: u64,
}

#[derive(Debug, Clone)]
struct Run<'a> {
    /// Offset of the run in the file.
    at: u64,
    kind: RunKind<'a>,
}

#[derive(Debug, Clone)]
enum RunKind<'a> {
    Owned(Range<usize>),
    Borrowed(&'a [u8]),
    /// `len` copies of one byte (padding, zero-filled sections).
    Fill {
        byte: u8,
        len: u64,
    },
}

impl RunKind<'_> {
    fn len(&self) -> u64 {
        match self {
            RunKind::Owned(r) => (r.end - r.start) as u64,
            RunKind::Borrowed(s) => s.len() as u64,
            RunKind::Fill { len, .. } => *len,
        }
    }
}

/// Zeros for reads of zero-filled runs.
static ZEROS: [u8; 4096] = [0; 4096];

/// What a read of a range of [`Pieces`] found.
enum Lookup<'p> {
    Bytes(&'p [u8]),
    OutOfRange,
    /// The range is in the file but not in one run: it exists only if the
    /// image is assembled.
    Split,
}

impl<'a> Pieces<'a> {
    /// An image consisting of `bytes` alone.
    pub fn borrowed(bytes: &'a [u8]) -> Pieces<'a> {
        let mut b = Sequence::new();
        b.borrowed(bytes);
        b.finish()
    }

    /// Size of the image in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty image.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes the image to `w`: owned runs and fills as they come, each
    /// borrowed run with one `write_all` of the borrowed slice.
    pub fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        for run in &self.runs {
            match &run.kind {
                RunKind::Owned(r) => w.write_all(&self.owned[r.clone()])?,
                RunKind::Borrowed(s) => w.write_all(s)?,
                RunKind::Fill { byte, len } => {
                    let chunk = [*byte; 8192];
                    let mut left = *len;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        w.write_all(&chunk[..n])?;
                        left -= n as u64;
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole image in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }

    /// The bytes at `start..end` if they lie in one run.
    fn lookup(&self, start: u64, end: u64) -> Lookup<'_> {
        if start > end || end > self.len {
            return Lookup::OutOfRange;
        }
        if start == end {
            return Lookup::Bytes(&[]);
        }
        // The last run starting at or before `start` holds it.
        let i = self.runs.partition_point(|r| r.at <= start) - 1;
        let run = &self.runs[i];
        let (from, to) = (start - run.at, end - run.at);
        if to > run.kind.len() {
            return Lookup::Split;
        }
        let (from, to) = (from as usize, to as usize);
        match &run.kind {
            RunKind::Owned(r) => Lookup::Bytes(&self.owned[r.start + from..r.start + to]),
            RunKind::Borrowed(s) => Lookup::Bytes(&s[from..to]),
            RunKind::Fill { byte: 0, .. } if to - from <= ZEROS.len() => {
                Lookup::Bytes(&ZEROS[..to - from])
            }
            RunKind::Fill { .. } => Lookup::Split,
        }
    }

    /// Appends a run, merging it with the previous one where they continue
    /// each other (owned ranges, equal fills).
    fn push(&mut self, kind: RunKind<'a>) {
        let len = kind.len();
        if len == 0 {
            return;
        }
        let at = self.len;
        self.len += len;
        if let Some(last) = self.runs.last_mut() {
            match (&mut last.kind, &kind) {
                (RunKind::Owned(a), RunKind::Owned(b)) if a.end == b.start => {
                    a.end = b.end;
                    return;
                }
                (RunKind::Fill { byte: x, len: n }, RunKind::Fill { byte: y, len: m })
                    if x == y =>
                {
                    *n += m;
                    return;
                }
                _ => {}
            }
        }
        self.runs.push(Run { at, kind });
    }
}

/// Builds [`Pieces`] front to back.
pub(crate) struct Sequence<'a> {
    pieces: Pieces<'a>,
    /// Start of the owned bytes not yet made a run.
    pending: usize,
}

impl<'a> Sequence<'a> {
    pub(crate) fn new() -> Sequence<'a> {
        Sequence {
            pieces: Pieces::default(),
            pending: 0,
        }
    }

    /// The owned buffer: bytes appended to it follow what was added before.
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.pieces.owned
    }

    fn flush(&mut self) {
        let end = self.pieces.owned.len();
        let start = std::mem::replace(&mut self.pending, end);
        self.pieces.push(RunKind::Owned(start..end));
    }

    pub(crate) fn borrowed(&mut self, bytes: &'a [u8]) {
        self.flush();
        self.pieces.push(RunKind::Borrowed(bytes));
    }

    pub(crate) fn fill(&mut self, byte: u8, len: u64) {
        self.flush();
        self.pieces.push(RunKind::Fill { byte, len });
    }

    /// Bytes so far.
    pub(crate) fn len(&self) -> u64 {
        self.pieces.len + (self.pieces.owned.len() - self.pending) as u64
    }

    pub(crate) fn finish(mut self) -> Pieces<'a> {
        self.flush();
        self.pieces
    }
}

/// Builds [`Pieces`] from writes at arbitrary offsets of a file of known
/// size, where a later write replaces what earlier ones put at the same
/// place and bytes nobody wrote are zero (the way a writer filling a zeroed
/// buffer works).
pub(crate) struct Canvas<'a> {
    size: u64,
    owned: Vec<u8>,
    writes: Vec<(u64, RunKind<'a>)>,
}

impl<'a> Canvas<'a> {
    pub(crate) fn new(size: u64) -> Canvas<'a> {
        Canvas {
            size,
            owned: Vec::new(),
            writes: Vec::new(),
        }
    }

    fn place(&mut self, at: u64, kind: RunKind<'a>) -> Option<()> {
        let end = at.checked_add(kind.len())?;
        if end > self.size {
            return None;
        }
        self.writes.push((at, kind));
        Some(())
    }

    /// Puts a copy of `bytes` at `at`; `None` if it does not fit in the file.
    pub(crate) fn owned(&mut self, at: u64, bytes: &[u8]) -> Option<()> {
        let start = self.owned.len();
        self.owned.extend_from_slice(bytes);
        let r = self.place(at, RunKind::Owned(start..self.owned.len()));
        if r.is_none() {
            self.owned.truncate(start);
        }
        r
    }

    /// Puts `bytes` themselves at `at`; `None` if they do not fit.
    pub(crate) fn borrowed(&mut self, at: u64, bytes: &'a [u8]) -> Option<()> {
        self.place(at, RunKind::Borrowed(bytes))
    }

    /// Puts `len` zeros at `at`; `None` if they do not fit.
    pub(crate) fn zeros(&mut self, at: u64, len: u64) -> Option<()> {
        self.place(at, RunKind::Fill { byte: 0, len })
    }

    /// The file: for every byte, the last write that covered it.
    pub(crate) fn finish(self) -> Pieces<'a> {
        use std::collections::BinaryHeap;

        let Canvas {
            size,
            owned,
            writes,
        } = self;
        let end_of = |i: usize| writes[i].0 + writes[i].1.len();
        // Every place where the winning write can change.
        let mut cuts: Vec<u64> = Vec::with_capacity(writes.len() * 2 + 2);
        cuts.push(0);
        cuts.push(size);
        for (at, kind) in &writes {
            cuts.push(*at);
            cuts.push(at + kind.len());
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut by_start: Vec<usize> = (0..writes.len())
            .filter(|&i| writes[i].1.len() != 0)
            .collect();
        by_start.sort_by_key(|&i| writes[i].0);

        let mut out = Pieces {
            owned,
            runs: Vec::new(),
            len: 0,
        };
        // Writes covering the current position; the latest (highest index)
        // wins. Writes that ended are dropped when they reach the top.
        let mut live: BinaryHeap<usize> = BinaryHeap::new();
        let mut next = 0;
        for pair in cuts.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            while next < by_start.len() && writes[by_start[next]].0 <= from {
                live.push(by_start[next]);
                next += 1;
            }
            while live.peek().is_some_and(|&i| end_of(i) <= from) {
                live.pop();
            }
            let len = to - from;
            let kind = match live.peek() {
                None => RunKind::Fill { byte: 0, len },
                Some(&i) => {
                    let (at, kind) = &writes[i];
                    let off = (from - at) as usize;
                    let n = len as usize;
                    match kind {
                        RunKind::Owned(r) => RunKind::Owned(r.start + off..r.start + off + n),
                        RunKind::Borrowed(s) => RunKind::Borrowed(&s[off..off + n]),
                        RunKind::Fill { byte, .. } => RunKind::Fill { byte: *byte, len },
                    }
                }
            };
            // A borrowed run cut in two by a write that did not cover it
            // stays in two pieces; that is rare and harmless.
            out.push(kind);
        }
        out
    }
}

/// The bytes an object reader looks at: a slice, or a [`Pieces`] image
/// read in place through a [`PieceReader`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Data<'a> {
    Slice(&'a [u8]),
    Pieces(&'a PieceReader<'a>),
}

impl<'a> Data<'a> {
    pub(crate) fn len(self) -> usize {
        match self {
            Data::Slice(s) => s.len(),
            Data::Pieces(p) => usize::try_from(p.pieces.len).unwrap_or(usize::MAX),
        }
    }

    /// The bytes at `r`, or `None` if the range is not inside the file (or,
    /// for pieces, spans runs: the reader then records that its answers
    /// cannot be trusted).
    pub(crate) fn get(self, r: Range<usize>) -> Option<&'a [u8]> {
        match self {
            Data::Slice(s) => s.get(r),
            Data::Pieces(p) => p.get(r),
        }
    }

    /// The bytes at `r`, which the caller has checked are inside the file
    /// (empty only if they span runs of pieces, which the reader records).
    pub(crate) fn slice(self, r: Range<usize>) -> &'a [u8] {
        self.get(r).unwrap_or(&[])
    }

    /// The first `n` bytes, or all of a shorter file.
    pub(crate) fn head(self, n: usize) -> &'a [u8] {
        self.slice(0..n.min(self.len()))
    }
}

/// Reads [`Pieces`] in place. Reads within one run are answered directly;
/// a read that spans runs is answered "not there" and remembered, so the
/// caller can repeat the whole reading on the assembled image
/// ([`PieceReader::incomplete`]).
#[derive(Debug)]
pub(crate) struct PieceReader<'a> {
    pieces: &'a Pieces<'a>,
    split: Cell<bool>,
}

impl<'a> PieceReader<'a> {
    pub(crate) fn new(pieces: &'a Pieces<'a>) -> PieceReader<'a> {
        PieceReader {
            pieces,
            split: Cell::new(false),
        }
    }

    fn get(&self, r: Range<usize>) -> Option<&'a [u8]> {
        match self.pieces.lookup(r.start as u64, r.end as u64) {
            Lookup::Bytes(b) => Some(b),
            Lookup::OutOfRange => None,
            Lookup::Split => {
                self.split.set(true);
                None
            }
        }
    }

    /// True if some read spanned runs, so what was read may differ from
    /// what reading the assembled image gives.
    pub(crate) fn incomplete(&self) -> bool {
        self.split.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn materialise(size: usize, writes: &[(usize, &[u8])]) -> Vec<u8> {
        let mut v = vec![0u8; size];
        for &(at, b) in writes {
            v[at..at + b.len()].copy_from_slice(b);
        }
        v
    }

    /// Later writes win, gaps are zero, and the runs read back whole.
    #[test]
    fn canvas_matches_a_zeroed_buffer() {
        let a: Vec<u8> = (1..=40).collect();
        let b: Vec<u8> = (100..120).collect();
        let writes: Vec<(usize, &[u8])> = vec![
            (5, &a),
            (10, &b[..5]),
            (0, &b[..3]),
            (30, &b),
            (44, &a[..2]),
            (60, &[]),
            (12, &a[..1]),
        ];
        let mut c = Canvas::new(64);
        for (i, &(at, bytes)) in writes.iter().enumerate() {
            if i % 2 == 0 {
                c.borrowed(at as u64, bytes).unwrap();
            } else {
                c.owned(at as u64, bytes).unwrap();
            }
        }
        c.zeros(50, 3).unwrap();
        assert!(c.owned(60, &[1; 5]).is_none());
        assert!(c.borrowed(65, &[]).is_none());
        let p = c.finish();
        let mut want = materialise(64, &writes);
        want[50..53].fill(0);
        assert_eq!(p.len(), 64);
        assert_eq!(p.to_vec(), want);
        // Every range inside one run reads back; others are "split".
        let reader = PieceReader::new(&p);
        for s in 0..=64 {
            for e in s..=64 {
                if let Some(got) = Data::Pieces(&reader).get(s..e) {
                    assert_eq!(got, &want[s..e]);
                }
            }
        }
        assert!(reader.incomplete());
        assert_eq!(Data::Pieces(&reader).get(60..65), None);
    }

    /// Random overlapping writes of every kind give what writing them in
    /// order into a zeroed buffer gives.
    #[test]
    fn canvas_matches_a_zeroed_buffer_for_random_writes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let source: Vec<u8> = (0..=255).collect();
        for _ in 0..300 {
            let size = next(300) as usize;
            let mut want = vec![0u8; size];
            let mut c = Canvas::new(size as u64);
            for _ in 0..next(12) {
                let at = next(size as u64 + 20) as usize;
                let start = next(200) as usize;
                let len = next(60) as usize;
                let bytes = &source[start..start + len];
                let (placed, written) = match next(3) {
                    0 => (c.owned(at as u64, bytes), bytes.to_vec()),
                    1 => (c.borrowed(at as u64, bytes), bytes.to_vec()),
                    _ => (c.zeros(at as u64, len as u64), vec![0; len]),
                };
                let fits = at + len <= size;
                assert_eq!(placed.is_some(), fits);
                if fits {
                    want[at..at + len].copy_from_slice(&written);
                }
            }
            let p = c.finish();
            assert_eq!(p.to_vec(), want);
            let r = PieceReader::new(&p);
            for s in 0..size {
                let e = s + next((size - s) as u64 + 1) as usize;
                if let Some(got) = Data::Pieces(&r).get(s..e) {
                    assert_eq!(got, &want[s..e]);
                }
            }
        }
    }

    #[test]
    fn sequences_merge_owned_runs_and_fills() {
        let data = [7u8; 10];
        let mut s = Sequence::new();
        s.buf().extend_from_slice(b"ab");
        s.buf().extend_from_slice(b"cd");
        s.borrowed(&data);
        s.fill(0xcc, 3);
        s.fill(0xcc, 2);
        s.buf().push(b'z');
        assert_eq!(s.len(), 20);
        let p = s.finish();
        assert_eq!(p.runs.len(), 4);
        let mut want = b"abcd".to_vec();
        want.extend_from_slice(&data);
        want.extend_from_slice(&[0xcc; 5]);
        want.push(b'z');
        assert_eq!(p.to_vec(), want);
        // The borrowed run is handed over whole, in one call.
        struct Calls(Vec<usize>);
        impl Write for Calls {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.push(b.len());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut calls = Calls(Vec::new());
        p.write_to(&mut calls).unwrap();
        assert_eq!(calls.0, [4, 10, 5, 1]);
        let r = PieceReader::new(&p);
        assert_eq!(
            Data::Pieces(&r).get(4..14).map(<[u8]>::as_ptr),
            Some(data.as_ptr())
        );
        assert!(!r.incomplete());
    }
}
