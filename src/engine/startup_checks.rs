//! vLLM's startup checks, as pure functions that return vLLM 0.33's own error text.
//!
//! - Free memory below the requested share (`vllm/v1/worker/utils.py::request_memory`): the
//!   second instance on a GPU whose fraction does not fit beside the first.
//! - No memory left for the KV cache, and a `max_model_len` request that does not fit, with the
//!   estimated maximum model length (`vllm/v1/core/kv_cache_planning.py::
//!   _check_enough_kv_cache_memory`). vLLM plans against the available memory less the one null
//!   block its `BlockPool` holds back; a request of L tokens needs `cdiv(L, block_size)` blocks;
//!   its binary search for the longest L that fits lands on `(usable ÷ bytes per block) × block_size`.
//! - A block size the attention backend cannot run (`vllm/v1/attention/backend.py::
//!   supports_block_size` over each backend's `get_supported_kernel_block_sizes`): a size is
//!   supported when it is a multiple of one of the advertised sizes.
//! - A `max_model_len` above the length a config.json gives (`vllm/config/model.py::
//!   _get_and_verify_max_len`, `ModelArch::derived_max_len`), refused before anything loads unless
//!   `VLLM_ALLOW_LONG_MAX_MODEL_LEN` is set.

use serde::Serialize;

use super::kv_spec::KvLayout;
use super::memory_budget::{format_gib, MemoryBudget};
use super::model_arch::ModelArch;

/// `_get_and_verify_max_len`: a `max_model_len` above the model's derived length is refused in
/// vLLM's words (its `model_max_length` attribute, absent from these configs, prints None).
pub fn check_derived_max_model_len(arch: &ModelArch, max_model_len: u32) -> Result<(), String> {
    let Some(d) = arch.derived_max_len else { return Ok(()) };
    if u64::from(max_model_len) <= d.tokens {
        return Ok(());
    }
    let derived = if d.scaled { format!("{}.0", d.tokens) } else { d.tokens.to_string() };
    Err(format!(
        "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len ({}={derived} or \
         model_max_length=None in model's config.json). To allow overriding this maximum, set the env var \
         VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; use a max_model_len of {} or less",
        d.key, d.tokens
    ))
}

/// The CUDA/ROCm/CPU attention backends a dense decoder can use, with the kernel block sizes
/// vLLM 0.33 advertises for them (`get_supported_kernel_block_sizes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionBackend {
    /// `FLASH_ATTN` (default on CUDA before Blackwell): `[MultipleOf(16)]`.
    #[default]
    FlashAttention,
    /// `FLASHINFER` (off Blackwell's large-page path): `[16, 32, 64]`.
    FlashInfer,
    /// `TRITON_ATTN`: `[MultipleOf(16)]`.
    Triton,
    /// `FLEX_ATTENTION`: `[MultipleOf(16)]`.
    FlexAttention,
    /// ROCm AITER FlashAttention (its enum name is `FLASH_ATTN` too): `[16, 32]`.
    RocmAiterFlashAttention,
    /// `CPU_ATTN`: `[MultipleOf(32)]`.
    Cpu,
}

/// One advertised kernel block size: exact, or any multiple of a base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelBlockSize {
    Exactly(u32),
    MultipleOf(u32),
}

pub const ATTENTION_BACKENDS: &[AttentionBackend] = &[
    AttentionBackend::FlashAttention,
    AttentionBackend::FlashInfer,
    AttentionBackend::Triton,
    AttentionBackend::FlexAttention,
    AttentionBackend::RocmAiterFlashAttention,
    AttentionBackend::Cpu,
];

