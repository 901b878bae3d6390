//! Workloads as `vllm bench serve` runs them: fixed prompt and output lengths in a class
//! (`{ "fixed": N }`), every request that length, the draws after them where they were, and the
//! errors of a length given in neither or both forms naming the field.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::preset_text;
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;
use serde_json::{json, Value};

fn preset_with(edit: impl Fn(&mut Value)) -> Result<kvlab::engine::SimConfig, kvlab::engine::ConfigError> {
    let mut v: Value = serde_json::from_str(&preset_text("paged-default")).unwrap();
    edit(&mut v);
    parse_preset(&v.to_string())
}

fn lengths(prompt: Value, output: Value) -> impl Fn(&mut Value) {
    move |v: &mut Value| {
        v["workload"]["classes"][0]["prompt_tokens"] = prompt.clone();
        v["workload"]["classes"][0]["output_tokens"] = output.clone();
    }
}

#[test]
fn a_fixed_length_is_every_request_s_length() {
    let config = preset_with(lengths(json!({ "fixed": 512 }), json!({ "fixed": 128 }))).unwrap();
    let sim = Simulation::new(config).unwrap();
    assert!(sim.requests().len() > 100);
    for r in sim.requests() {
        assert_eq!((r.prompt_tokens, r.output_tokens.as_slice()), (512, &[128][..]), "request {}", r.id);
    }
}

#[test]
fn fixed_lengths_draw_like_any_other_length() {
    let fixed = Simulation::new(preset_with(lengths(json!({ "fixed": 300 }), json!({ "fixed": 7 }))).unwrap()).unwrap();
    let spread = Simulation::new(preset_with(|_| {}).unwrap()).unwrap();
    let as_mean = Simulation::new(
        preset_with(lengths(json!({ "mean": 300, "p99": 300 }), json!({ "mean": 7, "p99": 7 }))).unwrap(),
    )
    .unwrap();
    // The same arrivals as the shipped log-normal lengths: the lengths took the same draws.
    let arrivals = |s: &Simulation| s.requests().iter().map(|r| r.arrival_us).collect::<Vec<_>>();
    assert_eq!(arrivals(&fixed), arrivals(&spread));
    assert_eq!(fixed.requests(), as_mean.requests());
    let (mut a, mut b) = (fixed, as_mean);
    assert_eq!(a.run_to_end(), b.run_to_end());
}

#[test]
fn a_length_in_neither_or_both_forms_names_the_field() {
    let field = |prompt: Value| preset_with(lengths(prompt, json!({ "fixed": 10 }))).unwrap_err();
    let both = field(json!({ "fixed": 10, "mean": 10, "p99": 20 }));
    assert_eq!(both.field, "workload.classes[0].prompt_tokens");
    assert!(both.message.contains("not both"), "{both}");
    assert_eq!(field(json!({ "fixed": 0 })).field, "workload.classes[0].prompt_tokens.fixed");
    assert_eq!(field(json!({ "mean": 10 })).field, "workload.classes[0].prompt_tokens.p99");
    assert_eq!(field(json!({ "p99": 10 })).field, "workload.classes[0].prompt_tokens.mean");
    let none = field(json!({}));
    assert!(none.message.contains("fixed") && none.message.contains("mean"), "{none}");
    let unknown = field(json!({ "fixd": 10 }));
    assert!(unknown.field.starts_with("workload.classes[0].prompt_tokens"), "{unknown}");
    // A fixed prompt too long for the model is refused like a mean one.
    let long = field(json!({ "fixed": 1_000_000 }));
    assert_eq!(long.field, "workload.classes[0].prompt_tokens", "{long}");
    let out = preset_with(lengths(json!({ "fixed": 10 }), json!({ "fixed": 0 }))).unwrap_err();
    assert_eq!(out.field, "workload.classes[0].output_tokens.fixed");
}
