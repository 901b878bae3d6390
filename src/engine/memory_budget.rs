//! The KV-cache memory budget as vLLM's GPU worker derives it at startup, per GPU, from the GPU up.
//!
//! vLLM 0.33 (`vllm/v1/worker/gpu_worker.py::determine_available_memory`,
//! `vllm/v1/worker/utils.py::request_memory`, `vllm/utils/mem_utils.py::memory_profiling`):
//!
//! ```text
//! requested          = ceil(total GPU memory × gpu_memory_utilization)
//! available KV       = requested − consumed (weights + non-torch) − peak activation − CUDA graphs
//! bytes per block    = layers × block_size × KV heads per GPU × head_dim × 2 (K and V) × KV bytes
//! num_gpu_blocks     = available KV ÷ bytes per block              (floor)
//! GPU KV cache size  = int(num_gpu_blocks ÷ cdiv(max_model_len, block_size) × max_model_len)
//! ```
//!
//! vLLM measures the three middle terms by running a dummy forward pass; kvlab estimates them:
//!
//! - **Weights** = parameters × bytes per weight ÷ `tensor_parallel_size` (tensor parallelism
//!   shards every matrix; the small replicated norms are ignored); a model read from a
//!   config.json prices each module at its dtype or quantization (`model_arch.rs`) and adds the
//!   rotary cos/sin caches vLLM builds whole on every GPU while it loads
//!   (`ModelArch::loaded_bytes_per_gpu`).
//! - **Non-torch memory** (NCCL, cuBLAS workspaces, allocator slack outside PyTorch) =
//!   [`NON_TORCH_GIB`], plus, when `tensor_parallel_size` > 1, [`NON_TORCH_TP_NVLINK_GIB`] on
//!   GPUs joined by switched NVLink (SXM parts: the communicators' buffers; vLLM 0.19 logs 2.06–2.21
//!   GiB in all on H100 SXM at TP 2 and 4) or [`NON_TORCH_TP_GIB`] over PCIe or an NVLink bridge.
//!   Logged values on one GPU: 0.24–0.27 GiB (vLLM 0.19, H100), 0.03–0.46 in older builds.
//! - **Peak activation** of the profiling pass: vLLM runs the forward pass over
//!   `max_num_batched_tokens` tokens (T), then the sampler over `min(max_num_seqs, T)` rows (S)
//!   (`gpu_model_runner.py::profile_run`, `_dummy_sampler_run`); the peak is the larger of the two,
//!   plus the fused-MoE workspace that vLLM's workspace manager keeps between them
//!   (`fused_moe/modular_kernel.py`, `v1/worker/workspace.py`). At `a` bytes per activation (2 for
//!   bf16/fp16, 4 for float32):
//!   - forward `T × (4 × hidden + 3 × intermediate ÷ TP) × a` (a gated MLP: residual, input, its
//!     gate-up output of 2 × intermediate, the activated intermediate, the down projection's
//!     output; intermediate of the dense layers or shared expert); a plain MLP (Phi-2,
//!     StarCoder2, Falcon) holds its up projection's output and the activated one, 2 ×
//!     intermediate;
//!   - sampler `S × vocab × (a + SAMPLER_BYTES_PER_LOGIT) + 2 × T × hidden × a` (the logits, the
//!     sampler's float32 copies, sort values and indices, beside the pass's hidden states; every
//!     rank samples the whole vocabulary);
//!   - MoE workspace `T × top-k × (max(i, hidden) + max(2i, hidden)) × a`, i the expert intermediate
//!     ÷ TP (`TritonExperts.workspace_shapes`), none for gpt-oss's MXFP4 experts, which vLLM runs
//!     in a monolithic Triton kernel outside the workspace manager.
//! - **CUDA graphs** (only when they count against the budget: vLLM ≥ 0.21 without
//!   `--enforce-eager`) = [`CUDA_GRAPH_MIB_PER_LAYER`] MiB per layer.
//!
//! With sliding-window or chunked layers beside full ones, blocks, tokens and concurrency follow
//! vLLM's hybrid groups (`kv_spec.rs`); a model whose every layer slides (Mistral, Phi-3-mini-4k)
//! is one group whose request needs only its window's blocks (`cdiv(min(W − 1 + T, L), bs) + 1`
//! in place of `cdiv(max_model_len, block_size)` above); an MLA latent is one head, kept whole
//! on every GPU.
//! KV heads are split across the tensor-parallel GPUs and replicated when TP exceeds them
//! (`max(1, kv_heads ÷ TP)`, as vLLM's `ModelConfig.get_num_kv_heads` does). Every rank holds the
//! same number of blocks, so the KV cache size in tokens is per replica as well as per GPU.
//! The constants were chosen once (one formula for all) against the startup logs of
//! `tests/golden/vllm-startup/` and nine of llm-d-planner's vLLM 0.19.0 logs
//! (`tests/golden/llm-d-planner/`, `sets_a_constant`); `docs/VLLM_STARTUP.md` has the tables.

