//! Every successful vLLM 0.19.0 startup log of llm-d-planner's capacity sweep (one H100 80GB
//! node) against `memory_budget` from the GPU up: weights, peak activation, non-torch memory,
//! CUDA graphs, available KV memory and KV tokens, per GPU. The figures compared against are
//! committed in `tests/golden/llm-d-planner/startup-figures.json` with their source; each log
//! names the model kvlab reads for it (a catalogue entry, or a stand-in golden's published
//! shape) or why it is left out. `cargo test --test llm_d_startup -- --nocapture` prints the table
//! of docs/VLLM_STARTUP.md.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::repo_path;
use kvlab::engine::memory_budget::{ActivationShape, MemoryBudget, MemoryBudgetInput, CUDA_GRAPH_MIB_PER_LAYER};
use kvlab::engine::model::{KvDtype, ModelSpec, GIB};
use kvlab::engine::model_arch::Mlp;
use kvlab::formats::hf_config::{read_hf_config, Overrides};
use serde_json::{json, Value};

const GPU_TOTAL_GIB: f64 = 79.19;

fn figures() -> Value {
    let path = repo_path("tests/golden/llm-d-planner/startup-figures.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn catalogue_config(id: &str) -> Value {
    let text = std::fs::read_to_string(repo_path("assets/models/catalogue.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let entry = doc["models"].as_array().unwrap().iter().find(|m| m["id"] == id);
    entry.unwrap_or_else(|| panic!("{id} is not in the catalogue"))["hf_config"].clone()
}

/// The model a log ran, as kvlab reads it, and its KV dtype.
fn model(log: &Value) -> (ModelSpec, ActivationShape, KvDtype) {
    let dtype = log["dtype"].as_str();
    let fp8_kv = log["kv_cache_dtype"] == "fp8";
    if let Some(id) = log["catalogue_model"].as_str() {
        let mut cfg = catalogue_config(id);
        // RedHatAI's FP8-dynamic and w8a8 checkpoints: compressed-tensors with 8-bit weights.
        let quantization = match log["quantization"].as_str() {
            Some(kind @ ("ct-fp8" | "ct-int8")) => {
                let t = if kind == "ct-fp8" { "float" } else { "int" };
                cfg["quantization_config"] = json!({"quant_method": "compressed-tensors",
                    "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": t}}}});
                None
            }
            q => q,
        };
        let arch = read_hf_config(&cfg, Overrides { dtype, quantization }).unwrap();
        let m = ModelSpec::from_arch(id, arch);
        let kv = match (fp8_kv, dtype) {
            (true, _) => KvDtype::Fp8,
            (false, Some("float32")) => KvDtype::Fp32,
            _ => KvDtype::Fp16,
        };
        return (m.clone(), ActivationShape::of(&m).unwrap(), kv);
    }
    // No public config.json: the published shape its `tests/golden/vllm-startup/` golden gives.
    let path = log["stand_in"].as_str().unwrap_or_else(|| panic!("{}: no model", log["log"]));
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(repo_path(path)).unwrap()).unwrap();
    let i = &golden["inputs"];
    let u = |k: &str| i[k].as_u64().unwrap() as u32;
    let m = ModelSpec {
        id: i["model"].as_str().unwrap().to_string(),
        layers: u("layers"),
        kv_heads: u("kv_heads"),
        head_dim: u("head_dim"),
        params_b: i["params_b"].as_f64().unwrap(),
        arch: None,
    };
    let shape = ActivationShape {
        hidden_size: u("hidden_size"),
        intermediate_size: u("intermediate_size"),
        mlp: Mlp::Gated,
        vocab_size: u("vocab_size"),
        activation_bytes: 2,
        moe_workspace: None,
    };
    (m, shape, if fp8_kv { KvDtype::Fp8 } else { KvDtype::Fp16 })
}

