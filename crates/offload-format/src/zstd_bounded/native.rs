//! The first bytes of a zstd frame (RFC 8878), decoded natively: only the
//! blocks, literals and sequences those bytes need.
//!
//! libzstd hands out no byte of a block before it has decoded the whole
//! block (up to 128 KiB); naming a payload needs a few hundred bytes, so
//! for a library of small compressed entries libzstd would decode nearly
//! everything. This decoder stops as soon as it has `n` bytes.
//!
//! It answers only what it is sure of: any frame feature it does not
//! handle (skippable and dictionary frames, frames that end before `n`
//! bytes with a checksum to verify) and anything it finds malformed makes
//! it decline, and the caller asks libzstd instead, which gives the same
//! bytes or its own error text. Damage in the part of a block it does not
//! read goes unnoticed here (libzstd, decoding the whole block, would
//! notice it); the full decoding paths still notice it.
//!
//! Bounded work and memory: the output is at most `n` bytes (and `n` at
//! most [`MAX_HEAD`]); no recorded size is allocated; every loop either
//! produces output or consumes input.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::OnceLock;

/// The largest head this decoder makes; larger ones are declined.
pub(crate) const MAX_HEAD: usize = 1 << 20;

/// The largest block content (RFC 8878 `Block_Maximum_Size`).
const BLOCK_MAX: usize = 128 << 10;

/// The largest window libzstd accepts by default (2^27 bytes): a frame
/// that asks for more is declined, so that libzstd reports it.
const WINDOW_MAX: u64 = 1 << 27;

/// The first `n` bytes of the zstd frames in `src`, or `None` (declined)
/// when they are not exactly `n` bytes this decoder is sure of.
pub(crate) fn head(src: &[u8], n: usize) -> Option<Vec<u8>> {
    if n == 0 || n > MAX_HEAD {
        return None;
    }
    let mut d = Decoder {
        out: Vec::with_capacity(n),
        n,
        frame_start: 0,
        huff: None,
        tables: [None, None, None],
        reps: [1, 4, 8],
        window: 0,
    };
    let mut at = 0usize;
    while d.out.len() < n {
        at = d.frame(src, at)?;
    }
    d.out.truncate(n);
    Some(d.out)
}

