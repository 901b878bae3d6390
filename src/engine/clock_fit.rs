//! Fitting a GPU's clock constants to real runs: a coordinate search in log space over the
//! bandwidth efficiency, the GEMM efficiency, the fixed step cost and the cost per sequence,
//! minimising the mean squared log error of every figure the runs measured (each run weighing
//! the same). Deterministic: the same runs give the same constants, bit for bit.

use super::clock::ClockConstants;
use super::fidelity::{compare, simulate, Figure};
use super::SimConfig;

/// One run to fit: the configuration and what the real run measured.
pub struct FitCase<'a> {
    pub config: &'a SimConfig,
    pub real: &'a [(Figure, f64)],
}

/// The bounds each fitted constant stays in (physical: efficiencies up to 1).
const BOUNDS: [(f64, f64); 4] = [(0.3, 1.0), (0.05, 1.0), (50.0, 5000.0), (0.0, 200.0)];

fn get(k: &ClockConstants, i: usize) -> f64 {
    [k.bandwidth_efficiency, k.gemm_efficiency, k.fixed_step_us, k.per_seq_us][i]
}

fn set(k: &mut ClockConstants, i: usize, v: f64) {
    let v = v.clamp(BOUNDS[i].0, BOUNDS[i].1);
    match i {
        0 => k.bandwidth_efficiency = v,
        1 => k.gemm_efficiency = v,
        2 => k.fixed_step_us = v,
        _ => k.per_seq_us = v,
    }
}

/// Mean over runs of the mean squared log ratio of simulated to real figures.
pub fn loss(cases: &[FitCase<'_>], k: &ClockConstants) -> f64 {
    let mut total = 0.0;
    for c in cases {
        let report = simulate(c.config, Some(k));
        let errors = compare(c.real, &report);
        let n = errors.len().max(1) as f64;
        total += errors
            .iter()
            .map(|e| {
                let r = (e.simulated.max(1e-9) / e.real).ln();
                r * r
            })
            .sum::<f64>()
            / n;
    }
    total / cases.len().max(1) as f64
}

/// The constants that fit `cases` best, starting from `start`; rounded to the digits the
/// catalogue keeps (3 significant for efficiencies, whole µs).
pub fn fit(cases: &[FitCase<'_>], start: ClockConstants) -> (ClockConstants, f64) {
    let mut best = start;
    let mut best_loss = loss(cases, &best);
    let mut step = 0.25_f64;
    while step > 0.004 {
        let mut improved = false;
        for i in 0..4 {
            for dir in [1.0_f64, -1.0] {
                let mut trial = best;
                let v = get(&best, i);
                // Per-sequence cost may be 0: move it additively from there.
                let next = if v == 0.0 { dir.max(0.0) * 2.0 } else { v * (1.0 + dir * step) };
                set(&mut trial, i, next);
                if trial == best {
                    continue;
                }
                let l = loss(cases, &trial);
                if l < best_loss {
                    (best, best_loss) = (trial, l);
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            step /= 2.0;
        }
    }
    let rounded = round_constants(best);
    let l = loss(cases, &rounded);
    (rounded, l)
}

/// The constants as the catalogue writes them.
pub fn round_constants(k: ClockConstants) -> ClockConstants {
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    ClockConstants {
        bandwidth_efficiency: r3(k.bandwidth_efficiency),
        gemm_efficiency: r3(k.gemm_efficiency),
        fixed_step_us: k.fixed_step_us.round(),
        per_seq_us: (k.per_seq_us * 10.0).round() / 10.0,
        ..k
    }
}
