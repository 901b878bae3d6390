//! Closed-loop arrivals (`{"kind": "concurrency"}`, as `vllm bench serve --max-concurrency C
//! --num-prompts N` runs at an infinite request rate) and `until_all_finished`: a run small
//! enough to work out by hand on a clock of 10 ms per step plus 0.1 ms per scheduled token, in
//! both stepping modes; every arrival past the first C is an earlier request's end, and never
//! more than C requests are out; a run with `until_all_finished` finishes every request and ends
//! there, one without stops at `duration_s`; the errors of bad values name the field.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, preset_text};
use kvlab::engine::clock::StepClock;
use kvlab::engine::request::GroupStatus;
use kvlab::engine::workload::{Arrival, RequestSpec};
use kvlab::engine::{SimConfig, Simulation, Stepping};
use kvlab::formats::preset::parse_preset;
use serde_json::{json, Value};

/// A closed loop's request: its arrival is when a client comes free, not the spec's.
fn request(id: u32, prompt: u32, output: u32) -> RequestSpec {
    common::request(id, 0, prompt, output)
}

/// `paged-default` (vLLM v1, no chunked prefill) as a closed loop of `clients` over `requests`.
fn hand_config(clients: u32, requests: &[RequestSpec], until_all_finished: bool) -> SimConfig {
    let mut config = preset("paged-default");
    config.id = "hand".into();
    config.workload.arrival =
        Arrival::Concurrency { max_concurrency: clients, num_requests: requests.len() as u32, round_trip_us: 0 };
    config.until_all_finished = until_all_finished;
    config
}

/// Runs to the end, checking the invariants (the closed loop's included) and that at most
/// `clients` requests are out after every step.
fn run_checked(config: SimConfig, requests: Vec<RequestSpec>, stepping: Stepping) -> Simulation {
    let Arrival::Concurrency { max_concurrency, .. } = config.workload.arrival else { panic!("a closed loop") };
    let timing = StepClock::fixed_and_per_token(10_000.0, 100.0);
    let mut sim = Simulation::with_requests(config, requests, timing);
    sim.set_stepping(stepping);
    loop {
        let more = sim.step();
        sim.check_invariants().unwrap_or_else(|e| panic!("at {} µs: {e}", sim.now_us()));
        let out = sim.groups().iter().filter(|g| !matches!(g.status, GroupStatus::Finished | GroupStatus::Rejected));
        assert!(out.count() <= max_concurrency as usize, "more than {max_concurrency} requests out");
        if !more {
            return sim;
        }
    }
}

/// When each request arrived and ended (finish or refusal), µs.
fn arrivals_and_ends(sim: &Simulation) -> (Vec<u64>, Vec<Option<u64>>) {
    let ends = sim
        .groups()
        .iter()
        .map(|g| match g.status {
            GroupStatus::Finished => g.finish_us,
            // Refused at admission: it ended when it arrived.
            GroupStatus::Rejected => Some(g.arrival_us),
            _ => None,
        })
        .collect();
    (sim.groups().iter().map(|g| g.arrival_us).collect(), ends)
}

/// Request `C + k` arrives one round trip after the `(k + 1)`-th end of the run.
fn assert_arrivals_follow_ends(sim: &Simulation, clients: usize, round_trip_us: u64) {
    let (arrivals, ends) = arrivals_and_ends(sim);
    let mut ends: Vec<u64> = ends.into_iter().flatten().collect();
    ends.sort_unstable();
    assert!(arrivals[..clients.min(arrivals.len())].iter().all(|&t| t == 0), "{arrivals:?}");
    for (k, &t) in arrivals.iter().skip(clients).enumerate() {
        assert_eq!(t, ends[k] + round_trip_us, "request {} arrives after the {}-th end", clients + k, k + 1);
    }
}

