//! NVIDIA's own LZ-style block codec: fat binary entries with flag 0x2000
//! (and not 0x8000), written by CUDA 11 and 12 toolchains and by CUDA 13's
//! `--compress-mode=speed`.
//!
//! The stream is a sequence of sequences, as in an LZ4 block: a token byte
//! whose high nibble is the literal count and low nibble the match length
//! less 4; a nibble of 15 continues in the following bytes, each added,
//! until one below 255. The literals follow the token (and its count
//! bytes); then a 2-byte little-endian distance back into the output, then
//! the match length's bytes. The last sequence has literals only: the
//! stream ends after them.
//!
//! The decoder trusts nothing: the output may not exceed the size the entry
//! header records (checked as it grows, never allocated up front), a
//! distance must reach into what was already produced, and a stream cut
//! inside a sequence is an error. It keeps only the last 64 KiB of output
//! (the farthest a distance reaches) plus what it has not handed out yet.

use super::{DecodeError, Sink};

/// The farthest back a distance reaches.
const WINDOW: usize = 1 << 16;

/// Output held before it is handed to the sink.
const FLUSH_AT: usize = 1 << 20;

/// The first piece is handed out sooner: a caller that wants only the
/// head of an entry (to name its payload) then stops the decoding after a
/// few KiB instead of a MiB.
const FIRST_FLUSH: usize = 4 << 10;

/// The most output one input byte can stand for, with room for the tokens
/// of a minimal stream: a bound used to refuse, before decoding, an entry
/// that records more than its stream could ever produce.
pub(crate) fn max_output(input_len: u64) -> u64 {
    // A run of 255-valued length bytes adds 255 output bytes per input byte.
    input_len.saturating_mul(255).saturating_add(64)
}

/// Where the decoder puts its output, and reads its matches back from:
/// a window handed to a sink a piece at a time ([`Streamed`]), or one
/// buffer of the recorded size ([`Whole`]). The stream is parsed and
/// checked in one place, [`run`], for both.
trait Output {
    /// Bytes produced so far.
    fn produced(&self) -> u64;
    /// Appends `bytes`.
    fn literals(&mut self, bytes: &[u8]);
    /// Appends `length` bytes copied from `distance` back, byte by byte
    /// where the match overlaps what it produces. The caller has checked
    /// that `distance` is between 1 and [`Output::produced`] (and at most
    /// 65,535), and that the output stays within its limit.
    fn copy_back(&mut self, distance: usize, length: usize);
    /// After each sequence: `Ok(false)` stops the decoding.
    fn settle(&mut self) -> Result<bool, DecodeError>;
}

/// Parses `src` into `out`, which may hold at most `limit` bytes; stops
/// early where `out` says so.
fn run(src: &[u8], limit: u64, out: &mut impl Output) -> Result<(), DecodeError> {
    let mut at = 0usize;
    let cut = |at: usize| DecodeError::Truncated { at: at as u64 };
    let byte = |at: usize| src.get(at).copied().ok_or(cut(at));
    let read_length = |at: &mut usize, mut n: u64| -> Result<u64, DecodeError> {
        if n == 15 {
            loop {
                let b = byte(*at)?;
                *at += 1;
                n += u64::from(b);
                if b != 255 {
                    break;
                }
            }
        }
        Ok(n)
    };
    while at < src.len() {
        let token = src[at];
        at += 1;
        let literals = read_length(&mut at, u64::from(token >> 4))?;
        let end = usize::try_from(literals)
            .ok()
            .and_then(|n| at.checked_add(n))
            .filter(|&e| e <= src.len())
            .ok_or(cut(src.len()))?;
        if out.produced() + literals > limit {
            return Err(DecodeError::Overrun { limit });
        }
        out.literals(&src[at..end]);
        at = end;
        if at == src.len() {
            break;
        }
        let lo = byte(at)?;
        let hi = byte(at + 1)?;
        at += 2;
        let distance = u16::from_le_bytes([lo, hi]);
        let length = read_length(&mut at, u64::from(token & 0xf))? + 4;
        let produced = out.produced();
        if distance == 0 || u64::from(distance) > produced {
            return Err(DecodeError::BadReference {
                at: (at - 2) as u64,
                distance: u32::from(distance),
                produced,
            });
        }
        if produced + length > limit {
            return Err(DecodeError::Overrun { limit });
        }
        // The length is below the limit, checked above.
        out.copy_back(usize::from(distance), length as usize);
        if !out.settle()? {
            return Ok(());
        }
    }
    Ok(())
}

