//! Model presets (the GPU catalogue is `gpus.rs`), and the one formula everything else rests on:
//! KV bytes per token = 2 (K and V) × layers × KV heads × head dim × bytes per element. A model
//! read from a Hugging Face config.json carries its `ModelArch`, which replaces the formula
//! (an MLA latent, not K and V) and the 16-bit weight estimate (dtype, quantization, experts).

use serde::Serialize;

use super::model_arch::{ModelArch, SlidingWindowLayers};

/// Bytes per cached element of K or V.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtype {
    Fp16,
    Fp8,
    /// A float32 model's cache under vLLM's `--kv-cache-dtype auto`.
    Fp32,
}

impl KvDtype {
    pub fn bytes_per_element(self) -> u64 {
        match self {
            KvDtype::Fp16 => 2,
            KvDtype::Fp8 => 1,
            KvDtype::Fp32 => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Fp32 => "fp32",
        }
    }
}

/// The shape of a decoder that matters for its KV cache, plus its size for the step-time model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelSpec {
    pub id: String,
    pub layers: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Parameters in billions; weights are streamed once per decode step at 2 bytes each.
    pub params_b: f64,
    /// The architecture read from a config.json, when the model came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<Box<ModelArch>>,
}

impl ModelSpec {
    /// A model read from a config.json: its KV heads (1 for an MLA latent, replicated under
    /// tensor parallelism as vLLM does), cached head width and total parameters.
    pub fn from_arch(id: impl Into<String>, arch: ModelArch) -> ModelSpec {
        ModelSpec {
            id: id.into(),
            layers: arch.layers,
            kv_heads: arch.kv_heads(),
            head_dim: arch.kv_head_dim(),
            params_b: arch.param_counts().total() as f64 / 1e9,
            arch: Some(Box::new(arch)),
        }
    }

    /// Its sliding-window layers, when its config.json gives any (`ModelArch::sliding_window`).
    pub fn sliding_window(&self) -> Option<SlidingWindowLayers> {
        self.arch.as_deref().and_then(ModelArch::sliding_window)
    }

    pub fn kv_bytes_per_token(&self, dtype: KvDtype) -> u64 {
        if let Some(a) = &self.arch {
            return u64::from(self.layers) * a.kv_bytes_per_token_per_layer(dtype.bytes_per_element(), 1);
        }
        2 * u64::from(self.layers) * u64::from(self.kv_heads) * u64::from(self.head_dim) * dtype.bytes_per_element()
    }

    /// KV bytes per token of a whole tensor-parallel replica: each of the `tp` GPUs holds
    /// `max(1, kv_heads / tp)` heads (replicated once `tp` exceeds the KV heads, as vLLM does).
    pub fn kv_bytes_per_token_tp(&self, dtype: KvDtype, tp: u32) -> u64 {
        let tp = tp.max(1);
        if let Some(a) = &self.arch {
            return u64::from(self.layers)
                * a.kv_bytes_per_token_per_layer(dtype.bytes_per_element(), tp)
                * u64::from(tp);
        }
        let heads = (self.kv_heads / tp).max(1);
        2 * u64::from(self.layers)
            * u64::from(heads)
            * u64::from(self.head_dim)
            * dtype.bytes_per_element()
            * u64::from(tp)
    }

    /// Weight bytes of the whole model: 16-bit weights, or from a config.json its dtype and
    /// quantization.
    pub fn weight_bytes(&self) -> f64 {
        self.arch.as_ref().map_or(self.params_b * 1e9 * 2.0, |a| a.weight_bytes())
    }

    /// The routed experts' bytes and the share of them one token uses (`ModelArch::routed_experts`).
    pub fn routed_experts(&self) -> (f64, f64) {
        self.arch.as_ref().map_or((0.0, 0.0), |a| a.routed_experts())
    }

    /// FLOPs per token of a forward pass (2 × parameters; 2 × active parameters for experts).
    pub fn flops_per_token(&self) -> f64 {
        self.arch.as_ref().map_or(2.0 * self.params_b * 1e9, |a| a.flops_per_token())
    }
}

/// Model ids the presets accept, in the order the lab lists them.
pub const MODEL_IDS: &[&str] = &["llama-3-8b", "llama-3-70b", "mistral-7b", "opt-13b", "llama-2-7b"];

pub fn model_preset(id: &str) -> Option<ModelSpec> {
    let (layers, kv_heads, head_dim, params_b) = match id {
        "llama-3-8b" => (32, 8, 128, 8.03),
        "llama-3-70b" => (80, 8, 128, 70.6),
        "mistral-7b" => (32, 8, 128, 7.24),
        "opt-13b" => (40, 40, 128, 12.9),
        "llama-2-7b" => (32, 32, 128, 6.74),
        _ => return None,
    };
    Some(ModelSpec { id: id.to_string(), layers, kv_heads, head_dim, params_b, arch: None })
}

pub use super::gpus::{gpu_preset, GpuSpec, GPU_IDS};

pub const GIB: u64 = 1 << 30;

/// Tokens of KV context that fit in `kv_bytes` (floor).
pub fn capacity_tokens(kv_bytes: u64, kv_bytes_per_token: u64) -> u64 {
    kv_bytes / kv_bytes_per_token
}
