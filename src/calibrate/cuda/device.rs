//! The CUDA device and its block pool (`gpu` feature): loading the kernels (cubin first, PTX as
//! a fallback, both errors kept), timing with a cold L2 and CUDA events, the warm-up and the
//! reference bandwidths (device-to-device copy, streaming read).

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use super::info::{DeviceBandwidths, DeviceInfo};
use super::nvrtc;
use crate::calibrate::backend::{BlockPoolBackend, GatherResult, PoolGeometry};

/// Threads per block of the gathers (4 warps).
const GATHER_THREADS: u32 = 128;
const THREADS: u32 = 256;
/// Bytes of one plane each thread block of a gather reads (a chunk of whole blocks, at least one
/// per warp).
const CHUNK_BYTES: u32 = 32 << 10;
const OUT_SLOTS: usize = 1024;

fn err(what: &str) -> impl Fn(DriverError) -> String + '_ {
    move |e| format!("CUDA: {what} failed: {e:?}")
}

#[derive(Clone)]
struct Kernels {
    kv_write: CudaFunction,
    gather_paged: CudaFunction,
    gather_contiguous: CudaFunction,
    stage_contiguous: CudaFunction,
    read_stream: CudaFunction,
}

/// Device state every timing needs: the stream, two events, a buffer larger than L2 to flush it,
/// the checksum slots.
struct Timer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    stop: CudaEvent,
    /// Taken out only while the warm-up streams it.
    flush: Option<CudaSlice<u8>>,
    out: CudaSlice<u64>,
    read_stream: CudaFunction,
    sms: u32,
}

impl Timer {
    fn new(ctx: &Arc<CudaContext>, read_stream: CudaFunction, sms: u32, l2_bytes: u64) -> Result<Timer, String> {
        let stream = ctx.default_stream();
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let flush_bytes = (4 * l2_bytes).max(256 << 20) as usize;
        Ok(Timer {
            start: ctx.new_event(flags).map_err(err("creating an event"))?,
            stop: ctx.new_event(flags).map_err(err("creating an event"))?,
            flush: Some(stream.alloc_zeros::<u8>(flush_bytes).map_err(err("allocating the L2 flush buffer"))?),
            out: stream.alloc_zeros::<u64>(OUT_SLOTS).map_err(err("allocating the checksum slots"))?,
            stream,
            read_stream,
            sms,
        })
    }

    /// Overwrites the flush buffer when `cold` (evicting everything from L2; the device is busy
    /// with it while the host enqueues what follows, so the launch is not timed), then times
    /// `launch` alone between two events. Returns the checksum slots' sum and the device ns.
    fn timed(
        &mut self,
        cold: bool,
        launch: impl FnOnce(&Arc<CudaStream>, &mut CudaSlice<u64>) -> Result<(), String>,
    ) -> Result<(u64, u64), String> {
        self.stream.memset_zeros(&mut self.out).map_err(err("clearing checksums"))?;
        if let Some(flush) = self.flush.as_mut().filter(|_| cold) {
            self.stream.memset_zeros(flush).map_err(err("flushing L2"))?;
        }
        self.start.record(&self.stream).map_err(err("recording an event"))?;
        launch(&self.stream, &mut self.out)?;
        self.stop.record(&self.stream).map_err(err("recording an event"))?;
        self.stop.synchronize().map_err(err("waiting for a kernel"))?;
        let ms = self.start.elapsed_ms(&self.stop).map_err(err("reading an event"))?;
        let slots = self.stream.clone_dtoh(&self.out).map_err(err("reading checksums"))?;
        Ok((slots.iter().fold(0u64, |a, &x| a.wrapping_add(x)), (f64::from(ms) * 1e6) as u64))
    }

