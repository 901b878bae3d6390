//! Criterion benchmarks over the shipped presets: a whole simulation, headless, as the lab and
//! the CLI run it. `cargo bench --bench engine` (medians in target/criterion/); the figures and
//! the commands behind them are in docs/PERFORMANCE.md.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use kvlab::engine::sim::checkpoints::{Checkpoints, DEFAULT_BUDGET_BYTES};
use kvlab::engine::sweep::run_all;
use kvlab::engine::{AllocatorConfig, SimConfig, Simulation, Stepping};
use kvlab::formats::kernel_tables::with_kernels;
use kvlab::formats::preset::parse_preset;
use kvlab::formats::sweep::{plan, Knob};

fn preset(id: &str) -> SimConfig {
    let path = format!("{}/assets/presets/{id}.json", env!("CARGO_MANIFEST_DIR"));
    parse_preset(&std::fs::read_to_string(path).expect("preset file")).expect("valid preset")
}

/// `h200-scale` with another paged block size.
fn h200_with_blocks(block_size: u32) -> SimConfig {
    let mut config = preset("h200-scale");
    if let AllocatorConfig::Paged { block_size: b, .. } = &mut config.allocator {
        *b = block_size;
    }
    config
}

fn bench_run(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    config: SimConfig,
) {
    bench_stepping(group, name, config, Stepping::Events);
}

fn bench_stepping(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    config: SimConfig,
    stepping: Stepping,
) {
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut sim = Simulation::new(black_box(config.clone())).expect("valid");
            sim.set_stepping(stepping);
            black_box(sim.run_to_end())
        })
    });
}

/// The 60 s shipped presets, whole runs.
fn whole_runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate_60s");
    group.sample_size(30);
    for id in ["contiguous-default", "paged-default", "long-report-2gb", "parallel-sampling", "prefix-caching"] {
        bench_run(&mut group, id, preset(id));
    }
    // The same run with steps priced from the H100's measured kernels (`--clock kernels`).
    bench_run(&mut group, "paged-default (kernel clock)", with_kernels(preset("paged-default")));
    // The step-by-step reference, for the ratio event-driven stepping buys.
    for id in ["contiguous-default", "paged-default"] {
        bench_stepping(&mut group, &format!("{id} (reference stepping)"), preset(id), Stepping::Reference);
    }
    group.finish();
}

/// `h200-scale` (600 s, 40 requests/s, 100 GiB): 16-token blocks as shipped, and 1-token blocks
/// (819,200 blocks, a block boundary every token).
fn h200_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("h200_scale_600s");
    group.sample_size(10);
    bench_run(&mut group, "blocks_16", h200_with_blocks(16));
    bench_run(&mut group, "blocks_1", h200_with_blocks(1));
    bench_stepping(&mut group, "blocks_16 (reference stepping)", h200_with_blocks(16), Stepping::Reference);
    bench_stepping(&mut group, "blocks_1 (reference stepping)", h200_with_blocks(1), Stepping::Reference);
    group.finish();
}

