//! Event-driven stepping (the default) against the step-by-step reference: every shipped preset,
//! stressed variants of them (1-token blocks, tight pools that preempt, prefix caching, parallel
//! sampling, short `max_model_len`) and random accepted presets give the same report, series and
//! memory map, bit for bit, in both modes, and the same request, allocator and queue state when
//! stopped midway; switching modes mid-run changes nothing; and the
//! cohort really takes the steps it can (a fallback to the reference everywhere would pass the
//! comparisons and be no faster).
#![cfg(not(target_arch = "wasm32"))]

mod common;
mod fuzz_gen;

use common::{preset, shipped_presets};
use kvlab::engine::alloc::{splitmix64, Fit};
use kvlab::engine::scheduler::Scheduler;
use kvlab::engine::workload::Arrival;
use kvlab::engine::{AllocatorConfig, Reserve, SimConfig, Simulation, Stepping};
use kvlab::formats::preset::parse_preset;
use kvlab::formats::report::digest;

/// Runs `config` to the end in `stepping`.
fn run(config: &SimConfig, stepping: Stepping) -> Simulation {
    let mut sim = Simulation::new(config.clone()).expect("valid config");
    sim.set_stepping(stepping);
    sim.run_to_end();
    sim
}

/// The scheduler's queues and preemption counts (its scratch buffers aside).
fn queues(sim: &Simulation) -> String {
    let preemptions = sim.scheduler().preemptions();
    match sim.scheduler() {
        Scheduler::V0(s) => format!("{:?} {:?} {:?} {preemptions:?}", s.running(), s.waiting(), s.swapped()),
        Scheduler::V1(s) => format!("{:?} {:?} {preemptions:?}", s.running(), s.waiting()),
    }
}

/// Stopped a third and two thirds of the way, both modes leave the same requests and the same
/// allocator state (block records, free queue, tables): the cohort was written down exactly.
fn assert_same_state_midway(what: &str, config: &SimConfig) {
    let mut events = Simulation::new(config.clone()).unwrap();
    let mut reference = Simulation::new(config.clone()).unwrap();
    reference.set_stepping(Stepping::Reference);
    for k in 1..=2 {
        let t = config.duration_us() * k / 3;
        events.run_until(t);
        reference.run_until(t);
        assert_eq!(format!("{:?}", events.groups()), format!("{:?}", reference.groups()), "{what}: requests at {t} µs");
        assert_eq!(format!("{:?}", events.kv()), format!("{:?}", reference.kv()), "{what}: allocator at {t} µs");
        assert_eq!(queues(&events), queues(&reference), "{what}: queues at {t} µs");
    }
}

/// Both modes agree on everything a user can see; returns the event-driven run.
fn assert_modes_agree(what: &str, config: &SimConfig) -> Simulation {
    assert_same_state_midway(what, config);
    let events = run(config, Stepping::Events);
    let reference = run(config, Stepping::Reference);
    assert_eq!(events.steps(), reference.steps(), "{what}: step counts differ");
    assert_eq!(events.series(), reference.series(), "{what}: series differ");
    let (a, b) = (events.report(), reference.report());
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap(), "{what}: reports differ");
    assert_eq!(events.memory_map(), reference.memory_map(), "{what}: memory maps differ");
    assert_eq!(digest(&events), digest(&reference), "{what}: digests differ");
    events.check_invariants().unwrap_or_else(|e| panic!("{what}: {e}"));
    events
}

/// `config` with another block size, pool size, caching or length cap.
fn variant(mut config: SimConfig, block_size: Option<u32>, kv_scale: f64, caching: Option<bool>) -> SimConfig {
    if let AllocatorConfig::Paged { block_size: bs, prefix_caching } = &mut config.allocator {
        *bs = block_size.unwrap_or(*bs);
        *prefix_caching = caching.unwrap_or(*prefix_caching);
    }
    config.kv_memory_gib *= kv_scale;
    config
}

#[test]
fn every_shipped_preset_runs_the_same_in_both_modes() {
    for id in shipped_presets() {
        let sim = assert_modes_agree(&id, &preset(&id));
        assert!(sim.steps() > 100, "{id} ran only {} steps", sim.steps());
    }
}

