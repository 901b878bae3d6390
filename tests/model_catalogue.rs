//! The shipped model catalogue (`assets/models/catalogue.json`): Hugging Face ids resolve to
//! their config numbers in presets and `kvlab plan`, each entry names its source, the kept keys
//! give the same model as the whole config.json (`../shared/validation/model-configs/`), and
//! the lab's five ids keep working.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;
use std::process::Command;

use kvlab::engine::model::{model_preset, MODEL_IDS};
use kvlab::formats::hf_config::{read_hf_config, Overrides};
use kvlab::formats::model_catalogue::{catalogue_ids, catalogue_model, catalogue_source, resolve_model_id};
use kvlab::formats::preset::parse_preset;

#[test]
fn every_entry_reads_and_names_its_source() {
    let ids = catalogue_ids();
    assert!(ids.len() >= 25, "{ids:?}");
    for id in &ids {
        let m = catalogue_model(id).unwrap().unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(&m.id, id);
        assert!(m.arch.is_some());
        let source = catalogue_source(id).unwrap();
        assert!(source.contains("github.com/") && source.contains(" at "), "{id}: {source}");
    }
    // Ids on the Hub are case-insensitive.
    assert_eq!(resolve_model_id("meta-llama/llama-3.1-8b-instruct").unwrap().id, "meta-llama/Llama-3.1-8B-Instruct");
    for id in MODEL_IDS {
        assert_eq!(resolve_model_id(id).unwrap(), model_preset(id).unwrap(), "the lab's ids are unchanged");
    }
    let e = resolve_model_id("llama-9").unwrap_err();
    assert!(e.contains("llama-3-8b") && e.contains("Qwen/Qwen3-32B"), "{e}");
}

#[test]
fn the_kept_keys_give_the_same_model_as_the_whole_config() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/validation/model-configs");
    if !dir.is_dir() {
        println!("skipped: {} is absent (CI has ../shared)", dir.display());
        return;
    }
    // The entries added beyond the shared folder's files are checked by their sizes below.
    let compared = compare_kept_keys_with(&dir);
    assert!(compared >= 15, "{compared}");
}

/// For every catalogue entry whose whole config.json is in `dir` (as `owner__name.config.json`):
/// the kept keys give the same model as the whole file. Returns how many were compared.
fn compare_kept_keys_with(dir: &std::path::Path) -> usize {
    let mut compared = 0;
    for id in catalogue_ids() {
        let path = dir.join(format!("{}.config.json", id.replace('/', "__")));
        if !path.is_file() {
            continue;
        }
        compared += 1;
        let whole: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let full = read_hf_config(&whole, Overrides::default()).unwrap();
        let kept = catalogue_model(&id).unwrap().unwrap();
        assert_eq!(kept.arch.as_deref(), Some(&full), "{id}");
    }
    compared
}

/// The entries whose whole config.json is kept in `tests/golden/model-configs/` (the Phi family):
/// the kept keys give the same model as the whole file.
#[test]
fn the_kept_keys_give_the_same_model_as_the_golden_config() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/model-configs");
    assert_eq!(compare_kept_keys_with(&dir), 4);
}

/// (id, published total B, published active B, source) for the entries whose whole config.json is
/// not in `../shared/validation/model-configs/` (those are checked in `tests/hf_configs.rs`).
const PUBLISHED: &[(&str, f64, Option<f64>, &str)] = &[
    ("Qwen/Qwen3-0.6B", 0.6, None, "Qwen3-0.6B: 0.6 B, model card"),
    ("Qwen/Qwen3-1.7B", 1.7, None, "Qwen3-1.7B: 1.7 B, model card"),
    ("Qwen/Qwen3-8B", 8.2, None, "Qwen3-8B: 8.2 B, model card"),
    ("Qwen/Qwen3-235B-A22B", 235.0, Some(22.0), "Qwen3-235B-A22B: 235 B total, 22 B activated, model card"),
    ("Qwen/Qwen2.5-1.5B-Instruct", 1.54, None, "Qwen2.5-1.5B-Instruct: 1.54 B, model card"),
    ("Qwen/Qwen2.5-3B-Instruct", 3.09, None, "Qwen2.5-3B-Instruct: 3.09 B, model card"),
    ("Qwen/Qwen2.5-32B", 32.5, None, "Qwen2.5-32B: 32.5 B, model card"),
    ("Qwen/Qwen2.5-72B", 72.7, None, "Qwen2.5-72B: 72.7 B, model card"),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        32.5,
        None,
        "its base model Qwen2.5-32B: 32.5 B, model card (the distill keeps the architecture)",
    ),
    ("mistralai/Mistral-7B-v0.1", 7.3, None, "Mistral 7B: 7.3 B, Mistral AI's announcement"),
    ("mistralai/Mistral-Nemo-Instruct-2407", 12.2, None, "Mistral-Nemo-Instruct-2407: 12.2 B, Hugging Face model page"),
    (
        "mistralai/Mixtral-8x22B-Instruct-v0.1",
        141.0,
        Some(39.0),
        "Mixtral 8x22B: 141 B total, 39 B active, Mistral AI's announcement",
    ),
    ("meta-llama/Llama-2-7b-hf", 6.74, None, "Llama-2-7b-hf: 6.74 B, Hugging Face model page"),
    ("meta-llama/Llama-2-70b-hf", 69.0, None, "Llama-2-70b-hf: 69 B, Hugging Face model page"),
    ("meta-llama/Llama-3.1-405B", 405.0, None, "Llama-3.1-405B: 405 B, model card"),
    ("codellama/CodeLlama-34b-Instruct-hf", 33.7, None, "CodeLlama-34b-Instruct-hf: 33.7 B, Hugging Face model page"),
    ("01-ai/Yi-34B", 34.4, None, "Yi-34B: 34.4 B, Hugging Face model page"),
    ("microsoft/phi-2", 2.78, None, "phi-2: 2.78 B, Hugging Face model page (safetensors)"),
    ("microsoft/Phi-3-mini-4k-instruct", 3.82, None, "Phi-3-mini-4k-instruct: 3.82 B, Hugging Face model page"),
    ("microsoft/Phi-3.5-mini-instruct", 3.82, None, "Phi-3.5-mini-instruct: 3.82 B, Hugging Face model page"),
    ("microsoft/phi-4", 14.7, None, "phi-4: 14.7 B, Hugging Face model page (safetensors)"),
];

