//! Real vLLM startup logs (`tests/golden/vllm-startup/`) reproduced by the memory-budget module:
//! available KV memory within ±10% of each log's figure, KV cache tokens where printed, and
//! vLLM's startup checks in vLLM's words.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::repo_path;
use kvlab::engine::memory_budget::{
    format_gib, kv_heads_per_gpu, ActivationShape, MemoryBudget, MemoryBudgetInput, DEFAULT_MAX_NUM_SEQS,
};
use kvlab::engine::model::{model_preset, KvDtype, ModelSpec, GIB};
use kvlab::engine::model_arch::Mlp;
use kvlab::engine::startup_checks::{
    check_block_size, check_free_memory, check_kv_cache_memory, estimated_max_model_len, AttentionBackend,
};
use serde_json::Value;

const TOLERANCE: f64 = 0.10;

struct Golden {
    name: String,
    doc: Value,
}

fn goldens() -> Vec<Golden> {
    let dir = repo_path("tests/golden/vllm-startup");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| Golden {
            name: p.file_stem().unwrap().to_string_lossy().into_owned(),
            doc: serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap(),
        })
        .collect()
}

fn u(v: &Value, key: &str) -> u32 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} missing")) as u32
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing"))
}

fn kv_dtype(v: &Value) -> KvDtype {
    match v["kv_dtype"].as_str().unwrap() {
        "fp8" => KvDtype::Fp8,
        _ => KvDtype::Fp16,
    }
}

fn input(inputs: &Value) -> MemoryBudgetInput {
    MemoryBudgetInput {
        model: ModelSpec {
            id: inputs["model"].as_str().unwrap().to_string(),
            layers: u(inputs, "layers"),
            kv_heads: u(inputs, "kv_heads"),
            head_dim: u(inputs, "head_dim"),
            params_b: f(inputs, "params_b"),
            arch: None,
        },
        shape: ActivationShape {
            hidden_size: u(inputs, "hidden_size"),
            intermediate_size: u(inputs, "intermediate_size"),
            mlp: Mlp::Gated,
            vocab_size: u(inputs, "vocab_size"),
            activation_bytes: 2,
            moe_workspace: None,
        },
        weight_bytes: f(inputs, "weight_bytes"),
        kv_dtype: kv_dtype(inputs),
        gpu_total_bytes: (f(inputs, "gpu_total_gib") * GIB as f64) as u64,
        other_processes_bytes: 0,
        gpu_memory_utilization: f(inputs, "gpu_memory_utilization"),
        tensor_parallel_size: u(inputs, "tensor_parallel_size"),
        max_num_batched_tokens: u(inputs, "max_num_batched_tokens"),
        max_num_seqs: u(inputs, "max_num_seqs"),
        max_model_len: u(inputs, "max_model_len"),
        block_size: u(inputs, "block_size"),
        cuda_graphs_in_budget: inputs["cuda_graphs_in_budget"].as_bool().unwrap(),
        // SXM data-centre GPUs (H100, A100) sit on switched NVLink; the GeForce cards on PCIe.
        switched_nvlink: ["H100", "A100"].iter().any(|g| inputs["gpu"].as_str().unwrap_or("").contains(g)),
    }
}

fn rel(derived: f64, reported: f64) -> f64 {
    (derived - reported) / reported.abs()
}

