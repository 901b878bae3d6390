//! The rotary embeddings' cos/sin caches vLLM builds at load time, counted in "Model loading
//! took" (`ModelArch::rope_cache_elements`): positions × rotary dim per distinct RoPE setup, as
//! `get_rope` (`vllm/model_executor/layers/rotary_embedding/`) builds them for each scaling
//! type. Architectures vLLM 0.33.0 serves through its Transformers backend (Phi-2, OLMo-2,
//! StarCoder2) keep transformers' own rotary module, which computes cos/sin each step from its
//! inverse frequencies: no cache to count.

use serde_json::Value;

use super::keys::{err, Family, Obj};
use crate::engine::config::ConfigError;
use crate::engine::model_arch::{Attention, DerivedMaxLen};

/// Elements of the caches: positions `max_position_embeddings` for default and `llama3` RoPE,
/// times the factor for `linear` and `dynamic`, `original_max_position_embeddings` × factor for
/// `yarn` (DeepSeek's too), and for LongRoPE (`longrope`, or Phi-3's older `su`) a short cache
/// of `original_max_position_embeddings` and a long one of `max_position_embeddings`
/// (`Phi3LongRoPEScaledRotaryEmbedding.long_short_cos_sin_cache`). The rotary dim is the head
/// dim × `partial_rotary_factor` (Phi-2's 0.4, Phi-4-mini's 0.75). Gemma-3 builds two: its
/// sliding layers' unscaled one and its global layers' scaled one. Command-R's positions are its
/// `model_max_length` where it gives one. Without positions there is none to count.
pub(super) fn read_rope_cache(
    fam: Family,
    top: Obj<'_>,
    text: Obj<'_>,
    attention: &Attention,
    default_positions: Option<u32>,
) -> Result<u64, ConfigError> {
    let head_rotary = u64::from(match *attention {
        Attention::Grouped { head_dim, .. } => head_dim,
        Attention::Latent { qk_rope_head_dim, .. } => qk_rope_head_dim,
    });
    let rotary_dim = match text.get("partial_rotary_factor") {
        None => head_rotary,
        Some(v) => match v.as_f64().filter(|f| *f > 0.0 && *f <= 1.0) {
            Some(f) => (head_rotary as f64 * f) as u64,
            None => {
                return Err(err(
                    text.path("partial_rotary_factor"),
                    format!("{v} is not a fraction of the head dim above 0 and at most 1, e.g. 0.4"),
                ))
            }
        },
    };
    if matches!(fam, Family::Phi | Family::Olmo2 | Family::Starcoder2) {
        return Ok(0);
    }
    if fam == Family::Falcon && text.bool("alibi")?.unwrap_or(false) {
        return Ok(0);
    }
    let positions = match fam {
        Family::Cohere => text.u32("model_max_length")?.or(text.u32("max_position_embeddings")?),
        // transformers' FalconConfig gives 2,048 to a file without the key.
        Family::Falcon => Some(text.u32("max_position_embeddings")?.unwrap_or(2048)),
        _ => text.u32("max_position_embeddings")?.or(default_positions),
    };
    let Some(positions) = positions else { return Ok(0) };
    let positions = u64::from(positions);
    let scaled = match text.object("rope_scaling")? {
        None => positions,
        Some(map) => {
            let r = Obj { map, at: "rope_scaling." };
            let kind = match r.str("rope_type")? {
                Some(k) => k,
                None => r.str("type")?.unwrap_or("default"),
            };
            let factor = r.get("factor").and_then(Value::as_f64).unwrap_or(1.0);
            match kind {
                "linear" | "dynamic" => (positions as f64 * factor) as u64,
                // transformers' Phi3Config reads a `yarn` type as LongRoPE too.
                "longrope" | "su" => longrope_positions(top, text, r, positions)?,
                "yarn" if fam == Family::Phi3 => longrope_positions(top, text, r, positions)?,
                "yarn" | "deepseek_yarn" => {
                    let original = r.u32("original_max_position_embeddings")?.map_or(positions, u64::from);
                    (original as f64 * factor) as u64
                }
                _ => positions,
            }
        }
    };
    let local = if fam == Family::Gemma3 && scaled != positions { positions } else { 0 };
    Ok((scaled + local) * rotary_dim)
}