/// The state of one decoding: the output (also the window, as the frames
/// start at its beginning) and what a block leaves for the next.
struct Decoder {
    out: Vec<u8>,
    n: usize,
    frame_start: usize,
    huff: Option<Rc<Huffman>>,
    /// Literal lengths, offsets, match lengths.
    tables: [Option<Cow<'static, Fse>>; 3],
    reps: [usize; 3],
    window: u64,
}

fn byte(src: &[u8], at: usize) -> Option<u8> {
    src.get(at).copied()
}

fn le(src: &[u8], at: usize, len: usize) -> Option<u64> {
    let b = src.get(at..at.checked_add(len)?)?;
    Some(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

impl Decoder {
    /// Decodes the frame at `at` as far as the head needs; returns where
    /// the next frame starts (when this one ended before the head did).
    fn frame(&mut self, src: &[u8], mut at: usize) -> Option<usize> {
        if src.get(at..at + 4)? != [0x28, 0xb5, 0x2f, 0xfd] {
            return None; // skippable frames and anything else
        }
        at += 4;
        let fhd = byte(src, at)?;
        at += 1;
        let fcs_flag = fhd >> 6;
        let single = fhd & 0x20 != 0;
        let checksum = fhd & 0x04 != 0;
        if fhd & 0x08 != 0 {
            return None; // reserved bit
        }
        let mut window = 0u64;
        if !single {
            let w = byte(src, at)?;
            at += 1;
            let base = 1u64 << (10 + (w >> 3));
            window = base + (base / 8) * u64::from(w & 7);
        }
        let dict_len = [0, 1, 2, 4][usize::from(fhd & 3)];
        if le(src, at, dict_len)? != 0 {
            return None; // a dictionary this decoder does not have
        }
        at += dict_len;
        let fcs_len = match fcs_flag {
            0 if single => 1,
            0 => 0,
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let mut content = None;
        if fcs_len > 0 {
            let v = le(src, at, fcs_len)?;
            content = Some(if fcs_len == 2 { v + 256 } else { v });
        }
        at += fcs_len;
        if single {
            window = content?;
        }
        if window > WINDOW_MAX {
            return None;
        }
        self.window = window;
        let block_max = (window as usize).min(BLOCK_MAX);
        self.frame_start = self.out.len();
        self.huff = None;
        self.tables = [None, None, None];
        self.reps = [1, 4, 8];
        loop {
            let h = le(src, at, 3)? as usize;
            at += 3;
            let last = h & 1 != 0;
            let size = h >> 3;
            if size > block_max {
                return None;
            }
            match (h >> 1) & 3 {
                0 => {
                    let data = src.get(at..at.checked_add(size)?)?;
                    let take = size.min(self.n - self.out.len());
                    self.out.extend_from_slice(&data[..take]);
                    at += size;
                }
                1 => {
                    let b = byte(src, at)?;
                    let take = size.min(self.n - self.out.len());
                    self.out.resize(self.out.len() + take, b);
                    at += 1;
                }
                2 => {
                    let data = src.get(at..at.checked_add(size)?)?;
                    self.compressed(data)?;
                    at += size;
                }
                _ => return None,
            }
            if self.out.len() >= self.n {
                return Some(at);
            }
            if last {
                break;
            }
        }
        // The frame ended before the head did: its size is checked here,
        // a checksum is left to libzstd.
        if checksum {
            return None;
        }
        if let Some(c) = content {
            if c != (self.out.len() - self.frame_start) as u64 {
                return None;
            }
        }
        Some(at)
    }

    /// A compressed block, decoded until the head is complete.
    fn compressed(&mut self, block: &[u8]) -> Option<()> {
        let (mut lits, used) = self.literals(block)?;
        let rest = block.get(used..)?;
        let start = self.out.len();
        let (count, mut at) = match *rest.first()? {
            0 => (0usize, 1usize),
            b @ 1..=127 => (usize::from(b), 1),
            b @ 128..=254 => ((usize::from(b - 128) << 8) + usize::from(byte(rest, 1)?), 2),
            255 => (le(rest, 1, 2)? as usize + 0x7f00, 3),
        };
        let mut lit_at = 0usize;
        if count > 0 {
            let modes = byte(rest, at)?;
            at += 1;
            if modes & 3 != 0 {
                return None;
            }
            for (k, shift) in [(0usize, 6u8), (1, 4), (2, 2)] {
                let mode = (modes >> shift) & 3;
                let kind = &KINDS[k];
                let table = match mode {
                    0 => Cow::Borrowed(predefined(k)?),
                    1 => {
                        let s = byte(rest, at)?;
                        at += 1;
                        if usize::from(s) > kind.max_symbol {
                            return None;
                        }
                        Cow::Owned(Fse::rle(s))
                    }
                    2 => {
                        let (t, used) =
                            Fse::read_spread(rest.get(at..)?, kind.max_log, kind.max_symbol)?;
                        at += used;
                        Cow::Owned(t)
                    }
                    _ => self.tables[k].take()?,
                };
                self.tables[k] = Some(table);
            }
            let stream = rest.get(at..)?;
            let mut bits = BackBits::new(stream)?;
            let [Some(ll_t), Some(of_t), Some(ml_t)] = &self.tables else {
                return None;
            };
            let mut ll_s = bits.read(ll_t.log)? as usize;
            let mut of_s = bits.read(of_t.log)? as usize;
            let mut ml_s = bits.read(ml_t.log)? as usize;
            for i in 0..count {
                let of_code = of_t.cell(of_s)?.symbol;
                let ml_code = usize::from(ml_t.cell(ml_s)?.symbol);
                let ll_code = usize::from(ll_t.cell(ll_s)?.symbol);
                if of_code > 31 {
                    return None;
                }
                let of_value = (1u64 << of_code) + bits.read(u32::from(of_code))?;
                let (ml_base, ml_bits) = ML_CODES[ml_code];
                let ml = ml_base as usize + bits.read(u32::from(ml_bits))? as usize;
                let (ll_base, ll_bits) = LL_CODES[ll_code];
                let ll = ll_base as usize + bits.read(u32::from(ll_bits))? as usize;
                let offset = offset(&mut self.reps, of_value, ll)?;
                // Literals, then the match, each only as far as the head.
                let wanted = ll.min(self.n - self.out.len());
                lits.copy(&mut self.out, lit_at, wanted)?;
                if wanted < ll {
                    return Some(());
                }
                lit_at += ll;
                if offset > self.out.len() - self.frame_start || offset as u64 > self.window {
                    return None;
                }
                let take = ml.min(self.n - self.out.len());
                for _ in 0..take {
                    let b = self.out[self.out.len() - offset];
                    self.out.push(b);
                }
                if self.out.len() - start > BLOCK_MAX {
                    return None;
                }
                if self.out.len() >= self.n {
                    return Some(());
                }
                if i + 1 < count {
                    ll_s = ll_t.next(ll_s, &mut bits)?;
                    ml_s = ml_t.next(ml_s, &mut bits)?;
                    of_s = of_t.next(of_s, &mut bits)?;
                }
            }
            if !bits.exhausted() {
                return None;
            }
        } else if at != rest.len() {
            return None;
        }
        // The literals after the last sequence.
        let left = lits.len().checked_sub(lit_at)?;
        let wanted = left.min(self.n - self.out.len());
        lits.copy(&mut self.out, lit_at, wanted)
    }
}

/// The offset a sequence's offset value names, updating the repeat
/// offsets `r`.
fn offset(r: &mut [usize; 3], value: u64, ll: usize) -> Option<usize> {
    if value > 3 {
        let o = usize::try_from(value - 3).ok()?;
        *r = [o, r[0], r[1]];
        return Some(o);
    }
    let index = value as usize - 1 + usize::from(ll == 0);
    match index {
        0 => {}
        1 => *r = [r[1], r[0], r[2]],
        2 => *r = [r[2], r[0], r[1]],
        _ => {
            let o = r[0].checked_sub(1).filter(|&o| o > 0)?;
            *r = [o, r[0], r[1]];
        }
    }
    Some(r[0])
}

impl Decoder {
    /// Reads a literals section header and what it needs; returns the
    /// literals (decoded lazily) and the bytes the section takes.
    fn literals<'b>(&mut self, block: &'b [u8]) -> Option<(Literals<'b>, usize)> {
        let b0 = byte(block, 0)?;
        let kind = b0 & 3;
        let format = (b0 >> 2) & 3;
        if kind < 2 {
            let (regen, hl) = match format {
                0 | 2 => (usize::from(b0 >> 3), 1usize),
                1 => ((le(block, 0, 2)? >> 4) as usize, 2),
                _ => ((le(block, 0, 3)? >> 4) as usize, 3),
            };
            if regen > BLOCK_MAX {
                return None;
            }
            return if kind == 0 {
                let data = block.get(hl..hl.checked_add(regen)?)?;
                Some((Literals::Raw(data), hl + regen))
            } else {
                Some((Literals::Rle(byte(block, hl)?, regen), hl + 1))
            };
        }
        let (hl, width, four) = match format {
            0 => (3, 10, false),
            1 => (3, 10, true),
            2 => (4, 14, true),
            _ => (5, 18, true),
        };
        let h = le(block, 0, hl)?;
        let mask = (1u64 << width) - 1;
        let regen = ((h >> 4) & mask) as usize;
        let size = ((h >> (4 + width)) & mask) as usize;
        if regen > BLOCK_MAX {
            return None;
        }
        let mut data = block.get(hl..hl.checked_add(size)?)?;
        if kind == 2 {
            let (table, used) = Huffman::read(data)?;
            self.huff = Some(Rc::new(table));
            data = data.get(used..)?;
        }
        let table = self.huff.clone()?;
        let lits = HuffLiterals::new(table, data, regen, four)?;
        Some((Literals::Huffman(Box::new(lits)), hl + size))
    }
}

/// A block's literals, decoded only as far as they are used.
enum Literals<'b> {
    Raw(&'b [u8]),
    Rle(u8, usize),
    Huffman(Box<HuffLiterals<'b>>),
}

impl Literals<'_> {
    fn len(&self) -> usize {
        match self {
            Literals::Raw(d) => d.len(),
            Literals::Rle(_, n) => *n,
            Literals::Huffman(h) => h.regen,
        }
    }

    /// Appends literals `at..at + len` to `out`.
    fn copy(&mut self, out: &mut Vec<u8>, at: usize, len: usize) -> Option<()> {
        let end = at.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        match self {
            Literals::Raw(d) => out.extend_from_slice(&d[at..end]),
            Literals::Rle(b, _) => out.resize(out.len() + len, *b),
            Literals::Huffman(h) => {
                h.decode_to(end)?;
                out.extend_from_slice(&h.done[at..end]);
            }
        }
        Some(())
    }
}

/// Huffman-coded literals: one or four streams, decoded in order.
struct HuffLiterals<'b> {
    table: Rc<Huffman>,
    regen: usize,
    /// Each stream, with the literal index it ends at.
    streams: Vec<(BackBits<'b>, usize)>,
    /// The literals decoded so far.
    done: Vec<u8>,
}

impl<'b> HuffLiterals<'b> {
    fn new(table: Rc<Huffman>, data: &'b [u8], regen: usize, four: bool) -> Option<Self> {
        let mut streams = Vec::with_capacity(4);
        if four {
            let sizes = [
                le(data, 0, 2)? as usize,
                le(data, 2, 2)? as usize,
                le(data, 4, 2)? as usize,
            ];
            let seg = regen.div_ceil(4);
            let mut at = 6usize;
            for (k, &s) in sizes.iter().enumerate() {
                let part = data.get(at..at.checked_add(s)?)?;
                streams.push((BackBits::new(part)?, (seg * (k + 1)).min(regen)));
                at += s;
            }
            streams.push((BackBits::new(data.get(at..)?)?, regen));
            if seg * 3 > regen {
                return None;
            }
        } else {
            streams.push((BackBits::new(data)?, regen));
        }
        Some(HuffLiterals {
            table,
            regen,
            streams,
            done: Vec::with_capacity(regen.min(4096)),
        })
    }

    /// Decodes literals until `end` are done.
    fn decode_to(&mut self, end: usize) -> Option<()> {
        let t = &self.table;
        for (bits, stop) in self.streams.iter_mut() {
            let target = end.min(*stop);
            let mask = (1u64 << t.log) - 1;
            while self.done.len() < target {
                // Where the 56 bits below the position lie inside the
                // stream, up to five symbols (of at most 11 bits) come
                // out of one eight-byte load; elsewhere one at a time.
                let lo = usize::try_from(bits.pos - 56).ok();
                let eight = lo.and_then(|lo| bits.data.get(lo / 8..)?.first_chunk::<8>());
                if let (Some(lo), Some(eight)) = (lo, eight) {
                    let v = u64::from_le_bytes(*eight) >> (lo % 8);
                    let mut avail = 56u32;
                    while avail >= t.log && self.done.len() < target {
                        let cell = t.cells[((v >> (avail - t.log)) & mask) as usize];
                        avail -= u32::from(cell.1);
                        self.done.push(cell.0);
                    }
                    bits.pos = lo as i64 + i64::from(avail);
                } else {
                    let cell = t.cells[bits.peek(t.log) as usize];
                    bits.consume(u32::from(cell.1))?;
                    self.done.push(cell.0);
                }
            }
            if self.done.len() == *stop && !bits.exhausted() {
                return None;
            }
            if self.done.len() >= end {
                break;
            }
        }
        Some(())
    }
}

/// A Huffman decoding table: `(symbol, bits)` for each `log`-bit prefix.
#[derive(Clone)]
struct Huffman {
    log: u32,
    cells: Vec<(u8, u8)>,
}

impl Huffman {
    /// Reads a Huffman tree description; returns it and its length.
    fn read(data: &[u8]) -> Option<(Huffman, usize)> {
        let hb = usize::from(byte(data, 0)?);
        let mut weights: Vec<u8> = Vec::with_capacity(256);
        let used;
        if hb >= 128 {
            let count = hb - 127;
            used = 1 + count.div_ceil(2);
            let bytes = data.get(1..used)?;
            for i in 0..count {
                let b = bytes[i / 2];
                weights.push(if i % 2 == 0 { b >> 4 } else { b & 15 });
            }
        } else {
            used = 1 + hb;
            let body = data.get(1..used)?;
            let (fse, hl) = Fse::read(body, 6, 15)?;
            let mut bits = BackBits::new(body.get(hl..)?)?;
            let mut s1 = bits.read(fse.log)? as usize;
            let mut s2 = bits.read(fse.log)? as usize;
            loop {
                if weights.len() >= 255 {
                    return None;
                }
                weights.push(fse.cells[s1].symbol);
                s1 = fse.next_any(s1, &mut bits);
                if bits.overflowed() {
                    weights.push(fse.cells[s2].symbol);
                    break;
                }
                if weights.len() >= 255 {
                    return None;
                }
                weights.push(fse.cells[s2].symbol);
                s2 = fse.next_any(s2, &mut bits);
                if bits.overflowed() {
                    weights.push(fse.cells[s1].symbol);
                    break;
                }
            }
        }
        if weights.len() > 255 || weights.iter().any(|&w| w > 11) {
            return None;
        }
        let total: u32 = weights
            .iter()
            .filter(|&&w| w > 0)
            .map(|&w| 1u32 << (w - 1))
            .sum();
        if total == 0 {
            return None;
        }
        let log = 32 - total.leading_zeros();
        if log > 11 {
            return None;
        }
        let left = (1u32 << log) - total;
        if !left.is_power_of_two() {
            return None;
        }
        weights.push((32 - left.leading_zeros()) as u8);
        // Codes by length, longest (weight 1) first, symbols in order.
        let mut rank_count = [0u32; 13];
        for &w in &weights {
            if w > 0 {
                rank_count[usize::from(w)] += 1;
            }
        }
        let mut next = [0u32; 13];
        let mut pos = 0u32;
        for w in 1..=11usize {
            next[w] = pos;
            pos += rank_count[w] << (w - 1);
        }
        if pos != 1 << log {
            return None;
        }
        let mut cells = vec![(0u8, 0u8); 1 << log];
        for (s, &w) in weights.iter().enumerate() {
            if w > 0 {
                let w = usize::from(w);
                let len = 1usize << (w - 1);
                let from = next[w] as usize;
                let bits = (log + 1 - w as u32) as u8;
                cells[from..from + len].fill((s as u8, bits));
                next[w] += len as u32;
            }
        }
        Some((Huffman { log, cells }, used))
    }
}

/// A backward bit stream (RFC 8878 §4.1): read from its last bit down,
/// after the padding up to the highest set bit of its last byte.
struct BackBits<'b> {
    data: &'b [u8],
    /// Bits not yet read; negative once reading went past the start.
    pos: i64,
}

impl<'b> BackBits<'b> {
    fn new(data: &'b [u8]) -> Option<Self> {
        let last = *data.last()?;
        if last == 0 {
            return None;
        }
        let pos = data.len() as i64 * 8 - i64::from(last.leading_zeros()) - 1;
        Some(BackBits { data, pos })
    }

    /// The next `n` (at most 32) bits, without reading them; bits before
    /// the start read as zeros.
    #[inline]
    fn peek(&self, n: u32) -> u64 {
        if n == 0 {
            return 0;
        }
        let lo = self.pos - i64::from(n);
        if let Ok(lo) = usize::try_from(lo) {
            let eight = self.data.get(lo / 8..).and_then(|d| d.first_chunk::<8>());
            if let Some(eight) = eight {
                return (u64::from_le_bytes(*eight) >> (lo % 8)) & ((1u64 << n) - 1);
            }
        }
        let first = lo.div_euclid(8);
        let shift = lo.rem_euclid(8);
        let mut v = 0u64;
        for k in (0..5i64).rev() {
            let i = first + k;
            let b = if i >= 0 {
                self.data.get(i as usize).copied().unwrap_or(0)
            } else {
                0
            };
            v = (v << 8) | u64::from(b);
        }
        (v >> shift) & ((1u64 << n) - 1)
    }

    /// Reads `n` bits; `None` past the start of the stream.
    #[inline]
    fn consume(&mut self, n: u32) -> Option<()> {
        self.pos -= i64::from(n);
        (self.pos >= 0).then_some(())
    }

    #[inline]
    fn read(&mut self, n: u32) -> Option<u64> {
        if n > 32 {
            return None;
        }
        let v = self.peek(n);
        self.consume(n)?;
        Some(v)
    }

    fn exhausted(&self) -> bool {
        self.pos == 0
    }

    fn overflowed(&self) -> bool {
        self.pos < 0
    }
}

/// One cell of an FSE decoding table.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Cell {
    symbol: u8,
    bits: u8,
    base: u16,
}

/// An FSE decoding table: every cell, or (`spread`) none, each worked out
/// as it is read.
#[derive(Clone)]
struct Fse {
    log: u32,
    cells: Vec<Cell>,
    spread: Option<Box<Spread>>,
}

/// How the symbols of a table are spread over its cells, for working out
/// one cell without building the others. A head reads a few dozen cells
/// of each sequence table (256 to 512 of them, built anew for each
/// compressed entry): naming a library's tens of thousands of entries
/// spent most of its time building cells it never read.
///
/// The "less than one" symbols take the last cells, the first of them the
/// very last, each with state 1. The others are placed in order, each as
/// many times as its count, along the walk that visits cell `j * step`
/// (modulo the table size) at its step `j`, passing over those last cells:
/// `step` is odd, so cell `u` is visited at step `u * inverse`. A symbol's
/// cells take the states from its count up in cell order, so a cell's
/// state is its symbol's count plus the symbol's cells before it.
#[derive(Clone, Debug)]
struct Spread {
    step: usize,
    /// `step`'s inverse modulo the table size.
    inverse: usize,
    /// Where each symbol's placements start; the last is where they end
    /// (the cells before the "less than one" symbols').
    starts: Vec<u32>,
    /// The "less than one" symbols, in order.
    low: Vec<u8>,
    /// The steps at which the walk passes over their cells, in order.
    passed: Vec<usize>,
}

impl Spread {
    /// The spread of `counts` (-1: "less than one") over `1 << log`
    /// cells, if they fill the table exactly.
    fn new(log: u32, counts: &[i32]) -> Option<Spread> {
        let size = 1usize << log;
        if !(5..=20).contains(&log) || counts.len() > 64 {
            return None;
        }
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut low = Vec::new();
        let mut at = 0usize;
        for (symbol, &c) in counts.iter().enumerate() {
            starts.push(u32::try_from(at).ok()?);
            if c == -1 {
                low.push(u8::try_from(symbol).ok()?);
            } else {
                at += usize::try_from(c).ok()?;
            }
        }
        let high = size.checked_sub(low.len())?;
        if at != high || high == 0 {
            return None;
        }
        starts.push(u32::try_from(at).ok()?);
        let step = (size >> 1) + (size >> 3) + 3;
        // Newton's iteration for the inverse of an odd number modulo a
        // power of two: each round doubles the bits that are right (three
        // to start with).
        let mut inverse = step;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2usize.wrapping_sub(step.wrapping_mul(inverse)));
        }
        debug_assert_eq!(step.wrapping_mul(inverse) & (size - 1), 1);
        let mut passed: Vec<usize> = (high..size)
            .map(|cell| cell.wrapping_mul(inverse) & (size - 1))
            .collect();
        passed.sort_unstable();
        Some(Spread {
            step,
            inverse,
            starts,
            low,
            passed,
        })
    }

    /// Cell `u` of the table of `1 << log` cells.
    fn cell(&self, log: u32, u: usize) -> Option<Cell> {
        let size = 1usize << log;
        let mask = size - 1;
        let high = size - self.low.len();
        if u >= size {
            return None;
        }
        if u >= high {
            return Some(Cell {
                symbol: self.low[size - 1 - u],
                bits: log as u8,
                base: 0,
            });
        }
        // The placement cell `u` got: its step, less the steps that
        // passed over a cell.
        let j = u.wrapping_mul(self.inverse) & mask;
        let k = j - self.passed.partition_point(|&p| p < j);
        let s = self
            .starts
            .partition_point(|&c| c as usize <= k)
            .checked_sub(1)?;
        let (first, end) = (self.starts[s] as usize, *self.starts.get(s + 1)? as usize);
        // The step of the symbol's first placement, then its cells in
        // walk order, counting those before `u`.
        let mut step = first;
        for &p in &self.passed {
            if p > step {
                break;
            }
            step += 1;
        }
        let (mut seen, mut before) = (0usize, 0usize);
        while seen < end - first {
            let cell = step.wrapping_mul(self.step) & mask;
            step += 1;
            if cell < high {
                seen += 1;
                before += usize::from(cell < u);
            }
        }
        let state = u32::try_from(end - first + before).ok()?;
        let bits = log.checked_sub(31 - state.leading_zeros())?;
        Some(Cell {
            symbol: u8::try_from(s).ok()?,
            bits: bits as u8,
            base: u16::try_from(((state as usize) << bits).checked_sub(size)?).ok()?,
        })
    }
}

