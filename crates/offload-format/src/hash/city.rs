//! LLVM's `hash_value` for a byte string, as computed by release builds of
//! LLVM 22 (`LLVM_ENABLE_ABI_BREAKING_CHECKS` off, hence a fixed seed).
//!
//! The function derives from CityHash64 but differs from it in the seed and
//! in the long-input loop, so no published CityHash crate gives the same
//! values. Builds with ABI-breaking checks seed the hash with a code address
//! instead; their hash-ordered outputs are not reproducible and not modelled.

/// The seed used by release builds.
pub(crate) const SEED: u64 = 0xff51_afd7_ed55_8ccd;

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;
const K3: u64 = 0xc949_d7c7_509e_6557;
const MUL: u64 = 0x9ddf_ea08_eb38_2d69;

/// Hash of `bytes` (the 64-bit `hash_code`). Hash tables keyed by strings use
/// its low 32 bits; see [`hash32`].
pub fn hash_value(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    if n <= 64 {
        return hash_short(bytes, SEED);
    }
    let mut state = State::new(bytes, SEED);
    // Whole 64-byte blocks after the first, then the last 64 bytes again
    // (overlapping) when the length is not a multiple of 64.
    let whole = n & !63;
    let mut at = 64;
    while at < whole {
        state.mix(&bytes[at..at + 64]);
        at += 64;
    }
    if n & 63 != 0 {
        state.mix(&bytes[n - 64..]);
    }
    state.finish(n as u64)
}

/// The low 32 bits of [`hash_value`]: what `DenseMapInfo<StringRef>` returns.
pub fn hash32(bytes: &[u8]) -> u32 {
    hash_value(bytes) as u32
}

fn load64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn load32(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u64::from(u32::from_le_bytes(w))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash16(low: u64, high: u64) -> u64 {
    let a = shift_mix((low ^ high).wrapping_mul(MUL));
    let b = shift_mix((high ^ a).wrapping_mul(MUL));
    b.wrapping_mul(MUL)
}

fn hash_short(s: &[u8], seed: u64) -> u64 {
    let n = s.len();
    let len = n as u64;
    match n {
        0 => K2 ^ seed,
        1..=3 => {
            let a = u64::from(s[0]);
            let b = u64::from(s[n / 2]);
            let c = u64::from(s[n - 1]);
            let y = a + (b << 8);
            let z = len + (c << 2);
            shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K3) ^ seed).wrapping_mul(K2)
        }
        4..=8 => hash16(len.wrapping_add(load32(s, 0) << 3), seed ^ load32(s, n - 4)),
        9..=16 => {
            let a = load64(s, 0);
            let b = load64(s, n - 8);
            hash16(seed ^ a, b.wrapping_add(len).rotate_right(n as u32)) ^ b
        }
        17..=32 => {
            let a = load64(s, 0).wrapping_mul(K1);
            let b = load64(s, 8);
            let c = load64(s, n - 8).wrapping_mul(K2);
            let d = load64(s, n - 16).wrapping_mul(K0);
            hash16(
                a.wrapping_sub(b)
                    .rotate_right(43)
                    .wrapping_add((c ^ seed).rotate_right(30))
                    .wrapping_add(d),
                a.wrapping_add((b ^ K3).rotate_right(20))
                    .wrapping_sub(c)
                    .wrapping_add(len)
                    .wrapping_add(seed),
            )
        }
        _ => hash_33_to_64(s, seed),
    }
}

fn hash_33_to_64(s: &[u8], seed: u64) -> u64 {
    let n = s.len();
    let len = n as u64;
    let mut z = load64(s, 24);
    let mut a = load64(s, 0).wrapping_add(len.wrapping_add(load64(s, n - 16)).wrapping_mul(K0));
    let mut b = a.wrapping_add(z).rotate_right(52);
    let mut c = a.rotate_right(37);
    a = a.wrapping_add(load64(s, 8));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(load64(s, 16));
    let vf = a.wrapping_add(z);
    let vs = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    a = load64(s, 16).wrapping_add(load64(s, n - 32));
    z = load64(s, n - 8);
    b = a.wrapping_add(z).rotate_right(52);
    c = a.rotate_right(37);
    a = a.wrapping_add(load64(s, n - 24));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(load64(s, n - 16));
    let wf = a.wrapping_add(z);
    let ws = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    let r = shift_mix(
        vf.wrapping_add(ws)
            .wrapping_mul(K2)
            .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
    );
    shift_mix((seed ^ r.wrapping_mul(K0)).wrapping_add(vs)).wrapping_mul(K2)
}

