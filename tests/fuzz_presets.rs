//! Fuzzing at scale: random accepted presets (`fuzz_gen`) covering every knob (both allocators,
//! both vLLM schedulers, every preemption mode, chunked prefill, prefix caching, n > 1, bursts, CSV traces, custom models,
//! FP8, the shipped calibrations) run with the invariant checker after every step, and must
//! never panic, never break an invariant and stay within the stated bounds
//! (`kvlab::engine::bounds`): steps, series points, requests and memory-map cells.
//!
//! A case is its whole preset JSON. A failure prints the case's seed, the preset and one line that
//! replays exactly it:
//! `KVLAB_FUZZ_PRESET='<json>' cargo test --release --test fuzz_presets replay -- --nocapture`
//! (or `KVLAB_FUZZ_PRESET_FILE=<path>`, the file every failure is also written to).
//! CI runs `CI_CASES` small cases; `scripts/soak.sh N [SEED]` runs any number in release mode.
#![cfg(not(target_arch = "wasm32"))]

mod common;
mod fuzz_gen;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fuzz_gen::{accepted_case, Budget, CI_BUDGET, SOAK_BUDGET};
use kvlab::engine::alloc::splitmix64;
use kvlab::engine::bounds::{MAX_ARRIVALS, MAX_KV_CELLS, MAX_SERIES_POINTS, MAX_STEPS};
use kvlab::engine::{AllocatorConfig, PreemptionMode, Simulation};
use kvlab::formats::preset::parse_preset;
use serde_json::Value;

/// Cases `cargo test` runs.
const CI_CASES: u64 = 2_000;
/// The base seed of the CI run (fixed, so CI is repeatable; the soak takes its own).
const CI_SEED: u64 = 0x6b76_6c61_6200_0012;

/// Runs one preset with the invariant checker after every step and the bounds checked; Err says
/// what broke.
fn run_case(text: &str) -> Result<(u64, u64), String> {
    let config = parse_preset(text).map_err(|e| format!("refused: {e}"))?;
    let b = config.run_bounds();
    // The map leaves out v1's null block; the bounds count every block of the pool.
    let reserved = config.reserved_blocks();
    let mut sim = Simulation::new(config).map_err(|e| format!("Simulation::new refused an accepted preset: {e}"))?;
    sim.check_invariants().map_err(|e| format!("invariant broken before the first step: {e}"))?;
    let cells = sim.memory_map().cells.len() as u64;
    if cells + reserved != b.kv_cells || cells > MAX_KV_CELLS {
        return Err(format!("memory map has {cells} cells; the bounds say {}", b.kv_cells));
    }
    // Every call advances time by at least one shortest step, or admits, rejects or preempts.
    let call_limit = 4 * (b.max_steps + sim.requests().len() as u64 + 1) + 1_000;
    let mut calls = 0u64;
    while sim.step() {
        calls += 1;
        if let Err(e) = sim.check_invariants() {
            return Err(format!("invariant broken at step {} (t = {} µs): {e}", sim.steps(), sim.now_us()));
        }
        if calls > call_limit {
            return Err(format!("no progress: {calls} calls to step() at t = {} µs", sim.now_us()));
        }
    }
    let report = sim.report();
    let r = &report.requests;
    if r.finished + r.running_at_end + r.waiting_at_end + r.swapped_at_end + r.rejected != r.arrived {
        return Err(format!("requests do not add up: {r:?}"));
    }
    let arrived = u64::from(r.arrived);
    let (steps, points) = (sim.steps(), sim.series().len() as u64);
    if steps > b.max_steps || steps > MAX_STEPS {
        return Err(format!("{steps} steps; the bound is {}", b.max_steps));
    }
    if points > (b.max_steps + arrived + 2).min(MAX_SERIES_POINTS) {
        return Err(format!("{points} series points; the bound is {} + {arrived} + 2", b.max_steps));
    }
    if arrived > MAX_ARRIVALS || sim.requests().len() as u64 > MAX_ARRIVALS {
        return Err(format!("{arrived} requests; the bound is {MAX_ARRIVALS}"));
    }
    if sim.now_us() < sim.duration_us() {
        return Err(format!("stopped at {} µs of {}", sim.now_us(), sim.duration_us()));
    }
    Ok((steps, arrived))
}