/// Two clients, four requests of 100 prompt tokens (2, 3, 1 and 1 output tokens):
///
/// Step 1, 0 → 30 ms: A and B prefill (200 tokens); their first tokens at 30.
/// Step 2, 30 → 40.2 ms: A and B decode; A is done, and its client sends C at 40.2.
/// Step 3, 40.2 → 60.3 ms: B decodes, C prefills (101 tokens); B and C are done, and D is sent.
/// Step 4, 60.3 → 80.3 ms: D prefills and is done; every request has finished.
#[test]
fn a_closed_loop_matches_the_figures_worked_by_hand() {
    let requests = vec![request(0, 100, 2), request(1, 100, 3), request(2, 100, 1), request(3, 100, 1)];
    for stepping in [Stepping::Events, Stepping::Reference] {
        let sim = run_checked(hand_config(2, &requests, true), requests.clone(), stepping);
        let (arrivals, ends) = arrivals_and_ends(&sim);
        assert_eq!(arrivals, [0, 0, 40_200, 60_300], "{stepping:?}");
        assert_eq!(ends, [Some(40_200), Some(60_300), Some(60_300), Some(80_300)], "{stepping:?}");
        assert_arrivals_follow_ends(&sim, 2, 0);
        assert!(sim.is_done() && sim.all_finished());
        assert_eq!((sim.now_us(), sim.end_us()), (80_300, 80_300));
        let r = sim.report();
        assert_eq!((r.requests.arrived, r.requests.finished, r.running_max), (4, 4, 2));
        assert_eq!(r.sim_time_s, 0.0803);
        let l = &r.latency_ms;
        // TTFT from each request's own arrival: 30, 30, 60.3 − 40.2 = 20.1, 80.3 − 60.3 = 20.
        assert_eq!((l.ttft_mean, l.ttft_p50, l.ttft_p99), (25.03, 20.1, 30.0));
        // E2E: 40.2, 60.3, 20.1, 20.
        assert_eq!((l.e2e_mean, l.e2e_p50, l.e2e_p99), (35.15, 20.1, 60.3));
        // The benchmark's window is the run: 4 requests and 7 output tokens over 80.3 ms, and
        // the run's own output rate is over the same 80.3 ms.
        assert_eq!((r.throughput.duration_s, r.throughput.output_tokens), (0.0803, 7));
        assert_eq!(r.output_tokens_per_s, 87.17);
    }
}

/// With a client round trip, a finished request's replacement reaches the engine after the next
/// step has begun and joins the one after (vLLM's engine core does not wait for it): the hand
/// run above with a 1 ms round trip.
///
/// Step 2 ends at 40.2 ms with A done; step 3 (40.2 → 50.3) decodes B alone, which is done;
/// C arrives at 41.2 and D at 51.3; step 4 (50.3 → 70.3) prefills C (100 tokens); step 5
/// (70.3 → 90.3) prefills D.
#[test]
fn a_replacement_reaches_the_engine_one_round_trip_after_its_predecessor_ends() {
    let requests = vec![request(0, 100, 2), request(1, 100, 3), request(2, 100, 1), request(3, 100, 1)];
    for stepping in [Stepping::Events, Stepping::Reference] {
        let mut config = hand_config(2, &requests, true);
        config.workload.arrival = Arrival::Concurrency { max_concurrency: 2, num_requests: 4, round_trip_us: 1_000 };
        let sim = run_checked(config, requests.clone(), stepping);
        let (arrivals, ends) = arrivals_and_ends(&sim);
        assert_eq!(arrivals, [0, 0, 41_200, 51_300], "{stepping:?}");
        assert_eq!(ends, [Some(40_200), Some(50_300), Some(70_300), Some(90_300)], "{stepping:?}");
        assert_arrivals_follow_ends(&sim, 2, 1_000);
        // C waited for the step that began before it arrived: TTFT 70.3 − 41.2 = 29.1 ms, where
        // with no round trip it was 20.1; D: 90.3 − 51.3 = 39.
        let l = sim.report().latency_ms;
        assert_eq!((l.ttft_mean, l.ttft_p99), (32.03, 39.0), "30, 30, 29.1 and 39 ms");
    }
    let text = preset_text("bench-concurrency");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["workload"]["arrival"].get("client_round_trip_ms").is_none(), "the default is left out");
    let default = parse_preset(&text).unwrap();
    let Arrival::Concurrency { round_trip_us, .. } = default.workload.arrival else { panic!("a closed loop") };
    assert_eq!(round_trip_us, 2_000, "2 ms by default");
    v["workload"]["arrival"]["client_round_trip_ms"] = json!(-1);
    let e = parse_preset(&v.to_string()).unwrap_err();
    assert_eq!(e.field, "workload.arrival.client_round_trip_ms");
    assert!(e.message.contains("use 0 to 60000 ms"), "{e}");
}

/// A request refused at admission frees its client at once: the next one arrives then.
#[test]
fn a_refused_request_frees_its_client() {
    // The middle prompt is longer than max_model_len (8,192).
    let requests = vec![request(0, 100, 1), request(1, 9_000, 1), request(2, 100, 1)];
    for stepping in [Stepping::Events, Stepping::Reference] {
        let sim = run_checked(hand_config(1, &requests, true), requests.clone(), stepping);
        let (arrivals, ends) = arrivals_and_ends(&sim);
        // A prefills 0 → 20 ms; B arrives at 20 and is refused; C arrives at 20 → 40 ms.
        assert_eq!(arrivals, [0, 20_000, 20_000]);
        assert_eq!(ends, [Some(20_000), Some(20_000), Some(40_000)]);
        let r = sim.report();
        assert_eq!((r.requests.finished, r.requests.rejected, r.sim_time_s), (2, 1, 0.04));
    }
}

