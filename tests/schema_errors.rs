#![cfg(not(target_arch = "wasm32"))]
//! Bad preset and mission files: unknown fields, wrong types, out-of-range values and impossible
//! configurations each get a message that names the field by its path. Also keeps
//! docs/SCHEMA.md honest: every JSON example in it validates, and it documents every field and
//! every metric the code accepts.

use std::path::Path;

use kvlab::engine::config::ConfigError;
use kvlab::formats::mission::{parse_mission_index, REPORT_METRICS};
use kvlab::formats::paths::PRESET_PATHS;
use kvlab::formats::preset::parse_preset;
use kvlab::missions::mission::parse_mission;
use serde_json::{json, Value};

fn repo_text(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn value(rel: &str) -> Value {
    serde_json::from_str(&repo_text(rel)).expect("shipped file is JSON")
}

/// Applies `edit` to a shipped preset and expects an error naming `field`.
fn check_preset(edit: impl Fn(&mut Value), field: &str) -> ConfigError {
    let mut v = value("assets/presets/contiguous-default.json");
    edit(&mut v);
    match parse_preset(&v.to_string()) {
        Ok(_) => panic!("expected an error naming {field} for {v}"),
        Err(e) => {
            assert_eq!(e.field, field, "wrong field for {v}: {e}");
            assert!(!e.message.is_empty());
            e
        }
    }
}

/// Applies `edit` to mission 1 and expects an error naming `field`.
fn check_mission(edit: impl Fn(&mut Value), field: &str) -> ConfigError {
    let mut v = value("assets/missions/m1-paging.json");
    edit(&mut v);
    match parse_mission(&v.to_string()) {
        Ok(_) => panic!("expected an error naming {field}"),
        Err(e) => {
            assert_eq!(e.field, field, "wrong field: {e}");
            assert!(!e.message.is_empty());
            e
        }
    }
}

/// Sets the value at a JSON pointer, adding the last key if it is missing.
fn set(v: &mut Value, pointer: &str, x: Value) {
    if let Some(slot) = v.pointer_mut(pointer) {
        *slot = x;
        return;
    }
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer with a parent");
    let obj = v.pointer_mut(parent).and_then(Value::as_object_mut).unwrap_or_else(|| panic!("no object at {parent}"));
    obj.insert(key.to_string(), x);
}

fn remove(v: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer with a parent");
    let obj = v.pointer_mut(parent).and_then(Value::as_object_mut).expect("parent object");
    obj.remove(key).unwrap_or_else(|| panic!("no {pointer}"));
}

#[test]
fn preset_unknown_fields_are_named() {
    check_preset(|v| set(v, "/colour", json!("blue")), "colour");
    check_preset(|v| set(v, "/scheduler/colour", json!(1)), "scheduler.colour");
    check_preset(|v| set(v, "/workload/classes/0/colour", json!(1)), "workload.classes[0].colour");
    // Tagged objects are named as a whole; the message names the stray field.
    let e = check_preset(|v| set(v, "/allocator/colour", json!(1)), "allocator");
    assert!(e.message.contains("colour"), "{e}");
    let e = check_preset(|v| set(v, "/allocator", json!({ "kind": "paged", "reserve": "max_model_len" })), "allocator");
    assert!(e.message.contains("reserve"), "{e}");
}

#[test]
fn preset_wrong_types_are_named() {
    check_preset(|v| set(v, "/kv_memory_gib", json!("ten")), "kv_memory_gib");
    check_preset(|v| set(v, "/scheduler/max_num_seqs", json!("many")), "scheduler.max_num_seqs");
    check_preset(|v| set(v, "/scheduler/max_num_seqs", json!(-1)), "scheduler.max_num_seqs");
    check_preset(|v| set(v, "/scheduler/chunked_prefill", json!("yes")), "scheduler.chunked_prefill");
    check_preset(|v| set(v, "/workload/classes/0/n", json!(1.5)), "workload.classes[0].n");
    check_preset(|v| set(v, "/model", json!(8)), "model");
    check_preset(
        |v| set(v, "/model", json!({ "layers": 32, "kv_heads": "8", "head_dim": 128, "params_b": 8 })),
        "model.kv_heads",
    );
    let e = check_preset(|v| set(v, "/kv_dtype", json!("int4")), "kv_dtype");
    assert!(e.message.contains("fp8"), "{e}");
    let e = check_preset(|v| set(v, "/gpu", json!("tpu-v5")), "gpu");
    assert!(e.message.contains("h100-sxm"), "{e}");
    let e = check_preset(|v| set(v, "/model", json!("gpt-5")), "model");
    assert!(e.message.contains("llama-3-8b"), "{e}");
}

#[test]
fn preset_out_of_range_values_are_named_with_the_range() {
    let e = check_preset(|v| set(v, "/scheduler/max_num_seqs", json!(0)), "scheduler.max_num_seqs");
    assert!(e.message.contains("1 to 4096"), "{e}");
    check_preset(|v| set(v, "/scheduler/max_num_seqs", json!(5000)), "scheduler.max_num_seqs");
    check_preset(|v| set(v, "/allocator", json!({ "kind": "paged", "block_size": 512 })), "allocator.block_size");
    check_preset(|v| set(v, "/duration_s", json!(0)), "duration_s");
    check_preset(|v| set(v, "/kv_memory_gib", json!(-1)), "kv_memory_gib");
    check_preset(|v| set(v, "/workload/arrival/rate_per_s", json!(-1)), "workload.arrival.rate_per_s");
    check_preset(|v| set(v, "/workload/classes/0/n", json!(17)), "workload.classes[0].n");
    check_preset(|v| set(v, "/workload/classes/0/output_tokens/p99", json!(100)), "workload.classes[0].output_tokens");
    check_preset(
        |v| set(v, "/workload/arrival/bursts", json!([{ "start_s": 30, "end_s": 20, "rate_per_s": 9 }])),
        "workload.arrival.bursts[0].end_s",
    );
}

#[test]
fn preset_impossible_configs_name_what_to_change() {
    let e = check_preset(|v| set(v, "/kv_memory_gib", json!(0.3)), "workload.classes[0].max_tokens");
    assert!(e.message.contains("3148") && e.message.contains("2457"), "{e}");
    check_preset(
        |v| {
            set(v, "/workload/classes/0/n", json!(4));
            set(v, "/scheduler/max_num_seqs", json!(2));
        },
        "workload.classes[0].n",
    );
    check_preset(
        |v| set(v, "/workload/classes/0/prompt_tokens", json!({ "mean": 9000, "p99": 9500 })),
        "workload.classes[0].prompt_tokens",
    );
    check_preset(|v| set(v, "/scheduler/max_num_batched_tokens", json!(512)), "scheduler.max_num_batched_tokens");
    check_preset(
        |v| {
            set(v, "/allocator/reserve", json!("max_model_len"));
            set(v, "/scheduler/max_model_len", json!(100_000));
        },
        "scheduler.max_model_len",
    );
    check_preset(
        |v| {
            set(v, "/kv_memory_gib", json!(0.01));
            set(v, "/allocator", json!({ "kind": "paged", "block_size": 256 }));
        },
        "kv_memory_gib",
    );
}

#[test]
fn preset_schema_is_checked() {
    check_preset(|v| set(v, "/schema", json!("kvlab/preset@2")), "schema");
}

#[test]
fn mission_unknown_fields_are_named() {
    check_mission(|v| set(v, "/colour", json!(1)), "colour");
    check_mission(|v| set(v, "/goals/0/colour", json!(1)), "goals[0].colour");
    check_mission(|v| set(v, "/preset/colour", json!(1)), "preset.colour");
    check_mission(|v| set(v, "/preset/scheduler/colour", json!(1)), "preset.scheduler.colour");
}

#[test]
fn mission_wrong_types_are_named() {
    check_mission(|v| set(v, "/number", json!("one")), "number");
    check_mission(|v| set(v, "/goals/0/value", json!("high")), "goals[0].value");
    check_mission(|v| set(v, "/goals/0/stars", json!(1.5)), "goals[0].stars");
    check_mission(|v| set(v, "/goals/0/comparison", json!("=>")), "goals[0].comparison");
    check_mission(|v| set(v, "/goals/1", json!(["latency_ms.ttft_p95", "<=", 1000, 2, "l", "e"])), "goals[1]");
    check_mission(|v| set(v, "/knobs", json!("allocator")), "knobs");
    check_mission(|v| set(v, "/preset/kv_memory_gib", json!("ten")), "preset.kv_memory_gib");
    check_mission(|v| set(v, "/preset/scheduler", json!([64])), "preset.scheduler");
    check_mission(|v| set(v, "/preset/model", json!("gpt-5")), "preset.model");
}

#[test]
fn mission_missing_fields_are_named() {
    check_mission(|v| remove(v, "/schema"), "schema");
    check_mission(|v| remove(v, "/fix"), "fix");
    check_mission(|v| remove(v, "/goals/0/label"), "goals[0].label");
    check_mission(|v| remove(v, "/preset/schema"), "preset.schema");
}

#[test]
fn mission_out_of_range_values_are_named() {
    check_mission(|v| set(v, "/number", json!(0)), "number");
    check_mission(|v| set(v, "/goals/0/stars", json!(4)), "goals[0].stars");
    check_mission(|v| set(v, "/goals/0/label", json!("  ")), "goals[0].label");
    check_mission(|v| set(v, "/id", json!("Mission One")), "id");
    check_mission(|v| set(v, "/title", json!("")), "title");
    check_mission(|v| set(v, "/hints", json!(vec!["hint"; 11])), "hints");
    check_mission(|v| set(v, "/schema", json!("kvlab/mission@2")), "schema");
    check_mission(|v| set(v, "/preset/schema", json!("kvlab/preset@2")), "preset.schema");
    let e = check_mission(|v| set(v, "/preset/scheduler/max_num_seqs", json!(0)), "preset.scheduler.max_num_seqs");
    assert!(e.message.contains("1 to 4096"), "{e}");
}

#[test]
fn mission_impossible_preset_is_named_under_preset() {
    check_mission(|v| set(v, "/preset/kv_memory_gib", json!(0.3)), "preset.workload.classes[0].max_tokens");
}

#[test]
fn mission_goals_metrics_and_tiers_are_checked() {
    let e = check_mission(|v| set(v, "/goals/0/metric", json!("ttft")), "goals[0].metric");
    assert!(e.message.contains("latency_ms.ttft_p95"), "{e}");
    check_mission(|v| set(v, "/goals/2/metric", json!("config.kv_dtype")), "goals[2].metric");
    check_mission(|v| set(v, "/goals/2/metric", json!("config.scheduler.colour")), "goals[2].metric");
    check_mission(|v| set(v, "/goals/2/metric", json!("config.workload.classes[*].n")), "goals[2].metric");
    let e = check_mission(|v| set(v, "/goals/2/stars", json!(2)), "goals");
    assert!(e.message.contains("\"stars\": 3"), "{e}");
    check_mission(|v| set(v, "/goals", json!([])), "goals");
}

#[test]
fn mission_knobs_are_checked() {
    check_mission(|v| set(v, "/knobs/0", json!("allocator.colour")), "knobs[0]");
    check_mission(|v| set(v, "/knobs/0", json!("allocator..kind")), "knobs[0]");
    let e = check_mission(|v| set(v, "/knobs/0", json!("allocator.kind")), "knobs[0]");
    assert!(e.message.contains("\"allocator\""), "{e}");
    check_mission(|v| set(v, "/knobs/1", json!("allocator")), "knobs[1]");
    check_mission(|v| set(v, "/knobs", json!([])), "knobs");
}

#[test]
fn mission_fix_is_checked_as_a_patch() {
    let e = check_mission(|v| set(v, "/fix", json!({ "seed": 2 })), "fix.seed");
    assert!(e.message.contains("allocator, kv_memory_gib"), "{e}");
    check_mission(|v| set(v, "/fix", json!({ "kv_memory_gib": -1 })), "fix.kv_memory_gib");
    check_mission(|v| set(v, "/fix", json!({ "kv_memory_gib": null })), "fix.kv_memory_gib");
    check_mission(
        |v| set(v, "/fix", json!({ "allocator": { "kind": "paged", "block_size": 0 } })),
        "fix.allocator.block_size",
    );
    check_mission(|v| set(v, "/fix", json!({ "scheduler": { "max_num_seqs": 0 } })), "fix.scheduler.max_num_seqs");
    check_mission(|v| set(v, "/fix", json!({ "scheduler": [1] })), "fix.scheduler");
    check_mission(|v| set(v, "/fix", json!({})), "fix");
    check_mission(|v| set(v, "/fix", json!([])), "fix");
    // Switching kinds through a knob that names only a field is refused at the object.
    check_mission(
        |v| {
            set(v, "/knobs", json!(["allocator.fit"]));
            set(v, "/fix", json!({ "allocator": { "kind": "paged" } }));
        },
        "fix.allocator",
    );
}

#[test]
fn learner_patches_are_checked_with_preset_paths() {
    let m = parse_mission(&repo_text("assets/missions/m2-block-size.json")).expect("valid");
    let field = |patch: Value| m.apply_patch(&patch).unwrap_err().field;
    assert_eq!(field(json!({ "allocator": { "block_size": 0 } })), "allocator.block_size");
    assert_eq!(field(json!({ "allocator": { "block_size": "16" } })), "allocator.block_size");
    assert_eq!(field(json!({ "scheduler": { "max_num_seqs": 0 } })), "scheduler.max_num_seqs");
    assert_eq!(field(json!({ "kv_memory_gib": 20 })), "kv_memory_gib");
    assert_eq!(field(json!({ "workload": { "classes": [] } })), "workload.classes");
    assert_eq!(field(json!({ "allocator": { "kind": "contiguous" } })), "allocator");
    assert_eq!(field(json!(7)), "");
    assert!(m.apply_patch(&json!({ "allocator": { "block_size": 32 }, "title": "try 32" })).is_ok());
}

#[test]
fn mission_index_errors_are_named() {
    let base = value("assets/missions/index.json");
    let err = |edit: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        edit(&mut v);
        parse_mission_index(&v.to_string()).unwrap_err().field
    };
    assert_eq!(err(&|v| set(v, "/missions/1/id", json!("m1-paging"))), "missions[1].id");
    assert_eq!(err(&|v| set(v, "/missions/1/number", json!(1))), "missions[1].number");
    assert_eq!(err(&|v| set(v, "/missions/0/file", json!("../secret.json"))), "missions[0].file");
    assert_eq!(err(&|v| set(v, "/missions/0/colour", json!(1))), "missions[0].colour");
    assert_eq!(err(&|v| set(v, "/schema", json!("kvlab/index"))), "schema");
}

