//! The largest run the engine accepts (`kvlab::engine::bounds`): a preset above a limit is refused
//! up front, in the engine and by the `kvlab` binary, with the same words naming the fields to
//! change; a contiguous pool near the limit reports its true capacity (no `u32` wrap); and every
//! shipped preset stays well inside the limits.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::process::{Command, Output};

use common::{preset, shipped_presets};
use kvlab::engine::bounds::{
    self, RunBounds, MAX_CONTIGUOUS_TOKENS, MAX_KV_CELLS, MAX_REQUESTS, MAX_SERIES_POINTS, MAX_STEPS,
};
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;

/// The 4-byte-token model of issue 12: 17 GiB of it is 4.6 billion 1-token blocks.
fn tiny_model_preset(allocator: &str, kv_memory_gib: f64) -> String {
    format!(
        r#"{{"schema": "kvlab/preset@1", "id": "four-byte-tokens", "kv_dtype": "fp8", "kv_memory_gib": {kv_memory_gib},
            "model": {{"layers": 1, "kv_heads": 1, "head_dim": 2, "params_b": 0.01}},
            "allocator": {allocator}}}"#
    )
}

const PAGED_1: &str = r#"{"kind": "paged", "block_size": 1}"#;
const CONTIGUOUS: &str = r#"{"kind": "contiguous"}"#;

const FOUR_BYTE_REFUSAL: &str =
    "kv_memory_gib: 17 GiB of 4-byte tokens is 4.6 billion 1-token blocks; the lab handles \
     up to 1,048,576; use larger blocks (allocator.block_size) or less memory";

fn kvlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().expect("kvlab runs")
}

fn write_tmp(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kvlab-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("temp file");
    p.to_string_lossy().into_owned()
}

#[test]
fn the_engine_refuses_four_billion_one_token_blocks_naming_the_fields() {
    let err = parse_preset(&tiny_model_preset(PAGED_1, 17.0)).expect_err("refused");
    assert_eq!(err.to_string(), FOUR_BYTE_REFUSAL);
    // A config built in Rust meets the same check in `Simulation::new`.
    let mut config = parse_preset(&tiny_model_preset(CONTIGUOUS, 0.02)).expect("a small pool is accepted");
    config.allocator = kvlab::engine::AllocatorConfig::Paged { block_size: 1, prefix_caching: false };
    config.kv_memory_gib = 17.0;
    assert_eq!(Simulation::new(config).expect_err("refused").to_string(), FOUR_BYTE_REFUSAL);
}

#[test]
fn the_cli_refuses_the_four_byte_preset_with_the_engines_words() {
    let path = write_tmp("four-byte.json", &tiny_model_preset(PAGED_1, 17.0));
    for cmd in ["run", "check"] {
        let o = kvlab(&[cmd, &path]);
        assert!(!o.status.success(), "kvlab {cmd} accepted it");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(FOUR_BYTE_REFUSAL), "kvlab {cmd}: {err}");
        assert!(!err.contains("panicked"), "kvlab {cmd}: {err}");
    }
}

#[test]
fn a_contiguous_pool_past_u32_tokens_is_refused_not_wrapped() {
    let err = parse_preset(&tiny_model_preset(CONTIGUOUS, 17.0)).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "kv_memory_gib: 17 GiB of 4-byte tokens is 4.6 billion token slots; the lab handles up to 16.8 million in a \
         contiguous pool; use less memory or the paged allocator with larger blocks"
    );
}

#[test]
fn a_pool_at_the_limit_runs_and_reports_its_true_capacity() {
    // 64 MiB of 4-byte tokens: exactly MAX_CONTIGUOUS_TOKENS slots, and exactly MAX_KV_CELLS 16-token blocks.
    let gib = (MAX_CONTIGUOUS_TOKENS * 4) as f64 / (1u64 << 30) as f64;
    for allocator in [CONTIGUOUS, r#"{"kind": "paged", "block_size": 16}"#] {
        let mut config = parse_preset(&tiny_model_preset(allocator, gib)).expect("at the limit is accepted");
        config.duration_s = 2.0;
        let b = config.run_bounds();
        bounds::check(&b).expect("within bounds");
        // vLLM v1 reserves block 0 of a paged pool as its null block: it holds no token.
        let reserved = config.reserved_blocks();
        assert_eq!(b.capacity_tokens, MAX_CONTIGUOUS_TOKENS - reserved * 16);
        assert_eq!(b.kv_cells, MAX_KV_CELLS);
        let mut sim = Simulation::new(config).expect("valid");
        assert_eq!(sim.kv().capacity_tokens(), MAX_CONTIGUOUS_TOKENS - reserved * 16);
        assert_eq!(sim.memory_map().cells.len() as u64, MAX_KV_CELLS - reserved);
        let report = sim.run_to_end();
        assert_eq!(report.capacity_tokens, MAX_CONTIGUOUS_TOKENS - reserved * 16);
        // One slot more is refused.
        let over = parse_preset(&tiny_model_preset(allocator, gib + 4.0 * 16.0 / (1u64 << 30) as f64));
        assert!(over.is_err(), "{allocator}: one cell past the limit was accepted");
    }
}

