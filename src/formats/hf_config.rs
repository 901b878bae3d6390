//! A Hugging Face `config.json` read as vLLM reads it, into the engine's `ModelArch`
//! (`engine::model_arch`): the decoder's keys (under `text_config` for Gemma-3 and Llama-4), the
//! defaults transformers gives the keys a file leaves out, experts (Mixtral, Qwen-MoE, Llama-4,
//! gpt-oss, DeepSeek), multi-head latent attention, sliding-window and chunked layers, the dtype
//! and `quantization_config`, and vLLM's `--dtype` and `--quantization` overrides. Each family's
//! own modules (Phi-2's plain MLP and biases, Falcon's key names, OLMo-2's q/k norms, …) are in
//! `hf_config/families.rs`, the rotary caches in `hf_config/rope.rs`. A missing or malformed key
//! is refused naming it (`num_hidden_layers: missing; …`); callers put their own path in front
//! (`model.hf_config.`, or the CLI's file).

mod families;
mod keys;
mod rope;

use serde_json::Value;

use crate::engine::config::ConfigError;
use crate::engine::model_arch::{Attention, Experts, LayerAttention, ModelArch, WeightDtype};
use keys::{err, family, Family, Obj};

/// The architectures kvlab reads, by the family whose keys they use.
pub const ARCHITECTURES: &[&str] = &[
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "GraniteForCausalLM",
    "GemmaForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "MixtralForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3MoeForCausalLM",
    "Llama4ForCausalLM",
    "Llama4ForConditionalGeneration",
    "GptOssForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "PhiForCausalLM",
    "Phi3ForCausalLM",
    "CohereForCausalLM",
    "Olmo2ForCausalLM",
    "InternLM2ForCausalLM",
    "Starcoder2ForCausalLM",
    "FalconForCausalLM",
];

/// vLLM's `--dtype` and `--quantization`, when given.
#[derive(Clone, Copy, Debug, Default)]
pub struct Overrides<'a> {
    pub dtype: Option<&'a str>,
    pub quantization: Option<&'a str>,
}