#[test]
fn not_json_and_not_an_object_say_so() {
    for text in ["", "{", "{\"schema\": ", "nul", "[1"] {
        let e = parse_mission(text).unwrap_err();
        assert!(e.message.starts_with("not valid JSON"), "{text:?}: {e}");
    }
    for text in ["5", "[]", "\"kvlab/mission@1\"", "null"] {
        let e = parse_mission(text).unwrap_err();
        assert!(e.field.is_empty() && e.message.contains("a mission is a JSON object"), "{text:?}: {e}");
    }
}

/// The ```json blocks of docs/SCHEMA.md: whole files by their schema; field examples (which
/// start with a field name) as a preset of just that field.
#[test]
fn schema_doc_json_examples_validate() {
    let doc = repo_text("docs/SCHEMA.md");
    let mut checked = 0;
    for block in doc.split("```json\n").skip(1) {
        let block = block.split_once("```").expect("closed block").0.trim();
        let v: Value = if block.starts_with('{') {
            serde_json::from_str(block).unwrap_or_else(|e| panic!("docs/SCHEMA.md block is not JSON ({e}):\n{block}"))
        } else {
            let text = format!("{{ \"schema\": \"kvlab/preset@1\", {block} }}");
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("docs/SCHEMA.md field example is not JSON ({e}):\n{block}"))
        };
        let text = v.to_string();
        let result = match v["schema"].as_str() {
            Some("kvlab/preset@1") => parse_preset(&text).map(drop),
            Some("kvlab/mission@1") => parse_mission(&text).map(drop),
            Some("kvlab/missions-index@1") => parse_mission_index(&text).map(drop),
            other => panic!("docs/SCHEMA.md block with schema {other:?}:\n{block}"),
        };
        if let Err(e) = result {
            panic!("docs/SCHEMA.md example does not validate: {e}\n{block}");
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} examples found; the splitter may have broken");
}

