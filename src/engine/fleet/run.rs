//! A fleet's run: the router's choices at each arrival, the replicas fed and run to each time.

use std::sync::Arc;

use super::router::{Route, Router};
use crate::engine::config::{ConfigError, SimConfig};
use crate::engine::metrics::{Report, SERIES_POINT_BUDGET};
use crate::engine::sim::Simulation;
use crate::engine::workload::{generate, RequestSpec};

/// The fewest points a replica's series keeps, however many replicas share the budget.
const MIN_REPLICA_SERIES_POINTS: usize = 4096;

/// A fleet's run.
#[derive(Clone, Debug)]
pub struct Fleet {
    config: SimConfig,
    replicas: Vec<Simulation>,
    router: Router,
    /// Every request of the fleet, in arrival order (ids are indices).
    requests: Arc<Vec<RequestSpec>>,
    /// Where each request routed so far went (the first `routes.len()` requests).
    routes: Vec<Route>,
    /// The time the fleet has been run to (an idle replica waits at its last event).
    now_us: u64,
}

impl Fleet {
    pub fn new(config: SimConfig) -> Result<Fleet, ConfigError> {
        config.validate()?;
        let replica = SimConfig { replicas: 1, ..config.clone() };
        let clock = replica.clock();
        let requests = generate(&config.workload, config.duration_us(), config.seed, config.scheduler.max_model_len);
        // The replicas share one run's series budget, so a fleet's memory is bounded as a run's.
        let points = (SERIES_POINT_BUDGET / config.replicas as usize).max(MIN_REPLICA_SERIES_POINTS);
        let replicas =
            (0..config.replicas).map(|_| Simulation::replica(replica.clone(), clock.clone(), points)).collect();
        Ok(Fleet {
            router: Router::new(config.router, config.replicas, config.seed),
            routes: Vec::with_capacity(requests.len()),
            requests: Arc::new(requests),
            replicas,
            config,
            now_us: 0,
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }
    pub fn replicas(&self) -> &[Simulation] {
        &self.replicas
    }
    pub fn requests(&self) -> &[RequestSpec] {
        &self.requests
    }
    /// Where each request routed so far went, by the fleet's request id.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }
    /// The time the fleet has been run to.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }
    pub fn end_limit_us(&self) -> u64 {
        self.replicas[0].end_limit_us()
    }
    pub fn is_done(&self) -> bool {
        self.routes.len() == self.requests.len() && self.replicas.iter().all(Simulation::is_done)
    }

    /// Routes every request arriving before `t_us` and runs every replica to `t_us` (or the end).
    pub fn run_until(&mut self, t_us: u64) {
        let t_us = t_us.min(self.end_limit_us());
        let requests = Arc::clone(&self.requests);
        let reads = self.config.router.policy.reads_replicas();
        while let Some(spec) = requests.get(self.routes.len()) {
            if spec.arrival_us >= t_us {
                break;
            }
            if reads {
                for r in &mut self.replicas {
                    r.feed_until(spec.arrival_us);
                    r.run_until(spec.arrival_us);
                }
            }
            let id = self.routes.len() as u32;
            let replica = self.router.route(spec, id, &self.replicas);
            let local = self.replicas[replica as usize].feed(spec.clone());
            self.routes.push(Route { replica, local });
        }
        let all_routed = self.routes.len() == requests.len();
        for r in &mut self.replicas {
            if all_routed {
                r.close_feed();
            } else {
                r.feed_until(t_us);
            }
        }
        run_replicas(&mut self.replicas, t_us);
        self.now_us = self.now_us.max(t_us);
    }

    /// The fleet's next event: every replica with work at the earliest time one has work (or
    /// the next request arrives) takes its step there. Returns the time the fleet is run to.
    pub fn step(&mut self) -> u64 {
        let arrival = self.requests.get(self.routes.len()).map(|r| r.arrival_us);
        let next = self.replicas.iter().filter_map(Simulation::next_event_us).chain(arrival).min();
        match next {
            Some(t) => self.run_until(t.max(self.now_us) + 1),
            None => self.run_until(self.end_limit_us()),
        }
        self.now_us
    }

    /// The replicas' series merged into the fleet's (`series.rs`).
    pub fn series(&self) -> Vec<crate::engine::metrics::StepPoint> {
        super::series::fleet_series(&self.replicas)
    }

    /// The fleet's report so far: the replicas summed up, with the router and each replica.
    pub fn report(&self) -> Report {
        let first = self.requests.first().map_or(0, |r| r.arrival_us);
        super::report::fleet_report(&self.config.router, &self.replicas, &self.routes, first)
    }

    pub fn run_to_end(&mut self) -> Report {
        self.run_until(self.end_limit_us());
        self.report()
    }

    /// Every replica's invariants, the router's index, and every request routed once.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, r) in self.replicas.iter().enumerate() {
            r.check_invariants().map_err(|e| format!("replica {i}: {e}"))?;
        }
        self.router.check_invariants()?;
        let mut fed = vec![0u32; self.replicas.len()];
        for (id, route) in self.routes.iter().enumerate() {
            let slot = &mut fed[route.replica as usize];
            if route.local != *slot {
                return Err(format!(
                    "request {id} is request {} of replica {}, expected {slot}",
                    route.local, route.replica
                ));
            }
            *slot += 1;
        }
        for (i, r) in self.replicas.iter().enumerate() {
            if r.requests().len() as u32 != fed[i] {
                return Err(format!(
                    "replica {i} holds {} requests, the router sent it {}",
                    r.requests().len(),
                    fed[i]
                ));
            }
        }
        Ok(())
    }
}

/// Every replica run to `t_us`: on rayon's threads natively, one after another in wasm. Each
/// replica is independent until the next routing, so the order changes nothing.
fn run_replicas(replicas: &mut [Simulation], t_us: u64) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        replicas.par_iter_mut().for_each(|r| r.run_until(t_us));
    }
    #[cfg(target_arch = "wasm32")]
    for r in replicas {
        r.run_until(t_us);
    }
}
