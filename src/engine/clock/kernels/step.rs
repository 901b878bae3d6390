//! One model's step time on one GPU from measured kernels. Everything that depends only on the
//! model, its split and the GPU is read from the tables once, when the clock is built, into
//! curves of the step's size; a step then costs a handful of lookups and no allocation.
//!
//! On each GPU of the replica, a step of `T` tokens (padded to its CUDA graph), `S` sequences,
//! `c` prefill chunks over `P` causal query–key pairs, and `d` decodes reading `C` context tokens:
//!
//! ```text
//! linear      = layers × (qkv GEMM(T, (H + 2·KV)·d / tp, hidden) + o GEMM(T, hidden, H·d / tp))
//!             + dense layers × (up GEMM(T, 2·I / tp, hidden) + down GEMM(T, hidden, I / tp))
//!             + lm_head GEMM(S, vocab / tp, hidden)
//!             + MoE layers × router GEMM(T, experts, hidden)
//! experts     = MoE layers × fused MoE(inter / tp, T) from the model shape's MoE table where it
//!               was measured, else routed experts at their bytes or FLOPs, whichever is longer
//! prefill     = full layers × c × context(head_dim, H / tp, √(2P / c))
//!             + window layers × c × context(head_dim, H / tp, √(2P_w / c))
//! decode      = full layers × decode(head_dim, KV / tp, H / KV, d, C / d)
//!             + window layers × decode(head_dim, KV / tp, H / KV, d, C_w / d)
//! elementwise = T × layers × (4·hidden + 3·I / tp) × 2 B at 80% of the bandwidth, + 4 kernels × 3 µs a layer
//! all-reduce  = 2 × layers × all_reduce(tp, T × hidden) when tensor parallel
//! host        = fixed + per sequence × S + per prompt × c (+ eager launches when no CUDA graph
//!               runs the batch)
//! ```
//!
//! GEMM shapes are split as vLLM's column- and row-parallel layers split them. A sliding-window
//! layer's attention is read at its capped pairs `P_w` and contexts `C_w` (`StepWork`'s windowed
//! sums); Llama-4's chunked layers are priced as full ones.

use std::sync::Arc;

use super::by_count::ByCount;
use super::table::{Curve, Spot, Table};
use super::tables::{KernelTables, MoeDtype};
use crate::engine::clock::constants::ClockConstants;
use crate::engine::clock::roofline::{CudaGraphs, RooflineInput};
use crate::engine::clock::work::StepWork;
use crate::engine::model::KvDtype;
use crate::engine::model_arch::{Attention, ModelArch, Quantization};

/// Share of the datasheet bandwidth elementwise kernels and routed experts reach, and the fixed
/// latency of one memory-bound kernel: AIConfigurator's system files
/// (`mem_bw_empirical_scaling_factor` 0.8, `mem_empirical_constant_latency` 3 µs).
const MEMORY_EFFICIENCY: f64 = 0.8;
const ELEMENTWISE_KERNEL_US: f64 = 3.0;
/// Elementwise kernels per decoder layer: two fused residual-add + RMSNorm, the activation
/// (SiLU × up), rotary embedding.
const ELEMENTWISE_KERNELS_PER_LAYER: f64 = 4.0;
/// Share of the tensor peak the routed experts' grouped GEMMs reach on large batches.
const EXPERT_GEMM_EFFICIENCY: f64 = 0.6;
/// vLLM's custom all-reduce takes messages up to 8 MiB; larger ones go to NCCL.
const CUSTOM_ALL_REDUCE_MAX_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// The step sizes the curves are read at (tokens or sequences).
const STEP_SIZES: [f64; 24] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 1536.0,
    2048.0, 3072.0, 4096.0, 8192.0, 16384.0, 32768.0,
];