/// Scrubbing: a first pass that records checkpoints (compare with `simulate_60s/paged-default`),
/// and a run at its end seeking back to 49% of its duration (a restore and a short replay).
fn scrub_back(c: &mut Criterion) {
    let mut first = c.benchmark_group("first_pass_with_checkpoints");
    first.sample_size(30);
    let config = preset("paged-default");
    first.bench_function("paged-default", |b| {
        b.iter(|| {
            let mut sim = Simulation::new(black_box(config.clone())).expect("valid");
            let mut checkpoints = Checkpoints::new(&mut sim, DEFAULT_BUDGET_BYTES);
            let end = sim.duration_us();
            checkpoints.seek(&mut sim, end);
            black_box(checkpoints.len())
        })
    });
    first.finish();
    let mut group = c.benchmark_group("seek_back_with_checkpoints");
    group.sample_size(10);
    for (name, config) in [("paged-default", preset("paged-default")), ("h200-scale_blocks_1", h200_with_blocks(1))] {
        let mut sim = Simulation::new(config).expect("valid");
        let mut checkpoints = Checkpoints::new(&mut sim, DEFAULT_BUDGET_BYTES);
        let end = sim.duration_us();
        checkpoints.seek(&mut sim, end);
        group.bench_function(name, |b| {
            b.iter_batched(
                || (sim.clone(), checkpoints.clone()),
                // Both are handed back, so criterion drops them (the snapshots too) untimed.
                |(mut s, mut cp)| {
                    cp.seek(&mut s, end * 49 / 100);
                    (s, cp)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// `h200-scale` over a tenth of a day at the mean rate of a 1,000,000-request day (11.574
/// requests/s for 8,640 s: about 100,000 requests, half a million steps), with prefix caching
/// (the path hash-level traces take: every full block is hashed, and the free queue hands out
/// the least recently freed) and without. docs/PERFORMANCE.md times the whole day natively.
fn day_tenth(c: &mut Criterion) {
    let path = format!("{}/assets/presets/h200-scale.json", env!("CARGO_MANIFEST_DIR"));
    let mut preset: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).expect("preset")).unwrap();
    preset["duration_s"] = 8640.into();
    preset["workload"]["arrival"]["rate_per_s"] = 11.574.into();
    let mut group = c.benchmark_group("day_tenth_h200_scale");
    group.sample_size(10);
    for caching in [true, false] {
        preset["allocator"]["prefix_caching"] = caching.into();
        let config = parse_preset(&preset.to_string()).expect("valid preset");
        bench_run(&mut group, if caching { "prefix_caching" } else { "no_prefix_caching" }, config);
    }
    group.finish();
}

fn memory_map(c: &mut Criterion) {
    let mut sim = Simulation::new(preset("paged-default")).expect("valid");
    sim.run_until(30_000_000);
    c.bench_function("memory_map_paged_5120_blocks", |b| b.iter(|| black_box(sim.memory_map())));
}

/// `kvlab sweep h200-scale --knob kv_memory_gib --range 10:120:32`: 32 points × 2 allocators,
/// spread over the cores as the CLI runs them (`engine::sweep::run_all`).
fn kv_sweep(c: &mut Criterion) {
    let path = format!("{}/assets/presets/h200-scale.json", env!("CARGO_MANIFEST_DIR"));
    let preset: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).expect("preset")).unwrap();
    let knob = Knob::parse("kv_memory_gib").expect("a knob");
    let points = plan(&preset, &knob, &knob.range("10:120:32").expect("a range")).expect("a plan");
    let configs: Vec<SimConfig> =
        points.iter().flat_map(|p| p.configs.iter().filter_map(|c| c.as_ref().ok().cloned())).collect();
    assert_eq!(configs.len(), 64, "every point runs both allocators");
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("h200-scale_kv_memory_gib_32_points", |b| b.iter(|| black_box(run_all(&configs))));
    group.finish();
}

/// A fleet in the lab (`docs/examples/fleet-prefix.json`: four replicas behind prefix-aware
/// routing, 120 s): playback at 2× in 60 frames a second (each frame a seek 33 ms further,
/// the replicas' series merged again for the chart), and that merge alone at the run's end.
fn fleet_lab(c: &mut Criterion) {
    use kvlab::session::fleet_run::FleetRun;
    let path = format!("{}/docs/examples/fleet-prefix.json", env!("CARGO_MANIFEST_DIR"));
    let config = parse_preset(&std::fs::read_to_string(path).expect("example")).expect("valid preset");
    let end = config.duration_us();
    let mut group = c.benchmark_group("fleet_lab");
    group.sample_size(10);
    group.bench_function("fleet-prefix_playback_3600_frames", |b| {
        b.iter(|| {
            let mut run = FleetRun::new(black_box(config.clone())).expect("valid");
            let mut t = 0;
            while t < end {
                t += 33_333;
                run.seek(t);
            }
            black_box(run.series().len())
        })
    });
    let mut run = FleetRun::new(config).expect("valid");
    run.seek(end);
    group.bench_function("fleet-prefix_merged_series_at_end", |b| b.iter(|| black_box(run.fleet().series())));
    group.finish();
}

criterion_group!(benches, whole_runs, h200_scale, day_tenth, scrub_back, memory_map, kv_sweep, fleet_lab);
criterion_main!(benches);
