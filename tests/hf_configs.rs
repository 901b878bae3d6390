//! Models from Hugging Face config.json files (`formats::hf_config`): every config in
//! `../shared/validation/model-configs/` is read, its parameter count checked against the
//! model's published size, and its weight bytes against vLLM 0.19.0's "Model loading took X GiB"
//! on H100s (llm-d-planner's startup logs). The figures compared against are written here with
//! their sources; no constant of the weight arithmetic was fitted to any of these logs, so every
//! log is held out. Missing keys and unknown architectures are refused naming the key.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::model_arch::{LayerAttention, ModelArch};
use kvlab::formats::hf_config::{read_hf_config, Overrides};
use serde_json::{json, Value};

mod common;

use common::configs_dir;

fn config(dir: &std::path::Path, name: &str) -> Value {
    let path = dir.join(format!("{name}.config.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn arch(dir: &std::path::Path, name: &str, o: Overrides<'_>) -> ModelArch {
    read_hf_config(&config(dir, name), o).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (config file, published total B, published active B, source).
const PUBLISHED: &[(&str, f64, Option<f64>, &str)] = &[
    ("meta-llama__Llama-3.1-8B-Instruct", 8.03, None, "Llama-3.1-8B: 8.03 B, Hugging Face model page (safetensors)"),
    ("meta-llama__Llama-3.1-70B-Instruct", 70.6, None, "Llama-3.1-70B: 70.6 B, Hugging Face model page (safetensors)"),
    (
        "meta-llama__Llama-4-Scout-17B-16E-Instruct",
        109.0,
        Some(17.0),
        "Llama-4-Scout: 109 B total, 17 B active, model card",
    ),
    ("Qwen__Qwen2.5-7B-Instruct", 7.61, None, "Qwen2.5-7B-Instruct: 7.61 B, model card"),
    ("Qwen__Qwen3-14B", 14.8, None, "Qwen3-14B: 14.8 B, model card"),
    ("Qwen__Qwen3-32B", 32.8, None, "Qwen3-32B: 32.8 B, model card"),
    ("Qwen__Qwen3-30B-A3B", 30.5, Some(3.3), "Qwen3-30B-A3B: 30.5 B total, 3.3 B activated, model card"),
    (
        "mistralai__Mixtral-8x7B-Instruct-v0.1",
        46.7,
        Some(12.9),
        "Mixtral-8x7B: 46.7 B total, 12.9 B active, Mistral AI's announcement",
    ),
    ("google__gemma-2-9b-it", 9.24, None, "gemma-2-9b-it: 9.24 B, Hugging Face model page (safetensors)"),
    ("google__gemma-3-4b-it", 4.3, None, "gemma-3-4b-it: 4.3 B with the vision encoder, Hugging Face model page"),
    ("google__gemma-3-27b-it", 27.4, None, "gemma-3-27b-it: 27.4 B with the vision encoder, Hugging Face model page"),
    (
        "openai__gpt-oss-20b",
        20.91,
        Some(3.61),
        "gpt-oss-20b: 20.91 B total, 3.61 B active (embedding excluded), OpenAI's gpt-oss model card, table 1",
    ),
    (
        "openai__gpt-oss-120b",
        116.83,
        Some(5.13),
        "gpt-oss-120b: 116.83 B total, 5.13 B active (embedding excluded), OpenAI's gpt-oss model card, table 1",
    ),
    (
        "deepseek-ai__DeepSeek-V2-Lite",
        15.7,
        Some(2.4),
        "DeepSeek-V2-Lite: 15.7 B total, 2.4 B activated (embedding excluded), model card",
    ),
    (
        "deepseek-ai__DeepSeek-V3",
        671.0,
        Some(37.0),
        "DeepSeek-V3: 671 B main model (the 14 B MTP module aside), 37 B activated (embedding excluded), model card",
    ),
];

#[test]
fn every_config_reads_and_its_parameters_are_within_two_percent_of_the_published_size() {
    let Some(dir) = configs_dir() else { return };
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".config.json").map(str::to_string))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    let mut failures = Vec::new();
    println!(
        "{:<45} {:>9} {:>9} {:>7} {:>8} {:>8} {:>7}",
        "config", "total B", "pub B", "err", "active B", "pub B", "err"
    );
    for name in &files {
        let (_, total_pub, active_pub, source) =
            PUBLISHED.iter().find(|p| p.0 == name).unwrap_or_else(|| panic!("{name}: no published size in the test"));
        let a = arch(&dir, name, Overrides::default());
        let c = a.param_counts();
        let total = c.total() as f64 / 1e9;
        // OpenAI (gpt-oss) and DeepSeek count active parameters without the embedding table.
        let active = if name.starts_with("openai__") || name.starts_with("deepseek-ai__") {
            (c.active() - c.embedding) as f64
        } else {
            c.active() as f64
        } / 1e9;
        let err = (total - total_pub) / total_pub;
        let active_err = active_pub.map(|p| (active - p) / p);
        println!(
            "{name:<45} {total:>9.2} {total_pub:>9.2} {:>+6.2}% {active:>8.2} {:>8} {:>7}",
            err * 100.0,
            active_pub.map_or("-".into(), |p| format!("{p:.2}")),
            active_err.map_or("-".into(), |e| format!("{:+.1}%", e * 100.0))
        );
        if err.abs() > 0.02 {
            failures.push(format!("{name}: {total:.2} B vs {source} ({:+.2}%)", err * 100.0));
        }
        // Published active counts are rounded to one or two digits (3.3, 2.4, 17): ±5%.
        if let Some(e) = active_err.filter(|e| e.abs() > 0.05) {
            failures.push(format!("{name}: {active:.2} B active vs {source} ({:+.1}%)", e * 100.0));
        }
        assert!((a.flops_per_token() - 2.0 * c.active() as f64).abs() < 1.0);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// (log, config file, dtype, quantization, TP, "Model loading took" GiB). Logs: llm-d-incubation/
/// llm-d-planner PR 205 (commit d3121e05), `accuracy/results/v0.19.0/logs/<log>.log`, vLLM 0.19.0
/// on H100 80GB. Where the log's checkpoint has no config here, the stand-in is named.
/// (log, config, dtype, quantization, TP, GiB)
type Loaded = (&'static str, &'static str, Option<&'static str>, Option<&'static str>, u32, f64);

const LOADED: &[Loaded] = &[
    ("meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192", "meta-llama__Llama-3.1-8B-Instruct", None, None, 1, 14.99),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192", "meta-llama__Llama-3.1-8B-Instruct", None, None, 2, 7.51),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192", "meta-llama__Llama-3.1-8B-Instruct", None, None, 4, 3.77),
    (
        "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf16",
        "meta-llama__Llama-3.1-8B-Instruct",
        Some("float16"),
        None,
        1,
        14.99,
    ),
    (
        "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf32",
        "meta-llama__Llama-3.1-8B-Instruct",
        Some("float32"),
        None,
        1,
        29.98,
    ),
    (
        "meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        Some("fp8"),
        1,
        8.49,
    ),
    // RedHatAI's w4a16 checkpoint (GPTQ, 4-bit, groups of 128), run as gptq_marlin in float16.
    (
        "w4a16-redhatai-lla--h100-80gb--tp1pp1dp1--8192-dtf16",
        "meta-llama__Llama-3.1-8B-Instruct",
        Some("float16"),
        Some("gptq_marlin"),
        1,
        5.38,
    ),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192", "Qwen__Qwen2.5-7B-Instruct", None, None, 1, 14.25),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192", "Qwen__Qwen2.5-7B-Instruct", None, None, 2, 7.12),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192", "Qwen__Qwen2.5-7B-Instruct", None, None, 4, 3.55),
    // RedHatAI's FP8-dynamic and w8a8 checkpoints: compressed-tensors with 8-bit weights.
    (
        "fp8dyn-redhatai-qwen2-5---h100-80gb--tp1pp1dp1--8192",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        Some("ct-fp8"),
        1,
        8.14,
    ),
    (
        "w8a8-redhatai-qwen2-5-7b--h100-80gb--tp1pp1dp1--8192",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        Some("ct-int8"),
        1,
        8.14,
    ),
    // Llama-3.3-70B has Llama-3.1-70B's architecture.
    (
        "fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192",
        "meta-llama__Llama-3.1-70B-Instruct",
        None,
        Some("ct-fp8"),
        2,
        33.88,
    ),
    (
        "fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192",
        "meta-llama__Llama-3.1-70B-Instruct",
        None,
        Some("ct-fp8"),
        4,
        16.96,
    ),
    (
        "redhatai-llama-3-3-70b-i--h100-80gb--tp2pp1dp1--8192",
        "meta-llama__Llama-3.1-70B-Instruct",
        None,
        Some("ct-int8"),
        2,
        33.88,
    ),
    ("google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-2-9b-it", None, None, 1, 17.22),
    ("google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-4b-it", None, None, 1, 8.58),
    ("google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-27b-it", None, None, 1, 51.45),
    (
        "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192",
        "meta-llama__Llama-4-Scout-17B-16E-Instruct",
        None,
        None,
        4,
        53.12,
    ),
    (
        "mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192",
        "mistralai__Mixtral-8x7B-Instruct-v0.1",
        None,
        None,
        2,
        43.51,
    ),
    ("openai-gpt-oss-20b--h100-80gb--tp1pp1dp1--8192.FAILED", "openai__gpt-oss-20b", None, None, 1, 13.64),
    ("openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192", "openai__gpt-oss-20b", None, None, 2, 7.01),
    ("qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192", "Qwen__Qwen3-30B-A3B", None, None, 1, 56.88),
    // The log ran DeepSeek-V2-Lite-Chat; the base model's config has the same architecture.
    ("deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192", "deepseek-ai__DeepSeek-V2-Lite", None, None, 1, 29.43),
];

/// A compressed-tensors `quantization_config` with `bits`-wide weights of `kind`.
fn compressed_tensors(bits: u32, kind: &str) -> Value {
    json!({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": bits, "type": kind}}}})
}

const GIB: f64 = (1u64 << 30) as f64;

#[test]
fn weight_bytes_follow_vllms_model_loading_lines() {
    let Some(dir) = configs_dir() else { return };
    let mut failures = Vec::new();
    let mut worst: f64 = 0.0;
    println!("{:<56} {:>3} {:>8} {:>8} {:>7}", "log", "TP", "log GiB", "der GiB", "err");
    for &(log, name, dtype, quant, tp, logged) in LOADED {
        let mut cfg = config(&dir, name);
        let quantization = match quant {
            Some("ct-fp8") => {
                cfg["quantization_config"] = compressed_tensors(8, "float");
                None
            }
            Some("ct-int8") => {
                cfg["quantization_config"] = compressed_tensors(8, "int");
                None
            }
            q => q,
        };
        let a = read_hf_config(&cfg, Overrides { dtype, quantization }).unwrap_or_else(|e| panic!("{log}: {e}"));
        let derived = a.loaded_bytes_per_gpu(tp) / GIB;
        let err = (derived - logged) / logged;
        worst = worst.max(err.abs());
        println!("{log:<56} {tp:>3} {logged:>8.2} {derived:>8.2} {:>+6.1}%", err * 100.0);
        if err.abs() > 0.10 {
            failures.push(format!("{log}: {derived:.2} GiB derived vs {logged} GiB logged ({:+.1}%)", err * 100.0));
        }
    }
    println!("largest error {:.1}%", worst * 100.0);
    // Within 0.7% with the rotary caches every GPU builds (gemma-3's scaled 1M-position one,
    // Scout's 10M positions), except gpt-oss's MXFP4 checkpoint (−6% at TP 1, −8% at TP 2: not
    // explained; its Triton backend pads the expert intermediate to 64 only). docs/MODELS.md.
    assert!(failures.is_empty(), "beyond ±10%:\n{}", failures.join("\n"));
    assert!(worst < 0.10);
}

#[test]
fn kv_layers_follow_the_config() {
    let Some(dir) = configs_dir() else { return };
    // MLA: one latent of kv_lora_rank + qk_rope_head_dim per layer (576 for DeepSeek), not K and V.
    let ds = arch(&dir, "deepseek-ai__DeepSeek-V2-Lite", Overrides::default());
    assert_eq!(ds.kv_bytes_per_token_per_layer(2, 1), 576 * 2);
    assert_eq!(ds.kv_bytes_per_token_per_layer(2, 8), 576 * 2, "the latent is replicated on every rank");
    let llama = arch(&dir, "meta-llama__Llama-3.1-8B-Instruct", Overrides::default());
    assert_eq!(llama.kv_bytes_per_token_per_layer(2, 1), 2 * 8 * 128 * 2);
    assert_eq!(llama.kv_bytes_per_token_per_layer(2, 4), 2 * 2 * 128 * 2);
    let count = |a: &ModelArch, k: LayerAttention| a.layer_attention.iter().filter(|&&x| x == k).count();
    let g2 = arch(&dir, "google__gemma-2-9b-it", Overrides::default());
    assert_eq!(count(&g2, LayerAttention::SlidingWindow(4096)), 21);
    let g3 = arch(&dir, "google__gemma-3-4b-it", Overrides::default());
    assert_eq!((count(&g3, LayerAttention::SlidingWindow(1024)), count(&g3, LayerAttention::Full)), (29, 5));
    let oss = arch(&dir, "openai__gpt-oss-20b", Overrides::default());
    assert_eq!(count(&oss, LayerAttention::SlidingWindow(128)), 12);
    let scout = arch(&dir, "meta-llama__Llama-4-Scout-17B-16E-Instruct", Overrides::default());
    assert_eq!((count(&scout, LayerAttention::Chunked(8192)), count(&scout, LayerAttention::Full)), (36, 12));
    let qwen = arch(&dir, "Qwen__Qwen2.5-7B-Instruct", Overrides::default());
    assert_eq!(count(&qwen, LayerAttention::Full), 28, "use_sliding_window false: full attention");
}

#[test]
fn missing_keys_and_unknown_architectures_are_refused_by_name() {
    let base = json!({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 128256});
    let a = read_hf_config(&base, Overrides::default()).unwrap();
    assert_eq!(a.kv_heads(), 32, "num_key_value_heads defaults to the attention heads");
    let mut no_layers = base.clone();
    no_layers.as_object_mut().unwrap().remove("num_hidden_layers");
    let e = read_hf_config(&no_layers, Overrides::default()).unwrap_err();
    assert_eq!(e.field, "num_hidden_layers");
    assert!(e.message.starts_with("missing; "), "{e}");
    let mut unknown = base.clone();
    unknown["architectures"] = json!(["GPT2LMHeadModel"]);
    let e = read_hf_config(&unknown, Overrides::default()).unwrap_err();
    assert_eq!(e.field, "architectures[0]");
    assert!(
        e.message.contains("\"GPT2LMHeadModel\" is not an architecture kvlab reads; use one of LlamaForCausalLM"),
        "{e}"
    );
    let mut nested = json!({"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {"hidden_size": 2560}});
    let e = read_hf_config(&nested, Overrides::default()).unwrap_err();
    assert_eq!(e.field, "text_config.num_hidden_layers");
    nested["text_config"]["num_hidden_layers"] = json!("many");
    let e = read_hf_config(&nested, Overrides::default()).unwrap_err();
    assert_eq!(e.field, "text_config.num_hidden_layers");
    let e = read_hf_config(&base, Overrides { dtype: Some("int3"), quantization: None }).unwrap_err();
    assert_eq!(e.field, "dtype");
    let e = read_hf_config(&base, Overrides { dtype: None, quantization: Some("bitsandbytes") }).unwrap_err();
    assert_eq!(e.field, "quantization");
    assert!(e.message.contains("use one of fp8"), "{e}");
    let mut fp8 = base.clone();
    fp8["quantization_config"] = json!({"quant_method": "fp8"});
    let e = read_hf_config(&fp8, Overrides { dtype: None, quantization: Some("mxfp4") }).unwrap_err();
    assert!(e.message.contains("does not match the checkpoint's quantization_config.quant_method \"fp8\""), "{e}");
}

/// (log, config, TP, printed available KV GiB, blocks, "GPU KV cache size" tokens, max
/// concurrency at 8,192 tokens), llm-d-planner's vLLM 0.19.0 logs on H100s
/// (`max_num_batched_tokens` 8192, block size 16, bf16 KV).
type Hybrid = (&'static str, &'static str, u32, f64, u64, u64, f64);

const HYBRID: &[Hybrid] = &[
    ("google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-2-9b-it", 1, 54.12, 21110, 168_880, 20.6),
    ("google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-4b-it", 1, 62.51, 204_817, 468_144, 57.05),
    ("google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-27b-it", 1, 19.53, 15997, 36560, 4.46),
    ("openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192", "openai__gpt-oss-20b", 2, 59.32, 323_972, 2_591_776, 316.07),
    (
        "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192",
        "meta-llama__Llama-4-Scout-17B-16E-Instruct",
        4,
        16.75,
        91495,
        365_968,
        44.68,
    ),
    (
        "deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192",
        "deepseek-ai__DeepSeek-V2-Lite",
        1,
        43.61,
        94097,
        1_505_552,
        183.78,
    ),
];

#[test]
fn hybrid_kv_groups_reproduce_vllms_blocks_tokens_and_concurrency() {
    use kvlab::engine::kv_spec::KvLayout;
    let Some(dir) = configs_dir() else { return };
    for &(log, name, tp, gib, blocks, tokens, concurrency) in HYBRID {
        let a = arch(&dir, name, Overrides::default());
        let layout = KvLayout::of(&a.layer_attention);
        let per_layer = a.kv_bytes_per_token_per_layer(2, tp);
        let group = if layout.is_hybrid() { layout.group_size } else { a.layers };
        let bytes_per_block = u64::from(group) * 16 * per_layer;
        let derived = (gib * GIB) as u64 / bytes_per_block;
        // The printed GiB is rounded to ±0.005.
        let slack = (0.005 * GIB) as u64 / bytes_per_block + 1;
        println!("{log}: {} groups of {group}, {derived} blocks vs {blocks}", layout.groups);
        assert!(derived.abs_diff(blocks) <= slack, "{log}: {derived} blocks vs {blocks}");
        assert_eq!(layout.kv_cache_tokens(blocks, 16), tokens, "{log}");
        let c = blocks as f64 / layout.blocks_per_request(8192, 16, 8192) as f64;
        assert!((c - concurrency).abs() < 0.006, "{log}: concurrency {c:.2} vs {concurrency}");
    }
}

/// (log, config, dtype, quantization, TP, available KV GiB logged, KV tokens logged): the same
/// llm-d-planner logs (vLLM 0.19.0, H100 80GB at 79.19 GiB, utilization 0.95 (gpt-oss 0.9), 8,192
/// batched tokens, 1,024 sequences, CUDA graph memory not counted, `max_model_len` 8192).
type Available = (&'static str, &'static str, Option<&'static str>, Option<&'static str>, u32, f64, u64);

const AVAILABLE: &[Available] = &[
    // float32 weights, and so (`--kv-cache-dtype auto`) a float32 cache.
    (
        "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf32",
        "meta-llama__Llama-3.1-8B-Instruct",
        Some("float32"),
        None,
        1,
        42.8,
        175_296,
    ),
    // `--kv-cache-dtype fp8`.
    (
        "meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        None,
        1,
        58.11,
        952_032,
    ),
    (
        "qwen-qwen2---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        None,
        1,
        58.53,
        2_192_000,
    ),
    (
        "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        None,
        1,
        58.11,
        476_016,
    ),
    (
        "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        None,
        2,
        63.76,
        1_044_688,
    ),
    (
        "meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        None,
        4,
        67.44,
        2_209_792,
    ),
    (
        "meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8",
        "meta-llama__Llama-3.1-8B-Instruct",
        None,
        Some("fp8"),
        1,
        64.61,
        529_248,
    ),
    (
        "qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        None,
        1,
        58.53,
        1_096_000,
    ),
    (
        "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        None,
        2,
        63.84,
        2_390_592,
    ),
    (
        "qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192",
        "Qwen__Qwen2.5-7B-Instruct",
        None,
        None,
        4,
        67.34,
        5_043_280,
    ),
    ("google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-2-9b-it", None, None, 1, 54.12, 168_880),
    ("google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-4b-it", None, None, 1, 62.51, 468_144),
    ("google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192", "google__gemma-3-27b-it", None, None, 1, 19.53, 36560),
    (
        "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192",
        "meta-llama__Llama-4-Scout-17B-16E-Instruct",
        None,
        None,
        4,
        16.75,
        365_968,
    ),
    (
        "mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192",
        "mistralai__Mixtral-8x7B-Instruct-v0.1",
        None,
        None,
        2,
        28.44,
        465_936,
    ),
    // This run kept vLLM's default utilization, 0.9 (71.27 GiB requested).
    ("openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192", "openai__gpt-oss-20b", None, None, 2, 59.32, 2_591_776),
    ("qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192", "Qwen__Qwen3-30B-A3B", None, None, 1, 15.41, 168_288),
    (
        "deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192",
        "deepseek-ai__DeepSeek-V2-Lite",
        None,
        None,
        1,
        43.61,
        1_505_552,
    ),
];

#[test]
fn available_kv_from_the_gpu_up_follows_the_logs() {
    use kvlab::engine::memory_budget::{MemoryBudget, MemoryBudgetInput};
    use kvlab::engine::model::{KvDtype, ModelSpec};
    let Some(dir) = configs_dir() else { return };
    let mut failures = Vec::new();
    println!(
        "{:<56} {:>3} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7}",
        "log", "TP", "KV log", "KV der", "err", "tok log", "tok der", "err"
    );
    for &(log, name, dtype, quantization, tp, gib, tokens) in AVAILABLE {
        let a = arch(&dir, name, Overrides { dtype, quantization });
        let model = ModelSpec::from_arch(name, a);
        let b = MemoryBudget::compute(&MemoryBudgetInput {
            shape: kvlab::engine::memory_budget::ActivationShape::of(&model).unwrap(),
            model,
            weight_bytes: 2.0,
            kv_dtype: match (log.ends_with("kvfp8"), dtype) {
                (true, _) => KvDtype::Fp8,
                (false, Some("float32")) => KvDtype::Fp32,
                _ => KvDtype::Fp16,
            },
            gpu_total_bytes: (79.19 * GIB) as u64,
            other_processes_bytes: 0,
            gpu_memory_utilization: if log.starts_with("openai-gpt-oss-20b") { 0.9 } else { 0.95 },
            tensor_parallel_size: tp,
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            max_model_len: 8192,
            block_size: 16,
            cuda_graphs_in_budget: false,
            switched_nvlink: true,
        });
        let kv = b.available_kv_gib();
        let (kv_err, tok_err) = ((kv - gib) / gib, (b.kv_cache_tokens as f64 - tokens as f64) / tokens as f64);
        println!(
            "{log:<56} {tp:>3} {gib:>7.2} {kv:>7.2} {:>+6.1}% {tokens:>9} {:>9} {:>+6.1}%",
            kv_err * 100.0,
            b.kv_cache_tokens,
            tok_err * 100.0
        );
        // Every log counted (tests/llm_d_startup.rs holds all of them to ±3%).
        if kv_err.abs() > 0.10 || tok_err.abs() > 0.10 {
            failures.push(format!("{log}: KV {kv:.2} vs {gib} GiB, tokens {} vs {tokens}", b.kv_cache_tokens));
        }
    }
    assert!(failures.is_empty(), "beyond ±10%:\n{}", failures.join("\n"));
}