/// A model's step time on one GPU of its replica from that GPU's measured kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelClock {
    /// Every layer's GEMMs by the step's (padded) tokens, µs.
    linear: Curve,
    /// The language-model head by the sequences the step samples, µs.
    lm_head: Curve,
    /// Prefill attention of one layer by the prompt length of one chunk, µs.
    prefill: Curve,
    /// The tables the clock was built from (the report names them).
    source: Arc<KernelTables>,
    /// Decode attention over (batch, context): the decode table held at the model's head size,
    /// KV heads per GPU and query heads per KV head, and the factor for a head size the table
    /// does not hold.
    decode: Table,
    decode_scale: f64,
    /// All-reduce of one layer's activations by the step's tokens, µs (none at TP 1).
    all_reduce: Option<Curve>,
    /// Every MoE layer's routed experts by the step's (padded) tokens, µs, where the model's
    /// shape was measured; else `experts_*` estimate them.
    moe: Option<Curve>,
    layers: f64,
    /// Of `layers`, those with a sliding window.
    window_layers: f64,
    elementwise_us_per_token: f64,
    expert_bytes: f64,
    expert_share_per_token: f64,
    expert_flops_per_token: f64,
    bandwidth_bytes_per_us: f64,
    expert_flops_per_us: f64,
    swap_us_per_block: f64,
    fixed_step_us: f64,
    per_seq_us: f64,
    per_prefill_us: f64,
    eager_launch_us: f64,
    graphs: CudaGraphs,
    /// By the step's tokens: its GEMMs (lm_head aside), elementwise kernels, routed experts and
    /// all-reduces (`token_terms`).
    by_tokens: ByCount<[f64; 4]>,
    /// By the sequences sampled: the LM head.
    lm_head_by_seqs: ByCount<f64>,
    /// By the decodes: where their count falls on the decode table's batch axis.
    decode_batch: ByCount<Spot>,
}

impl KernelClock {
    /// The clock of `input`'s model on `tp` GPUs from `tables`, with the host costs of `host`;
    /// None when the tables cannot price the model (latent attention, weight-only integer
    /// kernels, a model without an architecture).
    pub fn new(
        tables: &Arc<KernelTables>,
        input: &RooflineInput<'_>,
        kv_dtype: KvDtype,
        tp: u32,
        host: &ClockConstants,
    ) -> Option<KernelClock> {
        let a = input.model.arch.as_deref()?;
        let Attention::Grouped { heads, kv_heads, head_dim, .. } = a.attention else { return None };
        if matches!(a.quantization, Some(Quantization::IntGrouped { .. })) {
            return None;
        }
        let tp_f = f64::from(tp.max(1));
        let hidden = f64::from(a.hidden_size);
        let (q, kv) =
            (f64::from(heads * head_dim) / tp_f, (f64::from(kv_heads * head_dim) / tp_f).max(f64::from(head_dim)));
        let gemm = match (a.computes_in_8_bits(), &tables.gemm_fp8) {
            (true, Some(fp8)) => fp8,
            _ => &tables.gemm_bf16,
        };
        let g = |m: f64, n: f64, k: f64| gemm.at(&[m, n, k]);
        let moe_layers = f64::from(a.experts.map_or(0, |e| e.moe_layers.min(a.layers)));
        let layers = f64::from(a.layers);
        let dense_layers = layers - moe_layers;
        let inter = f64::from(a.intermediate_size) / tp_f;
        let (up, down) = if a.mlp.is_gated() { (2.0 * inter, inter) } else { (inter, inter) };
        let shared = a.experts.map_or(0.0, |e| f64::from(e.shared_intermediate) / tp_f);
        // The router: a 16-bit GEMM every GPU runs whole (vLLM's ReplicatedLinear).
        let router = a.experts.map_or(0.0, |e| f64::from(e.experts));
        let linear = Curve::new(
            &STEP_SIZES,
            |m| {
                let attn = g(m, q + 2.0 * kv, hidden) + g(m, hidden, q);
                let mlp = g(m, up, hidden) + g(m, hidden, down);
                let shared_mlp = if shared > 0.0 { g(m, 2.0 * shared, hidden) + g(m, hidden, shared) } else { 0.0 };
                let routing = if router > 0.0 { tables.gemm_bf16.at(&[m, router, hidden]) } else { 0.0 };
                layers * attn + dense_layers * mlp + moe_layers * (shared_mlp + routing)
            },
            1.0,
        );
        let moe = moe_table(tables, a).map(|(table, inter)| {
            let per_gpu = f64::from(inter) / tp_f;
            Curve::new(&STEP_SIZES, |tokens| moe_layers * table.at(&[per_gpu, tokens]), 1.0)
        });
        let vocab = f64::from(a.vocab_size) / tp_f;
        let lm_head = Curve::new(&STEP_SIZES, |m| tables.gemm_bf16.at(&[m, vocab, hidden]), 1.0);
        let fp8_kv = kv_dtype == KvDtype::Fp8;
        let context = if fp8_kv { tables.context_fp8kv.as_ref() } else { None }.unwrap_or(&tables.context_bf16kv);
        let hd = f64::from(head_dim);
        let q_heads = (f64::from(heads) / tp_f).max(1.0);
        let (context_hd, context_scale) = head_size(context, hd);
        let prefill = Curve::new(&STEP_SIZES, |s| context.at(&[context_hd, q_heads, s]) * context_scale, 2.0);
        let (decode_hd, decode_scale) = head_size(decode_table(tables, fp8_kv), hd);
        let kv_per_gpu = (f64::from(kv_heads) / tp_f).max(1.0);
        let q_per_kv = f64::from(heads) / f64::from(kv_heads.max(1));
        let all_reduce = (tp > 1).then(|| {
            let nvlink = input.gpu.interconnect_gb_s > input.gpu.pcie_gb_s;
            let custom = tables.custom_all_reduce.as_ref().filter(|_| nvlink || tp == 2);
            let nccl = tables.nccl_all_reduce.as_ref().or(tables.custom_all_reduce.as_ref());
            let gpus = f64::from(tp);
            Curve::new(
                &STEP_SIZES,
                |tokens| {
                    let elements = tokens * hidden;
                    match (custom, nccl) {
                        (Some(c), _) if elements * 2.0 <= CUSTOM_ALL_REDUCE_MAX_BYTES => c.at(&[gpus, elements]),
                        (_, Some(n)) => n.at(&[gpus, elements]),
                        (Some(c), None) => c.at(&[gpus, elements]),
                        (None, None) => 0.0,
                    }
                },
                1.0,
            )
        });
        let (expert_bytes, expert_share_per_token) = a.routed_experts();
        let bandwidth_bytes_per_us = input.gpu.mem_bandwidth_gb_s * 1e3 * MEMORY_EFFICIENCY;
        let peak = if a.computes_in_8_bits() && input.gpu.fp8_tflops > 0.0 {
            input.gpu.fp8_tflops
        } else {
            input.gpu.peak_tflops
        };
        let block_bytes = input.kv_bytes_per_token as f64 * f64::from(input.paged_block_size.unwrap_or(1)) / tp_f;
        Some(KernelClock {
            source: Arc::clone(tables),
            linear,
            lm_head,
            prefill,
            decode: decode_table(tables, fp8_kv).slice_leading(&[decode_hd, kv_per_gpu, q_per_kv]),
            decode_scale,
            all_reduce,
            moe,
            layers,
            window_layers: f64::from(input.shape.window_layers.min(a.layers)),
            elementwise_us_per_token: layers * (4.0 * hidden + 3.0 * inter) * 2.0 / bandwidth_bytes_per_us,
            expert_bytes: expert_bytes / tp_f,
            expert_share_per_token,
            expert_flops_per_token: 2.0 * a.param_counts().active_experts as f64 / tp_f,
            bandwidth_bytes_per_us,
            expert_flops_per_us: peak * 1e6 * EXPERT_GEMM_EFFICIENCY,
            swap_us_per_block: block_bytes / (input.gpu.pcie_gb_s * 1e3),
            fixed_step_us: host.fixed_step_us,
            per_seq_us: host.per_seq_us,
            per_prefill_us: host.per_prefill_us,
            eager_launch_us: host.eager_launch_us_per_layer * layers,
            graphs: input.graphs,
            by_tokens: ByCount::default(),
            lm_head_by_seqs: ByCount::default(),
            decode_batch: ByCount::default(),
        })
    }

