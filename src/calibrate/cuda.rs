//! The CUDA block pool (`gpu` feature): one device allocation holding one layer's KV blocks,
//! written by a kernel and gathered by kernels compiled at run time with NVRTC. The paged kernel
//! reads every running sequence's K/V through its block table (one thread block per sequence,
//! plane and chunk of tokens, looking up the physical block of each token); the contiguous kernel
//! reads the same bytes from a contiguous copy with the same grid. Both are timed with CUDA
//! events, so `GatherResult::device_ns` carries the device time.
//!
//! The driver and NVRTC are loaded at run time (cudarc's dynamic loading): a build with the
//! feature runs anywhere and reports "no CUDA driver found" where there is none.

use crate::engine::backend::{BlockPoolBackend, PoolGeometry};

/// The message for a build without the feature.
pub const NOT_BUILT: &str =
    "this kvlab was built without `--features gpu`, so it cannot open a CUDA device; rebuild with `cargo build --release --features gpu` (or run scripts/calibrate-gpu.sh)";

/// The datasheet memory bandwidth of a GPU, by the name its driver reports (GB/s).
pub fn spec_bandwidth_gb_s(device_name: &str) -> Option<(f64, String)> {
    let n = device_name.to_ascii_uppercase();
    let (gb_s, what) = if n.contains("H200") {
        (4800.0, "H200 (HBM3e)")
    } else if n.contains("H100") && n.contains("PCIE") {
        (2000.0, "H100 PCIe")
    } else if n.contains("H100") && n.contains("NVL") {
        (3900.0, "H100 NVL")
    } else if n.contains("H100") || n.contains("H800") {
        (3350.0, "H100 SXM")
    } else if n.contains("GH200") {
        (4000.0, "GH200")
    } else if n.contains("B200") {
        (8000.0, "B200")
    } else if n.contains("A100") && n.contains("80GB") && n.contains("PCIE") {
        (1935.0, "A100 80GB PCIe")
    } else if n.contains("A100") && n.contains("80GB") {
        (2039.0, "A100 80GB SXM")
    } else if n.contains("A100") {
        (1555.0, "A100 40GB")
    } else if n.contains("L40S") || n.contains("L40") {
        (864.0, "L40S")
    } else if n.contains("L4") {
        (300.0, "L4")
    } else if n.contains("A10G") || n.contains("A10") {
        (600.0, "A10")
    } else if n.contains("4090") {
        (1008.0, "RTX 4090")
    } else {
        return None;
    };
    Some((gb_s, format!("datasheet bandwidth of the {what}: {gb_s} GB/s")))
}

/// An opened CUDA device on which pools can be made.
pub struct CudaDevice {
    #[cfg(feature = "gpu")]
    inner: imp::Device,
    #[cfg(not(feature = "gpu"))]
    _never: std::convert::Infallible,
}

impl CudaDevice {
    /// Opens device `ordinal`: fails cleanly without the feature, without a driver, without a
    /// device or without NVRTC.
    pub fn open(ordinal: usize) -> Result<CudaDevice, String> {
        #[cfg(feature = "gpu")]
        {
            imp::Device::open(ordinal).map(|inner| CudaDevice { inner })
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = ordinal;
            Err(NOT_BUILT.to_string())
        }
    }

    pub fn name(&self) -> String {
        #[cfg(feature = "gpu")]
        {
            self.inner.name.clone()
        }
        #[cfg(not(feature = "gpu"))]
        match self._never {}
    }

    /// A pool of `geometry` on this device (plane_bytes and block_size must be powers of two).
    pub fn pool(&self, geometry: PoolGeometry) -> Result<Box<dyn BlockPoolBackend>, String> {
        #[cfg(feature = "gpu")]
        {
            Ok(Box::new(self.inner.pool(geometry)?))
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = geometry;
            match self._never {}
        }
    }
}

#[cfg(feature = "gpu")]
mod imp {
    use std::sync::Arc;

    use cudarc::driver::{sys, CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
    use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};

    use crate::engine::backend::{BlockPoolBackend, GatherResult, PoolGeometry};

    /// Kernels, compiled at run time. Indices are u32 within a sequence; pool offsets are u64.
    const KERNELS: &str = r#"
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

__device__ __forceinline__ u64 kv_word(u64 seed, u32 index, u32 k) {
    return splitmix64(seed + ((((u64)index) << 32) | (u64)k));
}

// Every thread of the block must reach this (blockDim.x is a multiple of 32).
__device__ __forceinline__ void reduce_add(u64* out, u64 acc) {
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31u) == 0u) {
        u32 slot = (blockIdx.x * 131u + blockIdx.y * 31u + blockIdx.z * 7u + (threadIdx.x >> 5)) & 1023u;
        atomicAdd(out + slot, acc);
    }
}

