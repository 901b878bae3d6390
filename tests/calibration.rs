#![cfg(not(target_arch = "wasm32"))]
//! Calibration: the host block pool reads exactly the bytes the block tables name, a host
//! calibration of a small preset is a well-formed file in which small blocks cost more than
//! large ones, malformed calibration files are rejected by field, and `--device cuda` fails
//! cleanly where there is no driver. No test asserts a duration.

use std::process::Command;

use kvlab::calibrate::backend::{kv_word, BlockPoolBackend, PoolGeometry, SimulatedPool};
use kvlab::calibrate::host::HostPool;
use kvlab::calibrate::trace::{paged_config, TraceReplayer};
use kvlab::calibrate::{calibrate, CalibrateOptions, Nominal};
use kvlab::formats::calibration::parse_calibration;
use kvlab::formats::preset::parse_preset;
use kvlab::formats::sniff::CALIBRATION_SCHEMA;

const BIN: &str = env!("CARGO_BIN_EXE_kvlab");

/// A small preset: 2 layers, 2 KV heads of 32 dims (64-byte planes), ~20k tokens of KV.
const SMALL_PRESET: &str = r#"{
  "schema": "kvlab/preset@1", "id": "calibration-small", "seed": 3, "duration_s": 3,
  "model": { "layers": 2, "kv_heads": 2, "head_dim": 32, "params_b": 0.05 },
  "kv_dtype": "fp16", "gpu": "h100-sxm", "kv_memory_gib": 0.01,
  "allocator": { "kind": "paged", "block_size": 16, "prefix_caching": false },
  "scheduler": { "max_num_seqs": 64, "max_num_batched_tokens": 4096, "preemption": "recompute",
                 "swap_space_gib": 0, "max_model_len": 2048 },
  "workload": { "arrival": { "kind": "poisson", "rate_per_s": 40 },
                "classes": [ { "name": "chat", "weight": 1,
                               "prompt_tokens": { "mean": 300, "p99": 900 },
                               "output_tokens": { "mean": 120, "p99": 500 },
                               "max_tokens": 1024, "n": 1, "shared_prefix_tokens": 0 } ] } }"#;

fn geometry() -> PoolGeometry {
    PoolGeometry { num_blocks: 64, block_size: 4, planes: 4, plane_bytes: 32 }
}

/// The checksum of the module docs, computed from one contiguous copy per sequence
/// (`copy[t]` = the token's words in order).
fn reference_checksum(copies: &[Vec<Vec<u64>>]) -> u64 {
    let mut acc = 0u64;
    for copy in copies {
        for (t, words) in copy.iter().enumerate() {
            let sum = words.iter().fold(0u64, |a, &w| a.wrapping_add(w));
            acc = acc.wrapping_add(sum.wrapping_mul(2 * t as u64 + 1));
        }
    }
    acc
}

