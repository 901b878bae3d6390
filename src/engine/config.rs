//! The validated simulation configuration. Presets (JSON) and Rust callers both end here, and
//! `SimConfig::validate` (validate.rs) names the offending field by its preset path
//! (`scheduler.max_num_seqs`) with the allowed range, so one set of rules serves the CLI, the page
//! and the tests.

use std::fmt;

use super::alloc::{Fit, SingleTypeManager};

use super::clock::{ClockConstants, CudaGraphs, ModelShape, Roofline, RooflineInput, StepClock, StepTimeCalibration};
use super::fleet::config::RouterConfig;
use super::kv_spec::{kv_cache_group_kinds, KvLayout};
use super::memory_budget::{switched_nvlink, ActivationShape, MemoryBudget, MemoryBudgetInput};
use super::model::{gpu_preset, model_preset, GpuSpec, KvDtype, ModelSpec, GIB};
use super::model_arch::LayerAttention;
use super::offload::KvOffloadConfig;
#[cfg(feature = "kv-offload")]
use super::offload::OffloadingConnector;
use super::startup_checks::AttentionBackend;
pub use super::version::EngineVersion;
use super::workload::{Arrival, LengthDist, UserClass, WorkloadConfig};

/// Tokens per block when a paged allocator does not say (vLLM's default).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;

/// How big a contiguous slab is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserve {
    PromptPlusMaxTokens,
    MaxModelLen,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AllocatorConfig {
    Contiguous { reserve: Reserve, fit: Fit },
    Paged { block_size: u32, prefix_caching: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptionMode {
    Recompute,
    Swap,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// The vLLM scheduler generation the paged engine follows.
    pub engine: EngineVersion,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub preemption: PreemptionMode,
    pub swap_space_gib: f64,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
    /// Fraction of blocks admission keeps free (vLLM's watermark); None = the engine's default.
    pub watermark: Option<f64>,
}

impl SchedulerConfig {
    /// The watermark in force: the configured one, else the engine's default.
    pub fn watermark(&self) -> f64 {
        self.watermark.unwrap_or(self.engine.default_watermark())
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            engine: EngineVersion::V1,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            preemption: PreemptionMode::Recompute,
            swap_space_gib: 4.0,
            max_model_len: 8192,
            chunked_prefill: false,
            watermark: None,
        }
    }
}

/// The KV memory derived from the GPU, as vLLM's worker derives it: this instance's share of the
/// GPU less weights, activations, CUDA graphs and non-torch memory (`memory_budget`).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuMemoryConfig {
    /// vLLM's `--gpu-memory-utilization`: the share of each GPU this instance may use.
    pub gpu_memory_utilization: f64,
    /// GiB of each GPU already held by other processes (another vLLM instance) at startup.
    pub gpu_memory_in_use_gib: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    pub id: String,
    pub title: String,
    pub seed: u64,
    pub duration_s: f64,
    pub model: ModelSpec,
    pub kv_dtype: KvDtype,
    pub gpu: GpuSpec,
    /// KV memory of the replica (all its GPUs), given or derived from `gpu_memory`.
    pub kv_memory_gib: f64,
    /// Set when the KV memory was derived from the GPU (`gpu_memory_utilization`).
    pub gpu_memory: Option<GpuMemoryConfig>,
    /// GPUs of one replica (vLLM's `--tensor-parallel-size`): weights and KV heads split.
    pub tensor_parallel_size: u32,
    /// `--attention-backend`; None is vLLM's default choice (FlashAttention on these GPUs).
    pub attention_backend: Option<AttentionBackend>,
    pub allocator: AllocatorConfig,
    pub scheduler: SchedulerConfig,
    pub workload: WorkloadConfig,
    pub calibration: Option<StepTimeCalibration>,
    /// Measured kernel times of this GPU (`formats::kernel_tables`): the clock prices steps from
    /// them where they can price the model; none, or another GPU's, leaves the roofline.
    #[cfg(feature = "kernel-clock")]
    pub kernels: Option<std::sync::Arc<super::clock::KernelTables>>,
    /// The run goes on past `duration_s` until every request that arrived has finished (a
    /// closed loop: all `num_requests`), up to `end_limit_us`.
    pub until_all_finished: bool,
    /// vLLM's `--enforce-eager`: no CUDA graphs, every kernel launched one by one.
    pub enforce_eager: bool,
    /// A host-memory KV tier (vLLM's `--kv-offloading-size`); None: the GPU pool alone.
    pub kv_offload: Option<KvOffloadConfig>,
    /// Copies of this setup behind a router (1: one replica, no router). Each replica has the
    /// GPUs, KV memory and host tier above; the workload is the fleet's (engine::fleet).
    pub replicas: u32,
    /// How requests are spread over the replicas.
    pub router: RouterConfig,
}