/// Without `until_all_finished` a closed loop runs to `duration_s` like any other run, its
/// requests done or not.
#[test]
fn without_until_all_finished_the_run_ends_at_duration_s() {
    let requests = vec![request(0, 100, 2), request(1, 100, 3), request(2, 100, 1), request(3, 100, 1)];
    let sim = run_checked(hand_config(2, &requests, false), requests, Stepping::Events);
    assert_eq!((sim.now_us(), sim.report().sim_time_s, sim.report().requests.finished), (60_000_000, 60.0, 4));
    assert_eq!(arrivals_and_ends(&sim).0, [0, 0, 40_200, 60_300], "the same arrivals");

    let mut short = preset("bench-concurrency");
    short.until_all_finished = false;
    short.duration_s = 3.0;
    let mut sim = Simulation::new(short).unwrap();
    let r = sim.run_to_end();
    // The run stops with the step that crosses 3 s (a step of this run lasts well under 0.5 s).
    assert!((3.0..3.5).contains(&r.sim_time_s), "{}", r.sim_time_s);
    assert!(r.requests.finished < 200 && r.requests.arrived < 200, "{:?}", r.requests);
    assert_eq!(r.requests.arrived, r.requests.finished + r.requests.running_at_end + r.requests.waiting_at_end);
    assert!(r.requests.arrived - r.requests.finished <= 16);
}

/// The shipped benchmark preset: all 200 requests finish, never more than 16 out, each arrival
/// past the first 16 an earlier request's finish plus the client's 2 ms round trip, and the run
/// ends at the last one.
#[test]
fn the_shipped_benchmark_finishes_every_request() {
    let config = preset("bench-concurrency");
    assert!(config.until_all_finished);
    let mut sim = Simulation::new(config).unwrap();
    while sim.step() {
        sim.check_invariants().unwrap();
    }
    assert_arrivals_follow_ends(&sim, 16, 2_000);
    let r = sim.report();
    assert_eq!((r.requests.arrived, r.requests.finished, r.requests.rejected), (200, 200, 0));
    assert_eq!(r.running_max, 16);
    let last_finish = sim.groups().iter().filter_map(|g| g.finish_us).max().unwrap();
    assert_eq!(sim.now_us(), last_finish);
    assert_eq!(r.sim_time_s, last_finish as f64 / 1e6);
    assert!(r.sim_time_s < 60.0, "the 200 requests take less than duration_s: {}", r.sim_time_s);
    assert_eq!(r.throughput.duration_s, r.sim_time_s);
    assert_eq!((r.throughput.input_tokens, r.throughput.output_tokens), (200 * 1024, 200 * 128));
    let series = sim.series();
    assert_eq!(series.last().unwrap().t_us, last_finish, "the series covers the run");
    // The same requests as the preset's classes draw for Poisson arrivals: fixed lengths.
    assert!(sim.requests().iter().all(|q| q.prompt_tokens == 1024 && q.output_tokens == [128]));
}

/// `until_all_finished` on Poisson arrivals: the run goes on past `duration_s` until every
/// request that arrived before it has finished; up to `duration_s` it is the same run.
#[test]
fn until_all_finished_drains_an_open_loop() {
    let mut config = preset("paged-default");
    config.kv_memory_gib = 2.0; // a queue is left at 60 s
    let mut plain = Simulation::new(config.clone()).unwrap();
    let cut = plain.run_to_end();
    assert!(cut.requests.waiting_at_end + cut.requests.running_at_end > 0, "{:?}", cut.requests);
    config.until_all_finished = true;
    let mut drained = Simulation::new(config).unwrap();
    let r = drained.run_to_end();
    assert!(drained.is_done() && drained.all_finished());
    assert_eq!(r.requests.arrived, cut.requests.arrived, "no arrival after duration_s");
    assert_eq!(r.requests.finished + r.requests.rejected, r.requests.arrived);
    assert_eq!((r.requests.running_at_end, r.requests.waiting_at_end), (0, 0));
    assert!(r.sim_time_s > 60.0, "{}", r.sim_time_s);
    assert_eq!(r.sim_time_s, drained.now_us() as f64 / 1e6);
    let before = |s: &Simulation| s.series().iter().filter(|p| p.t_us <= 60_000_000).copied().collect::<Vec<_>>();
    assert_eq!(before(&plain), before(&drained));
    // Going on past duration_s: run_until stops at the end, and a second call changes nothing.
    let steps = drained.steps();
    drained.run_until(u64::MAX);
    assert_eq!(drained.steps(), steps);
    assert!(!drained.step());
}

