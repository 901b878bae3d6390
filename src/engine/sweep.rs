//! Sweeps: many whole runs of one setup with one knob changed, and the search for the smallest
//! KV memory that meets a TTFT p95 target on top of them (what meeting it means, judged over a
//! steady-state horizon, is `sweep/verdict.rs`). The configurations come from the layer above
//! (formats/sweep.rs sets the knob by its preset path); this file only runs them.
//!
//! Each run is the ordinary single-threaded, deterministic [`Simulation`]. Natively the runs of a
//! sweep are spread over the cores with rayon (whole runs only, nothing shared between them);
//! results come back in point order, so a sweep's output is the same bit for bit on any number of
//! cores, and the same as running the points one by one (the wasm build does exactly that).

mod verdict;

pub use verdict::{
    check_horizon_s, keeps_up, load_between, meets_ttft_p95, run_against_ttft_p95, steady_state_config, ttft_p95_miss,
    MAX_LOAD_AT_FULL, QUEUE_GROWTH_FACTOR, QUEUE_GROWTH_SLACK, SATURATED_SHARE, STEADY_STATE_FACTOR,
};

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
    #[cfg(feature = "fleet")]
    if config.replicas > 1 {
        return Ok(super::fleet::Fleet::new(config.clone())?.run_to_end());
    }
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
/// KV memory never makes TTFT worse in this engine's model; a run the engine refuses, or a point
/// whose configuration it refuses below one that meets, counts as missing). Runs `ceil(log2(len)) + 1` points at most. The invariant it keeps (`lo` misses,
/// `hi` meets) means the answer always meets and the point before it always misses, whatever
/// the shape of the curve. [`Bisection`] is the same search one run at a time.
pub fn smallest_meeting(
    len: usize,
    config_at: impl Fn(usize) -> Result<SimConfig, ConfigError>,
    run: impl Fn(&SimConfig) -> (Result<Report, ConfigError>, bool),
) -> Result<Found, NotFound> {
    let mut search = Bisection::new(len);
    while let Some(i) = search.next() {
        match config_at(i) {
            Ok(config) => {
                let (report, met) = run(&config);
                search.record(report, met);
            }
            Err(e) => search.refuse(e),
        }
    }
    search.into_result().expect("the search ends once no point is left to run")
}

/// The search of [`smallest_meeting`] as a state machine, so that a caller can run its points
/// one at a time (the page runs one per animation frame or so): [`Bisection::next`] names the
/// grid index to run, [`Bisection::record`] takes its outcome, until `next` gives None and
/// [`Bisection::result`] holds the answer. Running the points is the caller's; the order of the
/// points and the answer are this struct's alone, the same for every caller.
#[derive(Clone, Debug)]
pub struct Bisection {
    len: usize,
    /// Every index below `from` is known to miss.
    from: usize,
    /// The lowest index known to meet, with its report.
    best: Option<(usize, Report)>,
    probes: Vec<usize>,
    outcome: Option<Result<Found, NotFound>>,
}

impl Bisection {
    /// A search over `len` grid points, none run yet.
    pub fn new(len: usize) -> Bisection {
        let outcome =
            (len == 0).then(|| Err(NotFound::Config(ConfigError::new("", "the search range holds no point"))));
        Bisection { len, from: 0, best: None, probes: Vec::new(), outcome }
    }

    /// The grid index to run next; None once the search has its answer.
    pub fn next(&self) -> Option<usize> {
        if self.outcome.is_some() {
            return None;
        }
        match &self.best {
            None => Some(self.len - 1),
            Some((hi, _)) => Some(self.from + (hi - self.from) / 2),
        }
    }

    /// The outcome of the run at [`Bisection::next`]: its report or the engine's refusal, and
    /// whether it meets the target (a refused run never does).
    pub fn record(&mut self, run: Result<Report, ConfigError>, meets: bool) {
        let Some(i) = self.next() else { return };
        self.probes.push(i);
        let top = self.best.is_none();
        match run {
            Ok(r) if meets => self.best = Some((i, r)),
            run if top => self.outcome = Some(Err(NotFound::LastMisses(Box::new(run)))),
            _ => self.from = i + 1,
        }
        self.finish_if_known();
    }

    /// The configuration of the point at [`Bisection::next`] could not be built. At the top of
    /// the grid the search stops with that error (no point can be judged: a preset the search
    /// cannot set up, or a grid whose most generous point is refused); below a point that meets
    /// it counts as missing, like a run the engine refuses (too little KV memory for one
    /// max-length request, say).
    pub fn refuse(&mut self, e: ConfigError) {
        let Some(i) = self.next() else { return };
        self.probes.push(i);
        if self.best.is_none() {
            self.outcome = Some(Err(NotFound::Config(e)));
        } else {
            self.from = i + 1;
            self.finish_if_known();
        }
    }

    fn finish_if_known(&mut self) {
        let Some((hi, _)) = &self.best else { return };
        if *hi > self.from {
            return;
        }
        let (index, report) = self.best.take().expect("checked above");
        let probes = std::mem::take(&mut self.probes);
        self.outcome = Some(Ok(Found { index, report, probes }));
    }

    /// Points run so far (or tried, for a refused configuration).
    pub fn runs(&self) -> usize {
        match &self.outcome {
            Some(Ok(f)) => f.probes.len(),
            _ => self.probes.len(),
        }
    }

    /// The most points the whole search runs: `ceil(log2(len)) + 1`.
    pub fn max_runs(&self) -> usize {
        match self.len {
            0 => 0,
            n => (usize::BITS - (n - 1).leading_zeros()) as usize + 1,
        }
    }

    /// The answer, once [`Bisection::next`] gives None.
    pub fn result(&self) -> Option<&Result<Found, NotFound>> {
        self.outcome.as_ref()
    }

    /// The answer, once [`Bisection::next`] gives None.
    pub fn into_result(self) -> Option<Result<Found, NotFound>> {
        self.outcome
    }
}