impl Default for SimConfig {
    /// The lab's default: Llama-3-8B, FP16 KV, 10 GiB, contiguous first-fit reserving
    /// prompt + max_tokens, chat traffic (prompt 1,100, output 250 with p99 1,150, max 2,048).
    fn default() -> Self {
        SimConfig {
            id: "default".into(),
            title: "Contiguous default on 10 GiB".into(),
            seed: 1,
            duration_s: 60.0,
            model: model_preset("llama-3-8b").expect("preset"),
            kv_dtype: KvDtype::Fp16,
            gpu: gpu_preset("h100-sxm").expect("preset"),
            kv_memory_gib: 10.0,
            gpu_memory: None,
            tensor_parallel_size: 1,
            attention_backend: None,
            allocator: AllocatorConfig::Contiguous { reserve: Reserve::PromptPlusMaxTokens, fit: Fit::FirstFit },
            scheduler: SchedulerConfig::default(),
            workload: WorkloadConfig {
                arrival: Arrival::Poisson { rate_per_s: 8.0, bursts: Vec::new() },
                classes: vec![UserClass {
                    name: "chat".into(),
                    weight: 1.0,
                    prompt_tokens: LengthDist { mean: 1100.0, p99: 2600.0 },
                    output_tokens: LengthDist { mean: 250.0, p99: 1150.0 },
                    max_tokens: 2048,
                    n: 1,
                    shared_prefix_tokens: 0,
                    tenants: 1,
                }],
            },
            calibration: None,
            #[cfg(feature = "kernel-clock")]
            kernels: None,
            until_all_finished: false,
            enforce_eager: false,
            kv_offload: None,
            replicas: 1,
            router: RouterConfig::default(),
        }
    }
}