/// The drain's limit: 24 h past `duration_s`, within the steps the lab allows.
#[test]
fn the_drain_is_bounded() {
    let mut config = preset("paged-default");
    assert_eq!(config.end_limit_us(), 60_000_000);
    config.until_all_finished = true;
    let limit = config.end_limit_us();
    assert!(limit > 60_000_000 && limit <= 60_000_000 + 24 * 3_600_000_000, "{limit}");
    let b = config.run_bounds();
    assert!(b.max_steps <= kvlab::engine::bounds::MAX_STEPS, "{b:?}");
    assert_eq!(b.max_steps, limit.div_ceil(b.min_step_us));
}

fn bench_with(edit: impl Fn(&mut Value)) -> Result<SimConfig, kvlab::engine::ConfigError> {
    let mut v: Value = serde_json::from_str(&preset_text("bench-concurrency")).unwrap();
    edit(&mut v);
    parse_preset(&v.to_string())
}

#[test]
fn bad_values_name_the_field() {
    let field = |edit: &dyn Fn(&mut Value)| bench_with(edit).unwrap_err();
    let e = field(&|v| v["workload"]["arrival"]["max_concurrency"] = json!(0));
    assert_eq!(e.field, "workload.arrival.max_concurrency", "{e}");
    assert!(e.message.contains("1 to 65536"), "{e}");
    let e = field(&|v| v["workload"]["arrival"]["max_concurrency"] = json!(100_000));
    assert_eq!(e.field, "workload.arrival.max_concurrency", "{e}");
    let e = field(&|v| v["workload"]["arrival"]["num_requests"] = json!(0));
    assert_eq!(e.field, "workload.arrival.num_requests", "{e}");
    let e = field(&|v| v["workload"]["arrival"]["num_requests"] = json!(3_000_000));
    assert_eq!(e.field, "workload.arrival.num_requests", "{e}");
    assert!(e.message.contains("2000000"), "{e}");
    // Wrong types and unknown or missing fields name the field, at it or in the message.
    for (edit, name) in [
        (
            &(|v: &mut Value| v["workload"]["arrival"]["max_concurrency"] = json!("many")) as &dyn Fn(&mut Value),
            "max_concurrency",
        ),
        (&|v: &mut Value| v["workload"]["arrival"]["rate_per_s"] = json!(4), "rate_per_s"),
        (
            &|v: &mut Value| drop(v["workload"]["arrival"].as_object_mut().unwrap().remove("num_requests")),
            "num_requests",
        ),
    ] {
        let e = field(edit);
        assert!(e.field.contains(name) || (e.field == "workload.arrival" && e.message.contains(name)), "{e}");
    }
    let e = field(&|v| v["workload"]["classes"] = json!([]));
    assert_eq!(e.field, "workload.classes", "{e}");
    let e = field(&|v| v["until_all_finished"] = json!("yes"));
    assert_eq!(e.field, "until_all_finished", "{e}");
    let e = field(&|v| v["enforce_eager"] = json!(1));
    assert_eq!(e.field, "enforce_eager", "{e}");
}

/// The new top-level fields default off, and `enforce_eager` reaches the configuration.
#[test]
fn the_new_fields_default_off() {
    let config = preset("paged-default");
    assert!(!config.until_all_finished && !config.enforce_eager);
    let eager = bench_with(|v| v["enforce_eager"] = json!(true)).unwrap();
    assert!(eager.enforce_eager);
    let dto = common::preset_dto("paged-default");
    let text = serde_json::to_string(&dto).unwrap();
    assert!(!text.contains("until_all_finished") && !text.contains("enforce_eager"), "left out when off");
}

/// Classes and lengths are drawn as for Poisson arrivals, in request order, from the seed.
#[test]
fn a_closed_loop_draws_its_requests_like_poisson() {
    let config = bench_with(|v| {
        v["workload"]["classes"] = json!([
            { "name": "a", "weight": 1, "prompt_tokens": { "mean": 500, "p99": 2000 },
              "output_tokens": { "mean": 100, "p99": 400 }, "max_tokens": 512 },
            { "name": "b", "weight": 3, "prompt_tokens": { "fixed": 64 }, "output_tokens": { "fixed": 8 }, "max_tokens": 8 }
        ]);
    })
    .unwrap();
    let sim = Simulation::new(config.clone()).unwrap();
    assert_eq!(sim.requests().len(), 200);
    let classes: Vec<u16> = sim.requests().iter().map(|q| q.class).collect();
    assert!(classes.contains(&0) && classes.contains(&1));
    assert!(sim.requests().iter().all(|q| q.arrival_us == 0));
    // Another seed, other draws; the same seed, the same.
    assert_eq!(Simulation::new(config.clone()).unwrap().requests(), sim.requests());
    let mut other = config;
    other.seed = 2;
    assert_ne!(Simulation::new(other).unwrap().requests(), sim.requests());
}