impl Fse {
    fn rle(symbol: u8) -> Fse {
        Fse {
            log: 0,
            cells: vec![Cell {
                symbol,
                bits: 0,
                base: 0,
            }],
            spread: None,
        }
    }

    /// Cell `state` (`None` past the table).
    fn cell(&self, state: usize) -> Option<Cell> {
        match &self.spread {
            None => self.cells.get(state).copied(),
            Some(s) => s.cell(self.log, state),
        }
    }

    /// The state after `state`, reading its bits.
    fn next(&self, state: usize, bits: &mut BackBits<'_>) -> Option<usize> {
        let c = self.cell(state)?;
        Some(usize::from(c.base) + bits.read(u32::from(c.bits))? as usize)
    }

    /// [`Fse::next`], reading zeros past the start (the caller checks).
    fn next_any(&self, state: usize, bits: &mut BackBits<'_>) -> usize {
        let c = self.cell(state).unwrap_or_default();
        let v = bits.peek(u32::from(c.bits)) as usize;
        bits.pos -= i64::from(c.bits);
        usize::from(c.base) + v
    }

    /// [`Fse::read`], the table's cells worked out as they are read where
    /// they can be ([`Spread`]), for tables of which a few cells are read.
    fn read_spread(data: &[u8], max_log: u32, max_symbol: usize) -> Option<(Fse, usize)> {
        let (log, counts, used) = Fse::read_counts(data, max_log, max_symbol)?;
        let table = match Spread::new(log, &counts) {
            Some(spread) => Fse {
                log,
                cells: Vec::new(),
                spread: Some(Box::new(spread)),
            },
            None => Fse::build_counts(log, &counts)?,
        };
        Some((table, used))
    }