// One thread block per write; desc holds (block, offset, n, seed) per write.
extern "C" __global__ void kv_write(u64* pool, const u64* desc, u32 planes, u32 block_size, u32 plane_words) {
    const u64* d = desc + 4ull * blockIdx.x;
    u32 block = (u32)d[0], offset = (u32)d[1], n = (u32)d[2];
    u64 seed = d[3];
    u32 token_words = planes * plane_words;
    u32 total = n * token_words;
    for (u32 w = threadIdx.x; w < total; w += blockDim.x) {
        u32 i = w / token_words, k = w % token_words;
        u32 p = k / plane_words, kk = k % plane_words;
        u64 idx = (((u64)block * planes + p) * block_size + offset + i) * plane_words + kk;
        pool[idx] = kv_word(seed, i, k);
    }
}

// grid: x = chunk of chunk_tokens tokens, y = sequence, z = plane.
extern "C" __global__ void gather_paged(const u64* pool, const u32* tables, const u32* table_off,
        const u32* tokens, u32 planes, u32 bshift, u32 pshift, u32 chunk_tokens, u64* out) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    u32 t_lo = blockIdx.x * chunk_tokens;
    u32 t_hi = umin(n, t_lo + chunk_tokens);
    const u32* table = tables + table_off[s];
    u64 acc = 0;
    if (t_lo < t_hi) {
        u32 words = (t_hi - t_lo) << pshift;
        u32 pmask = (1u << pshift) - 1u, bmask = (1u << bshift) - 1u;
        for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
            u32 t = t_lo + (w >> pshift);
            u64 b = table[t >> bshift];
            u64 idx = ((((b * planes + p) << bshift) + (t & bmask)) << pshift) | (w & pmask);
            acc += pool[idx] * (2ull * t + 1ull);
        }
    }
    reduce_add(out, acc);
}

extern "C" __global__ void gather_contiguous(const u64* staging, const u64* seq_base, const u32* tokens,
        u32 pshift, u32 chunk_tokens, u64* out) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    u32 t_lo = blockIdx.x * chunk_tokens;
    u32 t_hi = umin(n, t_lo + chunk_tokens);
    u64 acc = 0;
    if (t_lo < t_hi) {
        const u64* base = staging + seq_base[s] + (((u64)p * n + t_lo) << pshift);
        u32 words = (t_hi - t_lo) << pshift;
        for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
            acc += base[w] * (2ull * (t_lo + (w >> pshift)) + 1ull);
        }
    }
    reduce_add(out, acc);
}

// The paged walk again, copying into the contiguous layout (untimed).
extern "C" __global__ void stage_contiguous(const u64* pool, const u32* tables, const u32* table_off,
        const u32* tokens, const u64* seq_base, u32 planes, u32 bshift, u32 pshift, u32 chunk_tokens,
        u64* staging) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    u32 t_lo = blockIdx.x * chunk_tokens;
    u32 t_hi = umin(n, t_lo + chunk_tokens);
    if (t_lo >= t_hi) return;
    const u32* table = tables + table_off[s];
    u64* dst = staging + seq_base[s] + (((u64)p * n + t_lo) << pshift);
    u32 words = (t_hi - t_lo) << pshift;
    u32 pmask = (1u << pshift) - 1u, bmask = (1u << bshift) - 1u;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        u32 t = t_lo + (w >> pshift);
        u64 b = table[t >> bshift];
        dst[w] = pool[((((b * planes + p) << bshift) + (t & bmask)) << pshift) | (w & pmask)];
    }
}

