//! Replicas behind a router (engine::fleet, docs/ROUTING.md): the fleet's hit rate against one
//! replica with all the memory, each policy's ordering, determinism over any number of threads,
//! feeding a replica as it runs against giving it its requests up front, and the refusals.

mod common;

use common::{repo_path, request};
use kvlab::engine::fleet::{Fleet, PrefixIndex, RouterPolicy, ScorerWeights};
use kvlab::engine::{Report, SimConfig, Simulation};
use kvlab::formats::preset::parse_preset;
use kvlab::formats::report::report_json;

fn example() -> SimConfig {
    let text = std::fs::read_to_string(repo_path("docs/examples/fleet-prefix.json")).unwrap();
    parse_preset(&text).unwrap()
}

fn with_policy(policy: RouterPolicy) -> SimConfig {
    let mut c = example();
    c.router.policy = policy;
    c
}

/// The fleet run to its end, its invariants checked every 250 ms of simulated time.
fn run_checked(config: SimConfig) -> Report {
    let mut fleet = Fleet::new(config).unwrap();
    let mut t = 0;
    while !fleet.is_done() {
        t += 250_000;
        fleet.run_until(t);
        fleet.check_invariants().unwrap_or_else(|e| panic!("at {t} µs: {e}"));
    }
    fleet.report()
}

#[test]
fn four_replicas_routed_by_prefix_hit_as_one_replica_with_four_times_the_memory_and_round_robin_does_not() {
    let prefix = run_checked(example());
    let one = Simulation::new(SimConfig { replicas: 1, kv_memory_gib: 24.0, ..example() }).unwrap().run_to_end();
    let round_robin = run_checked(with_policy(RouterPolicy::RoundRobin));
    let gap = (prefix.prefix_cache_hit_rate - one.prefix_cache_hit_rate).abs();
    assert!(
        gap <= 0.02,
        "prefix-aware {} against one replica {}",
        prefix.prefix_cache_hit_rate,
        one.prefix_cache_hit_rate
    );
    assert!(
        round_robin.prefix_cache_hit_rate < one.prefix_cache_hit_rate - 0.2,
        "round robin {} against one replica {}",
        round_robin.prefix_cache_hit_rate,
        one.prefix_cache_hit_rate
    );
    // The hits are the TTFT: prefill skipped, and the cost in balance is visible.
    assert!(prefix.latency_ms.ttft_p95 < round_robin.latency_ms.ttft_p95 / 2.0);
    let (p, r) = (prefix.fleet.as_ref().unwrap(), round_robin.fleet.as_ref().unwrap());
    assert_eq!(r.imbalance, 1.0);
    assert!(p.imbalance > 1.0);
    assert_eq!(p.per_replica.iter().map(|x| x.requests).sum::<u32>(), prefix.requests.arrived);
}

#[test]
fn every_policy_routes_every_request_once_and_the_cache_aware_ones_hit_more() {
    let rate = |policy, index| {
        let mut c = with_policy(policy);
        c.router.prefix_index = index;
        c.duration_s = 40.0;
        let r = run_checked(c);
        assert_eq!(r.fleet.as_ref().unwrap().policy, policy.name());
        r.prefix_cache_hit_rate
    };
    let blind = [RouterPolicy::RoundRobin, RouterPolicy::Random, RouterPolicy::LeastLoaded]
        .map(|p| rate(p, PrefixIndex::Approximate))
        .into_iter()
        .fold(0.0, f64::max);
    for (policy, index) in [
        (RouterPolicy::PrefixAware, PrefixIndex::Approximate),
        (RouterPolicy::PrefixAware, PrefixIndex::Precise),
        (RouterPolicy::KvAware, PrefixIndex::Approximate),
        (RouterPolicy::CacheAware, PrefixIndex::Approximate),
    ] {
        let hit = rate(policy, index);
        assert!(
            hit > blind + 0.2,
            "{} ({}) hits {hit}, the blind policies at most {blind}",
            policy.name(),
            index.name()
        );
    }
}

