//! How a range of rows or examples is dealt to ranks.

use std::ops::Range;

/// Rank `rank`'s contiguous share of `range` when it is dealt to `size` ranks: the shares are
/// as equal as can be (they differ by at most one), cover `range` in rank order and do not
/// overlap. Rank 0 of 1 gets the whole range.
///
/// # Panics
/// When `rank >= size` (a caller bug).
pub fn share_of(range: &Range<usize>, rank: usize, size: usize) -> Range<usize> {
    assert!(rank < size, "rank {rank} of {size}");
    let len = range.len();
    range.start + len * rank / size..range.start + len * (rank + 1) / size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_range_in_order_and_differ_by_at_most_one() {
        for len in 0..20 {
            for size in 1..6 {
                let range = 3..3 + len;
                let shares: Vec<_> = (0..size).map(|r| share_of(&range, r, size)).collect();
                assert_eq!(shares[0].start, range.start);
                assert_eq!(shares[size - 1].end, range.end);
                for pair in shares.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
                let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
                let (min, max) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
                assert!(max - min <= 1, "{lens:?}");
            }
        }
        assert_eq!(share_of(&(2..9), 0, 1), 2..9);
    }
}
