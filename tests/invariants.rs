//! Invariants after every step (every 16th for the shipped presets whose pools pass 16,384
//! blocks, `h200-scale` and `mooncake-conversation`) (free + referenced = total, ref counts = table references,
//! live ≤ allocated, slabs never overlap, queues agree with request states) across every shipped
//! preset and across random configurations and seeds. A failing case prints its seed; replay one
//! with `KVLAB_SEED=<seed> cargo test --test invariants replay_seed`.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, run_checked, run_checked_every, shipped_presets};
use kvlab::engine::alloc::{splitmix64, Fit};
use kvlab::engine::workload::{Arrival, Burst, LengthDist, UserClass};
use kvlab::engine::{AllocatorConfig, EngineVersion, PreemptionMode, Reserve, SimConfig};
use proptest::prelude::*;

/// Pools above this many tokens (16,384 blocks of 16) are checked every [`LARGE_POOL_EVERY`]
/// steps: a check walks every block, and `h200-scale`'s 51,200 blocks over 600 s made it most of
/// the suite's time (49 s of this test in release, 8 s after).
const LARGE_POOL_TOKENS: u64 = 262_144;
const LARGE_POOL_EVERY: u64 = 16;

#[test]
fn every_shipped_preset_keeps_every_invariant_at_every_step() {
    for id in shipped_presets() {
        let config = preset(&id);
        let every = if config.capacity_tokens() > LARGE_POOL_TOKENS { LARGE_POOL_EVERY } else { 1 };
        let (sim, report) = run_checked_every(config, every);
        assert!(sim.steps() > 100, "{id} ran only {} steps", sim.steps());
        assert!(report.requests.arrived > 0, "{id} had no traffic");
    }
}

/// The knobs one sweep case turns, all drawn from its seed, so that a seed alone replays a case.
#[derive(Debug)]
struct Sweep {
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
    /// vLLM v0's scheduler (always with swap: v1 has none).
    v0: bool,
}

impl Sweep {
    fn from_seed(seed: u64) -> Sweep {
        let mut state = seed;
        let mut draw = |k: usize| {
            state = splitmix64(state);
            (state % k as u64) as usize
        };
        let mut flip = || draw(2) == 1;
        let (paged, prefix_caching, best_fit, reserve_max, swap, chunked) =
            (flip(), flip(), flip(), flip(), flip(), flip());
        Sweep {
            paged,
            block_size: [1, 2, 8, 16, 32, 256][draw(6)],
            prefix_caching,
            best_fit,
            reserve_max,
            kv_memory_gib: [0.5, 0.75, 1.0, 2.0][draw(4)],
            swap,
            swap_space_gib: [0.0, 0.05, 1.0][draw(3)],
            chunked,
            max_num_seqs: [2, 8, 64][draw(3)],
            n: 1 + draw(4) as u32,
            shared_prefix: [0, 100, 500][draw(3)],
            rate: [2.0, 6.0, 12.0][draw(3)],
            v0: swap || draw(2) == 1,
        }
    }

    /// A small, stressed configuration with these knobs and `seed` for its traffic.
    fn config(&self, seed: u64) -> SimConfig {
        let mut c = SimConfig { seed, duration_s: 8.0, kv_memory_gib: self.kv_memory_gib, ..SimConfig::default() };
        c.allocator = if self.paged {
            AllocatorConfig::Paged { block_size: self.block_size, prefix_caching: self.prefix_caching }
        } else {
            AllocatorConfig::Contiguous {
                reserve: if self.reserve_max { Reserve::MaxModelLen } else { Reserve::PromptPlusMaxTokens },
                fit: if self.best_fit { Fit::BestFit } else { Fit::FirstFit },
            }
        };
        c.scheduler.engine = if self.v0 { EngineVersion::V0 } else { EngineVersion::V1 };
        c.scheduler.preemption = if self.swap { PreemptionMode::Swap } else { PreemptionMode::Recompute };
        c.scheduler.swap_space_gib = self.swap_space_gib;
        c.scheduler.chunked_prefill = self.chunked;
        c.scheduler.max_num_batched_tokens = if self.chunked { 512 } else { 8192 };
        c.scheduler.max_num_seqs = self.max_num_seqs.max(self.n);
        c.scheduler.max_model_len = 4096;
        let rate = self.rate;
        c.workload.arrival = Arrival::Poisson {
            rate_per_s: rate,
            bursts: vec![Burst { start_s: 2.0, end_s: 3.0, rate_per_s: rate * 4.0 }],
        };
        c.workload.classes = vec![
            UserClass {
                name: "chat".into(),
                weight: 2.0,
                prompt_tokens: LengthDist { mean: 600.0, p99: 1800.0 },
                output_tokens: LengthDist { mean: 150.0, p99: 900.0 },
                max_tokens: 1024,
                n: self.n,
                shared_prefix_tokens: self.shared_prefix,
                tenants: 1,
            },
            UserClass {
                name: "report".into(),
                weight: 1.0,
                prompt_tokens: LengthDist { mean: 900.0, p99: 2000.0 },
                output_tokens: LengthDist { mean: 700.0, p99: 1800.0 },
                max_tokens: 2000,
                n: 1,
                shared_prefix_tokens: 0,
                tenants: 1,
            },
        ];
        c
    }
}