use serde::Serialize;

use super::kv_spec::KvLayout;
use super::model::{gpu_preset, KvDtype, ModelSpec, GIB};
use super::model_arch::{Mlp, Quantization};
use super::plan::group_thousands;

/// Memory outside PyTorch's allocator on one GPU, GiB (vLLM 0.19 on H100: 0.24–0.27).
pub const NON_TORCH_GIB: f64 = 0.25;
/// Extra non-torch memory per GPU under tensor parallelism over PCIe or an NVLink bridge, GiB
/// (older builds logged 0.25–0.43 in all; vllm-project/vllm#13061's two RTX 4090s 0.25).
pub const NON_TORCH_TP_GIB: f64 = 0.25;
/// Extra non-torch memory per GPU under tensor parallelism on switched NVLink (SXM GPUs), GiB:
/// vLLM 0.19 on H100 SXM logs 2.06–2.21 GiB in all at TP 2 and 4 (llm-d-planner's logs).
pub const NON_TORCH_TP_NVLINK_GIB: f64 = 1.85;
/// Bytes the sampler holds per logit beside the logits themselves during profiling (float32
/// copies, sort values and indices): vLLM 0.19's logs give 14.4–14.5 bytes per bf16 logit over
/// eight dense models (Llama-3.1-8B/70B, Qwen2.5-7B, Gemma-7B, Gemma-2-2B/9B, Granite-3.1-2B).
pub const SAMPLER_BYTES_PER_LOGIT: f64 = 12.5;
/// CUDA graph pool per decoder layer, MiB, when graphs count against the budget.
pub const CUDA_GRAPH_MIB_PER_LAYER: f64 = 6.0;
/// vLLM's default `block_size` for CUDA attention backends.
pub const DEFAULT_BLOCK_SIZE: u32 = 16;
/// vLLM's default `max_num_seqs` for GPUs under 70 GiB (and A100s).
pub const DEFAULT_MAX_NUM_SEQS: u32 = 256;

/// The dimensions the activation estimate needs (from the model's config.json).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActivationShape {
    pub hidden_size: u32,
    /// The MLP's intermediate of the dense layers (or of a MoE model's shared expert).
    pub intermediate_size: u32,
    /// Whether that MLP is gated (3 live widths of the intermediate) or plain (2).
    #[serde(skip_serializing_if = "Mlp::is_gated")]
    pub mlp: Mlp,
    pub vocab_size: u32,
    /// Bytes per activation: 2 (bf16, fp16), 4 (float32).
    pub activation_bytes: u32,
    /// `(experts per token, expert intermediate)` of a MoE model whose experts run in vLLM's
    /// modular fused-MoE kernel, which keeps its workspace.
    pub moe_workspace: Option<(u32, u32)>,
}

impl ActivationShape {
    /// A model's shape: from its config.json when it came from one, else the preset's.
    pub fn of(model: &ModelSpec) -> Option<ActivationShape> {
        match &model.arch {
            Some(a) => Some(ActivationShape {
                hidden_size: a.hidden_size,
                intermediate_size: a.dense_intermediate(),
                mlp: if a.experts.is_some_and(|e| e.moe_layers >= a.layers) { Mlp::Gated } else { a.mlp },
                vocab_size: a.vocab_size,
                activation_bytes: a.dtype.bytes() as u32,
                moe_workspace: a
                    .experts
                    .filter(|_| a.quantization != Some(Quantization::Mxfp4))
                    .map(|e| (e.experts_per_token, e.expert_intermediate)),
            }),
            None => ActivationShape::for_model(&model.id),
        }
    }

