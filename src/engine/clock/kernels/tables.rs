//! One GPU's measured kernel tables, as `formats::kernel_tables` reads them from
//! `assets/kernels/<gpu>.json`, and the axes each table has, in order: dense GEMMs, attention,
//! all-reduces, and the fused MoE layer of each model shape measured.

use super::table::Table;

/// One GPU's measured kernels. Every table's axes are in the order the `*_AXES` constants name.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTables {
    /// The GPU catalogue's id.
    pub gpu: String,
    /// The database's name for the measured system, and the vLLM and NCCL versions measured.
    pub system: String,
    pub vllm: String,
    pub nccl: String,
    pub gemm_bf16: Table,
    /// FP8 (per-tensor scaled) GEMMs, where the GPU has FP8 tensor cores.
    pub gemm_fp8: Option<Table>,
    pub context_bf16kv: Table,
    pub context_fp8kv: Option<Table>,
    pub decode_bf16kv: Table,
    pub decode_fp8kv: Option<Table>,
    /// vLLM's custom all-reduce (CUDA-graph path).
    pub custom_all_reduce: Option<Table>,
    pub nccl_all_reduce: Option<Table>,
    /// vLLM's fused MoE layer, one table per model shape measured.
    pub moe: Vec<MoeTable>,
}

/// The routed experts of one MoE layer as vLLM's fused MoE runs them (routing, both grouped
/// GEMMs, the activation), measured for one model shape: by the expert intermediate size each
/// GPU holds (`inter / TP`) and the step's tokens ([`MOE_AXES`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MoeTable {
    pub dtype: MoeDtype,
    pub hidden: u32,
    /// Each expert's intermediate size (all GPUs together).
    pub inter: u32,
    pub topk: u32,
    pub experts: u32,
    pub table: Table,
}

impl MoeTable {
    /// The model shape it was measured for: weights' dtype, hidden size, expert width, experts
    /// per token, experts.
    pub fn shape(&self) -> (MoeDtype, u32, u32, u32, u32) {
        (self.dtype, self.hidden, self.inter, self.topk, self.experts)
    }
}

/// The experts' weights as the MoE kernels read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoeDtype {
    /// 16-bit weights and activations.
    Bf16,
    /// FP8 with a per-tensor scale.
    Fp8,
    /// FP8 with a scale per 128 × 128 block (DeepSeek-V3, Qwen3's FP8 checkpoints).
    Fp8Block,
    /// MXFP4 experts, 16-bit activations (gpt-oss).
    Mxfp4,
}

impl MoeDtype {
    /// The database's name (`moe_dtype`).
    pub fn name(self) -> &'static str {
        match self {
            MoeDtype::Bf16 => "bfloat16",
            MoeDtype::Fp8 => "fp8",
            MoeDtype::Fp8Block => "fp8_block",
            MoeDtype::Mxfp4 => "w4a16_mxfp4",
        }
    }

    /// The dtype of a database name.
    pub fn from_name(name: &str) -> Option<MoeDtype> {
        [MoeDtype::Bf16, MoeDtype::Fp8, MoeDtype::Fp8Block, MoeDtype::Mxfp4].into_iter().find(|d| d.name() == name)
    }
}

/// One dense GEMM `[m × k] · [k × n]`.
pub const GEMM_AXES: [&str; 3] = ["m", "n", "k"];
/// Prefill attention of one prompt of `isl` tokens (causal, batch 1) in one layer.
pub const CONTEXT_AXES: [&str; 3] = ["head_dim", "heads", "isl"];
/// Decode attention of `batch` sequences of `context` tokens in one layer.
pub const DECODE_AXES: [&str; 5] = ["head_dim", "kv_heads", "q_per_kv", "batch", "context"];
/// One all-reduce of `elements` 16-bit values over `gpus` GPUs.
pub const ALL_REDUCE_AXES: [&str; 2] = ["gpus", "elements"];
/// One fused MoE layer: each expert's intermediate size on one GPU, and the step's tokens.
pub const MOE_AXES: [&str; 2] = ["inter_per_gpu", "tokens"];

impl KernelTables {
    /// How reports name them.
    pub fn describe(&self) -> String {
        format!("kernels measured on the {} with vLLM {} (NVIDIA AIConfigurator)", self.system, self.vllm)
    }

    /// The MoE table of a model shape, if it was measured.
    pub fn moe_for(&self, dtype: MoeDtype, hidden: u32, inter: u32, topk: u32, experts: u32) -> Option<&Table> {
        self.moe.iter().find(|m| m.shape() == (dtype, hidden, inter, topk, experts)).map(|m| &m.table)
    }
}