/// A configuration error: the field (as a preset path) and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
    /// Whether this is a well-formed setup vLLM refuses to start (startup_checks.rs), with
    /// vLLM's own words in `message`, rather than a preset the lab cannot read.
    pub startup_refusal: bool,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into(), startup_refusal: false }
    }

    /// vLLM's refusal to start this setup; every other field of the preset is valid.
    pub fn startup_refusal(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { startup_refusal: true, ..ConfigError::new(field, message) }
    }

    /// The error of a document nested under `prefix` (a mission's `preset`, a report's `setup`):
    /// its field's path below `prefix`.
    pub fn within(self, prefix: &str) -> Self {
        let field = if self.field.is_empty() { prefix.to_string() } else { format!("{prefix}.{}", self.field) };
        ConfigError { field, ..self }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "?" and "." are serde's names for "no particular field".
        if self.field.is_empty() || self.field == "?" || self.field == "." {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// What attention computes per query–key pair, and the layers: a config.json's query heads ×
/// their width (MLA: the query–key width), else the residual width (every preset model has
/// `heads × head_dim = hidden`).
fn model_shape(model: &ModelSpec) -> ModelShape {
    use super::model_arch::Attention;
    let width = match model.arch.as_deref().map(|a| a.attention) {
        Some(Attention::Grouped { heads, head_dim, .. }) => f64::from(heads) * f64::from(head_dim),
        Some(Attention::Latent { heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, .. }) => {
            // QKᵀ over the query–key width, PV over the value width: their mean, per pair.
            f64::from(heads) * f64::from(qk_nope_head_dim + qk_rope_head_dim + v_head_dim) / 2.0
        }
        None => hidden_size(model),
    };
    let window_layers = model.sliding_window().map_or(0, |w| w.layers);
    ModelShape { attention_width_all_layers: width * f64::from(model.layers), layers: model.layers, window_layers }
}

/// Width of a model's residual stream: the published value for shipped models, else the dense
/// decoder estimate `sqrt(params / (12 × layers))`.
fn hidden_size(model: &ModelSpec) -> f64 {
    ActivationShape::of(model).map_or_else(
        || libm::sqrt(model.params_b * 1e9 / (12.0 * f64::from(model.layers.max(1)))),
        |s| f64::from(s.hidden_size),
    )
}

impl SimConfig {
    /// KV bytes per token of the replica (KV heads replicated when TP exceeds them).
    pub fn kv_bytes_per_token(&self) -> u64 {
        self.model.kv_bytes_per_token_tp(self.kv_dtype, self.tensor_parallel_size)
    }

    /// The memory budget of one GPU as vLLM's worker computes it, when the KV memory comes from
    /// the GPU (`gpu_memory_utilization`); None for a given `kv_memory_gib` or a custom model.
    pub fn memory_budget(&self) -> Option<MemoryBudget> {
        let g = self.gpu_memory.as_ref()?;
        let shape = ActivationShape::of(&self.model)?;
        let total_gib = self.gpu.total_memory_gib;
        let block_size = match self.allocator {
            AllocatorConfig::Paged { block_size, .. } => block_size,
            AllocatorConfig::Contiguous { .. } => DEFAULT_BLOCK_SIZE,
        };
        Some(MemoryBudget::compute(&MemoryBudgetInput {
            model: self.model.clone(),
            shape,
            weight_bytes: 2.0,
            kv_dtype: self.kv_dtype,
            gpu_total_bytes: (total_gib * GIB as f64) as u64,
            other_processes_bytes: (g.gpu_memory_in_use_gib * GIB as f64) as u64,
            gpu_memory_utilization: g.gpu_memory_utilization,
            tensor_parallel_size: self.tensor_parallel_size,
            max_num_batched_tokens: self.scheduler.max_num_batched_tokens,
            max_num_seqs: self.scheduler.max_num_seqs,
            max_model_len: self.scheduler.max_model_len,
            block_size,
            // vLLM captures no graphs under --enforce-eager, so none of their memory is taken.
            cuda_graphs_in_budget: !self.enforce_eager,
            switched_nvlink: switched_nvlink(&self.gpu.interconnect),
        }))
    }

    /// What the lab labels about the block size: a size vLLM's default attention backend
    /// (FlashAttention) does not run, which the lab still lets a learner try.
    pub fn block_size_note(&self) -> Option<String> {
        let AllocatorConfig::Paged { block_size, .. } = self.allocator else { return None };
        if self.attention_backend.is_none() && !AttentionBackend::FlashAttention.supports_block_size(block_size) {
            Some(format!(
                "{block_size}-token blocks: not a size vLLM's default FlashAttention backend runs (multiples of 16)"
            ))
        } else {
            None
        }
    }

    pub fn kv_bytes(&self) -> u64 {
        (self.kv_memory_gib * GIB as f64) as u64
    }

    /// Paged only: the blocks the KV memory holds, as vLLM counts `num_gpu_blocks` (in v1 block 0
    /// of them is the reserved null block, so one fewer can hold tokens).
    pub fn num_gpu_blocks(&self) -> Option<u64> {
        match self.allocator {
            AllocatorConfig::Paged { block_size, .. } if self.kv_cache_group_kinds().is_some() => {
                Some(self.kv_bytes() / self.bytes_per_block(block_size))
            }
            AllocatorConfig::Paged { block_size, .. } => {
                Some(self.kv_bytes() / self.kv_bytes_per_token() / u64::from(block_size.max(1)))
            }
            AllocatorConfig::Contiguous { .. } => None,
        }
    }

    /// vLLM v1's hybrid KV cache groups (`kv_spec::kv_cache_group_kinds`): the attention of each
    /// group, when the paged v1 allocator runs a model read from a config.json with sliding-window
    /// layers; None otherwise (one group of full attention, as before).
    pub fn kv_cache_group_kinds(&self) -> Option<Vec<LayerAttention>> {
        if !self.paged_v1() {
            return None;
        }
        let arch = self.model.arch.as_ref()?;
        if arch.layer_attention.iter().all(|&a| a == LayerAttention::Full) {
            return None;
        }
        // vLLM 0.33.0 turns its hybrid KV cache manager off for chunked local attention unless
        // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (`VllmConfig.__post_init__`): a
        // chunked model (Llama-4) runs every layer as full attention, as before.
        if arch.layer_attention.iter().any(|a| matches!(a, LayerAttention::Chunked(_))) {
            return None;
        }
        Some(kv_cache_group_kinds(&arch.layer_attention))
    }

    /// Bytes of one block of the whole replica: `block_size` tokens of every layer, or under
    /// hybrid groups of one group's `group_size` layers (vLLM's unified page size).
    pub fn bytes_per_block(&self, block_size: u32) -> u64 {
        let bs = u64::from(block_size.max(1));
        match self.model.arch.as_ref().filter(|_| self.kv_cache_group_kinds().is_some()) {
            Some(arch) => {
                let layout = KvLayout::of(&arch.layer_attention);
                self.kv_bytes_per_token() / u64::from(self.model.layers.max(1)) * u64::from(layout.group_size) * bs
            }
            None => self.kv_bytes_per_token() * bs,
        }
    }

    /// The most blocks one request of `tokens` tokens holds at once in every hybrid group: a
    /// full-attention group all its blocks, a window's or chunk's group at most its admission
    /// cap (`SingleTypeManager::max_admission_blocks_per_request`).
    pub fn grouped_blocks_per_request(&self, kinds: &[LayerAttention], tokens: u64, block_size: u32) -> u64 {
        let s = &self.scheduler;
        let need = tokens.div_ceil(u64::from(block_size.max(1)));
        kinds
            .iter()
            .map(|&a| {
                SingleTypeManager::of(a)
                    .max_admission_blocks_per_request(block_size, s.max_num_batched_tokens, s.max_model_len)
                    .map_or(need, |cap| need.min(u64::from(cap)))
            })
            .sum()
    }

    /// The paged allocator under vLLM v1's scheduler (the contiguous allocator has one
    /// scheduler, group-based like v0's, whatever `scheduler.engine` says).
    /// The host tier's connector of this configuration, if it has one (`kv_offload`): chunks of
    /// one block over every layer and rank, moved at the GPU's host-link rate.
    #[cfg(feature = "kv-offload")]
    pub fn offloading_connector(&self) -> Option<OffloadingConnector> {
        let o = self.kv_offload?;
        let AllocatorConfig::Paged { block_size, .. } = self.allocator else { return None };
        let chunk_bytes = self.kv_bytes_per_token() * u64::from(block_size);
        // GB/s are 10^9 bytes a second: 10^3 bytes a microsecond.
        let link_bytes_per_us = self.gpu.pcie_gb_s * 1e3;
        Some(OffloadingConnector::new(
            o.capacity_chunks(chunk_bytes),
            block_size,
            chunk_bytes,
            link_bytes_per_us,
            self.tensor_parallel_size,
        ))
    }

    pub fn paged_v1(&self) -> bool {
        matches!(self.allocator, AllocatorConfig::Paged { .. }) && self.scheduler.engine == EngineVersion::V1
    }

    /// Blocks that never hold tokens: v1's null block.
    pub fn reserved_blocks(&self) -> u64 {
        u64::from(self.paged_v1())
    }

    /// Token slots the allocator can hand out (whole usable blocks when paged).
    pub fn capacity_tokens(&self) -> u64 {
        match (self.allocator.clone(), self.num_gpu_blocks()) {
            (AllocatorConfig::Paged { block_size, .. }, Some(blocks)) => {
                blocks.saturating_sub(self.reserved_blocks()) * u64::from(block_size)
            }
            _ => self.kv_bytes() / self.kv_bytes_per_token(),
        }
    }

    /// The clock this configuration asks for: the roofline of its GPU, model, KV dtype, block
    /// size, calibration and tensor parallelism.
    /// Where this GPU's measured kernels are held and can price the model (and no calibration
    /// replaces the clock's constants), the kernel clock instead.
    pub fn clock(&self) -> StepClock {
        #[cfg(feature = "kernel-clock")]
        if let Some(k) =
            self.kernel_clock(&super::clock::constants::kernel_host_for(&self.gpu.id, self.scheduler.engine))
        {
            return StepClock::Kernels(Box::new(k));
        }
        StepClock::Roofline(self.tensor_parallel(Roofline::new(&self.roofline_input())))
    }

    /// The same clock under given per-GPU constants (`kvlab validate --fit` tries many): the
    /// roofline's, or the kernel clock's host costs.
    pub fn clock_with(&self, constants: &ClockConstants) -> StepClock {
        #[cfg(feature = "kernel-clock")]
        if let Some(k) = self.kernel_clock(constants) {
            return StepClock::Kernels(Box::new(k));
        }
        let source = super::clock::clock_for(&self.gpu.id).1;
        StepClock::Roofline(self.tensor_parallel(Roofline::with_constants(&self.roofline_input(), constants, source)))
    }

    /// Whether steps are priced from measured kernels.
    pub fn runs_on_kernels(&self) -> bool {
        #[cfg(feature = "kernel-clock")]
        return self
            .kernel_clock(&super::clock::constants::kernel_host_for(&self.gpu.id, self.scheduler.engine))
            .is_some();
        #[cfg(not(feature = "kernel-clock"))]
        false
    }

    #[cfg(feature = "kernel-clock")]
    fn kernel_clock(&self, host: &ClockConstants) -> Option<super::clock::KernelClock> {
        let tables = self.kernels.as_ref().filter(|t| t.gpu == self.gpu.id && self.calibration.is_none())?;
        super::clock::KernelClock::new(tables, &self.roofline_input(), self.kv_dtype, self.tensor_parallel_size, host)
    }

    fn tensor_parallel(&self, one_gpu: Roofline) -> Roofline {
        one_gpu.with_tensor_parallel(
            self.tensor_parallel_size,
            self.model.layers,
            hidden_size(&self.model),
            self.gpu.interconnect_gb_s,
        )
    }

    /// What the roofline reads of this configuration (one GPU; `clock` adds tensor parallelism).
    pub fn roofline_input(&self) -> RooflineInput<'_> {
        let block_size = match self.allocator {
            AllocatorConfig::Paged { block_size, .. } => Some(block_size),
            AllocatorConfig::Contiguous { .. } => None,
        };
        RooflineInput {
            model: &self.model,
            shape: model_shape(&self.model),
            gpu: &self.gpu,
            kv_bytes_per_token: self.kv_bytes_per_token(),
            paged_block_size: block_size,
            calibration: self.calibration.as_ref(),
            graphs: CudaGraphs { enforce_eager: self.enforce_eager, ..Default::default() },
        }
    }

    pub fn duration_us(&self) -> u64 {
        super::workload::secs_to_us(self.duration_s)
    }

    /// When the run stops at the latest under its own clock: `duration_s`; with
    /// `until_all_finished`, up to `bounds::MAX_DRAIN_US` later, but never past
    /// `bounds::MAX_STEPS` of the shortest step (the run itself ends earlier, once every request
    /// has finished: `Simulation::is_done`).
    pub fn end_limit_us(&self) -> u64 {
        self.end_limit_with(self.clock().floor_us())
    }

    /// The same under a clock whose shortest step is `min_step_us`.
    pub fn end_limit_with(&self, min_step_us: u64) -> u64 {
        let duration_us = self.duration_us();
        if !self.until_all_finished {
            return duration_us;
        }
        let steps_cap = super::bounds::MAX_STEPS.saturating_mul(min_step_us);
        duration_us.saturating_add(super::bounds::MAX_DRAIN_US).min(steps_cap.max(duration_us))
    }

    /// What this configuration's run can reach at most: pool cells, expected requests, steps.
    pub fn run_bounds(&self) -> super::bounds::RunBounds {
        let capacity_tokens = self.capacity_tokens();
        let block_size = match self.allocator {
            AllocatorConfig::Paged { block_size, .. } => Some(block_size),
            AllocatorConfig::Contiguous { .. } => None,
        };
        let cell = block_size.map_or(super::bounds::MAP_CELL_TOKENS, |bs| u64::from(bs.max(1)));
        let duration_us = self.duration_us();
        let weight: f64 = self.workload.classes.iter().map(|c| c.weight).sum();
        let mean_n = if weight > 0.0 {
            self.workload.classes.iter().map(|c| c.weight * f64::from(c.n.max(1))).sum::<f64>() / weight
        } else {
            1.0
        };
        let (expected_requests, expected_samples, traffic) = match &self.workload.arrival {
            Arrival::Poisson { rate_per_s, bursts } => {
                let schedule = super::workload::rate_schedule(*rate_per_s, bursts, duration_us);
                let mut mean = 0.0;
                for (i, seg) in schedule.iter().enumerate() {
                    let end = schedule.get(i + 1).map_or(duration_us, |next| next.start_us);
                    mean += seg.rate_per_s * end.saturating_sub(seg.start_us) as f64 / 1e6;
                }
                (libm::ceil(mean) as u64, libm::ceil(mean * mean_n) as u64, super::bounds::Traffic::Poisson)
            }
            Arrival::Concurrency { num_requests, .. } => {
                let n = f64::from(*num_requests);
                (u64::from(*num_requests), libm::ceil(n * mean_n) as u64, super::bounds::Traffic::Concurrency)
            }
            Arrival::Trace { rows, .. } => {
                // Rows are sorted by arrival.
                let inside = &rows[..rows.partition_point(|r| super::workload::secs_to_us(r.arrival_s) < duration_us)];
                (inside.len() as u64, inside.iter().map(|r| u64::from(r.n.max(1))).sum(), super::bounds::Traffic::Trace)
            }
        };
        let min_step_us = self.clock().floor_us();
        let end_limit_us = self.end_limit_with(min_step_us);
        super::bounds::RunBounds {
            // Paged: every block of the pool, v1's null block included.
            kv_cells: match self.num_gpu_blocks() {
                Some(blocks) => blocks,
                None => capacity_tokens.div_ceil(cell),
            },
            capacity_tokens,
            block_size,
            kv_memory_gib: self.kv_memory_gib,
            kv_bytes_per_token: self.kv_bytes_per_token(),
            expected_requests,
            expected_samples,
            traffic,
            duration_s: self.duration_s,
            min_step_us,
            max_steps: end_limit_us.div_ceil(min_step_us),
        }
    }

    /// Tokens of KV a request may need at worst: the slabs it reserves (contiguous), or its
    /// prompt blocks plus every sample's own blocks up to max_tokens (paged), above the watermark.
    pub fn worst_case_tokens(&self, prompt: u32, max_tokens: u32, n: u32) -> u64 {
        let s = &self.scheduler;
        let out = u64::from(max_tokens.min(s.max_model_len.saturating_sub(prompt)));
        match self.allocator {
            AllocatorConfig::Contiguous { reserve, .. } => {
                let slab = match reserve {
                    Reserve::PromptPlusMaxTokens => (u64::from(prompt) + out).min(u64::from(s.max_model_len)),
                    Reserve::MaxModelLen => u64::from(s.max_model_len),
                };
                slab * u64::from(n)
            }
            AllocatorConfig::Paged { block_size, .. } => {
                let bs = u64::from(block_size);
                let blocks = match self.kv_cache_group_kinds() {
                    // Every sample is a request of its own under v1.
                    Some(kinds) => {
                        u64::from(n) * self.grouped_blocks_per_request(&kinds, u64::from(prompt) + out, block_size)
                    }
                    None => u64::from(prompt).div_ceil(bs) + u64::from(n) * (out.div_ceil(bs) + 1),
                };
                let capacity_blocks = self.capacity_tokens() / bs;
                let watermark = (s.watermark() * capacity_blocks as f64) as u64;
                (blocks + watermark) * bs
            }
        }
    }
}
