//! A bounded reader for LLVM's bitstream container format.
//!
//! The bitstream is a sequence of little-endian bit fields grouped into
//! nested blocks. Each block has an abbreviation-ID width; entries inside a
//! block are `END_BLOCK` (0), `ENTER_SUBBLOCK` (1), `DEFINE_ABBREV` (2),
//! `UNABBREV_RECORD` (3) or a record encoded with a previously defined
//! abbreviation (4 and up). The `BLOCKINFO` block (ID 0) defines
//! abbreviations shared by every block with a given ID.
//!
//! Everything here treats the input as hostile: every read is bounds
//! checked, VBR values are limited to 64 bits, nesting depth is capped, and
//! no allocation is sized from a value read from the input (vectors grow as
//! bits are actually consumed).

use std::collections::HashMap;
use std::rc::Rc;

use super::BitcodeError;

/// Deepest block nesting accepted. Real modules nest four or five deep.
pub const MAX_DEPTH: usize = 64;

/// One operand of an abbreviation definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbbrevOp {
    /// A constant that is not stored in the stream.
    Literal(u64),
    /// A fixed-width field of the given number of bits (1 to 64).
    Fixed(u32),
    /// A variable-width field with the given chunk width (2 to 32).
    Vbr(u32),
    /// An array whose element encoding is the next (final) operand.
    Array,
    /// A 6-bit character from `[a-zA-Z0-9._]`.
    Char6,
    /// A length-prefixed, 32-bit aligned byte blob (must be last).
    Blob,
}

/// An abbreviation: the list of operand encodings of one record shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Abbrev {
    /// The operands; the first one encodes the record code.
    pub ops: Vec<AbbrevOp>,
}

/// Abbreviations registered in `BLOCKINFO`, by block ID.
pub(crate) type BlockInfo = HashMap<u64, Vec<Rc<Abbrev>>>;

/// What [`Cursor::advance`] found next inside the current block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// The current block ended; the cursor is back in the parent block.
    /// At the top level this means a stray `END_BLOCK` (an error for the
    /// caller to report).
    EndBlock,
    /// A sub-block starts; call [`Cursor::enter_block`] or
    /// `Cursor::skip_block`.
    SubBlock(u64),
    /// A record with the given abbreviation ID; call
    /// `Cursor::read_record` or `Cursor::skip_record`.
    Record(u64),
    /// The end of the stream was reached at the outermost level.
    EndOfStream,
}

/// A record read in full.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record code.
    pub code: u64,
    /// The operands, array elements flattened in.
    pub ops: Vec<u64>,
    /// The blob operand, if the abbreviation had one.
    pub blob: Option<&'a [u8]>,
}

struct Scope {
    abbrev_width: u32,
    abbrevs: Vec<Rc<Abbrev>>,
}

/// A cursor over a bitstream with the block and abbreviation state.
pub struct Cursor<'a> {
    data: &'a [u8],
    /// Current position in bits from the start of `data`.
    pos: u64,
    /// Bits available.
    len_bits: u64,
    scopes: Vec<Scope>,
    /// Abbreviations collected from `BLOCKINFO` blocks.
    pub blockinfo: BlockInfo,
    /// Abbreviation width and list of the block most recently left.
    last_left: Option<(u32, Vec<Rc<Abbrev>>)>,
    /// Skip `BLOCKINFO` blocks instead of reading their abbreviations.
    skip_blockinfo: bool,
}

