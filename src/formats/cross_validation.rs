//! Leave-one-out error of the clock (`kvlab validate --cross`): every real run predicted with
//! constants it had no part in, so the figure says how well the clock predicts a run it has not
//! seen, not how well it can be made to fit one.
//!
//! - A run marked "fit" is predicted with its GPU's constants fitted on the *other* fit runs of
//!   that GPU (a batch-1 fit's context points are one run and leave together). Where it is the
//!   GPU's only fit run, the GPU is treated as one without runs: the constants of the sibling the
//!   clock would borrow from (`clock::clock_for`), fitted on that sibling's runs.
//! - A run marked "held out" is predicted with the constants fitted on every fit run of its GPU:
//!   held-out runs are never fitted on, in this or any other prediction.
//! - "Its GPU's fit runs" are those of its vLLM engine generation on the kernel clock, whose host
//!   costs are fitted per generation (v0's cost a prompt); the roofline's constants are the v1
//!   engine's, fitted on v1 runs only, and predict a v0 run as they would any held-out one.
//!
//! Every fit starts from the same neutral prior (`PRIOR`), not from the committed constants, so
//! no prediction inherits a fit that saw the run. A GPU with no fit run at all (the H200) is
//! predicted from its sibling's fit runs, as the clock borrows its constants. Deterministic: one
//! data set gives one table, bit for bit.

use std::collections::BTreeMap;

use super::validation::CaseResult;
use crate::engine::clock::{sibling_of, ClockConstants};
use crate::engine::clock_fit::{fit, FitCase};
use crate::engine::fidelity::{compare, median_abs_error_pct, simulate, Figure, FigureError};
use crate::engine::{EngineVersion, SimConfig};

/// Where every leave-one-out fit starts: datasheet-reasonable efficiencies and host costs of
/// the order vLLM's v1 engine shows (a few hundred µs a step, ~10 µs a sequence).
pub const PRIOR: ClockConstants = ClockConstants {
    bandwidth_efficiency: 0.85,
    gemm_efficiency: 0.6,
    gemm_ramp_tokens: 64.0,
    attention_efficiency: 0.4,
    fixed_step_us: 300.0,
    per_seq_us: 10.0,
    per_prefill_us: 0.0,
    eager_launch_us_per_layer: 40.0,
};

/// The figure families the headline is given for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Ttft,
    Tpot,
    Itl,
    E2e,
    Throughput,
}

impl Family {
    pub const ALL: [Family; 5] = [Family::Ttft, Family::Tpot, Family::Itl, Family::E2e, Family::Throughput];

    pub fn of(figure: Figure) -> Family {
        use Figure::*;
        match figure {
            TtftMean | TtftP50 | TtftP99 => Family::Ttft,
            TpotMean | TpotP50 | TpotP99 => Family::Tpot,
            ItlMean | ItlP50 | ItlP99 => Family::Itl,
            E2eMean | E2eP50 | E2eP99 => Family::E2e,
            RequestsPerS | OutputTokensPerS | DurationS => Family::Throughput,
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Family::Ttft => "ttft",
            Family::Tpot => "tpot",
            Family::Itl => "itl",
            Family::E2e => "e2e",
            Family::Throughput => "throughput",
        }
    }
}

/// One case predicted without itself.
pub struct CrossResult<'a> {
    pub result: &'a CaseResult,
    /// What the constants were fitted on: "the other fit runs of <gpu>", "every fit run of
    /// <gpu>", or the sibling's runs.
    pub constants_from: String,
    pub errors: Vec<FigureError>,
    /// No fit of this clock is made on the run: held out ("fit_host" runs are on the roofline).
    pub held_out: bool,
}

/// Which runs predict `r`: the fit cases of its GPU and generation but `r`'s own run, a
/// description, and whether `r` is one of the runs left out (it would train the fit otherwise).
fn training<'a>(results: &'a [CaseResult], r: &CaseResult) -> (Vec<FitCase<'a>>, String, bool) {
    let gpu = r.case.gpu.as_str();
    let kernels = r.case.config.runs_on_kernels();
    // The engine generation whose fit runs predict it: on the kernel clock its own (host costs
    // are fitted per generation: vLLM's v0 engine spends milliseconds a prompt in Python); the
    // roofline's constants are the v1 engine's, whatever the run's.
    let engine = if kernels { r.case.config.scheduler.engine } else { EngineVersion::V1 };
    let take = |g: &str, leave: Option<&str>| -> Vec<FitCase<'a>> {
        results
            .iter()
            .filter(|o| {
                o.case.role.fits(kernels)
                    && o.case.gpu == g
                    && o.case.config.scheduler.engine == engine
                    && Some(o.case.run.as_str()) != leave
            })
            .map(|o| FitCase { config: &o.case.config, real: &o.case.real, single_request: o.case.single_request })
            .collect()
    };
    let on = match engine {
        EngineVersion::V1 => String::new(),
        EngineVersion::V0 => " (vLLM's v0 engine)".to_string(),
    };
    let fitted_on = r.case.role.fits(kernels) && r.case.config.scheduler.engine == engine;
    let leave = fitted_on.then_some(r.case.run.as_str());
    let own = take(gpu, leave);
    if !own.is_empty() {
        let what = if leave.is_some() { "the other fit runs" } else { "every fit run" };
        return (own, format!("{what} on {gpu}{on}"), fitted_on);
    }
    // No other run on this GPU: the sibling it would borrow from, with the sibling's runs.
    let sibling = sibling_of(gpu);
    if sibling == gpu {
        return (Vec::new(), "the prior".to_string(), fitted_on);
    }
    (take(sibling, None), format!("the fit runs of {sibling}{on} (no other run on {gpu})"), fitted_on)
}