/// Reads `config` into a `ModelArch`. Errors name the key as a path inside the file
/// (`text_config.num_hidden_layers`), or `dtype`/`quantization` for an override.
pub fn read_hf_config(config: &Value, overrides: Overrides<'_>) -> Result<ModelArch, ConfigError> {
    let top = Obj {
        map: config.as_object().ok_or_else(|| err("", "is not a JSON object; give the model's config.json"))?,
        at: "",
    };
    let arch = match top.array("architectures")?.and_then(|a| a.first()) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(err("architectures[0]", format!("{v} is not a string"))),
        None => {
            return Err(err("architectures", "missing; config.json names the model class, e.g. [\"LlamaForCausalLM\"]"))
        }
    };
    let fam = family(&arch).ok_or_else(|| {
        err(
            "architectures[0]",
            format!("\"{arch}\" is not an architecture kvlab reads; use one of {}", ARCHITECTURES.join(", ")),
        )
    })?;
    let text = match top.object("text_config")? {
        Some(map) => Obj { map, at: "text_config." },
        None => top,
    };
    let gemma3 = fam == Family::Gemma3;
    // transformers' Gemma3TextConfig defaults: the released files leave these out.
    let default_of = |key: &str| -> Option<u32> {
        gemma3.then_some(match key {
            "num_attention_heads" => 8,
            "num_key_value_heads" => 4,
            "head_dim" => 256,
            "vocab_size" => 262_208,
            "sliding_window_pattern" => 6,
            "max_position_embeddings" => 131_072,
            _ => return None,
        })
    };
    let key = |k: &str| -> Result<u32, ConfigError> {
        match (families::aliased(text, k, families::alias_of(fam, k))?, default_of(k)) {
            (Some(0), _) => Err(err(text.path(k), "is 0; it must be at least 1")),
            (Some(n), _) | (None, Some(n)) => Ok(n),
            (None, None) => text.positive(k),
        }
    };
    let layers = key("num_hidden_layers")?;
    let hidden = text.positive("hidden_size")?;
    let heads = key("num_attention_heads")?;
    let kv_heads = families::kv_heads(fam, text, heads)?.or(default_of("num_key_value_heads")).unwrap_or(heads);
    let head_dim = match text.u32("head_dim")?.or(default_of("head_dim")) {
        Some(d) => d,
        None => hidden / heads.max(1),
    };
    let intermediate = match (fam, families::intermediate(fam, hidden)) {
        (_, Some(n)) => n,
        (Family::Llama4, None) => text.u32("intermediate_size_mlp")?.unwrap_or(0),
        _ => text.positive("intermediate_size")?,
    };
    let vocab = key("vocab_size")?;
    let shape = families::shape(fam, &arch, text)?;
    let tie = text.bool("tie_word_embeddings")?.or(top.bool("tie_word_embeddings")?).unwrap_or(shape.tied_default);
    let attention = if fam == Family::DeepSeek {
        Attention::Latent {
            heads,
            q_lora_rank: text.u32("q_lora_rank")?,
            kv_lora_rank: text.positive("kv_lora_rank")?,
            qk_nope_head_dim: text.positive("qk_nope_head_dim")?,
            qk_rope_head_dim: text.positive("qk_rope_head_dim")?,
            v_head_dim: text.positive("v_head_dim")?,
        }
    } else {
        Attention::Grouped { heads, kv_heads, head_dim, bias: shape.attention_bias }
    };
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(err(
            text.path("num_key_value_heads"),
            format!("{kv_heads} does not divide num_attention_heads ({heads})"),
        ));
    }
    let experts = read_experts(fam, text, layers)?;
    if fam == Family::Llama4 && experts.is_some_and(|e| e.moe_layers < layers) && intermediate == 0 {
        return Err(err(text.path("intermediate_size_mlp"), "missing; the dense layers between MoE layers need it"));
    }
    Ok(ModelArch {
        architecture: arch,
        layers,
        hidden_size: hidden,
        intermediate_size: intermediate,
        vocab_size: vocab,
        tie_word_embeddings: tie,
        attention,
        experts,
        layer_attention: read_layer_attention(fam, text, layers, default_of("sliding_window_pattern"))?,
        norms_per_layer: shape.norms_per_layer,
        mlp: shape.mlp,
        biases: shape.biases,
        qk_norm: shape.qk_norm,
        vision_params: read_vision(top, hidden)?,
        dtype: read_dtype(top, text, overrides.dtype)?,
        quantization: super::hf_quant::read_quantization(top.map, overrides.quantization)?,
        rope_cache_elements: rope::read_rope_cache(fam, top, text, &attention, default_of("max_position_embeddings"))?,
        derived_max_len: rope::derived_max_len(fam, text, default_of("max_position_embeddings"))?,
    })
}

