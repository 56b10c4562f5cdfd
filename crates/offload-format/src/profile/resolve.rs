//! Claims on byte ranges, resolved so that each byte has one owner.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A claim of `owner` on the bytes `start..end`; where claims overlap, the
/// highest `rank` wins, then the claim made first.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// First byte.
    pub start: u64,
    /// Past the last byte.
    pub end: u64,
    /// Precedence over overlapping claims.
    pub rank: u8,
    /// Who claims: a number below the `owners` given to [`resolve`].
    pub owner: usize,
}

/// Resolves `claims` over `0..len` (each clipped to it): returns, for each
/// owner below `owners`, the bytes it won, and the bytes no claim covers.
/// The results add up to `len`.
pub fn resolve(len: u64, claims: &[Claim], owners: usize) -> (Vec<u64>, u64) {
    // One number per event, so that sorting compares integers: the
    // position, then ends before starts at the same position, then the
    // claim's index. An image's claims (thousands per cubin, the most
    // frequent call) fit in 64 bits, which sort in about half the time
    // of 128.
    let kept = || {
        claims
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.start < c.end.min(len) && c.owner < owners)
    };
    if len <= u64::from(u32::MAX) && claims.len() < 1 << 31 {
        const START: u64 = 1 << 31;
        let mut events: Vec<u64> = Vec::with_capacity(claims.len() * 2);
        for (i, c) in kept() {
            events.push(c.start << 32 | START | i as u64);
            events.push(c.end.min(len) << 32 | i as u64);
        }
        events.sort_unstable();
        sweep(
            len,
            claims,
            owners,
            events
                .into_iter()
                .map(|e| (e >> 32, e & START != 0, (e & (START - 1)) as usize)),
        )
    } else {
        const START: u128 = 1 << 63;
        let mut events: Vec<u128> = Vec::with_capacity(claims.len() * 2);
        for (i, c) in kept() {
            events.push(u128::from(c.start) << 64 | START | i as u128);
            events.push(u128::from(c.end.min(len)) << 64 | i as u128);
        }
        events.sort_unstable();
        sweep(
            len,
            claims,
            owners,
            events.into_iter().map(|e| {
                (
                    (e >> 64) as u64,
                    e & START != 0,
                    (e as u64 & !(1 << 63)) as usize,
                )
            }),
        )
    }
}

/// [`resolve`]'s walk over the sorted events (position, is a start,
/// claim): the bytes up to each event go to the best claim open there.
fn sweep(
    len: u64,
    claims: &[Claim],
    owners: usize,
    events: impl Iterator<Item = (u64, bool, usize)>,
) -> (Vec<u64>, u64) {
    let mut won = vec![0u64; owners];
    // The open claims, best on top: highest rank, then the claim made
    // first. A claim that ends is only marked; it leaves the heap when
    // it comes to the top.
    let mut open: BinaryHeap<(u8, Reverse<usize>)> = BinaryHeap::new();
    let mut ended = vec![false; claims.len()];
    let mut at = 0u64;
    let mut uncovered = 0u64;
    for (pos, start, i) in events {
        if pos > at {
            while open.peek().is_some_and(|&(_, Reverse(j))| ended[j]) {
                open.pop();
            }
            match open.peek() {
                Some(&(_, Reverse(best))) => won[claims[best].owner] += pos - at,
                None => uncovered += pos - at,
            }
            at = pos;
        }
        if start {
            open.push((claims[i].rank, Reverse(i)));
        } else {
            ended[i] = true;
        }
    }
    uncovered += len - at.min(len);
    (won, uncovered)
}