impl AttentionBackend {
    /// The name vLLM's `AttentionBackendEnum` gives the backend.
    pub fn vllm_name(self) -> &'static str {
        match self {
            AttentionBackend::FlashAttention | AttentionBackend::RocmAiterFlashAttention => "FLASH_ATTN",
            AttentionBackend::FlashInfer => "FLASHINFER",
            AttentionBackend::Triton => "TRITON_ATTN",
            AttentionBackend::FlexAttention => "FLEX_ATTENTION",
            AttentionBackend::Cpu => "CPU_ATTN",
        }
    }

    /// kvlab's command-line spelling.
    pub fn id(self) -> &'static str {
        match self {
            AttentionBackend::FlashAttention => "flash-attn",
            AttentionBackend::FlashInfer => "flashinfer",
            AttentionBackend::Triton => "triton",
            AttentionBackend::FlexAttention => "flex-attention",
            AttentionBackend::RocmAiterFlashAttention => "rocm-aiter-fa",
            AttentionBackend::Cpu => "cpu",
        }
    }

    pub fn from_id(id: &str) -> Option<AttentionBackend> {
        ATTENTION_BACKENDS.iter().copied().find(|b| b.id() == id)
    }

    pub fn supported_kernel_block_sizes(self) -> &'static [KernelBlockSize] {
        use KernelBlockSize::{Exactly, MultipleOf};
        match self {
            AttentionBackend::FlashAttention | AttentionBackend::Triton | AttentionBackend::FlexAttention => {
                &[MultipleOf(16)]
            }
            AttentionBackend::FlashInfer => &[Exactly(16), Exactly(32), Exactly(64)],
            AttentionBackend::RocmAiterFlashAttention => &[Exactly(16), Exactly(32)],
            AttentionBackend::Cpu => &[MultipleOf(32)],
        }
    }

    /// `supports_block_size`: with hybrid blocks the framework block only needs to be a multiple
    /// of one size the kernel runs, so an exact size counts as a base too.
    /// The block sizes this backend runs, in words ("multiples of 16", "16, 32 or 64").
    pub fn block_sizes_text(self) -> String {
        let parts: Vec<String> = self
            .supported_kernel_block_sizes()
            .iter()
            .map(|k| match k {
                KernelBlockSize::MultipleOf(m) => format!("multiples of {m}"),
                KernelBlockSize::Exactly(n) => n.to_string(),
            })
            .collect();
        parts.join(", ")
    }

    pub fn supports_block_size(self, block_size: u32) -> bool {
        self.supported_kernel_block_sizes().iter().any(|s| {
            let base = match *s {
                KernelBlockSize::Exactly(n) | KernelBlockSize::MultipleOf(n) => n,
            };
            block_size % base == 0
        })
    }
}

/// "Selected backend … is not valid for this configuration", as `CudaPlatform.get_attn_backend_cls`
/// raises it when `--attention-backend` is given and the block size is not one the backend runs.
pub fn check_block_size(backend: AttentionBackend, block_size: u32) -> Result<(), String> {
    if backend.supports_block_size(block_size) {
        return Ok(());
    }
    Err(format!(
        "Selected backend AttentionBackendEnum.{} is not valid for this configuration. Reason: ['block_size not supported']",
        backend.vllm_name()
    ))
}

/// `request_memory`: the free memory at startup must cover this instance's requested share.
pub fn check_free_memory(budget: &MemoryBudget) -> Result<(), String> {
    if budget.free_at_startup_bytes >= budget.requested_bytes {
        return Ok(());
    }
    Err(format!(
        "Free memory on device cuda:0 ({}/{} GiB) on startup is less than desired GPU memory utilization ({}, {} GiB). \
         Decrease GPU memory utilization or reduce GPU memory used by other processes.",
        format_gib(budget.free_at_startup_bytes as i64),
        format_gib(budget.gpu_total_bytes as i64),
        super::memory_budget::python_float(budget.gpu_memory_utilization, 4),
        format_gib(budget.requested_bytes as i64),
    ))
}

/// The longest model length whose blocks fit in `usable_bytes` (vLLM's binary search, closed form).
pub fn estimated_max_model_len(usable_bytes: i64, bytes_per_block: u64, block_size: u32, max_model_len: u32) -> u64 {
    if usable_bytes <= 0 || bytes_per_block == 0 {
        return 0;
    }
    let blocks = usable_bytes as u64 / bytes_per_block;
    (blocks * u64::from(block_size)).min(u64::from(max_model_len))
}

