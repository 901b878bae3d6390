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

/// Every inter-token gap of a run, counted by value: exact below 16.384 ms, 14 significant bits
/// above, so a day of traffic keeps at most a few thousand buckets per power of two of the gaps'
/// range. The count, the sum (so the mean), the minimum and the maximum are exact.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GapHistogram {
    /// Bucket (the gap's value with its low bits cleared, µs) → gaps in it.
    buckets: BTreeMap<u64, u64>,
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
        *self.buckets.entry(gap_bucket(us)).or_insert(0) += times;
        self.min_us = if self.count == 0 { us } else { self.min_us.min(us) };
        self.max_us = self.max_us.max(us);
        self.count += times;
        self.sum_us += u128::from(us) * u128::from(times);
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    /// Buckets in use (what the histogram's memory grows with).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
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
        for (&bucket, &n) in &self.buckets {
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
    fn empty_is_zero() {
        assert_eq!(GapHistogram::default().summary(), Summary::default());
        assert_eq!(Summary::of_sorted_us(&[]), Summary::default());
    }
}