    /// Reads a table description (RFC 8878 §4.1.1); returns the table and
    /// the bytes it takes.
    fn read(data: &[u8], max_log: u32, max_symbol: usize) -> Option<(Fse, usize)> {
        let (log, counts, used) = Fse::read_counts(data, max_log, max_symbol)?;
        Some((Fse::build_counts(log, &counts)?, used))
    }

    /// Reads a table description: its log, its normalized counts and the
    /// bytes it takes.
    fn read_counts(data: &[u8], max_log: u32, max_symbol: usize) -> Option<(u32, Vec<i32>, usize)> {
        let mut bit = 0usize;
        // `n` (at most 16) bits from `bit` on, zeros past the end.
        let get = |bit: usize, n: u32| -> u64 {
            let mut v = 0u64;
            for k in 0..4 {
                let b = data.get(bit / 8 + k).copied().unwrap_or(0);
                v |= u64::from(b) << (8 * k);
            }
            (v >> (bit % 8)) & ((1u64 << n) - 1)
        };
        if data.is_empty() {
            return None;
        }
        let log = get(0, 4) as u32 + 5;
        bit += 4;
        if log > max_log {
            return None;
        }
        let mut counts: Vec<i32> = Vec::with_capacity(max_symbol + 1);
        let mut remaining = 1i32 << log;
        while remaining > 0 {
            if counts.len() > max_symbol {
                return None;
            }
            let nbits = 32 - (remaining as u32 + 1).leading_zeros();
            let mut val = get(bit, nbits) as i32;
            let lower = (1i32 << (nbits - 1)) - 1;
            let threshold = (1i32 << nbits) - 1 - (remaining + 1);
            if (val & lower) < threshold {
                val &= lower;
                bit += nbits as usize - 1;
            } else {
                if val > lower {
                    val -= threshold;
                }
                bit += nbits as usize;
            }
            let proba = val - 1;
            remaining -= proba.abs();
            counts.push(proba);
            if proba == 0 {
                loop {
                    let repeat = get(bit, 2) as usize;
                    bit += 2;
                    counts.resize(counts.len() + repeat, 0);
                    if counts.len() > max_symbol + 1 {
                        return None;
                    }
                    if repeat != 3 {
                        break;
                    }
                }
            }
            if bit > data.len() * 8 {
                return None;
            }
        }
        if remaining != 0 || counts.len() > max_symbol + 1 {
            return None;
        }
        Some((log, counts, bit.div_ceil(8)))
    }

