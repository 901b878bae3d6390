//! Checkpoints for scrubbing: snapshots of a run taken as it first goes forward, one each time
//! the work done since the last (sequence-steps: each step's running requests plus one) reaches
//! a spacing, so going back to any time replays at most about that much work from the nearest
//! snapshot instead of the whole run from 0. The engine is deterministic, so a run restored from a snapshot and
//! stepped on is the run that went there from the start, bit for bit (tests/checkpoints.rs).
//!
//! Memory stays bounded: snapshots leave the step series out (one copy of the longest series
//! seen that still has every step's point is kept here, and a restored run gets its prefix back;
//! a snapshot taken once the series went to buckets, in runs of more steps than
//! `SERIES_POINT_BUDGET`, keeps its own bounded series), there are at most
//! [`MAX_SNAPSHOTS`], and their estimated size stays under a byte budget: when a new snapshot
//! would pass either limit, every third snapshot is dropped and the spacing grows by half.

use super::Simulation;
use crate::engine::alloc::{BlockEntry, KvCacheBlock, KvCacheManager};
use crate::engine::config::AllocatorConfig;
use crate::engine::metrics::Series;
use crate::engine::request::{Sequence, SequenceGroup};

/// Sequence-steps between snapshots at first: replaying that many costs a few milliseconds on
/// the shipped 60 s presets (docs/PERFORMANCE.md), a small share of a frame.
pub const DEFAULT_WORK_PER_SNAPSHOT: u64 = 50_000;
/// Most snapshots kept at once.
pub const MAX_SNAPSHOTS: usize = 64;
/// Default byte budget of all snapshots together (estimated).
pub const DEFAULT_BUDGET_BYTES: usize = 256 << 20;

/// A run without its series (unless bucketed: then with it), and how long its series was.
#[derive(Clone, Debug)]
struct Snapshot {
    sim: Simulation,
    series_len: usize,
    /// The run's steps when taken (what the work past it is counted from).
    steps: u64,
    /// Estimated bytes ([`Snapshot::estimate_bytes`]).
    bytes: usize,
}

impl Snapshot {
    fn of(sim: &mut Simulation) -> Snapshot {
        let (series_len, steps) = (sim.series.len(), sim.steps);
        let snap_sim = if sim.series.bucket_us().is_some() {
            sim.clone()
        } else {
            let series = std::mem::take(&mut sim.series);
            let copy = sim.clone();
            sim.series = series;
            copy
        };
        let mut snap = Snapshot { sim: snap_sim, series_len, steps, bytes: 0 };
        snap.bytes = snap.estimate_bytes();
        snap
    }

    fn now_us(&self) -> u64 {
        self.sim.now_us()
    }

    /// Estimated bytes: the requests' state, latencies, and the KV pool's records (the request
    /// list itself is shared by every snapshot).
    fn estimate_bytes(&self) -> usize {
        estimated_bytes(&self.sim)
    }
}

/// Estimated bytes a copy of `s` holds without its series' points beyond what it has: the
/// requests' state, latencies, series and the KV pool's records (the request list itself is
/// shared by every copy). A fleet's snapshots (`session::fleet_run`) are bounded by it too.
#[inline]
pub fn estimated_bytes(s: &Simulation) -> usize {
    let caching = matches!(s.config.allocator, AllocatorConfig::Paged { prefix_caching: true, .. });
    // Entries are kept where blocks can be shared (the pool says; a record counted for
    // contiguous map cells too); with prefix caching a block also has a stamped free-queue
    // entry.
    let record = match &s.kv {
        KvCacheManager::Paged(p) if p.pool().shares_blocks() => size_of::<BlockEntry>(),
        KvCacheManager::Paged(_) => 0,
        KvCacheManager::Contiguous(_) => size_of::<KvCacheBlock>(),
    };
    let hash = if caching { size_of::<u32>() } else { 0 };
    let samples: usize = s.groups.iter().map(|g| g.samples.len()).sum();
    s.groups.len() * size_of::<SequenceGroup>()
        + samples * size_of::<Sequence>()
        + (s.ttft_us.len() + s.tpot_us.len() + s.e2e_us.len()) * size_of::<f64>()
        + s.itl.bytes()
        + s.series.len() * size_of::<crate::engine::StepPoint>()
        // Per block: its place in a block table, its free-queue entry, its entry where kept,
        // and its free-queue entry's stamp with prefix caching.
        + s.config.run_bounds().kv_cells as usize * (2 * size_of::<u32>() + record + hash)
}

/// The snapshots of one run, and the longest series that run has shown.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    /// Sequence-steps between snapshots (a step counts its running requests plus one: roughly
    /// what replaying it costs).
    work_per_snapshot: u64,
    budget_bytes: usize,
    /// In time order; the first is the run at time 0.
    snapshots: Vec<Snapshot>,
    /// The longest series seen that has every step's point (every run of this configuration
    /// shares its prefixes).
    series: Series,
    /// Sequence-steps counted past the last snapshot, up to series point `work_len` (or, once
    /// the series is bucketed, up to step `work_steps`).
    work: u64,
    work_len: usize,
    work_steps: u64,
}

