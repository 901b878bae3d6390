//! Criterion benchmarks over the shipped presets: a whole simulation, headless, as the lab and
//! the CLI run it. `cargo bench --bench engine` (medians in target/criterion/); the figures and
//! the commands behind them are in docs/PERFORMANCE.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use kvlab::engine::{AllocatorConfig, SimConfig, Simulation};
use kvlab::formats::preset::parse_preset;

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
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut sim = Simulation::new(black_box(config.clone())).expect("valid");
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
    group.finish();
}

/// `h200-scale` (600 s, 40 requests/s, 100 GiB): 16-token blocks as shipped, and 1-token blocks
/// (819,200 blocks, a block boundary every token).
fn h200_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("h200_scale_600s");
    group.sample_size(10);
    bench_run(&mut group, "blocks_16", h200_with_blocks(16));
    bench_run(&mut group, "blocks_1", h200_with_blocks(1));
    group.finish();
}

fn memory_map(c: &mut Criterion) {
    let mut sim = Simulation::new(preset("paged-default")).expect("valid");
    sim.run_until(30_000_000);
    c.bench_function("memory_map_paged_5120_blocks", |b| b.iter(|| black_box(sim.memory_map())));
}

criterion_group!(benches, whole_runs, h200_scale, memory_map);
criterion_main!(benches);