#[test]
fn one_seed_one_fleet_bit_for_bit_on_one_thread_or_many() {
    for policy in [RouterPolicy::Random, RouterPolicy::PrefixAware] {
        let mut c = with_policy(policy);
        c.duration_s = 30.0;
        let many = report_json(&Fleet::new(c.clone()).unwrap().run_to_end());
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let one = pool.install(|| report_json(&Fleet::new(c.clone()).unwrap().run_to_end()));
        assert_eq!(many, one, "{}", policy.name());
        c.seed += 1;
        assert_ne!(report_json(&Fleet::new(c).unwrap().run_to_end()), many);
    }
}

#[test]
fn a_replica_fed_as_it_runs_runs_as_one_given_its_requests_up_front() {
    // Least loaded reads the replicas at every arrival, so each is fed between its steps.
    let config = SimConfig { duration_s: 20.0, replicas: 3, ..with_policy(RouterPolicy::LeastLoaded) };
    let mut fleet = Fleet::new(config.clone()).unwrap();
    fleet.run_to_end();
    let replica = SimConfig { replicas: 1, ..config };
    for (k, sim) in fleet.replicas().iter().enumerate() {
        let mine: Vec<_> = fleet
            .requests()
            .iter()
            .zip(fleet.routes())
            .filter(|(_, route)| route.replica == k as u32)
            .map(|(r, route)| kvlab::engine::workload::RequestSpec { id: route.local, ..r.clone() })
            .collect();
        assert!(mine.len() > 50);
        let mut alone = Simulation::with_requests(replica.clone(), mine, replica.clock());
        assert_eq!(report_json(&alone.run_to_end()), report_json(&sim.report()), "replica {k}");
        assert!(alone.series() == sim.series(), "replica {k}: the series differ");
    }
}

#[test]
fn the_fleet_report_sums_its_replicas() {
    let config = SimConfig { duration_s: 20.0, ..with_policy(RouterPolicy::LeastLoaded) };
    let mut fleet = Fleet::new(config).unwrap();
    let r = fleet.run_to_end();
    let reps: Vec<Report> = fleet.replicas().iter().map(Simulation::report).collect();
    assert_eq!(r.requests.arrived as usize, fleet.requests().len());
    assert_eq!(r.requests.finished, reps.iter().map(|x| x.requests.finished).sum::<u32>());
    assert_eq!(r.prefix_cache_hits, reps.iter().map(|x| x.prefix_cache_hits).sum::<u64>());
    assert_eq!(r.capacity_tokens, reps.iter().map(|x| x.capacity_tokens).sum::<u64>());
    let lo = reps.iter().map(|x| x.latency_ms.ttft_p50).fold(f64::MAX, f64::min);
    let hi = reps.iter().map(|x| x.latency_ms.ttft_p50).fold(0.0, f64::max);
    assert!((lo..=hi).contains(&r.latency_ms.ttft_p50), "{lo} ≤ {} ≤ {hi}", r.latency_ms.ttft_p50);
    assert!(r.throughput.output_tokens_per_s > reps[0].throughput.output_tokens_per_s * 3.0);
}

#[test]
fn a_fleet_is_refused_by_name_where_it_cannot_run() {
    let field = |c: SimConfig| Fleet::new(c).err().map(|e| e.field);
    assert_eq!(field(SimConfig { replicas: 65, ..example() }).as_deref(), Some("replicas"));
    assert_eq!(field(SimConfig { replicas: 0, ..example() }).as_deref(), Some("replicas"));
    let mut closed = example();
    closed.workload.arrival =
        kvlab::engine::workload::Arrival::Concurrency { max_concurrency: 8, num_requests: 100, round_trip_us: 2_000 };
    assert_eq!(field(closed).as_deref(), Some("replicas"));
    let mut weights = example();
    weights.router.weights.prefix = -1.0;
    assert_eq!(field(weights).as_deref(), Some("router.weights.prefix"));
    // One Simulation never runs a fleet as if it were one replica.
    assert_eq!(Simulation::new(example()).err().map(|e| e.field).as_deref(), Some("replicas"));
    let text = std::fs::read_to_string(repo_path("docs/examples/fleet-prefix.json")).unwrap();
    let err = parse_preset(&text.replace("prefix_aware", "prefix_first")).unwrap_err();
    assert_eq!(err.field, "router.policy", "{err}");
}

