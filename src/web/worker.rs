//! The long run's engine side, driven by `www/worker.js` inside a module Web Worker (no DOM:
//! a worker has none): [`DayRun`] holds one `Simulation`, advances it a slice of simulated time
//! per call so the worker can post progress between slices, and hands back the report JSON,
//! the bounded series (as CSV, and downsampled for the chart) and 60 s windows of its trace for
//! the interactive lab. The page's side is `day_run.rs`.

use wasm_bindgen::prelude::*;

use crate::engine::workload::{secs_to_us, Arrival};
use crate::engine::Simulation;
use crate::formats::preset::parse_preset_dto;

use crate::session::trace_file;

/// One run to the end, a slice at a time (`window.kvlab` is not there in a worker).
#[wasm_bindgen]
pub struct DayRun {
    sim: Simulation,
    summary: String,
}

fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

#[wasm_bindgen]
impl DayRun {
    /// A run of the preset `base` (JSON) replaying the trace `text`; with `text` empty, of
    /// `base` as it is. Errors say where the trace or the preset is wrong.
    #[wasm_bindgen(constructor)]
    pub fn new(base: &str, text: &str) -> Result<DayRun, JsError> {
        let dto = parse_preset_dto(base).map_err(js_err)?;
        let (dto, summary) = if text.is_empty() {
            let n = trace_file::expected_requests(&dto).map_err(js_err)?;
            let summary = format!(
                "{} expected requests over {} s",
                crate::engine::plan::group_thousands(n),
                crate::engine::plan::group_thousands(dto.duration_s.ceil() as u64)
            );
            (dto, summary)
        } else {
            let load = trace_file::trace_preset(&dto, text).map_err(js_err)?;
            let summary = load.summary();
            (load.preset, summary)
        };
        let config = dto.to_config().map_err(js_err)?;
        // Its GPU's kernel tables could not be had (`kernelTablesWanted`): the summary says so.
        let summary = match crate::session::kernel_clock::clock_note(&dto, &config) {
            Some(note) => format!("{summary}. {}", note.text),
            None => summary,
        };
        let sim = Simulation::new(config).map_err(js_err)?;
        Ok(DayRun { sim, summary })
    }

    /// The GPU whose kernel tables a run of the preset `base` (JSON) needs and this worker has
    /// not fetched yet (`clock: "kernels"`), or undefined: `www/worker.js` fetches
    /// `kernels/<gpu>.json` and hands it to [`DayRun::kernel_tables_fetched`] first.
    #[wasm_bindgen(js_name = kernelTablesWanted)]
    pub fn kernel_tables_wanted(base: &str) -> Option<String> {
        let dto = parse_preset_dto(base).ok()?;
        let config = dto.to_config().ok()?;
        crate::session::kernel_clock::clock_note(&dto, &config)?.waiting_for
    }

    /// `kernels/<gpu>.json`'s text, or (with `failed`) why it could not be fetched: the runs
    /// this worker builds from now on use the tables, or say they are on the roofline.
    #[wasm_bindgen(js_name = kernelTablesFetched)]
    pub fn kernel_tables_fetched(gpu: &str, text: &str, failed: bool) {
        if failed {
            crate::formats::kernel_tables::fetch_failed(gpu, text);
        } else {
            crate::formats::kernel_tables::fetched(gpu, text);
        }
    }

    /// What the run replays ("kvlab CSV trace: 200,000 requests over 17,241 s").
    #[wasm_bindgen(getter)]
    pub fn summary(&self) -> String {
        self.summary.clone()
    }

    /// Simulates `seconds` more (to the end at most); true once the run is at its end.
    pub fn advance(&mut self, seconds: f64) -> bool {
        let to = self.sim.now_us().saturating_add(secs_to_us(seconds.max(0.001)));
        self.sim.run_until(to);
        self.sim.is_done()
    }

    #[wasm_bindgen(getter, js_name = nowS)]
    pub fn now_s(&self) -> f64 {
        self.sim.now_us() as f64 / 1e6
    }

    /// The run's length: `duration_s`; with `until_all_finished`, its end once it is done, and
    /// until then the time simulated so far or `duration_s`, whichever is later.
    #[wasm_bindgen(getter, js_name = durationS)]
    pub fn duration_s(&self) -> f64 {
        crate::session::run::shown_end_us(&self.sim) as f64 / 1e6
    }

    /// Requests arrived so far.
    #[wasm_bindgen(getter)]
    pub fn arrived(&self) -> u32 {
        self.sim.groups().len() as u32
    }

    /// Requests the run will bring.
    #[wasm_bindgen(getter, js_name = totalRequests)]
    pub fn total_requests(&self) -> u32 {
        self.sim.requests().len() as u32
    }

    #[wasm_bindgen(getter, js_name = capacityTokens)]
    pub fn capacity_tokens(&self) -> f64 {
        self.sim.report().capacity_tokens as f64
    }

    /// The report (docs/REPORT.md) as JSON text.
    #[wasm_bindgen(js_name = reportJson)]
    pub fn report_json(&self) -> String {
        crate::formats::report::report_json(&self.sim.report())
    }

    /// The bounded series as the Export menu's CSV.
    #[wasm_bindgen(js_name = seriesCsv)]
    pub fn series_csv(&self) -> String {
        crate::render::series_csv(&[("run", self.sim.series())])
    }

    /// The series downsampled to `buckets` points by the chart's rule, flat: `t_us,
    /// allocated_tokens, live_tokens, running, waiting, swapped, preemptions` per point.
    #[wasm_bindgen(js_name = chartPoints)]
    pub fn chart_points(&self, buckets: usize) -> Vec<f64> {
        let end = crate::session::run::shown_end_us(&self.sim);
        let s = crate::render::downsample(self.sim.series(), end, buckets.max(2));
        s.iter()
            .flat_map(|p| {
                [
                    p.t_us as f64,
                    p.allocated_tokens as f64,
                    p.live_tokens as f64,
                    f64::from(p.running),
                    f64::from(p.waiting),
                    f64::from(p.swapped),
                    f64::from(p.preemptions),
                ]
            })
            .collect()
    }

    /// The start of the busiest `len_s` window of arrivals, whole seconds.
    #[wasm_bindgen(js_name = busiestWindowS)]
    pub fn busiest_window_s(&self, len_s: f64) -> f64 {
        // The arrivals so far (a closed loop's are known only once they happen), then those the
        // workload knows up front.
        let arrived = self.sim.groups().len();
        let known_ahead = !matches!(self.sim.config().workload.arrival, Arrival::Concurrency { .. });
        let ahead = if known_ahead { &self.sim.requests()[arrived..] } else { &[] };
        let arrivals: Vec<u64> =
            self.sim.groups().iter().map(|g| g.arrival_us).chain(ahead.iter().map(|r| r.arrival_us)).collect();
        trace_file::busiest_window_s(&arrivals, len_s)
    }

    /// The trace's arrivals in `[start_s, start_s + len_s)` as kvlab CSV from 0; empty when the
    /// run is not a trace.
    #[wasm_bindgen(js_name = windowCsv)]
    pub fn window_csv(&self, start_s: f64, len_s: f64) -> String {
        match &self.sim.config().workload.arrival {
            Arrival::Trace { rows, .. } => trace_file::window_csv(rows, start_s, len_s),
            Arrival::Poisson { .. } | Arrival::Concurrency { .. } => String::new(),
        }
    }
}
