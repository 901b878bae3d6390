//! The page's sweep: one knob of the lab's preset set to each of a list of values, every point
//! run to the end with both allocators, as `kvlab sweep` does. The plan (the knob, its values,
//! one engine configuration per point and allocator) is formats/sweep.rs's; each run is
//! engine/sweep.rs's `run_one`. This file only keeps the job's place so the runs can be spread
//! over animation frames (sweep_view.rs draws it; app.rs steps it a time budget per frame).

use serde_json::Value;

use crate::engine::sweep::{run_one, SweepMetrics};
use crate::formats::sweep::{knob_applies, plan, Knob, PlannedPoint, ALLOCATORS};
use crate::formats::sweep_results::{sweep_csv, sweep_json, SweepPoint};

use crate::missions::mission::Mission;

use super::control_edit::control_unlocked;
use super::kv_search::{KvSearchJob, Refusal};
use super::missions::knob_list;

/// The knobs the panel offers: (preset path, label).
pub const KNOBS: &[(&str, &str)] = &[
    ("allocator.block_size", "Block size (paged)"),
    ("kv_memory_gib", "KV memory (GiB)"),
    ("workload.arrival.rate_per_s", "Request rate (/s)"),
    ("workload.arrival.max_concurrency", "Clients (max concurrency)"),
    ("scheduler.max_num_seqs", "max_num_seqs"),
    ("scheduler.max_num_batched_tokens", "max_num_batched_tokens"),
    ("scheduler.engine", "Engine version"),
    // The host tier's size, on the paged pool (the full lab's: its module has the tier).
    #[cfg(feature = "kv-offload")]
    ("kv_offload.cpu_gib", "Host KV tier (GiB)"),
    // Replicas behind the preset's router (round robin unless it says otherwise): the full
    // lab's, whose module runs a fleet (docs/ROUTING.md).
    #[cfg(feature = "fleet")]
    ("replicas", "Replicas"),
];

/// The metrics the chart can show: (key, label).
pub const METRICS: &[(&str, &str)] = &[
    ("kv_utilization", "KV utilisation (%)"),
    ("ttft_p95_ms", "TTFT p95 (ms)"),
    ("tpot_p95_ms", "TPOT p95 (ms)"),
    ("preemptions", "Preemptions"),
    ("output_tokens_per_s", "Output tokens/s"),
    ("unfinished", "Unfinished at the end (requests)"),
    ("rejected", "Rejected (requests)"),
];

/// `metric` (a key of [`METRICS`]) of one run, as the chart plots it.
pub fn metric_value(m: &SweepMetrics, metric: &str) -> f64 {
    match metric {
        "kv_utilization" => m.kv_utilization * 100.0,
        "ttft_p95_ms" => m.ttft_p95_ms,
        "tpot_p95_ms" => m.tpot_p95_ms,
        "preemptions" => m.preemptions as f64,
        "unfinished" => f64::from(m.unfinished),
        "rejected" => f64::from(m.rejected),
        _ => m.output_tokens_per_s,
    }
}

/// A sweep in progress or finished.
pub struct SweepJob {
    pub knob: Knob,
    /// The preset the sweep was planned on, every point's setup but the knob.
    pub setup: Value,
    points: Vec<PlannedPoint>,
    /// The runs so far, in point order then [`ALLOCATORS`] order: metrics, or why the engine
    /// refused the run.
    outcomes: Vec<Result<SweepMetrics, String>>,
    pub cancelled: bool,
}

impl SweepJob {
    /// Plans the sweep of `knob` over `values` (`A,B,C` or `LO:HI:N`, as the CLI's `--values`
    /// and `--range`) on `preset`; errors name the field.
    pub fn plan(preset: &Value, knob: &str, values: &str) -> Result<SweepJob, String> {
        let knob = Knob::parse(knob).map_err(|e| e.to_string())?;
        let values = values.trim();
        let values = if values.contains(':') { knob.range(values) } else { knob.values(values) };
        let values =
            values.map_err(|e| e.to_string().replace("--values", "Sweep values").replace("--range", "Sweep range"))?;
        let points = plan(preset, &knob, &values).map_err(|e| e.to_string())?;
        Ok(SweepJob { knob, setup: preset.clone(), points, outcomes: Vec::new(), cancelled: false })
    }

    /// Plans a sweep on the lab's preset, refusing a knob the mission `m` locks.
    pub fn plan_for(preset: &Value, m: Option<&Mission>, knob: &str, values: &str) -> Result<SweepJob, String> {
        if let Some(m) = m.filter(|m| !control_unlocked(m.knobs(), knob)) {
            return Err(format!(
                "{knob} is locked in mission {}; sweep one of the knobs it leaves free ({})",
                m.number(),
                knob_list(m)
            ));
        }
        SweepJob::plan(preset, knob, values)
    }

