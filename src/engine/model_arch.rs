//! A decoder's architecture as a Hugging Face `config.json` describes it (read by
//! `formats::hf_config`), and the numbers vLLM's memory and time depend on, derived from it:
//! parameters (total, and active per token for mixtures of experts), weight bytes per dtype and
//! quantization (the modules a checkpoint leaves unquantized stay 16-bit), FLOPs per token and
//! the KV cache per layer (`kv_spec.rs` groups the layers as vLLM's hybrid allocator does).
//!
//! Parameter counts follow the modules vLLM builds for the architecture: embeddings, the
//! language-model head unless tied (with its bias for Phi-2), per layer the attention
//! projections (grouped-query, or DeepSeek's multi-head latent attention; a fused qkv_proj holds
//! the same weights as three), a gated MLP (3 × hidden × intermediate) or a plain one (2 ×:
//! Phi-2's fc1/fc2, StarCoder2's c_fc/c_proj, Falcon's dense_h_to_4h/dense_4h_to_h), with its
//! biases where the checkpoint has them, or routed experts with their router and shared experts,
//! the norms (a LayerNorm's bias doubling them; OLMo-2's and Command R+'s q/k norms over all
//! heads), and a vision encoder when the checkpoint carries one (estimated from `vision_config`).

use serde::Serialize;

/// The checkpoint's 16/32-bit dtype (`torch_dtype`, or vLLM's `--dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightDtype {
    Bf16,
    Fp16,
    Fp32,
}

impl WeightDtype {
    pub fn bytes(self) -> f64 {
        match self {
            WeightDtype::Bf16 | WeightDtype::Fp16 => 2.0,
            WeightDtype::Fp32 => 4.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WeightDtype::Bf16 => "bfloat16",
            WeightDtype::Fp16 => "float16",
            WeightDtype::Fp32 => "float32",
        }
    }
}

/// How the quantized linear layers are stored.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Quantization {
    /// 8-bit floats (`fp8`, compressed-tensors FP8): one byte per weight, plus a float32 scale
    /// per `scale_block` weights (DeepSeek-V3's 128 × 128 blocks; 0 for a per-tensor or
    /// per-channel scale, which is negligible).
    Fp8 { scale_block: u32 },
    /// 8-bit integers (compressed-tensors w8a8): one byte per weight.
    Int8,
    /// Integer weights of `bits` with a 16-bit scale per `group_size` weights (GPTQ, AWQ,
    /// compressed-tensors w4a16), experts and attention alike.
    IntGrouped { bits: u32, group_size: u32 },
    /// MXFP4 (gpt-oss): 4-bit experts with an 8-bit scale per 32 weights; attention, router,
    /// embeddings and head stay 16-bit (`modules_to_not_convert`).
    Mxfp4,
}

impl Quantization {
    /// Bytes per weight of a quantized module.
    pub fn bytes_per_weight(self) -> f64 {
        match self {
            Quantization::Fp8 { scale_block: 0 } => 1.0,
            Quantization::Fp8 { scale_block } => 1.0 + 4.0 / f64::from(scale_block),
            Quantization::Int8 => 1.0,
            Quantization::IntGrouped { bits, group_size } => f64::from(bits) / 8.0 + 2.0 / f64::from(group_size.max(1)),
            Quantization::Mxfp4 => 0.5 + 1.0 / 32.0,
        }
    }

    /// Whether the attention projections and dense MLPs are quantized too (MXFP4: experts only).
    pub fn covers_dense_layers(self) -> bool {
        !matches!(self, Quantization::Mxfp4)
    }

    pub fn name(self) -> &'static str {
        match self {
            Quantization::Fp8 { .. } => "fp8",
            Quantization::Int8 => "int8",
            Quantization::IntGrouped { bits: 4, .. } => "int4",
            Quantization::IntGrouped { .. } => "int",
            Quantization::Mxfp4 => "mxfp4",
        }
    }
}

/// The attention of one decoder layer: what its projections hold and what its KV cache stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Attention {
    /// Multi-head or grouped-query attention: K and V of `kv_heads` heads of `head_dim` each.
    Grouped { heads: u32, kv_heads: u32, head_dim: u32, bias: bool },
    /// DeepSeek-V2/V3's multi-head latent attention: the cache holds one latent of
    /// `kv_lora_rank + qk_rope_head_dim` elements per token per layer (not K and V), the same on
    /// every tensor-parallel rank.
    Latent {
        heads: u32,
        q_lora_rank: Option<u32>,
        kv_lora_rank: u32,
        qk_nope_head_dim: u32,
        qk_rope_head_dim: u32,
        v_head_dim: u32,
    },
}

