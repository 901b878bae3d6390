//! The fitting half of a calibration: from the measured samples, the step-time model's constants
//! (`bandwidth_efficiency`, paged overhead per block size), the `kvlab/calibration@1` file with
//! every measurement behind them, and the summary and verdict the CLI prints.

use serde_json::{json, Value};

use crate::calibrate::backend::PoolGeometry;
use crate::calibrate::fit::{
    self, batch_figures, block_size_figures, fit_line, fit_line_robust, round, BlockSizeFigures, Line, Sample,
};
use crate::calibrate::options::{CalibrateOptions, CalibrationRun, Nominal};
use crate::engine::clock::{OverheadPoint, DEFAULT_FIXED_STEP_US};
use crate::formats::calibration::Calibration;
use crate::formats::sniff::CALIBRATION_SCHEMA;

/// Fits the step-time constants from the measured samples and writes the calibration file, its
/// summary and verdict.
pub(crate) fn build(
    opts: &CalibrateOptions,
    block_sizes: &[u32],
    geometries: &[PoolGeometry],
    samples: Vec<Sample>,
    pool_reads_gb_s: &[f64],
) -> Result<CalibrationRun, String> {
    let figures: Vec<BlockSizeFigures> = block_sizes
        .iter()
        .map(|&bs| block_size_figures(bs, &samples.iter().filter(|s| s.block_size == bs).collect::<Vec<_>>()))
        .collect();
    let fit = ContiguousFit::of(&samples);
    let measured_read = pool_reads_gb_s.iter().cloned().fold(0.0, f64::max);
    let (nominal_gb_s, nominal_source) = match &opts.nominal {
        Nominal::MeasuredPoolRead => {
            (measured_read, "streaming read of the whole pool (best of 3 per block size)".to_string())
        }
        Nominal::Spec { gb_s, source } => (*gb_s, source.clone()),
    };
    if !(nominal_gb_s > 0.0 && fit.effective_gb_s > 0.0) {
        return Err(format!(
            "degenerate measurement: nominal {nominal_gb_s} GB/s, effective {} GB/s",
            fit.effective_gb_s
        ));
    }
    let raw_efficiency = fit.effective_gb_s / nominal_gb_s;
    let paged_overhead = figures
        .iter()
        .filter(|f| f.overhead_median.is_finite())
        .map(|f| OverheadPoint { block_size: f.block_size, overhead: round(f.overhead_median.clamp(-0.5, 20.0), 4) })
        .collect();
    let nominal = Bandwidths { nominal_gb_s, nominal_source, measured_read, raw_efficiency };
    let measurements = measurements_json(opts, geometries, &figures, &samples, &fit, &nominal);
    let calibration = Calibration {
        schema: CALIBRATION_SCHEMA.into(),
        name: opts.name.clone(),
        device: opts.device.clone(),
        method: method_text(opts, block_sizes),
        date: opts.date.clone(),
        bandwidth_efficiency: round(raw_efficiency.clamp(0.01, 1.5), 4),
        fixed_step_us: DEFAULT_FIXED_STEP_US,
        gpu: opts.gpu.clone(),
        paged_overhead,
        measurements,
    };
    calibration
        .validate()
        .map_err(|e| format!("the fitted calibration is invalid ({e}); the measurement was too noisy"))?;
    let fit_r2 = fit.line.map_or(f64::NAN, |l| l.r2);
    let mut summary =
        summarize(&calibration, &figures, nominal_gb_s, fit.effective_gb_s, fit.intercept_us, samples.len());
    let overall_gb_s = fit::gb_s(fit.total_bytes, fit.total_us);
    summary += &verdict(opts, &figures, (fit.effective_gb_s, overall_gb_s), measured_read, fit_r2, samples.len());
    Ok(CalibrationRun { calibration, figures, summary })
}

/// Contiguous gather time against bytes: the robust and least-squares lines, the effective
/// bandwidth (the robust slope) and the fixed cost per gather (its intercept).
struct ContiguousFit {
    line: Option<Line>,
    ols: Option<Line>,
    total_bytes: u64,
    total_us: f64,
    effective_gb_s: f64,
    intercept_us: f64,
}

