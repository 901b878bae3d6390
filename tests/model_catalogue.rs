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
    assert!(ids.len() >= 15, "{ids:?}");
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
    for id in catalogue_ids() {
        let path = dir.join(format!("{}.config.json", id.replace('/', "__")));
        let whole: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let full = read_hf_config(&whole, Overrides::default()).unwrap();
        let kept = catalogue_model(&id).unwrap().unwrap();
        assert_eq!(kept.arch.as_deref(), Some(&full), "{id}");
    }
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
