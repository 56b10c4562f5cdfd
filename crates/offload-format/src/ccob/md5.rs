//! MD5 (RFC 1321), the digest CCOB headers keep 8 bytes of.
//!
//! Our own because the hash is on the critical path of every decompression
//! (it must be checked) and MD5 is strictly sequential: each of the 64 steps
//! of a block waits for the previous one, so speed is the length of that
//! chain. The steps here keep everything that does not depend on the
//! newest state word (message word, constant, and in rounds 2 and 4 the
//! terms of the older words) off the chain; on x86-64 without BMI this is
//! about 10% faster than a direct transcription.

/// Per-step additive constants: the integer part of 2^32 * |sin(i + 1)|.
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The state before any input.
const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

// One step each of the four rounds: `b` is the newest state word. `m_k` is
// the message word plus the step constant.

#[inline(always)]
fn round1(a: u32, b: u32, c: u32, d: u32, m_k: u32, s: u32) -> u32 {
    // (b & c) | (!b & d), with c ^ d ready before b is.
    let early = a.wrapping_add(m_k);
    early
        .wrapping_add(d ^ (b & (c ^ d)))
        .rotate_left(s)
        .wrapping_add(b)
}

#[inline(always)]
fn round2(a: u32, b: u32, c: u32, d: u32, m_k: u32, s: u32) -> u32 {
    // (b & d) | (c & !d): the two terms share no bit, so the one without b
    // can be added first.
    let early = a.wrapping_add(m_k).wrapping_add(c & !d);
    early.wrapping_add(b & d).rotate_left(s).wrapping_add(b)
}

#[inline(always)]
fn round3(a: u32, b: u32, c: u32, d: u32, m_k: u32, s: u32) -> u32 {
    let early = a.wrapping_add(m_k);
    early
        .wrapping_add(b ^ (c ^ d))
        .rotate_left(s)
        .wrapping_add(b)
}

#[inline(always)]
fn round4(a: u32, b: u32, c: u32, d: u32, m_k: u32, s: u32) -> u32 {
    let early = a.wrapping_add(m_k);
    early
        .wrapping_add(c ^ (b | !d))
        .rotate_left(s)
        .wrapping_add(b)
}

/// Runs the 64 steps over each 64-byte block of `blocks`.
fn compress(state: &mut [u32; 4], blocks: &[u8]) {
    let [mut a, mut b, mut c, mut d] = *state;
    for block in blocks.chunks_exact(64) {
        let mut m = [0u32; 16];
        for (word, bytes) in m.iter_mut().zip(block.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let saved = [a, b, c, d];
        // Sixteen steps of one round: the message word of step i is
        // m[(start + stride * i) % 16], the shifts repeat every four steps.
        macro_rules! sixteen {
            ($step:ident, $round:expr, $start:expr, $stride:expr, $s:expr) => {
                let mut i = 0;
                while i < 16 {
                    let w = |j: usize| {
                        m[($start + $stride * (i + j)) % 16].wrapping_add(K[16 * $round + i + j])
                    };
                    a = $step(a, b, c, d, w(0), $s[0]);
                    d = $step(d, a, b, c, w(1), $s[1]);
                    c = $step(c, d, a, b, w(2), $s[2]);
                    b = $step(b, c, d, a, w(3), $s[3]);
                    i += 4;
                }
            };
        }
        sixteen!(round1, 0, 0, 1, [7, 12, 17, 22]);
        sixteen!(round2, 1, 1, 5, [5, 9, 14, 20]);
        sixteen!(round3, 2, 5, 3, [4, 11, 16, 23]);
        sixteen!(round4, 3, 0, 7, [6, 10, 15, 21]);
        a = a.wrapping_add(saved[0]);
        b = b.wrapping_add(saved[1]);
        c = c.wrapping_add(saved[2]);
        d = d.wrapping_add(saved[3]);
    }
    *state = [a, b, c, d];
}

/// An MD5 computation fed piece by piece.
#[derive(Clone)]
pub(crate) struct Md5 {
    state: [u32; 4],
    /// Bytes hashed so far.
    len: u64,
    /// The start of a block not yet complete.
    pending: [u8; 64],
    pending_len: usize,
}

impl Default for Md5 {
    fn default() -> Self {
        Md5::new()
    }
}

impl Md5 {
    pub(crate) fn new() -> Md5 {
        Md5 {
            state: INIT,
            len: 0,
            pending: [0; 64],
            pending_len: 0,
        }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.pending_len > 0 {
            let take = (64 - self.pending_len).min(data.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&data[..take]);
            self.pending_len += take;
            data = &data[take..];
            if self.pending_len < 64 {
                return;
            }
            compress(&mut self.state, &self.pending);
            self.pending_len = 0;
        }
        let whole = data.len() - data.len() % 64;
        compress(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    /// The 16-byte digest.
    pub(crate) fn finish(mut self) -> [u8; 16] {
        // Padding: a one bit, zeros up to 8 bytes short of a block, then the
        // length in bits, little-endian.
        let bits = self.len.wrapping_mul(8);
        let mut tail = [0u8; 128];
        let n = self.pending_len;
        tail[..n].copy_from_slice(&self.pending[..n]);
        tail[n] = 0x80;
        let end = if n < 56 { 64 } else { 128 };
        tail[end - 8..end].copy_from_slice(&bits.to_le_bytes());
        compress(&mut self.state, &tail[..end]);
        let mut out = [0u8; 16];
        for (bytes, word) in out.chunks_exact_mut(4).zip(self.state) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn digest(data: &[u8]) -> [u8; 16] {
        let mut h = Md5::new();
        h.update(data);
        h.finish()
    }

    /// The test suite of RFC 1321, appendix A.5.
    #[test]
    fn rfc_1321_suite() {
        let cases = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(hex(digest(input.as_bytes())), expected, "{input:?}");
        }
    }

    /// Against the md-5 crate: every length around the block and padding
    /// boundaries, and any split into pieces.
    #[test]
    fn same_as_the_md5_crate() {
        use ::md5::Digest;
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for len in (0..200).chain([1000, 4095, 4096, 4097, 5000]) {
            let expected: [u8; 16] = ::md5::Md5::digest(&data[..len]).into();
            assert_eq!(digest(&data[..len]), expected, "len {len}");
            for piece in [1usize, 3, 63, 64, 65, 1000] {
                let mut h = Md5::new();
                for p in data[..len].chunks(piece) {
                    h.update(p);
                }
                assert_eq!(h.finish(), expected, "len {len} pieces {piece}");
            }
        }
    }
}
