//! The roofline clock: what one vLLM scheduler step costs from the GPU's datasheet figures and a
//! few efficiencies per GPU. The host's share (a fixed cost per step, a cost per scheduled
//! sequence, kernel launches when no CUDA graph runs the batch); the linear layers (weights
//! streamed once, or their FLOPs at a GEMM efficiency that grows with the step's tokens, over the
//! batch padded to its CUDA-graph size); attention (every scheduled sequence's KV read, paged
//! reads paying a block-size-dependent overhead, and prefill's causal FLOPs, quadratic in the
//! context; a sliding-window layer's reads and pairs capped at its window); swaps over the host
//! link; tensor-parallel all-reduces. Constants per GPU live in
//! `constants.rs`; a measured `StepTimeCalibration` replaces the bandwidth, fixed cost and paged
//! overheads.

use super::calibration::{default_paged_overhead, StepTimeCalibration};
use super::constants::{clock_for, ClockConstants, ClockSource};
use super::work::StepWork;
use crate::engine::model::{gpu_preset, GpuSpec, ModelSpec};

/// CUDA graphs as vLLM v1 captures them: batches of up to `max_capture_size` tokens run a graph
/// captured for the next size up (1, 2, 4, then every 8 to 256, then every 16), larger ones and
/// every batch under `enforce_eager` launch their kernels one by one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CudaGraphs {
    pub enforce_eager: bool,
    pub max_capture_size: u32,
}

/// vLLM's default `max_cudagraph_capture_size`.
pub const DEFAULT_MAX_CUDAGRAPH_CAPTURE_SIZE: u32 = 512;

impl Default for CudaGraphs {
    fn default() -> Self {
        CudaGraphs { enforce_eager: false, max_capture_size: DEFAULT_MAX_CUDAGRAPH_CAPTURE_SIZE }
    }
}

impl CudaGraphs {
    /// The captured size a batch of `tokens` runs at, or None when it runs eagerly.
    pub fn padded(&self, tokens: u64) -> Option<u64> {
        if self.enforce_eager || tokens > u64::from(self.max_capture_size) {
            return None;
        }
        Some(match tokens {
            0..=2 => tokens.max(1),
            3..=4 => 4,
            5..=256 => tokens.div_ceil(8) * 8,
            _ => tokens.div_ceil(16) * 16,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    /// Every weight, routed experts included.
    weight_bytes: f64,
    /// The routed experts' bytes (a mixture of experts reads only those its tokens route to:
    /// each of a step's T tokens picks a share s of them, so `1 − (1 − s)^T` of them on average).
    expert_bytes: f64,
    expert_share_per_token: f64,
    /// Linear-layer FLOPs per token (2 × active parameters).
    flops_per_token: f64,
    /// Attention FLOPs per query–key pair (QKᵀ and PV over every layer's query heads).
    attention_flops_per_pair: f64,
    bandwidth_bytes_per_s: f64,
    /// Dense tensor peak × the GEMM efficiency on large batches.
    gemm_flops_per_s: f64,
    gemm_ramp_tokens: f64,
    attention_flops_per_s: f64,
    pcie_bytes_per_s: f64,
    fixed_step_us: f64,
    per_seq_us: f64,
    /// Launch cost of a step run without CUDA graphs (layers × per-layer launches), µs.
    eager_launch_us: f64,
    graphs: CudaGraphs,
    kv_bytes_per_token: f64,
    /// Share of the layers with a sliding window (0: every layer reads its whole context).
    window_share: f64,
    /// Multiplier on KV reads for the configured allocator, relative to paged blocks of 16.
    kv_read_factor: f64,
    /// The allocator's paged overhead against contiguous memory (0 for contiguous).
    paged_overhead: f64,
    swap_block_bytes: f64,
    /// Tensor parallelism: all-reduce latency per step (two per layer), and per scheduled token.
    allreduce_fixed_us: f64,
    allreduce_us_per_token: f64,
    /// Where the constants come from, as the report says it.
    source: ClockSource,
}

/// Latency of one small NCCL all-reduce between GPUs of a node, µs.
pub const ALLREDUCE_LATENCY_US: f64 = 8.0;

/// What a model brings to the step-time model beyond `ModelSpec`'s sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelShape {
    /// Query heads × their width, summed over layers: attention FLOPs per pair are 4× this.
    pub attention_width_all_layers: f64,
    pub layers: u32,
    /// Of `layers`, those with a sliding window (their reads are `StepWork`'s windowed sums).
    pub window_layers: u32,
}

/// The inputs of one GPU's step-time model.
pub struct RooflineInput<'a> {
    pub model: &'a ModelSpec,
    pub shape: ModelShape,
    pub gpu: &'a GpuSpec,
    pub kv_bytes_per_token: u64,
    pub paged_block_size: Option<u32>,
    pub calibration: Option<&'a StepTimeCalibration>,
    pub graphs: CudaGraphs,
}

impl Roofline {
    /// The clock of one GPU: the GPU catalogue's constants (`constants::clock_for`), with a
    /// calibration's bandwidth efficiency, fixed cost and paged overheads where one is given.
    pub fn new(input: &RooflineInput<'_>) -> Self {
        let (constants, source) = clock_for(&input.gpu.id);
        Roofline::with_constants(input, &constants, source)
    }

