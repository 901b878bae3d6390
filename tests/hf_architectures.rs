//! Architectures read beyond the files of `../shared/validation/model-configs/`, from whole
//! config.json files kept in `tests/golden/model-configs/` (`SOURCES.md` says where each was
//! copied from): Phi-2 (`PhiForCausalLM`), Phi-3-mini, Phi-3.5-mini and phi-4
//! (`Phi3ForCausalLM`), StarCoder2 3B/7B, Falcon-40B, and Command-R, OLMo-2 and InternLM2 from
//! the keys written here. Parameters by module against the modules transformers and vLLM build,
//! totals against the published sizes, KV bytes per token, the layers' attention as vLLM 0.33.0
//! lays out its KV cache, the rotary caches, vLLM's derived maximum length, and refusals by key.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::model_arch::{LayerAttention, ModelArch, WeightDtype};
use kvlab::formats::hf_config::{read_hf_config, Overrides};
use serde_json::{json, Value};

mod common;

use common::repo_path;

fn config(name: &str) -> Value {
    let path = repo_path(&format!("tests/golden/model-configs/{name}.config.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn arch(name: &str) -> ModelArch {
    read_hf_config(&config(name), Overrides::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (config file, parameters counted, published size in B, source of the published size).
const PUBLISHED: &[(&str, u64, f64, &str)] = &[
    ("microsoft__phi-2", 2_779_683_840, 2.78, "phi-2: 2.78 B, Hugging Face model page (safetensors)"),
    (
        "microsoft__Phi-3-mini-4k-instruct",
        3_821_079_552,
        3.82,
        "Phi-3-mini-4k-instruct: 3,821,079,552, keras-team/keras-hub keras_hub/src/models/phi3/phi3_presets.py",
    ),
    ("microsoft__Phi-3.5-mini-instruct", 3_821_079_552, 3.82, "Phi-3.5-mini-instruct: 3.82 B, Hugging Face model page"),
    ("microsoft__phi-4", 14_659_507_200, 14.7, "phi-4: 14.7 B, Hugging Face model page (safetensors)"),
];

#[test]
fn phi_parameters_match_the_published_sizes() {
    for &(name, counted, published, source) in PUBLISHED {
        let a = arch(name);
        let total = a.param_counts().total();
        println!("{name:<40} {total:>15} ({:.3} B) vs {published} B", total as f64 / 1e9);
        assert_eq!(total, counted, "{name}");
        // Published sizes are rounded to three digits.
        let err = (total as f64 / 1e9 - published) / published;
        assert!(err.abs() < 0.004, "{name}: {:.3} B vs {source}", total as f64 / 1e9);
        assert_eq!(a.param_counts().active(), total, "{name}: a dense model uses every parameter");
    }
    // Phi-3-mini's published count is exact: 32 layers of 4 × 3072² attention and a gated MLP of
    // 3 × 3072 × 8192, untied 32,064-row embeddings and head, 65 RMSNorm vectors.
    assert_eq!(32 * (4 * 3072 * 3072 + 3 * 3072 * 8192) + 2 * 32_064 * 3072 + 65 * 3072, 3_821_079_552u64);
}

/// Phi-2 as transformers' `PhiForCausalLM` builds it (the module print-out in
/// liuutin9/FPGA-Acceleration-of-TinyLLaVA-Inference-via-HLS `phi-2_structure.py`): q/k/v and
/// dense of 2560 × 2560 with bias, fc1 2560 → 10240 and fc2 back with bias, one LayerNorm (weight
/// and bias) per layer and a final one, and an lm_head with bias, untied.
#[test]
fn phi_2_has_biases_a_plain_mlp_and_one_layernorm_per_layer() {
    let a = arch("microsoft__phi-2");
    let c = a.param_counts();
    assert_eq!(c.embedding, 51_200 * 2560);
    assert_eq!(c.lm_head, 51_200 * 2560 + 51_200, "the head's bias");
    assert_eq!(c.attention, 32 * (4 * (2560 * 2560 + 2560)));
    assert_eq!(c.dense_mlp, 32 * (2 * 2560 * 10240 + 10240 + 2560), "fc1 and fc2 with their biases");
    assert_eq!(c.norms, (32 + 1) * 2 * 2560, "input_layernorm per layer and final_layernorm, weight and bias");
    assert_eq!(a.dtype, WeightDtype::Fp16, "torch_dtype float16");
    assert_eq!(a.kv_heads(), 32, "no GQA");
    let mut null_kv = config("microsoft__phi-2");
    null_kv["num_key_value_heads"] = Value::Null;
    let b = read_hf_config(&null_kv, Overrides::default()).unwrap();
    assert_eq!(b.kv_heads(), 32, "a null num_key_value_heads is the attention heads");
}

#[test]
fn kv_bytes_per_token_follow_the_heads() {
    let per_token = |a: &ModelArch, tp: u32| u64::from(a.layers) * a.kv_bytes_per_token_per_layer(2, tp);
    // 32 layers × 32 heads × 80 × K and V × 2 bytes.
    assert_eq!(per_token(&arch("microsoft__phi-2"), 1), 327_680);
    // 32 layers × 32 KV heads × 96 × 2 × 2.
    assert_eq!(per_token(&arch("microsoft__Phi-3-mini-4k-instruct"), 1), 393_216);
    assert_eq!(per_token(&arch("microsoft__Phi-3.5-mini-instruct"), 1), 393_216);
    // 40 layers × 10 KV heads × 128 × 2 × 2; at TP 2 each GPU holds 5 of the 10 heads.
    let phi4 = arch("microsoft__phi-4");
    assert_eq!(per_token(&phi4, 1), 204_800);
    assert_eq!(per_token(&phi4, 2), 102_400);
    assert_eq!(phi4.kv_heads(), 10);
}

/// vLLM 0.33.0 gives a model whose config has no `layer_types` its `sliding_window` on every
/// layer (`EngineArgs.create_engine_config` sets `CacheConfig.sliding_window`, which every
/// `Attention` without a per-layer window takes): Phi3ForCausalLM is vLLM's Llama, and
/// transformers' Phi3Config keeps the key.
#[test]
fn phi_3_layers_take_the_configs_sliding_window_as_vllm_does() {
    let every = |name: &str, kind: LayerAttention| {
        let a = arch(name);
        assert_eq!(a.layer_attention.len(), a.layers as usize, "{name}");
        assert!(a.layer_attention.iter().all(|&l| l == kind), "{name}: {:?}", a.layer_attention[0]);
    };
    every("microsoft__phi-2", LayerAttention::Full);
    every("microsoft__Phi-3-mini-4k-instruct", LayerAttention::SlidingWindow(2047));
    every("microsoft__Phi-3.5-mini-instruct", LayerAttention::SlidingWindow(262_144));
    every("microsoft__phi-4", LayerAttention::SlidingWindow(16_384));
    let mut none = config("microsoft__phi-4");
    none["sliding_window"] = Value::Null;
    let a = read_hf_config(&none, Overrides::default()).unwrap();
    assert!(a.layer_attention.iter().all(|&l| l == LayerAttention::Full), "no window: full attention");
}

#[test]
fn rotary_caches_and_the_derived_maximum_length() {
    // Phi-2 runs on vLLM's Transformers backend, whose rotary module builds no cache.
    let phi2 = arch("microsoft__phi-2");
    assert_eq!(phi2.rope_cache_elements, 0);
    assert_eq!(phi2.weight_bytes(), 2.0 * 2_779_683_840.0);
    assert_eq!(phi2.loaded_bytes_per_gpu(1), phi2.weight_bytes());
    // Default RoPE: max_position_embeddings × head dim.
    assert_eq!(arch("microsoft__Phi-3-mini-4k-instruct").rope_cache_elements, 4096 * 96);
    assert_eq!(arch("microsoft__phi-4").rope_cache_elements, 16_384 * 128);
    // LongRoPE: a short cache of original_max_position_embeddings and a long one of
    // max_position_embeddings (Phi3LongRoPEScaledRotaryEmbedding.long_short_cos_sin_cache).
    let phi35 = arch("microsoft__Phi-3.5-mini-instruct");
    assert_eq!(phi35.rope_cache_elements, (4096 + 131_072) * 96);
    assert_eq!(phi35.loaded_bytes_per_gpu(1), 2.0 * (3_821_079_552.0 + (4096.0 + 131_072.0) * 96.0));
    // vLLM's derived max_model_len: max_position_embeddings, LongRoPE's not scaled again.
    let derived = |name: &str| arch(name).derived_max_len.map(|d| (d.tokens, d.key));
    assert_eq!(derived("microsoft__phi-2"), Some((2048, "max_position_embeddings")));
    assert_eq!(derived("microsoft__Phi-3-mini-4k-instruct"), Some((4096, "max_position_embeddings")));
    assert_eq!(derived("microsoft__Phi-3.5-mini-instruct"), Some((131_072, "max_position_embeddings")));
    assert_eq!(derived("microsoft__phi-4"), Some((16_384, "max_position_embeddings")));
    // A partial rotary factor narrows the cache (Phi-4-mini's 0.75 of 128).
    let mut partial = config("microsoft__phi-4");
    partial["partial_rotary_factor"] = json!(0.75);
    assert_eq!(read_hf_config(&partial, Overrides::default()).unwrap().rope_cache_elements, 16_384 * 96);
}

#[test]
fn malformed_phi_keys_are_refused_by_name() {
    let refused = |cfg: &Value| read_hf_config(cfg, Overrides::default()).unwrap_err();
    let mut no_long = config("microsoft__Phi-3.5-mini-instruct");
    no_long["rope_scaling"].as_object_mut().unwrap().remove("long_factor");
    let e = refused(&no_long);
    assert_eq!(e.field, "rope_scaling.long_factor");
    assert!(e.message.starts_with("missing; LongRoPE needs"), "{e}");
    let mut no_original = config("microsoft__Phi-3.5-mini-instruct");
    no_original.as_object_mut().unwrap().remove("original_max_position_embeddings");
    assert_eq!(refused(&no_original).field, "original_max_position_embeddings");
    let mut wide = config("microsoft__phi-2");
    wide["partial_rotary_factor"] = json!(1.5);
    let e = refused(&wide);
    assert_eq!(e.field, "partial_rotary_factor");
    assert!(e.message.contains("e.g. 0.4"), "{e}");
    let mut window = config("microsoft__Phi-3-mini-4k-instruct");
    window["sliding_window"] = json!("wide");
    assert_eq!(refused(&window).field, "sliding_window");
}

/// StarCoder2 on vLLM 0.33.0's Transformers backend: `use_bias` on q/k/v/o and the plain GELU MLP
/// (`c_fc`, `c_proj`), LayerNorms with bias, embeddings tied (Starcoder2Config's default), no
/// rotary cache, and its `sliding_window` of 4,096 on every layer (no `layer_types`).
#[test]
fn starcoder2_has_biases_a_plain_mlp_and_its_window_on_every_layer() {
    // (file, parameters, published B, source)
    let cases = [
        ("bigcode__starcoder2-3b", 3_030_371_328u64, 3.03, "starcoder2-3b: 3.03 B, Hugging Face model page"),
        ("bigcode__starcoder2-7b", 7_173_923_840, 7.17, "starcoder2-7b: 7.17 B, Hugging Face model page"),
    ];
    for (name, counted, published, source) in cases {
        let a = arch(name);
        let c = a.param_counts();
        assert_eq!(c.total(), counted, "{name}");
        assert!((c.total() as f64 / 1e9 - published).abs() < 0.006, "{name} vs {source}");
        assert_eq!(c.lm_head, 0, "{name}: tied");
        assert!(a.layer_attention.iter().all(|&l| l == LayerAttention::SlidingWindow(4096)), "{name}");
        assert_eq!(a.rope_cache_elements, 0, "{name}");
    }
    let a = arch("bigcode__starcoder2-3b");
    let c = a.param_counts();
    // q 3072, k and v 2 × 128 each, o back to 3072, all with bias.
    assert_eq!(c.attention, 30 * (3072 * (3072 + 512) + 3072 * 3072 + 3072 + 512 + 3072));
    assert_eq!(c.dense_mlp, 30 * (2 * 3072 * 12288 + 12288 + 3072));
    assert_eq!(c.norms, (30 * 2 + 1) * 2 * 3072);
    // 30 layers × 2 KV heads × 128 × 2 × 2 bytes.
    assert_eq!(u64::from(a.layers) * a.kv_bytes_per_token_per_layer(2, 1), 30 * 2 * 128 * 2 * 2);
    let mut no_bias = config("bigcode__starcoder2-3b");
    no_bias["use_bias"] = json!(false);
    let b = read_hf_config(&no_bias, Overrides::default()).unwrap();
    assert_eq!(c.total() - b.param_counts().total(), 30 * (3072 + 512 + 3072 + 12288 + 3072));
}

/// Falcon-40B as vLLM's `falcon.py` builds it: `new_decoder_architecture` reads `num_kv_heads`
/// (8) whatever `multi_query` says (`FalconModelArchConfigConvertor`), `ln_attn` and `ln_mlp`
/// LayerNorms with bias, `query_key_value` and `dense`, a 4 × hidden MLP without bias
/// (`bias` false), embeddings tied, RoPE over 2,048 positions (FalconConfig's default).
#[test]
fn falcon_40b_reads_its_kv_heads_and_two_layernorms() {
    let a = arch("tiiuae__falcon-40b-instruct");
    let c = a.param_counts();
    assert_eq!(a.kv_heads(), 8);
    assert_eq!(a.intermediate_size, 4 * 8192);
    assert_eq!(c.attention, 60 * (8192 * (8192 + 2 * 8 * 64) + 8192 * 8192));
    assert_eq!(c.dense_mlp, 60 * 2 * 8192 * 32768);
    assert_eq!(c.norms, (60 * 2 + 1) * 2 * 8192);
    assert_eq!(c.lm_head, 0);
    // Named for 40 B on its model card; 41.30 B as vLLM builds it.
    assert_eq!(c.total(), 41_303_293_952);
    assert!((c.total() as f64 / 40e9 - 1.0).abs() < 0.04);
    // 60 layers × 8 KV heads × 64 × 2 × 2 bytes.
    assert_eq!(u64::from(a.layers) * a.kv_bytes_per_token_per_layer(2, 1), 122_880);
    assert_eq!(a.rope_cache_elements, 2048 * 64);
    assert_eq!(a.derived_max_len.map(|d| d.tokens), Some(2048));
    // The older layout: multi-query (one KV head), one LayerNorm, the old key names.
    let old = json!({"architectures": ["FalconForCausalLM"], "hidden_size": 4544, "n_head": 71, "n_layer": 32,
        "multi_query": true, "parallel_attn": true, "vocab_size": 65024, "alibi": false});
    let o = read_hf_config(&old, Overrides::default()).unwrap();
    assert_eq!((o.kv_heads(), o.layers, o.norms_per_layer), (1, 32, 1));
    let e = read_hf_config(&json!({"architectures": ["FalconForCausalLM"], "hidden_size": 4544}), Overrides::default())
        .unwrap_err();
    assert_eq!(e.field, "num_hidden_layers");
}

/// Command-R at the defaults of transformers 5.20.2's `CohereConfig` (the version vLLM 0.33.0
/// requires; its docstring is made for the checkpoint CohereForAI/c4ai-command-r-v01), with a
/// `model_max_length` of 131,072 (the 128k context of Command-R's model card): vLLM's `commandr.py` builds one
/// LayerNorm without bias before the parallel attention and MLP, no biases, tied embeddings, and
/// RoPE over `model_max_length`, which is also its derived maximum length.
#[test]
fn command_r_has_one_layernorm_tied_embeddings_and_its_model_max_length() {
    let cfg = json!({"architectures": ["CohereForCausalLM"], "hidden_size": 8192, "intermediate_size": 22528,
        "num_hidden_layers": 40, "num_attention_heads": 64, "vocab_size": 256000, "max_position_embeddings": 8192,
        "model_max_length": 131072, "logit_scale": 0.0625, "use_qk_norm": false, "torch_dtype": "float16"});
    let a = read_hf_config(&cfg, Overrides::default()).unwrap();
    let c = a.param_counts();
    assert_eq!(c.lm_head, 0);
    assert_eq!(c.norms, 41 * 8192, "one LayerNorm weight per layer and the final one");
    assert_eq!(c.total(), 34_980_831_232);
    // c4ai-command-r-v01's model card: 35 billion parameters.
    assert!((c.total() as f64 / 35e9 - 1.0).abs() < 0.001);
    assert_eq!(a.kv_heads(), 64, "num_key_value_heads left out: every head");
    assert_eq!(a.rope_cache_elements, 131_072 * 128);
    assert_eq!(a.derived_max_len.map(|d| (d.tokens, d.key)), Some((131_072, "model_max_length")));
    // Command R+ norms q and k per head: heads × head dim and KV heads × head dim per layer.
    let mut plus = cfg.clone();
    plus["use_qk_norm"] = json!(true);
    plus["num_key_value_heads"] = json!(8);
    let p = read_hf_config(&plus, Overrides::default()).unwrap();
    assert_eq!(p.param_counts().norms, 41 * 8192 + 40 * (64 + 8) * 128);
}

/// OLMo-2 (vLLM's Transformers backend, transformers' Olmo2 modules): no input norm, RMSNorms
/// after attention and after the MLP, and q/k norms over all heads; no rotary cache. The keys
/// are transformers 5.20.2's `Olmo2Config` defaults, with 8 KV heads for a k_norm narrower than
/// the q_norm.
#[test]
fn olmo_2_counts_its_post_norms_and_qk_norms() {
    let cfg = json!({"architectures": ["Olmo2ForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 50304,
        "max_position_embeddings": 2048});
    let a = read_hf_config(&cfg, Overrides::default()).unwrap();
    let c = a.param_counts();
    assert_eq!(c.norms, (32 * 2 + 1) * 4096 + 32 * (4096 + 8 * 128), "post norms, final norm, q_norm and k_norm");
    assert_eq!(c.lm_head, 50304 * 4096, "untied");
    assert_eq!(a.rope_cache_elements, 0);
    assert_eq!(u64::from(a.layers) * a.kv_bytes_per_token_per_layer(2, 1), 32 * 8 * 128 * 2 * 2);
}

/// InternLM2 (vLLM's `internlm2.py`): Llama's shape under its own module names (fused `wqkv`,
/// `wo`, `w1`/`w3`/`w2`), without biases whatever `bias` says, a dynamic RoPE cache of
/// positions × factor.
#[test]
fn internlm2_reads_as_llama_without_biases() {
    let cfg = json!({"architectures": ["InternLM2ForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 92544,
        "max_position_embeddings": 32768, "bias": true, "rope_scaling": {"type": "dynamic", "factor": 2.0}});
    let a = read_hf_config(&cfg, Overrides::default()).unwrap();
    let c = a.param_counts();
    assert_eq!(c.attention, 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096), "no biases");
    assert_eq!(c.dense_mlp, 32 * 3 * 4096 * 14336);
    assert_eq!(c.norms, (32 * 2 + 1) * 4096);
    assert_eq!(a.rope_cache_elements, 65_536 * 128);
    assert_eq!(a.derived_max_len.map(|d| d.tokens), Some(65_536), "dynamic RoPE scales the derived length");
}