#[test]
fn every_counted_startup_log_is_reproduced_within_ten_percent() {
    let all = goldens();
    assert!(all.len() >= 8, "{} goldens", all.len());
    println!(
        "{:<40} {:>4} {:>6} {:>9} {:>9} {:>8} {:>10} {:>10} {:>8}",
        "log", "TP", "util", "KV rep", "KV der", "err", "tok rep", "tok der", "err"
    );
    let mut failures = Vec::new();
    let mut counted = 0;
    for g in &all {
        for key in ["source", "log_lines", "inputs", "reported", "notes"] {
            assert!(!g.doc[key].is_null(), "{}: `{key}` is missing", g.name);
        }
        assert!(g.doc["source"]["url"].as_str().unwrap().starts_with("https://github.com/"), "{}", g.name);
        let excluded = g.doc["excluded_because"].as_str();
        let inputs = &g.doc["inputs"];
        let reported = &g.doc["reported"];
        if inputs["gpu_total_gib"].is_null() {
            println!("{:<40} excluded: {}", g.name, excluded.expect("a log without a GPU total must be excluded"));
            continue;
        }
        let b = MemoryBudget::compute(&input(inputs));
        let kv_rep = f(reported, "available_kv_gib");
        let kv_der = b.available_kv_gib();
        let kv_err = rel(kv_der, kv_rep);
        let tokens = reported["kv_cache_tokens"].as_u64().map(|t| (t, b.num_gpu_blocks * u64::from(b.block_size)));
        let tok_err = tokens.map(|(r, d)| rel(d as f64, r as f64));
        println!(
            "{:<40} {:>4} {:>6.2} {:>9.2} {:>9.2} {:>+7.1}% {:>10} {:>10} {:>7}{}",
            g.name,
            b.tensor_parallel_size,
            f(inputs, "gpu_memory_utilization"),
            kv_rep,
            kv_der,
            kv_err * 100.0,
            tokens.map_or("-".into(), |t| t.0.to_string()),
            tokens.map_or("-".into(), |t| t.1.to_string()),
            tok_err.map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
            excluded.map_or(String::new(), |why| format!("  excluded: {why}")),
        );
        if excluded.is_some() {
            continue;
        }
        counted += 1;
        if kv_err.abs() > TOLERANCE {
            failures.push(format!(
                "{}: available KV {kv_der:.2} GiB derived vs {kv_rep:.2} GiB logged ({:+.1}%)",
                g.name,
                kv_err * 100.0
            ));
        }
        if let Some(e) = tok_err.filter(|e| e.abs() > TOLERANCE) {
            failures.push(format!("{}: KV cache tokens off by {:+.1}%", g.name, e * 100.0));
        }
    }
    assert!(failures.is_empty(), "beyond ±10%:\n{}", failures.join("\n"));
    assert!(counted >= 12, "only {counted} logs counted");
}

#[test]
fn tokens_follow_from_the_printed_available_memory_under_tensor_parallelism() {
    // Each (log, layers, KV heads, head dim, TP, printed GiB, printed tokens), read from the goldens.
    for g in goldens() {
        let (inputs, reported) = (&g.doc["inputs"], &g.doc["reported"]);
        let (Some(tokens), Some(gib)) = (reported["kv_cache_tokens"].as_u64(), reported["available_kv_gib"].as_f64())
        else {
            continue;
        };
        let tp = inputs["tensor_parallel_size"].as_u64().unwrap_or(1) as u32;
        let heads = kv_heads_per_gpu(u(inputs, "kv_heads"), tp);
        let per_token =
            2 * u64::from(u(inputs, "layers") * heads * u(inputs, "head_dim")) * kv_dtype(inputs).bytes_per_element();
        let block = u64::from(u(inputs, "block_size"));
        let derived = (gib * GIB as f64) as u64 / (per_token * block) * block;
        let err = rel(derived as f64, tokens as f64);
        println!("{:<40} {heads} KV heads/GPU: {derived} tokens vs {tokens} ({:+.2}%)", g.name, err * 100.0);
        assert!(err.abs() < 0.02, "{}: {derived} vs {tokens}", g.name);
    }
}

