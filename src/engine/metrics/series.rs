//! `StepPoint`, one point of the step series, and the series, bounded: one point per step (and per idle gap) while the run has fewer
//! points than a budget, then one point per time bucket. A bucketed point is the exact aggregate
//! of the steps it covers, by the rule the chart draws with (`StepPoint::absorb`: the peaks of
//! the levels, the last time and the last cumulative count), so a chart whose pixels are wider
//! than a bucket draws the same picture from it as from every step, and the report, which keeps
//! its own integrals, loses nothing.
//!
//! Buckets are `BASE_BUCKET_US · 2^k` wide, aligned at time 0, and `k` is the smallest that keeps
//! the points within the budget for the run so far. Coarser buckets nest whole finer ones, so
//! merging as the run goes gives what bucketing every step at the final width would: the series
//! depends only on the steps.

use serde::Serialize;

/// One point of the per-step series: the state of the server during one step (after scheduling,
/// before finished requests free).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StepPoint {
    /// Simulated time at the end of the step, µs.
    pub t_us: u64,
    pub allocated_tokens: u64,
    pub live_tokens: u64,
    pub running: u32,
    pub waiting: u32,
    pub swapped: u32,
    pub preemptions: u32,
}

impl StepPoint {
    /// Folds a later point into this one, as a point standing for both steps: the peaks of the
    /// levels, the later time and the later cumulative preemption count. The chart's
    /// downsampling and the bounded series aggregate by this one rule.
    pub fn absorb(&mut self, later: &StepPoint) {
        self.t_us = later.t_us;
        self.allocated_tokens = self.allocated_tokens.max(later.allocated_tokens);
        self.live_tokens = self.live_tokens.max(later.live_tokens);
        self.running = self.running.max(later.running);
        self.waiting = self.waiting.max(later.waiting);
        self.swapped = self.swapped.max(later.swapped);
        self.preemptions = later.preemptions;
    }
}

/// Most points a series holds: more than any 60 s run takes steps (the shipped presets take
/// fewer than 10,000), so those keep every step.
pub const SERIES_POINT_BUDGET: usize = 1 << 18;
/// The narrowest bucket, µs.
pub const BASE_BUCKET_US: u64 = 1_000;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    points: Vec<StepPoint>,
    /// 0 while every step has its point; otherwise the width of a point's bucket, µs.
    bucket_us: u64,
    budget: usize,
}

impl Series {
    /// A series of at most [`SERIES_POINT_BUDGET`] points.
    pub fn new() -> Series {
        Series::with_budget(SERIES_POINT_BUDGET)
    }

    /// A series of at most `budget` points (at least 2).
    pub fn with_budget(budget: usize) -> Series {
        Series { points: Vec::new(), bucket_us: 0, budget: budget.max(2) }
    }