#[test]
fn schema_doc_names_every_field_and_metric() {
    let doc = repo_text("docs/SCHEMA.md");
    for (path, _) in PRESET_PATHS {
        assert!(doc.contains(&format!("`{path}`")), "docs/SCHEMA.md does not document `{path}`");
    }
    for (metric, _) in REPORT_METRICS {
        assert!(doc.contains(&format!("| `{metric}` |")), "docs/SCHEMA.md does not list the metric `{metric}`");
    }
}

/// Every metric a goal may name exists in the report as a number: the host tier's (`offload.`)
/// in a run with one, a fleet's (`fleet.`) in a run of several replicas, every other in any run.
#[test]
fn report_metrics_exist_in_the_report() {
    let report_of = |text: &str| {
        let mut config = parse_preset(text).expect("valid");
        config.duration_s = 5.0;
        serde_json::to_value(kvlab::engine::fleet::run_to_end(config).expect("valid")).expect("serializes")
    };
    let plain = report_of(&repo_text("assets/presets/paged-default.json"));
    let tiered = report_of(&repo_text("docs/examples/host-tier.json"));
    let fleet = report_of(&repo_text("docs/examples/fleet-prefix.json"));
    for (metric, _) in REPORT_METRICS {
        let report = match metric.split('.').next() {
            Some("offload") => &tiered,
            Some("fleet") => &fleet,
            _ => &plain,
        };
        let v = metric.split('.').try_fold(report, |v, k| v.get(k));
        assert!(v.is_some_and(Value::is_number), "report has no number at {metric}");
    }
}

