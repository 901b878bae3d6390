//! A replica behind a router (`engine::fleet`): a run whose requests are given one at a time as
//! they are routed, instead of made up front. It runs no further than it has been fed
//! (`feed_until_us`), idles only to an arrival it was fed, and is not finished while more may
//! come, so it runs exactly as the same run given those requests up front (`tests/fleet.rs`).

use super::Simulation;
use crate::engine::clock::StepClock;
use crate::engine::config::SimConfig;
use crate::engine::metrics::Series;
use crate::engine::workload::RequestSpec;
use std::sync::Arc;

impl Simulation {
    /// A replica behind a router: no requests yet, each given by [`Simulation::feed`] as it is
    /// routed; its series keeps at most `series_points` points (a fleet shares one series'
    /// budget among its replicas). The configuration must already be valid.
    pub fn replica(config: SimConfig, clock: StepClock, series_points: usize) -> Simulation {
        let mut sim = Simulation::with_requests(config, Vec::new(), clock);
        sim.feed_until_us = 0;
        sim.series = Series::with_budget(series_points);
        sim
    }

    /// Hands a replica its next request (routed at its arrival, which is no earlier than the
    /// last one's); its id becomes its index on this replica, which it returns.
    pub fn feed(&mut self, mut spec: RequestSpec) -> u32 {
        let requests = Arc::make_mut(&mut self.requests);
        let id = requests.len() as u32;
        self.feed_until_us = self.feed_until_us.max(spec.arrival_us);
        spec.id = id;
        requests.push(spec);
        if self.is_done() {
            // Its last step ran past the end before this arrival was routed: it is counted as
            // every request that arrived before the end is.
            self.admit_arrivals();
        }
        id
    }

    /// Every request arriving before `t_us` has been fed: the replica may run (or idle) to it.
    pub fn feed_until(&mut self, t_us: u64) {
        self.feed_until_us = self.feed_until_us.max(t_us);
    }

    /// When this replica next has something to do: now while it has requests queued or running,
    /// else the arrival of the next request it was fed; `None` while it waits to be fed.
    pub fn next_event_us(&self) -> Option<u64> {
        if self.is_done() {
            None
        } else if !self.scheduler.is_idle() {
            Some(self.now_us)
        } else {
            self.requests.get(self.groups.len()).map(|r| r.arrival_us.max(self.now_us))
        }
    }

    /// No more requests will be fed: the replica runs as a run with its requests made up front.
    pub fn close_feed(&mut self) {
        self.feed_until_us = u64::MAX;
    }
}
