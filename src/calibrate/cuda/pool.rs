//! `CudaPool` (`gpu` feature): one layer's paged KV pool in device memory, written as the trace
//! replays, gathered through block tables or from a contiguous copy by the kernels, each gather
//! timed with CUDA events and checksummed.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use crate::calibrate::backend::{BlockPoolBackend, GatherResult, PoolGeometry};
use crate::calibrate::cuda::timer::{err, Kernels, Timer, CHUNK_BYTES, GATHER_THREADS, THREADS};

/// A batch on the device: flattened tables, offsets, token counts, contiguous bases (in words).
struct DeviceBatch {
    tables: CudaSlice<u32>,
    table_off: CudaSlice<u32>,
    tokens: CudaSlice<u32>,
    seq_base: CudaSlice<u64>,
    num_seqs: u32,
    max_tokens: u32,
    total_tokens: u64,
    paged_runs: u64,
}

pub struct CudaPool {
    geometry: PoolGeometry,
    name: String,
    kernels: Kernels,
    timer: Timer,
    pool: CudaSlice<u64>,
    staging: Option<CudaSlice<u64>>,
    staged: Option<DeviceBatch>,
    pending: Vec<u64>,
    /// Blocks with a write in `pending`.
    pending_blocks: Vec<bool>,
    error: Option<String>,
}

impl CudaPool {
    pub(crate) fn new(
        geometry: PoolGeometry,
        name: String,
        kernels: Kernels,
        timer: Timer,
        pool: CudaSlice<u64>,
    ) -> CudaPool {
        CudaPool {
            geometry,
            name,
            kernels,
            timer,
            pool,
            staging: None,
            staged: None,
            pending: Vec::new(),
            pending_blocks: vec![false; geometry.num_blocks as usize],
            error: None,
        }
    }

    /// (log2 block size, log2 16-byte vectors per plane, blocks per chunk of a gather).
    fn shifts(&self) -> (u32, u32, u32) {
        let g = self.geometry;
        let run_bytes = g.block_size * g.plane_bytes;
        // At least one block per warp, so that large blocks keep every warp of a CTA busy.
        let chunk_blocks = (CHUNK_BYTES / run_bytes).max(GATHER_THREADS / 32);
        (g.block_size.trailing_zeros(), (g.plane_bytes / 16).trailing_zeros(), chunk_blocks)
    }