    /// The published config.json values of kvlab's model presets.
    pub fn for_model(id: &str) -> Option<ActivationShape> {
        let (hidden_size, intermediate_size, vocab_size) = match id {
            "llama-3-8b" => (4096, 14336, 128_256),
            "llama-3-70b" => (8192, 28672, 128_256),
            "mistral-7b" => (4096, 14336, 32_000),
            "opt-13b" => (5120, 20480, 50_272),
            "llama-2-7b" => (4096, 11008, 32_000),
            _ => return None,
        };
        Some(ActivationShape {
            hidden_size,
            intermediate_size,
            mlp: Mlp::Gated,
            vocab_size,
            activation_bytes: 2,
            moe_workspace: None,
        })
    }
}

/// Torch-visible total memory of kvlab's GPU presets, GiB, as vLLM's startup logs print it
/// (`total_gpu_memory`): a card sold as 80 GB shows about 79.2 GiB (`gpus.rs`).
pub fn gpu_total_gib(gpu_id: &str) -> Option<f64> {
    gpu_preset(gpu_id).map(|g| g.total_memory_gib)
}

/// Everything vLLM's worker knows when it sizes the KV cache on one GPU.
#[derive(Clone, Debug)]
pub struct MemoryBudgetInput {
    pub model: ModelSpec,
    pub shape: ActivationShape,
    /// Bytes per weight: 2 for bf16/fp16, 1 for fp8.
    pub weight_bytes: f64,
    pub kv_dtype: KvDtype,
    pub gpu_total_bytes: u64,
    /// Memory already held on the GPU by other processes (another vLLM instance, a desktop).
    pub other_processes_bytes: u64,
    pub gpu_memory_utilization: f64,
    pub tensor_parallel_size: u32,
    pub max_num_batched_tokens: u32,
    pub max_num_seqs: u32,
    pub max_model_len: u32,
    pub block_size: u32,
    /// Whether CUDA graph memory is taken from the budget (vLLM ≥ 0.21 without --enforce-eager).
    pub cuda_graphs_in_budget: bool,
    /// Whether the GPUs sit on switched NVLink ([`switched_nvlink`]), which sets the non-torch
    /// memory under tensor parallelism.
    pub switched_nvlink: bool,
}

/// The derived budget of one GPU (one tensor-parallel rank) and of the replica it belongs to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryBudget {
    pub tensor_parallel_size: u32,
    pub gpu_memory_utilization: f64,
    pub gpu_total_bytes: u64,
    pub free_at_startup_bytes: u64,
    pub requested_bytes: u64,
    pub weights_bytes: u64,
    pub non_torch_bytes: u64,
    pub peak_activation_bytes: u64,
    pub cuda_graph_bytes: u64,
    /// Signed: at or below zero vLLM refuses to start.
    pub available_kv_bytes: i64,
    pub kv_heads_per_gpu: u32,
    /// KV bytes of one token in every layer on one GPU (what a full-attention layout costs).
    pub kv_bytes_per_token_per_gpu: u64,
    /// vLLM's KV cache groups (1 unless sliding-window or chunked layers sit beside full ones)
    /// and the layers each holds (`kv_spec.rs`).
    pub kv_cache_groups: u32,
    pub layers_per_kv_group: u32,
    pub kv_layout: KvLayout,
    pub max_num_batched_tokens: u32,
    pub block_size: u32,
    pub bytes_per_block: u64,
    pub num_gpu_blocks: u64,
    pub max_model_len: u32,
    /// Tokens of KV the replica holds (every rank holds the same blocks).
    pub kv_cache_tokens: u64,
    pub max_concurrency: f64,
}

fn gib_to_bytes(gib: f64) -> u64 {
    (gib * GIB as f64) as u64
}

/// The tensor-parallel sizes the lab runs.
pub const TENSOR_PARALLEL_SIZES: [u32; 4] = [1, 2, 4, 8];

/// Whether `tensor_parallel_size` GPUs split `kv_heads` evenly: it divides them, or is a multiple
/// of them (each head then replicated).
pub fn splits_kv_heads(kv_heads: u32, tensor_parallel_size: u32) -> bool {
    kv_heads % tensor_parallel_size == 0 || tensor_parallel_size % kv_heads == 0
}

