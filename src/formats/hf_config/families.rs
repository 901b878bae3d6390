//! What each architecture family builds besides the shared keys, as vLLM 0.33.0 builds it
//! (its model files, or for the models it serves through its Transformers backend, the
//! transformers modules): the key names a family spells its own way (Falcon's `n_layer`,
//! `n_head`, `n_head_kv`), its KV heads (Falcon's `multi_query`), its MLP (gated or plain, with
//! biases), its norms (how many per layer, LayerNorm's bias, q/k norms), the attention biases'
//! key and the default of `tie_word_embeddings`.

use super::keys::{err, Family, Obj};
use crate::engine::config::ConfigError;
use crate::engine::model_arch::{Biases, Mlp};

/// A family's modules beyond the attention and MLP sizes.
pub(super) struct Shape {
    pub norms_per_layer: u32,
    pub mlp: Mlp,
    pub biases: Biases,
    pub qk_norm: bool,
    /// Biases on q, k, v and the output projection.
    pub attention_bias: bool,
    pub tied_default: bool,
}

/// `key`, or transformers' other name for it (`attribute_map`).
pub(super) fn aliased(text: Obj<'_>, key: &str, alias: Option<&str>) -> Result<Option<u32>, ConfigError> {
    match (text.u32(key)?, alias) {
        (Some(n), _) => Ok(Some(n)),
        (None, Some(a)) => text.u32(a),
        (None, None) => Ok(None),
    }
}

/// transformers' `attribute_map` names of the shared keys, per family.
pub(super) fn alias_of(fam: Family, key: &str) -> Option<&'static str> {
    match (fam, key) {
        (Family::Falcon, "num_hidden_layers") => Some("n_layer"),
        (Family::Falcon, "num_attention_heads") => Some("n_head"),
        _ => None,
    }
}

/// KV heads where a family does not read `num_key_value_heads`: Falcon's `multi_query` (one KV
/// head unless `new_decoder_architecture`, which reads `num_kv_heads`, or `n_head_kv`), as
/// vLLM's `FalconModelArchConfigConvertor` does.
pub(super) fn kv_heads(fam: Family, text: Obj<'_>, heads: u32) -> Result<Option<u32>, ConfigError> {
    if fam != Family::Falcon {
        return text.u32("num_key_value_heads");
    }
    let new_arch = text.bool("new_decoder_architecture")?.unwrap_or(false);
    if !new_arch && text.bool("multi_query")?.unwrap_or(true) {
        return Ok(Some(1));
    }
    Ok(Some(aliased(text, "num_kv_heads", Some("n_head_kv"))?.unwrap_or(heads)))
}

/// The dense MLP's intermediate: Falcon's is 4 × hidden in vLLM's `FalconMLP` (its
/// `ffn_hidden_size` is not read), the others give `intermediate_size`.
pub(super) fn intermediate(fam: Family, hidden: u32) -> Option<u32> {
    (fam == Family::Falcon).then_some(4 * hidden)
}

pub(super) fn shape(fam: Family, arch: &str, text: Obj<'_>) -> Result<Shape, ConfigError> {
    let attention_bias =
        |default: bool| -> Result<bool, ConfigError> { Ok(text.bool("attention_bias")?.unwrap_or(default)) };
    let gated = |norms_per_layer: u32, tied_default: bool| Shape {
        norms_per_layer,
        mlp: Mlp::Gated,
        biases: Biases::default(),
        qk_norm: false,
        attention_bias: false,
        tied_default,
    };
    Ok(match fam {
        // Phi-2: one LayerNorm (with bias) before the parallel attention and MLP, biases on
        // q/k/v/dense, fc1/fc2 and the head.
        Family::Phi => Shape {
            norms_per_layer: 1,
            mlp: Mlp::Plain,
            biases: Biases { mlp: true, norms: true, lm_head: true },
            qk_norm: false,
            attention_bias: true,
            tied_default: false,
        },
        // Command-R: one LayerNorm without bias before the parallel attention and MLP, tied
        // embeddings; Command R+ norms q and k per head (`use_qk_norm`).
        Family::Cohere => Shape {
            qk_norm: text.bool("use_qk_norm")?.unwrap_or(false),
            attention_bias: attention_bias(false)?,
            ..gated(1, true)
        },
        // OLMo-2: norms after attention and after the MLP, and q/k norms over all heads.
        Family::Olmo2 => Shape { qk_norm: true, attention_bias: attention_bias(false)?, ..gated(2, false) },
        // InternLM2: vLLM's InternLM2 builds wqkv and wo without bias whatever `bias` says.
        Family::InternLm2 => gated(2, false),
        // StarCoder2: `use_bias` on every projection and LayerNorm, a plain GELU MLP.
        Family::Starcoder2 => {
            let bias = text.bool("use_bias")?.unwrap_or(true);
            Shape {
                norms_per_layer: 2,
                mlp: Mlp::Plain,
                biases: Biases { mlp: bias, norms: true, lm_head: false },
                qk_norm: false,
                attention_bias: bias,
                tied_default: true,
            }
        }
        // Falcon: LayerNorms with bias, one before the parallel attention and MLP (two with
        // `new_decoder_architecture`'s ln_attn and ln_mlp, or without `parallel_attn`), `bias`
        // on query_key_value, dense and the MLP.
        Family::Falcon => {
            let bias = text.bool("bias")?.unwrap_or(false);
            let new_arch = text.bool("new_decoder_architecture")?.unwrap_or(false);
            let norms = if !text.bool("parallel_attn")?.unwrap_or(true) {
                2
            } else {
                match text.u32("num_ln_in_parallel_attn")? {
                    Some(n @ (1 | 2)) => n,
                    Some(n) => {
                        return Err(err(text.path("num_ln_in_parallel_attn"), format!("{n} is not 1 or 2")));
                    }
                    None if new_arch => 2,
                    None => 1,
                }
            };
            Shape {
                norms_per_layer: norms,
                mlp: Mlp::Plain,
                biases: Biases { mlp: bias, norms: true, lm_head: false },
                qk_norm: false,
                attention_bias: bias,
                tied_default: true,
            }
        }
        Family::Gemma | Family::Gemma2 | Family::Gemma3 => {
            Shape { attention_bias: attention_bias(false)?, ..gated(if fam == Family::Gemma { 2 } else { 4 }, true) }
        }
        _ => Shape {
            attention_bias: attention_bias(fam == Family::Qwen && arch.starts_with("Qwen2"))?,
            ..gated(2, false)
        },
    })
}
