//! The v1 engine against vLLM 0.33.0 itself: every golden in `tests/golden/vllm/` was written by
//! vLLM's own scheduler (`scripts/vllm-reference/harness.py`); the engine replays the same trace
//! with the same flags on the same step clock and must agree on every step: running and waiting
//! counts, cumulative preemptions, prefix-cache queries and hits, scheduled tokens and finished
//! requests exactly, KV usage within one block. A mismatch names the golden, the step and the field.

use std::path::Path;

use kvlab::engine::config::EngineVersion;
use kvlab::engine::replay::{replay, ReplayParams};
use kvlab::formats::step_trace::{parse_step_trace, replay_json};
use serde_json::Value;

const GOLDENS: &[&str] = &[
    "decode_heavy",
    "long_prompts_chunked512",
    "long_prompts_chunked2048",
    "preemption_storm",
    "shared_prefix",
    "burst_mixed",
    "n4_sampling",
    "held_out_mix",
    "sliding_window",
    "sliding_held_out",
];

fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/vllm/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("golden exists")).expect("golden is JSON")
}

fn params(config: &Value) -> ReplayParams {
    let u = |k: &str| config[k].as_u64().unwrap_or_else(|| panic!("config.{k}")) as u32;
    ReplayParams {
        num_blocks: u("num_blocks"),
        block_size: u("block_size"),
        max_num_seqs: u("max_num_seqs"),
        max_num_batched_tokens: u("max_num_batched_tokens"),
        chunked_prefill: config["chunked_prefill"].as_bool().unwrap(),
        prefix_caching: config["prefix_caching"].as_bool().unwrap(),
        watermark: config["watermark"].as_f64(),
        max_model_len: u("max_model_len"),
        engine: EngineVersion::V1,
        sliding_window: config["sliding_window"].as_u64().map(|w| w as u32),
    }
}

/// The engine's replay of a golden's trace, as the JSON the harness writes.
fn engine_run(g: &Value) -> Value {
    let config = &g["config"];
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/vllm/traces")
        .join(config["trace"].as_str().expect("config.trace"));
    let rows = parse_step_trace(&std::fs::read_to_string(trace).expect("trace exists")).expect("trace parses");
    let p = params(config);
    let r = replay(&rows, &p).expect("replay runs");
    replay_json(config["trace"].as_str().unwrap(), &p, &r)
}

/// Every step and field where the engine and vLLM disagree.
fn mismatches(name: &str, vllm: &Value, ours: &Value) -> Vec<String> {
    let one_block = 1.0 / (vllm["config"]["num_blocks"].as_f64().unwrap() - 1.0) + 1e-9;
    let mut out = Vec::new();
    let steps = |v: &Value| v["per_step"]["num_running"].as_array().unwrap().len();
    if steps(vllm) != steps(ours) {
        out.push(format!("{name}: vLLM ran {} steps, the engine {}", steps(vllm), steps(ours)));
    }
    for (field, a) in vllm["per_step"].as_object().unwrap() {
        let b = ours["per_step"][field].as_array().unwrap_or_else(|| panic!("engine writes per_step.{field}"));
        for (step, (x, y)) in a.as_array().unwrap().iter().zip(b).enumerate() {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            let tolerance = if field == "kv_usage" { one_block } else { 0.0 };
            if (x - y).abs() > tolerance {
                out.push(format!("{name}: step {step}, {field}: vLLM {x}, engine {y}"));
                break; // the first step per field says enough
            }
        }
    }
    let (gs, os) = (&vllm["summary"], &ours["summary"]);
    for field in ["total_preemptions", "num_requests", "total_tokens_scheduled", "max_num_running"] {
        if gs[field] != os[field] {
            out.push(format!("{name}: summary.{field}: vLLM {}, engine {}", gs[field], os[field]));
        }
    }
    for (field, tolerance) in [("mean_kv_usage", 0.01), ("prefix_hit_rate", 0.01)] {
        match (gs[field].as_f64(), os[field].as_f64()) {
            (Some(x), Some(y)) if (x - y).abs() <= tolerance => {}
            (None, None) => {}
            (x, y) => out.push(format!("{name}: summary.{field}: vLLM {x:?}, engine {y:?}")),
        }
    }
    out
}

#[test]
fn v1_engine_matches_vllm_step_for_step_on_every_golden() {
    let mut all = Vec::new();
    for name in GOLDENS {
        let g = golden(name);
        assert_eq!(g["vllm_version"], "0.33.0", "{name} comes from vLLM 0.33.0");
        all.extend(mismatches(name, &g, &engine_run(&g)));
    }
    assert!(all.is_empty(), "the engine and vLLM disagree:\n{}", all.join("\n"));
}

#[test]
fn the_comparison_catches_a_one_step_difference() {
    // The test above must be able to fail: shift one count and one usage by a block.
    let g = golden("n4_sampling");
    let mut ours = engine_run(&g);
    ours["per_step"]["num_waiting"][40] = Value::from(ours["per_step"]["num_waiting"][40].as_u64().unwrap() + 1);
    let u = ours["per_step"]["kv_usage"][41].as_f64().unwrap();
    ours["per_step"]["kv_usage"][41] = Value::from(u + 2.0 / 599.0);
    let found = mismatches("n4_sampling", &g, &ours);
    assert!(found.iter().any(|m| m.contains("step 40, num_waiting")), "{found:?}");
    assert!(found.iter().any(|m| m.contains("step 41, kv_usage")), "{found:?}");
}

#[test]
fn every_golden_is_listed_here() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/vllm");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = GOLDENS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}
