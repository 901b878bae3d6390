//! Calibration (native only): replays the engine's allocation trace for a preset against a real
//! block pool (host memory, or a CUDA device with the `gpu` feature), times paged and contiguous
//! reads of the same bytes across block sizes and batch sizes, and fits the step-time model's
//! constants into a `kvlab/calibration@1` file. See docs/CALIBRATION.md.
//!
//! This is the only place with a wall clock: the host pool is timed with `Instant` here, the
//! CUDA pool with device events. The engine stays pure.

pub mod backend;
pub mod cuda;
pub mod fit;
pub mod host;
pub mod trace;

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;

use crate::calibrate::backend::{BlockPoolBackend, GatherResult, PoolGeometry, SimulatedPool};
use crate::engine::timing::{OverheadPoint, DEFAULT_FIXED_STEP_US};
use crate::engine::SimConfig;
use crate::formats::calibration::Calibration;
use crate::formats::sniff::CALIBRATION_SCHEMA;

use fit::{batch_figures, block_size_figures, fit_line, fit_line_robust, round, BlockSizeFigures, Line, Sample};
use trace::{paged_config, StepBatch, TraceReplayer};

/// The block sizes a calibration measures by default.
pub const DEFAULT_BLOCK_SIZES: &[u32] = &[1, 8, 16, 32, 64, 128, 256];

/// Where the "nominal" bandwidth that `bandwidth_efficiency` divides by comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Nominal {
    /// Stream the whole pool once in address order (a plain sum); best of several reads.
    MeasuredPoolRead,
    /// The device's datasheet figure.
    Spec { gb_s: f64, source: String },
}

#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// The preset whose traffic is replayed (its allocator is switched to paged blocks).
    pub config: SimConfig,
    pub block_sizes: Vec<u32>,
    /// Simulated seconds of the trace (None: the preset's duration).
    pub duration_s: Option<f64>,
    /// Measured steps per block size, spread evenly over simulated time.
    pub samples: usize,
    /// Timed (paged, contiguous) pairs per measured step, after one untimed warm-up pair.
    pub reps: usize,
    pub name: String,
    pub date: String,
    pub device: String,
    /// The lab's GPU preset for the measured device (`h200`, …), recorded in the file.
    pub gpu: Option<String>,
    pub nominal: Nominal,
    /// Device facts and reference bandwidths measured in the same run, for the file and verdict.
    pub device_report: Option<serde_json::Value>,
    /// A device-to-device copy's bandwidth in the same run (GB/s, read + write), for the verdict.
    pub copy_gb_s: Option<f64>,
}

/// The result: the file's contents plus a human summary.
#[derive(Clone, Debug)]
pub struct CalibrationRun {
    pub calibration: Calibration,
    pub figures: Vec<BlockSizeFigures>,
    pub summary: String,
}

/// The pool one layer of `config`'s KV cache needs at `block_size` with `num_blocks` blocks.
pub fn layer_geometry(config: &SimConfig, num_blocks: u32, block_size: u32) -> PoolGeometry {
    let m = &config.model;
    PoolGeometry {
        num_blocks,
        block_size,
        planes: 2 * m.kv_heads,
        plane_bytes: m.head_dim * config.kv_dtype.bytes_per_element() as u32,
    }
}