impl Attention {
    /// Elements cached per token per layer on one of `tp` GPUs, and whether they are K and V
    /// (two tensors) or one latent.
    pub fn cached_elements_per_gpu(self, tp: u32) -> u64 {
        match self {
            Attention::Grouped { kv_heads, head_dim, .. } => {
                2 * u64::from((kv_heads / tp.max(1)).max(1)) * u64::from(head_dim)
            }
            Attention::Latent { kv_lora_rank, qk_rope_head_dim, .. } => u64::from(kv_lora_rank + qk_rope_head_dim),
        }
    }

    /// Parameters of one layer's attention projections (and their biases).
    pub fn params(self, hidden: u64) -> u64 {
        match self {
            Attention::Grouped { heads, kv_heads, head_dim, bias } => {
                let (q, kv) = (u64::from(heads * head_dim), u64::from(kv_heads * head_dim));
                let weights = hidden * (q + 2 * kv) + q * hidden;
                weights + if bias { q + 2 * kv + hidden } else { 0 }
            }
            Attention::Latent { heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim } => {
                let heads = u64::from(heads);
                let qk = u64::from(qk_nope_head_dim + qk_rope_head_dim);
                let q = match q_lora_rank {
                    Some(r) => hidden * u64::from(r) + u64::from(r) + u64::from(r) * heads * qk,
                    None => hidden * heads * qk,
                };
                let kv_lora = u64::from(kv_lora_rank);
                let kv_a = hidden * (kv_lora + u64::from(qk_rope_head_dim)) + kv_lora;
                let kv_b = kv_lora * heads * u64::from(qk_nope_head_dim + v_head_dim);
                q + kv_a + kv_b + heads * u64::from(v_head_dim) * hidden
            }
        }
    }
}

/// Routed experts: `moe_layers` of the layers hold `experts` gated MLPs of
/// `expert_intermediate` (each token uses `experts_per_token`), a router, and shared experts of
/// `shared_intermediate` in all; the other layers hold a dense MLP of the model's intermediate size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Experts {
    pub experts: u32,
    pub experts_per_token: u32,
    pub expert_intermediate: u32,
    pub shared_intermediate: u32,
    pub moe_layers: u32,
    /// Biases on the experts' projections and the router (gpt-oss).
    pub bias: bool,
}

/// Which tokens a layer attends to, and so which it must keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "tokens")]
pub enum LayerAttention {
    Full,
    /// The last `tokens` tokens (`sliding_window`).
    SlidingWindow(u32),
    /// The tokens of the current chunk of `tokens` (Llama-4's `attention_chunk_size`).
    Chunked(u32),
}

/// A model's sliding-window layers: each attends to (and reads) only its last `window` tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingWindowLayers {
    pub window: u32,
    pub layers: u32,
}

/// The MLP of a dense layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mlp {
    /// Gate, up and down projections (SwiGLU, GeGLU): 3 × hidden × intermediate.
    #[default]
    Gated,
    /// Up and down projections around an activation (GELU): 2 × hidden × intermediate.
    Plain,
}

impl Mlp {
    pub fn is_gated(&self) -> bool {
        *self == Mlp::Gated
    }

    /// Weight matrices of hidden × intermediate in one MLP.
    pub fn matrices(self) -> u64 {
        match self {
            Mlp::Gated => 3,
            Mlp::Plain => 2,
        }
    }
}

/// Bias vectors beyond the attention projections' (`Attention::Grouped::bias`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Biases {
    /// On the dense MLP's projections (Phi-2, StarCoder2).
    pub mlp: bool,
    /// On every norm: a LayerNorm with weight and bias (Phi-2, StarCoder2, Falcon).
    pub norms: bool,
    /// On the language-model head (Phi-2).
    pub lm_head: bool,
}

impl Biases {
    pub fn is_none(&self) -> bool {
        *self == Biases::default()
    }
}

/// vLLM's derived maximum length (`_get_and_verify_max_len`, `derive_max_model_len_and_key`):
/// the smallest of the config's length keys (`model_max_length` winning where given), times a
/// `linear` or `dynamic` RoPE factor; a longer `max_model_len` is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DerivedMaxLen {
    pub tokens: u64,
    /// The key it came from, as vLLM names it (`max_position_embeddings`).
    pub key: &'static str,
    /// Whether vLLM multiplied it by a RoPE factor (1.0 included), and so prints it as a float.
    pub scaled: bool,
}