#[test]
fn gather_reads_exactly_the_bytes_the_block_tables_name() {
    let g = geometry();
    let tw = g.token_words() as u32;
    let tables: Vec<Vec<u32>> = vec![vec![17, 3, 40], vec![5], vec![63, 0, 22, 9], vec![31, 30]];
    let tokens: Vec<u32> = vec![10, 4, 13, 5];
    let mut host = HostPool::new(g).expect("host pool");
    let mut sim = SimulatedPool::new(g, true);
    let mut copies: Vec<Vec<Vec<u64>>> = Vec::new();
    // Write every sequence's tokens in uneven chunks (never across a block boundary), keeping a
    // contiguous copy of what each logical token holds.
    let mut seed = 1000u64;
    for (table, &n) in tables.iter().zip(&tokens) {
        let mut copy = Vec::new();
        let mut t = 0;
        while t < n {
            let (block, offset) = (table[(t / g.block_size) as usize], t % g.block_size);
            let len = (1 + (seed as u32 % 3)).min(g.block_size - offset).min(n - t);
            host.write_tokens(block, offset, len, seed);
            sim.write_tokens(block, offset, len, seed);
            for i in 0..len {
                copy.push((0..tw).map(|k| kv_word(seed, i, k)).collect());
            }
            t += len;
            seed += 7;
        }
        copies.push(copy);
    }
    // Bytes outside the tables must not leak into a gather: write a block nobody names.
    host.write_tokens(50, 0, 4, 99);
    sim.write_tokens(50, 0, 4, 99);

    let slices: Vec<&[u32]> = tables.iter().map(Vec::as_slice).collect();
    let expected = reference_checksum(&copies);
    let paged = host.gather(&slices, &tokens);
    assert_eq!(paged.checksum, Some(expected), "host paged gather");
    assert_eq!(paged.bytes, 32 * g.token_bytes());
    assert_eq!(paged.runs, (3 + 1 + 4 + 2) * u64::from(g.planes));
    assert_eq!(sim.gather(&slices, &tokens).checksum, Some(expected), "simulated pool");
    host.stage_contiguous(&slices, &tokens);
    let contiguous = host.gather_contiguous();
    assert_eq!(contiguous.checksum, Some(expected), "host contiguous gather");
    assert_eq!(contiguous.runs, 4 * u64::from(g.planes));

    // Naming a different block (or the same blocks in another order) reads different bytes.
    let swapped: Vec<&[u32]> = vec![&[3, 17, 40], &[5], &[63, 0, 22, 9], &[31, 30]];
    assert_ne!(host.gather(&swapped, &tokens).checksum, Some(expected));
    let shorter = [9u32, 4, 13, 5];
    assert_ne!(host.gather(&slices, &shorter).checksum, Some(expected));
}

#[test]
fn replayed_trace_writes_what_the_reference_pool_expects() {
    let base = parse_preset(SMALL_PRESET).expect("preset");
    let config = paged_config(&base, 8, Some(1.5));
    let mut host_replay = TraceReplayer::new(config.clone()).expect("replay");
    let mut sim_replay = TraceReplayer::new(config).expect("replay");
    let g = kvlab::calibrate::layer_geometry(&base, host_replay.num_blocks(), 8);
    let mut host = HostPool::new(g).expect("host pool");
    let mut sim = SimulatedPool::new(g, true);
    let mut compared = 0;
    while let Some(a) = host_replay.next_step(&mut host) {
        let b = sim_replay.next_step(&mut sim).expect("same trace");
        assert_eq!((a.step, &a.tokens, &a.tables), (b.step, &b.tokens, &b.tables), "two replays diverged");
        if a.num_seqs() > 0 && a.step % 25 == 0 {
            let tables = a.table_slices();
            let (h, s) = (host.gather(&tables, &a.tokens), sim.gather(&tables, &a.tokens));
            assert_eq!(h.checksum, s.checksum, "step {}: host pool and reference disagree", a.step);
            assert_eq!(h.bytes, a.total_tokens() * g.token_bytes());
            compared += 1;
        }
    }
    assert!(compared > 3, "only {compared} steps compared");
    assert!(host_replay.total_written_tokens > 0);
}

fn small_options() -> CalibrateOptions {
    CalibrateOptions {
        config: parse_preset(SMALL_PRESET).expect("preset"),
        block_sizes: vec![1, 16, 64, 256],
        duration_s: None,
        samples: 8,
        reps: 7,
        name: "test-host".into(),
        date: "2026-01-02".into(),
        device: "host memory (test)".into(),
        gpu: None,
        nominal: Nominal::MeasuredPoolRead,
        device_report: None,
        copy_gb_s: None,
    }
}

