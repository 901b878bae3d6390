//! Criterion benchmarks over the shipped presets: a whole 60 s simulation, headless, as the
//! lab and the CLI run it. `cargo bench --bench engine` (medians in target/criterion/).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;

fn preset(id: &str) -> kvlab::engine::SimConfig {
    let path = format!("{}/assets/presets/{id}.json", env!("CARGO_MANIFEST_DIR"));
    parse_preset(&std::fs::read_to_string(path).expect("preset file")).expect("valid preset")
}

fn whole_runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate_60s");
    group.sample_size(30);
    for id in ["contiguous-default", "paged-default", "long-report-2gb", "parallel-sampling", "prefix-caching"] {
        let config = preset(id);
        group.bench_function(id, |b| {
            b.iter(|| {
                let mut sim = Simulation::new(black_box(config.clone())).unwrap();
                black_box(sim.run_to_end())
            })
        });
    }
    group.finish();
}

fn memory_map(c: &mut Criterion) {
    let mut sim = Simulation::new(preset("paged-default")).unwrap();
    sim.run_until(30_000_000);
    c.bench_function("memory_map_paged_5120_blocks", |b| b.iter(|| black_box(sim.memory_map())));
}

criterion_group!(benches, whole_runs, memory_map);
criterion_main!(benches);