#[test]
fn the_added_entries_match_their_published_sizes() {
    let ids = catalogue_ids();
    let mut failures = Vec::new();
    for &(id, total_pub, active_pub, source) in PUBLISHED {
        assert!(ids.iter().any(|i| i == id), "{id} is not in the catalogue");
        let m = catalogue_model(id).unwrap().unwrap();
        let a = m.arch.as_deref().unwrap();
        let c = a.param_counts();
        let (total, active) = (c.total() as f64 / 1e9, c.active() as f64 / 1e9);
        let err = (total - total_pub) / total_pub;
        println!("{id:<45} {total:>8.2} B vs {total_pub} ({:+.2}%) active {active:.2}", err * 100.0);
        if err.abs() > 0.02 {
            failures.push(format!("{id}: {total:.2} B vs {source}"));
        }
        // Published active counts are rounded (22, 39): ±5%.
        if let Some(p) = active_pub.filter(|p| ((active - p) / p).abs() > 0.05) {
            failures.push(format!("{id}: {active:.2} B active vs {p} ({source})"));
        }
        // Every entry gives a KV cache and fits the reader's checks.
        assert!(m.kv_heads >= 1 && m.head_dim >= 64 && m.layers == a.layers, "{id}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every entry has a size check: here or in tests/hf_configs.rs (the shared folder's 15).
    assert_eq!(ids.len(), PUBLISHED.len() + 15);
}

#[test]
fn presets_and_plan_take_a_catalogue_id() {
    let c = parse_preset(
        r#"{"schema": "kvlab/preset@1", "duration_s": 10, "model": "Qwen/Qwen3-32B", "gpu": "h100-sxm",
            "gpu_memory_utilization": 0.95, "allocator": {"kind": "paged"}}"#,
    )
    .expect("plans");
    assert_eq!(c.kv_bytes_per_token(), 64 * 8 * 128 * 2 * 2);
    let e = parse_preset(r#"{"schema": "kvlab/preset@1", "model": "Qwen/Qwen9"}"#).unwrap_err();
    assert_eq!(e.field, "model");
    assert!(e.message.contains("or {\"hf_config\": <config.json>}"), "{e}");
    let o = Command::new(env!("CARGO_BIN_EXE_kvlab"))
        .args(["plan", "--model", "openai/gpt-oss-20b", "--gpu", "h100-sxm", "--max-model-len", "8192", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["budget"]["kv_cache_groups"], 2);
    assert_eq!(doc["model"]["quantization"], "mxfp4");
}

/// From the GPU up, weights that do not load name the tensor-parallel size at which vLLM would
/// also find room for the KV cache, or a larger GPU.
#[test]
fn a_preset_too_big_for_its_gpus_names_the_size_that_starts() {
    let at = |gpu: &str| {
        parse_preset(&format!(
            r#"{{"schema": "kvlab/preset@1", "model": "deepseek-ai/DeepSeek-V3", "gpu": "{gpu}",
                "gpu_memory_utilization": 0.95, "allocator": {{"kind": "paged"}}}}"#
        ))
        .unwrap_err()
    };
    let e = at("h100-sxm");
    assert_eq!(e.field, "model");
    assert!(
        e.message
            .ends_with("no tensor_parallel_size up to 8 leaves room for the KV cache on h100-sxms; use a larger GPU"),
        "{e}"
    );
    let e = at("h200");
    assert!(
        e.message.contains("needs 626.9 GiB of weights on one h200")
            && e.message.ends_with("use tensor_parallel_size 8 or more"),
        "{e}"
    );
}
