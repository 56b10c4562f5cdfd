//! A writer for LLVM's bitstream container format.
//!
//! The stream is a sequence of little-endian 32-bit words filled from the
//! least significant bit. Blocks carry their length in words, which is only
//! known once the block is closed, so the writer back-patches it.
//!
//! Large byte arrays (device images) are not copied: a blob is 32-bit aligned
//! in the stream, so the writer records a borrowed slice as its own chunk
//! between owned chunks. The finished stream is the concatenation of the
//! chunks.

use std::io::{self, Write};

/// Abbreviation id of END_BLOCK.
const END_BLOCK: u64 = 0;
/// Abbreviation id of ENTER_SUBBLOCK.
const ENTER_SUBBLOCK: u64 = 1;
/// Abbreviation id of DEFINE_ABBREV.
const DEFINE_ABBREV: u64 = 2;
/// Abbreviation id of UNABBREV_RECORD.
const UNABBREV_RECORD: u64 = 3;

/// Blobs at least this long are referenced rather than copied.
const SPLICE_THRESHOLD: usize = 4096;

/// One operand of an abbreviation definition.
#[derive(Clone, Copy, Debug)]
pub(super) enum AbbrevOp {
    /// A literal value that is not stored in records.
    Literal(u64),
    /// A 32-bit-aligned byte blob.
    Blob,
}

enum Chunk<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

struct Scope {
    outer_width: u32,
    /// Byte offset of the block's length word.
    length_at: u64,
    next_abbrev: u64,
}

/// Errors the bitstream writer can report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// A block grew past the 2^32-word limit of its length field.
    BlockTooLarge,
}

/// Builds a bitstream in memory (except for spliced blobs).
pub(super) struct BitWriter<'a> {
    chunks: Vec<Chunk<'a>>,
    /// The owned chunk being filled; always whole bytes.
    buf: Vec<u8>,
    /// Bytes in `chunks`.
    flushed: u64,
    /// Pending bits not yet forming a whole 32-bit word.
    cur: u64,
    nbits: u32,
    width: u32,
    scopes: Vec<Scope>,
    error: Option<StreamError>,
}