impl ContiguousFit {
    fn of(samples: &[Sample]) -> Self {
        let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.bytes as f64, s.contiguous_median_us())).collect();
        let line = fit_line_robust(&points);
        let total_bytes: u64 = samples.iter().map(|s| s.bytes).sum();
        let total_us: f64 = samples.iter().map(Sample::contiguous_median_us).sum();
        // Effective bandwidth of contiguous reads: the slope of time against bytes (GB/s = bytes/µs/1e3).
        let effective_gb_s = match line {
            Some(l) if l.slope > 0.0 => 1.0 / l.slope / 1e3,
            _ => fit::gb_s(total_bytes, total_us),
        };
        // A fixed cost is at most the whole of the fastest read: a larger intercept is a bad fit.
        let fastest_us = samples.iter().map(Sample::contiguous_median_us).fold(f64::INFINITY, f64::min);
        let intercept_us = line.map_or(0.0, |l| l.intercept.clamp(0.0, fastest_us));
        ContiguousFit { line, ols: fit_line(&points), total_bytes, total_us, effective_gb_s, intercept_us }
    }
}

/// The nominal bandwidth efficiency divides by, where it came from, and the pool's best read.
struct Bandwidths {
    nominal_gb_s: f64,
    nominal_source: String,
    measured_read: f64,
    raw_efficiency: f64,
}

fn method_text(opts: &CalibrateOptions, block_sizes: &[u32]) -> String {
    format!(
        "kvlab calibrate: replay of preset '{}' ({} s simulated) at block sizes {:?}; per step, the running batch's K/V of one layer gathered through its block tables vs from a contiguous copy ({} timed pairs after a warm-up, medians); efficiency = contiguous effective bandwidth / nominal; overhead = median paged/contiguous − 1",
        opts.config.id,
        opts.duration_s.unwrap_or(opts.config.duration_s),
        block_sizes,
        opts.reps
    )
}

/// The file's `measurements` member: everything measured, for a reader to check the fit.
fn measurements_json(
    opts: &CalibrateOptions,
    geometries: &[PoolGeometry],
    figures: &[BlockSizeFigures],
    samples: &[Sample],
    fit: &ContiguousFit,
    bw: &Bandwidths,
) -> Value {
    let layers = opts.config.model.layers;
    json!({
        "preset": opts.config.id,
        "model": opts.config.model.id,
        "kv_dtype": opts.config.kv_dtype.name(),
        "duration_s": opts.duration_s.unwrap_or(opts.config.duration_s),
        "pool": pool_json(geometries),
        "samples_per_block_size": opts.samples,
        "reps": opts.reps,
        "nominal_gb_s": round(bw.nominal_gb_s, 3),
        "nominal_source": bw.nominal_source,
        "pool_read_gb_s": round(bw.measured_read, 3),
        "effective_gb_s": round(fit.effective_gb_s, 3),
        "bandwidth_efficiency_unclamped": round(bw.raw_efficiency, 4),
        "fit_contiguous_us_vs_bytes": fit.line.map(|l| line_json(l, "Theil-Sen (median of pairwise slopes); through the origin (median µs per byte) when its intercept is negative")),
        "fit_contiguous_us_vs_bytes_least_squares": fit.ols.map(|l| line_json(l, "ordinary least squares")),
        "contiguous_gb_s_of_sums": round(fit::gb_s(fit.total_bytes, fit.total_us), 3),
        "fixed_step_us_rule": "not measured: a gather cannot see a step's launches, scheduling and sampling, so the model's default is kept",
        "gather_intercept_us": round(fit.intercept_us, 3),
        "gather_intercept_us_per_step": round(fit.intercept_us * f64::from(layers), 2),
        "device_report": opts.device_report.clone().unwrap_or(Value::Null),
        "block_sizes": figures.iter().map(block_size_json).collect::<Vec<_>>(),
        "batch_sizes": batch_figures(samples).iter().map(|b| json!({
            "block_size": b.block_size,
            "seqs": format!("{}-{}", b.seqs_min, b.seqs_max),
            "samples": b.samples,
            "mean_mib": round(b.mean_bytes / (1u64 << 20) as f64, 3),
            "paged_gb_s": round(b.paged_gb_s, 3),
            "contiguous_gb_s": round(b.contiguous_gb_s, 3),
        })).collect::<Vec<_>>(),
        "samples": samples.iter().map(sample_json).collect::<Vec<_>>(),
    })
}

fn pool_json(geometries: &[PoolGeometry]) -> Value {
    let g0 = geometries[0];
    json!({
        "layout": "one layer; per block, planes (K and V of each KV head) head-major, each plane a run of block_size × plane_bytes",
        "planes": g0.planes,
        "plane_bytes": g0.plane_bytes,
        "token_bytes": g0.token_bytes(),
        "pool_bytes": geometries.iter().map(|g| json!({"block_size": g.block_size, "num_blocks": g.num_blocks, "bytes": g.pool_bytes()})).collect::<Vec<_>>(),
    })
}

