//! `kvlab plan --model-config config.json` and `"model": {"hf_config": …}` in a preset: every
//! config of `../shared/validation/model-configs/` plans on H100s at 0.95 (at the smallest
//! tensor-parallel size that holds it, the others refused naming it), vLLM's hybrid KV groups
//! in the JSON, and errors that name the key.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;
use std::process::{Command, Output};

use kvlab::formats::preset::parse_preset;

mod common;

use common::configs_dir;

fn plan(config: &std::path::Path, gpu: &str, tp: u32, extra: &[&str]) -> Output {
    let tp = tp.to_string();
    let mut args = vec![
        "plan",
        "--model-config",
        config.to_str().unwrap(),
        "--gpu",
        gpu,
        "--gpu-memory-utilization",
        "0.95",
        "--max-model-len",
        "8192",
        "--tensor-parallel-size",
        &tp,
        "--json",
    ];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_kvlab")).args(&args).output().expect("kvlab runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_config_plans_on_h100s_at_the_smallest_tensor_parallel_size_that_holds_it() {
    let Some(dir) = configs_dir() else { return };
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".config.json"))
        .collect();
    names.sort();
    assert!(names.len() >= 15);
    for path in &names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // H100s for all but DeepSeek-V3, whose 627 GiB need H200s.
        let gpu = if name.contains("DeepSeek-V3") { "h200" } else { "h100-sxm" };
        let mut planned = None;
        for tp in [1, 2, 4, 8] {
            let o = plan(path, gpu, tp, &[]);
            if o.status.success() {
                planned = Some((tp, o));
                break;
            }
            let e = text(&o.stderr);
            assert!(e.contains("GiB of weights on") && e.contains("use tensor_parallel_size "), "{name} TP {tp}: {e}");
        }
        let (tp, o) = planned.unwrap_or_else(|| panic!("{name}: no tensor-parallel size plans"));
        let doc: serde_json::Value = serde_json::from_str(&text(&o.stdout)).expect("JSON");
        let b = &doc["budget"];
        for key in ["available_kv_bytes", "num_gpu_blocks", "kv_cache_tokens", "kv_heads_per_gpu", "kv_cache_groups"] {
            assert!(!b[key].is_null(), "{name}: budget.{key} missing");
        }
        assert!(b["num_gpu_blocks"].as_u64().unwrap() > 0, "{name}");
        assert!(doc["model"]["architecture"].as_str().is_some(), "{name}");
        println!(
            "{name:<55} TP {tp}: weights {:.2} GiB/GPU, KV {:.2} GiB, {} tokens, {} groups",
            b["weights_bytes"].as_f64().unwrap() / (1u64 << 30) as f64,
            b["available_kv_bytes"].as_f64().unwrap() / (1u64 << 30) as f64,
            b["kv_cache_tokens"],
            b["kv_cache_groups"]
        );
    }
}

#[test]
fn refusals_name_a_size_that_fits_or_a_larger_gpu() {
    let Some(dir) = configs_dir() else { return };
    let llama70 = dir.join("meta-llama__Llama-3.1-70B-Instruct.config.json");
    let e = text(&plan(&llama70, "h100-sxm", 1, &[]).stderr);
    assert!(e.contains("meta-llama/Llama-3.1-70B-Instruct needs 131.4 GiB of weights on one h100-sxm"), "{e}");
    assert!(e.ends_with("use tensor_parallel_size 2 or more\n"), "{e}");
    let v3 = dir.join("deepseek-ai__DeepSeek-V3.config.json");
    let e = text(&plan(&v3, "h100-sxm", 1, &[]).stderr);
    assert!(
        e.contains("no tensor_parallel_size up to 8 leaves room for the KV cache on h100-sxms; use a larger GPU"),
        "{e}"
    );
    // A fp8 checkpoint's MLA latent: 61 layers × 576 × 2 bytes, the same on every GPU.
    let o = plan(&v3, "h200", 8, &[]);
    let doc: serde_json::Value = serde_json::from_str(&text(&o.stdout)).expect("JSON");
    assert_eq!(doc["budget"]["kv_bytes_per_token_per_gpu"], 61 * 576 * 2);
    assert_eq!(doc["model"]["quantization"], "fp8");
}

