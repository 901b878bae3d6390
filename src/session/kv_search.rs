//! The page's smallest-KV search: for the lab's preset and a TTFT p95 target, the smallest
//! `kv_memory_gib` that meets it, answered once per allocator. Each answer is the one
//! `kvlab sweep --min-kv-for-ttft-p95-ms` gives for that allocator's preset (the preset itself
//! for its own allocator, the other with the defaults a sweep gives it): the grid, the
//! configurations and the allocator variants are formats/sweep.rs's, the order of the runs and
//! the answer engine/sweep.rs's `Bisection`, what meets the target `meets_ttft_p95`. This file
//! only keeps the two searches' places so `App` can run them a frame budget at a time
//! (sweep_view.rs draws them; no DOM here).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::engine::config::ConfigError;
use crate::engine::numbers::show_number;
use crate::engine::sweep::{check_horizon_s, run_against_ttft_p95, Bisection, Found, NotFound};
use crate::formats::sweep::{
    allocator_variants, check_kv_searchable, config_of, default_kv_range, kv_grid, parse_kv_range, with_kv_memory,
    KvRangeNames, ALLOCATORS, KV_STEP_GIB,
};
use crate::missions::mission::Mission;

use super::control_edit::control_unlocked;
use super::missions::knob_list;

/// The knob the smallest-KV search sets.
pub const SEARCH_KNOB: &str = "kv_memory_gib";

/// The target field, as messages name it.
pub const TARGET_FIELD: &str = "TTFT p95 target";

/// The range and step fields, as messages name them.
pub const PAGE_KV_NAMES: KvRangeNames = KvRangeNames { range: "KV range (GiB)", step: "Step (GiB)", example: "1:80" };

/// The search's fields as the page holds them: texts, the range and step empty for the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchFields {
    pub target: String,
    pub range: String,
    pub step: String,
}

/// The field a refusal is about (the page marks it invalid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchField {
    Target,
    Range,
    Step,
}

impl SearchField {
    /// The field's element id.
    pub fn id(self) -> &'static str {
        match self {
            SearchField::Target => "sweep-search-target",
            SearchField::Range => "sweep-search-range",
            SearchField::Step => "sweep-search-step",
        }
    }
}

/// Why a search was not started: the words, and the field they are about (None: the preset or
/// the mission).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub field: Option<SearchField>,
    pub message: String,
}

impl Refusal {
    pub fn general(message: impl Into<String>) -> Refusal {
        Refusal { field: None, message: message.into() }
    }
}

/// Reads the range and step fields (empty: the CLI's defaults, one step up to the GPUs'
/// memory in 0.25 GiB steps) into the grid and its step.
fn grid_of(config: &crate::engine::SimConfig, fields: &SearchFields) -> Result<(Vec<f64>, f64), Refusal> {
    let refuse = |field, e: ConfigError| Refusal { field: Some(field), message: e.to_string() };
    let step = match fields.step.trim() {
        "" => KV_STEP_GIB,
        t => t.parse::<f64>().map_err(|_| {
            let why = format!("\"{t}\" is not a size; give GiB above 0, e.g. 0.25");
            refuse(SearchField::Step, ConfigError::new(PAGE_KV_NAMES.step, why))
        })?,
    };
    let (lo, hi) = match fields.range.trim() {
        "" => default_kv_range(config, step),
        t => parse_kv_range(t, &PAGE_KV_NAMES).map_err(|e| refuse(SearchField::Range, e))?,
    };
    let grid = kv_grid(lo, hi, step, &PAGE_KV_NAMES).map_err(|e| {
        let field = if e.field == PAGE_KV_NAMES.step { SearchField::Step } else { SearchField::Range };
        refuse(field, e)
    })?;
    Ok((grid, step))
}