    /// One streaming read of `bytes` bytes at `data` (whole 16-byte vectors), timed from a cold L2
    /// (or, with `data` None, of the flush buffer itself, warm: the warm-up).
    fn stream_read<T: cudarc::driver::DeviceRepr>(
        &mut self,
        data: Option<&CudaSlice<T>>,
    ) -> Result<(u64, u64), String> {
        let cfg = LaunchConfig { grid_dim: (self.sms * 8, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let f = self.read_stream.clone();
        match data {
            Some(d) => {
                let vecs = (d.num_bytes() / 16) as u64;
                self.timed(true, |stream, out| {
                    let mut l = stream.launch_builder(&f);
                    l.arg(d).arg(&vecs).arg(out);
                    // SAFETY: arguments match read_stream; `vecs` 16-byte vectors lie inside `d`.
                    unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching read_stream"))
                })
            }
            None => {
                let flush = self.flush.take().expect("the flush buffer is only taken here");
                let vecs = (flush.len() / 16) as u64;
                let r = self.timed(false, |stream, out| {
                    let mut l = stream.launch_builder(&f);
                    l.arg(&flush).arg(&vecs).arg(out);
                    // SAFETY: as above, over the flush buffer.
                    unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching read_stream"))
                });
                self.flush = Some(flush);
                r
            }
        }
    }

    /// Streams the flush buffer until `ms` of device time has passed (at most 2,000 reads).
    fn warm(&mut self, ms: f64) -> Result<f64, String> {
        let mut spent = 0.0;
        for _ in 0..2000 {
            if spent >= ms {
                break;
            }
            spent += self.stream_read::<u8>(None)?.1 as f64 / 1e6;
        }
        Ok(spent)
    }
}

pub struct Device {
    pub info: DeviceInfo,
    ctx: Arc<CudaContext>,
    kernels: Kernels,
    timer: Timer,
}

/// The loaded kernels, how they were built (`sm_90 cubin`, …) and ptxas's registers per kernel.
type Loaded = (Kernels, String, Vec<(String, u32)>);

/// Loads the kernels: a cubin for the device's architecture, else PTX for the driver to JIT.
fn load_kernels(ctx: &Arc<CudaContext>, (major, minor): (i32, i32)) -> Result<Loaded, String> {
    let sm = format!("sm_{major}{minor}");
    let cubin = nvrtc::compile(&sm).and_then(|c| {
        let module = ctx.load_module(Ptx::from_binary(c.image.clone())).map_err(err("loading the cubin"))?;
        let regs = c.kernels.iter().map(|k| (k.name.clone(), k.registers)).collect();
        Ok((module, format!("{sm} cubin"), regs))
    });
    let (module, how, regs) = match cubin {
        Ok(m) => m,
        Err(cubin_error) => {
            let compute = format!("compute_{major}{minor}");
            let ptx = nvrtc::compile(&compute).and_then(|c| {
                let text = String::from_utf8_lossy(&c.image).trim_end_matches('\0').to_string();
                ctx.load_module(Ptx::from_src(text)).map_err(err("loading the PTX (JIT)"))
            });
            match ptx {
                Ok(m) => (m, format!("{compute} PTX (JIT; the {sm} cubin failed: {cubin_error})"), Vec::new()),
                Err(ptx_error) => {
                    return Err(format!(
                        "the calibration kernels could not be loaded.\n  as a {sm} cubin: {cubin_error}\n  as {compute} PTX: {ptx_error}"
                    ))
                }
            }
        }
    };
    let f = |n: &str| module.load_function(n).map_err(|e| format!("CUDA: kernel {n}: {e:?}"));
    let kernels = Kernels {
        kv_write: f("kv_write")?,
        gather_paged: f("gather_paged")?,
        gather_contiguous: f("gather_contiguous")?,
        stage_contiguous: f("stage_contiguous")?,
        read_stream: f("read_stream")?,
    };
    Ok((kernels, how, regs))
}

impl Device {
    pub fn open(ordinal: usize) -> Result<Device, String> {
        // SAFETY: only probes whether the driver library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver found (libcuda could not be loaded); run on a machine with an NVIDIA GPU and its driver".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| {
            format!("the CUDA driver is installed but device {ordinal} cannot be opened ({e:?}); check nvidia-smi")
        })?;
        // One stream only: cudarc's cross-stream event tracking would add work inside timings.
        // SAFETY: every allocation and launch of this program uses the default stream.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(err("reading the device name"))?;
        let nvrtc_version = nvrtc::version().map_err(|e| format!("found {name}, but {e}"))?;
        let cc = ctx.compute_capability().map_err(err("reading the compute capability"))?;
        let attr = |a| ctx.attribute(a).map_err(err("reading a device attribute"));
        let sms = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        let l2_bytes = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u64;
        let (kernels, how, registers) = load_kernels(&ctx, cc)?;
        let timer = Timer::new(&ctx, kernels.read_stream.clone(), sms, l2_bytes)?;
        Ok(Device {
            info: DeviceInfo {
                name,
                compute_capability: cc,
                multiprocessors: sms,
                l2_bytes,
                nvrtc_version,
                kernels: how,
                registers,
            },
            ctx,
            kernels,
            timer,
        })
    }

    pub fn warm_up(&mut self, ms: f64) -> Result<f64, String> {
        self.timer.warm(ms)
    }

    pub fn bandwidths(&mut self, bytes: u64) -> Result<DeviceBandwidths, String> {
        let n = (bytes / 16 * 16).max(16) as usize;
        let src = self.timer.stream.alloc_zeros::<u8>(n).map_err(err("allocating the copy source"))?;
        let mut dst = self.timer.stream.alloc_zeros::<u8>(n).map_err(err("allocating the copy target"))?;
        let (mut copy, mut read) = (Vec::new(), Vec::new());
        for _ in 0..6 {
            let src_ref = &src;
            let dst_ref = &mut dst;
            let (_, ns) =
                self.timer.timed(true, |stream, _| stream.memcpy_dtod(src_ref, dst_ref).map_err(err("copying")))?;
            copy.push(ns);
            read.push(self.timer.stream_read(Some(&src))?.1);
        }
        // The first of each is a warm-up.
        let median = |v: &mut Vec<u64>| {
            v.remove(0);
            v.sort_unstable();
            v[v.len() / 2].max(1) as f64
        };
        Ok(DeviceBandwidths {
            copy_gb_s: 2.0 * n as f64 / median(&mut copy),
            stream_read_gb_s: n as f64 / median(&mut read),
            bytes: n as u64,
        })
    }

    pub fn pool(&self, geometry: PoolGeometry) -> Result<CudaPool, String> {
        geometry.validate()?;
        if !geometry.block_size.is_power_of_two()
            || !geometry.plane_bytes.is_power_of_two()
            || geometry.plane_bytes < 16
        {
            return Err(format!(
                "the CUDA pool needs power-of-two block sizes and planes of 16 bytes or more (got block size {}, {} bytes per plane)",
                geometry.block_size, geometry.plane_bytes
            ));
        }
        let words = (geometry.pool_bytes() / 8) as usize;
        let pool = self.timer.stream.alloc_zeros::<u64>(words).map_err(err("allocating the pool"))?;
        Ok(CudaPool {
            geometry,
            name: self.info.name.clone(),
            kernels: self.kernels.clone(),
            timer: Timer::new(
                &self.ctx,
                self.kernels.read_stream.clone(),
                self.info.multiprocessors,
                self.info.l2_bytes,
            )?,
            pool,
            staging: None,
            staged: None,
            pending: Vec::new(),
            pending_blocks: vec![false; geometry.num_blocks as usize],
            error: None,
        })
    }
}

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