/// A decoder as its config.json gives it (after defaults), with everything derived from it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelArch {
    /// `architectures[0]`, e.g. `LlamaForCausalLM`.
    pub architecture: String,
    pub layers: u32,
    pub hidden_size: u32,
    pub intermediate_size: u32,
    pub vocab_size: u32,
    pub tie_word_embeddings: bool,
    pub attention: Attention,
    pub experts: Option<Experts>,
    /// One entry per layer.
    pub layer_attention: Vec<LayerAttention>,
    /// Norm vectors per layer (2; Gemma-2/3 have 4; parallel attention and MLP share 1).
    pub norms_per_layer: u32,
    /// The dense layers' MLP (gated unless the architecture's is plain).
    #[serde(skip_serializing_if = "Mlp::is_gated")]
    pub mlp: Mlp,
    #[serde(skip_serializing_if = "Biases::is_none")]
    pub biases: Biases,
    /// Norms of the queries and keys over all heads (OLMo-2's `q_norm` of heads × head dim and
    /// `k_norm` of KV heads × head dim; Command R+'s per-head norms hold as many).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub qk_norm: bool,
    /// Parameters outside the decoder (a vision encoder and its projector), estimated.
    pub vision_params: u64,
    pub dtype: WeightDtype,
    pub quantization: Option<Quantization>,
    /// Elements of the rotary embeddings' cos/sin caches vLLM builds at load time
    /// (`RotaryEmbedding.cos_sin_cache`: positions × rotary dim, one per distinct RoPE setup), held
    /// whole on every GPU at the model's dtype and counted in "Model loading took".
    #[serde(skip)]
    pub rope_cache_elements: u64,
    /// The longest `max_model_len` vLLM accepts for the config, when it gives a length.
    #[serde(skip)]
    pub derived_max_len: Option<DerivedMaxLen>,
}

/// Parameters by module, so that weight bytes can price each at its own width.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ParamCounts {
    pub embedding: u64,
    pub lm_head: u64,
    pub attention: u64,
    pub dense_mlp: u64,
    /// Every routed expert of every MoE layer.
    pub experts: u64,
    /// The routed experts one token uses.
    pub active_experts: u64,
    pub shared_experts: u64,
    pub router: u64,
    pub norms: u64,
    pub vision: u64,
}

impl ParamCounts {
    pub fn total(&self) -> u64 {
        self.embedding
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.norms
            + self.vision
    }

    /// Parameters one text token passes through (the embedding row and the routed experts it
    /// uses included, the vision encoder not).
    pub fn active(&self) -> u64 {
        self.total() - self.experts + self.active_experts - self.vision
    }
}

impl ModelArch {
    pub fn param_counts(&self) -> ParamCounts {
        let hidden = u64::from(self.hidden_size);
        let layers = u64::from(self.layers);
        let embedding = u64::from(self.vocab_size) * hidden;
        let gated = |inter: u32| 3 * hidden * u64::from(inter);
        let b = self.biases;
        let lm_head = if self.tie_word_embeddings { 0 } else { embedding };
        let qk_norm = match self.attention {
            Attention::Grouped { heads, kv_heads, head_dim, .. } if self.qk_norm => {
                u64::from((heads + kv_heads) * head_dim)
            }
            _ => 0,
        };
        let norm_vectors = (layers * u64::from(self.norms_per_layer) + 1) * hidden + layers * qk_norm;
        let mut c = ParamCounts {
            embedding,
            lm_head: lm_head + if b.lm_head { u64::from(self.vocab_size) } else { 0 },
            attention: layers * self.attention.params(hidden),
            norms: norm_vectors * if b.norms { 2 } else { 1 },
            vision: self.vision_params,
            ..ParamCounts::default()
        };
        let moe_layers = self.experts.map_or(0, |e| u64::from(e.moe_layers.min(self.layers)));
        let inter = u64::from(self.intermediate_size);
        let mlp_bias = if b.mlp { (self.mlp.matrices() - 1) * inter + hidden } else { 0 };
        c.dense_mlp = (layers - moe_layers) * (self.mlp.matrices() * hidden * inter + mlp_bias);
        if let Some(e) = self.experts {
            let bias = if e.bias { 2 * u64::from(e.expert_intermediate) + hidden } else { 0 };
            let expert = gated(e.expert_intermediate) + bias;
            c.experts = moe_layers * u64::from(e.experts) * expert;
            c.active_experts = moe_layers * u64::from(e.experts_per_token.min(e.experts)) * expert;
            c.shared_experts = moe_layers * gated(e.shared_intermediate);
            c.router = moe_layers * u64::from(e.experts) * (hidden + u64::from(e.bias));
        }
        c
    }

