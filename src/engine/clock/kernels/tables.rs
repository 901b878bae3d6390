//! One GPU's measured kernel tables, as `formats::kernel_tables` reads them from
//! `assets/kernels/<gpu>.json`, and the axes each table has, in order.

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
}

/// One dense GEMM `[m × k] · [k × n]`.
pub const GEMM_AXES: [&str; 3] = ["m", "n", "k"];
/// Prefill attention of one prompt of `isl` tokens (causal, batch 1) in one layer.
pub const CONTEXT_AXES: [&str; 3] = ["head_dim", "heads", "isl"];
/// Decode attention of `batch` sequences of `context` tokens in one layer.
pub const DECODE_AXES: [&str; 5] = ["head_dim", "kv_heads", "q_per_kv", "batch", "context"];
/// One all-reduce of `elements` 16-bit values over `gpus` GPUs.
pub const ALL_REDUCE_AXES: [&str; 2] = ["gpus", "elements"];

impl KernelTables {
    /// How reports name them.
    pub fn describe(&self) -> String {
        format!("kernels measured on the {} with vLLM {} (NVIDIA AIConfigurator)", self.system, self.vllm)
    }
}