/// Reads the target field: milliseconds above 0.
pub fn parse_target(text: &str) -> Result<f64, String> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms > 0.0 => Ok(ms),
        _ if t.is_empty() => Err(format!("{TARGET_FIELD} is empty; give milliseconds above 0, e.g. 2000")),
        _ => Err(format!("{TARGET_FIELD}: \"{t}\" is not a time; give milliseconds above 0, e.g. 2000")),
    }
}

/// One allocator's answer, as `kvlab.kvSearchResults()` gives it (the keys of
/// `kvlab sweep --min-kv-for-ttft-p95-ms --json` where they say the same thing).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Answer {
    /// Not finished: running, or waiting for the other allocator's search.
    Searching { runs: usize },
    /// Cancelled before it finished.
    Cancelled { runs: usize },
    /// The smallest KV size on the grid that meets the target; `misses_at_gib` is the grid point
    /// below it (None: the lowest point tried already meets it) and `misses_because` why it misses.
    /// `unfinished` and `misses_unfinished`: requests still running, waiting or swapped at the
    /// end of the run at `kv_memory_gib` and at `misses_at_gib`. `checked_over_s` is how long
    /// each point's run went to judge it (`engine::sweep`'s steady-state horizon: 180 s for a
    /// 60 s Poisson preset).
    Met {
        kv_memory_gib: f64,
        ttft_p95_ms: f64,
        unfinished: u32,
        misses_at_gib: Option<f64>,
        misses_because: Option<String>,
        misses_unfinished: Option<u32>,
        runs: usize,
        checked_over_s: f64,
    },
    /// Even the top of the grid misses: its TTFT p95 and unfinished requests (None when the
    /// engine refused the run) and why.
    NotMet {
        top_gib: f64,
        ttft_p95_ms: Option<f64>,
        unfinished: Option<u32>,
        why: String,
        runs: usize,
        checked_over_s: f64,
    },
    /// The search could not set up its most generous point; the engine's words.
    Refused { error: String, runs: usize },
}

/// One allocator's search.
struct Side {
    preset: Value,
    search: Bisection,
    /// Why each grid point run so far missed the target (`engine::sweep::ttft_p95_miss`).
    misses: BTreeMap<usize, String>,
    /// Requests unfinished at the end of each grid point run so far.
    unfinished: BTreeMap<usize, u32>,
}

/// Requests still running, waiting or swapped at the end of a run (whole requests).
pub fn unfinished(r: &crate::engine::Report) -> u32 {
    r.requests.running_at_end + r.requests.waiting_at_end + r.requests.swapped_at_end
}

/// A search in progress or finished: both allocators, one after the other.
pub struct KvSearchJob {
    pub target_ms: f64,
    /// The preset the search was planned on, every run's setup but the KV memory.
    pub setup: Value,
    /// How long each run goes to judge a point, seconds (`engine::sweep::check_horizon_s`).
    pub checked_over_s: f64,
    grid: Vec<f64>,
    step_gib: f64,
    sides: [Side; 2],
    pub cancelled: bool,
}

impl KvSearchJob {
    /// Plans the search on `preset` for the fields' texts; errors name the field.
    pub fn plan(preset: &Value, fields: &SearchFields) -> Result<KvSearchJob, Refusal> {
        let target_ms =
            parse_target(&fields.target).map_err(|message| Refusal { field: Some(SearchField::Target), message })?;
        let config = config_of(preset).map_err(|e| Refusal::general(e.to_string()))?;
        check_kv_searchable(preset).map_err(|e| Refusal::general(e.to_string()))?;
        let (grid, step_gib) = grid_of(&config, fields)?;
        let sides = allocator_variants(preset).map(|preset| Side {
            preset,
            search: Bisection::new(grid.len()),
            misses: BTreeMap::new(),
            unfinished: BTreeMap::new(),
        });
        let checked_over_s = check_horizon_s(&config);
        Ok(KvSearchJob { target_ms, setup: preset.clone(), checked_over_s, grid, step_gib, sides, cancelled: false })
    }

