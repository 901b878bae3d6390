//! Validation of a `SimConfig` (the type is config.rs's): the KV memory derived from the GPU,
//! the field checks every preset must pass whatever its memory, then what depends on the KV
//! memory. vLLM's startup checks (startup_checks.rs) refuse a well-formed setup in vLLM's words
//! (`ConfigError::startup_refusal`); every other error names the preset path and the allowed range.

use std::fmt;

use super::config::{AllocatorConfig, ConfigError, PreemptionMode, Reserve, SimConfig};
#[cfg(feature = "fleet")]
use super::fleet::config::MAX_REPLICAS;
use super::kv_spec::KvLayout;
use super::memory_budget::{splits_kv_heads, TENSOR_PARALLEL_SIZES};
use super::model::GIB;
use super::numbers::show_number;
use super::startup_checks::{
    check_block_size, check_free_memory, check_hybrid_max_model_len_fits, check_kv_cache_memory,
    check_max_model_len_fits,
};
use super::workload::{Arrival, MAX_TENANTS};

/// The fixed ranges of the whole-number fields [`SimConfig::validate_fields`] checks, by path:
/// the one table both the range check and a reader's type error (`"lots"` where a number
/// belongs: `formats::json`) take the range from.
pub const WHOLE_NUMBER_RANGES: &[(&str, u32, u32)] = &[
    ("model.layers", 1, 256),
    ("model.kv_heads", 1, 256),
    ("model.head_dim", 1, 1024),
    ("scheduler.max_num_seqs", 1, 4096),
    ("scheduler.max_num_batched_tokens", 1, 1 << 20),
    ("scheduler.max_model_len", 2, 1 << 20),
    ("allocator.block_size", 1, 256),
];

/// The range [`WHOLE_NUMBER_RANGES`] gives `field`.
pub fn whole_number_range(field: &str) -> Option<(u32, u32)> {
    WHOLE_NUMBER_RANGES.iter().find(|(f, ..)| *f == field).map(|&(_, lo, hi)| (lo, hi))
}

/// [`check_range`] with the range of [`WHOLE_NUMBER_RANGES`].
fn check_fixed(field: &str, v: u32) -> Result<(), ConfigError> {
    let (lo, hi) = whole_number_range(field).expect("a field of WHOLE_NUMBER_RANGES");
    check_range(field, v, lo, hi)
}

fn check_range<T: PartialOrd + fmt::Display + Copy>(field: &str, v: T, lo: T, hi: T) -> Result<(), ConfigError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ConfigError::new(field, format!("{v} is out of range; use a value from {lo} to {hi}")))
    }
}

/// `tensor_parallel_size` is 1, 2, 4 or 8, and splits the KV heads evenly (or replicates them),
/// as vLLM requires.
fn check_tensor_parallel(c: &SimConfig) -> Result<(), ConfigError> {
    let tp = c.tensor_parallel_size;
    if !TENSOR_PARALLEL_SIZES.contains(&tp) {
        return Err(ConfigError::new("tensor_parallel_size", format!("{tp} is not supported; use 1, 2, 4 or 8")));
    }
    let heads = c.model.kv_heads;
    if !splits_kv_heads(heads, tp) {
        return Err(ConfigError::new(
            "tensor_parallel_size",
            format!(
                "{tp} GPUs cannot split {heads} KV heads evenly; use a size that divides them or a multiple of them"
            ),
        ));
    }
    Ok(())
}

fn check_f64(field: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ConfigError::new(field, format!("{} is out of range; use a number from {lo} to {hi}", show_number(v))))
    }
}

impl SimConfig {
    /// Sets `kv_memory_gib` to what vLLM would leave for the KV cache on this GPU (the whole
    /// replica's), or says in vLLM's words why it would not start (a startup refusal).
    pub fn derive_kv_memory(&mut self) -> Result<(), ConfigError> {
        if self.gpu_memory.is_none() {
            return Ok(());
        }
        let field = "gpu_memory_utilization";
        if let Some(g) = &self.gpu_memory {
            check_f64(field, g.gpu_memory_utilization, 0.01, 1.0)?;
            check_f64("gpu_memory_in_use_gib", g.gpu_memory_in_use_gib, 0.0, self.gpu.memory_gib)?;
        }
        check_tensor_parallel(self)?;
        let budget = self.memory_budget().ok_or_else(|| {
            ConfigError::new(
                field,
                format!(
                    "needs a model whose shape kvlab knows ({}); give kv_memory_gib for a custom model",
                    super::model::MODEL_IDS.join(", ")
                ),
            )
        })?;
        check_free_memory(&budget).map_err(|m| ConfigError::startup_refusal(field, m))?;
        let starts_at = |t: u32| {
            let mut at = self.clone();
            at.tensor_parallel_size = t;
            at.memory_budget()
                .is_some_and(|b| b.weights_bytes <= b.free_at_startup_bytes && check_kv_cache_memory(&b).is_ok())
        };
        super::gpu_fit::check_weights_fit(&self.model, &self.gpu.id, &budget, &starts_at)
            .map_err(|m| ConfigError::new("model", m))?;
        check_kv_cache_memory(&budget).map_err(|m| ConfigError::startup_refusal(field, m))?;
        self.kv_memory_gib = budget.replica_kv_bytes() as f64 / GIB as f64;
        Ok(())
    }