/// `max(1, kv_heads / tp)`: KV heads are split across GPUs, replicated once TP exceeds them.
pub fn kv_heads_per_gpu(kv_heads: u32, tensor_parallel_size: u32) -> u32 {
    (kv_heads / tensor_parallel_size.max(1)).max(1)
}

/// Whether GPUs joined by `interconnect` (`GpuSpec::interconnect`) sit on switched NVLink (SXM
/// parts), where tensor parallelism costs [`NON_TORCH_TP_NVLINK_GIB`] of non-torch memory.
pub fn switched_nvlink(interconnect: &str) -> bool {
    interconnect.starts_with("NVLink ") && interconnect != "NVLink bridge"
}

/// Non-torch memory of one GPU, GiB (see the module doc).
pub fn non_torch_gib(tp: u32, switched_nvlink: bool) -> f64 {
    NON_TORCH_GIB
        + match (tp > 1, switched_nvlink) {
            (false, _) => 0.0,
            (true, true) => NON_TORCH_TP_NVLINK_GIB,
            (true, false) => NON_TORCH_TP_GIB,
        }
}

/// Peak activation estimate of vLLM's profiling pass on one GPU, bytes (see the module doc).
pub fn peak_activation_bytes(shape: &ActivationShape, tp: u32, batched_tokens: u32, max_num_seqs: u32) -> u64 {
    let tp = f64::from(tp.max(1));
    let tokens = f64::from(batched_tokens);
    let a = f64::from(shape.activation_bytes.max(1));
    let hidden = f64::from(shape.hidden_size);
    let mlp = shape.mlp.matrices() as f64 * f64::from(shape.intermediate_size);
    let forward = tokens * (4.0 * hidden + mlp / tp) * a;
    let rows = f64::from(max_num_seqs.min(batched_tokens));
    let sampler = rows * f64::from(shape.vocab_size) * (a + SAMPLER_BYTES_PER_LOGIT) + 2.0 * tokens * hidden * a;
    let moe = shape.moe_workspace.map_or(0.0, |(top_k, expert_intermediate)| {
        let i = f64::from(expert_intermediate) / tp;
        tokens * f64::from(top_k) * (i.max(hidden) + (2.0 * i).max(hidden)) * a
    });
    (forward.max(sampler) + moe) as u64
}

impl MemoryBudget {
    pub fn compute(input: &MemoryBudgetInput) -> MemoryBudget {
        let tp = input.tensor_parallel_size.max(1);
        let requested = (input.gpu_total_bytes as f64 * input.gpu_memory_utilization).ceil() as u64;
        let m = &input.model;
        // A model read from a config.json knows its own bytes (dtype, quantization, experts),
        // and the rotary caches every GPU builds whole.
        let weights = m
            .arch
            .as_ref()
            .map_or(m.params_b * 1e9 * input.weight_bytes / f64::from(tp), |a| a.loaded_bytes_per_gpu(tp))
            as u64;
        let non_torch = gib_to_bytes(non_torch_gib(tp, input.switched_nvlink));
        let activation = peak_activation_bytes(&input.shape, tp, input.max_num_batched_tokens, input.max_num_seqs);
        let cuda_graph = if input.cuda_graphs_in_budget {
            (f64::from(input.model.layers) * CUDA_GRAPH_MIB_PER_LAYER * 1024.0 * 1024.0) as u64
        } else {
            0
        };
        let available = requested as i64 - (weights + non_torch + activation + cuda_graph) as i64;
        let heads = kv_heads_per_gpu(m.kv_heads, tp);
        let per_token = m.kv_bytes_per_token_tp(input.kv_dtype, tp) / u64::from(tp);
        let layout = m.arch.as_ref().map_or_else(|| KvLayout::full(m.layers), |a| KvLayout::of(&a.layer_attention));
        let per_layer = per_token / u64::from(m.layers.max(1));
        let block = input.block_size.max(1);
        let bytes_per_block =
            if layout.is_hybrid() { per_layer * u64::from(layout.group_size) } else { per_token } * u64::from(block);
        let num_blocks = if available > 0 { available as u64 / bytes_per_block } else { 0 };
        // A request's blocks in every group: `cdiv(L, bs)` for full attention, a window's cap
        // for a model whose every layer slides (Mistral, Phi-3-mini-4k), as
        // `get_max_concurrency_for_kv_cache_config` sums `max_memory_usage_bytes`.
        let blocks_per_request = layout.blocks_per_request(input.max_model_len, block, input.max_num_batched_tokens);
        let max_concurrency = num_blocks as f64 / blocks_per_request.max(1) as f64;
        let kv_cache_tokens = if layout.is_hybrid() {
            layout.kv_cache_tokens(num_blocks, block)
        } else {
            (max_concurrency * f64::from(input.max_model_len)) as u64
        };
        MemoryBudget {
            tensor_parallel_size: tp,
            gpu_memory_utilization: input.gpu_memory_utilization,
            gpu_total_bytes: input.gpu_total_bytes,
            free_at_startup_bytes: input.gpu_total_bytes.saturating_sub(input.other_processes_bytes),
            requested_bytes: requested,
            weights_bytes: weights,
            non_torch_bytes: non_torch,
            peak_activation_bytes: activation,
            cuda_graph_bytes: cuda_graph,
            available_kv_bytes: available,
            kv_heads_per_gpu: heads,
            kv_bytes_per_token_per_gpu: per_token,
            kv_cache_groups: layout.groups,
            layers_per_kv_group: if layout.is_hybrid() { layout.group_size } else { m.layers },
            kv_layout: layout,
            max_num_batched_tokens: input.max_num_batched_tokens,
            block_size: block,
            bytes_per_block,
            num_gpu_blocks: num_blocks,
            max_model_len: input.max_model_len,
            kv_cache_tokens,
            max_concurrency,
        }
    }