#[test]
fn stressed_variants_run_the_same_in_both_modes() {
    let ids = ["paged-default", "prefix-caching", "parallel-sampling", "bursty", "fp8-kv"];
    let mut preemptions = 0;
    for id in ids {
        let base = preset(id);
        let mut ran = 0;
        for (bs, scale, caching) in [
            (Some(1), 1.0, None),
            (None, 0.25, None),
            (None, 0.5, None),
            (Some(4), 0.35, Some(true)),
            (Some(64), 0.5, Some(false)),
        ] {
            let config = variant(base.clone(), bs, scale, caching);
            if config.validate().is_err() {
                continue; // a pool this small fails vLLM's startup check for this model
            }
            let sim = assert_modes_agree(&format!("{id} block {bs:?} × {scale} caching {caching:?}"), &config);
            preemptions += sim.report().preemptions;
            ran += 1;
        }
        assert!(ran >= 3, "{id}: only {ran} variants are accepted");
        // The shortest length cap this workload accepts, so long samples stop at it.
        let short = [600, 1_200, 2_500, 5_000]
            .into_iter()
            .map(|len| {
                let mut c = base.clone();
                c.scheduler.max_model_len = len;
                for class in &mut c.workload.classes {
                    class.max_tokens = class.max_tokens.min(len - 100);
                }
                c
            })
            .find(|c| c.validate().is_ok())
            .unwrap_or_else(|| panic!("{id}: no short max_model_len is accepted"));
        assert_modes_agree(&format!("{id} max_model_len {}", short.scheduler.max_model_len), &short);
    }
    assert!(preemptions > 100, "the tight pools preempted only {preemptions} times");
}

#[test]
fn chunked_prefill_runs_the_same_in_both_modes() {
    // v1 serves the cohort, then the prefill being chunked behind it, step by step.
    let mut ran = 0;
    for id in ["paged-default", "prefix-caching", "parallel-sampling", "long-report-chunked-512"] {
        for (budget, scale) in [(512, 1.0), (2048, 1.0), (256, 0.4)] {
            let mut config = preset(id);
            config.scheduler.chunked_prefill = true;
            config.scheduler.max_num_batched_tokens = budget;
            config.kv_memory_gib *= scale;
            if config.validate().is_err() {
                continue; // too small a pool for this model's max_model_len
            }
            ran += 1;
            let what = format!("{id} chunked at {budget} × {scale}");
            let sim = assert_modes_agree(&what, &config);
            assert!(
                sim.event_steps() * 2 >= sim.steps(),
                "{what}: {} of {} steps event-driven",
                sim.event_steps(),
                sim.steps()
            );
        }
    }
    assert!(ran >= 10, "only {ran} chunked variants are accepted");
}

#[test]
fn contiguous_variants_run_the_same_in_both_modes() {
    for id in ["contiguous-default", "contiguous-max-model-len"] {
        let base = preset(id);
        let mut best_fit = base.clone();
        best_fit.allocator = AllocatorConfig::Contiguous { reserve: Reserve::MaxModelLen, fit: Fit::BestFit };
        // Parallel sampling on slabs: each sample forks its own slab off the prompt.
        let mut sampled = base.clone();
        for class in &mut sampled.workload.classes {
            class.n = 3;
        }
        let mut small = base.clone();
        small.kv_memory_gib *= 0.5;
        for (what, config) in [("best fit", best_fit), ("n = 3", sampled), ("half the pool", small)] {
            if config.validate().is_ok() {
                assert_modes_agree(&format!("{id} {what}"), &config);
            } else {
                panic!("{id} {what}: {:?}", config.validate());
            }
        }
    }
}