/// LongRoPE's two caches together: `original_max_position_embeddings` (in `rope_scaling`, or
/// beside it, where the Phi-3 files give it) plus `max_position_embeddings`; both factor lists
/// must be there, as vLLM reads them.
fn longrope_positions(top: Obj<'_>, text: Obj<'_>, r: Obj<'_>, positions: u64) -> Result<u64, ConfigError> {
    for key in ["short_factor", "long_factor"] {
        if r.array(key)?.is_none() {
            return Err(err(
                r.path(key),
                "missing; LongRoPE needs its short_factor and long_factor lists, copy the model's whole config.json",
            ));
        }
    }
    let original = match r.u32("original_max_position_embeddings")? {
        Some(n) => n,
        None => match text.u32("original_max_position_embeddings")?.or(top.u32("original_max_position_embeddings")?) {
            Some(n) => n,
            None => {
                return Err(err(
                    text.path("original_max_position_embeddings"),
                    "missing; LongRoPE scales from it, copy the model's whole config.json",
                ))
            }
        },
    };
    Ok(u64::from(original) + positions)
}

/// vLLM's `derive_max_model_len_and_key` and the RoPE scaling `_get_and_verify_max_len` applies
/// to it: the smallest of the length keys the text config gives (`model_max_length`, Command-R's,
/// winning where given), times the `factor` of a `linear` or `dynamic` RoPE (LongRoPE, `llama3`
/// and the YaRN kinds already give the scaled length; Gemma-3's is scaled too). transformers'
/// configs carry `rope_parameters` whatever the file says, so vLLM multiplies (by 1.0 without a
/// factor) and prints a float, except for Gemma-3. None where the file gives no length.
pub(super) fn derived_max_len(
    fam: Family,
    text: Obj<'_>,
    default_positions: Option<u32>,
) -> Result<Option<DerivedMaxLen>, ConfigError> {
    const KEYS: [&str; 9] = [
        "max_position_embeddings",
        "n_positions",
        "max_seq_len",
        "seq_length",
        "model_max_length",
        "max_target_positions",
        "max_sequence_length",
        "max_seq_length",
        "seq_len",
    ];
    let mut found: Option<(u64, &'static str)> = None;
    for key in KEYS {
        let value = match text.u32(key)? {
            Some(n) => Some(n),
            // The class defaults transformers fills in (FalconConfig's 2,048, Gemma-3's 131,072).
            None if key == "max_position_embeddings" && fam == Family::Falcon => Some(2048),
            None if key == "max_position_embeddings" => default_positions,
            None => None,
        };
        if let Some(n) = value.map(u64::from) {
            if found.is_none_or(|(m, _)| n < m) {
                found = Some((n, key));
            }
        }
    }
    if let Some(n) = text.u32("model_max_length")?.filter(|&n| n > 0) {
        found = Some((u64::from(n), "model_max_length"));
    }
    let Some((tokens, key)) = found else { return Ok(None) };
    if fam == Family::Gemma3 {
        return Ok(Some(DerivedMaxLen { tokens, key, scaled: false }));
    }
    let factor = match text.object("rope_scaling")? {
        None => 1.0,
        Some(map) => {
            let r = Obj { map, at: "rope_scaling." };
            let kind = match r.str("rope_type")? {
                Some(k) => k,
                None => r.str("type")?.unwrap_or("default"),
            };
            match kind {
                "su" | "longrope" | "llama3" | "yarn" | "deepseek_yarn" | "deepseek_llama_scaling" => 1.0,
                _ => r.get("factor").and_then(Value::as_f64).unwrap_or(1.0),
            }
        }
    };
    Ok(Some(DerivedMaxLen { tokens: (tokens as f64 * factor) as u64, key, scaled: true }))
}