#[test]
fn hybrid_models_report_vllms_groups_and_overrides_change_the_weights() {
    let Some(dir) = configs_dir() else { return };
    let g3 = dir.join("google__gemma-3-4b-it.config.json");
    let doc: serde_json::Value = serde_json::from_str(&text(&plan(&g3, "h100-sxm", 1, &[]).stdout)).unwrap();
    assert_eq!(doc["budget"]["kv_cache_groups"], 7);
    assert_eq!(doc["budget"]["layers_per_kv_group"], 5);
    let blocks = doc["budget"]["num_gpu_blocks"].as_u64().unwrap();
    assert_eq!(doc["budget"]["kv_cache_tokens"].as_u64().unwrap(), blocks / 7 * 16);
    let llama = dir.join("meta-llama__Llama-3.1-8B-Instruct.config.json");
    let weights = |extra: &[&str]| {
        let o = plan(&llama, "h100-sxm", 1, extra);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let doc: serde_json::Value = serde_json::from_str(&text(&o.stdout)).unwrap();
        doc["budget"]["weights_bytes"].as_f64().unwrap() / (1u64 << 30) as f64
    };
    // vLLM 0.19's "Model loading took" on an H100 (llm-d-planner's logs): 14.99, 8.49 and 29.98
    // GiB, the weights and the 131,072-position rotary cache.
    assert!((weights(&[]) - 14.99).abs() < 0.01);
    assert!((weights(&["--quantization", "fp8"]) - 8.49).abs() < 0.01);
    assert!((weights(&["--dtype", "float32"]) - 29.98).abs() < 0.01);
    let e = text(&plan(&llama, "h100-sxm", 1, &["--quantization", "int3"]).stderr);
    assert!(e.contains("--quantization: \"int3\" is not a method kvlab prices"), "{e}");
}