    fn build(log: u32, counts: &[i16]) -> Option<Fse> {
        let counts: Vec<i32> = counts.iter().map(|&c| i32::from(c)).collect();
        Fse::build_counts(log, &counts)
    }

    /// The decoding table for normalized counts (-1: "less than one").
    fn build_counts(log: u32, counts: &[i32]) -> Option<Fse> {
        let size = 1usize << log;
        let mut cells = vec![Cell::default(); size];
        let mut next = [0u32; 64];
        if counts.len() > next.len() {
            return None;
        }
        let mut high = size;
        for (s, &c) in counts.iter().enumerate() {
            if c == -1 {
                high = high.checked_sub(1)?;
                cells[high].symbol = s as u8;
                next[s] = 1;
            }
        }
        let step = (size >> 1) + (size >> 3) + 3;
        let mask = size - 1;
        let mut pos = 0usize;
        for (s, &c) in counts.iter().enumerate() {
            if c > 0 {
                next[s] = c as u32;
                for _ in 0..c {
                    cells[pos].symbol = s as u8;
                    pos = (pos + step) & mask;
                    while pos >= high {
                        pos = (pos + step) & mask;
                    }
                }
            }
        }
        if pos != 0 {
            return None;
        }
        for cell in cells.iter_mut() {
            let s = usize::from(cell.symbol);
            let state = next[s];
            if state == 0 || state >= 2 << log {
                return None;
            }
            next[s] += 1;
            let bits = log - (31 - state.leading_zeros());
            cell.bits = bits as u8;
            cell.base = ((state << bits) as usize).checked_sub(size)? as u16;
        }
        Some(Fse {
            log,
            cells,
            spread: None,
        })
    }
}

