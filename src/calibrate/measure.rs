//! The measuring half of a calibration: replays a preset's trace into a real block pool (checked
//! against a content-tracking reference pool fed the same writes) and times each sampled step's
//! running batch read through its block tables and from a contiguous copy.

use std::hint::black_box;
use std::time::Instant;

use crate::calibrate::backend::{BlockPoolBackend, GatherResult, PoolGeometry, SimulatedPool};
use crate::calibrate::fit::Sample;
use crate::calibrate::options::CalibrateOptions;
use crate::calibrate::trace::{StepBatch, TraceReplayer};

pub(crate) fn timed(f: impl FnOnce() -> GatherResult) -> (GatherResult, u64) {
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
pub(crate) struct Referenced<'a> {
    pub(crate) real: &'a mut dyn BlockPoolBackend,
    pub(crate) reference: SimulatedPool,
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

pub(crate) fn replay_and_measure(
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