#[test]
fn a_request_routed_to_an_idle_replica_waits_for_nothing() {
    // One request: the replica it goes to idles to its arrival and serves it at once.
    let config = SimConfig { replicas: 3, ..with_policy(RouterPolicy::KvAware) };
    let replica = SimConfig { replicas: 1, ..config.clone() };
    let mut alone = Simulation::with_requests(replica.clone(), vec![request(0, 1_000_000, 500, 20)], replica.clock());
    let single = alone.run_to_end();
    let mut sim = Simulation::replica(replica.clone(), replica.clock(), 1 << 18);
    sim.run_until(900_000);
    assert_eq!(sim.now_us(), 0, "a replica fed nothing idles nowhere");
    sim.feed(request(0, 1_000_000, 500, 20));
    sim.close_feed();
    assert_eq!(report_json(&sim.run_to_end()), report_json(&single));
}

#[test]
fn llm_d_kv_cache_wins_keeps_its_ordering() {
    // docs/ROUTING.md: llm-d's precise, approximate, load-only and random schedulers.
    let text = std::fs::read_to_string(repo_path("docs/examples/llm-d-kv-cache-wins.json")).unwrap();
    let precise = parse_preset(&text).unwrap();
    assert_eq!((precise.router.policy, precise.router.prefix_index), (RouterPolicy::PrefixAware, PrefixIndex::Precise));
    let mut approximate = precise.clone();
    approximate.router.prefix_index = PrefixIndex::Approximate;
    approximate.router.weights = ScorerWeights { queue: 1.0, kv_cache: 1.0, prefix: 1.0 };
    let mut load = precise.clone();
    load.router.policy = RouterPolicy::LeastLoaded;
    load.router.weights = ScorerWeights { queue: 1.0, kv_cache: 1.0, prefix: 0.0 };
    let mut random = precise.clone();
    random.router.policy = RouterPolicy::Random;
    let [p, a, l, r] = [precise, approximate, load, random].map(|c| Fleet::new(c).unwrap().run_to_end());
    let p90 = |x: &Report| x.latency_ms.ttft_p90;
    assert!(p90(&p) < p90(&a) && p90(&a) < p90(&l), "{} {} {}", p90(&p), p90(&a), p90(&l));
    assert!((p90(&r) / p90(&l) - 1.0).abs() < 0.25, "random {} against load only {}", p90(&r), p90(&l));
    assert!(p.prefix_cache_hit_rate > 0.8 && p.prefix_cache_hit_rate <= 6000.0 / 7200.0);
    assert!(a.prefix_cache_hit_rate > 0.65 && l.prefix_cache_hit_rate < 0.3 && r.prefix_cache_hit_rate < 0.3);
}

#[test]
fn prefix_routing_meets_a_ttft_target_with_fewer_replicas_than_round_robin() {
    // docs/ROUTING.md: `kvlab sweep --min-replicas-for-ttft-p95-ms 500`, the KV search's
    // steady-state rule (every replica's queue steady over three times the duration).
    use kvlab::engine::sweep::{run_against_ttft_p95, smallest_meeting};
    let fewest = |policy| {
        let config_at = |i: usize| Ok(SimConfig { replicas: i as u32 + 1, ..with_policy(policy) });
        let judge = |c: &SimConfig| {
            let (run, miss) = run_against_ttft_p95(c, 500.0);
            (run, miss.is_none())
        };
        smallest_meeting(8, config_at, judge).map(|f| f.index + 1).unwrap_or_else(|_| panic!("{}", policy.name()))
    };
    assert_eq!(fewest(RouterPolicy::RoundRobin), 4);
    assert_eq!(fewest(RouterPolicy::PrefixAware), 3);
    // Below the answer a replica's queue grows, and the verdict says which.
    let (_, miss) = run_against_ttft_p95(&SimConfig { replicas: 2, ..with_policy(RouterPolicy::PrefixAware) }, 500.0);
    assert!(miss.is_some_and(|m| m.contains("TTFT p95") || m.contains("replica")));
}

