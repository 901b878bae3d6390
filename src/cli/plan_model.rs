//! What `kvlab plan --json` adds for a model read from a config.json (`--model-config`): the
//! architecture's figures (parameters, weights, FLOPs, KV bytes, vLLM's KV groups).

use serde::Serialize;

use crate::engine::kv_spec::KvLayout;
use crate::engine::model::{KvDtype, ModelSpec, GIB};
use crate::engine::model_arch::LayerAttention;

/// The `model` object of `kvlab plan --json` for a config.json.
#[derive(Serialize)]
pub struct ModelJson {
    pub id: String,
    pub architecture: String,
    pub layers: u32,
    pub total_params: u64,
    pub active_params: u64,
    pub dtype: &'static str,
    pub quantization: Option<&'static str>,
    pub weight_bytes: u64,
    pub weight_gib: f64,
    pub flops_per_token: f64,
    /// KV bytes of one token in every layer (full attention), whole model.
    pub kv_bytes_per_token: u64,
    pub attention: &'static str,
    /// vLLM's KV cache groups: each kind of layer and its count.
    pub kv_layout: KvLayout,
}

impl ModelJson {
    pub fn of(model: &ModelSpec, kv_dtype: KvDtype) -> Option<ModelJson> {
        let a = model.arch.as_deref()?;
        let c = a.param_counts();
        Some(ModelJson {
            id: model.id.clone(),
            architecture: a.architecture.clone(),
            layers: a.layers,
            total_params: c.total(),
            active_params: c.active(),
            dtype: a.dtype.name(),
            quantization: a.quantization.map(|q| q.name()),
            weight_bytes: a.weight_bytes() as u64,
            weight_gib: (a.weight_bytes() / GIB as f64 * 100.0).round() / 100.0,
            flops_per_token: a.flops_per_token(),
            kv_bytes_per_token: model.kv_bytes_per_token(kv_dtype),
            attention: match a.attention {
                crate::engine::model_arch::Attention::Grouped { .. } => "grouped-query",
                crate::engine::model_arch::Attention::Latent { .. } => "multi-head latent",
            },
            kv_layout: KvLayout::of(&a.layer_attention),
        })
    }
}

impl ModelJson {
    /// One line for the text plan: what the config.json gives.
    pub fn summary(&self) -> String {
        let b = |n: u64| format!("{:.2} B", n as f64 / 1e9);
        let active = if self.active_params < self.total_params {
            format!(" ({} active)", b(self.active_params))
        } else {
            String::new()
        };
        let kinds: Vec<String> = self
            .kv_layout
            .kinds
            .iter()
            .map(|k| match k.attention {
                LayerAttention::Full => format!("{} full", k.layers),
                LayerAttention::SlidingWindow(w) => format!("{} sliding-window ({w})", k.layers),
                LayerAttention::Chunked(c) => format!("{} chunked ({c})", k.layers),
            })
            .collect();
        format!(
            "config.json: {}, {} parameters{active}, {}{}, {} GiB of weights, {} attention, layers: {}",
            self.architecture,
            b(self.total_params),
            self.dtype,
            self.quantization.map_or(String::new(), |q| format!(" with {q} weights")),
            self.weight_gib,
            self.attention,
            kinds.join(", ")
        )
    }
}
