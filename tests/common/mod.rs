//! Shared helpers for the integration tests: loading shipped presets and running a simulation
//! with the invariant checker called after every step.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use kvlab::engine::{Report, SimConfig, Simulation};
use kvlab::formats::preset::{parse_preset, parse_preset_dto, PresetDto};

/// One request of `prompt` tokens and one sample of `output`, for runs checked by hand.
pub fn request(id: u32, arrival_us: u64, prompt: u32, output: u32) -> kvlab::engine::workload::RequestSpec {
    kvlab::engine::workload::RequestSpec {
        id,
        arrival_us,
        class: 0,
        prompt_tokens: prompt,
        output_tokens: vec![output],
        max_tokens: output,
        shared_prefix_tokens: 0,
        tenant: 0,
        prompt_blocks: None,
    }
}

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every `.rs` file below `dir`, recursively.
/// `../shared/validation/model-configs/` (real Hugging Face config.json files), or None with a
/// printed note where it is absent (CI has `../shared`).
pub fn configs_dir() -> Option<PathBuf> {
    let dir = repo_path("../shared/validation/model-configs");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipped: {} is absent (CI has ../shared)", dir.display());
        None
    }
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

pub fn preset_text(id: &str) -> String {
    let path = repo_path(&format!("assets/presets/{id}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn preset(id: &str) -> SimConfig {
    parse_preset(&preset_text(id)).unwrap_or_else(|e| panic!("preset {id}: {e}"))
}

pub fn preset_dto(id: &str) -> PresetDto {
    parse_preset_dto(&preset_text(id)).unwrap_or_else(|e| panic!("preset {id}: {e}"))
}

/// Every shipped preset id, sorted.
pub fn shipped_presets() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(repo_path("assets/presets"))
        .expect("assets/presets exists")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? == "json" {
                Some(p.file_stem()?.to_string_lossy().into_owned())
            } else {
                None
            }
        })
        .collect();
    ids.sort();
    ids
}

/// Runs to the end, checking every invariant after every step; panics with the step on failure.
pub fn run_checked(config: SimConfig) -> (Simulation, Report) {
    run_checked_every(config, 1)
}

/// `run_checked` with the checker called after every `k`-th step and after the last one (for
/// pools so large that a check per step dominates the suite's time).
pub fn run_checked_every(config: SimConfig, k: u64) -> (Simulation, Report) {
    let mut sim = Simulation::new(config).expect("valid config");
    sim.check_invariants().expect("invariants hold before the first step");
    while sim.step() {
        if sim.steps() % k.max(1) == 0 {
            if let Err(e) = sim.check_invariants() {
                panic!("invariant broken at step {} (t = {} µs): {e}", sim.steps(), sim.now_us());
            }
        }
    }
    sim.check_invariants().unwrap_or_else(|e| panic!("invariant broken at the end: {e}"));
    let report = sim.report();
    (sim, report)
}

pub fn run(config: SimConfig) -> Report {
    Simulation::new(config).expect("valid config").run_to_end()
}

/// The lab's session on a shipped preset, as the page starts it.
pub fn session(id: &str) -> kvlab::session::dispatch::Session {
    use kvlab::session::{dispatch::Session, lab::Lab, presets, url_state::LabState, url_state::PageOptions};
    Session::new(Lab::new(LabState::new(presets::dto(id).unwrap()), PageOptions::default()).unwrap())
}

/// The session with a shipped mission started (from `paged-default`, as the hub starts one).
pub fn mission_session(id: &str) -> kvlab::session::dispatch::Session {
    let mut s = session("paged-default");
    s.apply(kvlab::session::command::Command::StartMission { id: id.into() }, 0.0).unwrap();
    s
}

/// One request of the Mooncake conversation trace sample (`../shared/traces/`): arrival, prompt
/// and output lengths, and the hash ids of its 512-token blocks.
pub struct MooncakeRow {
    pub t_ms: u64,
    pub input: u32,
    pub output: u32,
    pub ids: Vec<u32>,
}

/// The sample's requests that arrive before `window_ms`, read with serde_json alone (not the
/// project's trace reader).
pub fn mooncake_window(window_ms: u64) -> Vec<MooncakeRow> {
    const MOONCAKE: &str = "../shared/traces/mooncake_fast25_conversation.head2000.jsonl";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(MOONCAKE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            MooncakeRow {
                t_ms: v["timestamp"].as_u64().unwrap(),
                input: v["input_length"].as_u64().unwrap() as u32,
                output: v["output_length"].as_u64().unwrap() as u32,
                ids: v["hash_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect(),
            }
        })
        .filter(|r| r.t_ms < window_ms)
        .collect()
}