/// Where the kernel clock's host costs of vLLM's v0 engine (per step, per sequence, per prompt;
/// µs) are fitted from: v1's fixed cost (`clock::constants::V1_HOST_PRIOR`, where v1's start),
/// and costs per sequence and per prompt of the order of a Python scheduler's.
pub const V0_HOST_PRIOR: [f64; 3] = [250.0, 10.0, 1000.0];

/// Where a fit for `config` starts: `PRIOR` for the roofline; where steps are priced from
/// measured kernels, the roofline's constants of the GPU (for the parts the kernels leave) with
/// the host prior of its engine generation, never the committed fit.
fn prior_for(config: &SimConfig) -> ClockConstants {
    if !config.runs_on_kernels() {
        return PRIOR;
    }
    let [fixed_step_us, per_seq_us, per_prefill_us] = match config.scheduler.engine {
        EngineVersion::V1 => crate::engine::clock::constants::V1_HOST_PRIOR,
        EngineVersion::V0 => V0_HOST_PRIOR,
    };
    let gpu = crate::engine::clock::clock_for(&config.gpu.id).0;
    ClockConstants { fixed_step_us, per_seq_us, per_prefill_us, ..gpu }
}

/// Every case predicted with constants fitted without it (see the module doc). Fits are shared
/// between cases that train on the same runs.
pub fn leave_one_out(results: &[CaseResult]) -> Vec<CrossResult<'_>> {
    let mut fits: BTreeMap<String, ClockConstants> = BTreeMap::new();
    results
        .iter()
        .map(|r| {
            let (cases, from, left_out) = training(results, r);
            // Runs that leave out their own run train on different runs: one fit each.
            let key = if left_out { format!("{from} without {}", r.case.run) } else { from.clone() };
            let k = *fits.entry(key).or_insert_with(|| {
                let prior = prior_for(&r.case.config);
                if cases.is_empty() {
                    prior
                } else {
                    fit(&cases, prior).0
                }
            });
            let report = simulate(&r.case.config, Some(&k));
            let held_out = !r.case.role.fits(r.case.config.runs_on_kernels());
            CrossResult { result: r, constants_from: from, errors: compare(&r.case.real, &report), held_out }
        })
        .collect()
}

/// Median |error| of a set of cross results, overall and per family, and the figures counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrossSummary {
    pub runs: u32,
    pub figures: u32,
    pub median_abs_error_pct: f64,
    pub per_family: BTreeMap<&'static str, f64>,
}

impl CrossSummary {
    pub fn of<'a>(results: impl Iterator<Item = &'a CrossResult<'a>>) -> CrossSummary {
        let mut runs: Vec<&str> = Vec::new();
        let mut all = Vec::new();
        let mut by: BTreeMap<&'static str, Vec<FigureError>> = BTreeMap::new();
        for c in results {
            if !runs.contains(&c.result.case.run.as_str()) {
                runs.push(&c.result.case.run);
            }
            for e in &c.errors {
                by.entry(Family::of(e.figure).key()).or_default().push(e.clone());
                all.push(e.clone());
            }
        }
        CrossSummary {
            runs: runs.len() as u32,
            figures: all.len() as u32,
            median_abs_error_pct: median_abs_error_pct(&all),
            per_family: by.into_iter().map(|(k, v)| (k, median_abs_error_pct(&v))).collect(),
        }
    }
}

/// The summary over every run, and per GPU.
pub fn summarize<'a>(cross: &'a [CrossResult<'a>]) -> (CrossSummary, BTreeMap<String, CrossSummary>) {
    let mut gpus: Vec<&str> = cross.iter().map(|c| c.result.case.gpu.as_str()).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let per_gpu = gpus
        .into_iter()
        .map(|g| (g.to_string(), CrossSummary::of(cross.iter().filter(|c| c.result.case.gpu == g))))
        .collect();
    (CrossSummary::of(cross.iter()), per_gpu)
}

/// The TTFT under which a server is said to keep up with its load, ms: an operator reading a
/// prediction above it concludes the setup cannot serve the traffic.
pub const KEEP_UP_TTFT_MS: f64 = 1_000.0;

/// A run whose keep-up verdict the held-out prediction gets wrong: vLLM's TTFT stayed under
/// `KEEP_UP_TTFT_MS` and kvlab's did not, or the other way round.
#[derive(Clone, Debug, PartialEq)]
pub struct VerdictFlip {
    pub id: String,
    /// The TTFT compared (mean, else median), real and predicted, ms.
    pub real_ms: f64,
    pub predicted_ms: f64,
}

impl VerdictFlip {
    /// vLLM kept up and kvlab says it does not (the flip that sells hardware).
    pub fn says_cannot_keep_up(&self) -> bool {
        self.real_ms < KEEP_UP_TTFT_MS
    }
}

/// Every held-out prediction whose keep-up verdict differs from the real run's, in case order.
pub fn keep_up_flips(cross: &[CrossResult<'_>]) -> Vec<VerdictFlip> {
    cross
        .iter()
        .filter_map(|c| {
            let ttft = |f: Figure| c.errors.iter().find(|e| e.figure == f);
            let e = ttft(Figure::TtftMean).or_else(|| ttft(Figure::TtftP50))?;
            ((e.real < KEEP_UP_TTFT_MS) != (e.simulated < KEEP_UP_TTFT_MS)).then(|| VerdictFlip {
                id: c.result.case.id.clone(),
                real_ms: e.real,
                predicted_ms: e.simulated,
            })
        })
        .collect()
}
