//! Fitting a GPU's clock constants to real runs: a Nelder–Mead search in log space over the
//! bandwidth efficiency, the GEMM efficiency, the fixed step cost, the cost per sequence and (runs
//! of vLLM's v0 engine on the kernel clock) the cost per prompt, minimising the mean squared log
//! error of every figure the runs measured (each run weighing the same). Deterministic: the same
//! runs give the same constants, bit for bit.

use super::clock::ClockConstants;
use super::fidelity::{compare, simulate, Figure};
use super::{EngineVersion, SimConfig};

/// One run to fit: the configuration and what the real run measured.
pub struct FitCase<'a> {
    pub config: &'a SimConfig,
    pub real: &'a [(Figure, f64)],
    /// The run is one request at a time (a batch-1 decode point).
    pub single_request: bool,
}

/// The bounds each fitted constant stays in (physical: efficiencies up to 1).
const BOUNDS: [(f64, f64); 5] = [(0.3, 1.0), (0.05, 1.0), (50.0, 5000.0), (0.0, 200.0), (0.0, 20_000.0)];

fn get(k: &ClockConstants, i: usize) -> f64 {
    [k.bandwidth_efficiency, k.gemm_efficiency, k.fixed_step_us, k.per_seq_us, k.per_prefill_us][i]
}

fn set(k: &mut ClockConstants, i: usize, v: f64) {
    let v = v.clamp(BOUNDS[i].0, BOUNDS[i].1);
    match i {
        0 => k.bandwidth_efficiency = v,
        1 => k.gemm_efficiency = v,
        2 => k.fixed_step_us = v,
        3 => k.per_seq_us = v,
        _ => k.per_prefill_us = v,
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
                let r = libm::log(e.simulated.max(1e-9) / e.real);
                r * r
            })
            .sum::<f64>()
            / n;
    }
    total / cases.len().max(1) as f64
}

/// Which constants the cases can tell apart: runs of one request at a time (batch-1 decode)
/// pin the bandwidth and the per-step cost only; the rest keep their starting values. Under the
/// kernel clock the kernels carry the GPU's time: only the host's costs (per step, per
/// sequence, and per prompt where every run is on vLLM's v0 engine) are fitted.
pub fn free_constants(cases: &[FitCase<'_>]) -> Vec<usize> {
    let kernels = cases.iter().any(|c| c.config.runs_on_kernels());
    let single = cases.iter().all(|c| c.single_request);
    let v0 = !cases.is_empty() && cases.iter().all(|c| c.config.scheduler.engine == EngineVersion::V0);
    match (kernels, single) {
        (true, true) => vec![2],
        (true, false) if v0 => vec![2, 3, 4],
        (true, false) => vec![2, 3],
        (false, true) => vec![0, 2],
        (false, false) => vec![0, 1, 2, 3],
    }
}

/// The constants that fit `cases` best, starting from `start` (Nelder–Mead over the free
/// constants, in log space, within `BOUNDS`); rounded to the digits the catalogue keeps.
pub fn fit(cases: &[FitCase<'_>], start: ClockConstants) -> (ClockConstants, f64) {
    let free = free_constants(cases);
    let n = free.len();
    let at = |x: &[f64]| {
        let mut k = start;
        for (j, &i) in free.iter().enumerate() {
            set(&mut k, i, libm::exp(x[j]));
        }
        k
    };
    let f = |x: &[f64]| loss(cases, &at(x));
    let x0: Vec<f64> = free.iter().map(|&i| libm::log(get(&start, i).max(1.0e-3))).collect();
    let mut simplex: Vec<(Vec<f64>, f64)> = vec![(x0.clone(), f(&x0))];
    for j in 0..n {
        let mut x = x0.clone();
        x[j] += 0.2;
        let v = f(&x);
        simplex.push((x, v));
    }
    for _ in 0..200 * n {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        if simplex[n].1 - simplex[0].1 < 1e-7 {
            break;
        }
        let centroid: Vec<f64> = (0..n).map(|j| simplex[..n].iter().map(|p| p.0[j]).sum::<f64>() / n as f64).collect();
        let towards =
            |t: f64| -> Vec<f64> { (0..n).map(|j| centroid[j] + t * (simplex[n].0[j] - centroid[j])).collect() };
        let reflected = towards(-1.0);
        let fr = f(&reflected);
        if fr < simplex[0].1 {
            let expanded = towards(-2.0);
            let fe = f(&expanded);
            simplex[n] = if fe < fr { (expanded, fe) } else { (reflected, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (reflected, fr);
        } else {
            let contracted = towards(0.5);
            let fc = f(&contracted);
            if fc < simplex[n].1 {
                simplex[n] = (contracted, fc);
            } else {
                let best = simplex[0].0.clone();
                for p in simplex.iter_mut().skip(1) {
                    p.0 = (0..n).map(|j| best[j] + 0.5 * (p.0[j] - best[j])).collect();
                    p.1 = f(&p.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    let rounded = round_constants(at(&simplex[0].0));
    let l = loss(cases, &rounded);
    (rounded, l)
}

/// The constants as the catalogue writes them.
pub fn round_constants(k: ClockConstants) -> ClockConstants {
    let r3 = |x: f64| libm::round(x * 1000.0) / 1000.0;
    ClockConstants {
        bandwidth_efficiency: r3(k.bandwidth_efficiency),
        gemm_efficiency: r3(k.gemm_efficiency),
        fixed_step_us: libm::round(k.fixed_step_us),
        per_seq_us: libm::round(k.per_seq_us * 10.0) / 10.0,
        per_prefill_us: libm::round(k.per_prefill_us),
        ..k
    }
}
