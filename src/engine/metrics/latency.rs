//! Latency distributions for the report, as vLLM's benchmark client (`vllm bench serve`) names
//! them: a per-request list (TTFT, TPOT, end-to-end) summed up as a mean and nearest-rank
//! percentiles, and [`GapHistogram`], every gap between two consecutive output tokens (ITL) in
//! memory bounded by the range of the gaps, not by the number of tokens; and the nearest-rank
//! percentile and the rounding every figure of the report goes through.

use std::collections::BTreeMap;

/// Mean and nearest-rank percentiles of one latency, ms (0 each when nothing was measured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Summary {
    /// The summary of values in µs, sorted by `f64::total_cmp`, rounded to 0.01 ms.
    pub fn of_sorted_us(sorted: &[f64]) -> Summary {
        let ms = |us: f64| round_to(us / 1000.0, 2);
        let mean = if sorted.is_empty() { 0.0 } else { sorted.iter().sum::<f64>() / sorted.len() as f64 };
        Summary {
            mean: ms(mean),
            p50: ms(percentile_of_sorted(sorted, 50.0)),
            p90: ms(percentile_of_sorted(sorted, 90.0)),
            p95: ms(percentile_of_sorted(sorted, 95.0)),
            p99: ms(percentile_of_sorted(sorted, 99.0)),
        }
    }
}

/// Significant bits a gap keeps: gaps below 2^14 µs (16.384 ms) are kept to the microsecond,
/// longer ones rounded down to their 14 leading bits (a relative error below 2^-13, 0.013%).
pub const GAP_EXACT_BITS: u32 = 14;

/// Gaps per chunk of the exact range's counts (8 KiB of counters).
const EXACT_CHUNK: usize = 1024;

/// Every inter-token gap of a run, counted by value: exact below 16.384 ms, 14 significant bits
/// above, so a day of traffic keeps at most a few thousand buckets per power of two of the gaps'
/// range. The count, the sum (so the mean), the minimum and the maximum are exact.
///
/// A count is added for every token, so the exact range is an array indexed by the gap, in
/// chunks of 1,024 µs allocated when a gap first lands in one (the gaps of a run cluster around
/// its step times, so a few chunks hold them); the rounded buckets above stay in a map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GapHistogram {
    /// Gaps below 2^14 µs: chunk `c`, slot `i` counts gaps of `c × 1,024 + i` µs.
    exact: Vec<Option<Box<[u64; EXACT_CHUNK]>>>,
    /// Exact gaps counted at least once (buckets in use below 2^14 µs).
    exact_buckets: usize,
    /// Bucket (the gap's value with its low bits cleared, µs) → gaps in it, from 2^14 µs up.
    rounded: BTreeMap<u64, u64>,
    count: u64,
    sum_us: u128,
    min_us: u64,
    max_us: u64,
}

/// The bucket a gap of `us` microseconds falls in: its lower bound.
pub fn gap_bucket(us: u64) -> u64 {
    let len = 64 - us.leading_zeros();
    if len <= GAP_EXACT_BITS {
        return us;
    }
    let shift = len - GAP_EXACT_BITS;
    (us >> shift) << shift
}

impl GapHistogram {
    /// Counts `times` gaps of `us` microseconds each.
    pub fn add(&mut self, us: u64, times: u64) {
        if times == 0 {
            return;
        }
        if us < 1 << GAP_EXACT_BITS {
            let (c, i) = (us as usize / EXACT_CHUNK, us as usize % EXACT_CHUNK);
            if self.exact.len() <= c {
                self.exact.resize_with(c + 1, || None);
            }
            let slot = &mut self.exact[c].get_or_insert_with(|| Box::new([0; EXACT_CHUNK]))[i];
            self.exact_buckets += usize::from(*slot == 0);
            *slot += times;
        } else {
            *self.rounded.entry(gap_bucket(us)).or_insert(0) += times;
        }
        self.min_us = if self.count == 0 { us } else { self.min_us.min(us) };
        self.max_us = self.max_us.max(us);
        self.count += times;
        self.sum_us += u128::from(us) * u128::from(times);
    }