/// Runs the calibration; `make_pool` builds the real pool for each block size's geometry.
/// After each block size, `partial` receives the calibration fitted from the block sizes done so
/// far (the CLI writes it to disk, so a run cut short still leaves its results).
pub fn calibrate(
    opts: &CalibrateOptions,
    make_pool: &mut dyn FnMut(PoolGeometry) -> Result<Box<dyn BlockPoolBackend>, String>,
    progress: &mut dyn FnMut(&str),
    partial: &mut dyn FnMut(&CalibrationRun),
) -> Result<CalibrationRun, String> {
    if opts.block_sizes.is_empty() || opts.samples == 0 || opts.reps == 0 {
        return Err("calibration needs at least one block size, one sample and one repetition".into());
    }
    let mut block_sizes = opts.block_sizes.clone();
    block_sizes.sort_unstable();
    block_sizes.dedup();
    let mut samples = Vec::new();
    let mut pool_reads_gb_s: Vec<f64> = Vec::new();
    let mut geometries = Vec::new();
    for &bs in &block_sizes {
        let config = paged_config(&opts.config, bs, opts.duration_s);
        let mut replay = TraceReplayer::new(config).map_err(|e| format!("block size {bs}: {e}"))?;
        let geometry = layer_geometry(&opts.config, replay.num_blocks(), bs);
        let mut real = make_pool(geometry)?;
        let mut pool = Referenced { real: real.as_mut(), reference: SimulatedPool::new(geometry, true) };
        let (n0, r0) = (samples.len(), pool_reads_gb_s.len());
        replay_and_measure(opts, &mut replay, &mut pool, &mut samples)?;
        let pool = pool.real;
        // The pool is written now (the trace filled it): stream it for the nominal figure.
        pool_reads_gb_s.extend((0..3).map(|_| {
            let (r, ns) = timed(|| pool.read_pool());
            fit::gb_s(r.bytes, ns as f64 / 1e3)
        }));
        if let Some(e) = pool.take_error() {
            return Err(e);
        }
        let best_read = pool_reads_gb_s[r0..].iter().cloned().fold(0.0, f64::max);
        progress(&format!(
            "block size {bs:>3}: {} blocks, {} MiB pool, {} tokens written, {} steps measured (pool read {best_read:.1} GB/s)",
            geometry.num_blocks,
            geometry.pool_bytes() >> 20,
            replay.total_written_tokens,
            samples.len() - n0,
        ));
        geometries.push(geometry);
        if !samples.is_empty() && geometries.len() < block_sizes.len() {
            let done = &block_sizes[..geometries.len()];
            if let Ok(run) = build(opts, done, &geometries, samples.clone(), &pool_reads_gb_s) {
                partial(&run);
            }
        }
    }
    if samples.is_empty() {
        return Err(
            "no step of the trace had a running batch; use a preset with traffic or a longer --duration-s".into()
        );
    }
    build(opts, &block_sizes, &geometries, samples, &pool_reads_gb_s)
}

fn timed(f: impl FnOnce() -> GatherResult) -> (GatherResult, u64) {
    #[allow(clippy::disallowed_methods)] // wall clock is allowed in calibration (never in the engine)
    let start = Instant::now();
    let r = f();
    let wall = start.elapsed().as_nanos() as u64;
    black_box(r.checksum);
    (r, r.device_ns.unwrap_or(wall))
}

/// A real pool and the content-tracking reference fed the same writes: every measured gather's
/// checksum must equal the one the reference computes from what was written, independently of
/// the real pool's indexing (and of the kernel that stages the contiguous copy).
struct Referenced<'a> {
    real: &'a mut dyn BlockPoolBackend,
    reference: SimulatedPool,
}

impl BlockPoolBackend for Referenced<'_> {
    fn geometry(&self) -> PoolGeometry {
        self.real.geometry()
    }
    fn label(&self) -> String {
        self.real.label()
    }
    fn write_tokens(&mut self, block: u32, offset_tokens: u32, n_tokens: u32, seed: u64) {
        self.reference.write_tokens(block, offset_tokens, n_tokens, seed);
        self.real.write_tokens(block, offset_tokens, n_tokens, seed);
    }
    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> GatherResult {
        self.real.gather(tables, tokens)
    }
    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]) {
        self.real.stage_contiguous(tables, tokens)
    }
    fn gather_contiguous(&mut self) -> GatherResult {
        self.real.gather_contiguous()
    }
    fn read_pool(&mut self) -> GatherResult {
        self.real.read_pool()
    }
    fn warm(&mut self) {
        self.real.warm()
    }
    fn take_error(&mut self) -> Option<String> {
        self.real.take_error()
    }
}

fn replay_and_measure(
    opts: &CalibrateOptions,
    replay: &mut TraceReplayer,
    pool: &mut Referenced<'_>,
    samples: &mut Vec<Sample>,
) -> Result<(), String> {
    let duration_us = replay.sim().duration_us() as f64;
    let mut next = 0usize;
    while let Some(batch) = replay.next_step(pool) {
        if next >= opts.samples || batch.num_seqs() == 0 {
            continue;
        }
        let due = duration_us * (next as f64 + 0.5) / opts.samples as f64;
        if (batch.now_us as f64) < due {
            continue;
        }
        while next < opts.samples && duration_us * (next as f64 + 0.5) / opts.samples as f64 <= batch.now_us as f64 {
            next += 1;
        }
        if let Some(e) = pool.take_error() {
            return Err(e);
        }
        samples.push(measure(opts, replay.block_size(), &batch, pool)?);
        if let Some(e) = pool.take_error() {
            return Err(e);
        }
    }
    pool.take_error().map_or(Ok(()), Err)
}