fn malformed(what: &str) -> BitcodeError {
    BitcodeError::Malformed(what.to_string())
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`, at the outermost level (abbreviation
    /// width 2).
    pub fn new(data: &'a [u8]) -> Self {
        let len_bits = (data.len() as u64).saturating_mul(8);
        Cursor {
            data,
            pos: 0,
            len_bits,
            scopes: vec![Scope {
                abbrev_width: 2,
                abbrevs: Vec::new(),
            }],
            blockinfo: HashMap::new(),
            last_left: None,
            skip_blockinfo: false,
        }
    }

    /// Skips `BLOCKINFO` blocks rather than reading them. Their
    /// abbreviations only apply to blocks entered afterwards, so a reader
    /// that looks at the records of a block it is already in (not at its
    /// sub-blocks) does not need them.
    pub(crate) fn skip_blockinfo(&mut self, skip: bool) {
        self.skip_blockinfo = skip;
    }

    /// LLVM's `advanceSkippingSubblocks`, what its readers of one block's
    /// records use: every sub-block, `BLOCKINFO` included, is skipped by
    /// its length word, so only records and the block's end come back.
    pub(crate) fn advance_skipping_subblocks(&mut self) -> Result<Entry, BitcodeError> {
        let saved = std::mem::replace(&mut self.skip_blockinfo, true);
        let result = loop {
            match self.advance() {
                Ok(Entry::SubBlock(_)) => {
                    if let Err(e) = self.skip_block() {
                        break Err(e);
                    }
                }
                other => break other,
            }
        };
        self.skip_blockinfo = saved;
        result
    }

    /// The current position in bits.
    pub fn bit_pos(&self) -> u64 {
        self.pos
    }

    /// Bytes of the underlying buffer.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Whether the whole stream was consumed (allowing up to 31 bits of
    /// trailing zero padding, as writers pad to 32-bit words).
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.len_bits
    }

    /// Current nesting depth (0 = outermost).
    pub fn depth(&self) -> usize {
        self.scopes.len() - 1
    }

    fn remaining(&self) -> u64 {
        self.len_bits.saturating_sub(self.pos)
    }

    /// Reads `width` bits (0 to 64) as an unsigned little-endian field.
    pub fn read(&mut self, width: u32) -> Result<u64, BitcodeError> {
        if width > 64 {
            return Err(malformed("field wider than 64 bits"));
        }
        if u64::from(width) > self.remaining() {
            return Err(self.end_of_file());
        }
        // Fast path: one 64-bit load covers the field (bit offset <= 7,
        // so widths up to 56 fit).
        let byte_index = (self.pos / 8) as usize;
        if width <= 56 {
            if let Some(bytes) = byte_index
                .checked_add(8)
                .and_then(|end| self.data.get(byte_index..end))
            {
                let mut word = [0u8; 8];
                word.copy_from_slice(bytes);
                let bit_in_byte = (self.pos % 8) as u32;
                let value = (u64::from_le_bytes(word) >> bit_in_byte) & ((1u64 << width) - 1);
                self.pos += u64::from(width);
                return Ok(value);
            }
        }
        let mut value = 0u64;
        let mut got = 0u32;
        while got < width {
            let byte_index = (self.pos / 8) as usize;
            let bit_in_byte = (self.pos % 8) as u32;
            let byte = *self
                .data
                .get(byte_index)
                .ok_or(BitcodeError::UnexpectedEnd)?;
            let avail = 8 - bit_in_byte;
            let take = avail.min(width - got);
            let chunk = (u64::from(byte) >> bit_in_byte) & ((1u64 << take) - 1);
            value |= chunk << got;
            got += take;
            self.pos += u64::from(take);
        }
        Ok(value)
    }

    /// LLVM's error for a field that runs past the end: its reader holds
    /// the stream in 64-bit words loaded one after the other, and fails
    /// when it needs the next word (none left: the text names the size)
    /// or when the last, partial word is too short.
    fn end_of_file(&self) -> BitcodeError {
        let size = self.data.len() as u64;
        let next = if self.pos % 64 == 0 {
            self.pos / 8
        } else {
            ((self.pos / 64 + 1) * 8).min(size)
        };
        BitcodeError::EndOfFile((next >= size).then_some((size, size)))
    }

    /// LLVM's `JumpToBit`: it never refuses a position. The reader moves to
    /// the 64-bit word holding `bit` and reads the bits before it in that
    /// word, which fails (LLVM's end-of-file texts) when the word is past
    /// the end or too short; a position at a word boundary past the end
    /// leaves the reader at the end of the stream.
    pub(crate) fn jump(&mut self, bit: u64) -> Result<(), BitcodeError> {
        let size = self.data.len() as u64;
        let word_byte = (bit / 8) & !7;
        let in_word = bit & 63;
        if word_byte >= size {
            self.pos = self.len_bits;
            return if in_word == 0 {
                Ok(())
            } else {
                Err(BitcodeError::EndOfFile(Some((word_byte, size))))
            };
        }
        if bit > self.len_bits {
            self.pos = self.len_bits;
            return Err(BitcodeError::EndOfFile(None));
        }
        self.pos = bit;
        Ok(())
    }

    /// Reads a VBR field of `width`-bit chunks as LLVM's `ReadVBR64` does
    /// (record operands, literals, encoding data): each chunk is held in
    /// 32 bits (a chunk wider than 32 bits is its low 32 bits, and ends the
    /// field), data bits past the 64th are dropped, and a field still going
    /// after 64 bits is "Unterminated VBR".
    pub(crate) fn read_vbr(&mut self, width: u32) -> Result<u64, BitcodeError> {
        self.read_vbr_in(width, 64)
    }

    /// LLVM's `ReadVBR`, the 32-bit reader (block IDs, abbreviation widths,
    /// record codes, operand and array counts, blob lengths): the same,
    /// with a 32-bit result and "Unterminated VBR" after 32 bits.
    pub(crate) fn read_vbr32(&mut self, width: u32) -> Result<u64, BitcodeError> {
        self.read_vbr_in(width, 32)
    }

    /// The operand or element count of a record being read: a fault in it
    /// is reported as LLVM's `readRecord` reports it.
    fn read_count(&mut self) -> Result<u64, BitcodeError> {
        self.read_vbr32(6).map_err(|e| BitcodeError::Reader {
            message: format!("Failed to read size: {e}"),
            producer: String::new(),
        })
    }

    /// LLVM's `isSizePlausible` for an operand or element count: no more
    /// than the stream has bits.
    fn check_plausible(&self, count: u64) -> Result<(), BitcodeError> {
        if count > (self.data.len() as u64).saturating_mul(8) {
            return Err(BitcodeError::Bitstream("Size is not plausible"));
        }
        Ok(())
    }

    fn read_vbr_in(&mut self, width: u32, bits: u32) -> Result<u64, BitcodeError> {
        if width == 0 || width > 64 {
            return Err(malformed("invalid VBR width"));
        }
        let mask = 1u64 << (width - 1);
        let mut piece = u64::from(self.read(width)? as u32);
        let mut value = 0u64;
        let mut next = 0u32;
        loop {
            value |= (piece & (mask - 1)) << next;
            if piece & mask == 0 {
                return Ok(if bits == 32 {
                    u64::from(value as u32)
                } else {
                    value
                });
            }
            next += width - 1;
            if next >= bits {
                return Err(BitcodeError::Bitstream("Unterminated VBR"));
            }
            piece = u64::from(self.read(width)? as u32);
        }
    }

    fn align32(&mut self) -> Result<(), BitcodeError> {
        let aligned = self.pos.div_ceil(32) * 32;
        if aligned > self.len_bits {
            // Padding past the end: treat as the end of the stream.
            self.pos = self.len_bits;
        } else {
            self.pos = aligned;
        }
        Ok(())
    }

    fn scope(&self) -> &Scope {
        // There is always at least the outermost scope.
        self.scopes.last().expect("outermost scope")
    }

    /// Reads the next entry of the current block. `DEFINE_ABBREV` entries
    /// and `BLOCKINFO` blocks are handled here and never returned.
    pub fn advance(&mut self) -> Result<Entry, BitcodeError> {
        loop {
            let scope = self.scope();
            let width = scope.abbrev_width;
            let at_outer = self.scopes.len() == 1;
            if at_outer {
                // Writers pad the top level to 32-bit words; fewer than 32
                // bits left, or only zero padding, means the end.
                if self.remaining() < 32 {
                    self.pos = self.len_bits;
                    return Ok(Entry::EndOfStream);
                }
            }
            if self.at_end() {
                // LLVM's `advance` at the end of the stream: an error
                // entry, which its callers report as "Malformed block".
                return Err(BitcodeError::UnexpectedEnd);
            }
            let id = self.read(width)?;
            match id {
                0 => {
                    if at_outer {
                        // Nothing to end; the caller reports it.
                        return Ok(Entry::EndBlock);
                    }
                    self.align32()?;
                    let scope = self.scopes.pop().expect("inner scope");
                    self.last_left = Some((scope.abbrev_width, scope.abbrevs));
                    return Ok(Entry::EndBlock);
                }
                1 => {
                    let block_id = self.read_vbr32(8)?;
                    if block_id == 0 {
                        if self.skip_blockinfo {
                            self.skip_block()?;
                        } else {
                            self.read_blockinfo()?;
                        }
                        continue;
                    }
                    return Ok(Entry::SubBlock(block_id));
                }
                2 => {
                    let abbrev = self.read_abbrev_def()?;
                    let scope = self.scopes.last_mut().expect("scope");
                    scope.abbrevs.push(Rc::new(abbrev));
                }
                _ => {
                    if at_outer && id != 3 {
                        return Err(malformed("invalid abbreviation ID at top level"));
                    }
                    return Ok(Entry::Record(id));
                }
            }
        }
    }

    /// Reads the header of a sub-block (after [`Entry::SubBlock`]) and
    /// makes it the current block.
    pub fn enter_block(&mut self, block_id: u64) -> Result<(), BitcodeError> {
        if self.scopes.len() > MAX_DEPTH {
            return Err(malformed("blocks nested too deeply"));
        }
        // LLVM's checks, in its order. The length word is not checked: a
        // block that is entered is read to its END_BLOCK, wherever that is.
        let width = self.read_vbr32(4)?;
        // LLVM's MaxChunkSize: abbreviation IDs are at most 32 bits wide.
        if width > 32 {
            return Err(BitcodeError::CodeWidthTooLarge(width));
        }
        self.align32()?;
        self.read(32)?;
        if width == 0 {
            return Err(BitcodeError::Bitstream(
                "can't enter sub-block: current code size is 0",
            ));
        }
        if self.at_end() {
            return Err(BitcodeError::Bitstream(
                "can't enter sub block: already at end of stream",
            ));
        }
        let abbrevs = self.blockinfo.get(&block_id).cloned().unwrap_or_default();
        self.scopes.push(Scope {
            abbrev_width: width as u32,
            abbrevs,
        });
        Ok(())
    }

    /// Skips a sub-block (after [`Entry::SubBlock`]) using its length word.
    pub(crate) fn skip_block(&mut self) -> Result<(), BitcodeError> {
        // The abbreviation width does not matter here (LLVM ignores it).
        self.read_vbr32(4)?;
        self.align32()?;
        let words = self.read(32)?;
        // LLVM's checks and messages, in its order.
        if self.at_end() {
            return Err(BitcodeError::SkipAtEnd);
        }
        let to = self.pos.saturating_add(words.saturating_mul(32));
        if to > self.len_bits {
            return Err(BitcodeError::SkipPastEnd { to, from: self.pos });
        }
        self.pos = to;
        Ok(())
    }

    fn read_abbrev_def(&mut self) -> Result<Abbrev, BitcodeError> {
        let count = self.read_vbr32(5)?;
        let mut ops = Vec::new();
        let mut i = 0u64;
        while i < count {
            i += 1;
            let is_literal = self.read(1)? == 1;
            if is_literal {
                ops.push(AbbrevOp::Literal(self.read_vbr(8)?));
                continue;
            }
            let encoding = self.read(3)?;
            let op = match encoding {
                1 | 2 => {
                    let value = self.read_vbr(5)?;
                    if value == 0 {
                        // A zero-width field always reads as zero.
                        AbbrevOp::Literal(0)
                    } else if value > 32 {
                        // LLVM's MaxChunkSize: no field of an abbreviation
                        // is wider than 32 bits.
                        return Err(BitcodeError::Bitstream(
                            "Fixed or VBR abbrev record with size > MaxChunkData",
                        ));
                    } else if encoding == 1 {
                        AbbrevOp::Fixed(value as u32)
                    } else {
                        // Any width LLVM accepts (1 to 32).
                        AbbrevOp::Vbr(value as u32)
                    }
                }
                3 => AbbrevOp::Array,
                4 => AbbrevOp::Char6,
                5 => AbbrevOp::Blob,
                _ => return Err(BitcodeError::Bitstream("Invalid encoding")),
            };
            ops.push(op);
        }
        // LLVM's only check at definition; the shape is checked where a
        // record uses the abbreviation.
        if ops.is_empty() {
            return Err(BitcodeError::Bitstream("Abbrev record with no operands"));
        }
        Ok(Abbrev { ops })
    }

    fn read_blockinfo(&mut self) -> Result<(), BitcodeError> {
        self.enter_block(0)?;
        let mut current: Option<u64> = None;
        loop {
            let width = self.scope().abbrev_width;
            if self.at_end() {
                // LLVM's `advance` at the end of the stream: an error
                // entry, which its callers report as "Malformed block".
                return Err(BitcodeError::UnexpectedEnd);
            }
            let id = self.read(width)?;
            match id {
                0 => {
                    self.align32()?;
                    self.scopes.pop();
                    return Ok(());
                }
                1 => {
                    // Sub-blocks inside BLOCKINFO carry nothing we need.
                    self.read_vbr32(8)?;
                    self.skip_block()?;
                }
                2 => {
                    // LLVM's `ReadBlockInfoBlock` gives up (its callers
                    // say "Malformed block") on an abbreviation or a
                    // name before the first SETBID, and on an empty
                    // SETBID.
                    let Some(target) = current else {
                        return Err(BitcodeError::UnexpectedEnd);
                    };
                    let abbrev = self.read_abbrev_def()?;
                    self.blockinfo
                        .entry(target)
                        .or_default()
                        .push(Rc::new(abbrev));
                }
                _ => {
                    let record = self.read_record(id)?;
                    match record.code as u32 {
                        1 => {
                            let target = *record.ops.first().ok_or(BitcodeError::UnexpectedEnd)?;
                            current = Some(u64::from(target as u32));
                        }
                        2 | 3 if current.is_none() => return Err(BitcodeError::UnexpectedEnd),
                        _ => {}
                    }
                }
            }
        }
    }

    fn abbrev(&self, id: u64) -> Result<Rc<Abbrev>, BitcodeError> {
        let index = id
            .checked_sub(4)
            .and_then(|i| usize::try_from(i).ok())
            .ok_or(BitcodeError::Bitstream("Invalid abbrev number"))?;
        self.scope()
            .abbrevs
            .get(index)
            .cloned()
            .ok_or(BitcodeError::Bitstream("Invalid abbrev number"))
    }

    fn read_scalar(&mut self, op: AbbrevOp) -> Result<u64, BitcodeError> {
        match op {
            AbbrevOp::Literal(v) => Ok(v),
            AbbrevOp::Fixed(w) => self.read(w),
            AbbrevOp::Vbr(w) => self.read_vbr(w),
            AbbrevOp::Char6 => Ok(decode_char6(self.read(6)? as u8)),
            AbbrevOp::Array | AbbrevOp::Blob => Err(malformed("invalid scalar encoding")),
        }
    }

    /// The code of a record laid out by the abbreviation `ops`, its first
    /// operand. LLVM checks an abbreviation's shape when a record uses it,
    /// not when it is defined: its texts, in its order.
    fn read_record_code(&mut self, ops: &[AbbrevOp]) -> Result<u64, BitcodeError> {
        let first = *ops.first().ok_or_else(|| malformed("empty abbreviation"))?;
        if matches!(first, AbbrevOp::Array | AbbrevOp::Blob) {
            return Err(BitcodeError::Bitstream(
                "Abbreviation starts with an Array or a Blob",
            ));
        }
        self.read_scalar(first)
    }

    /// LLVM's `skipRecord`, which its file-level walk uses for records
    /// between the top-level blocks: unlike a read, it takes an operand
    /// count as it comes (no plausibility check), jumps over fixed-width
    /// and 6-bit arrays, and takes a blob that runs past the end as the
    /// end of the stream.
    pub(crate) fn skip_record_unread(&mut self, id: u64) -> Result<(), BitcodeError> {
        if id == 3 {
            self.read_vbr32(6)?;
            let count = self.read_vbr32(6)?;
            for _ in 0..count {
                self.read_vbr(6)?;
            }
            return Ok(());
        }
        let abbrev = self.abbrev(id)?;
        let ops = &abbrev.ops;
        self.read_record_code(ops)?;
        let mut i = 1;
        while i < ops.len() {
            match ops[i] {
                AbbrevOp::Array => {
                    let count = self.read_vbr32(6)?;
                    match ops.get(i + 1).copied() {
                        Some(AbbrevOp::Fixed(w)) => self.jump(self.pos + count * u64::from(w))?,
                        Some(AbbrevOp::Char6) => self.jump(self.pos + count * 6)?,
                        Some(AbbrevOp::Vbr(w)) => {
                            for _ in 0..count {
                                self.read_vbr(w)?;
                            }
                        }
                        _ => {
                            return Err(BitcodeError::Bitstream(
                                "Array element type can't be an Array or a Blob",
                            ))
                        }
                    }
                    i += 2;
                }
                AbbrevOp::Blob => {
                    let len = self.read_vbr32(6)?;
                    self.align32()?;
                    let end = self.pos + len.div_ceil(4) * 32;
                    if end / 8 > self.data.len() as u64 {
                        self.pos = self.len_bits;
                        return Ok(());
                    }
                    self.jump(end)?;
                    i += 1;
                }
                op => {
                    self.read_scalar(op)?;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Reads the record with abbreviation ID `id`, passing every operand
    /// after the code to `sink`. Returns the code and the blob, if any.
    pub fn read_record_with(
        &mut self,
        id: u64,
        sink: &mut dyn FnMut(u64) -> Result<(), BitcodeError>,
    ) -> Result<(u64, Option<&'a [u8]>), BitcodeError> {
        if id == 3 {
            let code = self.read_vbr32(6)?;
            let count = self.read_count()?;
            self.check_plausible(count)?;
            // Each operand takes six bits or more: a count the stream
            // cannot hold ends in an end-of-file error, as in LLVM.
            for _ in 0..count {
                let v = self.read_vbr(6)?;
                sink(v)?;
            }
            return Ok((code, None));
        }
        let abbrev = self.abbrev(id)?;
        let ops = &abbrev.ops;
        let code = self.read_record_code(ops)?;
        let mut blob = None;
        let mut i = 1;
        while i < ops.len() {
            match ops[i] {
                AbbrevOp::Array => {
                    let count = self.read_count()?;
                    self.check_plausible(count)?;
                    if i + 2 != ops.len() {
                        return Err(BitcodeError::Bitstream("Array op not second to last"));
                    }
                    let elt = ops[i + 1];
                    match elt {
                        AbbrevOp::Fixed(_) | AbbrevOp::Vbr(_) | AbbrevOp::Char6 => {}
                        AbbrevOp::Literal(_) => {
                            return Err(BitcodeError::Bitstream(
                                "Array element type has to be an encoding of a type",
                            ))
                        }
                        AbbrevOp::Array | AbbrevOp::Blob => {
                            return Err(BitcodeError::Bitstream(
                                "Array element type can't be an Array or a Blob",
                            ))
                        }
                    }
                    // Each element takes a bit or more (zero-width fields
                    // are literals): the loop ends at the end of the
                    // stream at the latest.
                    for _ in 0..count {
                        let v = self.read_scalar(elt)?;
                        sink(v)?;
                    }
                    i += 2;
                }
                AbbrevOp::Blob => {
                    let len = self.read_vbr32(6)?;
                    self.align32()?;
                    let start_bit = self.pos;
                    let len_bits = len * 8; // len < 2^32
                                            // LLVM's check: the blob, padded to 32 bits, must end
                                            // inside the stream.
                    if start_bit + len.div_ceil(4) * 32 > self.len_bits {
                        return Err(BitcodeError::Bitstream("Blob ends too soon"));
                    }
                    let start = (start_bit / 8) as usize;
                    let end = start + len as usize;
                    blob = Some(
                        self.data
                            .get(start..end)
                            .ok_or(BitcodeError::UnexpectedEnd)?,
                    );
                    self.pos = start_bit + len_bits;
                    self.align32()?;
                    i += 1;
                }
                op => {
                    let v = self.read_scalar(op)?;
                    sink(v)?;
                    i += 1;
                }
            }
        }
        Ok((code, blob))
    }

    /// Reads a whole record, keeping at most `max_ops` operands (more is an
    /// error, so hostile records cannot make us allocate without bound).
    pub(crate) fn read_record_limited(
        &mut self,
        id: u64,
        max_ops: usize,
    ) -> Result<Record<'a>, BitcodeError> {
        let mut ops = Vec::new();
        let (code, blob) = self.read_record_with(id, &mut |v| {
            if ops.len() >= max_ops {
                return Err(malformed("record has too many operands"));
            }
            ops.push(v);
            Ok(())
        })?;
        Ok(Record { code, ops, blob })
    }

    /// Reads a whole record (operands limited by the input size).
    pub(crate) fn read_record(&mut self, id: u64) -> Result<Record<'a>, BitcodeError> {
        self.read_record_limited(id, usize::MAX)
    }

    /// Skips a record, returning its code.
    pub(crate) fn skip_record(&mut self, id: u64) -> Result<u64, BitcodeError> {
        let (code, _) = self.read_record_with(id, &mut |_| Ok(()))?;
        Ok(code)
    }

    /// Skips a record, returning its code and whether it has at least one
    /// operand after the code (a blob does not count). Same result and
    /// errors as [`Cursor::read_record_with`], but the operands of an
    /// unabbreviated record are stepped over without being decoded, which
    /// is most of the cost of walking a module's records (its data layout
    /// is one such record of a few hundred characters).
    pub fn skip_record_any_ops(&mut self, id: u64) -> Result<(u64, bool), BitcodeError> {
        if id != 3 {
            let mut any = false;
            let (code, _) = self.read_record_with(id, &mut |_| {
                any = true;
                Ok(())
            })?;
            return Ok((code, any));
        }
        let code = self.read_vbr32(6)?;
        let count = self.read_count()?;
        self.check_plausible(count)?;
        self.skip_vbr6(count)?;
        Ok((code, count > 0))
    }

    /// Steps over `count` VBR6 values: the same end position and errors as
    /// `count` calls of `read_vbr(6)`. Nine 6-bit chunks are looked at
    /// together: a value ends at a chunk whose top bit is clear, so the
    /// values ending in the window are counted with one mask. A value that
    /// does not end within a window (ten chunks or more, where 64-bit
    /// overflow becomes possible) and the last few bits of the stream go
    /// through `read_vbr`, which checks them.
    fn skip_vbr6(&mut self, mut count: u64) -> Result<(), BitcodeError> {
        // Bit 5 of each of nine chunks: 9 * 6 = 54 bits, which with up to
        // 7 bits of offset into the first byte fits one 64-bit load.
        const ENDS: u64 = 0x0020_8208_2082_0820;
        const WINDOW_BITS: u64 = 54;
        while count > 0 {
            let byte_index = (self.pos / 8) as usize;
            let word = (WINDOW_BITS <= self.remaining())
                .then(|| {
                    byte_index
                        .checked_add(8)
                        .and_then(|e| self.data.get(byte_index..e))
                })
                .flatten();
            let Some(bytes) = word else {
                self.read_vbr(6)?;
                count -= 1;
                continue;
            };
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            let window = u64::from_le_bytes(word) >> (self.pos % 8);
            let mut ends = !window & ENDS;
            let found = u64::from(ends.count_ones());
            if found == 0 {
                self.read_vbr(6)?;
                count -= 1;
                continue;
            }
            let take = found.min(count);
            for _ in 1..take {
                ends &= ends - 1;
            }
            // The value ends with the chunk holding this bit.
            self.pos += u64::from(ends.trailing_zeros()) + 1;
            count -= take;
        }
        Ok(())
    }

    /// Moves to an absolute bit position (used to re-read a record found in
    /// an earlier pass). The abbreviation state is not changed.
    pub fn seek(&mut self, bit: u64) -> Result<(), BitcodeError> {
        if bit > self.len_bits {
            return Err(BitcodeError::UnexpectedEnd);
        }
        self.pos = bit;
        Ok(())
    }

    /// Takes the abbreviation width and list of the block most recently
    /// left through `END_BLOCK`, so records found in it can be re-read
    /// later with [`Cursor::reread_record`].
    pub(crate) fn take_last_left(&mut self) -> Option<(u32, Vec<Rc<Abbrev>>)> {
        self.last_left.take()
    }

    /// Re-reads a record whose body starts at bit `body_bit`, using the
    /// abbreviation state of its block as returned by
    /// [`Cursor::take_last_left`]. Abbreviations are only ever appended in
    /// a block, so the final list is valid for every record in it.
    pub(crate) fn reread_record(
        &mut self,
        body_bit: u64,
        abbrev_id: u64,
        block: &(u32, Vec<Rc<Abbrev>>),
        sink: &mut dyn FnMut(u64) -> Result<(), BitcodeError>,
    ) -> Result<u64, BitcodeError> {
        self.seek(body_bit)?;
        self.scopes.push(Scope {
            abbrev_width: block.0,
            abbrevs: block.1.clone(),
        });
        let result = self.read_record_with(abbrev_id, sink);
        self.scopes.pop();
        Ok(result?.0)
    }
}

/// Decodes a 6-bit character (`a`-`z`, `A`-`Z`, `0`-`9`, `.`, `_`).
pub(crate) fn decode_char6(v: u8) -> u64 {
    let c = match v {
        0..=25 => b'a' + v,
        26..=51 => b'A' + (v - 26),
        52..=61 => b'0' + (v - 52),
        62 => b'.',
        _ => b'_',
    };
    u64::from(c)
}