/// The predefined table of sequence symbol kind `k` (made once).
fn predefined(k: usize) -> Option<&'static Fse> {
    static TABLES: OnceLock<[Option<Fse>; 3]> = OnceLock::new();
    TABLES
        .get_or_init(|| {
            KINDS
                .each_ref()
                .map(|kind| Fse::build(kind.default_log, kind.defaults))
        })
        .get(k)?
        .as_ref()
}

/// What the three sequence symbol kinds use.
struct Kind {
    max_log: u32,
    max_symbol: usize,
    default_log: u32,
    defaults: &'static [i16],
}

const KINDS: [Kind; 3] = [
    Kind {
        max_log: 9,
        max_symbol: 35,
        default_log: 6,
        defaults: &[
            4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1,
            1, 1, 1, -1, -1, -1, -1,
        ],
    },
    Kind {
        max_log: 8,
        max_symbol: 31,
        default_log: 5,
        defaults: &[
            1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1,
            -1,
        ],
    },
    Kind {
        max_log: 9,
        max_symbol: 52,
        default_log: 6,
        defaults: &[
            1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
        ],
    },
];

/// Literal length codes: (base, extra bits).
const LL_CODES: [(u32, u8); 36] = [
    (0, 0),
    (1, 0),
    (2, 0),
    (3, 0),
    (4, 0),
    (5, 0),
    (6, 0),
    (7, 0),
    (8, 0),
    (9, 0),
    (10, 0),
    (11, 0),
    (12, 0),
    (13, 0),
    (14, 0),
    (15, 0),
    (16, 1),
    (18, 1),
    (20, 1),
    (22, 1),
    (24, 2),
    (28, 2),
    (32, 3),
    (40, 3),
    (48, 4),
    (64, 6),
    (128, 7),
    (256, 8),
    (512, 9),
    (1024, 10),
    (2048, 11),
    (4096, 12),
    (8192, 13),
    (16384, 14),
    (32768, 15),
    (65536, 16),
];

/// Match length codes: (base, extra bits).
const ML_CODES: [(u32, u8); 53] = [
    (3, 0),
    (4, 0),
    (5, 0),
    (6, 0),
    (7, 0),
    (8, 0),
    (9, 0),
    (10, 0),
    (11, 0),
    (12, 0),
    (13, 0),
    (14, 0),
    (15, 0),
    (16, 0),
    (17, 0),
    (18, 0),
    (19, 0),
    (20, 0),
    (21, 0),
    (22, 0),
    (23, 0),
    (24, 0),
    (25, 0),
    (26, 0),
    (27, 0),
    (28, 0),
    (29, 0),
    (30, 0),
    (31, 0),
    (32, 0),
    (33, 0),
    (34, 0),
    (35, 1),
    (37, 1),
    (39, 1),
    (41, 1),
    (43, 2),
    (47, 2),
    (51, 3),
    (59, 3),
    (67, 4),
    (83, 4),
    (99, 5),
    (131, 7),
    (259, 8),
    (515, 9),
    (1027, 10),
    (2051, 11),
    (4099, 12),
    (8195, 13),
    (16387, 14),
    (32771, 15),
    (65539, 16),
];

#[cfg(test)]
#[cfg(feature = "inspect")]
mod tests {
    use super::head;
    use crate::zstd_bounded::libzstd_head;
    use zstd::zstd_safe::{CCtx, CParameter};

    /// The tests' shared deterministic generator, with a bound.
    struct Rng(Box<dyn FnMut() -> u64>);