/// A single quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs a case, turning a panic into an error that says so.
fn run_guarded(text: &str) -> Result<(u64, u64), String> {
    match catch_unwind(AssertUnwindSafe(|| run_case(text))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("PANIC: {msg}"))
        }
    }
}

/// The failure report: seed, error, the preset, its file, and the line that replays it.
fn failure_report(seed: u64, text: &str, err: &str) -> String {
    let dir = common::repo_path("target/fuzz-failures");
    let path = dir.join(format!("{seed:016x}.json"));
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)).is_ok();
    format!(
        "case seed {seed:#018x}: {err}\n  preset: {text}\n  replay: KVLAB_FUZZ_PRESET={} cargo test --release --test fuzz_presets replay -- --nocapture{}",
        shell_quote(text),
        if saved { format!("\n  or:     KVLAB_FUZZ_PRESET_FILE={} cargo test --release --test fuzz_presets replay", path.display()) } else { String::new() }
    )
}

/// What a run of many cases found.
#[derive(Default)]
struct Tally {
    cases: AtomicU64,
    refused_draws: AtomicU64,
    steps: AtomicU64,
    arrivals: AtomicU64,
    panics: AtomicU64,
    broken: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Knob → accepted cases that turn it.
    coverage: Mutex<BTreeMap<&'static str, u64>>,
}

/// The knobs an accepted preset turns, for the coverage check.
fn knobs(text: &str) -> Vec<&'static str> {
    let Ok(c) = parse_preset(text) else { return Vec::new() };
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let mut k = Vec::new();
    match c.allocator {
        AllocatorConfig::Paged { prefix_caching, .. } => {
            k.push("paged");
            k.push(if c.paged_v1() { "engine:v1" } else { "engine:v0" });
            if prefix_caching {
                k.push("prefix_caching");
            }
        }
        AllocatorConfig::Contiguous { .. } => k.push("contiguous"),
    }
    k.push(match c.scheduler.preemption {
        PreemptionMode::Recompute => "recompute",
        PreemptionMode::Swap => "swap",
    });
    if c.scheduler.chunked_prefill {
        k.push("chunked_prefill");
    }
    if c.workload.classes.iter().any(|cl| cl.n > 1)
        || v["workload"]["arrival"]["csv"].as_str().is_some_and(|s| s.contains(",2\n") || s.contains(",4\n"))
    {
        k.push("n>1");
    }
    match &c.workload.arrival {
        kvlab::engine::workload::Arrival::Poisson { bursts, .. } if !bursts.is_empty() => k.push("bursts"),
        kvlab::engine::workload::Arrival::Trace { .. } => k.push("trace"),
        _ => {}
    }
    if v["model"].is_object() {
        k.push("custom_model");
    }
    if v["kv_dtype"] == "fp8" {
        k.push("fp8");
    }
    match v["calibration"].as_str() {
        Some("host-xeon-2core") => k.push("calibration:host-xeon-2core"),
        Some("cuda-nvidia-h200") => k.push("calibration:cuda-nvidia-h200"),
        _ => {}
    }
    k
}

/// Runs `cases` cases from `base_seed` on every core; the tally of what they found.
fn run_many(cases: u64, base_seed: u64, budget: Budget, progress: bool) -> Tally {
    let tally = Tally::default();
    let next = AtomicU64::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cases {
                    break;
                }
                let seed = splitmix64(base_seed.wrapping_add(i));
                let (text, refused) = accepted_case(seed, budget);
                tally.refused_draws.fetch_add(refused, Ordering::Relaxed);
                let result = run_guarded(&text);
                if let Ok((steps, arrived)) = result {
                    tally.steps.fetch_add(steps, Ordering::Relaxed);
                    tally.arrivals.fetch_add(arrived, Ordering::Relaxed);
                }
                if let Err(e) = result {
                    let counter = if e.starts_with("PANIC") { &tally.panics } else { &tally.broken };
                    counter.fetch_add(1, Ordering::Relaxed);
                    let report = failure_report(seed, &text, &e);
                    eprintln!("{report}");
                    if let Ok(mut f) = tally.failures.lock() {
                        f.push(report);
                    }
                }
                if let Ok(mut cov) = tally.coverage.lock() {
                    for k in knobs(&text) {
                        *cov.entry(k).or_default() += 1;
                    }
                }
                let done = tally.cases.fetch_add(1, Ordering::Relaxed) + 1;
                if progress && done % 10_000 == 0 {
                    eprintln!("{done} cases");
                }
            });
        }
    });
    tally
}