#[test]
fn the_max_length_check_reproduces_vllms_message_and_estimate() {
    // vllm-project/vllm#25350: fp8 KV, 48 KiB per token, 5.59 GiB usable, max_model_len 221000.
    let bytes_per_block = 16 * 48 * 1024;
    let usable = (5.59 * GIB as f64) as i64;
    let estimate = estimated_max_model_len(usable, bytes_per_block, 16, 221_000);
    assert!((estimate as f64 - 122_080.0).abs() <= 16.0 * 7.0, "{estimate}"); // 5.59 is rounded to ±0.005 GiB
    assert_eq!(format_gib((221_000u64.div_ceil(16) * bytes_per_block) as i64), "10.12");

    // A paged Llama-3-8B server on 1 GiB of KV: 8,192 tokens cannot hold one 32,768-token request.
    let mut b = budget("llama-3-8b", 0.9, 1, 32_768);
    b.available_kv_bytes = GIB as i64;
    let err = check_kv_cache_memory(&b).unwrap_err();
    assert_eq!(
        err,
        "To serve at least one request with the model's max seq len (32768), (4.0 GiB KV cache is needed, which is \
         larger than the available KV cache memory (1.0 GiB). Based on the available memory, the estimated maximum \
         model length is 8176. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU \
         backend) or decreasing `max_model_len` when initializing the engine. See \
         https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    );
    b.available_kv_bytes = -1;
    assert!(check_kv_cache_memory(&b).unwrap_err().starts_with("No available memory for the cache blocks."));
}

fn budget(model: &str, util: f64, tp: u32, max_model_len: u32) -> MemoryBudget {
    MemoryBudget::compute(&MemoryBudgetInput {
        model: model_preset(model).unwrap(),
        shape: ActivationShape::for_model(model).unwrap(),
        weight_bytes: 2.0,
        kv_dtype: KvDtype::Fp16,
        gpu_total_bytes: (79.22 * GIB as f64) as u64,
        other_processes_bytes: 0,
        gpu_memory_utilization: util,
        tensor_parallel_size: tp,
        max_num_batched_tokens: 8192,
        max_num_seqs: DEFAULT_MAX_NUM_SEQS,
        max_model_len,
        block_size: 16,
        cuda_graphs_in_budget: true,
        switched_nvlink: true,
    })
}

#[test]
fn llama3_70b_needs_tensor_parallelism_and_fits_on_four_h100s() {
    assert!(check_kv_cache_memory(&budget("llama-3-70b", 0.9, 1, 8192)).is_err());
    let b = budget("llama-3-70b", 0.9, 4, 8192);
    assert_eq!(b.kv_heads_per_gpu, 2);
    assert_eq!(b.kv_bytes_per_token_per_gpu, 80 * 1024);
    check_kv_cache_memory(&b).unwrap();
    // Eight GPUs split 8 KV heads one each; sixteen would replicate them (at least one per GPU).
    assert_eq!(budget("llama-3-70b", 0.9, 8, 8192).kv_heads_per_gpu, 1);
    assert_eq!(kv_heads_per_gpu(8, 16), 1);
}

#[test]
fn a_second_instance_needs_its_own_fraction() {
    let first = budget("llama-3-8b", 0.5, 1, 8192);
    let mut input_second = MemoryBudgetInput {
        model: model_preset("llama-3-8b").unwrap(),
        shape: ActivationShape::for_model("llama-3-8b").unwrap(),
        weight_bytes: 2.0,
        kv_dtype: KvDtype::Fp16,
        gpu_total_bytes: first.gpu_total_bytes,
        other_processes_bytes: first.requested_bytes,
        gpu_memory_utilization: 0.9,
        tensor_parallel_size: 1,
        max_num_batched_tokens: 8192,
        max_num_seqs: 256,
        max_model_len: 8192,
        block_size: 16,
        cuda_graphs_in_budget: true,
        switched_nvlink: true,
    };
    let err = check_free_memory(&MemoryBudget::compute(&input_second)).unwrap_err();
    assert!(err.starts_with("Free memory on device cuda:0 (39.61/79.22 GiB) on startup is less than desired GPU memory utilization (0.9, 71.3 GiB)."), "{err}");
    input_second.gpu_memory_utilization = 0.45;
    check_free_memory(&MemoryBudget::compute(&input_second)).unwrap();
}

#[test]
fn block_sizes_follow_the_backends_advertised_kernel_sizes() {
    assert_eq!(
        check_block_size(AttentionBackend::FlashAttention, 8).unwrap_err(),
        "Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['block_size not supported']"
    );
    assert!(check_block_size(AttentionBackend::FlashAttention, 1).is_err());
    for ok in [16, 32, 48, 128, 256] {
        check_block_size(AttentionBackend::FlashAttention, ok).unwrap();
    }
    check_block_size(AttentionBackend::FlashInfer, 128).unwrap(); // a multiple of 16 counts (hybrid blocks)
    assert!(check_block_size(AttentionBackend::Cpu, 16).is_err());
    assert_eq!(AttentionBackend::default(), AttentionBackend::FlashAttention);
}