fn read_experts(fam: Family, text: Obj<'_>, layers: u32) -> Result<Option<Experts>, ConfigError> {
    let every = |step: u32, skip: &dyn Fn(u32) -> bool| {
        (0..layers).filter(|&i| (i + 1) % step.max(1) == 0 && !skip(i)).count() as u32
    };
    let e = match fam {
        Family::Mixtral | Family::GptOss => Experts {
            experts: text.positive("num_local_experts")?,
            experts_per_token: match text.u32("num_experts_per_tok")? {
                Some(n) => n,
                None => text.positive("experts_per_token")?,
            },
            expert_intermediate: text.positive("intermediate_size")?,
            shared_intermediate: 0,
            moe_layers: layers,
            bias: fam == Family::GptOss,
        },
        Family::QwenMoe => {
            let dense: Vec<u32> = match text.array("mlp_only_layers")? {
                Some(a) => a.iter().filter_map(Value::as_u64).map(|n| n as u32).collect(),
                None => Vec::new(),
            };
            Experts {
                experts: text.positive("num_experts")?,
                experts_per_token: text.positive("num_experts_per_tok")?,
                expert_intermediate: text.positive("moe_intermediate_size")?,
                shared_intermediate: text.u32("shared_expert_intermediate_size")?.unwrap_or(0),
                moe_layers: every(text.u32("decoder_sparse_step")?.unwrap_or(1), &|i| dense.contains(&i)),
                bias: false,
            }
        }
        Family::Llama4 => {
            let inter = text.positive("intermediate_size")?;
            Experts {
                experts: text.positive("num_local_experts")?,
                experts_per_token: text.positive("num_experts_per_tok")?,
                expert_intermediate: inter,
                shared_intermediate: inter,
                moe_layers: every(text.u32("interleave_moe_layer_step")?.unwrap_or(1), &|_| false),
                bias: false,
            }
        }
        Family::DeepSeek => {
            let inter = text.positive("moe_intermediate_size")?;
            let first_dense = text.u32("first_k_dense_replace")?.unwrap_or(0);
            let freq = text.u32("moe_layer_freq")?.unwrap_or(1).max(1);
            Experts {
                experts: text.positive("n_routed_experts")?,
                experts_per_token: text.positive("num_experts_per_tok")?,
                expert_intermediate: inter,
                shared_intermediate: text.u32("n_shared_experts")?.unwrap_or(0) * inter,
                moe_layers: (0..layers).filter(|&i| i >= first_dense && i % freq == 0).count() as u32,
                bias: false,
            }
        }
        _ => return Ok(None),
    };
    if e.experts_per_token > e.experts {
        return Err(err(
            text.path("num_experts_per_tok"),
            format!("{} is more than the {} experts", e.experts_per_token, e.experts),
        ));
    }
    Ok(Some(e))
}

/// Which layers attend to everything and which to a window or a chunk.
fn read_layer_attention(
    fam: Family,
    text: Obj<'_>,
    layers: u32,
    pattern_default: Option<u32>,
) -> Result<Vec<LayerAttention>, ConfigError> {
    let window = || text.positive("sliding_window");
    if let Some(types) = text.array("layer_types")? {
        if types.len() != layers as usize {
            return Err(err(
                text.path("layer_types"),
                format!("lists {} layers; num_hidden_layers is {layers}", types.len()),
            ));
        }
        return types
            .iter()
            .enumerate()
            .map(|(i, t)| match t.as_str() {
                Some("full_attention") => Ok(LayerAttention::Full),
                Some("sliding_attention") => Ok(LayerAttention::SlidingWindow(window()?)),
                Some("chunked_attention") => Ok(LayerAttention::Chunked(text.positive("attention_chunk_size")?)),
                _ => Err(err(
                    format!("{}[{i}]", text.path("layer_types")),
                    format!("{t} is not \"full_attention\", \"sliding_attention\" or \"chunked_attention\""),
                )),
            })
            .collect();
    }
    let per_layer = |sliding: &dyn Fn(u32) -> bool, kind: LayerAttention| {
        (0..layers).map(|i| if sliding(i) { kind } else { LayerAttention::Full }).collect::<Vec<_>>()
    };
    Ok(match fam {
        // Gemma-2 alternates local and global layers in code, the first local.
        Family::Gemma2 => per_layer(&|i| i % 2 == 0, LayerAttention::SlidingWindow(window()?)),
        Family::Gemma3 => {
            let pattern = text.u32("sliding_window_pattern")?.or(pattern_default).unwrap_or(6).max(1);
            per_layer(&|i| (i + 1) % pattern != 0, LayerAttention::SlidingWindow(window()?))
        }
        Family::Llama4 => match text.u32("attention_chunk_size")? {
            None => per_layer(&|_| false, LayerAttention::Full),
            Some(chunk) => {
                // `no_rope_layers[i]` is 1 where layer i uses RoPE (and chunked attention); left
                // empty, every fourth layer is a global NoPE layer.
                let flags: Vec<u64> =
                    text.array("no_rope_layers")?.map_or(Vec::new(), |a| a.iter().filter_map(Value::as_u64).collect());
                let rope = |i: u32| flags.get(i as usize).map_or((i + 1) % 4 != 0, |&f| f != 0);
                per_layer(&rope, LayerAttention::Chunked(chunk))
            }
        },
        Family::Qwen | Family::QwenMoe => {
            if text.bool("use_sliding_window")?.unwrap_or(false) && text.get("sliding_window").is_some() {
                let from = text.u32("max_window_layers")?.unwrap_or(0);
                per_layer(&|i| i >= from, LayerAttention::SlidingWindow(window()?))
            } else {
                per_layer(&|_| false, LayerAttention::Full)
            }
        }
        // vLLM gives a model without `layer_types` its `sliding_window` on every layer
        // (`CacheConfig.sliding_window`, `EngineArgs.create_engine_config`): Mistral's, and
        // Phi-3-mini-4k's 2,047, StarCoder2's 4,096, which transformers' classes keep.
        Family::Mistral
        | Family::Mixtral
        | Family::Phi
        | Family::Phi3
        | Family::Cohere
        | Family::Olmo2
        | Family::InternLm2
        | Family::Starcoder2
        | Family::Falcon
            if text.get("sliding_window").is_some() =>
        {
            per_layer(&|_| true, LayerAttention::SlidingWindow(window()?))
        }
        _ => per_layer(&|_| false, LayerAttention::Full),
    })
}