#[test]
fn a_config_with_a_missing_key_is_refused_naming_it() {
    let dir = std::env::temp_dir().join(format!("kvlab-model-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.config.json");
    std::fs::write(&path, r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}"#).unwrap();
    let e = text(&plan(&path, "h100-sxm", 1, &[]).stderr);
    assert!(e.contains("broken.config.json: num_hidden_layers: missing; "), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

fn preset(model: &str, rest: &str) -> String {
    format!(
        r#"{{"schema": "kvlab/preset@1", "duration_s": 10, "model": {model}, "allocator": {{"kind": "paged"}}{rest}}}"#
    )
}

#[test]
fn a_preset_reads_its_model_from_hf_config() {
    let Some(dir) = configs_dir() else { return };
    let cfg = std::fs::read_to_string(dir.join("Qwen__Qwen2.5-7B-Instruct.config.json")).unwrap();
    let model = format!(r#"{{"hf_config": {cfg}, "name": "qwen2.5-7b"}}"#);
    let c = parse_preset(&preset(&model, r#", "gpu": "h100-sxm", "gpu_memory_utilization": 0.9"#)).expect("plans");
    assert_eq!(c.model.id, "qwen2.5-7b");
    // 28 layers × 4 KV heads × 128 × 2 (K, V) × 2 bytes.
    assert_eq!(c.kv_bytes_per_token(), 28 * 4 * 128 * 2 * 2);
    let b = c.memory_budget().expect("derived from the GPU");
    assert!((b.weights_bytes as f64 / (1u64 << 30) as f64 - 14.19).abs() < 0.01);
    let fp8 = format!(r#"{{"hf_config": {cfg}, "quantization": "fp8"}}"#);
    let c8 = parse_preset(&preset(&fp8, r#", "gpu": "h100-sxm", "gpu_memory_utilization": 0.9"#)).unwrap();
    assert!(c8.kv_memory_gib > c.kv_memory_gib + 5.0, "{} vs {}", c8.kv_memory_gib, c.kv_memory_gib);
    let e = parse_preset(&preset(r#"{"hf_config": {"architectures": ["LlamaForCausalLM"]}}"#, "")).unwrap_err();
    assert_eq!(e.field, "model.hf_config.num_hidden_layers");
    let e = parse_preset(&preset(&format!(r#"{{"hf_config": {cfg}, "dtype": "int3"}}"#), "")).unwrap_err();
    assert_eq!(e.field, "model.dtype");
    let e = parse_preset(&preset(&format!(r#"{{"hf_config": {cfg}, "dtpye": "float16"}}"#), "")).unwrap_err();
    assert_eq!(e.field, "model.dtpye");
    // The id and the four-number object keep working.
    parse_preset(&preset(r#""llama-3-8b""#, "")).unwrap();
    parse_preset(&preset(r#"{"layers": 32, "kv_heads": 8, "head_dim": 128, "params_b": 8}"#, "")).unwrap();
}

#[test]
fn run_and_sweep_take_a_model_config() {
    let Some(dir) = configs_dir() else { return };
    let preset = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/presets/paged-default.json");
    let qwen = dir.join("Qwen__Qwen3-14B.config.json");
    let kvlab = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().unwrap();
    let (p, q) = (preset.to_str().unwrap(), qwen.to_str().unwrap());
    let o = kvlab(&["run", p, "--model-config", q, "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 40 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes.
    assert_eq!(report["kv_bytes_per_token"], 40 * 8 * 128 * 2 * 2, "{report}");
    let o = kvlab(&["sweep", p, "--model-config", q, "--knob", "kv_memory_gib", "--values", "5,10"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let llama70 = dir.join("meta-llama__Llama-3.1-70B-Instruct.config.json");
    let e = text(&kvlab(&["run", p, "--model-config", llama70.to_str().unwrap()]).stderr);
    assert!(e.contains("meta-llama/Llama-3.1-70B-Instruct needs 131.4 GiB of weights on one h100-sxm"), "{e}");
}

/// vLLM's `_check_enough_kv_cache_memory` on a hybrid model sums every layer's most: Gemma-3's
/// 52 sliding layers need their 1,024-token window (plus a batch of prefill) however long the
/// request, its 10 global layers the whole length.
#[test]
fn a_hybrid_models_max_length_check_counts_every_layer() {
    let Some(dir) = configs_dir() else { return };
    let g27 = dir.join("google__gemma-3-27b-it.config.json");
    let at = |len: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_kvlab"))
            .args(["plan", "--model-config", g27.to_str().unwrap(), "--gpu", "h100-sxm"])
            .args(["--gpu-memory-utilization", "0.8", "--max-model-len", len])
            .output()
            .unwrap();
        (o.status.success(), text(&o.stderr))
    };
    let (ok, e) = at("131072");
    assert!(!ok);
    // 10 × 8,192 + 52 × 577 pages of 128 KiB.
    assert!(e.contains("max seq len (131072), (13.66 GiB KV cache is needed"), "{e}");
    assert!(e.contains("(kvlab: --tensor-parallel-size 2 leaves "), "{e}");
    let estimate: String = e
        .split("estimated maximum model length is ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    assert!(at(&estimate).0, "the estimate vLLM suggests starts");
    let over = (estimate.parse::<u32>().unwrap() + 16).to_string();
    assert!(!at(&over).0, "a block more does not");
}

/// A mixture of experts streams, each step, the shared weights and the experts its tokens route
/// to: one decode token of Qwen3-30B-A3B (8 of 128 experts) reads a fraction of its 57 GiB, a
/// large batch nearly all of them; a dense model's step reads all its weights whatever the batch.
#[test]
fn a_mixture_of_experts_streams_the_experts_its_tokens_route_to() {
    use kvlab::engine::clock::StepWork;
    let Some(dir) = configs_dir() else { return };
    let step = |name: &str, tokens: u64| {
        let cfg = std::fs::read_to_string(dir.join(name)).unwrap();
        let c = parse_preset(&preset(&format!(r#"{{"hf_config": {cfg}}}"#), r#", "gpu": "h200", "kv_memory_gib": 20"#))
            .unwrap();
        c.clock().step_us(&StepWork { decode_tokens: tokens, ..StepWork::default() })
    };
    let moe = "Qwen__Qwen3-30B-A3B.config.json";
    let (one, many) = (step(moe, 1), step(moe, 256));
    assert!(one * 4 < many, "one token reads far fewer experts: {one} vs {many} µs");
    let dense = "Qwen__Qwen3-32B.config.json";
    let (d1, d2) = (step(dense, 1), step(dense, 2));
    assert_eq!(d1, d2, "a dense model reads every weight each step");
}

/// An FP8 checkpoint's products run on the GPU's FP8 tensor cores: a long prefill, bound by
/// compute, takes about half as long as in BF16 on an H100 (1,979 against 989 dense TFLOPs), and
/// the same on an A100, which has none.
#[test]
fn fp8_weights_compute_at_the_gpus_fp8_rate() {
    use kvlab::engine::clock::StepWork;
    let Some(dir) = configs_dir() else { return };
    let cfg = std::fs::read_to_string(dir.join("meta-llama__Llama-3.1-8B-Instruct.config.json")).unwrap();
    let prefill = |quant: &str, gpu: &str| {
        let c = parse_preset(&preset(
            &format!(r#"{{"hf_config": {cfg}{quant}}}"#),
            &format!(r#", "gpu": "{gpu}", "kv_memory_gib": 10"#),
        ))
        .unwrap();
        c.clock().step_us(&StepWork { prefill_tokens: 8192, ..StepWork::default() }) as f64
    };
    let (bf16, fp8) = (prefill("", "h100-sxm"), prefill(r#", "quantization": "fp8""#, "h100-sxm"));
    assert!((0.45..0.6).contains(&(fp8 / bf16)), "{fp8} vs {bf16} µs");
    let (a_bf16, a_fp8) = (prefill("", "a100-80gb"), prefill(r#", "quantization": "fp8""#, "a100-80gb"));
    assert!((a_fp8 / a_bf16 - 1.0).abs() < 0.02, "{a_fp8} vs {a_bf16} µs");
}

/// The Phi configs of `tests/golden/model-configs/` plan on an H100 at 0.9 and 4,096 tokens as
/// vLLM would start them: Phi-2, whose config gives 2,048 positions, is refused in vLLM's words
/// (`_get_and_verify_max_len`) and plans at 2,048; every window covers its layers' KV as one
/// group, the tokens are the blocks' slots, and the KV memory is what the GPU's share leaves
/// beside the weights.
#[test]
fn phi_configs_plan_on_an_h100_at_4096_tokens() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/model-configs");
    let at = |name: &str, len: &str| {
        let path = golden.join(format!("{name}.config.json"));
        let o = Command::new(env!("CARGO_BIN_EXE_kvlab"))
            .args(["plan", "--model-config", path.to_str().unwrap(), "--gpu", "h100-sxm"])
            .args(["--gpu-memory-utilization", "0.9", "--max-model-len", len, "--json"])
            .output()
            .unwrap();
        (o.status.success(), text(&o.stdout), text(&o.stderr))
    };
    let (ok, _, e) = at("microsoft__phi-2", "4096");
    assert!(!ok);
    assert!(
        e.contains(
            "--max-model-len: User-specified max_model_len (4096) is greater than the derived max_model_len \
             (max_position_embeddings=2048.0 or model_max_length=None in model's config.json)"
        ) && e.contains("use a max_model_len of 2048 or less"),
        "{e}"
    );
    let gib = (1u64 << 30) as f64;
    // (config, max_model_len, KV bytes per token, weights and rotary cache GiB, window).
    let cases: &[(&str, &str, u64, f64, Option<u64>)] = &[
        ("microsoft__phi-2", "2048", 327_680, 2.0 * 2_779_683_840.0 / gib, None),
        (
            "microsoft__Phi-3-mini-4k-instruct",
            "4096",
            393_216,
            2.0 * (3_821_079_552.0 + 4096.0 * 96.0) / gib,
            Some(2047),
        ),
        (
            "microsoft__Phi-3.5-mini-instruct",
            "4096",
            393_216,
            2.0 * (3_821_079_552.0 + 135_168.0 * 96.0) / gib,
            Some(262_144),
        ),
        ("microsoft__phi-4", "4096", 204_800, 2.0 * (14_659_507_200.0 + 16_384.0 * 128.0) / gib, Some(16_384)),
    ];
    for &(name, len, per_token, weights_gib, window) in cases {
        let (ok, out, e) = at(name, len);
        assert!(ok, "{name}: {e}");
        let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let b = &doc["budget"];
        assert_eq!(b["kv_bytes_per_token_per_gpu"], per_token, "{name}");
        let weights = b["weights_bytes"].as_f64().unwrap() / gib;
        assert!((weights - weights_gib).abs() < 0.001, "{name}: {weights} GiB vs {weights_gib}");
        let (blocks, tokens) = (b["num_gpu_blocks"].as_u64().unwrap(), b["kv_cache_tokens"].as_u64().unwrap());
        let available = b["available_kv_bytes"].as_f64().unwrap();
        assert_eq!(b["kv_cache_groups"], 1, "{name}: one kind of layer, one group");
        assert_eq!(blocks, (available / (16.0 * per_token as f64)) as u64, "{name}");
        // vLLM's tokens are its concurrency × max_model_len, a request taking `cdiv(L, 16)`
        // blocks, or under a window `cdiv(min(W − 1 + 8192, L), 16) + 1`
        // (`SlidingWindowSpec.max_memory_usage_bytes`): 257 for Phi-3-mini-4k's 2,047.
        let l: u64 = len.parse().unwrap();
        let per_request = match window {
            Some(w) => (w - 1 + 8192).min(l).div_ceil(16) + 1,
            None => l.div_ceil(16),
        };
        let concurrency = blocks as f64 / per_request as f64;
        assert!((b["max_concurrency"].as_f64().unwrap() - concurrency).abs() < 1e-9, "{name}");
        assert_eq!(tokens, (concurrency * l as f64) as u64, "{name}");
        // 0.9 × 79.22 GiB less the weights, and under 4 GiB of non-torch memory, activations
        // and CUDA graphs.
        let left = 0.9 * 79.22 - weights;
        assert!((left - 4.0..left).contains(&(available / gib)), "{name}: {:.2} GiB of KV", available / gib);
        let kinds = &doc["model"]["kv_layout"]["kinds"];
        let kind = &kinds[0]["attention"];
        match window {
            None => assert_eq!(kind["kind"], "full", "{name}: {kinds}"),
            Some(w) => assert_eq!((kind["kind"].as_str(), kind["tokens"].as_u64()), (Some("sliding_window"), Some(w))),
        }
        println!(
            "{name:<36} max_model_len {len}: weights {weights:.2} GiB, KV {:.2} GiB, {blocks} blocks, {tokens} tokens",
            available / gib
        );
    }
}

/// StarCoder2-3B and Falcon-40B-instruct (`tests/golden/model-configs/`) on H100s at 0.9:
/// StarCoder2's 4,096-token window on every layer, Falcon's 8 KV heads split 4 and 4 at TP 2 and
/// its 2,048 positions (FalconConfig's default), which is as long as vLLM lets it run.
#[test]
fn starcoder2_and_falcon_plan_on_h100s() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/model-configs");
    let at = |name: &str, len: &str, tp: &str| {
        let path = golden.join(format!("{name}.config.json"));
        let o = Command::new(env!("CARGO_BIN_EXE_kvlab"))
            .args(["plan", "--model-config", path.to_str().unwrap(), "--gpu", "h100-sxm"])
            .args(["--gpu-memory-utilization", "0.9", "--max-model-len", len, "--tensor-parallel-size", tp, "--json"])
            .output()
            .unwrap();
        (o.status.success(), text(&o.stdout), text(&o.stderr))
    };
    let (ok, out, e) = at("bigcode__starcoder2-3b", "4096", "1");
    assert!(ok, "{e}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 30 layers × 2 KV heads × 128 × 2 × 2 bytes; a request holds its window's 257 blocks.
    assert_eq!(doc["budget"]["kv_bytes_per_token_per_gpu"], 30 * 2 * 128 * 2 * 2);
    let blocks = doc["budget"]["num_gpu_blocks"].as_u64().unwrap();
    assert!((doc["budget"]["max_concurrency"].as_f64().unwrap() - blocks as f64 / 257.0).abs() < 1e-9);
    let (ok, _, e) = at("tiiuae__falcon-40b-instruct", "4096", "2");
    assert!(!ok && e.contains("(max_position_embeddings=2048.0 or model_max_length=None"), "{e}");
    let (ok, out, e) = at("tiiuae__falcon-40b-instruct", "2048", "2");
    assert!(ok, "{e}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["budget"]["kv_bytes_per_token_per_gpu"], 60 * 4 * 64 * 2 * 2);
    let weights = doc["budget"]["weights_bytes"].as_f64().unwrap() / (1u64 << 30) as f64;
    // Half of 41,303,293,952 bf16 parameters, and the 2,048 × 64 rotary cache.
    assert!((weights - (41_303_293_952.0 + 2.0 * 2048.0 * 64.0) / (1u64 << 30) as f64).abs() < 0.001, "{weights}");
    let (ok, _, e) = at("tiiuae__falcon-40b-instruct", "2048", "1");
    // 76.9 GiB of weights leave an H100's 71.3 GiB share nothing: refused, naming TP 2.
    assert!(!ok && e.contains("No available memory for the cache blocks"), "{e}");
    assert!(e.contains("(kvlab: --tensor-parallel-size 2 leaves "), "{e}");
}
