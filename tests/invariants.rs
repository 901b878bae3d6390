//! Invariants after every step (free + referenced = total, ref counts = table references,
//! live ≤ allocated, slabs never overlap, queues agree with request states) across every shipped
//! preset and across random configurations and seeds. A failing case prints its seed; replay one
//! with `KVLAB_SEED=<seed> cargo test --test invariants replay_seed`.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, run_checked, shipped_presets};
use kvlab::engine::alloc::Fit;
use kvlab::engine::workload::{Arrival, Burst, LengthDist, UserClass};
use kvlab::engine::{AllocatorConfig, PreemptionMode, Reserve, SimConfig};
use proptest::prelude::*;

#[test]
fn every_shipped_preset_keeps_every_invariant_at_every_step() {
    for id in shipped_presets() {
        let (sim, report) = run_checked(preset(&id));
        assert!(sim.steps() > 100, "{id} ran only {} steps", sim.steps());
        assert!(report.requests.arrived > 0, "{id} had no traffic");
    }
}

/// A small, stressed configuration drawn from `seed`'s parameters.
#[allow(clippy::too_many_arguments)]
fn config(
    seed: u64,
    paged: bool,
    block_size: u32,
    prefix_caching: bool,
    best_fit: bool,
    reserve_max: bool,
    kv_memory_gib: f64,
    swap: bool,
    swap_space_gib: f64,
    chunked: bool,
    max_num_seqs: u32,
    n: u32,
    shared_prefix: u32,
    rate: f64,
) -> SimConfig {
    let mut c = SimConfig { seed, duration_s: 8.0, kv_memory_gib, ..SimConfig::default() };
    c.allocator = if paged {
        AllocatorConfig::Paged { block_size, prefix_caching }
    } else {
        AllocatorConfig::Contiguous {
            reserve: if reserve_max { Reserve::MaxModelLen } else { Reserve::PromptPlusMaxTokens },
            fit: if best_fit { Fit::BestFit } else { Fit::FirstFit },
        }
    };
    c.scheduler.preemption = if swap { PreemptionMode::Swap } else { PreemptionMode::Recompute };
    c.scheduler.swap_space_gib = swap_space_gib;
    c.scheduler.chunked_prefill = chunked;
    c.scheduler.max_num_batched_tokens = if chunked { 512 } else { 8192 };
    c.scheduler.max_num_seqs = max_num_seqs.max(n);
    c.scheduler.max_model_len = 4096;
    c.workload.arrival =
        Arrival::Poisson { rate_per_s: rate, bursts: vec![Burst { start_s: 2.0, end_s: 3.0, rate_per_s: rate * 4.0 }] };
    c.workload.classes = vec![
        UserClass {
            name: "chat".into(),
            weight: 2.0,
            prompt_tokens: LengthDist { mean: 600.0, p99: 1800.0 },
            output_tokens: LengthDist { mean: 150.0, p99: 900.0 },
            max_tokens: 1024,
            n,
            shared_prefix_tokens: shared_prefix,
        },
        UserClass {
            name: "report".into(),
            weight: 1.0,
            prompt_tokens: LengthDist { mean: 900.0, p99: 2000.0 },
            output_tokens: LengthDist { mean: 700.0, p99: 1800.0 },
            max_tokens: 2000,
            n: 1,
            shared_prefix_tokens: 0,
        },
    ];
    c
}

fn arb_config() -> impl Strategy<Value = SimConfig> {
    (
        (
            any::<u64>(),
            any::<bool>(),
            prop::sample::select(vec![1u32, 2, 8, 16, 32, 256]),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            prop::sample::select(vec![0.5f64, 0.75, 1.0, 2.0]),
        ),
        (
            any::<bool>(),
            prop::sample::select(vec![0.0f64, 0.05, 1.0]),
            any::<bool>(),
            prop::sample::select(vec![2u32, 8, 64]),
            1u32..=4,
            prop::sample::select(vec![0u32, 100, 500]),
            prop::sample::select(vec![2.0f64, 6.0, 12.0]),
        ),
    )
        .prop_filter_map("valid config", |(a, b)| {
            let c = config(a.0, a.1, a.2, a.3, a.4, a.5, a.6, b.0, b.1, b.2, b.3, b.4, b.5, b.6);
            c.validate().ok().map(|_| c)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_configs_keep_every_invariant_at_every_step(c in arb_config()) {
        let (sim, report) = run_checked(c);
        prop_assert!(report.requests.finished + report.requests.running_at_end + report.requests.waiting_at_end
            + report.requests.swapped_at_end + report.requests.rejected == report.requests.arrived);
        prop_assert!(sim.now_us() >= sim.duration_us());
    }
}

/// Replays one seed of the random sweep: `KVLAB_SEED=123 cargo test --test invariants replay_seed`.
#[test]
fn replay_seed() {
    let seed: u64 = std::env::var("KVLAB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    for &paged in &[false, true] {
        for &swap in &[false, true] {
            let c = config(seed, paged, 16, true, false, false, 1.0, swap, 0.05, true, 64, 3, 100, 12.0);
            run_checked(c);
        }
    }
}

#[test]
fn swap_preemption_moves_groups_out_and_back() {
    let mut c = preset("long-report-2gb");
    c.scheduler.preemption = PreemptionMode::Swap;
    let (_, r) = run_checked(c);
    assert!(r.swap_preemptions > 0, "swap was used");
}

#[test]
fn requests_that_can_never_fit_are_rejected_with_a_reason() {
    // 0.5 GiB holds 4,096 tokens.
    let mut c = SimConfig { duration_s: 20.0, kv_memory_gib: 0.5, ..SimConfig::default() };
    c.workload.classes[0].prompt_tokens = LengthDist { mean: 1500.0, p99: 4000.0 };
    c.workload.classes[0].max_tokens = 1024;
    let (_, r) = run_checked(c);
    assert!(r.requests.rejected > 0);
    assert!(r.rejections.iter().all(|x| x.reason.contains("pool holds")), "{:?}", r.rejections);
}