    fn flush_writes(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let stream = self.timer.stream.clone();
        let desc = stream.clone_htod(&self.pending).map_err(err("uploading writes"))?;
        let g = self.geometry;
        let n = (self.pending.len() / 4) as u32;
        let cfg = LaunchConfig { grid_dim: (n, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let (planes, bs, pw) = (g.planes, g.block_size, g.plane_words() as u32);
        let mut b = stream.launch_builder(&self.kernels.kv_write);
        b.arg(&mut self.pool).arg(&desc).arg(&planes).arg(&bs).arg(&pw);
        // SAFETY: the arguments match kv_write's signature; every write lies inside the pool
        // (checked in write_tokens).
        unsafe { b.launch(cfg) }.map_err(err("launching kv_write"))?;
        for d in self.pending.chunks_exact(4) {
            self.pending_blocks[d[0] as usize] = false;
        }
        self.pending.clear();
        Ok(())
    }

    fn upload(&self, tables: &[&[u32]], tokens: &[u32]) -> Result<DeviceBatch, String> {
        let g = self.geometry;
        g.check_batch(tables, tokens)?;
        let mut flat = Vec::new();
        let mut off = Vec::with_capacity(tables.len());
        let mut base = Vec::with_capacity(tables.len());
        let (mut at, mut runs) = (0u64, 0u64);
        for (t, &n) in tables.iter().zip(tokens) {
            off.push(flat.len() as u32);
            flat.extend_from_slice(&t[..n.div_ceil(g.block_size) as usize]);
            base.push(at);
            at += u64::from(n) * g.token_words() as u64;
            runs += u64::from(n.div_ceil(g.block_size)) * u64::from(g.planes);
        }
        flat.push(0); // never empty
        let s = &self.timer.stream;
        Ok(DeviceBatch {
            tables: s.clone_htod(&flat).map_err(err("uploading block tables"))?,
            table_off: s.clone_htod(&off).map_err(err("uploading block tables"))?,
            tokens: s.clone_htod(tokens).map_err(err("uploading token counts"))?,
            seq_base: s.clone_htod(&base).map_err(err("uploading offsets"))?,
            num_seqs: tokens.len() as u32,
            max_tokens: tokens.iter().copied().max().unwrap_or(0),
            total_tokens: tokens.iter().map(|&n| u64::from(n)).sum(),
            paged_runs: runs,
        })
    }

    /// The gathers' grid: x = chunks of whole blocks, y = sequences, z = planes.
    fn gather_grid(&self, b: &DeviceBatch) -> LaunchConfig {
        let (bshift, _, chunk_blocks) = self.shifts();
        let max_blocks = b.max_tokens.div_ceil(1 << bshift);
        LaunchConfig {
            grid_dim: (max_blocks.div_ceil(chunk_blocks).max(1), b.num_seqs.max(1), self.geometry.planes),
            block_dim: (GATHER_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    fn result(&self, tokens: u64, runs: u64, (checksum, ns): (u64, u64)) -> GatherResult {
        GatherResult {
            tokens,
            bytes: tokens * self.geometry.token_bytes(),
            runs,
            checksum: Some(checksum),
            device_ns: Some(ns),
        }
    }

    fn try_gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> Result<GatherResult, String> {
        self.flush_writes()?;
        let b = self.upload(tables, tokens)?;
        let cfg = self.gather_grid(&b);
        let (bshift, pvshift, chunk) = self.shifts();
        let planes = self.geometry.planes;
        let (f, pool) = (self.kernels.gather_paged.clone(), &self.pool);
        let timing = self.timer.timed(true, |stream, out| {
            let mut l = stream.launch_builder(&f);
            l.arg(pool).arg(&b.tables).arg(&b.table_off).arg(&b.tokens);
            l.arg(&planes).arg(&bshift).arg(&pvshift).arg(&chunk).arg(out);
            // SAFETY: arguments match gather_paged; tables were checked against the pool.
            unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching gather_paged"))
        })?;
        Ok(self.result(b.total_tokens, b.paged_runs, timing))
    }

    fn try_stage(&mut self, tables: &[&[u32]], tokens: &[u32]) -> Result<(), String> {
        self.flush_writes()?;
        let b = self.upload(tables, tokens)?;
        let g = self.geometry;
        let words = (b.total_tokens as usize * g.token_words()).max(2);
        if self.staging.as_ref().is_none_or(|s| s.len() < words) {
            self.staging = None;
            self.staging =
                Some(self.timer.stream.alloc_zeros::<u64>(words).map_err(err("allocating the contiguous copy"))?);
        }
        let per_plane = u64::from(b.max_tokens) * g.plane_words() as u64;
        let x = per_plane.div_ceil(u64::from(THREADS)).clamp(1, 64) as u32;
        let cfg = LaunchConfig {
            grid_dim: (x, b.num_seqs.max(1), g.planes),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (planes, bs, pw) = (g.planes, g.block_size, g.plane_words() as u32);
        let staging = self.staging.as_mut().expect("allocated above");
        let mut l = self.timer.stream.launch_builder(&self.kernels.stage_contiguous);
        l.arg(&self.pool).arg(&b.tables).arg(&b.table_off).arg(&b.tokens).arg(&b.seq_base);
        l.arg(&planes).arg(&bs).arg(&pw).arg(staging);
        // SAFETY: arguments match stage_contiguous; the copy holds every staged token.
        unsafe { l.launch(cfg) }.map_err(err("launching stage_contiguous"))?;
        self.staged = Some(b);
        Ok(())
    }

    fn try_gather_contiguous(&mut self) -> Result<GatherResult, String> {
        let b = self.staged.take().ok_or("gather_contiguous before stage_contiguous")?;
        let cfg = self.gather_grid(&b);
        let (bshift, pvshift, chunk) = self.shifts();
        let staging = self.staging.take().expect("staged");
        let f = self.kernels.gather_contiguous.clone();
        let timing = self.timer.timed(true, |stream, out| {
            let mut l = stream.launch_builder(&f);
            l.arg(&staging).arg(&b.seq_base).arg(&b.tokens).arg(&bshift).arg(&pvshift).arg(&chunk).arg(out);
            // SAFETY: arguments match gather_contiguous; bases lie inside the staged copy.
            unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching gather_contiguous"))
        });
        self.staging = Some(staging);
        let runs = b.num_seqs as u64 * u64::from(self.geometry.planes);
        let (tokens, r) = (b.total_tokens, timing?);
        self.staged = Some(b);
        Ok(self.result(tokens, runs, r))
    }

    fn try_read_pool(&mut self) -> Result<GatherResult, String> {
        self.flush_writes()?;
        let timing = self.timer.stream_read(Some(&self.pool))?;
        let mut r = self.result(0, 1, timing);
        r.bytes = self.geometry.pool_bytes();
        Ok(r)
    }

    /// Keeps the first device error for `take_error` and carries on with a default value.
    fn latch<T: Default>(&mut self, r: Result<T, String>) -> T {
        r.unwrap_or_else(|e| {
            self.error.get_or_insert(e);
            T::default()
        })
    }
}

impl BlockPoolBackend for CudaPool {
    fn geometry(&self) -> PoolGeometry {
        self.geometry
    }
    fn label(&self) -> String {
        format!("cuda: {}", self.name)
    }
    fn write_tokens(&mut self, block: u32, offset_tokens: u32, n_tokens: u32, seed: u64) {
        let g = self.geometry;
        assert!(block < g.num_blocks && offset_tokens + n_tokens <= g.block_size, "write outside block {block}");
        // Writes in one launch run in any order: a block written twice waits for a flush.
        if self.pending_blocks[block as usize] {
            let r = self.flush_writes();
            self.latch(r);
        }
        self.pending_blocks[block as usize] = true;
        self.pending.extend([u64::from(block), u64::from(offset_tokens), u64::from(n_tokens), seed]);
        if self.pending.len() >= 4 * 65_536 {
            let r = self.flush_writes();
            self.latch(r);
        }
    }
    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> GatherResult {
        let r = self.try_gather(tables, tokens);
        self.latch(r)
    }
    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]) {
        let r = self.try_stage(tables, tokens);
        self.latch(r)
    }
    fn gather_contiguous(&mut self) -> GatherResult {
        let r = self.try_gather_contiguous();
        self.latch(r)
    }
    fn read_pool(&mut self) -> GatherResult {
        let r = self.try_read_pool();
        self.latch(r)
    }
    fn warm(&mut self) {
        let r = self.timer.warm(2.0).map(|_| ());
        self.latch(r)
    }
    fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }
}