/// Splits `total` in proportion to `weights`, in whole bytes that add up
/// to `total` exactly (largest remainders first, then the earlier part).
/// All weights zero: in equal parts.
pub fn split_proportional(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let (weights, sum): (Vec<u128>, u128) = if sum == 0 {
        (vec![1; weights.len()], weights.len() as u128)
    } else {
        (weights.iter().map(|&w| u128::from(w)).collect(), sum)
    };
    let total128 = u128::from(total);
    let mut out: Vec<u64> = Vec::with_capacity(weights.len());
    let mut rems: Vec<(u128, usize)> = Vec::with_capacity(weights.len());
    let mut given: u128 = 0;
    for (i, &w) in weights.iter().enumerate() {
        let p = total128 * w;
        let q = p / sum;
        out.push(q as u64);
        given += q;
        rems.push((p % sum, i));
    }
    // Largest remainder first; ties to the earlier part.
    rems.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let left = (total128 - given) as usize;
    for &(_, i) in rems.iter().take(left) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_claims_give_each_byte_once() {
        let claims = [
            Claim {
                start: 0,
                end: 100,
                rank: 1,
                owner: 0,
            },
            Claim {
                start: 10,
                end: 20,
                rank: 2,
                owner: 1,
            },
            Claim {
                start: 15,
                end: 30,
                rank: 2,
                owner: 2,
            },
            Claim {
                start: 90,
                end: 500,
                rank: 3,
                owner: 1,
            },
        ];
        let (won, uncovered) = resolve(120, &claims, 3);
        // 0..10, 30..90 to 0; 10..20 to 1 (made first), 20..30 to 2;
        // 90..120 to 1 (clipped).
        assert_eq!(won, vec![70, 40, 10]);
        assert_eq!(uncovered, 0);
        let (won, uncovered) = resolve(
            10,
            &[Claim {
                start: 4,
                end: 6,
                rank: 0,
                owner: 0,
            }],
            1,
        );
        assert_eq!((won, uncovered), (vec![2], 8));
    }

    /// The rule as first written: the open claims in an ordered set,
    /// each byte to the best of them.
    fn resolve_by_set(len: u64, claims: &[Claim], owners: usize) -> (Vec<u64>, u64) {
        let mut won = vec![0u64; owners];
        let mut events: Vec<(u64, bool, usize)> = Vec::new();
        for (i, c) in claims.iter().enumerate() {
            let end = c.end.min(len);
            if c.start < end && c.owner < owners {
                events.push((c.start, true, i));
                events.push((end, false, i));
            }
        }
        events.sort_unstable();
        let mut open: std::collections::BTreeSet<(u8, Reverse<usize>)> = Default::default();
        let (mut at, mut uncovered) = (0u64, 0u64);
        for (pos, start, i) in events {
            if pos > at {
                match open.last() {
                    Some(&(_, Reverse(best))) => won[claims[best].owner] += pos - at,
                    None => uncovered += pos - at,
                }
                at = pos;
            }
            if start {
                open.insert((claims[i].rank, Reverse(i)));
            } else {
                open.remove(&(claims[i].rank, Reverse(i)));
            }
        }
        uncovered += len - at.min(len);
        (won, uncovered)
    }

    #[test]
    fn resolve_agrees_with_the_ordered_set_rule() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..400 {
            // Small spaces (many ties and nested claims) and spaces past
            // 4 GiB (the wide event path).
            let (len, scale) = if round % 4 == 3 {
                (1u64 << 40, 1u64 << 34)
            } else {
                (200 + next(200), 1)
            };
            let owners = 1 + next(6) as usize;
            let claims: Vec<Claim> = (0..next(40))
                .map(|_| {
                    let start = next(len / scale + 20) * scale;
                    Claim {
                        start,
                        end: start + next(120) * scale,
                        rank: next(4) as u8,
                        owner: next(owners as u64 + 1) as usize,
                    }
                })
                .collect();
            let got = resolve(len, &claims, owners);
            assert_eq!(got, resolve_by_set(len, &claims, owners), "{claims:?}");
            assert_eq!(got.0.iter().sum::<u64>() + got.1, len);
        }
    }

    #[test]
    fn proportional_split_adds_up() {
        assert_eq!(split_proportional(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split_proportional(0, &[5, 7]), vec![0, 0]);
        assert_eq!(split_proportional(7, &[0, 0]), vec![4, 3]);
        assert_eq!(split_proportional(1000, &[300, 700]), vec![300, 700]);
        let s = split_proportional(u64::MAX, &[u64::MAX, 3, u64::MAX]);
        assert_eq!(
            s.iter().map(|&x| u128::from(x)).sum::<u128>(),
            u128::from(u64::MAX)
        );
    }
}