    /// The clock of one GPU under given constants (`kvlab validate --fit` tries many), reported
    /// as coming from `source`.
    pub fn with_constants(input: &RooflineInput<'_>, k: &ClockConstants, source: ClockSource) -> Self {
        let (model, gpu, calibration) = (input.model, input.gpu, input.calibration);
        let (bw_eff, fixed) = calibration
            .map_or((k.bandwidth_efficiency, k.fixed_step_us), |c| (c.bandwidth_efficiency, c.fixed_step_us));
        let overhead_at = |bs: u32| match calibration {
            Some(c) => c.overhead_at(bs),
            None => default_paged_overhead(bs),
        };
        // The constants were measured on vLLM's paged KV at 16-token blocks: other sizes, and
        // contiguous memory, read relative to it.
        let reference = 1.0 + overhead_at(REFERENCE_BLOCK_SIZE);
        let paged_overhead = input.paged_block_size.map_or(0.0, overhead_at);
        // A calibration measured on a known GPU brings that GPU's bandwidth with it.
        let measured_gpu = calibration.and_then(|c| c.gpu.as_deref()).and_then(gpu_preset);
        let nominal_gb_s = measured_gpu.map_or(gpu.mem_bandwidth_gb_s, |g| g.mem_bandwidth_gb_s);
        let peak = tensor_tflops(model, gpu) * 1e12;
        Roofline {
            weight_bytes: model.weight_bytes(),
            expert_bytes: model.routed_experts().0,
            expert_share_per_token: model.routed_experts().1,
            flops_per_token: model.flops_per_token(),
            attention_flops_per_pair: 4.0 * input.shape.attention_width_all_layers,
            bandwidth_bytes_per_s: nominal_gb_s * 1e9 * bw_eff,
            gemm_flops_per_s: peak * k.gemm_efficiency,
            gemm_ramp_tokens: k.gemm_ramp_tokens,
            attention_flops_per_s: peak * k.attention_efficiency,
            pcie_bytes_per_s: gpu.pcie_gb_s * 1e9,
            fixed_step_us: fixed,
            per_seq_us: k.per_seq_us,
            eager_launch_us: k.eager_launch_us_per_layer * f64::from(input.shape.layers),
            graphs: input.graphs,
            kv_bytes_per_token: input.kv_bytes_per_token as f64,
            window_share: f64::from(input.shape.window_layers) / f64::from(input.shape.layers.max(1)),
            kv_read_factor: (1.0 + paged_overhead) / reference,
            paged_overhead,
            swap_block_bytes: input.kv_bytes_per_token as f64 * f64::from(input.paged_block_size.unwrap_or(1)),
            allreduce_fixed_us: 0.0,
            allreduce_us_per_token: 0.0,
            source,
        }
    }

    /// The same model on `tp` GPUs of one replica, timed per GPU: each streams `1/tp` of the
    /// weights and of the KV (its heads) and does `1/tp` of the FLOPs, and every layer adds two
    /// all-reduces of the step's activations (`tokens × hidden × 2` bytes, ring: `2 (tp − 1) / tp`
    /// of it over each GPU's link) plus their latency. `tp = 1` changes nothing.
    pub fn with_tensor_parallel(mut self, tp: u32, layers: u32, hidden_size: f64, interconnect_gb_s: f64) -> Self {
        if tp <= 1 {
            return self;
        }
        let n = f64::from(tp);
        self.weight_bytes /= n;
        self.expert_bytes /= n;
        self.flops_per_token /= n;
        self.attention_flops_per_pair /= n;
        self.kv_bytes_per_token /= n;
        self.swap_block_bytes /= n;
        let allreduces = 2.0 * f64::from(layers);
        self.allreduce_fixed_us = allreduces * ALLREDUCE_LATENCY_US;
        let bytes_per_token = hidden_size * 2.0 * 2.0 * (n - 1.0) / n;
        self.allreduce_us_per_token = allreduces * bytes_per_token / (interconnect_gb_s * 1e9) * 1e6;
        self
    }

