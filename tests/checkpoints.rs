//! Scrubbing through checkpoints (engine/sim/checkpoints.rs): seeking back and forth through
//! snapshots gives the run that went there from the start, bit for bit (series, memory map,
//! report, digest), for every shipped preset; the snapshots stay within their limits.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, shipped_presets};
use kvlab::engine::sim::checkpoints::{Checkpoints, DEFAULT_BUDGET_BYTES, MAX_SNAPSHOTS};

/// Close snapshots, so that every preset takes many and the limits are reached.
const SPACING: u64 = 2_000;
use kvlab::engine::Simulation;
use kvlab::formats::report::digest;

fn fresh_to(id: &str, t_us: u64) -> Simulation {
    let mut sim = Simulation::new(preset(id)).unwrap();
    sim.run_until(t_us);
    sim
}

fn assert_same(a: &Simulation, b: &Simulation, what: &str) {
    assert_eq!(a.now_us(), b.now_us(), "{what}: time");
    assert_eq!(a.steps(), b.steps(), "{what}: steps");
    assert_eq!(a.series(), b.series(), "{what}: series");
    assert_eq!(a.memory_map(), b.memory_map(), "{what}: memory map");
    assert_eq!(a.report(), b.report(), "{what}: report");
    assert_eq!(digest(a), digest(b), "{what}: digest");
    a.check_invariants().unwrap();
}

#[test]
fn seeking_through_checkpoints_equals_running_from_the_start() {
    for id in shipped_presets().into_iter().filter(|id| id != "h200-scale") {
        let mut sim = Simulation::new(preset(&id)).unwrap();
        let mut cp = Checkpoints::with_spacing(&mut sim, DEFAULT_BUDGET_BYTES, SPACING);
        let d = sim.duration_us();
        // To the end (recording), then back and forth: each landing equals a fresh run.
        for t in [d, d / 3, d / 2 + 12_345, 1, d * 9 / 10, d / 7, d] {
            cp.seek(&mut sim, t);
            assert_same(&sim, &fresh_to(&id, t), &format!("{id} at {t} µs"));
        }
        assert!(cp.len() > 1 && cp.len() <= MAX_SNAPSHOTS, "{id}: {} snapshots", cp.len());
        // The run goes on from a restored snapshot exactly as it would have.
        cp.seek(&mut sim, d / 4);
        let report = sim.run_to_end();
        assert_eq!(report, fresh_to(&id, d).report(), "{id}: run to the end after a seek back");
    }
}

#[test]
fn stepping_past_checkpoint_times_outside_seek_still_records_them() {
    let mut sim = Simulation::new(preset("paged-default")).unwrap();
    let mut cp = Checkpoints::with_spacing(&mut sim, DEFAULT_BUDGET_BYTES, SPACING);
    while sim.now_us() < 5_000_000 {
        sim.step();
    }
    let d = sim.duration_us();
    cp.seek(&mut sim, d / 2);
    let held = cp.len();
    assert!(held >= 3, "a snapshot is taken where the steps had gone, then at every spacing on");
    cp.seek(&mut sim, 10);
    assert_same(&sim, &fresh_to("paged-default", 10), "paged-default back at 10 µs");
}

#[test]
fn a_small_budget_thins_the_snapshots_and_seeks_stay_exact() {
    let mut sim = Simulation::new(preset("paged-default")).unwrap();
    let mut cp = Checkpoints::with_spacing(&mut sim, 0, SPACING);
    let d = sim.duration_us();
    cp.seek(&mut sim, d);
    assert_eq!(cp.len(), 1, "no budget: only the start is kept");
    let mut sim = Simulation::new(preset("paged-default")).unwrap();
    let mut cp = Checkpoints::with_spacing(&mut sim, 4 << 20, SPACING);
    let first_spacing = cp.work_per_snapshot();
    cp.seek(&mut sim, d);
    assert!(cp.bytes() <= 4 << 20, "{} bytes held", cp.bytes());
    assert!(cp.work_per_snapshot() > first_spacing, "the spacing grew as snapshots were thinned");
    let t = d * 2 / 3;
    cp.seek(&mut sim, t);
    assert_same(&sim, &fresh_to("paged-default", t), "paged-default after thinning");
}