    /// Plans the search on the lab's preset, refused when the mission `m` locks the KV memory
    /// (the same check as the sweep's knobs).
    pub fn plan_for(preset: &Value, m: Option<&Mission>, fields: &SearchFields) -> Result<KvSearchJob, Refusal> {
        if let Some(m) = m.filter(|m| !control_unlocked(m.knobs(), SEARCH_KNOB)) {
            return Err(Refusal::general(format!(
                "{SEARCH_KNOB} is locked in mission {}, and the KV search sets it; change one of the knobs it leaves free ({})",
                m.number(),
                knob_list(m)
            )));
        }
        KvSearchJob::plan(preset, fields)
    }

    /// The KV sizes searched, GiB: (lowest, highest, step).
    pub fn grid(&self) -> (f64, f64, f64) {
        (self.grid[0], self.grid[self.grid.len() - 1], self.step_gib)
    }

    /// Runs done, both allocators.
    pub fn runs(&self) -> usize {
        self.sides.iter().map(|s| s.search.runs()).sum()
    }

    /// The most runs the two searches take.
    pub fn max_runs(&self) -> usize {
        self.sides.iter().map(|s| s.search.max_runs()).sum()
    }

    pub fn finished(&self) -> bool {
        self.sides.iter().all(|s| s.search.next().is_none())
    }

    pub fn running(&self) -> bool {
        !self.finished() && !self.cancelled
    }

    /// Runs whole runs until `budget_ms` of `clock` has passed (at least one run); true while
    /// runs remain.
    pub fn step(&mut self, budget_ms: f64, clock: &dyn Fn() -> f64) -> bool {
        let start = clock();
        while self.running() {
            self.run_next();
            if clock() - start >= budget_ms {
                break;
            }
        }
        self.running()
    }

    /// The next run of the first allocator whose search is not finished.
    fn run_next(&mut self) {
        let target = self.target_ms;
        let Some((side, i)) = self.sides.iter_mut().find_map(|s| s.search.next().map(|i| (s, i))) else { return };
        match with_kv_memory(&side.preset, self.grid[i]) {
            Ok(config) => {
                let (run, miss) = run_against_ttft_p95(&config, target);
                if let Ok(r) = &run {
                    side.unfinished.insert(i, unfinished(r));
                }
                side.search.record(run, miss.is_none());
                if let Some(why) = miss {
                    side.misses.insert(i, why);
                }
            }
            Err(e) => side.search.refuse(e),
        }
    }

    /// Each allocator's answer so far, in [`ALLOCATORS`] order.
    pub fn answers(&self) -> [Answer; 2] {
        [0, 1].map(|a| self.answer(&self.sides[a]))
    }

    fn answer(&self, side: &Side) -> Answer {
        let runs = side.search.runs();
        match side.search.result() {
            None if self.cancelled => Answer::Cancelled { runs },
            None => Answer::Searching { runs },
            Some(Ok(f)) => self.met(side, f),
            Some(Err(NotFound::LastMisses(last))) => {
                let top = self.grid.len() - 1;
                let why = side.misses.get(&top).cloned().unwrap_or_default();
                Answer::NotMet {
                    top_gib: self.grid[top],
                    ttft_p95_ms: last.as_ref().as_ref().ok().map(|r| r.latency_ms.ttft_p95),
                    unfinished: side.unfinished.get(&top).copied(),
                    why: super::advice::lab_words(&why),
                    runs,
                    checked_over_s: self.checked_over_s,
                }
            }
            Some(Err(NotFound::Config(e))) => Answer::Refused { error: super::advice::lab_words(&e.to_string()), runs },
        }
    }

    fn met(&self, side: &Side, f: &Found) -> Answer {
        let below = f.index.checked_sub(1);
        Answer::Met {
            kv_memory_gib: self.grid[f.index],
            ttft_p95_ms: f.report.latency_ms.ttft_p95,
            unfinished: unfinished(&f.report),
            misses_at_gib: below.map(|i| self.grid[i]),
            misses_because: below.and_then(|i| side.misses.get(&i).map(|w| super::advice::lab_words(w))),
            misses_unfinished: below.and_then(|i| side.unfinished.get(&i).copied()),
            runs: f.probes.len(),
            checked_over_s: self.checked_over_s,
        }
    }
}