    /// The paged overhead this model applies against contiguous memory (0 for contiguous).
    pub fn paged_overhead(&self) -> f64 {
        self.paged_overhead
    }

    /// Where its constants come from.
    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// Duration of one step in whole microseconds (at least 1): the host's share (fixed, per
    /// sequence, and the launches of an eager step), the linear layers (weights streamed once or
    /// the GEMMs' FLOPs, whichever is longer, over the CUDA graph's padded batch), attention
    /// (KV reads, and prefill's FLOPs), swaps over the host link, and tensor-parallel all-reduces.
    pub fn step_us(&self, w: &StepWork) -> u64 {
        let tokens = w.tokens() as f64;
        let (padded, launches_us) = match self.graphs.padded(w.tokens()) {
            Some(p) => (p as f64, 0.0),
            None if tokens > 0.0 => (tokens, self.eager_launch_us),
            None => (0.0, 0.0),
        };
        let linear_mem_s = self.weights_read(w) / self.bandwidth_bytes_per_s;
        let gemm_rate = self.gemm_flops_per_s * padded / (padded + self.gemm_ramp_tokens).max(f64::MIN_POSITIVE);
        let linear_compute_s = if padded > 0.0 { padded * self.flops_per_token / gemm_rate } else { 0.0 };
        let (kv_tokens, pairs) = self.layer_weighted(w);
        let kv_s = kv_tokens * self.kv_bytes_per_token * self.kv_read_factor / self.bandwidth_bytes_per_s;
        let attention_s = pairs * self.attention_flops_per_pair / self.attention_flops_per_s;
        let swap_s = w.swap_blocks as f64 * self.swap_block_bytes / self.pcie_bytes_per_s;
        let allreduce_us =
            if tokens > 0.0 { self.allreduce_fixed_us + tokens * self.allreduce_us_per_token } else { 0.0 };
        let host_us = self.fixed_step_us + self.per_seq_us * w.seqs() as f64 + launches_us;
        let us = host_us + (linear_mem_s.max(linear_compute_s) + kv_s + attention_s + swap_s) * 1e6 + allreduce_us;
        (libm::round(us) as u64).max(1)
    }
}

/// The block size the clock's constants were measured at (vLLM's default).
pub const REFERENCE_BLOCK_SIZE: u32 = 16;

/// The GPU's dense tensor TFLOPs for the model: FP8 (or INT8) where an 8-bit checkpoint runs its
/// products in 8 bits and the GPU has such tensor cores, else 16-bit.
fn tensor_tflops(model: &ModelSpec, gpu: &GpuSpec) -> f64 {
    let eight_bit = model.arch.as_ref().is_some_and(|a| a.computes_in_8_bits());
    if eight_bit && gpu.fp8_tflops > 0.0 {
        gpu.fp8_tflops
    } else {
        gpu.peak_tflops
    }
}

impl Roofline {
    /// The step's KV reads and prefill pairs as if every layer were full: windowed layers count
    /// their capped sums. A model without windows counts the full sums unchanged.
    fn layer_weighted(&self, w: &StepWork) -> (f64, f64) {
        let (reads, pairs) = (w.kv_read_tokens() as f64, w.prefill_attention_pairs as f64);
        if self.window_share <= 0.0 {
            return (reads, pairs);
        }
        let s = self.window_share;
        let mix = |full: f64, windowed: u64| (1.0 - s) * full + s * windowed as f64;
        (mix(reads, w.window_kv_read_tokens()), mix(pairs, w.prefill_window_attention_pairs))
    }

    /// Weight bytes a step streams: all of a dense model; of a mixture of experts, the shared
    /// weights and the experts its tokens route to (uniform routing). A dense model's is exactly
    /// `weight_bytes`, so its steps do not change.
    fn weights_read(&self, w: &StepWork) -> f64 {
        if self.expert_bytes <= 0.0 {
            return self.weight_bytes;
        }
        let tokens = w.tokens() as f64;
        let touched = 1.0 - libm::pow(1.0 - self.expert_share_per_token, tokens);
        self.weight_bytes - self.expert_bytes + self.expert_bytes * touched
    }
}