fn block_size_json(f: &BlockSizeFigures) -> Value {
    json!({
        "block_size": f.block_size,
        "samples": f.samples,
        "overhead_median": round(f.overhead_median, 4),
        "overhead_of_sums": round(f.overhead_of_sums, 4),
        "paged_gb_s": round(f.paged_gb_s, 3),
        "contiguous_gb_s": round(f.contiguous_gb_s, 3),
        "paged_run_bytes": round(f.paged_run_bytes, 1),
    })
}

fn sample_json(s: &Sample) -> Value {
    json!({
        "block_size": s.block_size, "step": s.step, "t_s": round(s.t_s, 4), "seqs": s.seqs,
        "tokens": s.tokens, "bytes": s.bytes, "paged_runs": s.paged_runs,
        "checksum": s.checksum.map(|c| format!("{c:016x}")),
        "paged_us": s.paged_us.iter().map(|&x| round(x, 2)).collect::<Vec<_>>(),
        "contiguous_us": s.contiguous_us.iter().map(|&x| round(x, 2)).collect::<Vec<_>>(),
    })
}

fn line_json(l: Line, method: &str) -> Value {
    json!({
        "method": method,
        "intercept_us": round(l.intercept, 3),
        "ns_per_kib": round(l.slope * 1024.0 * 1e3, 4),
        "r2": round(l.r2, 4),
        "points": l.points,
    })
}

fn summarize(
    c: &Calibration,
    figures: &[BlockSizeFigures],
    nominal: f64,
    effective: f64,
    intercept_us: f64,
    n: usize,
) -> String {
    let mut s = format!("calibration {} on {} ({n} measured steps)\n", c.name, c.device);
    s += &format!(
        "nominal {nominal:.1} GB/s, effective contiguous {effective:.1} GB/s → bandwidth_efficiency {:.3}\n",
        c.bandwidth_efficiency
    );
    s += &format!(
        "fixed cost per gather {intercept_us:.2} µs (recorded; fixed_step_us keeps the default {:.0} µs)\n",
        c.fixed_step_us
    );
    s += "block size  paged GB/s  contiguous GB/s  run bytes  paged overhead\n";
    for f in figures {
        s += &format!(
            "{:>10}  {:>10.2}  {:>15.2}  {:>9.0}  {:>+13.1}%\n",
            f.block_size,
            f.paged_gb_s,
            f.contiguous_gb_s,
            f.paged_run_bytes,
            f.overhead_median * 100.0
        );
    }
    s
}

/// The few lines to read before trusting a calibration: streaming and gather bandwidth against a
/// device-to-device copy of the same run, the paged overhead per block size, the fit's r², and
/// that every checksum matched the reference.
fn verdict(
    opts: &CalibrateOptions,
    figures: &[BlockSizeFigures],
    (marginal_gb_s, overall_gb_s): (f64, f64),
    pool_read_gb_s: f64,
    r2: f64,
    n: usize,
) -> String {
    let mut s = String::from("verdict:\n");
    s += &format!(
        "  contiguous gathers: {marginal_gb_s:.1} GB/s per extra byte (the fit's slope: bandwidth_efficiency), {overall_gb_s:.1} GB/s over all measured bytes\n"
    );
    match opts.copy_gb_s {
        Some(copy) if copy > 0.0 => {
            s += &format!(
                "  streaming read of the pool {pool_read_gb_s:.0} GB/s vs a device-to-device copy {copy:.0} GB/s (read + write): {:.0}%; gathers over all bytes: {:.0}% of the copy\n",
                100.0 * pool_read_gb_s / copy,
                100.0 * overall_gb_s / copy
            );
        }
        _ => s += &format!("  streaming read of the pool {pool_read_gb_s:.1} GB/s\n"),
    }
    s += "  paged overhead:";
    for f in figures {
        s += &format!(" {}→{:+.0}%", f.block_size, f.overhead_median * 100.0);
    }
    s += "\n";
    let fit = if r2 >= 0.9 {
        "good"
    } else if r2 >= 0.7 {
        "fair"
    } else {
        "poor: read the samples before trusting the slope"
    };
    s += &format!("  fit of gather time against bytes: r² = {r2:.3} ({fit})\n");
    s += &format!("  correctness: {n} measured steps, every paged and contiguous checksum equal to the reference computed from what was written\n");
    s
}