#[test]
fn host_calibration_is_well_formed_and_reads_shorter_runs_at_smaller_blocks() {
    let opts = small_options();
    let mut make = |g| -> Result<Box<dyn BlockPoolBackend>, String> { Ok(Box::new(HostPool::new(g)?)) };
    let mut partial_sizes = Vec::new();
    let run = calibrate(&opts, &mut make, &mut |_| {}, &mut |p| {
        partial_sizes.push(p.calibration.paged_overhead.iter().map(|o| o.block_size).collect::<Vec<_>>())
    })
    .expect("calibration runs");
    // Results so far after each block size but the last (the final file follows).
    assert_eq!(partial_sizes, vec![vec![1], vec![1, 16], vec![1, 16, 64]]);
    let c = &run.calibration;
    assert_eq!(
        c.fixed_step_us,
        kvlab::engine::clock::DEFAULT_FIXED_STEP_US,
        "a gather does not measure a step's fixed cost"
    );
    assert_eq!(c.gpu, None);
    assert!(run.summary.contains("every paged and contiguous checksum equal to the reference"), "{}", run.summary);

    // Well-formed: it round-trips through the strict parser unchanged.
    let text = serde_json::to_string_pretty(c).expect("serializes");
    let parsed = parse_calibration(&text).expect("the file it writes parses");
    assert_eq!(&parsed, c);
    assert_eq!(c.schema, CALIBRATION_SCHEMA);
    assert_eq!((c.name.as_str(), c.date.as_str()), ("test-host", "2026-01-02"));
    assert!(c.bandwidth_efficiency > 0.0 && c.bandwidth_efficiency <= 1.5);
    assert!(c.fixed_step_us >= 0.0);
    let sizes: Vec<u32> = c.paged_overhead.iter().map(|p| p.block_size).collect();
    assert_eq!(sizes, vec![1, 16, 64, 256]);
    let m = &c.measurements;
    for key in ["nominal_gb_s", "effective_gb_s", "pool", "block_sizes", "batch_sizes", "samples"] {
        assert!(!m[key].is_null(), "measurements.{key} missing");
    }
    let samples = m["samples"].as_array().expect("samples");
    assert!(samples.len() >= 4 * 4, "{} samples", samples.len());
    assert!(samples.iter().all(|s| s["paged_us"].as_array().map(Vec::len) == Some(7)));

    // Measured figures are only checked to be figures (a busy machine may order them either way;
    // docs/CALIBRATION.md reports what they were); what the block size decides is the run length.
    assert!(c.paged_overhead.iter().all(|p| p.overhead.is_finite() && (-0.5..=20.0).contains(&p.overhead)));
    let runs = |bs: u32| run.figures.iter().find(|f| f.block_size == bs).expect("figures").paged_run_bytes;
    assert!(runs(1) < runs(16) && runs(16) < runs(256), "paged reads use longer runs as blocks grow");
}

fn valid_file() -> serde_json::Value {
    serde_json::json!({
        "schema": "kvlab/calibration@1", "name": "t", "device": "d", "method": "m", "date": "2026-01-01",
        "bandwidth_efficiency": 0.8, "fixed_step_us": 120.0,
        "paged_overhead": [
            { "block_size": 1, "overhead": 1.2 }, { "block_size": 16, "overhead": 0.2 },
            { "block_size": 64, "overhead": 0.1 }
        ],
        "measurements": { "anything": [1, 2, 3] }
    })
}

fn rejected(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = valid_file();
    edit(&mut v);
    parse_calibration(&v.to_string()).expect_err("should be rejected").to_string()
}

#[test]
fn malformed_calibration_files_are_rejected_naming_the_field() {
    assert!(parse_calibration(&valid_file().to_string()).is_ok());
    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("paged_overhead[2].overhead", Box::new(|v| v["paged_overhead"][2]["overhead"] = 50.0.into())),
        ("paged_overhead[1].block_size", Box::new(|v| v["paged_overhead"][1]["block_size"] = 1.into())),
        ("paged_overhead[0].block_size", Box::new(|v| v["paged_overhead"][0]["block_size"] = 512.into())),
        ("bandwidth_efficiency", Box::new(|v| v["bandwidth_efficiency"] = 0.0.into())),
        ("gpu", Box::new(|v| v["gpu"] = "h900".into())),
        ("bandwidth_efficiency", Box::new(|v| v["bandwidth_efficiency"] = 1.6.into())),
        ("fixed_step_us", Box::new(|v| v["fixed_step_us"] = (-1.0).into())),
        ("fixed_step_us", Box::new(|v| v["fixed_step_us"] = "fast".into())),
        ("schema", Box::new(|v| v["schema"] = "kvlab/preset@1".into())),
        ("paged_overhead", Box::new(|v| v["paged_overhead"] = serde_json::json!([]))),
        ("bandwidth", Box::new(|v| v["bandwidth"] = 1.into())),
        ("paged_overhead[1].slope", Box::new(|v| v["paged_overhead"][1]["slope"] = 1.into())),
    ];
    for (field, edit) in cases {
        let message = rejected(edit);
        assert!(message.contains(field), "expected the message to name {field}: {message}");
    }
    assert!(parse_calibration("{ not json").unwrap_err().to_string().contains("JSON"));
}

fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kvlab-calibration-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn run_with_a_calibration_file_uses_it_or_names_the_bad_field() {
    let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/presets/paged-default.json");
    let good = write_temp("good.json", &valid_file().to_string());
    let out = Command::new(BIN).args(["run", preset, "--calibration"]).arg(&good).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("step-time calibration: t"));

    let mut v = valid_file();
    v["paged_overhead"][2]["overhead"] = 50.0.into();
    let bad = write_temp("bad.json", &v.to_string());
    let out = Command::new(BIN).args(["run", preset, "--calibration"]).arg(&bad).output().expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("paged_overhead[2].overhead"), "{err}");
}

#[test]
fn shipped_calibrations_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/calibration");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("assets/calibration exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).expect("read");
            let c = parse_calibration(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(path.file_stem().and_then(|s| s.to_str()), Some(c.name.as_str()), "file name = name");
            n += 1;
        }
    }
    assert!(n >= 1, "ship at least one calibration");
}

#[test]
fn cuda_calibration_without_a_driver_fails_cleanly() {
    let out = Command::new(BIN)
        .args(["calibrate", "--device", "cuda", "--dry-run", "--block-sizes", "16", "--samples", "1", "--reps", "1"])
        .output()
        .expect("runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        // Only a gpu build on a machine with a driver gets here: then it must have measured.
        let gpu_build = cfg!(feature = "gpu");
        assert!(gpu_build, "a build without the gpu feature cannot calibrate on CUDA");
        assert!(stdout.contains("bandwidth_efficiency"), "{stdout}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "a clean error, not a crash: {stderr}");
    if cfg!(feature = "gpu") {
        assert!(stderr.contains("no CUDA driver found"), "{stderr}");
    } else {
        assert!(stderr.contains("--features gpu"), "{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A pool whose writes land one block off (block b's tokens go to block b ^ 1), while its reads
/// follow the tables: paged and contiguous reads agree with each other (they share the pool's
/// indexing), so only the reference computed from what was written can catch it.
struct MisplacedWrites(HostPool);

impl BlockPoolBackend for MisplacedWrites {
    fn geometry(&self) -> PoolGeometry {
        self.0.geometry()
    }
    fn label(&self) -> String {
        "misplaced".into()
    }
    fn write_tokens(&mut self, block: u32, offset: u32, n: u32, seed: u64) {
        let other = (block ^ 1).min(self.0.geometry().num_blocks - 1);
        self.0.write_tokens(other, offset, n, seed)
    }
    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> kvlab::calibrate::backend::GatherResult {
        self.0.gather(tables, tokens)
    }
    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]) {
        self.0.stage_contiguous(tables, tokens)
    }
    fn gather_contiguous(&mut self) -> kvlab::calibrate::backend::GatherResult {
        self.0.gather_contiguous()
    }
    fn read_pool(&mut self) -> kvlab::calibrate::backend::GatherResult {
        self.0.read_pool()
    }
}

#[test]
fn a_pool_that_agrees_with_itself_but_not_with_what_was_written_is_refused() {
    let mut opts = small_options();
    opts.block_sizes = vec![16];
    let mut make =
        |g| -> Result<Box<dyn BlockPoolBackend>, String> { Ok(Box::new(MisplacedWrites(HostPool::new(g)?))) };
    let e = calibrate(&opts, &mut make, &mut |_| {}, &mut |_| {}).expect_err("a broken pool must stop the calibration");
    assert!(e.contains("expected from what was written"), "{e}");
}

#[test]
fn a_calibration_measured_on_a_gpu_brings_that_gpus_bandwidth() {
    let preset = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/presets/paged-default.json"))
        .expect("shipped preset");
    let config = parse_preset(&preset).expect("preset");
    assert_eq!(config.gpu.id, "h100-sxm");
    let run = |gpu: Option<&str>| {
        let mut v = valid_file();
        if let Some(g) = gpu {
            v["gpu"] = g.into();
        }
        let mut c = config.clone();
        c.calibration = Some(parse_calibration(&v.to_string()).expect("valid").step_time());
        kvlab::engine::Simulation::new(c).expect("runs").run_to_end()
    };
    let (own, h200, same) = (run(None), run(Some("h200")), run(Some("h100-sxm")));
    // Same efficiency, 4,800 instead of 3,350 GB/s: every decode step is shorter.
    assert!(
        h200.latency_ms.tpot_p50 < own.latency_ms.tpot_p50,
        "{} vs {}",
        h200.latency_ms.tpot_p50,
        own.latency_ms.tpot_p50
    );
    assert_eq!(same.latency_ms.tpot_p50, own.latency_ms.tpot_p50, "naming the preset's own GPU changes nothing");
    let mut v = valid_file();
    v["gpu"] = "h200".into();
    let c = parse_calibration(&v.to_string()).expect("valid");
    assert!(
        c.describe("h100-sxm").contains("the h200's 4800 GB/s × 0.800, not the h100-sxm's"),
        "{}",
        c.describe("h100-sxm")
    );
    assert_eq!(c.describe("h200"), "t, measured on d (2026-01-01)");
}

#[test]
fn every_shipped_preset_calibrates_on_a_short_replay() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/presets");
    let mut paths: Vec<_> = std::fs::read_dir(dir).expect("presets").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    assert!(paths.len() >= 8);
    for path in paths {
        let mut opts = small_options();
        opts.config = parse_preset(&std::fs::read_to_string(&path).expect("read")).expect("shipped preset parses");
        // Shorter than every burst's start in bursty.json: the bursts must be cut, not refused.
        opts.duration_s = Some(4.0);
        opts.block_sizes = vec![16];
        (opts.samples, opts.reps) = (2, 1);
        let mut make = |g| -> Result<Box<dyn BlockPoolBackend>, String> { Ok(Box::new(HostPool::new(g)?)) };
        let name = path.display();
        let run = calibrate(&opts, &mut make, &mut |_| {}, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The replay of this preset's traffic really ran: every gather read back what was
        // written, the one block size asked for was measured, and the file it makes parses.
        assert!(
            run.summary.contains("every paged and contiguous checksum equal to the reference"),
            "{name}: {}",
            run.summary
        );
        let c = &run.calibration;
        assert_eq!(c.paged_overhead.iter().map(|p| p.block_size).collect::<Vec<_>>(), vec![16], "{name}");
        let figures = run.figures.iter().find(|f| f.block_size == 16).unwrap_or_else(|| panic!("{name}: no figures"));
        assert!(figures.paged_run_bytes > 0.0, "{name}: the replay gathered nothing");
        let samples = c.measurements["samples"].as_array().unwrap_or_else(|| panic!("{name}: no samples"));
        assert!(!samples.is_empty(), "{name}: no samples");
        let text = serde_json::to_string(c).expect("serializes");
        assert_eq!(&parse_calibration(&text).unwrap_or_else(|e| panic!("{name}: {e}")), c, "{name}");
    }
}

#[test]
fn calibrate_writes_its_file_under_out_dir_and_leaves_no_partial_file() {
    let dir = std::env::temp_dir().join(format!("kvlab-calibrate-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(BIN)
        .args(["calibrate", "--name", "host-test", "--date", "2026-01-02", "--duration-s", "2"])
        .args(["--block-sizes", "1,16", "--samples", "2", "--reps", "1", "--out-dir"])
        .arg(&dir)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("host-test.partial.json"), "results so far are announced: {stderr}");
    let text = std::fs::read_to_string(dir.join("host-test.json")).expect("the calibration file");
    assert_eq!(parse_calibration(&text).expect("valid").name, "host-test");
    assert!(!dir.join("host-test.partial.json").exists(), "the partial file is replaced by the final one");
    let clash = Command::new(BIN).args(["calibrate", "--out", "a.json", "--out-dir"]).arg(&dir).output().expect("runs");
    assert!(!clash.status.success() && String::from_utf8_lossy(&clash.stderr).contains("--out-dir"));
}