/// `_check_enough_kv_cache_memory`: some memory must be left, and one `max_model_len` request must fit.
pub fn check_kv_cache_memory(budget: &MemoryBudget) -> Result<(), String> {
    if budget.available_kv_bytes <= 0 {
        return Err("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when \
                    initializing the engine (this flag also controls CPU memory reservation on the CPU backend, \
                    despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ \
                    for more details."
            .to_string());
    }
    if budget.kv_layout.is_hybrid() {
        return check_hybrid_budget(budget);
    }
    check_max_model_len_fits(budget.available_kv_bytes, budget.bytes_per_block, budget.block_size, budget.max_model_len)
}

/// `_check_enough_kv_cache_memory` for sliding-window or chunked layers beside full ones: one
/// `max_model_len` request needs every layer's most (a window's layers only their window's
/// blocks); the estimate is vLLM's binary search for the longest length that fits.
fn check_hybrid_budget(budget: &MemoryBudget) -> Result<(), String> {
    check_hybrid_max_model_len_fits(
        &budget.kv_layout,
        budget.available_kv_bytes,
        budget.bytes_per_block,
        budget.block_size,
        budget.max_num_batched_tokens,
        budget.max_model_len,
    )
}

/// The hybrid check on a pool of `available_bytes` in blocks of `bytes_per_block` (one group's
/// layers), `t` tokens a step: what `kvlab plan --gpu` and a preset's `kv_memory_gib` both ask.
pub fn check_hybrid_max_model_len_fits(
    layout: &KvLayout,
    available_bytes: i64,
    bytes_per_block: u64,
    block_size: u32,
    t: u32,
    max_len: u32,
) -> Result<(), String> {
    let page = bytes_per_block / u64::from(layout.group_size.max(1));
    let usable = available_bytes - bytes_per_block as i64;
    let needed = |len: u32| layout.layer_pages_per_request(len, block_size, t) * page;
    if needed(max_len) as i64 <= usable {
        return Ok(());
    }
    let (mut lo, mut hi) = (0u32, max_len);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if needed(mid) as i64 <= usable {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Err(max_len_refusal(max_len, needed(max_len), usable, u64::from(lo)))
}

/// The second half of `_check_enough_kv_cache_memory` on a pool of `available_bytes` (of one GPU,
/// or of the whole replica with its bytes per block): one `max_model_len` request must fit beside
/// the null block, else vLLM's refusal with the estimated maximum model length.
pub fn check_max_model_len_fits(
    available_bytes: i64,
    bytes_per_block: u64,
    block_size: u32,
    max_model_len: u32,
) -> Result<(), String> {
    // The null block BlockPool permanently holds back.
    let usable = available_bytes - bytes_per_block as i64;
    let blocks_needed = u64::from(max_model_len).div_ceil(u64::from(block_size.max(1)));
    let needed = blocks_needed * bytes_per_block;
    if (needed as i64) <= usable {
        return Ok(());
    }
    let estimate = estimated_max_model_len(usable, bytes_per_block, block_size, max_model_len);
    Err(max_len_refusal(max_model_len, needed, usable, estimate))
}

/// vLLM's words when one `max_model_len` request needs `needed` bytes and `usable` are left.
fn max_len_refusal(max_model_len: u32, needed: u64, usable: i64, estimate: u64) -> String {
    let estimated_msg = if estimate > 0 {
        format!("Based on the available memory, the estimated maximum model length is {estimate}. ")
    } else {
        String::new()
    };
    format!(
        "To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is needed, which is \
         larger than the available KV cache memory ({} GiB). {estimated_msg}Try increasing `gpu_memory_utilization` \
         (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the \
         engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
        max_model_len,
        format_gib(needed as i64),
        format_gib(usable),
    )
}

/// Every startup check in vLLM's order: backend selection, the requested share, the KV cache.
pub fn check_startup(budget: &MemoryBudget, backend: AttentionBackend) -> Result<(), String> {
    check_block_size(backend, budget.block_size)?;
    check_free_memory(budget)?;
    check_kv_cache_memory(budget)
}
