//! How close a simulated run comes to a real vLLM run of the same requests: the figures both
//! give (TTFT, TPOT, ITL, end-to-end latency, throughput), each with its relative error.
//! `kvlab validate` prints them and `tests/clock_fidelity.rs` holds them to committed bounds.
//!
//! A real run is either per-request timestamps (`MeasuredRequest`, from which every figure is
//! computed as vLLM's benchmark client computes it) or the figures a benchmark printed.

use super::metrics::latency::{sorted, Summary};
use super::metrics::Report;

/// One request of a real run, its times in seconds on one clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredRequest {
    pub arrival_s: f64,
    pub first_token_s: f64,
    pub last_token_s: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
}

/// A figure both sides give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    TtftMean,
    TtftP50,
    TtftP99,
    TpotMean,
    TpotP50,
    TpotP99,
    ItlMean,
    ItlP50,
    ItlP99,
    E2eMean,
    E2eP50,
    E2eP99,
    RequestsPerS,
    OutputTokensPerS,
    /// The whole benchmark's duration, first arrival to last finish.
    DurationS,
}

impl Figure {
    /// The name `vllm bench serve`'s figures go by, as the tables print it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::TtftMean => "TTFT mean (ms)",
            Figure::TtftP50 => "TTFT p50 (ms)",
            Figure::TtftP99 => "TTFT p99 (ms)",
            Figure::TpotMean => "TPOT mean (ms)",
            Figure::TpotP50 => "TPOT p50 (ms)",
            Figure::TpotP99 => "TPOT p99 (ms)",
            Figure::ItlMean => "ITL mean (ms)",
            Figure::ItlP50 => "ITL p50 (ms)",
            Figure::ItlP99 => "ITL p99 (ms)",
            Figure::E2eMean => "E2E mean (ms)",
            Figure::E2eP50 => "E2E p50 (ms)",
            Figure::E2eP99 => "E2E p99 (ms)",
            Figure::RequestsPerS => "requests/s",
            Figure::OutputTokensPerS => "output tokens/s",
            Figure::DurationS => "duration (s)",
        }
    }

    /// The short key of JSON outputs and the expectations file.
    pub fn key(self) -> &'static str {
        match self {
            Figure::TtftMean => "ttft_mean",
            Figure::TtftP50 => "ttft_p50",
            Figure::TtftP99 => "ttft_p99",
            Figure::TpotMean => "tpot_mean",
            Figure::TpotP50 => "tpot_p50",
            Figure::TpotP99 => "tpot_p99",
            Figure::ItlMean => "itl_mean",
            Figure::ItlP50 => "itl_p50",
            Figure::ItlP99 => "itl_p99",
            Figure::E2eMean => "e2e_mean",
            Figure::E2eP50 => "e2e_p50",
            Figure::E2eP99 => "e2e_p99",
            Figure::RequestsPerS => "requests_per_s",
            Figure::OutputTokensPerS => "output_tokens_per_s",
            Figure::DurationS => "duration_s",
        }
    }

    pub fn from_key(key: &str) -> Option<Figure> {
        ALL_FIGURES.iter().copied().find(|f| f.key() == key)
    }

    /// This figure of a simulated run's report.
    pub fn of_report(self, r: &Report) -> f64 {
        let l = &r.latency_ms;
        match self {
            Figure::TtftMean => l.ttft_mean,
            Figure::TtftP50 => l.ttft_p50,
            Figure::TtftP99 => l.ttft_p99,
            Figure::TpotMean => l.tpot_mean,
            Figure::TpotP50 => l.tpot_p50,
            Figure::TpotP99 => l.tpot_p99,
            Figure::ItlMean => l.itl_mean,
            Figure::ItlP50 => l.itl_p50,
            Figure::ItlP99 => l.itl_p99,
            Figure::E2eMean => l.e2e_mean,
            Figure::E2eP50 => l.e2e_p50,
            Figure::E2eP99 => l.e2e_p99,
            Figure::RequestsPerS => r.throughput.requests_per_s,
            Figure::OutputTokensPerS => r.throughput.output_tokens_per_s,
            Figure::DurationS => r.throughput.duration_s,
        }
    }
}