/// Reads one batch through its block tables and contiguously, `reps` times each, alternating
/// which goes first; the untimed warm-up pair checks that both read the same bytes.
fn measure(opts: &CalibrateOptions, bs: u32, batch: &StepBatch, pool: &mut Referenced<'_>) -> Result<Sample, String> {
    let tables = batch.table_slices();
    let expected = pool.reference.gather(&tables, &batch.tokens);
    pool.warm();
    pool.stage_contiguous(&tables, &batch.tokens);
    let paged = pool.gather(&tables, &batch.tokens);
    let contiguous = pool.gather_contiguous();
    if let Some(e) = pool.take_error() {
        return Err(e);
    }
    if paged.checksum != expected.checksum || contiguous.checksum != expected.checksum || paged.bytes != expected.bytes
    {
        return Err(format!(
            "block size {bs}, step {}: checksums differ (paged read {:?}, contiguous read {:?}, expected from what was written {:?}); the pool or its kernels are broken",
            batch.step, paged.checksum, contiguous.checksum, expected.checksum
        ));
    }
    let mut s = Sample {
        block_size: bs,
        step: batch.step,
        t_s: batch.now_us as f64 / 1e6,
        seqs: batch.num_seqs() as u32,
        tokens: batch.total_tokens(),
        bytes: paged.bytes,
        paged_runs: paged.runs,
        contiguous_runs: contiguous.runs,
        checksum: expected.checksum,
        paged_us: Vec::with_capacity(opts.reps),
        contiguous_us: Vec::with_capacity(opts.reps),
    };
    for rep in 0..opts.reps {
        let (p, c) = if rep % 2 == 0 {
            let p = timed(|| pool.gather(&tables, &batch.tokens)).1;
            (p, timed(|| pool.gather_contiguous()).1)
        } else {
            let c = timed(|| pool.gather_contiguous()).1;
            (timed(|| pool.gather(&tables, &batch.tokens)).1, c)
        };
        s.paged_us.push(p as f64 / 1e3);
        s.contiguous_us.push(c as f64 / 1e3);
    }
    Ok(s)
}

