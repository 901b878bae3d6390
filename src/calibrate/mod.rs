//! Calibration (native only): replays the engine's allocation trace for a preset against a real
//! block pool (host memory, or a CUDA device with the `gpu` feature), times paged and contiguous
//! reads of the same bytes across block sizes and batch sizes, and fits the step-time model's
//! constants into a `kvlab/calibration@1` file. See docs/CALIBRATION.md.
//!
//! This is the only place with a wall clock: the host pool is timed with `Instant` here, the
//! CUDA pool with device events. The engine stays pure.

pub mod backend;
pub mod cuda;
mod file;
pub mod fit;
pub mod host;
mod measure;
mod options;
pub mod trace;

use crate::calibrate::backend::{BlockPoolBackend, PoolGeometry, SimulatedPool};
use crate::calibrate::file::build;
use crate::calibrate::measure::{replay_and_measure, timed, Referenced};
use crate::calibrate::trace::{paged_config, TraceReplayer};
use crate::engine::SimConfig;
pub use options::{CalibrateOptions, CalibrationRun, Nominal, DEFAULT_BLOCK_SIZES};

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