#[test]
fn too_many_requests_and_too_many_steps_are_refused_naming_the_field() {
    let mut config = preset("paged-default");
    config.duration_s = 3600.0;
    config.workload.arrival = kvlab::engine::workload::Arrival::Poisson { rate_per_s: 10_000.0, bursts: Vec::new() };
    let err = config.validate().expect_err("36 million requests");
    assert_eq!(
        err.to_string(),
        "workload.arrival.rate_per_s: 3600 s of this traffic is 36.0 million requests; the lab handles up to 2,000,000; \
         lower rate_per_s or the bursts' rates, or shorten duration_s"
    );
    // Parallel samples count too: 1.2 million requests of 4 samples each.
    let mut config = preset("parallel-sampling");
    config.duration_s = 3600.0;
    config.workload.arrival = kvlab::engine::workload::Arrival::Poisson { rate_per_s: 333.4, bursts: Vec::new() };
    let err = config.validate().expect_err("4.8 million samples");
    assert!(err.to_string().contains("samples (n per request); the lab handles up to 4,000,000"), "{err}");
    let mut config = parse_preset(&tiny_model_preset(r#"{"kind": "paged", "block_size": 16}"#, 0.05)).expect("valid");
    config.duration_s = 6000.0;
    config.workload.arrival = kvlab::engine::workload::Arrival::Poisson { rate_per_s: 1.0, bursts: Vec::new() };
    config.calibration =
        kvlab::formats::calibration::shipped_calibration("host-xeon-2core").ok().map(|c| c.step_time());
    assert!(config.calibration.is_some());
    let err = config.validate().expect_err("tens of millions of steps");
    assert_eq!(
        err.to_string(),
        "duration_s: 6000 s of steps as short as 6 µs is up to 1.0 billion steps; the lab handles up to 20.0 million; \
         shorten duration_s, or use a larger model or a calibration with a larger fixed_step_us"
    );
}

#[test]
fn every_shipped_preset_is_well_inside_the_bounds() {
    for id in shipped_presets() {
        let config = preset(&id);
        let b: RunBounds = config.run_bounds();
        bounds::check(&b).unwrap_or_else(|e| panic!("{id}: {e:?}"));
        assert!(b.kv_cells <= MAX_KV_CELLS / 8, "{id}: {b:?}");
        // `h200-scale` (40 requests/s for 600 s: 24,000) is the largest shipped run, far inside.
        assert!(b.expected_requests <= MAX_REQUESTS / 4, "{id}: {b:?}");
        if config.until_all_finished {
            // The bound of a drained run is its drain limit (up to 24 h past duration_s, within
            // the lab's steps), far beyond where it ends: the run itself, to its end, keeps one
            // series point per step.
            assert!(b.max_steps <= MAX_STEPS, "{id}: {b:?}");
            let steps = common::run(config).steps;
            assert!(steps < MAX_SERIES_POINTS / 8, "{id}: {steps} steps");
            continue;
        }
        assert!(b.max_steps <= MAX_STEPS / 2, "{id}: {b:?}");
        // Every shipped run keeps one series point per step.
        assert!(b.max_steps < MAX_SERIES_POINTS, "{id}: {b:?}");
    }
}

#[test]
fn the_map_cell_of_the_bounds_is_the_simulations() {
    assert_eq!(bounds::MAP_CELL_TOKENS, u64::from(kvlab::engine::sim::CONTIGUOUS_CELL_TOKENS));
}

#[test]
fn counts_read_as_words() {
    assert_eq!(bounds::count_words(0), "0");
    assert_eq!(bounds::count_words(1_048_576), "1,048,576");
    assert_eq!(bounds::count_words(16_777_216), "16.8 million");
    assert_eq!(bounds::count_words(4_563_402_752), "4.6 billion");
}

/// The per-unit sizes behind the memory table of `docs/SCHEMA.md` ("Limits").
#[test]
fn per_unit_sizes_are_what_the_schema_doc_counts() {
    use kvlab::engine::alloc::{BlockEntry, KvCacheBlock};
    use kvlab::engine::request::{Sequence, SequenceGroup};
    use kvlab::engine::workload::RequestSpec;
    use kvlab::engine::{MapCell, StepPoint};
    use std::mem::size_of;
    println!(
        "block {} cell {} point {} spec {} group {} sample {}",
        size_of::<KvCacheBlock>(),
        size_of::<MapCell>(),
        size_of::<StepPoint>(),
        size_of::<RequestSpec>(),
        size_of::<SequenceGroup>(),
        size_of::<Sequence>()
    );
    assert!(size_of::<KvCacheBlock>() <= 12, "docs/SCHEMA.md counts 12 B a block record");
    // The pool keeps a block's record, hash and free-queue stamp together where blocks can be
    // shared: a day with prefix caching cycles through the whole pool, and one entry is one
    // cache miss a block where three arrays were three (docs/PERFORMANCE.md, "A day with prefix
    // caching": 4.3 → 4.1 s min, 5.3 → 4.5 s median of six, every report the same).
    assert!(size_of::<BlockEntry>() <= 32, "docs/SCHEMA.md counts 32 B a pool entry");
    assert!(size_of::<MapCell>() <= 8);
    assert!(size_of::<StepPoint>() <= 48);
    assert!(size_of::<RequestSpec>() + size_of::<SequenceGroup>() <= 256);
    // 28 B of counters and the 8 B time of its latest token (the inter-token gaps), aligned.
    assert!(size_of::<Sequence>() <= 40);
}

#[test]
fn the_series_bound_is_the_series_budget() {
    assert_eq!(MAX_SERIES_POINTS, kvlab::engine::metrics::SERIES_POINT_BUDGET as u64);
}