/// Decodes `src`, handing the output to `sink` in pieces; fails as soon as
/// the output would exceed `limit` bytes. Returns the output length, or
/// stops early (returning what was produced) when the sink says so.
pub(crate) fn decode(src: &[u8], limit: u64, sink: &mut Sink<'_>) -> Result<u64, DecodeError> {
    let mut out = Streamed {
        buf: Vec::new(),
        base: 0,
        pending: 0,
        flush_at: FIRST_FLUSH,
        sink,
        stopped: false,
    };
    run(src, limit, &mut out)?;
    if !out.stopped && out.pending < out.buf.len() {
        (out.sink)(&out.buf[out.pending..])?;
    }
    Ok(out.produced())
}

/// Decodes `src` into `out`, which must be exactly the size the entry
/// records: the whole payload in one buffer, without the window's copies
/// (profiling decodes every entry whole). Fails as [`decode`] does where
/// the stream would pass `out`'s end, and with [`DecodeError::Short`]
/// where it ends before.
pub(crate) fn decode_into(src: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    let recorded = out.len() as u64;
    let mut whole = Whole { out, len: 0 };
    run(src, recorded, &mut whole)?;
    if whole.len as u64 != recorded {
        return Err(DecodeError::Short {
            decoded: whole.len as u64,
            recorded,
        });
    }
    Ok(())
}

/// The streaming output: the last [`WINDOW`] bytes and what the sink has
/// not had yet.
struct Streamed<'s, 'k> {
    buf: Vec<u8>,
    /// Absolute output offset of buf[0].
    base: u64,
    /// Offset in buf of the first byte not yet handed to the sink.
    pending: usize,
    flush_at: usize,
    sink: &'s mut Sink<'k>,
    /// The sink asked for no more.
    stopped: bool,
}

impl Output for Streamed<'_, '_> {
    fn produced(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    fn literals(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn copy_back(&mut self, distance: usize, length: usize) {
        // `distance` is at most 65535 and the window keeps 65536 bytes.
        let start = self.buf.len() - distance;
        if distance >= length {
            self.buf.extend_from_within(start..start + length);
        } else {
            // The match overlaps what it produces: byte by byte.
            for i in start..start + length {
                let b = self.buf[i];
                self.buf.push(b);
            }
        }
    }

    fn settle(&mut self) -> Result<bool, DecodeError> {
        if self.buf.len() - self.pending >= self.flush_at {
            if !(self.sink)(&self.buf[self.pending..])? {
                self.stopped = true;
                return Ok(false);
            }
            self.pending = self.buf.len();
            self.flush_at = FLUSH_AT;
            // Only the window is needed for what follows.
            if self.buf.len() >= FLUSH_AT + WINDOW {
                let drop = self.buf.len() - WINDOW;
                self.buf.drain(..drop);
                self.base += drop as u64;
                self.pending = self.buf.len();
            }
        }
        Ok(true)
    }
}

/// The whole output in one buffer of the recorded size.
struct Whole<'o> {
    out: &'o mut [u8],
    len: usize,
}

impl Output for Whole<'_> {
    fn produced(&self) -> u64 {
        self.len as u64
    }

