//! Determinism in wasm: every shipped preset (assets/presets/, as the page embeds them) and 200
//! random accepted presets (the fuzzer's generator, `fuzz_gen`) run to the end in the browser
//! give the same run digests as the native engine, pinned in tests/golden/preset_digests.json
//! and tests/golden/random_digests.json (tests/determinism.rs checks the same files natively).
//! The page's copies of the shipped calibrations (without their raw samples, `build.rs`) read as
//! the whole files do.
#![cfg(target_arch = "wasm32")]

mod fuzz_gen;

use std::collections::BTreeMap;

use kvlab::engine::Simulation;
use kvlab::formats::calibration::{parse_calibration, shipped_calibration};
use kvlab::formats::preset::parse_preset;
use kvlab::formats::report::digest;
use kvlab::session::presets;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const PINNED: &str = include_str!("golden/preset_digests.json");
const PINNED_RANDOM: &str = include_str!("golden/random_digests.json");
/// The whole shipped calibration files, samples included, as the native build embeds them.
const WHOLE_CALIBRATIONS: [(&str, &str); 2] = [
    ("cuda-nvidia-h200", include_str!("../assets/calibration/cuda-nvidia-h200.json")),
    ("host-xeon-2core", include_str!("../assets/calibration/host-xeon-2core.json")),
];

#[wasm_bindgen_test]
fn the_pages_calibrations_are_the_shipped_files_less_their_samples() {
    assert_eq!(
        kvlab::shipped::names(kvlab::shipped::CALIBRATIONS),
        WHOLE_CALIBRATIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
    for (name, text) in WHOLE_CALIBRATIONS {
        let mut whole = parse_calibration(text).unwrap();
        assert!(!whole.measurements.is_null(), "{name}: the whole file has its samples");
        let page = shipped_calibration(name).unwrap();
        assert!(page.measurements.is_null(), "{name}: the page's copy keeps its samples");
        whole.measurements = serde_json::Value::Null;
        assert_eq!(page, whole, "{name}");
        assert_eq!(page.step_time(), whole.step_time(), "{name}");
    }
}

#[wasm_bindgen_test]
fn shipped_presets_give_the_pinned_digests_in_wasm() {
    let pinned: BTreeMap<String, String> = serde_json::from_str(PINNED).expect("the golden file is JSON");
    let shipped: Vec<&str> = presets::ids();
    let mut ids: Vec<String> = shipped.iter().map(|s| s.to_string()).collect();
    ids.sort();
    assert_eq!(
        ids,
        pinned.keys().cloned().collect::<Vec<_>>(),
        "the page's presets and the pinned digests list different presets"
    );
    for (id, json) in presets::SHIPPED {
        let mut sim = Simulation::new(parse_preset(json).unwrap()).unwrap();
        sim.run_to_end();
        let digest = format!("{:016x}", digest(&sim));
        assert_eq!(&digest, &pinned[*id], "{id}: the wasm run diverged from the native one");
    }
}

#[wasm_bindgen_test]
fn random_presets_give_the_native_digests_in_wasm() {
    let pinned: BTreeMap<String, String> = serde_json::from_str(PINNED_RANDOM).expect("the golden file is JSON");
    assert_eq!(pinned.len() as u64, fuzz_gen::DIGEST_CASES);
    let mut diverged = Vec::new();
    for i in 0..fuzz_gen::DIGEST_CASES {
        let (key, text) = fuzz_gen::digest_case(i);
        let mut sim = Simulation::new(parse_preset(&text).unwrap()).unwrap();
        sim.run_to_end();
        let digest = format!("{:016x}", digest(&sim));
        if digest != pinned[&key] {
            diverged.push(format!("case {key}: wasm {digest}, native {}\n  preset: {text}", pinned[&key]));
        }
    }
    assert!(diverged.is_empty(), "wasm and native runs diverged:\n{}", diverged.join("\n"));
}
