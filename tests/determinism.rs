//! Determinism: one seed → one result, bit for bit. Each shipped preset's run digest is pinned in
//! tests/golden/preset_digests.json, and 200 random accepted presets' (`fuzz_gen`) in
//! tests/golden/random_digests.json; the browser tests check the same digests in wasm.
//! Regenerate deliberately with `KVLAB_BLESS=1 cargo test --test determinism`.
#![cfg(not(target_arch = "wasm32"))]

mod common;
mod fuzz_gen;

use std::collections::BTreeMap;

use common::{preset, repo_path, shipped_presets};
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;
use kvlab::formats::report::digest;

#[test]
fn two_identical_runs_do_not_diverge() {
    for id in shipped_presets() {
        let mut a = Simulation::new(preset(&id)).unwrap();
        let mut b = Simulation::new(preset(&id)).unwrap();
        let (ra, rb) = (a.run_to_end(), b.run_to_end());
        assert_eq!(a.series(), b.series(), "{id}: two identical runs diverged (series)");
        let (ja, jb) = (serde_json::to_string(&ra).unwrap(), serde_json::to_string(&rb).unwrap());
        assert_eq!(ja, jb, "{id}: two identical runs diverged (report)");
        assert_eq!(ra.kv.utilization_mean.to_bits(), rb.kv.utilization_mean.to_bits());
        assert_eq!(digest(&a), digest(&b));
    }
}

#[test]
fn stepping_and_running_to_a_time_agree() {
    let mut a = Simulation::new(preset("paged-default")).unwrap();
    let mut b = Simulation::new(preset("paged-default")).unwrap();
    a.run_until(20_000_000);
    while b.now_us() < 20_000_000 {
        b.step();
    }
    assert_eq!(a.series(), b.series());
    assert_eq!(a.memory_map(), b.memory_map());
}

#[test]
fn another_seed_gives_other_traffic() {
    let a = Simulation::new(preset("contiguous-default")).unwrap();
    let mut c = preset("contiguous-default");
    c.seed = 2;
    let b = Simulation::new(c).unwrap();
    assert_ne!(a.requests(), b.requests());
}

#[test]
fn shipped_preset_digests_are_pinned() {
    let actual: BTreeMap<String, String> = shipped_presets()
        .into_iter()
        .map(|id| {
            let mut sim = Simulation::new(preset(&id)).unwrap();
            sim.run_to_end();
            (id, format!("{:016x}", digest(&sim)))
        })
        .collect();
    check_pinned("tests/golden/preset_digests.json", actual, "a shipped preset's output changed");
}

/// Random accepted presets covering every knob (the fuzzer's generator): their digests are pinned
/// so the wasm build can be held to the same bits (`tests/web_digests.rs`).
#[test]
fn random_preset_digests_are_pinned() {
    let actual: BTreeMap<String, String> = (0..fuzz_gen::DIGEST_CASES)
        .map(|i| {
            let (key, text) = fuzz_gen::digest_case(i);
            let mut sim = Simulation::new(parse_preset(&text).unwrap()).unwrap();
            sim.run_to_end();
            (key, format!("{:016x}", digest(&sim)))
        })
        .collect();
    check_pinned("tests/golden/random_digests.json", actual, "a random preset's output changed");
}

fn check_pinned(file: &str, actual: BTreeMap<String, String>, what: &str) {
    let path = repo_path(file);
    if std::env::var_os("KVLAB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing; create it with KVLAB_BLESS=1", path.display()));
    let pinned: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
    assert_eq!(pinned, actual, "{what}; if intended, regenerate with KVLAB_BLESS=1 cargo test --test determinism");
}