impl Default for BitWriter<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> BitWriter<'a> {
    /// An empty stream at the top level (abbreviation width 2).
    pub(super) fn new() -> BitWriter<'a> {
        BitWriter {
            chunks: Vec::new(),
            buf: Vec::new(),
            flushed: 0,
            cur: 0,
            nbits: 0,
            width: 2,
            scopes: Vec::new(),
            error: None,
        }
    }

    /// Current position in bytes, counting whole pending words only.
    fn byte_pos(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Appends raw bytes at a word boundary (magic numbers).
    pub(super) fn raw_bytes(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.nbits, 0);
        self.buf.extend_from_slice(bytes);
    }

    /// Emits the low `width` bits of `value` (`width` ≤ 32).
    pub(super) fn fixed(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 32);
        if width == 0 {
            return;
        }
        debug_assert!(value < (1u64 << width), "{value} does not fit {width} bits");
        self.cur |= value << self.nbits;
        self.nbits += width;
        if self.nbits >= 32 {
            self.buf.extend_from_slice(&(self.cur as u32).to_le_bytes());
            self.cur >>= 32;
            self.nbits -= 32;
        }
    }

    /// Emits `value` as a VBR with `width`-bit chunks.
    pub(super) fn vbr(&mut self, mut value: u64, width: u32) {
        let payload = width - 1;
        let hi = 1u64 << payload;
        while value >= hi {
            self.fixed((value & (hi - 1)) | hi, width);
            value >>= payload;
        }
        self.fixed(value, width);
    }

    /// Pads with zero bits to the next 32-bit boundary.
    pub(super) fn align32(&mut self) {
        if self.nbits > 0 {
            self.fixed(0, 32 - self.nbits);
        }
    }

    /// Opens a block.
    pub(super) fn enter_block(&mut self, id: u64, abbrev_width: u32) {
        self.fixed(ENTER_SUBBLOCK, self.width);
        self.vbr(id, 8);
        self.vbr(abbrev_width as u64, 4);
        self.align32();
        let length_at = self.byte_pos();
        self.fixed(0, 32);
        self.scopes.push(Scope {
            outer_width: self.width,
            length_at,
            next_abbrev: 4,
        });
        self.width = abbrev_width;
    }

    /// Closes the innermost block and back-patches its length.
    pub(super) fn exit_block(&mut self) {
        self.fixed(END_BLOCK, self.width);
        self.align32();
        let scope = self.scopes.pop().expect("exit_block without enter_block");
        let words = (self.byte_pos() - scope.length_at - 4) / 4;
        match u32::try_from(words) {
            Ok(w) => self.patch_word(scope.length_at, w),
            Err(_) => self.error = Some(StreamError::BlockTooLarge),
        }
        self.width = scope.outer_width;
    }

    fn patch_word(&mut self, at: u64, word: u32) {
        let bytes = word.to_le_bytes();
        if at >= self.flushed {
            let off = (at - self.flushed) as usize;
            self.buf[off..off + 4].copy_from_slice(&bytes);
            return;
        }
        let mut start = 0u64;
        for chunk in &mut self.chunks {
            let len = match chunk {
                Chunk::Owned(v) => v.len() as u64,
                Chunk::Borrowed(b) => b.len() as u64,
            };
            if at < start + len {
                match chunk {
                    Chunk::Owned(v) => {
                        let off = (at - start) as usize;
                        v[off..off + 4].copy_from_slice(&bytes);
                    }
                    Chunk::Borrowed(_) => unreachable!("length words are in owned chunks"),
                }
                return;
            }
            start += len;
        }
        unreachable!("patch position inside the stream");
    }

    /// Defines an abbreviation in the current block and returns its id.
    pub(super) fn define_abbrev(&mut self, ops: &[AbbrevOp]) -> u64 {
        self.fixed(DEFINE_ABBREV, self.width);
        self.vbr(ops.len() as u64, 5);
        for op in ops {
            match *op {
                AbbrevOp::Literal(v) => {
                    self.fixed(1, 1);
                    self.vbr(v, 8);
                }
                AbbrevOp::Blob => {
                    // encoding 5: blob
                    self.fixed(0, 1);
                    self.fixed(5, 3);
                }
            }
        }
        let scope = self
            .scopes
            .last_mut()
            .expect("abbreviations live in blocks");
        scope.next_abbrev += 1;
        scope.next_abbrev - 1
    }

    /// Emits an unabbreviated record.
    pub(super) fn record(&mut self, code: u64, ops: &[u64]) {
        self.fixed(UNABBREV_RECORD, self.width);
        self.vbr(code, 6);
        self.vbr(ops.len() as u64, 6);
        for &op in ops {
            self.vbr(op, 6);
        }
    }

    /// Emits an unabbreviated record whose operands are the bytes of `s`.
    pub(super) fn record_str(&mut self, code: u64, prefix: &[u64], s: &[u8]) {
        self.fixed(UNABBREV_RECORD, self.width);
        self.vbr(code, 6);
        self.vbr((prefix.len() + s.len()) as u64, 6);
        for &op in prefix {
            self.vbr(op, 6);
        }
        for &b in s {
            self.vbr(b as u64, 6);
        }
    }

    /// Emits a record through an abbreviation of the form `[literal code,
    /// blob]`, copying the bytes.
    pub(super) fn blob_record(&mut self, abbrev: u64, data: &[u8]) {
        self.blob_header(abbrev, data.len());
        self.buf.extend_from_slice(data);
        self.blob_padding(data.len());
    }

    /// Like [`BitWriter::blob_record`], but a large blob is referenced, not
    /// copied.
    pub(super) fn blob_record_borrowed(&mut self, abbrev: u64, data: &'a [u8]) {
        self.blob_header(abbrev, data.len());
        if data.len() >= SPLICE_THRESHOLD {
            let owned = std::mem::take(&mut self.buf);
            self.flushed += owned.len() as u64 + data.len() as u64;
            self.chunks.push(Chunk::Owned(owned));
            self.chunks.push(Chunk::Borrowed(data));
        } else {
            self.buf.extend_from_slice(data);
        }
        self.blob_padding(data.len());
    }

    fn blob_header(&mut self, abbrev: u64, len: usize) {
        self.fixed(abbrev, self.width);
        self.vbr(len as u64, 6);
        self.align32();
    }

    fn blob_padding(&mut self, len: usize) {
        let pad = (4 - len % 4) % 4;
        self.buf.extend_from_slice(&[0u8; 3][..pad]);
    }

    /// Ends the stream (all blocks must be closed).
    pub(super) fn finish(mut self) -> Result<Stream<'a>, StreamError> {
        assert!(self.scopes.is_empty(), "unclosed block");
        self.align32();
        if let Some(e) = self.error {
            return Err(e);
        }
        let len = self.byte_pos();
        let mut chunks = self.chunks;
        chunks.push(Chunk::Owned(self.buf));
        Ok(Stream { chunks, len })
    }
}