    pub fn points(&self) -> &[StepPoint] {
        &self.points
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The bucket width, µs, once points stand for buckets of steps; None while every step has
    /// its point.
    pub fn bucket_us(&self) -> Option<u64> {
        (self.bucket_us > 0).then_some(self.bucket_us)
    }

    /// The first `len` points of a series that has every step's point.
    pub fn exact_prefix(&self, len: usize) -> Series {
        debug_assert!(self.bucket_us == 0, "a bucketed series has no per-step prefix");
        Series { points: self.points[..len.min(self.points.len())].to_vec(), bucket_us: 0, budget: self.budget }
    }

    /// Appends the points of `other` past this series' length (both share their prefix).
    pub fn extend_from(&mut self, other: &Series) {
        if other.points.len() > self.points.len() {
            self.points.extend_from_slice(&other.points[self.points.len()..]);
        }
    }

    /// Adds the point of the step (or idle gap) that ended at `p.t_us`.
    pub fn push(&mut self, p: StepPoint) {
        if self.bucket_us > 0 {
            if let Some(last) = self.points.last_mut() {
                if bucket_of(last.t_us, self.bucket_us) == bucket_of(p.t_us, self.bucket_us) {
                    last.absorb(&p);
                    return;
                }
            }
        }
        self.points.push(p);
        if self.points.len() > self.budget {
            self.coarsen();
        }
    }

    /// Widens the buckets to the narrowest that hold the points within the budget, and merges.
    fn coarsen(&mut self) {
        let mut w = if self.bucket_us == 0 { BASE_BUCKET_US } else { self.bucket_us * 2 };
        while buckets_needed(&self.points, w) > self.budget {
            w *= 2;
        }
        self.bucket_us = w;
        let mut merged: Vec<StepPoint> = Vec::with_capacity(self.budget);
        for p in &self.points {
            match merged.last_mut() {
                Some(last) if bucket_of(last.t_us, w) == bucket_of(p.t_us, w) => last.absorb(p),
                _ => merged.push(*p),
            }
        }
        self.points = merged;
    }
}

/// The bucket a point ending at `t_us` falls in: `(0, w]` is bucket 0, so a step that ends on a
/// boundary closes its bucket.
fn bucket_of(t_us: u64, w: u64) -> u64 {
    t_us.saturating_sub(1) / w
}

fn buckets_needed(points: &[StepPoint], w: u64) -> usize {
    let mut n = 0;
    let mut last = None;
    for p in points {
        let b = bucket_of(p.t_us, w);
        if last != Some(b) {
            n += 1;
            last = Some(b);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t_us: u64, allocated: u64) -> StepPoint {
        StepPoint { t_us, allocated_tokens: allocated, live_tokens: allocated / 2, running: 1, ..StepPoint::default() }
    }

    #[test]
    fn a_series_keeps_every_point_up_to_its_budget() {
        let mut s = Series::with_budget(8);
        (1..=8).for_each(|i| s.push(point(i * 10, i)));
        assert_eq!(s.len(), 8);
        assert_eq!(s.bucket_us(), None);
    }

    #[test]
    fn past_its_budget_a_series_keeps_each_buckets_peak_and_last_time() {
        let mut s = Series::with_budget(16);
        let steps: Vec<StepPoint> =
            (1..=1000).map(|i| point(i * 700, if i == 333 { 99_999 } else { i % 50 })).collect();
        steps.iter().for_each(|p| s.push(*p));
        assert!(s.len() <= 16, "{} points", s.len());
        let w = s.bucket_us().expect("bucketed");
        assert!(w.is_power_of_two() || (w / BASE_BUCKET_US).is_power_of_two());
        assert!(s.points().iter().any(|p| p.allocated_tokens == 99_999), "the peak survives");
        assert_eq!(s.points().last().map(|p| p.t_us), Some(700_000), "the last time survives");
        // Each point is exactly the aggregate of the steps in its bucket.
        for p in s.points() {
            let b = bucket_of(p.t_us, w);
            let mut agg: Option<StepPoint> = None;
            for q in steps.iter().filter(|q| bucket_of(q.t_us, w) == b) {
                match &mut agg {
                    Some(a) => a.absorb(q),
                    None => agg = Some(*q),
                }
            }
            assert_eq!(Some(*p), agg);
        }
    }

    #[test]
    fn merging_as_the_run_goes_equals_bucketing_every_step_at_the_end() {
        let steps: Vec<StepPoint> = (1..=5000).map(|i| point(i * 337 + i % 7 * 50, i % 97)).collect();
        let mut incremental = Series::with_budget(64);
        steps.iter().for_each(|p| incremental.push(*p));
        let w = incremental.bucket_us().expect("bucketed");
        let mut at_once = Series { points: steps.clone(), bucket_us: 0, budget: usize::MAX };
        at_once.bucket_us = w;
        let mut merged: Vec<StepPoint> = Vec::new();
        for p in &at_once.points {
            match merged.last_mut() {
                Some(last) if bucket_of(last.t_us, w) == bucket_of(p.t_us, w) => last.absorb(p),
                _ => merged.push(*p),
            }
        }
        assert_eq!(incremental.points(), &merged[..]);
        assert!(buckets_needed(&steps, w / 2) > 64, "the width is the narrowest that fits");
    }
}
