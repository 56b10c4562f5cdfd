//! Claims on byte ranges, resolved so that each byte has one owner.

use std::collections::BTreeSet;

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
    let mut won = vec![0u64; owners];
    // One number per event, so that sorting compares integers: the
    // position, then ends before starts at the same position, then the
    // claim's index (bit 63 marks a start; indices stay below it).
    const START: u128 = 1 << 63;
    let mut events: Vec<u128> = Vec::with_capacity(claims.len() * 2);
    for (i, c) in claims.iter().enumerate() {
        let end = c.end.min(len);
        if c.start >= end || c.owner >= owners {
            continue;
        }
        events.push(u128::from(c.start) << 64 | START | i as u128);
        events.push(u128::from(end) << 64 | i as u128);
    }
    events.sort_unstable();
    // The active claims, best last: (rank, earlier first).
    let mut active: BTreeSet<(u8, std::cmp::Reverse<usize>)> = BTreeSet::new();
    let mut at = 0u64;
    let mut uncovered = 0u64;
    for e in events {
        let pos = (e >> 64) as u64;
        let start = e & START != 0;
        let i = (e as u64 & !(1 << 63)) as usize;
        if pos > at {
            match active.last() {
                Some(&(_, std::cmp::Reverse(best))) => won[claims[best].owner] += pos - at,
                None => uncovered += pos - at,
            }
            at = pos;
        }
        let key = (claims[i].rank, std::cmp::Reverse(i));
        if start {
            active.insert(key);
        } else {
            active.remove(&key);
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
