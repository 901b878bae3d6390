//! Sweeps: many whole runs of one setup with one knob changed, and the search for the smallest
//! KV memory that meets a TTFT p95 target on top of them. The configurations come from the layer
//! above (formats/sweep.rs sets the knob by its preset path); this file only runs them.
//!
//! Each run is the ordinary single-threaded, deterministic [`Simulation`]. Natively the runs of a
//! sweep are spread over the cores with rayon (whole runs only, nothing shared between them);
//! results come back in point order, so a sweep's output is the same bit for bit on any number of
//! cores, and the same as running the points one by one (the wasm build does exactly that).

use super::config::{ConfigError, SimConfig};
use super::metrics::Report;
use super::sim::Simulation;

/// Most points in one sweep.
pub const MAX_SWEEP_POINTS: usize = 32;

/// The report metrics a sweep charts, one run's worth.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepMetrics {
    /// Time-weighted share of allocated KV memory that holds tokens (`kv.utilization_mean`).
    pub kv_utilization: f64,
    pub ttft_p95_ms: f64,
    pub tpot_p95_ms: f64,
    pub preemptions: u64,
    pub output_tokens_per_s: f64,
    /// Requests that arrived and were not finished at the end (running, waiting or swapped).
    pub unfinished: u32,
    /// Requests refused (they can never run under this setup).
    pub rejected: u32,
}

impl SweepMetrics {
    pub fn of(r: &Report) -> SweepMetrics {
        SweepMetrics {
            kv_utilization: r.kv.utilization_mean,
            ttft_p95_ms: r.latency_ms.ttft_p95,
            tpot_p95_ms: r.latency_ms.tpot_p95,
            preemptions: r.preemptions,
            output_tokens_per_s: r.output_tokens_per_s,
            unfinished: r.requests.running_at_end + r.requests.waiting_at_end + r.requests.swapped_at_end,
            rejected: r.requests.rejected,
        }
    }
}

/// One whole run; a configuration the engine refuses gives its error instead.
pub fn run_one(config: &SimConfig) -> Result<Report, ConfigError> {
    Ok(Simulation::new(config.clone())?.run_to_end())
}

/// Runs every configuration to the end, in parallel where the build has threads; the reports
/// are in the configurations' order.
pub fn run_all(configs: &[SimConfig]) -> Vec<Result<Report, ConfigError>> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        configs.par_iter().map(run_one).collect()
    }
    #[cfg(target_arch = "wasm32")]
    {
        configs.iter().map(run_one).collect()
    }
}

/// The answer of [`smallest_meeting`]: the first grid index that meets the target, with its
/// report, and the runs it took.
#[derive(Clone, Debug)]
pub struct Found {
    pub index: usize,
    pub report: Report,
    /// Grid indices run, in the order they were run.
    pub probes: Vec<usize>,
}

/// Why [`smallest_meeting`] found nothing.
#[derive(Clone, Debug)]
pub enum NotFound {
    /// The last grid point (the most generous) misses the target too; its report, or the
    /// engine's refusal.
    LastMisses(Box<Result<Report, ConfigError>>),
    /// The configuration for a grid point could not be built.
    Config(ConfigError),
}

/// Bisection over a grid of `len` points ordered from least to most generous: the smallest index
/// whose run `meets` the target, assuming that once a point meets it every later one does (more
/// KV memory never makes TTFT worse in this engine's model; a run the engine refuses counts as
/// missing). Runs `ceil(log2(len)) + 1` points at most. The invariant it keeps (`lo` misses,
/// `hi` meets) means the answer always meets and the point before it always misses, whatever
/// the shape of the curve.
pub fn smallest_meeting(
    len: usize,
    config_at: impl Fn(usize) -> Result<SimConfig, ConfigError>,
    meets: impl Fn(&Report) -> bool,
) -> Result<Found, NotFound> {
    let mut probes = Vec::new();
    let probe = |i: usize, probes: &mut Vec<usize>| -> Result<Result<Report, ConfigError>, NotFound> {
        probes.push(i);
        let config = config_at(i).map_err(NotFound::Config)?;
        Ok(run_one(&config))
    };
    let Some(last) = len.checked_sub(1) else {
        return Err(NotFound::Config(ConfigError::new("", "the search range holds no point")));
    };
    let mut best = match probe(last, &mut probes)? {
        Ok(r) if meets(&r) => (last, r),
        other => return Err(NotFound::LastMisses(Box::new(other))),
    };
    // Every index below `from` is known to miss (from > 0) and `best.0` meets.
    let mut from = 0;
    while best.0 > from {
        let mid = from + (best.0 - from) / 2;
        match probe(mid, &mut probes)? {
            Ok(r) if meets(&r) => best = (mid, r),
            _ => from = mid + 1,
        }
    }
    Ok(Found { index: best.0, report: best.1, probes })
}