/// The vision encoder and projector of a multimodal checkpoint, estimated from `vision_config`
/// (transformer layers of 4 × hidden² attention and 2 × hidden × intermediate MLP, the patch
/// and position embeddings, and the projector into the text model).
fn read_vision(top: Obj<'_>, text_hidden: u32) -> Result<u64, ConfigError> {
    let Some(map) = top.object("vision_config")? else { return Ok(0) };
    let v = Obj { map, at: "vision_config." };
    let (h, inter, layers) = (
        u64::from(v.positive("hidden_size")?),
        u64::from(v.positive("intermediate_size")?),
        u64::from(v.positive("num_hidden_layers")?),
    );
    let patch = u64::from(v.positive("patch_size")?);
    let image = u64::from(v.positive("image_size")?);
    let encoder = layers * (4 * h * h + 2 * h * inter + 9 * h);
    let embeddings = 3 * patch * patch * h + (image / patch).pow(2) * h;
    let out = u64::from(v.u32("vision_output_dim")?.unwrap_or(h as u32));
    let adapter = match (v.u32("projector_input_dim")?, v.u32("projector_output_dim")?) {
        (Some(i), Some(o)) => u64::from(i) * u64::from(o) + u64::from(o) * u64::from(o),
        _ => 0,
    };
    Ok(encoder + embeddings + adapter + out * u64::from(text_hidden))
}

/// `--dtype` if given (`auto` reads the file), else `torch_dtype` (or `dtype`) of the file or its
/// text config; a file without one (gpt-oss) loads as bfloat16, and a float32 checkpoint under
/// `auto` as bfloat16 too, as vLLM does.
fn read_dtype(top: Obj<'_>, text: Obj<'_>, given: Option<&str>) -> Result<WeightDtype, ConfigError> {
    let parse = |s: &str| match s {
        "bfloat16" | "bf16" | "torch.bfloat16" => Some(WeightDtype::Bf16),
        "float16" | "half" | "fp16" | "torch.float16" => Some(WeightDtype::Fp16),
        "float32" | "float" | "fp32" | "torch.float32" => Some(WeightDtype::Fp32),
        _ => None,
    };
    if let Some(d) = given.filter(|d| *d != "auto") {
        return parse(d)
            .ok_or_else(|| err("dtype", format!("\"{d}\" is not a dtype; use auto, bfloat16, float16 or float32")));
    }
    for o in [top, text] {
        for k in ["torch_dtype", "dtype"] {
            if let Some(s) = o.str(k)? {
                let d =
                    parse(s).ok_or_else(|| err(o.path(k), format!("\"{s}\" is not bfloat16, float16 or float32")))?;
                return Ok(if d == WeightDtype::Fp32 { WeightDtype::Bf16 } else { d });
            }
        }
    }
    Ok(WeightDtype::Bf16)
}