extern "C" __global__ void read_pool(const u64* pool, u64 words, u64* out) {
    u64 acc = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x) {
        acc += pool[i];
    }
    reduce_add(out, acc);
}
"#;

    const THREADS: u32 = 256;
    /// Words each thread block of a gather reads (64 KiB).
    const CHUNK_WORDS: u32 = 8192;
    const OUT_SLOTS: usize = 1024;

    pub struct Device {
        pub name: String,
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        kv_write: CudaFunction,
        gather_paged: CudaFunction,
        gather_contiguous: CudaFunction,
        stage_contiguous: CudaFunction,
        read_pool: CudaFunction,
    }

    fn err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> String + '_ {
        move |e| format!("CUDA: {what} failed: {e:?}")
    }

    impl Device {
        pub fn open(ordinal: usize) -> Result<Device, String> {
            // SAFETY: only probes whether the driver library can be loaded.
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                return Err("no CUDA driver found (libcuda could not be loaded); run on a machine with an NVIDIA GPU and its driver".into());
            }
            let ctx = CudaContext::new(ordinal).map_err(|e| {
                format!("the CUDA driver is installed but device {ordinal} cannot be opened ({e:?}); check nvidia-smi")
            })?;
            let name = ctx.name().map_err(err("reading the device name"))?;
            // SAFETY: as above, for NVRTC.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(format!(
                    "found {name}, but not NVRTC (libnvrtc.so), which compiles the gather kernels; install the CUDA toolkit's nvrtc or add its lib directory to LD_LIBRARY_PATH"
                ));
            }
            let (major, minor) = ctx.compute_capability().map_err(err("reading the compute capability"))?;
            let compile = |arch: Option<String>| {
                let opts = CompileOptions { options: arch.into_iter().collect(), ..CompileOptions::default() };
                compile_ptx_with_opts(KERNELS, opts)
            };
            let ptx = compile(Some(format!("--gpu-architecture=compute_{major}{minor}")))
                .or_else(|_| compile(None))
                .map_err(|e| format!("NVRTC could not compile the gather kernels: {e:?}"))?;
            let module = ctx.load_module(ptx).map_err(err("loading the kernels"))?;
            let f = |n: &str| module.load_function(n).map_err(|e| format!("CUDA: kernel {n}: {e:?}"));
            Ok(Device {
                name,
                stream: ctx.default_stream(),
                kv_write: f("kv_write")?,
                gather_paged: f("gather_paged")?,
                gather_contiguous: f("gather_contiguous")?,
                stage_contiguous: f("stage_contiguous")?,
                read_pool: f("read_pool")?,
                ctx,
            })
        }

        pub fn pool(&self, geometry: PoolGeometry) -> Result<CudaPool, String> {
            geometry.validate()?;
            if !geometry.block_size.is_power_of_two() || !(geometry.plane_bytes / 8).is_power_of_two() {
                return Err(format!(
                    "the CUDA pool needs power-of-two block sizes and plane sizes (got block size {}, {} bytes per plane)",
                    geometry.block_size, geometry.plane_bytes
                ));
            }
            let words = (geometry.pool_bytes() / 8) as usize;
            let pool = self.stream.alloc_zeros::<u64>(words).map_err(err("allocating the pool"))?;
            let out = self.stream.alloc_zeros::<u64>(OUT_SLOTS).map_err(err("allocating the checksum slots"))?;
            Ok(CudaPool {
                geometry,
                name: self.name.clone(),
                ctx: self.ctx.clone(),
                stream: self.stream.clone(),
                funcs: [
                    self.kv_write.clone(),
                    self.gather_paged.clone(),
                    self.gather_contiguous.clone(),
                    self.stage_contiguous.clone(),
                    self.read_pool.clone(),
                ],
                pool,
                out,
                staging: None,
                staged: None,
                pending: Vec::new(),
                pending_blocks: vec![false; geometry.num_blocks as usize],
                error: None,
            })
        }
    }

    /// A batch on the device: flattened tables, offsets, token counts, contiguous bases.
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
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        /// kv_write, gather_paged, gather_contiguous, stage_contiguous, read_pool.
        funcs: [CudaFunction; 5],
        pool: CudaSlice<u64>,
        out: CudaSlice<u64>,
        staging: Option<CudaSlice<u64>>,
        staged: Option<DeviceBatch>,
        pending: Vec<u64>,
        /// Blocks with a write in `pending`.
        pending_blocks: Vec<bool>,
        error: Option<String>,
    }

    impl CudaPool {
        fn shifts(&self) -> (u32, u32, u32) {
            let g = self.geometry;
            let pshift = (g.plane_bytes / 8).trailing_zeros();
            let bshift = g.block_size.trailing_zeros();
            (bshift, pshift, (CHUNK_WORDS >> pshift).max(1))
        }

        fn flush_writes(&mut self) -> Result<(), String> {
            if self.pending.is_empty() {
                return Ok(());
            }
            let desc = self.stream.clone_htod(&self.pending).map_err(err("uploading writes"))?;
            let g = self.geometry;
            let n = (self.pending.len() / 4) as u32;
            let cfg = LaunchConfig { grid_dim: (n, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
            let (planes, bs, pw) = (g.planes, g.block_size, g.plane_words() as u32);
            let mut b = self.stream.launch_builder(&self.funcs[0]);
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
            let s = &self.stream;
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

        fn grid(&self, b: &DeviceBatch) -> LaunchConfig {
            let chunk = self.shifts().2;
            LaunchConfig {
                grid_dim: (b.max_tokens.div_ceil(chunk).max(1), b.num_seqs.max(1), self.geometry.planes),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            }
        }

        /// Zeroes the checksum slots, runs `launch` between two timing events, sums the slots.
        fn timed(&mut self, launch: impl FnOnce(&mut Self) -> Result<(), String>) -> Result<(u64, u64), String> {
            self.stream.memset_zeros(&mut self.out).map_err(err("clearing checksums"))?;
            let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
            let start = self.ctx.new_event(flags).map_err(err("creating an event"))?;
            let stop = self.ctx.new_event(flags).map_err(err("creating an event"))?;
            start.record(&self.stream).map_err(err("recording an event"))?;
            launch(self)?;
            stop.record(&self.stream).map_err(err("recording an event"))?;
            let ms = start.elapsed_ms(&stop).map_err(err("reading an event"))?;
            let slots = self.stream.clone_dtoh(&self.out).map_err(err("reading checksums"))?;
            let sum = slots.iter().fold(0u64, |a, &x| a.wrapping_add(x));
            Ok((sum, (f64::from(ms) * 1e6) as u64))
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
            let cfg = self.grid(&b);
            let (bshift, pshift, chunk) = self.shifts();
            let planes = self.geometry.planes;
            let timing = self.timed(|me| {
                let mut l = me.stream.launch_builder(&me.funcs[1]);
                l.arg(&me.pool).arg(&b.tables).arg(&b.table_off).arg(&b.tokens);
                l.arg(&planes).arg(&bshift).arg(&pshift).arg(&chunk).arg(&mut me.out);
                // SAFETY: arguments match gather_paged; tables were checked against the pool.
                unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching gather_paged"))
            })?;
            Ok(self.result(b.total_tokens, b.paged_runs, timing))
        }

        fn try_stage(&mut self, tables: &[&[u32]], tokens: &[u32]) -> Result<(), String> {
            self.flush_writes()?;
            let b = self.upload(tables, tokens)?;
            let words = (b.total_tokens as usize * self.geometry.token_words()).max(1);
            if self.staging.as_ref().is_none_or(|s| s.len() < words) {
                self.staging = None;
                self.staging =
                    Some(self.stream.alloc_zeros::<u64>(words).map_err(err("allocating the contiguous copy"))?);
            }
            let cfg = self.grid(&b);
            let (bshift, pshift, chunk) = self.shifts();
            let planes = self.geometry.planes;
            let staging = self.staging.as_mut().expect("allocated above");
            let mut l = self.stream.launch_builder(&self.funcs[3]);
            l.arg(&self.pool).arg(&b.tables).arg(&b.table_off).arg(&b.tokens).arg(&b.seq_base);
            l.arg(&planes).arg(&bshift).arg(&pshift).arg(&chunk).arg(staging);
            // SAFETY: arguments match stage_contiguous; the copy holds every staged token.
            unsafe { l.launch(cfg) }.map_err(err("launching stage_contiguous"))?;
            self.staged = Some(b);
            Ok(())
        }

        fn try_gather_contiguous(&mut self) -> Result<GatherResult, String> {
            let b = self.staged.take().ok_or("gather_contiguous before stage_contiguous")?;
            let cfg = self.grid(&b);
            let (_, pshift, chunk) = self.shifts();
            let staging = self.staging.take().expect("staged");
            let timing = self.timed(|me| {
                let mut l = me.stream.launch_builder(&me.funcs[2]);
                l.arg(&staging).arg(&b.seq_base).arg(&b.tokens).arg(&pshift).arg(&chunk).arg(&mut me.out);
                // SAFETY: arguments match gather_contiguous; bases lie inside the staged copy.
                unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching gather_contiguous"))
            });
            self.staging = Some(staging);
            let runs = b.tokens.len() as u64 * u64::from(self.geometry.planes);
            let (tokens, r) = (b.total_tokens, timing?);
            self.staged = Some(b);
            Ok(self.result(tokens, runs, r))
        }

        fn try_read_pool(&mut self) -> Result<GatherResult, String> {
            self.flush_writes()?;
            let words = self.pool.len() as u64;
            let cfg = LaunchConfig { grid_dim: (132 * 16, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
            let timing = self.timed(|me| {
                let mut l = me.stream.launch_builder(&me.funcs[4]);
                l.arg(&me.pool).arg(&words).arg(&mut me.out);
                // SAFETY: arguments match read_pool.
                unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching read_pool"))
            })?;
            let mut r = self.result(0, 1, timing);
            r.bytes = self.geometry.pool_bytes();
            Ok(r)
        }
    }

    impl CudaPool {
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
        fn take_error(&mut self) -> Option<String> {
            self.error.take()
        }
    }
}
