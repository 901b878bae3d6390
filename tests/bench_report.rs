//! The report's benchmark keys (`latency_ms.{ttft,tpot,itl,e2e}_*`, `throughput.*`): a run of
//! three requests on a clock of 10 ms per step plus 0.1 ms per scheduled token, checked against
//! figures worked out by hand, in both stepping modes; and, on every shipped preset, the orders
//! that must hold (p50 ≤ p90 ≤ p95 ≤ p99, the mean within the values, the original keys as the
//! new ones restate them).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, shipped_presets};
use kvlab::engine::clock::StepClock;
use kvlab::engine::metrics::Report;
use kvlab::engine::{Simulation, Stepping};

use common::request;

/// A at 0 ms (100 prompt tokens, 4 out), B at 15 ms (100, 2), C at 18 ms (100, 1).
///
/// Step 1, 0 → 20 ms: A's prefill (10 + 100 × 0.1 ms); A's first token at 20.
/// Step 2, 20 → 50.1 ms: B and C arrived; A decodes, B and C prefill (201 tokens); A's second
/// token, B's and C's first at 50.1; C is done.
/// Step 3, 50.1 → 60.3 ms: A and B decode; B is done.
/// Step 4, 60.3 → 70.4 ms: A decodes its fourth token and is done.
fn hand_run(stepping: Stepping) -> Report {
    let mut config = preset("paged-default");
    config.id = "hand".into();
    let requests = vec![request(0, 0, 100, 4), request(1, 15_000, 100, 2), request(2, 18_000, 100, 1)];
    let timing = StepClock::fixed_and_per_token(10_000.0, 100.0);
    let mut sim = Simulation::with_requests(config, requests, timing);
    sim.set_stepping(stepping);
    while sim.step() {
        sim.check_invariants().unwrap();
    }
    sim.report()
}

#[test]
fn a_three_request_run_matches_the_figures_worked_by_hand() {
    for stepping in [Stepping::Events, Stepping::Reference] {
        let r = hand_run(stepping);
        let l = &r.latency_ms;
        assert_eq!(r.requests.finished, 3);
        // TTFT: A 20, B 50.1 − 15 = 35.1, C 50.1 − 18 = 32.1.
        assert_eq!((l.ttft_mean, l.ttft_p50, l.ttft_p90, l.ttft_p95, l.ttft_p99), (29.07, 32.1, 35.1, 35.1, 35.1));
        // TPOT = (e2e − TTFT) / (output − 1): A (70.4 − 20) / 3 = 16.8, B (60.3 − 50.1) / 1 =
        // 10.2; C made one token and has none.
        assert_eq!((l.tpot_mean, l.tpot_p50, l.tpot_p90, l.tpot_p95, l.tpot_p99), (13.5, 10.2, 16.8, 16.8, 16.8));
        // ITL: A 30.1, 10.2, 10.1; B 10.2 → sorted 10.1, 10.2, 10.2, 30.1.
        assert_eq!((l.itl_mean, l.itl_p50, l.itl_p90, l.itl_p95, l.itl_p99), (15.15, 10.2, 30.1, 30.1, 30.1));
        // E2E: A 70.4, B 60.3 − 15 = 45.3, C 50.1 − 18 = 32.1.
        assert_eq!((l.e2e_mean, l.e2e_p50, l.e2e_p90, l.e2e_p95, l.e2e_p99), (49.27, 45.3, 70.4, 70.4, 70.4));
        // Over 0 → 70.4 ms: 3 requests, 300 prompt and 4 + 2 + 1 output tokens.
        let t = &r.throughput;
        assert_eq!((t.duration_s, t.input_tokens, t.output_tokens), (0.0704, 300, 7));
        assert_eq!((t.requests_per_s, t.output_tokens_per_s, t.total_tokens_per_s), (42.6136, 99.43, 4360.8));
        // The top-level key keeps its meaning: output tokens per simulated second (60 s).
        assert_eq!(r.output_tokens_per_s, 0.12);
    }
}

#[test]
fn no_finished_request_gives_zeros() {
    let mut config = preset("paged-default");
    config.id = "empty".into();
    let sim = Simulation::with_requests(config, Vec::new(), StepClock::fixed_and_per_token(10_000.0, 100.0));
    let r = sim.report();
    assert_eq!(r.latency_ms, Default::default());
    assert_eq!(r.throughput, Default::default());
}

fn ordered(what: &str, mean: f64, ps: [f64; 4]) {
    assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{what}: percentiles out of order {ps:?}");
    assert!(mean >= 0.0 && (mean > 0.0) == (ps[3] > 0.0), "{what}: mean {mean} with p99 {}", ps[3]);
}

#[test]
fn shipped_presets_keep_the_orders_that_must_hold() {
    for id in shipped_presets() {
        let r = common::run(preset(&id));
        let l = &r.latency_ms;
        ordered(&format!("{id} ttft"), l.ttft_mean, [l.ttft_p50, l.ttft_p90, l.ttft_p95, l.ttft_p99]);
        ordered(&format!("{id} tpot"), l.tpot_mean, [l.tpot_p50, l.tpot_p90, l.tpot_p95, l.tpot_p99]);
        ordered(&format!("{id} itl"), l.itl_mean, [l.itl_p50, l.itl_p90, l.itl_p95, l.itl_p99]);
        ordered(&format!("{id} e2e"), l.e2e_mean, [l.e2e_p50, l.e2e_p90, l.e2e_p95, l.e2e_p99]);
        let t = &r.throughput;
        if r.requests.finished > 0 {
            assert!(l.e2e_p50 > 0.0, "{id}: a finished request took no time");
            assert!(t.duration_s > 0.0 && t.duration_s <= r.sim_time_s, "{id}: duration {}", t.duration_s);
            assert!(t.output_tokens_per_s <= t.total_tokens_per_s, "{id}");
            // The benchmark's window is no longer than the run, so its rate of finished tokens
            // over it is at least their rate over the whole run.
            let over_run = t.output_tokens as f64 / r.sim_time_s;
            assert!(t.output_tokens_per_s + 0.01 >= over_run, "{id}: {} < {over_run}", t.output_tokens_per_s);
        } else {
            assert_eq!(*t, Default::default(), "{id}");
        }
    }
}