pub const ALL_FIGURES: &[Figure] = &[
    Figure::TtftMean,
    Figure::TtftP50,
    Figure::TtftP99,
    Figure::TpotMean,
    Figure::TpotP50,
    Figure::TpotP99,
    Figure::ItlMean,
    Figure::ItlP50,
    Figure::ItlP99,
    Figure::E2eMean,
    Figure::E2eP50,
    Figure::E2eP99,
    Figure::RequestsPerS,
    Figure::OutputTokensPerS,
    Figure::DurationS,
];

/// The figures of a real run given as per-request timestamps, as vLLM's client computes them
/// (TTFT from arrival, TPOT per request as (end-to-end − TTFT) / (output − 1), nearest-rank
/// percentiles as kvlab's report takes them). ITL's mean is the token-weighted mean gap; its
/// percentiles need every token's time, which such runs do not record.
pub fn measured_figures(requests: &[MeasuredRequest]) -> Vec<(Figure, f64)> {
    if requests.is_empty() {
        return Vec::new();
    }
    let us = |s: f64| s * 1e6;
    let ttft: Vec<f64> = requests.iter().map(|r| us(r.first_token_s - r.arrival_s)).collect();
    let e2e: Vec<f64> = requests.iter().map(|r| us(r.last_token_s - r.arrival_s)).collect();
    let tpot: Vec<f64> = requests
        .iter()
        .filter(|r| r.output_tokens > 1)
        .map(|r| us(r.last_token_s - r.first_token_s) / f64::from(r.output_tokens - 1))
        .collect();
    let (ttft, tpot, e2e) = (
        Summary::of_sorted_us(&sorted(&ttft)),
        Summary::of_sorted_us(&sorted(&tpot)),
        Summary::of_sorted_us(&sorted(&e2e)),
    );
    let gaps: f64 = requests.iter().map(|r| r.last_token_s - r.first_token_s).sum();
    let gap_count: f64 = requests.iter().map(|r| f64::from(r.output_tokens.saturating_sub(1))).sum();
    let start = requests.iter().map(|r| r.arrival_s).fold(f64::INFINITY, f64::min);
    let end = requests.iter().map(|r| r.last_token_s).fold(f64::NEG_INFINITY, f64::max);
    let duration = end - start;
    let outputs: f64 = requests.iter().map(|r| f64::from(r.output_tokens)).sum();
    vec![
        (Figure::TtftMean, ttft.mean),
        (Figure::TtftP50, ttft.p50),
        (Figure::TtftP99, ttft.p99),
        (Figure::TpotMean, tpot.mean),
        (Figure::TpotP50, tpot.p50),
        (Figure::TpotP99, tpot.p99),
        (Figure::ItlMean, if gap_count > 0.0 { gaps / gap_count * 1e3 } else { 0.0 }),
        (Figure::E2eMean, e2e.mean),
        (Figure::E2eP50, e2e.p50),
        (Figure::E2eP99, e2e.p99),
        (Figure::RequestsPerS, requests.len() as f64 / duration),
        (Figure::OutputTokensPerS, outputs / duration),
        (Figure::DurationS, duration),
    ]
}

/// One figure of one run on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureError {
    pub figure: Figure,
    pub real: f64,
    pub simulated: f64,
}

impl FigureError {
    /// (simulated − real) / real, percent.
    pub fn error_pct(&self) -> f64 {
        (self.simulated - self.real) / self.real * 100.0
    }
}

/// The real figures beside the same figures of the simulated run's report.
pub fn compare(real: &[(Figure, f64)], simulated: &Report) -> Vec<FigureError> {
    real.iter()
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .map(|&(figure, real)| FigureError { figure, real, simulated: figure.of_report(simulated) })
        .collect()
}

/// The median of the absolute errors (percent), 0 for none.
pub fn median_abs_error_pct(errors: &[FigureError]) -> f64 {
    let abs: Vec<f64> = errors.iter().map(|e| e.error_pct().abs()).collect();
    let s = sorted(&abs);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Runs `config` to its end under the clock's constants for its GPU, or under `constants`.
pub fn simulate(config: &super::SimConfig, constants: Option<&super::clock::ClockConstants>) -> Report {
    let clock = match constants {
        Some(k) => config.clock_with(k),
        None => config.clock(),
    };
    super::Simulation::with_clock(config.clone(), clock).run_to_end()
}