/// One allocator's answer as the panel writes it ("paged: 8.75 GiB meets TTFT p95 ≤ 2000 ms …").
pub fn answer_text(allocator: &str, target_ms: f64, answer: &Answer) -> String {
    match answer {
        Answer::Searching { runs: 0 } => format!("{allocator}: waiting…"),
        Answer::Searching { runs } => format!("{allocator}: searching… {runs} {}", plural(*runs, "run")),
        Answer::Cancelled { runs } => format!("{allocator}: cancelled after {runs} {}.", plural(*runs, "run")),
        Answer::Met {
            kv_memory_gib,
            ttft_p95_ms,
            unfinished,
            misses_at_gib: Some(below),
            misses_because,
            misses_unfinished,
            checked_over_s,
            ..
        } => {
            let why: Vec<String> = misses_because.iter().cloned().chain(misses_unfinished.map(unfinished_text)).collect();
            format!(
                "{allocator}: {kv_memory_gib} GiB meets TTFT p95 ≤ {} ms and keeps up over {} s of traffic (p95 {} ms, {}); {below} GiB misses it{}.",
                ms(target_ms),
                show_number(*checked_over_s),
                ms(*ttft_p95_ms),
                unfinished_text(*unfinished),
                if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) }
            )
        }
        Answer::Met { kv_memory_gib, ttft_p95_ms, unfinished, misses_at_gib: None, checked_over_s, .. } => format!(
            "{allocator}: met already at the lowest KV tried, {kv_memory_gib} GiB (p95 {} ms ≤ {} ms over {} s of traffic, {}).",
            ms(*ttft_p95_ms),
            ms(target_ms),
            show_number(*checked_over_s),
            unfinished_text(*unfinished)
        ),
        Answer::NotMet { top_gib, why, unfinished, .. } => {
            let count = unfinished.map_or(String::new(), |n| format!("; {}", unfinished_text(n)));
            format!("{allocator}: not met even at {top_gib} GiB ({why}{count}); raise the target or lower the traffic.")
        }
        Answer::Refused { error, .. } => {
            format!("{allocator}: cannot search: {}.", error.trim_end().trim_end_matches('.'))
        }
    }
}

/// Milliseconds in whole numbers with thousands separators ("153,847").
fn ms(v: f64) -> String {
    crate::engine::plan::group_thousands(v.max(0.0).round() as u64)
}

/// "201 requests unfinished at the end", "none unfinished at the end".
pub fn unfinished_text(n: u32) -> String {
    match n {
        0 => "none unfinished at the end".into(),
        1 => "1 request unfinished at the end".into(),
        n => format!("{} requests unfinished at the end", crate::engine::plan::group_thousands(u64::from(n))),
    }
}

/// `word`, or `words` unless `n` is 1.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// The answers as `kvlab.kvSearchResults()` gives them: `{target_ttft_p95_ms, grid: {lo_gib,
/// hi_gib, step_gib}, checked_over_s, contiguous, paged, runs, max_runs, finished, cancelled}`.
pub fn results_json(job: &KvSearchJob) -> Value {
    let (lo, hi, step) = job.grid();
    let [contiguous, paged] = job.answers();
    debug_assert_eq!(ALLOCATORS, ["contiguous", "paged"]);
    serde_json::json!({
        "target_ttft_p95_ms": job.target_ms,
        "grid": { "lo_gib": lo, "hi_gib": hi, "step_gib": step },
        "checked_over_s": job.checked_over_s,
        "contiguous": contiguous,
        "paged": paged,
        "runs": job.runs(),
        "max_runs": job.max_runs(),
        "finished": job.finished(),
        "cancelled": job.cancelled,
        "setup": job.setup,
    })
}