fn rel(derived: f64, logged: f64) -> f64 {
    (derived - logged) / logged
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn every_successful_llm_d_log_is_reproduced_from_the_gpu_up() {
    let doc = figures();
    let logs = doc["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 46, "runs.json's 46 successful logs");
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{}: {k}", v["log"]));
    let gib = |b: f64| b / GIB as f64;
    let pct = |e: f64| format!("{:+.1}%", e * 100.0);
    println!("| log | model read | TP | weights GiB vLLM / kvlab | activation | non-torch | CUDA graphs (not in the budget) | available KV GiB | error | KV tokens vLLM / kvlab | error |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut kv_errs, mut held_out_errs, mut failures, mut left_out) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut worst: (f64, String) = (0.0, String::new());
    for log in logs {
        let name = log["log"].as_str().unwrap();
        if let Some(why) = log["left_out"].as_str() {
            left_out.push(format!("{name}: {why}"));
            continue;
        }
        let (m, shape, kv_dtype) = model(log);
        let tp = log["tp"].as_u64().unwrap() as u32;
        let b = MemoryBudget::compute(&MemoryBudgetInput {
            model: m.clone(),
            shape,
            weight_bytes: 2.0,
            kv_dtype,
            gpu_total_bytes: (GPU_TOTAL_GIB * GIB as f64) as u64,
            other_processes_bytes: 0,
            gpu_memory_utilization: f(log, "gpu_memory_utilization"),
            tensor_parallel_size: tp,
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            max_model_len: log["max_model_len"].as_u64().unwrap() as u32,
            block_size: 16,
            cuda_graphs_in_budget: false,
            switched_nvlink: true,
        });
        let graphs = f64::from(m.layers) * CUDA_GRAPH_MIB_PER_LAYER / 1024.0;
        let (w, a, n, kv) = (
            gib(b.weights_bytes as f64),
            gib(b.peak_activation_bytes as f64),
            gib(b.non_torch_bytes as f64),
            b.available_kv_gib(),
        );
        let kv_err = rel(kv, f(log, "available_kv_gib"));
        let tokens = log["kv_cache_tokens"].as_u64().unwrap();
        let tok_err = rel(b.kv_cache_tokens as f64, tokens as f64);
        let w_err = rel(w, f(log, "weights_gib"));
        println!(
            "| {name} | {} | {tp} | {:.2} / {w:.2} ({}) | {:.2} / {a:.2} | {:.2} / {n:.2} | {:.2} / {graphs:.2} | {:.2} / {kv:.2} | {} | {tokens} / {} | {} |",
            log["catalogue_model"].as_str().or(log["stand_in"].as_str()).unwrap(),
            f(log, "weights_gib"),
            pct(w_err),
            f(log, "activation_gib"),
            f(log, "non_torch_gib"),
            f(log, "cuda_graph_estimated_gib"),
            f(log, "available_kv_gib"),
            pct(kv_err),
            b.kv_cache_tokens,
            pct(tok_err),
        );
        kv_errs.push(kv_err.abs());
        if log["sets_a_constant"].as_bool() != Some(true) {
            held_out_errs.push(kv_err.abs());
        }
        if kv_err.abs() > worst.0 {
            worst = (kv_err.abs(), name.to_string());
        }
        // Every counted log within ±3% on available KV and KV tokens, weights within ±10%.
        if kv_err.abs() > 0.03 || tok_err.abs() > 0.03 || w_err.abs() > 0.10 {
            failures.push(format!("{name}: KV {}, tokens {}, weights {}", pct(kv_err), pct(tok_err), pct(w_err)));
        }
    }
    let (counted, held_out) = (kv_errs.len(), held_out_errs.len());
    let (med, med_held_out) = (median(kv_errs), median(held_out_errs));
    println!(
        "\n{counted} logs counted: available KV median |error| {:.2}%, worst {:.2}% ({}); the {held_out} logs no constant was set from: median {:.2}%",
        med * 100.0,
        worst.0 * 100.0,
        worst.1,
        med_held_out * 100.0
    );
    println!("left out:\n{}", left_out.join("\n"));
    assert!(failures.is_empty(), "beyond the bounds:\n{}", failures.join("\n"));
    assert!(counted >= 38, "{counted}");
    assert!(med <= 0.03 && med_held_out <= 0.03);
}