    /// Counts every gap of `other` too (a fleet's replicas, as one histogram).
    pub fn merge(&mut self, other: &GapHistogram) {
        if other.count == 0 {
            return;
        }
        if self.exact.len() < other.exact.len() {
            self.exact.resize_with(other.exact.len(), || None);
        }
        for (mine, theirs) in self.exact.iter_mut().zip(&other.exact) {
            let Some(theirs) = theirs else { continue };
            let mine = mine.get_or_insert_with(|| Box::new([0; EXACT_CHUNK]));
            for (m, &t) in mine.iter_mut().zip(theirs.iter()) {
                self.exact_buckets += usize::from(*m == 0 && t > 0);
                *m += t;
            }
        }
        for (&b, &n) in &other.rounded {
            *self.rounded.entry(b).or_insert(0) += n;
        }
        self.min_us = if self.count == 0 { other.min_us } else { self.min_us.min(other.min_us) };
        self.max_us = self.max_us.max(other.max_us);
        self.count += other.count;
        self.sum_us += other.sum_us;
    }

    /// Every bucket in use with its count, lowest first.
    #[cfg(test)]
    fn buckets_in_order(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let exact = self.exact.iter().enumerate().filter_map(|(c, chunk)| chunk.as_ref().map(|k| (c, k))).flat_map(
            |(c, chunk)| {
                chunk.iter().enumerate().filter(|&(_, &n)| n > 0).map(move |(i, &n)| ((c * EXACT_CHUNK + i) as u64, n))
            },
        );
        exact.chain(self.rounded.iter().map(|(&b, &n)| (b, n)))
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    /// Buckets in use.
    pub fn buckets(&self) -> usize {
        self.exact_buckets + self.rounded.len()
    }
    /// Bytes the histogram holds: its chunks of exact counts and its map's entries (a key, a
    /// count and the tree's share of a node each).
    pub fn bytes(&self) -> usize {
        let chunks = self.exact.iter().flatten().count();
        chunks * EXACT_CHUNK * size_of::<u64>() + self.rounded.len() * 4 * size_of::<u64>()
    }
    pub fn min_us(&self) -> u64 {
        self.min_us
    }
    pub fn max_us(&self) -> u64 {
        self.max_us
    }

    /// Exact mean, µs (0 when empty).
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_us as f64 / self.count as f64
        }
    }

    /// Nearest-rank percentile, µs: the lower bound of the bucket holding that rank, never below
    /// the smallest gap (0 when empty). Exact when that bucket is below 2^14 µs.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = (libm::ceil(p / 100.0 * self.count as f64) as u64).clamp(1, self.count);
        let mut seen = 0;
        for (c, chunk) in self.exact.iter().enumerate() {
            let Some(chunk) = chunk else { continue };
            for (i, &n) in chunk.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return ((c * EXACT_CHUNK + i) as u64).max(self.min_us) as f64;
                }
            }
        }
        for (&bucket, &n) in &self.rounded {
            seen += n;
            if seen >= rank {
                return bucket.max(self.min_us) as f64;
            }
        }
        self.max_us as f64
    }

    /// The report's summary, ms rounded to 0.01.
    pub fn summary(&self) -> Summary {
        let ms = |us: f64| round_to(us / 1000.0, 2);
        Summary {
            mean: ms(self.mean_us()),
            p50: ms(self.percentile_us(50.0)),
            p90: ms(self.percentile_us(90.0)),
            p95: ms(self.percentile_us(95.0)),
            p99: ms(self.percentile_us(99.0)),
        }
    }
}

/// Nearest-rank percentile of an unsorted list (0 when empty).
pub fn percentile(values: &mut [f64], p: f64) -> f64 {
    // Values equal under `total_cmp` are the same bits, so an unstable sort is as good.
    values.sort_unstable_by(f64::total_cmp);
    percentile_of_sorted(values, p)
}

