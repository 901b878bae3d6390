//! Model and GPU presets, and the one formula everything else rests on:
//! KV bytes per token = 2 (K and V) × layers × KV heads × head dim × bytes per element.

use serde::Serialize;

/// Bytes per cached element of K or V.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtype {
    Fp16,
    Fp8,
}

impl KvDtype {
    pub fn bytes_per_element(self) -> u64 {
        match self {
            KvDtype::Fp16 => 2,
            KvDtype::Fp8 => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
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
}

impl ModelSpec {
    pub fn kv_bytes_per_token(&self, dtype: KvDtype) -> u64 {
        2 * u64::from(self.layers) * u64::from(self.kv_heads) * u64::from(self.head_dim) * dtype.bytes_per_element()
    }

    /// KV bytes per token of a whole tensor-parallel replica: each of the `tp` GPUs holds
    /// `max(1, kv_heads / tp)` heads (replicated once `tp` exceeds the KV heads, as vLLM does).
    pub fn kv_bytes_per_token_tp(&self, dtype: KvDtype, tp: u32) -> u64 {
        let tp = tp.max(1);
        let heads = (self.kv_heads / tp).max(1);
        2 * u64::from(self.layers)
            * u64::from(heads)
            * u64::from(self.head_dim)
            * dtype.bytes_per_element()
            * u64::from(tp)
    }

    /// Weight bytes read per forward pass (16-bit weights).
    pub fn weight_bytes(&self) -> f64 {
        self.params_b * 1e9 * 2.0
    }

    /// FLOPs per token of a forward pass (2 × parameters).
    pub fn flops_per_token(&self) -> f64 {
        2.0 * self.params_b * 1e9
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
    Some(ModelSpec { id: id.to_string(), layers, kv_heads, head_dim, params_b })
}

/// The GPU figures the step-time model uses: memory bandwidth and dense 16-bit peak FLOPs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    pub id: String,
    pub name: String,
    pub memory_gib: f64,
    pub mem_bandwidth_gb_s: f64,
    pub peak_tflops: f64,
    /// Host link used for swap (GB/s).
    pub pcie_gb_s: f64,
    /// GPU-to-GPU bandwidth per direction for tensor-parallel all-reduces (NVLink; PCIe on L4), GB/s.
    pub interconnect_gb_s: f64,
}

pub const GPU_IDS: &[&str] = &["a100-80gb", "h100-sxm", "h200", "l4"];

pub fn gpu_preset(id: &str) -> Option<GpuSpec> {
    // NVLink per direction: 600 GB/s (A100) and 900 GB/s (H100, H200) counted both ways.
    let (name, memory_gib, bw, tflops, pcie, link) = match id {
        "a100-80gb" => ("NVIDIA A100 80GB SXM", 80.0, 2039.0, 312.0, 25.0, 300.0),
        "h100-sxm" => ("NVIDIA H100 SXM", 80.0, 3350.0, 989.0, 50.0, 450.0),
        "h200" => ("NVIDIA H200", 141.0, 4800.0, 989.0, 50.0, 450.0),
        "l4" => ("NVIDIA L4", 24.0, 300.0, 121.0, 25.0, 25.0),
        _ => return None,
    };
    Some(GpuSpec {
        id: id.to_string(),
        name: name.to_string(),
        memory_gib,
        mem_bandwidth_gb_s: bw,
        peak_tflops: tflops,
        pcie_gb_s: pcie,
        interconnect_gb_s: link,
    })
}

pub const GIB: u64 = 1 << 30;

/// Tokens of KV context that fit in `kv_bytes` (floor).
pub fn capacity_tokens(kv_bytes: u64, kv_bytes_per_token: u64) -> u64 {
    kv_bytes / kv_bytes_per_token
}
