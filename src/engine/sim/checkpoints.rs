//! Checkpoints for scrubbing: snapshots of a run taken as it first passes evenly spaced times,
//! so going back to any time replays at most one interval from the nearest snapshot instead of
//! the whole run from 0. The engine is deterministic, so a run restored from a snapshot and
//! stepped on is the run that went there from the start, bit for bit (tests/checkpoints.rs).
//!
//! Memory stays bounded: snapshots leave the step series out (one copy of the longest series
//! seen is kept here, and a restored run gets its prefix back), there are at most
//! [`MAX_SNAPSHOTS`], and their estimated size stays under a byte budget: when a new snapshot
//! would pass either limit, every other snapshot is dropped and the interval doubles.

use super::Simulation;
use crate::engine::alloc::block_pool::KvCacheBlock;
use crate::engine::metrics::StepPoint;
use crate::engine::request::{Sequence, SequenceGroup};
use crate::engine::workload::RequestSpec;

/// Most snapshots kept at once.
pub const MAX_SNAPSHOTS: usize = 64;
/// Default byte budget of all snapshots together (estimated).
pub const DEFAULT_BUDGET_BYTES: usize = 256 << 20;

/// A run without its series, and how long its series was.
#[derive(Clone, Debug)]
struct Snapshot {
    sim: Simulation,
    series_len: usize,
}

impl Snapshot {
    fn of(sim: &mut Simulation) -> Snapshot {
        let series = std::mem::take(&mut sim.series);
        let snap = Snapshot { sim: sim.clone(), series_len: series.len() };
        sim.series = series;
        snap
    }

    fn now_us(&self) -> u64 {
        self.sim.now_us()
    }

    /// Estimated bytes: the requests and their state, latencies, and the KV pool's records.
    fn bytes(&self) -> usize {
        let s = &self.sim;
        let samples: usize = s.groups.iter().map(|g| g.samples.len()).sum();
        s.requests.len() * size_of::<RequestSpec>()
            + s.groups.len() * size_of::<SequenceGroup>()
            + samples * size_of::<Sequence>()
            + (s.ttft_us.len() + s.tpot_us.len()) * size_of::<f64>()
            + s.config.run_bounds().kv_cells as usize * (size_of::<KvCacheBlock>() + size_of::<u32>())
    }
}

/// The snapshots of one run, and the longest series that run has shown.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    /// Simulated time between snapshots, µs.
    every_us: u64,
    budget_bytes: usize,
    /// In time order; the first is the run at time 0.
    snapshots: Vec<Snapshot>,
    /// The longest series seen (every run of this configuration shares its prefixes).
    series: Vec<StepPoint>,
}

impl Checkpoints {
    /// Checkpoints for `sim` (at time 0), every `duration / MAX_SNAPSHOTS` µs at first.
    pub fn new(sim: &mut Simulation, budget_bytes: usize) -> Checkpoints {
        let every_us = (sim.duration_us() / MAX_SNAPSHOTS as u64).max(1);
        Checkpoints { every_us, budget_bytes, snapshots: vec![Snapshot::of(sim)], series: sim.series.clone() }
    }

    /// Simulated time between snapshots now, µs.
    pub fn every_us(&self) -> u64 {
        self.every_us
    }

    /// Snapshots held now.
    pub fn len(&self) -> usize {
        self.snapshots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Estimated bytes the snapshots hold.
    pub fn bytes(&self) -> usize {
        self.snapshots.iter().map(Snapshot::bytes).sum()
    }

    /// Brings `sim` to time `t_us` (as `run_until`): back in time from the latest snapshot at or
    /// before `t_us`, and forward recording a snapshot at each interval passed for the first time.
    pub fn seek(&mut self, sim: &mut Simulation, t_us: u64) {
        self.keep_series(sim);
        let t = t_us.min(sim.duration_us());
        if t < sim.now_us() {
            let snap = self.snapshots.iter().rev().find(|s| s.now_us() <= t).expect("the first snapshot is at 0");
            let mut restored = snap.sim.clone();
            restored.series = self.series[..snap.series_len].to_vec();
            *sim = restored;
        }
        while sim.now_us() < t {
            let next = self.snapshots.last().map_or(0, Snapshot::now_us) + self.every_us;
            if sim.now_us() >= next {
                // Stepped past a checkpoint time outside `seek`: take the snapshot here.
                if !self.record(sim) {
                    sim.run_until(t); // the budget allows no more snapshots
                    break;
                }
                continue;
            }
            sim.run_until(t.min(next));
            if sim.now_us() >= next && !sim.is_done() {
                self.record(sim);
            }
        }
        self.keep_series(sim);
    }

    fn keep_series(&mut self, sim: &Simulation) {
        if sim.series.len() > self.series.len() {
            self.series.extend_from_slice(&sim.series[self.series.len()..]);
        }
    }

    /// Takes a snapshot of `sim`, thinning the older ones to stay within the limits; false when
    /// even one more does not fit the budget.
    fn record(&mut self, sim: &mut Simulation) -> bool {
        self.keep_series(sim);
        let snap = Snapshot::of(sim);
        while self.snapshots.len() + 1 > MAX_SNAPSHOTS || self.bytes() + snap.bytes() > self.budget_bytes {
            if self.snapshots.len() <= 1 {
                return false; // one snapshot over the budget: keep only the start
            }
            self.thin();
        }
        self.snapshots.push(snap);
        true
    }

    /// Drops every other snapshot (the one at time 0 stays) and doubles the interval.
    fn thin(&mut self) {
        let mut k = 0;
        self.snapshots.retain(|_| {
            k += 1;
            k % 2 == 1
        });
        self.every_us = self.every_us.saturating_mul(2);
    }
}