#[test]
fn a_fleet_with_host_tiers_sums_them_over_one_denominator() {
    let text = std::fs::read_to_string(repo_path("docs/examples/host-tier.json")).unwrap();
    let config = SimConfig { replicas: 2, duration_s: 30.0, ..parse_preset(&text).unwrap() };
    let mut fleet = Fleet::new(config).unwrap();
    let r = fleet.run_to_end();
    let reps: Vec<Report> = fleet.replicas().iter().map(Simulation::report).collect();
    let (o, each) = (r.offload.as_ref().unwrap(), reps.iter().map(|x| x.offload.as_ref().unwrap()));
    assert_eq!(o.cpu_gib, each.clone().map(|t| t.cpu_gib).sum::<f64>());
    assert_eq!(o.capacity_blocks, each.clone().map(|t| t.capacity_blocks).sum::<u32>());
    assert_eq!(o.offload_hits, each.clone().map(|t| t.offload_hits).sum::<u64>());
    let combined = (r.prefix_cache_hits + o.offload_hits) as f64 / r.prefix_cache_queries as f64;
    assert!((o.combined_hit_rate - combined).abs() < 1e-4, "{} against {combined}", o.combined_hit_rate);
}

#[test]
fn a_fleet_stepped_event_by_event_runs_as_one_run_to_its_end() {
    for policy in [RouterPolicy::RoundRobin, RouterPolicy::PrefixAware] {
        let mut c = with_policy(policy);
        c.duration_s = 8.0;
        let whole = Fleet::new(c.clone()).unwrap().run_to_end();
        let mut fleet = Fleet::new(c).unwrap();
        let mut steps = 0;
        while !fleet.is_done() {
            let before = fleet.now_us();
            let t = fleet.step();
            assert!(t > before, "{policy:?}: a step at {before} µs moved nothing");
            fleet.check_invariants().unwrap_or_else(|e| panic!("{policy:?} at {t} µs: {e}"));
            steps += 1;
        }
        assert!(steps > 100, "{policy:?}: {steps} steps");
        assert_eq!(report_json(&fleet.report()), report_json(&whole), "{policy:?}");
    }
}

#[test]
fn the_fleet_series_sums_its_replicas_at_every_time() {
    let mut c = example();
    c.duration_s = 10.0;
    let mut fleet = Fleet::new(c).unwrap();
    fleet.run_until(6_000_000);
    let series = fleet.series();
    assert!(series.windows(2).all(|w| w[0].t_us < w[1].t_us), "one point per time, in order");
    let points: usize = fleet.replicas().iter().map(|r| r.series().len()).sum();
    assert!(series.len() > 100 && series.len() <= points);
    for probe in [series[series.len() / 3], series[series.len() / 2], *series.last().unwrap()] {
        let standing = |r: &Simulation| {
            let s = r.series();
            s[..s.partition_point(|p| p.t_us <= probe.t_us)].last().copied().unwrap_or_default()
        };
        let sum =
            |f: fn(&kvlab::engine::StepPoint) -> u64| fleet.replicas().iter().map(|r| f(&standing(r))).sum::<u64>();
        assert_eq!(probe.allocated_tokens, sum(|p| p.allocated_tokens), "at {} µs", probe.t_us);
        assert_eq!(probe.live_tokens, sum(|p| p.live_tokens));
        assert_eq!(u64::from(probe.running), sum(|p| u64::from(p.running)));
        assert_eq!(u64::from(probe.waiting), sum(|p| u64::from(p.waiting)));
        assert!(probe.live_tokens <= probe.allocated_tokens);
    }
}
