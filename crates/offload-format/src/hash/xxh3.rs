//! XXH3-64 (seed 0, default secret), as used by LLVM's `xxh3_64bits`, and a
//! model of LLVM's `StringMap` bucket order built on it.
//!
//! LLVM 22 hashes `StringMap` keys with the low 32 bits of XXH3-64. Anything
//! that walks such a map (the binary offload bundle reader, the unbundle work
//! list) therefore sees keys in bucket order, which [`StringMapOrder`]
//! reproduces without storing values.

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;
const PRIME_MX1: u64 = 0x1656_6791_9E37_79F9;
const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// The 192-byte default secret of XXH3.
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const STRIPE_LEN: usize = 64;
const SECRET_CONSUME_RATE: usize = 8;
const STRIPES_PER_BLOCK: usize = (SECRET.len() - STRIPE_LEN) / SECRET_CONSUME_RATE;
const BLOCK_LEN: usize = STRIPE_LEN * STRIPES_PER_BLOCK;

// All reads below are at offsets the length dispatch in `xxh3_64` already
// guarantees to be in range, so the fixed-size conversions cannot fail.
fn r64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn r32(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u64::from(u32::from_le_bytes(w))
}

fn mul128_fold64(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

fn xxh64_avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME_MX1);
    h ^ (h >> 32)
}

fn rrmxmx(mut h: u64, len: u64) -> u64 {
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ (h >> 28)
}

fn mix16(input: &[u8], at: usize, sec: usize) -> u64 {
    mul128_fold64(
        r64(input, at) ^ r64(&SECRET, sec),
        r64(input, at + 8) ^ r64(&SECRET, sec + 8),
    )
}

/// XXH3-64 of `input` with seed 0 and the default secret.
pub fn xxh3_64(input: &[u8]) -> u64 {
    let len = input.len();
    let len64 = len as u64;
    match len {
        0 => xxh64_avalanche(r64(&SECRET, 56) ^ r64(&SECRET, 64)),
        1..=3 => {
            let c1 = u64::from(input[0]);
            let c2 = u64::from(input[len >> 1]);
            let c3 = u64::from(input[len - 1]);
            let combined = (c1 << 16) | (c2 << 24) | c3 | (len64 << 8);
            let flip = r32(&SECRET, 0) ^ r32(&SECRET, 4);
            xxh64_avalanche(combined ^ flip)
        }
        4..=8 => {
            let lo = r32(input, 0);
            let hi = r32(input, len - 4);
            let flip = r64(&SECRET, 8) ^ r64(&SECRET, 16);
            rrmxmx((hi.wrapping_add(lo << 32)) ^ flip, len64)
        }
        9..=16 => {
            let lo = r64(input, 0) ^ (r64(&SECRET, 24) ^ r64(&SECRET, 32));
            let hi = r64(input, len - 8) ^ (r64(&SECRET, 40) ^ r64(&SECRET, 48));
            let acc = len64
                .wrapping_add(lo.swap_bytes())
                .wrapping_add(hi)
                .wrapping_add(mul128_fold64(lo, hi));
            avalanche(acc)
        }
        17..=128 => {
            let mut acc = len64.wrapping_mul(PRIME64_1);
            if len > 32 {
                if len > 64 {
                    if len > 96 {
                        acc = acc.wrapping_add(mix16(input, 48, 96));
                        acc = acc.wrapping_add(mix16(input, len - 64, 112));
                    }
                    acc = acc.wrapping_add(mix16(input, 32, 64));
                    acc = acc.wrapping_add(mix16(input, len - 48, 80));
                }
                acc = acc.wrapping_add(mix16(input, 16, 32));
                acc = acc.wrapping_add(mix16(input, len - 32, 48));
            }
            acc = acc.wrapping_add(mix16(input, 0, 0));
            acc = acc.wrapping_add(mix16(input, len - 16, 16));
            avalanche(acc)
        }
        129..=240 => {
            let mut acc = len64.wrapping_mul(PRIME64_1);
            for i in 0..8 {
                acc = acc.wrapping_add(mix16(input, 16 * i, 16 * i));
            }
            acc = avalanche(acc);
            for i in 8..len / 16 {
                acc = acc.wrapping_add(mix16(input, 16 * i, 16 * (i - 8) + 3));
            }
            // The last 16 bytes use the secret's tail (minimum secret size
            // 136, minus 17).
            acc = acc.wrapping_add(mix16(input, len - 16, 136 - 17));
            avalanche(acc)
        }
        _ => long(input),
    }
}

fn accumulate_512(acc: &mut [u64; 8], input: &[u8], at: usize, sec: usize) {
    for i in 0..8 {
        let data = r64(input, at + 8 * i);
        let key = data ^ r64(&SECRET, sec + 8 * i);
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(data);
        acc[i] = acc[i].wrapping_add((key & 0xFFFF_FFFF).wrapping_mul(key >> 32));
    }
}