    /// Bytes the weights take on the GPUs of one replica: quantized modules at the
    /// quantization's width, the rest (embeddings, head, norms, router, vision encoder, and
    /// under MXFP4 the attention and dense MLPs) at the checkpoint's dtype.
    /// Bytes of the rotary caches on each GPU (`rope_cache_elements` at the model's dtype).
    pub fn rope_cache_bytes(&self) -> f64 {
        self.rope_cache_elements as f64 * self.dtype.bytes()
    }

    /// What "Model loading took" reports on each of `tp` GPUs: the weights' share plus the rotary
    /// caches every GPU builds whole.
    pub fn loaded_bytes_per_gpu(&self, tp: u32) -> f64 {
        self.weight_bytes() / f64::from(tp.max(1)) + self.rope_cache_bytes()
    }

    pub fn weight_bytes(&self) -> f64 {
        let c = self.param_counts();
        let wide = self.dtype.bytes();
        let unquantized = (c.embedding + c.lm_head + c.norms + c.router + c.vision) as f64 * wide;
        let dense = (c.attention + c.dense_mlp + c.shared_experts) as f64;
        let experts = c.experts as f64;
        let quantized = match self.quantization {
            None => (dense + experts) * wide,
            Some(q) if q.covers_dense_layers() => (dense + experts) * q.bytes_per_weight(),
            Some(q) => dense * wide + experts * q.bytes_per_weight(),
        };
        unquantized + quantized
    }

    /// Bytes of the routed experts (part of `weight_bytes`), and the share of them one token
    /// uses (`experts_per_token ÷ experts`); (0, 0) for a dense model.
    pub fn routed_experts(&self) -> (f64, f64) {
        let Some(e) = self.experts else { return (0.0, 0.0) };
        let per_weight = match self.quantization {
            Some(q) => q.bytes_per_weight(),
            None => self.dtype.bytes(),
        };
        let share = f64::from(e.experts_per_token) / f64::from(e.experts.max(1));
        (self.param_counts().experts as f64 * per_weight, share)
    }

    /// Whether the matrix products run on 8-bit tensor cores (FP8 or INT8 weights and
    /// activations); weight-only 4-bit and MXFP4 checkpoints compute in 16 bits on these GPUs.
    pub fn computes_in_8_bits(&self) -> bool {
        matches!(self.quantization, Some(Quantization::Fp8 { .. } | Quantization::Int8))
    }

    /// FLOPs per token of a forward pass: 2 × active parameters.
    pub fn flops_per_token(&self) -> f64 {
        2.0 * self.param_counts().active() as f64
    }

    /// The sliding window its windowed layers read, and how many layers have one (None without
    /// any). A model with several window sizes reports the largest: its steps read no less.
    pub fn sliding_window(&self) -> Option<SlidingWindowLayers> {
        let windows = self.layer_attention.iter().filter_map(|l| match *l {
            LayerAttention::SlidingWindow(w) => Some(w),
            _ => None,
        });
        let (count, window) = windows.fold((0u32, 0u32), |(n, w), x| (n + 1, w.max(x)));
        (count > 0).then_some(SlidingWindowLayers { window, layers: count })
    }

    /// KV bytes one token costs in one layer on one of `tp` GPUs, at `kv_bytes` per element.
    pub fn kv_bytes_per_token_per_layer(&self, kv_bytes: u64, tp: u32) -> u64 {
        self.attention.cached_elements_per_gpu(tp) * kv_bytes
    }

    /// KV heads as vLLM splits them under tensor parallelism (an MLA latent counts as one head,
    /// replicated on every GPU).
    pub fn kv_heads(&self) -> u32 {
        match self.attention {
            Attention::Grouped { kv_heads, .. } => kv_heads,
            Attention::Latent { .. } => 1,
        }
    }

    /// The width of one cached head (K or V; the latent for MLA).
    pub fn kv_head_dim(&self) -> u32 {
        match self.attention {
            Attention::Grouped { head_dim, .. } => head_dim,
            Attention::Latent { kv_lora_rank, qk_rope_head_dim, .. } => kv_lora_rank + qk_rope_head_dim,
        }
    }

    /// The gated-MLP intermediate of the dense layers, or of the shared expert of a model whose
    /// every layer is MoE (0 without one): the forward pass's live set besides the experts.
    pub fn dense_intermediate(&self) -> u32 {
        let dense = if self.experts.is_some_and(|e| e.moe_layers >= self.layers) { 0 } else { self.intermediate_size };
        dense.max(self.experts.map_or(0, |e| e.shared_intermediate))
    }
}
