//! The kernel clock: a step priced from GPU kernel times measured with vLLM's own kernels (NVIDIA
//! AIConfigurator's database, Apache-2.0; `assets/kernels/` holds the extract, read by
//! `formats::kernel_tables`): GEMMs by (m, n, k) in BF16 and FP8, FlashAttention prefill by
//! (head size, query heads, prompt length), decode attention by (head size, KV heads, query heads
//! per KV head, batch, context), vLLM's custom all-reduce and NCCL's by GPUs and message size,
//! and vLLM's fused MoE layer by model shape, expert intermediate size per GPU and tokens.
//!
//! `table.rs` reads one table anywhere on its grid; `step.rs` turns one model's shapes into
//! curves of the step's size once, and prices a step with a handful of lookups. The host's share
//! of a step (scheduling, input preparation, sampling) is not in any kernel table: it comes from
//! the GPU's fitted constants (`constants.rs`), as the roofline's does.

mod by_count;
mod step;
mod table;
mod tables;

pub use step::KernelClock;
pub use table::{Curve, Table, TableError};
pub use tables::{KernelTables, MoeDtype, MoeTable, ALL_REDUCE_AXES, CONTEXT_AXES, DECODE_AXES, GEMM_AXES, MOE_AXES};