    impl Rng {
        fn new(seed: u64) -> Rng {
            Rng(Box::new(test_support::xorshift(seed)))
        }
        fn next(&mut self) -> u64 {
            (self.0)()
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// A table's cells worked out one at a time are the cells built all
    /// at once, for counts of every shape the sequence tables take.
    #[test]
    fn spread_cells_are_the_built_cells() {
        let mut rng = Rng::new(0x05ee_df5e);
        let mut spread = 0;
        for round in 0..600 {
            let log = 5 + (round % 5) as u32;
            let size = 1i32 << log;
            let symbols = 1 + rng.below(53);
            let mut counts = vec![0i32; symbols];
            // Some tables with "less than one" symbols (built whole).
            let low = round % 3 == 0;
            let mut left = size;
            for c in counts.iter_mut() {
                if low && rng.below(5) == 0 && left > 1 {
                    *c = -1;
                    left -= 1;
                }
            }
            let open: Vec<usize> = (0..symbols).filter(|&i| counts[i] == 0).collect();
            if open.is_empty() {
                continue;
            }
            while left > 0 {
                counts[open[rng.below(open.len())]] += 1;
                left -= 1;
            }
            let built = super::Fse::build_counts(log, &counts).unwrap();
            match super::Spread::new(log, &counts) {
                Some(s) => {
                    spread += 1;
                    for u in 0..built.cells.len() {
                        assert_eq!(s.cell(log, u), Some(built.cells[u]), "{counts:?} cell {u}");
                    }
                    assert_eq!(s.cell(log, built.cells.len()), None);
                }
                None => panic!("no spread for {counts:?}"),
            }
        }
        assert!(spread > 500);
    }

    #[derive(Clone, Copy)]
    struct Params {
        level: i32,
        checksum: bool,
        size: bool,
        long: bool,
    }

    fn compress(data: &[u8], p: Params) -> Vec<u8> {
        let mut c = CCtx::create();
        c.set_parameter(CParameter::CompressionLevel(p.level))
            .unwrap();
        c.set_parameter(CParameter::ChecksumFlag(p.checksum))
            .unwrap();
        c.set_parameter(CParameter::ContentSizeFlag(p.size))
            .unwrap();
        c.set_parameter(CParameter::EnableLongDistanceMatching(p.long))
            .unwrap();
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
        c.compress2(&mut out, data).unwrap();
        out
    }

    /// Inputs of many kinds: random, text, ELF objects and cubins from the
    /// NVIDIA fixtures, zeros, repeats, and mixtures, 1 byte to 300 KB.
    fn inputs() -> Vec<Vec<u8>> {
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut v: Vec<Vec<u8>> = Vec::new();
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/nvidia");
        for name in ["libk.so", "plain.o", "rdc.o", "lz-big.o", "app"] {
            let data = std::fs::read(format!("{dir}/{name}")).unwrap();
            v.push(data[..data.len().min(300_000)].to_vec());
        }
        let text = std::fs::read(format!("{dir}/README.md")).unwrap();
        v.push(text.clone());
        v.push(text.repeat(20));
        v.push(vec![0; 1]);
        v.push(vec![0; 5000]);
        v.push(vec![0; 300_000]);
        v.push(b"x".to_vec());
        v.push((0..300_000u32).map(|i| (i % 251) as u8).collect());
        for len in [1usize, 7, 100, 1000, 4096, 70_000, 131_072, 140_000] {
            v.push((0..len).map(|_| rng.next() as u8).collect());
        }
        // Skewed symbols (Huffman literals without matches) and text-like
        // runs with matches at many distances.
        for len in [300usize, 5000, 200_000] {
            v.push(
                (0..len)
                    .map(|_| b"aaaaaaaabbbbccd"[rng.below(15)])
                    .collect(),
            );
            let words = [
                &b"kernel "[..],
                b"void ",
                b"__global__ ",
                b"float* ",
                b"x[i] = ",
                b"\n",
            ];
            let mut t = Vec::new();
            while t.len() < len {
                t.extend_from_slice(words[rng.below(words.len())]);
                if rng.below(10) == 0 {
                    t.push(rng.next() as u8);
                }
            }
            v.push(t);
        }
        // Random bytes with a repeat far away (long-distance matching).
        let mut far: Vec<u8> = (0..150_000).map(|_| rng.next() as u8).collect();
        far.extend_from_within(1000..100_000);
        v.push(far);
        v
    }

    /// Checks the native head of `frame` against libzstd's for `n`:
    /// returns whether the native decoder answered.
    fn check(frame: &[u8], n: usize, what: &str) -> bool {
        let native = head(frame, n);
        let reference = libzstd_head(frame, n);
        match native {
            None => false,
            Some(h) => {
                let r = reference.unwrap_or_else(|| panic!("{what} n={n}: libzstd fails"));
                assert_eq!(h.len(), n, "{what} n={n}");
                assert!(h == r[..n], "{what} n={n}: bytes differ from libzstd's");
                true
            }
        }
    }

    fn sizes(len: usize) -> Vec<usize> {
        let mut n: Vec<usize> = vec![
            1, 2, 3, 17, 64, 100, 256, 1000, 4096, 40_000, 131_072, 131_073, 200_000,
        ];
        n.push(len);
        n.retain(|&n| n <= len);
        n
    }

    #[test]
    fn heads_match_libzstd() {
        let mut answered = 0usize;
        let mut asked = 0usize;
        for (i, data) in inputs().iter().enumerate() {
            for level in -5..=22 {
                let p = Params {
                    level,
                    checksum: level % 2 == 0,
                    size: level % 3 != 0,
                    long: level % 4 == 1,
                };
                // The larger inputs at a few levels only: the slow levels
                // on 300 KB several times over cost seconds each.
                if data.len() > 50_000 && !matches!(level, -5 | -1 | 1 | 3 | 9 | 19) {
                    continue;
                }
                let frame = compress(data, p);
                for n in sizes(data.len()) {
                    asked += 1;
                    answered += usize::from(check(&frame, n, &format!("input {i} level {level}")));
                }
            }
        }
        // Declining is allowed, but must be rare on frames libzstd made.
        eprintln!("native answered {answered} of {asked}");
        assert!(
            answered * 100 >= asked * 95,
            "native answered {answered} of {asked}"
        );
    }

    #[test]
    fn heads_of_real_nvcc_frames() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/nvidia");
        let mut answered = 0;
        let mut frames = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if !path.is_file() {
                continue;
            }
            let data = std::fs::read(path).unwrap();
            for c in crate::nvidia::fatbin::scan(&data).containers {
                for e in c.entries {
                    if e.codec() != Some(crate::nvidia::Codec::Zstd) {
                        continue;
                    }
                    frames += 1;
                    let len = e.uncompressed_size as usize;
                    for n in sizes(len) {
                        answered += usize::from(check(e.payload, n, "nvcc frame"));
                    }
                    // The entry's own head goes the native way and agrees.
                    let h = e.head(256).unwrap();
                    assert_eq!(h.as_ref(), &libzstd_head(e.payload, 256).unwrap()[..]);
                }
            }
        }
        eprintln!("{answered} answers, {frames} frames");
        assert!(
            frames > 0 && answered > frames,
            "{answered} answers, {frames} frames"
        );
    }