fn summary(t: &Tally) -> String {
    format!(
        "{} cases ({} drawn presets refused by validation on the way; {} steps, {} requests in all), {} panics, {} invariant or bound breaks; coverage {:?}",
        t.cases.load(Ordering::Relaxed),
        t.refused_draws.load(Ordering::Relaxed),
        t.steps.load(Ordering::Relaxed),
        t.arrivals.load(Ordering::Relaxed),
        t.panics.load(Ordering::Relaxed),
        t.broken.load(Ordering::Relaxed),
        t.coverage.lock().map(|c| c.clone()).unwrap_or_default()
    )
}

#[test]
fn random_accepted_presets_never_panic_keep_invariants_and_stay_in_bounds() {
    #[allow(clippy::disallowed_methods)] // the wall clock times the test run, never the engine
    let start = std::time::Instant::now();
    let t = run_many(CI_CASES, CI_SEED, CI_BUDGET, false);
    println!("{} in {:.1} s", summary(&t), start.elapsed().as_secs_f64());
    let failures = t.failures.lock().map(|f| f.join("\n")).unwrap_or_default();
    assert!(failures.is_empty(), "{failures}");
    assert_eq!(t.cases.load(Ordering::Relaxed), CI_CASES);
    let cov = t.coverage.lock().map(|c| c.clone()).unwrap_or_default();
    for knob in [
        "paged",
        "engine:v1",
        "engine:v0",
        "contiguous",
        "prefix_caching",
        "recompute",
        "swap",
        "chunked_prefill",
        "n>1",
        "bursts",
        "trace",
        "custom_model",
        "fp8",
        "calibration:host-xeon-2core",
        "calibration:cuda-nvidia-h200",
    ] {
        assert!(cov.get(knob).copied().unwrap_or(0) >= 20, "knob {knob} is turned in too few cases: {cov:?}");
    }
}

/// The soak: `KVLAB_FUZZ_CASES=N KVLAB_FUZZ_SEED=S [KVLAB_FUZZ_BUDGET=ci] cargo test --release
/// --test fuzz_presets soak -- --ignored --nocapture` (what `scripts/soak.sh N [SEED] [ci]` runs).
#[test]
#[ignore = "long; run by scripts/soak.sh"]
fn soak() {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let cases = env("KVLAB_FUZZ_CASES").unwrap_or(100_000);
    let seed = env("KVLAB_FUZZ_SEED").unwrap_or(1);
    // KVLAB_FUZZ_BUDGET=ci draws the small cases CI runs (about 25× faster than the soak's).
    let budget = if std::env::var("KVLAB_FUZZ_BUDGET").is_ok_and(|b| b == "ci") { CI_BUDGET } else { SOAK_BUDGET };
    #[allow(clippy::disallowed_methods)] // the wall clock times the test run, never the engine
    let start = std::time::Instant::now();
    let t = run_many(cases, seed, budget, true);
    println!("soak seed {seed}: {} in {:.1} s", summary(&t), start.elapsed().as_secs_f64());
    let failures = t.failures.lock().map(|f| f.len()).unwrap_or(0);
    assert_eq!(failures, 0, "{failures} failing cases (each printed above with its replay line)");
}

/// Replays one preset: `KVLAB_FUZZ_PRESET='<json>'` or `KVLAB_FUZZ_PRESET_FILE=<path>`. Without
/// either, replays the CI run's first case.
#[test]
fn replay() {
    let text = match (std::env::var("KVLAB_FUZZ_PRESET"), std::env::var("KVLAB_FUZZ_PRESET_FILE")) {
        (Ok(t), _) => t,
        (_, Ok(p)) => std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {p}: {e}")),
        _ => accepted_case(splitmix64(CI_SEED), CI_BUDGET).0,
    };
    if let Err(e) = run_case(&text) {
        panic!("{e}\n  preset: {text}");
    }
}

#[test]
fn one_seed_draws_one_preset() {
    assert_eq!(accepted_case(7, CI_BUDGET), accepted_case(7, CI_BUDGET));
    assert_ne!(accepted_case(7, CI_BUDGET).0, accepted_case(8, CI_BUDGET).0);
}