    /// Decode attention of one layer: `batch` sequences (at least one) reading `mean_context`
    /// tokens each, µs.
    fn decode_us(&self, batch: u64, mean_context: f64) -> f64 {
        let batch = self.decode_batch.get_or(batch, || self.decode.locate(0, batch as f64));
        self.decode.at_spots(&[batch, self.decode.locate(1, mean_context.max(1.0))]) * self.decode_scale
    }

    /// What a step of `tokens` tokens costs whatever its sequences: its GEMMs but the LM head,
    /// elementwise kernels, routed experts and all-reduces, µs.
    fn token_terms(&self, tokens: u64) -> [f64; 4] {
        let padded = self.graphs.padded(tokens).unwrap_or(tokens) as f64;
        let elementwise = padded * self.elementwise_us_per_token
            + self.layers * ELEMENTWISE_KERNELS_PER_LAYER * ELEMENTWISE_KERNEL_US;
        let mut experts = 0.0;
        if let Some(moe) = &self.moe {
            experts = moe.at(padded);
        } else if self.expert_bytes > 0.0 {
            let touched = 1.0 - libm::pow(1.0 - self.expert_share_per_token, tokens as f64);
            let read = self.expert_bytes * touched / self.bandwidth_bytes_per_us;
            experts = read.max(tokens as f64 * self.expert_flops_per_token / self.expert_flops_per_us);
        }
        let all_reduce = self.all_reduce.as_ref().map_or(0.0, |ar| 2.0 * self.layers * ar.at(padded));
        [self.linear.at(padded), elementwise, experts, all_reduce]
    }