/// Closed loops (`{"kind": "concurrency"}`) and `until_all_finished` runs: arrivals known only
/// as requests end, in every engine and allocator, tight pools that preempt, parallel sampling,
/// requests refused at admission, runs that stop at `duration_s` and runs that drain past it.
#[test]
fn closed_loops_and_drained_runs_run_the_same_in_both_modes() {
    let closed = |id: &str, clients: u32, requests: u32, drain: bool| {
        let mut c = preset(id);
        c.workload.arrival =
            Arrival::Concurrency { max_concurrency: clients, num_requests: requests, round_trip_us: 0 };
        c.until_all_finished = drain;
        c
    };
    let mut cases = vec![
        ("bench-concurrency".to_string(), preset("bench-concurrency")),
        ("paged-default, 24 clients, drained".into(), closed("paged-default", 24, 300, true)),
        ("paged-default, 64 clients, to 60 s".into(), closed("paged-default", 64, 5_000, false)),
        ("paged-default, 1 client".into(), closed("paged-default", 1, 40, true)),
        ("prefix-caching, 16 clients".into(), closed("prefix-caching", 16, 200, true)),
        ("parallel-sampling, 8 clients".into(), closed("parallel-sampling", 8, 120, true)),
        ("contiguous-default, 32 clients".into(), closed("contiguous-default", 32, 400, true)),
        ("long-report-chunked-512, 12 clients".into(), closed("long-report-chunked-512", 12, 60, true)),
    ];
    // Tight pools: preemptions (and v0's swaps) decide when requests end.
    let mut tight = closed("paged-default", 48, 400, true);
    tight.kv_memory_gib *= 0.3;
    cases.push(("paged-default, 48 clients on 30% of the pool".into(), tight));
    let mut v0 = closed("paged-default", 32, 300, true);
    v0.scheduler.engine = kvlab::engine::EngineVersion::V0;
    v0.kv_memory_gib *= 0.4;
    cases.push(("paged-default v0, 32 clients on 40% of the pool".into(), v0));
    // Prompts longer than a step (v0 without chunked prefill), refused at admission, free their
    // clients at once.
    let mut refused = closed("contiguous-default", 8, 150, true);
    refused.scheduler.max_num_batched_tokens = 1_500;
    cases.push(("contiguous-default, 8 clients, long prompts refused".into(), refused));
    // Poisson and trace arrivals drained past duration_s.
    for id in ["paged-default", "bursty", "contiguous-default", "azure-conversation"] {
        let mut c = preset(id);
        c.until_all_finished = true;
        c.kv_memory_gib *= 0.5;
        cases.push((format!("{id} drained on half the pool"), c));
    }
    let (mut preempted, mut rejected) = (0, 0);
    for (what, config) in cases {
        config.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
        let sim = assert_modes_agree(&what, &config);
        let r = sim.report();
        if config.until_all_finished {
            assert!(sim.all_finished(), "{what}: {:?}", r.requests);
        }
        preempted += r.preemptions;
        rejected += r.requests.rejected;
    }
    assert!(preempted > 0 && rejected > 0, "{preempted} preemptions, {rejected} refusals");
}

#[test]
fn random_accepted_presets_run_the_same_in_both_modes() {
    for i in 0..300u64 {
        let (text, _) = fuzz_gen::accepted_case(splitmix64(0x5eed_0fe7_e1e1 + i), fuzz_gen::DIGEST_BUDGET);
        let config = parse_preset(&text).unwrap();
        assert_modes_agree(&format!("random case {i}: {text}"), &config);
    }
}

#[test]
fn switching_modes_mid_run_changes_nothing() {
    let config = variant(preset("paged-default"), None, 0.3, None);
    let reference = run(&config, Stepping::Reference);
    let mut mixed = Simulation::new(config).unwrap();
    for (k, t) in [7_000_000u64, 19_000_000, 33_000_000, 48_000_000].into_iter().enumerate() {
        mixed.set_stepping(if k % 2 == 0 { Stepping::Events } else { Stepping::Reference });
        mixed.run_until(t);
        mixed.check_invariants().unwrap();
    }
    mixed.set_stepping(Stepping::Events);
    mixed.run_to_end();
    assert_eq!(mixed.series(), reference.series());
    assert_eq!(digest(&mixed), digest(&reference));
}

/// vLLM v1's hybrid KV cache groups (gpt-oss's sliding window; gemma-3's seven groups) under
/// memory pressure: event-driven stepping hands those runs to the step-by-step engine, and both
/// modes agree bit for bit.
#[test]
fn hybrid_kv_cache_groups_run_the_same_in_both_modes() {
    for (model, gib) in [("openai/gpt-oss-20b", 1.5), ("openai/gpt-oss-20b", 6.0), ("google/gemma-3-4b-it", 1.5)] {
        let mut p: serde_json::Value = serde_json::from_str(&common::preset_text("gpt-oss-window")).unwrap();
        p["model"] = serde_json::json!(model);
        p["kv_memory_gib"] = serde_json::json!(gib);
        p["duration_s"] = serde_json::json!(20);
        let config = kvlab::formats::preset::parse_preset(&p.to_string()).unwrap();
        assert!(config.kv_cache_group_kinds().is_some());
        let sim = assert_modes_agree(&format!("{model} on {gib} GiB"), &config);
        assert!(sim.report().requests.finished > 10);
    }
}

#[test]
fn the_cohort_takes_most_steps_of_busy_runs() {
    for id in ["paged-default", "h200-scale", "contiguous-default", "contiguous-max-model-len"] {
        let sim = run(&preset(id), Stepping::Events);
        assert!(
            sim.event_steps() * 10 >= sim.steps() * 9,
            "{id}: only {} of {} steps were event-driven",
            sim.event_steps(),
            sim.steps()
        );
        assert_eq!(run(&preset(id), Stepping::Reference).event_steps(), 0);
    }
}
