//! A fleet in the lab: a preset with `replicas` above 1 runs as replicas behind its router
//! (`engine::fleet::Fleet`), moved to the time shown as one run is, its replicas drawn side by
//! side and its chart the replicas' series merged.
//!
//! Going back in time restores the latest snapshot at or before the time and runs on from
//! there: the fleet is deterministic, so that is the fleet that went there from the start.
//! Snapshots are taken as the fleet first goes forward, one every `spacing_us` of simulated
//! time; past [`MAX_SNAPSHOTS`], or past the byte budget (the replicas' estimated sizes, as a
//! run's checkpoints count them), every other one is dropped and the spacing doubles, so their
//! number and memory stay bounded however long the run and however many replicas.

use crate::engine::fleet::{Fleet, Route};
use crate::engine::plan::group_thousands;
use crate::engine::sim::checkpoints::{estimated_bytes, DEFAULT_BUDGET_BYTES};
use crate::engine::{SimConfig, StepPoint};

/// Most snapshots kept at once.
pub const MAX_SNAPSHOTS: usize = 32;
/// Simulated time between snapshots at first, µs.
const FIRST_SPACING_US: u64 = 2_000_000;

#[derive(Clone, Debug)]
pub struct FleetRun {
    fleet: Fleet,
    /// The fleet at 0 and as it first passed each multiple of `spacing_us`, in time order, each
    /// with its estimated bytes.
    snapshots: Vec<(Fleet, usize)>,
    spacing_us: u64,
    budget_bytes: usize,
    /// The replicas' series merged (`Fleet::series`), as of the fleet's time.
    series: Vec<StepPoint>,
}

impl FleetRun {
    pub fn new(config: SimConfig) -> Result<FleetRun, String> {
        FleetRun::with_budget(config, DEFAULT_BUDGET_BYTES)
    }

    /// A fleet whose snapshots hold about `budget_bytes` at most (the first, at 0, is kept).
    pub fn with_budget(config: SimConfig, budget_bytes: usize) -> Result<FleetRun, String> {
        let fleet = Fleet::new(config).map_err(|e| e.to_string())?;
        Ok(FleetRun {
            snapshots: vec![(fleet.clone(), fleet_bytes(&fleet))],
            fleet,
            spacing_us: FIRST_SPACING_US,
            budget_bytes,
            series: Vec::new(),
        })
    }

    /// Snapshots held now, and their estimated bytes.
    pub fn snapshots(&self) -> (usize, usize) {
        (self.snapshots.len(), self.snapshots.iter().map(|s| s.1).sum())
    }

    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// The merged series up to the fleet's time.
    pub fn series(&self) -> &[StepPoint] {
        &self.series
    }

    /// The last request routed so far, where it went.
    pub fn last_route(&self) -> Option<(u32, Route)> {
        let routes = self.fleet.routes();
        routes.last().map(|r| (routes.len() as u32 - 1, *r))
    }

    /// What the router did so far, in the learner's words: its policy, the requests each replica
    /// was sent and how uneven that is, and where the last arrival went (its rule is
    /// `engine::fleet::rule`).
    pub fn router_note(&self, class_names: &[String]) -> String {
        let fleet = &self.fleet;
        let router = &fleet.config().router;
        let sent: Vec<u64> = fleet.replicas().iter().map(|r| r.requests().len() as u64).collect();
        let mut note = format!(
            "Router: {}. Requests sent so far: {}",
            router.policy.name(),
            sent.iter().map(|&n| group_thousands(n)).collect::<Vec<_>>().join(" · ")
        );
        if let Some(x) = crate::engine::fleet::imbalance(&sent) {
            note += &format!(" (the busiest got {x:.2}× the mean)");
        }
        if let Some((id, route)) = self.last_route() {
            let spec = &fleet.requests()[id as usize];
            let class = class_names.get(usize::from(spec.class)).map_or("", String::as_str);
            let tenants = fleet.config().workload.classes.get(usize::from(spec.class)).map_or(1, |c| c.tenants);
            let who = if tenants > 1 { format!("{class} {}", spec.tenant + 1) } else { class.to_string() };
            note += &format!(
                ". The last arrival, request {} ({who}), went to replica {} (its request {}).",
                id,
                route.replica + 1,
                route.local
            );
        } else {
            note += ".";
        }
        note
    }

    /// Brings the fleet to `t_us`: forward from where it is, or from the latest snapshot at or
    /// before `t_us`.
    pub fn seek(&mut self, t_us: u64) {
        let mut moved = false;
        if t_us < self.fleet.now_us() {
            let i = self.snapshots.partition_point(|s| s.0.now_us() <= t_us).max(1) - 1;
            self.fleet = self.snapshots[i].0.clone();
            moved = true;
        }
        let t_us = t_us.min(self.fleet.end_limit_us());
        while self.fleet.now_us() < t_us && !self.fleet.is_done() {
            let next_snapshot = self.next_snapshot_us();
            self.fleet.run_until(t_us.min(next_snapshot));
            self.take_snapshot();
            moved = true;
        }
        // The chart's series is merged again only when the fleet moved (a frame that shows the
        // same time, a redraw, merges nothing).
        if moved || self.series.is_empty() {
            self.series = self.fleet.series();
        }
    }

    /// The fleet's next event (`Fleet::step`); returns its time.
    pub fn step(&mut self) -> u64 {
        let t = self.fleet.step();
        self.take_snapshot();
        self.series = self.fleet.series();
        t
    }

    fn next_snapshot_us(&self) -> u64 {
        let last = self.snapshots.last().map_or(0, |s| s.0.now_us());
        (last / self.spacing_us + 1) * self.spacing_us
    }

    /// A snapshot of the fleet when it first passes the next multiple of the spacing.
    fn take_snapshot(&mut self) {
        if self.fleet.now_us() < self.next_snapshot_us() {
            return;
        }
        let bytes = fleet_bytes(&self.fleet);
        let held = |s: &[(Fleet, usize)]| s.iter().map(|x| x.1).sum::<usize>();
        while self.snapshots.len() > 1
            && (self.snapshots.len() >= MAX_SNAPSHOTS || held(&self.snapshots) + bytes > self.budget_bytes)
        {
            let mut i = 0;
            self.snapshots.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.spacing_us *= 2;
        }
        if held(&self.snapshots) + bytes <= self.budget_bytes {
            self.snapshots.push((self.fleet.clone(), bytes));
        }
    }
}

/// A fleet's estimated bytes: its replicas' (the requests are shared).
fn fleet_bytes(fleet: &Fleet) -> usize {
    fleet.replicas().iter().map(estimated_bytes).sum()
}