/// Every number field given text, a negative or a huge number is refused with its own path and in
/// plain words: no Rust type names (`f64`, `u32`), no "invalid type", no 309-digit numbers.
#[test]
fn wrong_numbers_are_refused_in_plain_words_at_their_path() {
    let base: Value = serde_json::from_str(&repo_text("assets/presets/bursty.json")).unwrap();
    let mut checked = 0;
    for (path, kind) in PRESET_PATHS {
        if format!("{kind:?}") != "Number" {
            continue;
        }
        let pointer = format!("/{}", path.replace("[]", ".0").replace('.', "/"));
        for bad in [json!("lots"), json!(-16), json!(1e308), json!(true)] {
            let mut v = base.clone();
            if v.pointer(&pointer).is_none() {
                continue; // a field of the other allocator, or one the preset leaves out
            }
            set(&mut v, &pointer, bad.clone());
            // A few fields take a negative or huge number only to refuse it later; all refuse these.
            let Err(e) = parse_preset(&v.to_string()) else { continue };
            let shown = path.replace("[]", "[0]");
            // At the field itself, or at its object with the field named in the message.
            let last = shown.rsplit('.').next().unwrap_or(&shown);
            let named = e.field.starts_with(&shown) || (shown.starts_with(&e.field) && e.message.contains(last));
            assert!(named, "{path} = {bad}: error at `{}`: {e}", e.field);
            for rust in ["invalid type", "invalid value", "f64", "u32", "u64", "u16"] {
                assert!(!e.message.contains(rust), "{path} = {bad}: `{rust}` in {e}");
            }
            assert!(e.message.len() < 300, "{path} = {bad}: {e}");
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked} cases");
}

/// Text where a whole number with a fixed range belongs names that range, not the type's: 1 to
/// 4,096 sequences, not "0 to 4,294,967,295".
#[test]
fn a_type_error_names_the_field_s_own_range() {
    let e = check_preset(|v| set(v, "/scheduler/max_num_seqs", json!("lots")), "scheduler.max_num_seqs");
    assert!(e.message.contains("a whole number from 1 to 4,096") && !e.message.contains("4,294,967,295"), "{e}");
    let e = check_preset(|v| set(v, "/scheduler/max_model_len", json!(-3)), "scheduler.max_model_len");
    assert!(e.message.contains("a whole number from 2 to 1,048,576"), "{e}");
    // The range check itself says the same range.
    let e = check_preset(|v| set(v, "/scheduler/max_num_seqs", json!(5000)), "scheduler.max_num_seqs");
    assert!(e.message.contains("from 1 to 4096"), "{e}");
}
