//! Fuzzing at scale: random accepted presets covering every knob (both allocators, every
//! preemption mode, chunked prefill, prefix caching, n > 1, bursts, CSV traces, custom models,
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

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kvlab::engine::alloc::splitmix64;
use kvlab::engine::bounds::{MAX_ARRIVALS, MAX_KV_CELLS, MAX_SERIES_POINTS, MAX_STEPS};
use kvlab::engine::{AllocatorConfig, PreemptionMode, Simulation};
use kvlab::formats::preset::parse_preset;
use serde_json::{json, Value};

/// Cases `cargo test` runs.
const CI_CASES: u64 = 2_000;
/// The base seed of the CI run (fixed, so CI is repeatable; the soak takes its own).
const CI_SEED: u64 = 0x6b76_6c61_6200_0012;

/// How large a case may be: a drawn preset above any of these is drawn again (it is accepted,
/// just too slow for this run). CI keeps cases small; the soak allows larger ones.
#[derive(Clone, Copy, Debug)]
struct Budget {
    kv_cells: u64,
    max_steps: u64,
    requests: u64,
}

const CI_BUDGET: Budget = Budget { kv_cells: 20_000, max_steps: 10_000, requests: 400 };
const SOAK_BUDGET: Budget = Budget { kv_cells: 40_000, max_steps: 30_000, requests: 1_500 };