    /// Checks every range, vLLM's startup checks, and that a typical request of every class can
    /// ever fit.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_fields()?;
        self.validate_memory()
    }

    /// Everything a preset must get right whatever memory it has: ranges, scheduler rules, tensor
    /// parallelism, the workload's shape. A setup that passes is well formed, even if vLLM would
    /// refuse to start it.
    pub fn validate_fields(&self) -> Result<(), ConfigError> {
        check_f64("duration_s", self.duration_s, 1.0, 604_800.0)?;
        let m = &self.model;
        check_fixed("model.layers", m.layers)?;
        check_fixed("model.kv_heads", m.kv_heads)?;
        check_fixed("model.head_dim", m.head_dim)?;
        check_f64("model.params_b", m.params_b, 0.01, 5000.0)?;
        let s = &self.scheduler;
        check_fixed("scheduler.max_num_seqs", s.max_num_seqs)?;
        check_fixed("scheduler.max_num_batched_tokens", s.max_num_batched_tokens)?;
        check_fixed("scheduler.max_model_len", s.max_model_len)?;
        check_f64("scheduler.swap_space_gib", s.swap_space_gib, 0.0, 4096.0)?;
        if let Some(w) = s.watermark {
            check_f64("scheduler.watermark", w, 0.0, 0.5)?;
        }
        if self.paged_v1() && s.preemption == PreemptionMode::Swap {
            return Err(ConfigError::new(
                "scheduler.preemption",
                "vLLM v1 has no swap (it preempts by recompute); use \"recompute\", or set scheduler.engine to \"v0\"",
            ));
        }
        if self.paged_v1() && !s.chunked_prefill && s.max_num_batched_tokens < s.max_model_len {
            // vLLM refuses this at startup (SchedulerConfig): a preempted request re-prefills its
            // prompt and output in one pass and could never fit a step again.
            return Err(ConfigError::new(
                "scheduler.max_num_batched_tokens",
                format!(
                    "{} < max_model_len {}: without chunked prefill vLLM v1 needs a step to hold a whole sequence; raise it to {}, lower scheduler.max_model_len, or set scheduler.chunked_prefill",
                    s.max_num_batched_tokens, s.max_model_len, s.max_model_len
                ),
            ));
        }
        check_tensor_parallel(self)?;
        if let AllocatorConfig::Paged { block_size, prefix_caching } = self.allocator {
            check_fixed("allocator.block_size", block_size)?;
            if prefix_caching && self.kv_cache_group_kinds().is_some() {
                return Err(ConfigError::new(
                    "allocator.prefix_caching",
                    "kvlab runs vLLM's hybrid KV cache (this model's sliding-window or chunked layers, a block table per KV cache group) without prefix caching: vLLM's cache hits across groups are not simulated; set allocator.prefix_caching to false",
                ));
            }
        }
        self.validate_offload()?;
        #[cfg(feature = "fleet")]
        self.validate_fleet()?;
        self.validate_workload_fields()
    }

    /// A fleet has 1 to 64 replicas behind a router whose weights are finite and non-negative;
    /// its arrivals are known up front (an open loop or a trace). Builds without the `fleet`
    /// feature read no `replicas` or `router` (every configuration is one replica).
    #[cfg(feature = "fleet")]
    fn validate_fleet(&self) -> Result<(), ConfigError> {
        check_range("replicas", self.replicas, 1, MAX_REPLICAS)?;
        let w = &self.router.weights;
        check_f64("router.weights.queue", w.queue, 0.0, 1000.0)?;
        check_f64("router.weights.kv_cache", w.kv_cache, 0.0, 1000.0)?;
        check_f64("router.weights.prefix", w.prefix, 0.0, 1000.0)?;
        check_f64("router.overlap_weight", self.router.overlap_weight, 0.0, 1000.0)?;
        if self.replicas > 1 && matches!(self.workload.arrival, Arrival::Concurrency { .. }) {
            return Err(ConfigError::new(
                "replicas",
                "a fleet routes arrivals known up front: give workload.arrival a rate (\"kind\": \"poisson\") or a trace, or set replicas to 1",
            ));
        }
        Ok(())
    }

    /// A host tier runs beside vLLM v1's paged pool with prefix caching (its chunks are the
    /// pool's hashed blocks, so one KV cache group) and holds at least one chunk.
    fn validate_offload(&self) -> Result<(), ConfigError> {
        let Some(o) = self.kv_offload else { return Ok(()) };
        if cfg!(not(feature = "kv-offload")) {
            return Err(ConfigError::new("kv_offload", "the host tier runs in the full lab; load the preset there"));
        }
        check_f64("kv_offload.cpu_gib", o.cpu_gib, 0.0, 65_536.0)?;
        let AllocatorConfig::Paged { block_size, prefix_caching: true } = self.allocator else {
            return Err(ConfigError::new(
                "kv_offload",
                "the host tier keeps the paged pool's hashed blocks: set allocator.kind to \"paged\" with allocator.prefix_caching true, or remove kv_offload",
            ));
        };
        if !self.paged_v1() {
            return Err(ConfigError::new(
                "kv_offload",
                "vLLM's OffloadingConnector runs on the v1 engine; set scheduler.engine to \"v1\", or remove kv_offload",
            ));
        }
        let chunk = self.kv_bytes_per_token() * u64::from(block_size);
        if o.capacity_chunks(chunk) == 0 {
            return Err(ConfigError::new(
                "kv_offload.cpu_gib",
                format!("{} GiB holds no block of {chunk} bytes; raise it", show_number(o.cpu_gib)),
            ));
        }
        Ok(())
    }

    /// What depends on the KV memory: a pool that holds something, vLLM's startup checks (in
    /// vLLM's words, as startup refusals), and that a typical request fits; then the lab's bounds.
    fn validate_memory(&self) -> Result<(), ConfigError> {
        check_f64("kv_memory_gib", self.kv_memory_gib, 0.01, 4096.0)?;
        super::gpu_fit::check_fits_gpu(self)?;
        let capacity = self.capacity_tokens();
        if capacity == 0 {
            return Err(ConfigError::new(
                "kv_memory_gib",
                format!(
                    "{} GiB holds no token of {} bytes; raise kv_memory_gib",
                    self.kv_memory_gib,
                    self.kv_bytes_per_token()
                ),
            ));
        }
        self.check_startup()?;
        let s = &self.scheduler;
        if let AllocatorConfig::Contiguous { reserve: Reserve::MaxModelLen, .. } = self.allocator {
            if u64::from(s.max_model_len) > capacity {
                return Err(ConfigError::new(
                    "scheduler.max_model_len",
                    format!(
                        "a {}-token slab cannot fit in the {capacity}-token pool; lower max_model_len or raise kv_memory_gib",
                        s.max_model_len
                    ),
                ));
            }
        }
        self.validate_workload_fit(capacity)?;
        // The largest run the lab accepts (blocks, requests, steps): see `bounds`.
        super::bounds::check(&self.run_bounds()).map_err(|e| ConfigError::new(e.field, e.message))
    }

    /// vLLM's startup checks on a paged pool of known size: a block size the chosen attention
    /// backend runs, and one `max_model_len` request that fits. Failures are startup refusals.
    fn check_startup(&self) -> Result<(), ConfigError> {
        let AllocatorConfig::Paged { block_size, .. } = self.allocator else { return Ok(()) };
        if let Some(backend) = self.attention_backend {
            check_block_size(backend, block_size).map_err(|m| {
                ConfigError::startup_refusal(
                    "allocator.block_size",
                    format!(
                        "{m} ({} runs {}; change the block size or attention_backend)",
                        backend.id(),
                        backend.block_sizes_text()
                    ),
                )
            })?;
        }
        if let (Some(blocks), Some(arch)) =
            (self.num_gpu_blocks(), self.model.arch.as_ref().filter(|_| self.kv_cache_group_kinds().is_some()))
        {
            // Hybrid groups: every layer's most for one max_model_len request, as vLLM sums them.
            let bytes_per_block = self.bytes_per_block(block_size);
            let layout = KvLayout::of(&arch.layer_attention);
            let s = &self.scheduler;
            check_hybrid_max_model_len_fits(
                &layout,
                (blocks * bytes_per_block) as i64,
                bytes_per_block,
                block_size,
                s.max_num_batched_tokens,
                s.max_model_len,
            )
            .map_err(|m| ConfigError::startup_refusal("scheduler.max_model_len", m))?;
        } else if let Some(blocks) = self.num_gpu_blocks() {
            // vLLM refuses to start when one max_model_len request cannot fit in the pool.
            let bytes_per_block = self.kv_bytes_per_token() * u64::from(block_size);
            let len = self.scheduler.max_model_len;
            check_max_model_len_fits((blocks * bytes_per_block) as i64, bytes_per_block, block_size, len)
                .map_err(|m| ConfigError::startup_refusal("scheduler.max_model_len", m))?;
        }
        Ok(())
    }

    fn validate_workload_fields(&self) -> Result<(), ConfigError> {
        let s = &self.scheduler;
        match &self.workload.arrival {
            Arrival::Poisson { rate_per_s, bursts } => {
                check_f64("workload.arrival.rate_per_s", *rate_per_s, 0.0, 10_000.0)?;
                for (i, b) in bursts.iter().enumerate() {
                    let f = |k: &str| format!("workload.arrival.bursts[{i}].{k}");
                    check_f64(&f("start_s"), b.start_s, 0.0, self.duration_s)?;
                    check_f64(&f("end_s"), b.end_s, b.start_s, self.duration_s.max(b.start_s))?;
                    check_f64(&f("rate_per_s"), b.rate_per_s, 0.0, 10_000.0)?;
                }
                if self.workload.classes.is_empty() {
                    return Err(ConfigError::new("workload.classes", "add at least one user class"));
                }
            }
            Arrival::Concurrency { max_concurrency, num_requests, .. } => {
                let (most_clients, most_requests) = (super::bounds::MAX_CONCURRENCY, super::bounds::MAX_REQUESTS);
                check_range("workload.arrival.max_concurrency", u64::from(*max_concurrency), 1, most_clients)?;
                check_range("workload.arrival.num_requests", u64::from(*num_requests), 1, most_requests)?;
                if self.workload.classes.is_empty() {
                    return Err(ConfigError::new("workload.classes", "add at least one user class"));
                }
            }
            Arrival::Trace { max_tokens, .. } => {
                check_range("workload.arrival.max_tokens", *max_tokens, 1, s.max_model_len)?;
            }
        }
        for (i, c) in self.workload.classes.iter().enumerate() {
            let f = |k: &str| format!("workload.classes[{i}].{k}");
            check_f64(&f("weight"), c.weight, 1e-9, 1e9)?;
            c.prompt_tokens.lognormal_params().map_err(|e| ConfigError::new(f("prompt_tokens"), e))?;
            c.output_tokens.lognormal_params().map_err(|e| ConfigError::new(f("output_tokens"), e))?;
            check_range(&f("max_tokens"), c.max_tokens, 1, s.max_model_len)?;
            check_range(&f("n"), c.n, 1, 16)?;
            if !self.paged_v1() && c.n > s.max_num_seqs {
                return Err(ConfigError::new(
                    f("n"),
                    format!("{} samples can never run under scheduler.max_num_seqs = {}", c.n, s.max_num_seqs),
                ));
            }
            check_range(&f("shared_prefix_tokens"), c.shared_prefix_tokens, 0, s.max_model_len - 1)?;
            check_range(&f("tenants"), c.tenants, 1, MAX_TENANTS)?;
            let prompt = (c.prompt_tokens.mean as u64).max(u64::from(c.shared_prefix_tokens) + 1);
            if prompt >= u64::from(s.max_model_len) {
                return Err(ConfigError::new(
                    f("prompt_tokens"),
                    format!(
                        "the mean prompt ({prompt}) does not fit max_model_len ({}); raise scheduler.max_model_len",
                        s.max_model_len
                    ),
                ));
            }
            if !s.chunked_prefill && prompt > u64::from(s.max_num_batched_tokens) {
                return Err(ConfigError::new(
                    "scheduler.max_num_batched_tokens",
                    format!(
                        "a {prompt}-token prompt of class {i} never fits one step; raise it or turn on chunked_prefill"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A typical request of every class fits the pool (its prompt at the class mean).
    fn validate_workload_fit(&self, capacity: u64) -> Result<(), ConfigError> {
        for (i, c) in self.workload.classes.iter().enumerate() {
            let f = |k: &str| format!("workload.classes[{i}].{k}");
            let prompt = (c.prompt_tokens.mean as u64).max(u64::from(c.shared_prefix_tokens) + 1);
            let need = self.worst_case_tokens(prompt as u32, c.max_tokens, c.n);
            if need > capacity {
                return Err(ConfigError::new(
                    f("max_tokens"),
                    format!(
                        "a typical request of this class needs {need} tokens of KV but the pool holds {capacity}; lower max_tokens, n or the prompt, or raise kv_memory_gib"
                    ),
                ));
            }
        }
        Ok(())
    }
}