    pub fn available_kv_gib(&self) -> f64 {
        self.available_kv_bytes as f64 / GIB as f64
    }

    /// KV memory of the whole replica: every tensor-parallel rank holds its own share.
    pub fn replica_kv_bytes(&self) -> i64 {
        self.available_kv_bytes * i64::from(self.tensor_parallel_size)
    }

    /// vLLM's startup lines for this budget, in the order vLLM 0.33 logs them. The seconds
    /// vLLM appends to "Model loading took" and the `--kv-cache-memory` suggestions after the
    /// breakdown are left out: a simulation has neither.
    pub fn startup_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("Model loading took {} GiB memory", format_gib(self.weights_bytes as i64))];
        if self.cuda_graph_bytes > 0 {
            lines.push(format!(
                "Estimated CUDA graph memory: {:.2} GiB total",
                self.cuda_graph_bytes as f64 / GIB as f64
            ));
        }
        lines.push(format!("Available KV cache memory: {} GiB", format_gib(self.available_kv_bytes)));
        lines.push(format!(
            "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: {:.2}x",
            group_thousands(self.kv_cache_tokens),
            group_thousands(u64::from(self.max_model_len)),
            self.max_concurrency
        ));
        lines.push(format!(
            "Free memory on device ({}/{} GiB) on startup. Desired GPU memory utilization is ({}, {} GiB). \
             Actual usage is {} GiB for consumed memory (weights + non-torch), {} GiB for peak activation, \
             and {} GiB for CUDAGraph memory.",
            format_gib(self.free_at_startup_bytes as i64),
            format_gib(self.gpu_total_bytes as i64),
            python_float(self.gpu_memory_utilization, 4),
            format_gib(self.requested_bytes as i64),
            format_gib((self.weights_bytes + self.non_torch_bytes) as i64),
            format_gib(self.peak_activation_bytes as i64),
            format_gib(self.cuda_graph_bytes as i64),
        ));
        lines
    }
}

/// Python's `str(round(x, digits))`: shortest form, but always with a decimal point.
pub fn python_float(x: f64, digits: i32) -> String {
    let scale = libm::pow(10.0, f64::from(digits));
    let rounded = libm::round(x * scale) / scale;
    let text = format!("{rounded}");
    if text.contains('.') || text.contains('e') || text.contains("inf") || text.contains("NaN") {
        text
    } else {
        format!("{text}.0")
    }
}

/// vLLM's `format_gib`: `str(round(bytes / GiB, 2))`.
pub fn format_gib(bytes: i64) -> String {
    python_float(bytes as f64 / GIB as f64, 2)
}
