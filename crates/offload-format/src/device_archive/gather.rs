//! Gathering the small pieces of an output archive (member headers, code
//! objects, padding) into one vectored write per 64 KiB, so that code
//! objects lying in the (mapped) input are copied once, by the kernel,
//! rather than first into a buffer.

use std::io::{self, IoSlice, Write};

use crate::archive::HEADER_SIZE;

/// Bytes gathered before they are written; also the size from which a
/// code object is written on its own (the command-line tool's outputs copy
/// such a piece of a mapped input file to file).
const LIMIT: usize = 64 * 1024;

/// Pieces per write, well under the system's limit on `writev` (1,024).
const MAX_PIECES: usize = 512;

/// How far behind the walk the oldest pending code object may lie. The
/// input's pages are released about a MiB behind the walk
/// ([`super::Input::with_release`]); writing a code object after that
/// would bring its pages back.
const SPAN: usize = 512 * 1024;

enum Piece<'s> {
    Header(usize),
    Bytes(&'s [u8]),
    Pad,
}

/// The pending pieces of one output. Code objects must outlive it (they
/// are slices of the input archive).
#[derive(Default)]
pub(super) struct Gather<'s> {
    headers: Vec<[u8; HEADER_SIZE]>,
    pieces: Vec<Piece<'s>>,
    len: usize,
    /// Address of the oldest pending code object.
    oldest: Option<usize>,
}

impl<'s> Gather<'s> {
    /// Adds a member: its header, its contents, and the padding after them.
    pub(super) fn add(
        &mut self,
        header: [u8; HEADER_SIZE],
        contents: &'s [u8],
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if contents.len() >= LIMIT {
            self.flush(out)?;
            return write_member(out, &header, contents);
        }
        self.oldest.get_or_insert(contents.as_ptr() as usize);
        self.pieces.push(Piece::Header(self.headers.len()));
        self.headers.push(header);
        self.pieces.push(Piece::Bytes(contents));
        if contents.len() % 2 == 1 {
            self.pieces.push(Piece::Pad);
        }
        self.len += HEADER_SIZE + contents.len() + contents.len() % 2;
        if self.len >= LIMIT || self.pieces.len() + 3 > MAX_PIECES {
            self.flush(out)?;
        }
        Ok(())
    }

    /// Writes what is pending if the walk, now at the input address
    /// `position`, has gone too far past it.
    pub(super) fn flush_behind(&mut self, position: usize, out: &mut dyn Write) -> io::Result<()> {
        match self.oldest {
            Some(oldest) if position.saturating_sub(oldest) > SPAN => self.flush(out),
            _ => Ok(()),
        }
    }

    /// Writes what is pending.
    pub(super) fn flush(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.pieces.is_empty() {
            return Ok(());
        }
        let mut slices: Vec<IoSlice<'_>> = self
            .pieces
            .iter()
            .map(|p| match *p {
                Piece::Header(i) => IoSlice::new(&self.headers[i]),
                Piece::Bytes(b) => IoSlice::new(b),
                Piece::Pad => IoSlice::new(b"\n"),
            })
            .collect();
        crate::bundle::write_all_vectored(out, &mut slices)?;
        self.pieces.clear();
        self.headers.clear();
        self.len = 0;
        self.oldest = None;
        Ok(())
    }
}

/// Writes a member at once: header, contents in one piece (so that a large
/// code object in a mapped input can be copied by the kernel), padding.
pub(super) fn write_member(
    out: &mut dyn Write,
    header: &[u8; HEADER_SIZE],
    contents: &[u8],
) -> io::Result<()> {
    out.write_all(header)?;
    out.write_all(contents)?;
    if contents.len() % 2 == 1 {
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most a few bytes per call, as a pipe or a slow file may.
    struct Stingy(Vec<u8>);

    impl Write for Stingy {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
            self.write(first)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Members come out whole and in order (headers, contents, padding),
    /// whether gathered, written alone for their size, or flushed early,
    /// through a writer that takes a little at a time.
    #[test]
    fn members_come_out_in_order() {
        let big = vec![b'B'; LIMIT + 1];
        let contents: Vec<Vec<u8>> = (0..2000)
            .map(|i| match i % 97 {
                0 => big.clone(),
                n => vec![n as u8; n * 13],
            })
            .collect();
        let mut expected = Vec::new();
        let mut out = Stingy(Vec::new());
        let mut g = Gather::default();
        for (i, c) in contents.iter().enumerate() {
            let header = [b'0' + (i % 10) as u8; HEADER_SIZE];
            write_member(&mut expected, &header, c).unwrap();
            g.add(header, c, &mut out).unwrap();
            if i % 301 == 0 {
                g.flush(&mut out).unwrap();
            }
        }
        g.flush(&mut out).unwrap();
        assert!(out.0 == expected);
        assert!(expected.len() > 4 * LIMIT);
    }
}