/// splitmix64 draws from one case seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }
    fn below(&mut self, k: u64) -> u64 {
        self.next() % k.max(1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// A number in [lo, hi) with two decimals.
    fn real(&mut self, lo: f64, hi: f64) -> f64 {
        let x = lo + (hi - lo) * (self.below(1 << 20) as f64 / f64::from(1u32 << 20));
        (x * 100.0).round() / 100.0
    }
}

const MODELS: [&str; 5] = ["llama-3-8b", "llama-3-70b", "mistral-7b", "opt-13b", "llama-2-7b"];
const GPUS: [&str; 4] = ["a100-80gb", "h100-sxm", "h200", "l4"];
const CALIBRATIONS: [Option<&str>; 4] = [None, None, Some("host-xeon-2core"), Some("cuda-nvidia-h200")];

/// KV bytes per token of a model spec (JSON) at a dtype, as the engine counts them.
fn bytes_per_token(model: &Value, fp8: bool) -> u64 {
    let (layers, heads, dim) = match model {
        Value::String(id) => match id.as_str() {
            "llama-3-70b" => (80, 8, 128),
            "opt-13b" => (40, 40, 128),
            "llama-2-7b" => (32, 32, 128),
            _ => (32, 8, 128),
        },
        m => (
            m["layers"].as_u64().unwrap_or(1),
            m["kv_heads"].as_u64().unwrap_or(1),
            m["head_dim"].as_u64().unwrap_or(1),
        ),
    };
    2 * layers * heads * dim * if fp8 { 1 } else { 2 }
}

/// One random preset (not necessarily accepted) drawn from `seed`.
fn draw_preset(seed: u64) -> Value {
    let mut d = Draw(seed);
    let duration_s = d.pick(&[1.0, 1.5, 2.0, 3.0, 5.0, 8.0]);
    let model = if d.chance(35) {
        json!({
            "name": "fuzz",
            "layers": d.pick(&[1, 2, 4, 16, 32, 80]),
            "kv_heads": d.pick(&[1, 2, 8, 32]),
            "head_dim": d.pick(&[2, 16, 64, 128, 256]),
            "params_b": d.pick(&[0.01, 0.1, 1.0, 7.0, 70.0]),
        })
    } else {
        json!(d.pick(&MODELS))
    };
    let fp8 = d.chance(40);
    let bpt = bytes_per_token(&model, fp8);
    let paged = d.chance(60);
    let block_size: u64 = d.pick(&[1, 2, 4, 8, 16, 16, 32, 64, 128, 256]);
    let allocator = if paged {
        json!({ "kind": "paged", "block_size": block_size, "prefix_caching": d.chance(40) })
    } else {
        json!({
            "kind": "contiguous",
            "reserve": d.pick(&["prompt_plus_max_tokens", "max_model_len"]),
            "fit": d.pick(&["first_fit", "best_fit"]),
        })
    };
    // The pool as a number of tokens, turned into GiB of this model's tokens.
    let tokens: u64 = d.pick(&[256, 1_000, 3_000, 8_000, 20_000, 60_000]);
    let kv_memory_gib = ((tokens * bpt) as f64 / f64::from(1u32 << 30) * 1e4).ceil().max(100.0) / 1e4;
    let max_model_len: u64 = d.pick(&[64, 256, 1_024, 2_048, 4_096, 8_192]);
    let chunked = d.chance(40);
    let max_num_seqs: u64 = d.pick(&[1, 2, 4, 8, 32, 128, 256]);
    let scheduler = json!({
        "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": d.pick(&[16, 256, 1_024, 2_048, 8_192]),
        "preemption": d.pick(&["recompute", "swap"]),
        "swap_space_gib": d.pick(&[0.0, 0.001, 0.01, 0.1, 4.0]),
        "max_model_len": max_model_len,
        "chunked_prefill": chunked,
        "watermark": d.pick(&[0.0, 0.01, 0.05, 0.2]),
    });
    let workload = if d.chance(8) {
        let rows = d.below(40);
        let mut csv = String::from("arrival_s,prompt_tokens,output_tokens,n\n");
        for _ in 0..rows {
            let arrival = d.real(0.0, duration_s + 1.0);
            let prompt_max = d.pick(&[16, 500, 3_000]);
            let prompt = 1 + d.below(prompt_max);
            let output_max = d.pick(&[4, 200, 2_000]);
            let output = 1 + d.below(output_max);
            let n = d.pick(&[1, 1, 2, 4]);
            csv.push_str(&format!("{arrival},{prompt},{output},{n}\n"));
        }
        json!({ "arrival": { "kind": "trace", "csv": csv, "max_tokens": d.pick(&[1, 16, 256, 2_048]).min(max_model_len) } })
    } else {
        let rate = d.pick(&[0.0, 0.5, 2.0, 8.0, 30.0, 100.0]);
        let bursts: Vec<Value> = (0..d.pick(&[0, 0, 1, 2, 3]))
            .map(|_| {
                let start = d.real(0.0, duration_s);
                let end = d.real(start, duration_s);
                json!({ "start_s": start, "end_s": end.max(start), "rate_per_s": d.pick(&[0.0, 5.0, 50.0, 200.0]) })
            })
            .collect();
        let classes: Vec<Value> = (0..1 + d.below(3))
            .map(|i| {
                let prompt = d.pick(&[1.0, 8.0, 64.0, 300.0, 1_000.0, 3_000.0]);
                let output = d.pick(&[1.0, 16.0, 128.0, 500.0]);
                json!({
                    "name": format!("class{i}"),
                    "weight": d.pick(&[0.1, 1.0, 3.0, 10.0]),
                    "prompt_tokens": { "mean": prompt, "p99": prompt * d.pick(&[1.0, 1.5, 3.0, 10.0]) },
                    "output_tokens": { "mean": output, "p99": output * d.pick(&[1.0, 2.0, 5.0]) },
                    "max_tokens": d.pick(&[1, 16, 256, 2_048]),
                    "n": d.pick(&[1, 1, 1, 2, 4, 16]),
                    "shared_prefix_tokens": d.pick(&[0, 0, 16, 100, 1_000]),
                })
            })
            .collect();
        json!({ "arrival": { "kind": "poisson", "rate_per_s": rate, "bursts": bursts }, "classes": classes })
    };
    let mut preset = json!({
        "schema": "kvlab/preset@1",
        "id": format!("fuzz-{seed:016x}"),
        "seed": d.next(),
        "duration_s": duration_s,
        "model": model,
        "kv_dtype": if fp8 { "fp8" } else { "fp16" },
        "gpu": d.pick(&GPUS),
        "kv_memory_gib": kv_memory_gib,
        "allocator": allocator,
        "scheduler": scheduler,
        "workload": workload,
    });
    if let Some(c) = d.pick(&CALIBRATIONS) {
        preset["calibration"] = json!(c);
    }
    preset
}

/// The first accepted preset within `budget` drawn from `seed`'s stream, as JSON text, and how
/// many drawn presets were refused on the way.
fn accepted_case(seed: u64, budget: Budget) -> (String, u64) {
    let mut refused = 0;
    for attempt in 0u64.. {
        let text = draw_preset(splitmix64(seed ^ attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15))).to_string();
        match parse_preset(&text) {
            Ok(c) => {
                let b = c.run_bounds();
                if b.kv_cells <= budget.kv_cells
                    && b.max_steps <= budget.max_steps
                    && b.expected_requests <= budget.requests
                {
                    return (text, refused);
                }
            }
            Err(_) => refused += 1,
        }
    }
    unreachable!("the draw loop only ends by returning")
}

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
    if points > b.max_steps + arrived + 2 || points > MAX_SERIES_POINTS {
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