/// A sorted copy (by `f64::total_cmp`), for taking several percentiles.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Nearest-rank percentile of a list sorted by `f64::total_cmp` (0 when empty).
pub fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = libm::ceil(p / 100.0 * sorted.len() as f64) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Rounds for the report so that JSON stays readable (and exact across platforms).
pub fn round_to(x: f64, digits: i32) -> f64 {
    let m = libm::pow(10.0, f64::from(digits));
    libm::round(x * m) / m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_gaps_are_exact_and_match_the_sorted_list() {
        let gaps: Vec<u64> = (0..500u64).map(|i| (i * 7919) % 16_000 + 1).collect();
        let mut h = GapHistogram::default();
        for &g in &gaps {
            h.add(g, 1);
        }
        let list = sorted(&gaps.iter().map(|&g| g as f64).collect::<Vec<_>>());
        for p in [1.0, 50.0, 90.0, 95.0, 99.0, 100.0] {
            assert_eq!(h.percentile_us(p), percentile_of_sorted(&list, p), "p{p}");
        }
        assert_eq!(h.summary(), Summary::of_sorted_us(&list));
    }

    #[test]
    fn the_exact_chunks_and_the_rounded_buckets_read_as_one_ordered_histogram() {
        let mut h = GapHistogram::default();
        for (us, times) in [(16_384, 2), (16_383, 1), (0, 1), (1_023, 1), (1_024, 3), (40_000, 1), (1_024, 1)] {
            h.add(us, times);
        }
        assert_eq!(h.buckets(), 6, "0, 1,023, 1,024, 16,383 exact; 16,384 and 40,000 rounded");
        let order: Vec<(u64, u64)> = h.buckets_in_order().collect();
        assert_eq!(order, [(0, 1), (1_023, 1), (1_024, 4), (16_383, 1), (16_384, 2), (gap_bucket(40_000), 1)]);
        assert_eq!(
            (h.percentile_us(50.0), h.percentile_us(70.0), h.percentile_us(80.0)),
            (1_024.0, 16_383.0, 16_384.0)
        );
        assert_eq!(h.bytes(), 3 * 1024 * 8 + 2 * 32, "chunks 0, 1 and 15 hold counts; two map entries");
    }

    #[test]
    fn long_gaps_lose_at_most_their_low_bits() {
        let mut h = GapHistogram::default();
        h.add(1_000_003, 3);
        h.add(20_001, 1);
        assert_eq!(h.count(), 4);
        assert_eq!(h.mean_us(), (3.0 * 1_000_003.0 + 20_001.0) / 4.0);
        let p99 = h.percentile_us(99.0);
        assert!(p99 <= 1_000_003.0 && 1_000_003.0 - p99 < 1_000_003.0 / 8192.0, "{p99}");
        assert_eq!(h.percentile_us(25.0), 20_001.0, "a bucket never reads below the smallest gap");
        assert_eq!((h.min_us(), h.max_us(), h.buckets()), (20_001, 1_000_003, 2));
    }

    #[test]
    fn a_summary_is_ordered_and_its_mean_within_the_values() {
        for n in 1..60u64 {
            let list = sorted(&(0..n).map(|i| ((i * 2_654_435_761) % 1_000_003) as f64).collect::<Vec<_>>());
            let s = Summary::of_sorted_us(&list);
            let (lo, hi) = (list[0] / 1000.0, list[list.len() - 1] / 1000.0);
            assert!(s.p50 <= s.p90 && s.p90 <= s.p95 && s.p95 <= s.p99, "{s:?}");
            assert!(s.mean >= lo - 0.005 && s.mean <= hi + 0.005, "{s:?} outside [{lo}, {hi}]");
        }
    }

    #[test]
    fn two_merged_histograms_read_as_one_of_every_gap() {
        let gaps = [3u64, 900, 1_500, 20_000, 20_001, 1_000_000, 7];
        let (mut a, mut b, mut all) = (GapHistogram::default(), GapHistogram::default(), GapHistogram::default());
        for (i, &g) in gaps.iter().enumerate() {
            if i % 2 == 0 {
                a.add(g, 2)
            } else {
                b.add(g, 2)
            }
            all.add(g, 2);
        }
        a.merge(&b);
        assert_eq!(a, all);
        a.merge(&GapHistogram::default());
        assert_eq!(a, all);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(GapHistogram::default().summary(), Summary::default());
        assert_eq!(Summary::of_sorted_us(&[]), Summary::default());
    }
}