    #[test]
    fn several_frames_raw_and_rle_blocks() {
        let mut rng = Rng::new(7);
        let random: Vec<u8> = (0..200_000).map(|_| rng.next() as u8).collect();
        let p = Params {
            level: 3,
            checksum: false,
            size: true,
            long: false,
        };
        // Incompressible data makes raw blocks, runs make RLE blocks.
        let mut frames = compress(&random[..1000], p);
        frames.extend(compress(&[9u8; 300_000], p));
        frames.extend(compress(&random, p));
        let mut whole = random[..1000].to_vec();
        whole.extend_from_slice(&[9u8; 300_000]);
        whole.extend_from_slice(&random);
        let mut answered = 0;
        for n in [1, 999, 1000, 1001, 5000, 301_000, 301_001, 400_000] {
            answered += usize::from(check(&frames, n, "frames"));
            assert!(head(&frames, n).is_none_or(|h| h == whole[..n]));
        }
        assert_eq!(answered, 8);
        // With checksums, a head that passes the first frame is declined
        // (the checksum is libzstd's to verify).
        let p = Params {
            checksum: true,
            ..p
        };
        let mut frames = compress(&random[..1000], p);
        frames.extend(compress(&random, p));
        assert!(head(&frames, 500).is_some());
        assert!(head(&frames, 1500).is_none());
        assert!(libzstd_head(&frames, 1500).is_some());
        // Skippable frames and dictionary frames are declined.
        let mut skip = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        skip.extend(compress(&random[..1000], p));
        assert!(head(&skip, 10).is_none());
        assert_eq!(libzstd_head(&skip, 10).unwrap(), &random[..10]);
        let mut c =
            zstd::bulk::Compressor::with_dictionary(3, b"a dictionary of some bytes").unwrap();
        let with_dict = c.compress(b"some bytes of a dictionary").unwrap();
        assert!(head(&with_dict, 4).is_none());
    }

    /// The documented difference: damage in the part of the first block
    /// a head does not need is not seen by the head decoder (its head is
    /// still right), while libzstd, decoding the whole block, fails; a
    /// whole decode still finds it.
    #[test]
    fn damage_past_the_head_goes_unseen() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/nvidia");
        let data = std::fs::read(format!("{dir}/libk.so")).unwrap();
        let data = &data[..data.len().min(40_000)];
        let p = Params {
            level: 3,
            checksum: false,
            size: true,
            long: false,
        };
        let frame = compress(data, p);
        let mut unseen = 0;
        for at in 20..frame.len() {
            let mut bad = frame.clone();
            bad[at] ^= 0x10;
            if let Some(h) = head(&bad, 64) {
                if h == data[..64] && libzstd_head(&bad, 64).is_none() {
                    assert!(zstd::stream::decode_all(&bad[..]).is_err());
                    unseen += 1;
                }
            }
        }
        assert!(unseen > 0);
    }

    /// Cut and damaged frames: never a panic, and an answer only with
    /// bytes that libzstd also gives (when libzstd decodes the damaged
    /// frame's head at all: damage the native decoder does not read it
    /// does not notice).
    #[test]
    fn cut_and_damaged_frames() {
        let mut rng = Rng::new(99);
        let data = inputs();
        let mut answered = 0;
        for (i, d) in data.iter().enumerate().filter(|(_, d)| d.len() > 50) {
            let frame = compress(
                d,
                Params {
                    level: 1 + (i as i32 % 19),
                    checksum: true,
                    size: true,
                    long: false,
                },
            );
            for cut in [0, 1, 4, 5, 6, 9, 12, frame.len() / 3, frame.len() - 1] {
                let cut = cut.min(frame.len());
                if let Some(h) = head(&frame[..cut], 40) {
                    answered += 1;
                    assert_eq!(h, d[..40], "input {i} cut {cut}");
                }
            }
            for _ in 0..300 {
                let mut bad = frame.clone();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(bad.len().min(600));
                    bad[at] ^= 1 << rng.below(8);
                }
                let n = 1 + rng.below(d.len().min(5000));
                if let (Some(h), Some(r)) = (head(&bad, n), libzstd_head(&bad, n)) {
                    assert_eq!(h.len(), n);
                    if r.len() >= n && h != r[..n] {
                        // Damage may change bytes libzstd then rejects
                        // further on only; both must not both decode to
                        // different heads of a frame libzstd accepts whole.
                        assert!(zstd::stream::decode_all(&bad[..]).is_err(), "input {i}");
                    }
                }
            }
        }
        assert!(answered > 0);
    }
}
