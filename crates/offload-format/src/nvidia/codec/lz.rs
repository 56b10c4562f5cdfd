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

/// Decodes `src`, handing the output to `sink` in pieces; fails as soon as
/// the output would exceed `limit` bytes. Returns the output length, or
/// stops early (returning what was produced) when the sink says so.
pub(crate) fn decode(src: &[u8], limit: u64, sink: &mut Sink<'_>) -> Result<u64, DecodeError> {
    let mut buf: Vec<u8> = Vec::new();
    // Absolute output offset of buf[0].
    let mut base: u64 = 0;
    // Offset in buf of the first byte not yet handed to the sink.
    let mut pending = 0usize;
    let mut flush_at = FIRST_FLUSH;
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
        let produced = base + buf.len() as u64;
        if produced + literals > limit {
            return Err(DecodeError::Overrun { limit });
        }
        buf.extend_from_slice(&src[at..end]);
        at = end;
        if at == src.len() {
            break;
        }
        let lo = byte(at)?;
        let hi = byte(at + 1)?;
        at += 2;
        let distance = u16::from_le_bytes([lo, hi]);
        let length = read_length(&mut at, u64::from(token & 0xf))? + 4;
        let produced = base + buf.len() as u64;
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
        // `distance` is at most 65535 and the window keeps 65536 bytes; the
        // length is below the limit, checked above.
        let start = buf.len() - usize::from(distance);
        let length = length as usize;
        if usize::from(distance) >= length {
            buf.extend_from_within(start..start + length);
        } else {
            // The match overlaps what it produces: byte by byte.
            for i in start..start + length {
                let b = buf[i];
                buf.push(b);
            }
        }
        if buf.len() - pending >= flush_at {
            if !sink(&buf[pending..])? {
                return Ok(base + buf.len() as u64);
            }
            pending = buf.len();
            flush_at = FLUSH_AT;
            // Only the window is needed for what follows.
            if buf.len() >= FLUSH_AT + WINDOW {
                let drop = buf.len() - WINDOW;
                buf.drain(..drop);
                base += drop as u64;
                pending = buf.len();
            }
        }
    }
    if pending < buf.len() {
        sink(&buf[pending..])?;
    }
    Ok(base + buf.len() as u64)
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

    fn run(src: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        let n = decode(src, limit, &mut |b: &[u8]| {
            out.extend_from_slice(b);
            Ok(true)
        })?;
        assert_eq!(n, out.len() as u64);
        Ok(out)
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