fn build(
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
    let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.bytes as f64, s.contiguous_median_us())).collect();
    let line = fit_line_robust(&points);
    let ols = fit_line(&points);
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
    let measured_read = pool_reads_gb_s.iter().cloned().fold(0.0, f64::max);
    let (nominal_gb_s, nominal_source) = match &opts.nominal {
        Nominal::MeasuredPoolRead => {
            (measured_read, "streaming read of the whole pool (best of 3 per block size)".to_string())
        }
        Nominal::Spec { gb_s, source } => (*gb_s, source.clone()),
    };
    if !(nominal_gb_s > 0.0 && effective_gb_s > 0.0) {
        return Err(format!("degenerate measurement: nominal {nominal_gb_s} GB/s, effective {effective_gb_s} GB/s"));
    }
    let raw_efficiency = effective_gb_s / nominal_gb_s;
    let layers = opts.config.model.layers;
    let paged_overhead = figures
        .iter()
        .filter(|f| f.overhead_median.is_finite())
        .map(|f| OverheadPoint { block_size: f.block_size, overhead: round(f.overhead_median.clamp(-0.5, 20.0), 4) })
        .collect();
    let g0 = geometries[0];
    let measurements = json!({
        "preset": opts.config.id,
        "model": opts.config.model.id,
        "kv_dtype": opts.config.kv_dtype.name(),
        "duration_s": opts.duration_s.unwrap_or(opts.config.duration_s),
        "pool": {
            "layout": "one layer; per block, planes (K and V of each KV head) head-major, each plane a run of block_size × plane_bytes",
            "planes": g0.planes,
            "plane_bytes": g0.plane_bytes,
            "token_bytes": g0.token_bytes(),
            "pool_bytes": geometries.iter().map(|g| json!({"block_size": g.block_size, "num_blocks": g.num_blocks, "bytes": g.pool_bytes()})).collect::<Vec<_>>(),
        },
        "samples_per_block_size": opts.samples,
        "reps": opts.reps,
        "nominal_gb_s": round(nominal_gb_s, 3),
        "nominal_source": nominal_source,
        "pool_read_gb_s": round(measured_read, 3),
        "effective_gb_s": round(effective_gb_s, 3),
        "bandwidth_efficiency_unclamped": round(raw_efficiency, 4),
        "fit_contiguous_us_vs_bytes": line.map(|l| line_json(l, "Theil-Sen (median of pairwise slopes); through the origin (median µs per byte) when its intercept is negative")),
        "fit_contiguous_us_vs_bytes_least_squares": ols.map(|l| line_json(l, "ordinary least squares")),
        "contiguous_gb_s_of_sums": round(fit::gb_s(total_bytes, total_us), 3),
        "fixed_step_us_rule": "not measured: a gather cannot see a step's launches, scheduling and sampling, so the model's default is kept",
        "gather_intercept_us": round(intercept_us, 3),
        "gather_intercept_us_per_step": round(intercept_us * f64::from(layers), 2),
        "device_report": opts.device_report.clone().unwrap_or(serde_json::Value::Null),
        "block_sizes": figures.iter().map(|f| json!({
            "block_size": f.block_size,
            "samples": f.samples,
            "overhead_median": round(f.overhead_median, 4),
            "overhead_of_sums": round(f.overhead_of_sums, 4),
            "paged_gb_s": round(f.paged_gb_s, 3),
            "contiguous_gb_s": round(f.contiguous_gb_s, 3),
            "paged_run_bytes": round(f.paged_run_bytes, 1),
        })).collect::<Vec<_>>(),
        "batch_sizes": batch_figures(&samples).iter().map(|b| json!({
            "block_size": b.block_size,
            "seqs": format!("{}-{}", b.seqs_min, b.seqs_max),
            "samples": b.samples,
            "mean_mib": round(b.mean_bytes / (1u64 << 20) as f64, 3),
            "paged_gb_s": round(b.paged_gb_s, 3),
            "contiguous_gb_s": round(b.contiguous_gb_s, 3),
        })).collect::<Vec<_>>(),
        "samples": samples.iter().map(|s| json!({
            "block_size": s.block_size, "step": s.step, "t_s": round(s.t_s, 4), "seqs": s.seqs,
            "tokens": s.tokens, "bytes": s.bytes, "paged_runs": s.paged_runs,
            "checksum": s.checksum.map(|c| format!("{c:016x}")),
            "paged_us": s.paged_us.iter().map(|&x| round(x, 2)).collect::<Vec<_>>(),
            "contiguous_us": s.contiguous_us.iter().map(|&x| round(x, 2)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let calibration = Calibration {
        schema: CALIBRATION_SCHEMA.into(),
        name: opts.name.clone(),
        device: opts.device.clone(),
        method: format!(
            "kvlab calibrate: replay of preset '{}' ({} s simulated) at block sizes {:?}; per step, the running batch's K/V of one layer gathered through its block tables vs from a contiguous copy ({} timed pairs after a warm-up, medians); efficiency = contiguous effective bandwidth / nominal; overhead = median paged/contiguous − 1",
            opts.config.id,
            opts.duration_s.unwrap_or(opts.config.duration_s),
            block_sizes,
            opts.reps
        ),
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
    let fit_r2 = line.map_or(f64::NAN, |l| l.r2);
    let mut summary = summarize(&calibration, &figures, nominal_gb_s, effective_gb_s, intercept_us, samples.len());
    let overall_gb_s = fit::gb_s(total_bytes, total_us);
    summary += &verdict(opts, &figures, (effective_gb_s, overall_gb_s), measured_read, fit_r2, samples.len());
    Ok(CalibrationRun { calibration, figures, summary })
}

fn line_json(l: Line, method: &str) -> serde_json::Value {
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

/// Today's date (UTC) as YYYY-MM-DD from the system clock.
pub fn today_utc() -> String {
    #[allow(clippy::disallowed_methods)] // the file records when it was measured
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    // Civil from days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The CPU's model name and core count, for the `device` field of a host calibration.
pub fn host_device_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("host memory: {model} ({cores} cores, read on one thread)")
}