fn scramble(acc: &mut [u64; 8]) {
    let sec = SECRET.len() - STRIPE_LEN;
    for (i, a) in acc.iter_mut().enumerate() {
        let mut v = *a;
        v ^= v >> 47;
        v ^= r64(&SECRET, sec + 8 * i);
        *a = v.wrapping_mul(PRIME32_1);
    }
}

fn long(input: &[u8]) -> u64 {
    let len = input.len();
    let mut acc = [
        PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
    ];
    let blocks = (len - 1) / BLOCK_LEN;
    for b in 0..blocks {
        for s in 0..STRIPES_PER_BLOCK {
            accumulate_512(
                &mut acc,
                input,
                b * BLOCK_LEN + s * STRIPE_LEN,
                s * SECRET_CONSUME_RATE,
            );
        }
        scramble(&mut acc);
    }
    let stripes = ((len - 1) - BLOCK_LEN * blocks) / STRIPE_LEN;
    for s in 0..stripes {
        accumulate_512(
            &mut acc,
            input,
            blocks * BLOCK_LEN + s * STRIPE_LEN,
            s * SECRET_CONSUME_RATE,
        );
    }
    // The final stripe always ends at the input's end; its secret is the
    // tail of the default secret, 7 bytes short of the end.
    accumulate_512(
        &mut acc,
        input,
        len - STRIPE_LEN,
        SECRET.len() - STRIPE_LEN - 7,
    );
    let mut result = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..4 {
        result = result.wrapping_add(mul128_fold64(
            acc[2 * i] ^ r64(&SECRET, 11 + 16 * i),
            acc[2 * i + 1] ^ r64(&SECRET, 11 + 16 * i + 8),
        ));
    }
    avalanche(result)
}

/// The hash LLVM 22's `StringMap` stores for a key: XXH3-64 truncated to
/// 32 bits.
pub fn string_map_hash(key: &[u8]) -> u32 {
    xxh3_64(key) as u32
}

/// Bucket-order model of an LLVM `StringMap` that is only inserted into and
/// erased from.
///
/// It keeps, for each bucket, the index (in insertion order of first
/// appearance) of the key stored there. Iteration yields those indices in
/// bucket order, which is the order LLVM code sees when it walks the map.
#[derive(Debug, Clone, Default)]
pub struct StringMapOrder {
    /// `None` = never used; `Some(Slot::Live(i))`; tombstones keep probes going.
    buckets: Vec<Slot>,
    hashes: Vec<u32>,
    keys: Vec<Vec<u8>>,
    live: usize,
    tombstones: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    Tombstone,
    Live(usize),
}

impl StringMapOrder {
    /// An empty map (no buckets allocated, as in LLVM).
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `key` if absent. Returns its index (the order in which distinct
    /// keys were first inserted) and whether it was new. A key that is
    /// already present keeps its bucket, as LLVM's `operator[]` does.
    pub fn insert(&mut self, key: &[u8]) -> (usize, bool) {
        if self.buckets.is_empty() {
            self.buckets = vec![Slot::Empty; 16];
        }
        let hash = string_map_hash(key);
        let (bucket, found) = self.lookup(key, hash);
        if let Some(i) = found {
            return (i, false);
        }
        if self.buckets[bucket] == Slot::Tombstone {
            self.tombstones -= 1;
        }
        let index = self.keys.len();
        self.keys.push(key.to_vec());
        self.hashes.push(hash);
        self.buckets[bucket] = Slot::Live(index);
        self.live += 1;
        self.grow_if_needed();
        (index, true)
    }

    /// Finds `key`'s index, if present.
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        if self.buckets.is_empty() {
            return None;
        }
        self.lookup(key, string_map_hash(key)).1
    }