    /// The GPU's terms of one step, µs: linear layers and the LM head, prefill attention, decode
    /// attention, elementwise kernels, routed experts, all-reduces.
    pub fn terms(&self, w: &StepWork) -> [f64; 6] {
        let tokens = w.tokens();
        if tokens == 0 {
            return [0.0; 6];
        }
        let [gemms, elementwise, experts, all_reduce] = self.by_tokens.get_or(tokens, || self.token_terms(tokens));
        let seqs = w.seqs().max(1);
        let linear = gemms + self.lm_head_by_seqs.get_or(seqs, || self.lm_head.at(seqs as f64));
        let full_layers = self.layers - self.window_layers;
        let mut prefill = 0.0;
        if w.prefill_chunks > 0 {
            let chunks = w.prefill_chunks as f64;
            let chunk_us = |pairs: u64| chunks * self.prefill.at(libm::sqrt(2.0 * pairs as f64 / chunks));
            prefill = full_layers * chunk_us(w.prefill_attention_pairs);
            if self.window_layers > 0.0 {
                prefill += self.window_layers * chunk_us(w.prefill_window_attention_pairs);
            }
        }
        let mut decode = 0.0;
        if w.decode_seqs > 0 {
            let d = w.decode_seqs as f64;
            decode = full_layers * self.decode_us(w.decode_seqs, w.decode_context_tokens as f64 / d);
            if self.window_layers > 0.0 {
                decode += self.window_layers * self.decode_us(w.decode_seqs, w.decode_window_context_tokens as f64 / d);
            }
        }
        [linear, prefill, decode, elementwise, experts, all_reduce]
    }

    /// The tables it reads.
    pub fn tables(&self) -> &KernelTables {
        &self.source
    }

    /// Duration of one step in whole microseconds (at least 1): the host's share, the GPU's
    /// kernels, and swaps over the host link.
    pub fn step_us(&self, w: &StepWork) -> u64 {
        let tokens = w.tokens();
        let launches = if tokens > 0 && self.graphs.padded(tokens).is_none() { self.eager_launch_us } else { 0.0 };
        let host = self.fixed_step_us
            + self.per_seq_us * w.seqs() as f64
            + self.per_prefill_us * w.prefill_chunks as f64
            + launches;
        let gpu: f64 = self.terms(w).iter().sum();
        let us = host + gpu + w.swap_blocks as f64 * self.swap_us_per_block;
        (libm::round(us) as u64).max(1)
    }
}

/// The fused MoE table of `a`'s routed experts, and their intermediate size, where the tables
/// measured its shape with its weights' dtype (16-bit, FP8 per tensor or per block, MXFP4).
fn moe_table<'t>(tables: &'t KernelTables, a: &ModelArch) -> Option<(&'t Table, u32)> {
    let e = a.experts?;
    let dtype = match a.quantization {
        None => MoeDtype::Bf16,
        Some(Quantization::Fp8 { scale_block: 0 }) => MoeDtype::Fp8,
        Some(Quantization::Fp8 { .. }) => MoeDtype::Fp8Block,
        Some(Quantization::Mxfp4) => MoeDtype::Mxfp4,
        Some(Quantization::Int8 | Quantization::IntGrouped { .. }) => return None,
    };
    let table = tables.moe_for(dtype, a.hidden_size, e.expert_intermediate, e.experts_per_token, e.experts)?;
    Some((table, e.expert_intermediate))
}

/// The head size to read an attention table at, and the factor on its time: the model's own
/// where the table holds it, else the nearest measured one scaled by the ratio (attention's
/// bytes and FLOPs grow with the head size).
fn head_size(table: &Table, head_dim: f64) -> (f64, f64) {
    let axis = table.axis(0);
    if axis.contains(&head_dim) {
        return (head_dim, 1.0);
    }
    let nearest = axis.iter().copied().min_by(|x, y| (x - head_dim).abs().total_cmp(&(y - head_dim).abs()));
    let nearest = nearest.unwrap_or(head_dim);
    (nearest, head_dim / nearest)
}

/// Decode attention's table for the KV cache's dtype (the BF16 one where FP8 was not measured).
fn decode_table(tables: &KernelTables, fp8_kv: bool) -> &Table {
    if fp8_kv { tables.decode_fp8kv.as_ref() } else { None }.unwrap_or(&tables.decode_bf16kv)
}