    fn literals(&mut self, bytes: &[u8]) {
        // Within the limit, which is the buffer's length: checked by `run`.
        self.out[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn copy_back(&mut self, distance: usize, length: usize) {
        let start = self.len - distance;
        if distance >= length {
            self.out.copy_within(start..start + length, self.len);
        } else {
            // An overlapping match repeats the `distance` bytes before it:
            // copied from `start` in runs that double, each a whole number
            // of periods until the last, so every run reads bytes already
            // written.
            let mut copied = 0;
            while copied < length {
                let n = (length - copied).min(distance + copied);
                self.out.copy_within(start..start + n, self.len + copied);
                copied += n;
            }
        }
        self.len += length;
    }

    fn settle(&mut self) -> Result<bool, DecodeError> {
        Ok(true)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes `data` as the codec's stream: greedy matches of at least 4
    /// bytes within the window (slow, for tests).
    pub(crate) fn encode(data: &[u8]) -> Vec<u8> {
        fn length(out: &mut Vec<u8>, mut n: usize) {
            while n >= 255 {
                out.push(255);
                n -= 255;
            }
            out.push(n as u8);
        }
        let mut out = Vec::new();
        let mut lit_start = 0;
        let mut i = 0;
        while i < data.len() {
            let mut best = (0usize, 0usize);
            let lo = i.saturating_sub(WINDOW - 1);
            for j in (lo..i).rev().take(512) {
                let mut n = 0;
                while n < 100_000 && i + n < data.len() && data[j + n] == data[i + n] {
                    n += 1;
                }
                if n > best.0 {
                    best = (n, i - j);
                }
                if n == 100_000 {
                    break;
                }
            }
            if best.0 < 4 {
                i += 1;
                continue;
            }
            let lits = i - lit_start;
            let m = best.0 - 4;
            out.push(((lits.min(15) as u8) << 4) | m.min(15) as u8);
            if lits >= 15 {
                length(&mut out, lits - 15);
            }
            out.extend_from_slice(&data[lit_start..i]);
            out.extend_from_slice(&(best.1 as u16).to_le_bytes());
            if m >= 15 {
                length(&mut out, m - 15);
            }
            i += best.0;
            lit_start = i;
        }
        let lits = data.len() - lit_start;
        out.push((lits.min(15) as u8) << 4);
        if lits >= 15 {
            length(&mut out, lits - 15);
        }
        out.extend_from_slice(&data[lit_start..]);
        out
    }

    /// Decodes with [`decode`], and checks that [`decode_into`] a buffer
    /// of the decoded size agrees, bytes and errors (an error's buffer is
    /// `limit` bytes, the size an entry would record).
    fn run(src: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        let streamed = decode(src, limit, &mut |b: &[u8]| {
            out.extend_from_slice(b);
            Ok(true)
        });
        let size = match &streamed {
            Ok(n) => {
                assert_eq!(*n, out.len() as u64);
                out.len()
            }
            Err(_) => usize::try_from(limit).unwrap_or(usize::MAX).min(1 << 24),
        };
        let mut whole = vec![0u8; size];
        let into = decode_into(src, &mut whole);
        match (&streamed, &into) {
            (Ok(_), Ok(())) => assert_eq!(whole, out),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            // A stream that stops short of `limit` decodes in pieces and
            // is short for a buffer of `limit` bytes.
            (Err(_), Ok(())) | (Ok(_), Err(_)) => {
                panic!("decode {streamed:?}, decode_into {into:?}")
            }
        }
        streamed.map(|_| out)
    }

    #[test]
    fn overlapping_matches_repeat_their_period() {
        // Every distance from 1 to 40 with lengths around it, after a
        // distinct prefix: what a byte-by-byte copy would give.
        for distance in 1usize..40 {
            for length in [4usize, 5, distance, distance + 1, 2 * distance + 3, 300] {
                let length = length.max(4);
                let prefix: Vec<u8> = (0..distance as u8)
                    .map(|b| b.wrapping_mul(37) ^ 0x5a)
                    .collect();
                let mut src = Vec::new();
                // Token: literals, then the match length less 4.
                let lit = prefix.len();
                let m = length - 4;
                src.push(((lit.min(15) as u8) << 4) | m.min(15) as u8);
                if lit >= 15 {
                    src.push((lit - 15) as u8);
                }
                src.extend_from_slice(&prefix);
                src.extend_from_slice(&(distance as u16).to_le_bytes());
                if m >= 15 {
                    let mut rest = m - 15;
                    while rest >= 255 {
                        src.push(255);
                        rest -= 255;
                    }
                    src.push(rest as u8);
                }
                // A last sequence of one literal.
                src.extend_from_slice(&[0x10, 0xee]);
                let mut want = prefix.clone();
                for _ in 0..length {
                    want.push(want[want.len() - distance]);
                }
                want.push(0xee);
                let got = run(&src, want.len() as u64).unwrap();
                assert_eq!(got, want, "distance {distance} length {length}");
            }
        }
    }

    #[test]
    fn round_trips() {
        let mut big = Vec::new();
        for i in 0..60_000u32 {
            big.extend_from_slice(format!("line {} {}\n", i % 977, i % 13).as_bytes());
        }
        big.extend(std::iter::repeat_n(7u8, 5000));
        big.extend((0..2000u32).map(|i| (i * 7919 % 251) as u8));
        for data in [&b""[..], b"a", b"abcabcabcabcabcabcabc", &[0u8; 100], &big] {
            let enc = encode(data);
            assert_eq!(run(&enc, data.len() as u64).unwrap(), data);
        }
    }

    #[test]
    fn the_recorded_size_is_a_limit() {
        let data = b"0123456789012345678901234567890123456789".repeat(10);
        let enc = encode(&data);
        assert_eq!(
            run(&enc, data.len() as u64 - 1),
            Err(DecodeError::Overrun {
                limit: data.len() as u64 - 1
            })
        );
    }

    #[test]
    fn hostile_streams() {
        // A distance before the start.
        assert!(matches!(
            run(&[0x10, b'x', 5, 0], 100),
            Err(DecodeError::BadReference { distance: 5, .. })
        ));
        // Distance zero.
        assert!(matches!(
            run(&[0x10, b'x', 0, 0], 100),
            Err(DecodeError::BadReference { distance: 0, .. })
        ));
        // Cut inside literals, inside a distance, inside a length run.
        assert!(matches!(
            run(&[0x30, b'x'], 100),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            run(&[0x10, b'x', 1], 100),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            run(&[0xf0, 255, 255], 100),
            Err(DecodeError::Truncated { .. })
        ));
        // A long run of matches claiming far more than the limit.
        let mut bomb = vec![0x1f, b'x', 1, 0];
        bomb.extend(std::iter::repeat_n(255, 10_000));
        bomb.push(0);
        assert!(matches!(
            run(&bomb, 1 << 20),
            Err(DecodeError::Overrun { .. })
        ));
        // Every prefix and every byte changed: an error or output, never a
        // panic, never more than the limit.
        let data = b"the quick brown fox jumps over the lazy dog; the quick brown fox".repeat(50);
        let enc = encode(&data);
        for cut in 0..enc.len() {
            let _ = run(&enc[..cut], data.len() as u64);
        }
        for i in 0..enc.len() {
            for v in [0u8, 0xff, 0x0f, 0xf0, 0x7f] {
                let mut d = enc.clone();
                d[i] = v;
                if let Ok(out) = run(&d, data.len() as u64) {
                    assert!(out.len() <= data.len());
                }
            }
        }
    }

    /// The first piece comes after a few KiB, so that a caller wanting an
    /// entry's head stops the decoding there; later pieces are larger.
    #[test]
    fn the_sink_may_stop_early() {
        // Words from a small vocabulary: short matches all along.
        let mut x = 12345u32;
        let mut data = Vec::new();
        while data.len() < 1_300_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            data.extend_from_slice(format!("w{} ", (x >> 16) % 5000).as_bytes());
        }
        let enc = encode(&data);
        let mut got = 0usize;
        let n = decode(&enc, data.len() as u64, &mut |b: &[u8]| {
            got += b.len();
            Ok(false)
        })
        .unwrap();
        assert!((FIRST_FLUSH..2 * FIRST_FLUSH).contains(&got), "{got}");
        assert!((n as usize) < 2 * FIRST_FLUSH, "{n}");
        // Taken whole, the pieces are the data.
        let mut pieces = Vec::new();
        let mut all = Vec::new();
        let n = decode(&enc, data.len() as u64, &mut |b: &[u8]| {
            pieces.push(b.len());
            all.extend_from_slice(b);
            Ok(true)
        })
        .unwrap();
        assert_eq!((n as usize, all), (data.len(), data));
        assert!(
            pieces[0] < 2 * FIRST_FLUSH && pieces[1] >= FLUSH_AT,
            "{pieces:?}"
        );
    }
}