/// The sweep's case for `seed`: every knob and the traffic come from it.
fn config(seed: u64) -> SimConfig {
    Sweep::from_seed(seed).config(seed)
}

fn check_case(c: SimConfig) -> Result<(), String> {
    let (sim, report) = run_checked(c);
    let r = &report.requests;
    if r.finished + r.running_at_end + r.waiting_at_end + r.swapped_at_end + r.rejected != r.arrived {
        return Err(format!("requests do not add up: {r:?}"));
    }
    if sim.now_us() < sim.duration_us() {
        return Err(format!("stopped at {} µs of {}", sim.now_us(), sim.duration_us()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// A failure prints `seed = N`; `KVLAB_SEED=N` replays exactly that case (`replay_seed`).
    #[test]
    fn random_configs_keep_every_invariant_at_every_step(seed in any::<u64>()) {
        let c = config(seed);
        prop_assume!(c.validate().is_ok());
        check_case(c).map_err(|e| TestCaseError::fail(format!("seed {seed}: {e}")))?;
    }
}

/// Replays one case of the random sweep: `KVLAB_SEED=123 cargo test --test invariants replay_seed`.
#[test]
fn replay_seed() {
    // Without KVLAB_SEED: the first seed the sweep would run.
    let seed: u64 = std::env::var("KVLAB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| (1..).find(|&s| config(s).validate().is_ok()).unwrap());
    let c = config(seed);
    c.validate().unwrap_or_else(|e| panic!("seed {seed} draws an invalid configuration ({e}); the sweep skips it"));
    check_case(c).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

#[test]
fn one_seed_draws_one_case_and_the_sweep_covers_every_knob() {
    assert_eq!(format!("{:?}", Sweep::from_seed(42)), format!("{:?}", Sweep::from_seed(42)));
    let cases: Vec<Sweep> = (0..200).map(Sweep::from_seed).collect();
    assert!(cases.iter().any(|c| c.paged) && cases.iter().any(|c| !c.paged));
    assert!(cases.iter().any(|c| c.swap && c.chunked) && cases.iter().any(|c| c.n == 4));
    let blocks: std::collections::BTreeSet<u32> = cases.iter().map(|c| c.block_size).collect();
    assert_eq!(blocks.len(), 6, "every block size is drawn");
}

#[test]
fn swap_preemption_moves_groups_out_and_back() {
    // Swap is vLLM v0's (v1 has none).
    let mut c = preset("long-report-2gb");
    c.scheduler.engine = kvlab::engine::EngineVersion::V0;
    c.scheduler.preemption = PreemptionMode::Swap;
    let (sim, r) = run_checked(c);
    assert!(r.swap_preemptions > 0, "swap was used");
    let swapped: Vec<u32> = sim.series().iter().map(|p| p.swapped).collect();
    let came_back = swapped.windows(2).any(|w| w[1] < w[0]);
    assert!(came_back, "a swapped group was swapped back in");
    assert_eq!(
        r.requests.swapped_at_end
            + r.requests.running_at_end
            + r.requests.waiting_at_end
            + r.requests.finished
            + r.requests.rejected,
        r.requests.arrived
    );
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