impl Checkpoints {
    /// Checkpoints for `sim` (at time 0): a snapshot every [`DEFAULT_WORK_PER_SNAPSHOT`]
    /// sequence-steps at first, within `budget_bytes`.
    pub fn new(sim: &mut Simulation, budget_bytes: usize) -> Checkpoints {
        Checkpoints::with_spacing(sim, budget_bytes, DEFAULT_WORK_PER_SNAPSHOT)
    }

    /// Checkpoints taking a snapshot every `work_per_snapshot` sequence-steps (each step counts
    /// its running requests plus one) at first.
    pub fn with_spacing(sim: &mut Simulation, budget_bytes: usize, work_per_snapshot: u64) -> Checkpoints {
        let len = sim.series.len();
        Checkpoints {
            work_per_snapshot: work_per_snapshot.max(1),
            budget_bytes,
            snapshots: vec![Snapshot::of(sim)],
            series: sim.series.clone(),
            work: 0,
            work_len: len,
            work_steps: sim.steps,
        }
    }

    /// Sequence-steps between snapshots now.
    pub fn work_per_snapshot(&self) -> u64 {
        self.work_per_snapshot
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
        self.snapshots.iter().map(|s| s.bytes).sum()
    }

    /// Brings `sim` to time `t_us` (as `run_until`): from the latest snapshot at or before `t_us`
    /// when that is back in time or ahead of `sim`, then forward, taking a snapshot whenever the
    /// work since the last one (past the last one, where nothing was recorded yet) reaches the
    /// spacing.
    pub fn seek(&mut self, sim: &mut Simulation, t_us: u64) {
        self.keep_series(sim);
        let t = t_us.min(sim.end_limit_us());
        // The latest snapshot at or before `t` is restored when it is closer than where the run
        // stands: always going back, and going forward past a snapshot.
        let snap = self.snapshots.iter().rev().find(|s| s.now_us() <= t).expect("the first snapshot is at 0");
        if t < sim.now_us() || snap.now_us() > sim.now_us() {
            let mut restored = snap.sim.clone();
            if restored.series.is_empty() {
                restored.series = self.series.exact_prefix(snap.series_len);
            }
            *sim = restored;
        }
        let mut full = false;
        loop {
            if !full && self.work_since_last(sim) >= self.work_per_snapshot && !sim.is_done() {
                full = !self.record(sim);
            }
            // A run with `until_all_finished` may end before `t`.
            if sim.now_us() >= t || !sim.advance() {
                break;
            }
        }
        sim.sync();
        self.keep_series(sim);
    }

    /// Sequence-steps the series shows past the last snapshot (counted once, incrementally).
    fn work_since_last(&mut self, sim: &Simulation) -> u64 {
        let last = self.snapshots.last().map_or((0, 0), |s| (s.series_len, s.steps));
        if sim.series.bucket_us().is_some() {
            // Points stand for buckets: each step past the last snapshot or count counts the
            // running requests it ends with, plus one.
            if self.work_steps < last.1 {
                (self.work, self.work_steps) = (0, last.1);
            }
            let running = sim.series().last().map_or(0, |p| u64::from(p.running));
            self.work += sim.steps.saturating_sub(self.work_steps) * (running + 1);
            self.work_steps = sim.steps.max(self.work_steps);
            return self.work;
        }
        if self.work_len < last.0 {
            (self.work, self.work_len) = (0, last.0);
        }
        if sim.series.len() > self.work_len {
            let new = &sim.series()[self.work_len..];
            self.work += new.iter().map(|p| u64::from(p.running) + 1).sum::<u64>();
            self.work_len = sim.series.len();
        }
        self.work
    }

    fn keep_series(&mut self, sim: &Simulation) {
        if sim.series.bucket_us().is_none() {
            self.series.extend_from(&sim.series);
        }
    }

    /// Takes a snapshot of `sim`, thinning the older ones to stay within the limits; false when
    /// even one more does not fit the budget.
    fn record(&mut self, sim: &mut Simulation) -> bool {
        self.keep_series(sim);
        let snap = Snapshot::of(sim);
        while self.snapshots.len() + 1 > MAX_SNAPSHOTS || self.bytes() + snap.bytes > self.budget_bytes {
            if self.snapshots.len() <= 1 {
                return false; // one snapshot over the budget: keep only the start
            }
            self.thin();
        }
        self.snapshots.push(snap);
        (self.work, self.work_len, self.work_steps) = (0, sim.series.len(), sim.steps);
        true
    }

    /// Drops every third snapshot (the one at time 0 stays) and makes the spacing half as long
    /// again: thinned, the snapshots keep about two thirds of what they held, where dropping
    /// every other one kept half (the 1-token `h200-scale` run, 8.6 MB a snapshot: 16 held in a
    /// 256 MiB budget that way).
    fn thin(&mut self) {
        let mut k = 0;
        self.snapshots.retain(|_| {
            k += 1;
            k % 3 != 0
        });
        self.work_per_snapshot = self.work_per_snapshot.saturating_add(self.work_per_snapshot.div_ceil(2));
    }
}