    /// Whether the panel offers `knob` on `preset`: the mission `m` leaves it free and the
    /// preset has a place for it (no request rate on a trace's arrivals).
    pub fn offered(preset: &Value, m: Option<&Mission>, knob: &str) -> bool {
        m.is_none_or(|m| control_unlocked(m.knobs(), knob)) && Knob::parse(knob).is_ok_and(|k| knob_applies(preset, &k))
    }

    /// The knob the panel starts on for `preset`: the first one offered that changes the
    /// preset's own run (a block size changes nothing in a contiguous preset's).
    pub fn first_knob(preset: &Value, m: Option<&Mission>) -> Option<&'static str> {
        let contiguous = preset.pointer("/allocator/kind").and_then(Value::as_str) == Some("contiguous");
        let offered = || KNOBS.iter().map(|(p, _)| *p).filter(|p| Self::offered(preset, m, p));
        offered().find(|p| !(contiguous && *p == "allocator.block_size")).or_else(|| offered().next())
    }

    /// Points in the sweep.
    pub fn total_points(&self) -> usize {
        self.points.len()
    }

    /// Points whose two runs are done.
    pub fn done_points(&self) -> usize {
        self.outcomes.len() / ALLOCATORS.len()
    }

    pub fn finished(&self) -> bool {
        self.outcomes.len() == self.points.len() * ALLOCATORS.len()
    }

    pub fn running(&self) -> bool {
        !self.finished() && !self.cancelled
    }

    /// Runs whole runs until `budget_ms` of `clock` has passed (at least one run); true while
    /// runs remain.
    pub fn step(&mut self, budget_ms: f64, clock: &dyn Fn() -> f64) -> bool {
        let start = clock();
        while self.running() {
            let i = self.outcomes.len();
            let same = self.knob.repeats_first(i / 2, i % 2);
            let outcome = if same { self.outcomes[i % 2].clone() } else { self.run(i) };
            self.outcomes.push(outcome);
            if !same && clock() - start >= budget_ms {
                break;
            }
        }
        self.running()
    }

    /// Runs the `i`-th run (point `i / 2`, allocator `i % 2`).
    fn run(&self, i: usize) -> Result<SweepMetrics, String> {
        match &self.points[i / 2].configs[i % 2] {
            Ok(config) => run_one(config).map(|r| SweepMetrics::of(&r)).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The finished points, in order.
    pub fn points(&self) -> Vec<SweepPoint<'_>> {
        self.points.iter().zip(self.outcomes.chunks_exact(2)).map(|(p, o)| (&p.value, [&o[0], &o[1]])).collect()
    }

    /// The points so far as `kvlab sweep --json` writes them, with the job's progress and
    /// its setup: `{knob, points, total, finished, cancelled, run_s, setup}`
    /// (`kvlab.sweepResults()`, the panel's JSON download). `run_s`: how long each point ran.
    pub fn results_json(&self) -> Value {
        let mut doc = sweep_json(&self.knob.path(), &self.points());
        doc["total"] = self.total_points().into();
        doc["finished"] = self.finished().into();
        doc["cancelled"] = self.cancelled.into();
        doc["run_s"] = self.run_s().into();
        doc["setup"] = self.setup.clone();
        doc
    }

    /// How long each point runs, seconds: the preset's `duration_s` (a sweep judges no steady
    /// state; the smallest-KV search does, over longer runs).
    pub fn run_s(&self) -> f64 {
        self.setup.get("duration_s").and_then(Value::as_f64).unwrap_or(crate::engine::SimConfig::default().duration_s)
    }

    /// The points so far as `kvlab sweep --csv` writes them (the panel's CSV download).
    pub fn csv(&self) -> String {
        sweep_csv(&self.points())
    }

    /// The allocator the knob leaves as the preset has it, if any (block size: contiguous).
    pub fn unchanged_allocator(&self) -> Option<&'static str> {
        ALLOCATORS.into_iter().find(|a| !self.knob.applies_to(a))
    }
}

/// The panel's state, owned by `App`: the sweep and the smallest-KV search (kv_search.rs), if
/// started, and the metric charted.
pub struct SweepPanel {
    pub job: Option<SweepJob>,
    pub metric: String,
    /// `performance.now()` when the job started and when it finished (the progress line).
    pub started_ms: f64,
    pub took_ms: Option<f64>,
    pub search: Option<KvSearchJob>,
    /// `performance.now()` when the search started and when it finished.
    pub search_started_ms: f64,
    pub search_took_ms: Option<f64>,
    /// Why the last sweep was not started (shown in the progress line); None once one starts.
    pub sweep_error: Option<String>,
    /// Why the last search was not started (shown under the fields, the field it names marked
    /// invalid); None once one starts.
    pub search_error: Option<Refusal>,
}

impl Default for SweepPanel {
    fn default() -> SweepPanel {
        SweepPanel {
            job: None,
            metric: METRICS[0].0.into(),
            started_ms: 0.0,
            took_ms: None,
            search: None,
            search_started_ms: 0.0,
            search_took_ms: None,
            search_error: None,
            sweep_error: None,
        }
    }
}