    /// Removes `key` (leaving a tombstone, so the order of the remaining keys
    /// is unchanged). Returns whether it was present.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        let hash = string_map_hash(key);
        let (bucket, found) = self.lookup(key, hash);
        if found.is_none() {
            return false;
        }
        self.buckets[bucket] = Slot::Tombstone;
        self.live -= 1;
        self.tombstones += 1;
        true
    }

    /// Number of keys present.
    pub fn len(&self) -> usize {
        self.live
    }

    /// True when no key is present.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Indices of the present keys, in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.buckets.iter().filter_map(|s| match s {
            Slot::Live(i) => Some(*i),
            _ => None,
        })
    }

    /// The key with index `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        &self.keys[i]
    }

    /// Probe for `key`: the bucket where it is, or where it would go (first
    /// tombstone seen, else the empty bucket that ended the probe).
    fn lookup(&self, key: &[u8], hash: u32) -> (usize, Option<usize>) {
        let mask = self.buckets.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut step = 1;
        let mut first_tombstone = None;
        loop {
            match self.buckets[bucket] {
                Slot::Empty => return (first_tombstone.unwrap_or(bucket), None),
                Slot::Tombstone => {
                    first_tombstone.get_or_insert(bucket);
                }
                Slot::Live(i) => {
                    if self.hashes[i] == hash && self.keys[i] == key {
                        return (bucket, Some(i));
                    }
                }
            }
            bucket = (bucket + step) & mask;
            step += 1;
        }
    }

    fn grow_if_needed(&mut self) {
        let n = self.buckets.len();
        let new_size = if self.live * 4 > n * 3 {
            n * 2
        } else if n - (self.live + self.tombstones) <= n / 8 {
            n
        } else {
            return;
        };
        let mut table = vec![Slot::Empty; new_size];
        let mask = new_size - 1;
        for slot in &self.buckets {
            if let Slot::Live(i) = *slot {
                let mut b = self.hashes[i] as usize & mask;
                let mut step = 1;
                while table[b] != Slot::Empty {
                    b = (b + step) & mask;
                    step += 1;
                }
                table[b] = Slot::Live(i);
            }
        }
        self.buckets = table;
        self.tombstones = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors from libxxhash 0.8.1 (`XXH3_64bits`), input byte i = 7i+3.
    const VECTORS: &[(usize, u64)] = &[
        (0, 0x2d06800538d394c2),
        (1, 0x13e608bc156defed),
        (2, 0x1c9074b93943b86c),
        (3, 0xa9088dda485b481c),
        (4, 0x6d9253b16c8b1ed3),
        (5, 0x998620e10e3a4b37),
        (7, 0x8e8291ad89127e2e),
        (8, 0x60539db630471163),
        (9, 0xfeff668361d723a8),
        (15, 0x9ec169f4a98231c1),
        (16, 0xb8c859b0f030b585),
        (17, 0x714a04408e79b80f),
        (31, 0xed41ac283d0674b3),
        (32, 0x19ff4ee1d6ba1a55),
        (33, 0x3e44983ad21679c8),
        (63, 0x1353bea3d0ebf7e1),
        (64, 0x287eb1fa9e4be2c1),
        (65, 0x829218de4d798646),
        (95, 0xce51f0954dfbdb63),
        (96, 0xf084e7cfbc624743),
        (97, 0x1daa83271a8e7b7c),
        (127, 0x998fa0631fd78d0b),
        (128, 0x67425a03650261bf),
        (129, 0xc664bf3311c6abc4),
        (150, 0xe2dc8795fca7eee2),
        (239, 0x1d861931c1f3cafa),
        (240, 0x64556dc6b462a6cf),
        (241, 0x8beadd3a8874fe17),
        (255, 0xb67b6637a76e6c39),
        (256, 0x3c38817f6d79c0da),
        (500, 0xb8bc3e5683ce226a),
        (1023, 0xd26986a0b85dcc44),
        (1024, 0x9b81661c641c72b1),
        (1025, 0x806c2072ed713576),
        (1500, 0x636eb3103aa644e2),
        (2047, 0xe36fcecaa2c0ecba),
        (2048, 0xabe604813ba62ed1),
        (2049, 0x55aed42c9f1554b6),
        (4096, 0xd7428746842be37e),
        (5000, 0x799aaddd7339581d),
    ];

    #[test]
    fn matches_libxxhash() {
        for &(n, want) in VECTORS {
            let input: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(xxh3_64(&input), want, "length {n}");
        }
        assert_eq!(
            xxh3_64(b"host-x86_64-unknown-linux-gnu-"),
            0x9545cb069ec060ac
        );
        assert_eq!(
            xxh3_64(b"hip-amdgcn-amd-amdhsa--gfx906"),
            0x50546ca7d375ad52
        );
    }

    fn order(keys: &[&str]) -> Vec<String> {
        let mut m = StringMapOrder::new();
        for k in keys {
            m.insert(k.as_bytes());
        }
        m.iter()
            .map(|i| String::from_utf8(m.key(i).to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn three_entry_order_matches_llvm22_list() {
        // Listed by clang-offload-bundler-22 for a bundle written host, hip, openmp.
        assert_eq!(
            order(&[
                "host-x86_64-unknown-linux-gnu-",
                "hip-amdgcn-amd-amdhsa--gfx906",
                "openmp-nvptx64-nvidia-cuda-unknown-",
            ]),
            [
                "hip-amdgcn-amd-amdhsa--gfx906",
                "openmp-nvptx64-nvidia-cuda-unknown-",
                "host-x86_64-unknown-linux-gnu-",
            ]
        );
    }

    #[test]
    fn reinsert_keeps_position_and_remove_keeps_order() {
        let mut m = StringMapOrder::new();
        let keys: Vec<String> = (0..40).map(|i| format!("key-{i}")).collect();
        for k in &keys {
            assert!(m.insert(k.as_bytes()).1);
        }
        let before: Vec<usize> = m.iter().collect();
        assert_eq!(m.insert(b"key-3"), (3, false));
        assert_eq!(m.iter().collect::<Vec<_>>(), before);
        assert!(m.remove(b"key-7"));
        assert!(!m.remove(b"key-7"));
        let after: Vec<usize> = m.iter().collect();
        let expect: Vec<usize> = before.into_iter().filter(|&i| i != 7).collect();
        assert_eq!(after, expect);
        assert_eq!(m.len(), 39);
        assert_eq!(m.find(b"key-8"), Some(8));
        assert_eq!(m.find(b"key-7"), None);
    }
}