/// A finished bitstream: owned pieces interleaved with borrowed blobs.
pub(super) struct Stream<'a> {
    chunks: Vec<Chunk<'a>>,
    len: u64,
}

impl Stream<'_> {
    /// Length in bytes.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Writes the stream.
    pub(super) fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        for c in &self.chunks {
            match c {
                Chunk::Owned(v) => w.write_all(v)?,
                Chunk::Borrowed(b) => w.write_all(b)?,
            }
        }
        Ok(())
    }

    /// The stream as one vector.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_vbr_fill_words_from_the_low_bits() {
        let mut w = BitWriter::new();
        w.fixed(0b101, 3);
        w.vbr(100, 6); // 100 = 0b1100100: chunks 00100|1 then 00011|0
        w.align32();
        let s = w.finish().unwrap().to_vec();
        // bits: 101 | 100100 (low chunk with continuation) | 000011
        let word = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        assert_eq!(word & 0b111, 0b101);
        assert_eq!((word >> 3) & 0b111111, 0b100100);
        assert_eq!((word >> 9) & 0b111111, 0b000011);
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn block_length_is_back_patched_in_words() {
        let mut w = BitWriter::new();
        w.enter_block(8, 3);
        w.record(1, &[2]);
        w.exit_block();
        let s = w.finish().unwrap().to_vec();
        // header word, length word, body (one record + END_BLOCK fits a word)
        assert_eq!(s.len(), 12);
        assert_eq!(u32::from_le_bytes([s[4], s[5], s[6], s[7]]), 1);
    }

    #[test]
    fn big_blobs_are_spliced_without_changing_the_bytes() {
        let data: Vec<u8> = (0..10_001u32).map(|i| (i % 251) as u8).collect();
        let small = &data[..5];
        let build = |blob: &[u8]| {
            let mut w = BitWriter::new();
            w.enter_block(23, 3);
            let a = w.define_abbrev(&[AbbrevOp::Literal(1), AbbrevOp::Blob]);
            w.blob_record_borrowed(a, blob);
            w.exit_block();
            w.finish().unwrap().to_vec()
        };
        let big = build(&data);
        let little = build(small);
        // Same framing; the payload is the data itself, 32-bit aligned.
        assert_eq!(big.len() % 4, 0);
        let pos = big
            .windows(data.len())
            .position(|win| win == &data[..])
            .expect("blob bytes present verbatim");
        assert_eq!(pos % 4, 0);
        assert_eq!(&little[little.len() - 12..little.len() - 7], small);
        let words = u32::from_le_bytes([big[4], big[5], big[6], big[7]]) as usize;
        assert_eq!(words * 4 + 8, big.len());
    }
}