/// The 56-byte running state for inputs longer than 64 bytes.
struct State {
    h: [u64; 7],
}

impl State {
    fn new(first: &[u8], seed: u64) -> State {
        let h4 = seed.wrapping_mul(K1);
        let h5 = shift_mix(seed);
        let mut st = State {
            h: [
                0,
                seed,
                hash16(seed, K1),
                (seed ^ K1).rotate_right(49),
                h4,
                h5,
                hash16(h4, h5),
            ],
        };
        st.mix(&first[..64]);
        st
    }

    fn mix32(s: &[u8], a: &mut u64, b: &mut u64) {
        *a = a.wrapping_add(load64(s, 0));
        let c = load64(s, 24);
        *b = b.wrapping_add(*a).wrapping_add(c).rotate_right(21);
        let d = *a;
        *a = a.wrapping_add(load64(s, 8)).wrapping_add(load64(s, 16));
        *b = b.wrapping_add(a.rotate_right(44)).wrapping_add(d);
        *a = a.wrapping_add(c);
    }

    fn mix(&mut self, s: &[u8]) {
        let [mut h0, mut h1, mut h2, mut h3, mut h4, mut h5, mut h6] = self.h;
        h0 = h0
            .wrapping_add(h1)
            .wrapping_add(h3)
            .wrapping_add(load64(s, 8))
            .rotate_right(37)
            .wrapping_mul(K1);
        h1 = h1
            .wrapping_add(h4)
            .wrapping_add(load64(s, 48))
            .rotate_right(42)
            .wrapping_mul(K1);
        h0 ^= h6;
        h1 = h1.wrapping_add(h3).wrapping_add(load64(s, 40));
        h2 = h2.wrapping_add(h5).rotate_right(33).wrapping_mul(K1);
        h3 = h4.wrapping_mul(K1);
        h4 = h0.wrapping_add(h5);
        Self::mix32(s, &mut h3, &mut h4);
        h5 = h2.wrapping_add(h6);
        h6 = h1.wrapping_add(load64(s, 16));
        Self::mix32(&s[32..], &mut h5, &mut h6);
        self.h = [h2, h1, h0, h3, h4, h5, h6];
    }

    fn finish(&self, len: u64) -> u64 {
        let [h0, h1, h2, h3, h4, h5, h6] = self.h;
        hash16(
            hash16(h3, h5)
                .wrapping_add(shift_mix(h1).wrapping_mul(K1))
                .wrapping_add(h2),
            hash16(h4, h6)
                .wrapping_add(shift_mix(len).wrapping_mul(K1))
                .wrapping_add(h0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(times: usize, extra: &str) -> Vec<u8> {
        let mut v = b"0123456789abcdef".repeat(times);
        v.extend_from_slice(extra.as_bytes());
        v
    }

    #[test]
    fn published_vectors() {
        // Values observed from LLVM 22's own hash_value (see the spec).
        assert_eq!(hash_value(b""), 0x65b0_c5ec_c2c5_cc82);
        assert_eq!(hash_value(b"file"), 0x7d2d_536e_d4e6_b353);
        assert_eq!(hash_value(b"triple"), 0x45f9_d327_0819_b0d8);
        assert_eq!(hash_value(b"arch"), 0x1499_ea7c_f386_c709);
        assert_eq!(hash_value(b"kind"), 0xe421_e5cb_c820_7aa5);
        assert_eq!(hash_value(b"x86_64-pc-linux-gnu"), 0x7af8_1680_dbac_46b2);
        let low: &[(&[u8], u32)] = &[
            (b"a", 0x517c_61f8),
            (b"ab", 0x6be4_96b4),
            (b"abc", 0x19c7_1a3f),
            (b"abcd", 0x34c9_023c),
            (b"feature", 0x907b_e7c2),
            (b"amdgcn-amd-amdhsa", 0x37d4_b48f),
            (b"nvptx64-nvidia-cuda", 0xb84f_b123),
        ];
        for (s, h) in low {
            assert_eq!(hash32(s), *h, "{}", String::from_utf8_lossy(s));
        }
        assert_eq!(hash32(&p(2, "0")), 0xd34b_c361);
        assert_eq!(hash32(&p(4, "")), 0x6357_d15f);
        assert_eq!(hash32(&p(4, "X")), 0x0db5_a2da);
        assert_eq!(hash32(&p(8, "0")), 0x1d4f_6c3a);
    }
}
