//! A fleet's report: the replicas' runs summed up as one, with the router and each replica
//! beside them (`Report::fleet`).
//!
//! Latencies are over every request of the fleet (the replicas' samples together, the gaps in
//! one histogram); counts, tokens, hits and the rates of `output_tokens_per_s` are sums; KV
//! means are over the replicas' time integrals together; `running_mean` is the fleet's (the
//! replicas' means summed), `running_max` the most one replica ran; the pool is the replicas'
//! pools together, while the capacity line and GPU memory stay vLLM's startup figures for one
//! replica.

use super::config::{PrefixIndex, RouterConfig, RouterPolicy};
use super::router::Route;
use crate::engine::metrics::{
    round_to, sorted, FleetReport, GapHistogram, Integrals, KvSummary, LatencyMs, Rejection, ReplicaReport, Report,
    Summary, Throughput,
};
use crate::engine::sim::Simulation;

/// The rule a policy follows and its source, as the report says it.
pub fn rule(router: &RouterConfig) -> String {
    let w = router.weights;
    match router.policy {
        RouterPolicy::RoundRobin => "each request to the next replica in turn".into(),
        RouterPolicy::Random => "a replica drawn uniformly (llm-d's random picker)".into(),
        RouterPolicy::LeastLoaded => format!(
            "llm-d's load-aware scorers: queue × {} + KV utilisation × {}, the highest score",
            w.queue, w.kv_cache
        ),
        RouterPolicy::PrefixAware => format!(
            "llm-d's scorers: queue × {} + KV utilisation × {} + {} prefix × {}, the highest score",
            w.queue,
            w.kv_cache,
            match router.prefix_index {
                PrefixIndex::Approximate => "approximate (routed 16-token blocks, 31,250 per replica)",
                PrefixIndex::Precise => "precise (each replica's prefix cache)",
            },
            w.prefix
        ),
        RouterPolicy::KvAware => {
            format!("Dynamo's KV router: the lowest {} × prefill blocks + decode blocks", router.overlap_weight)
        }
        RouterPolicy::CacheAware => "SGLang's cache-aware router: the least loaded when out of balance, else the longest tree match above 0.3 of the prompt, else the smallest tree".into(),
    }
}

/// The most requests one replica got over the mean (1: even), from each replica's count; None
/// before any request.
pub fn imbalance(counts: &[u64]) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    let most = counts.iter().copied().max()?;
    (total > 0).then(|| most as f64 * counts.len() as f64 / total as f64)
}

/// The fleet's report from its replicas.
pub fn fleet_report(router: &RouterConfig, replicas: &[Simulation], routes: &[Route], first_arrival_us: u64) -> Report {
    let reports: Vec<Report> = replicas.iter().map(Simulation::report).collect();
    let mut fleet = reports[0].clone();
    let (mut ttft, mut tpot, mut e2e) = (Vec::new(), Vec::new(), Vec::new());
    let mut itl = GapHistogram::default();
    let mut integrals = Integrals::default();
    let mut last_finish_us = 0;
    for sim in replicas {
        let s = sim.samples();
        ttft.extend_from_slice(s.ttft_us);
        tpot.extend_from_slice(s.tpot_us);
        e2e.extend_from_slice(s.e2e_us);
        itl.merge(s.itl);
        integrals.merge(s.integrals);
        last_finish_us = last_finish_us.max(s.last_finish_us);
    }
    let sum = |f: fn(&Report) -> u64| reports.iter().map(f).sum::<u64>();
    let sum32 = |f: fn(&Report) -> u32| reports.iter().map(f).sum::<u32>();
    let ratio = |num: f64, den: f64| if den > 0.0 { round_to(num / den, 4) } else { 0.0 };
    fleet.capacity_tokens = sum(|r| r.capacity_tokens);
    fleet.sim_time_s = reports.iter().map(|r| r.sim_time_s).fold(0.0, f64::max);
    fleet.steps = sum(|r| r.steps);
    let q = &mut fleet.requests;
    q.arrived = sum32(|r| r.requests.arrived);
    q.finished = sum32(|r| r.requests.finished);
    q.running_at_end = sum32(|r| r.requests.running_at_end);
    q.waiting_at_end = sum32(|r| r.requests.waiting_at_end);
    q.swapped_at_end = sum32(|r| r.requests.swapped_at_end);
    q.rejected = sum32(|r| r.requests.rejected);
    fleet.kv = KvSummary {
        utilization_mean: ratio(integrals.utilization_us, integrals.allocated_time_us),
        allocated_fraction_mean: ratio(integrals.allocated_fraction_us, integrals.time_us),
        live_fraction_mean: ratio(integrals.live_fraction_us, integrals.time_us),
    };
    fleet.running_mean = round_to(reports.iter().map(|r| r.running_mean).sum(), 4);
    fleet.running_max = reports.iter().map(|r| r.running_max).max().unwrap_or(0);
    fleet.preemptions = sum(|r| r.preemptions);
    fleet.swap_preemptions = sum(|r| r.swap_preemptions);
    fleet.hol_blocked_steps = sum(|r| r.hol_blocked_steps);
    fleet.hol_blocked_with_free_memory_steps = sum(|r| r.hol_blocked_with_free_memory_steps);
    fleet.cow_copies = sum(|r| r.cow_copies);
    fleet.prefix_cache_queries = sum(|r| r.prefix_cache_queries);
    fleet.prefix_cache_hits = sum(|r| r.prefix_cache_hits);
    fleet.prefix_cache_hit_rate = ratio(fleet.prefix_cache_hits as f64, fleet.prefix_cache_queries as f64);
    fleet.latency_ms = LatencyMs::new(
        Summary::of_sorted_us(&sorted(&ttft)),
        Summary::of_sorted_us(&sorted(&tpot)),
        itl.summary(),
        Summary::of_sorted_us(&sorted(&e2e)),
    );
    fleet.output_tokens_per_s = round_to(reports.iter().map(|r| r.output_tokens_per_s).sum(), 2);
    fleet.throughput = Throughput::new(
        fleet.requests.finished,
        sum(|r| r.throughput.input_tokens),
        sum(|r| r.throughput.output_tokens),
        first_arrival_us,
        last_finish_us,
    );
    fleet.rejections = fleet_rejections(&reports, routes);
    #[cfg(feature = "kv-offload")]
    {
        fleet.offload = offload_sum(&reports, fleet.prefix_cache_queries, fleet.prefix_cache_hits);
    }
    let n = replicas.len() as u32;
    let arrived: Vec<u64> = reports.iter().map(|r| u64::from(r.requests.arrived)).collect();
    fleet.fleet = Some(FleetReport {
        replicas: n,
        policy: router.policy.name().into(),
        rule: rule(router),
        imbalance: imbalance(&arrived).map_or(1.0, |x| round_to(x, 4)),
        per_replica: reports
            .iter()
            .map(|r| ReplicaReport {
                requests: r.requests.arrived,
                finished: r.requests.finished,
                prefix_cache_hit_rate: r.prefix_cache_hit_rate,
                ttft_p50: r.latency_ms.ttft_p50,
                ttft_p95: r.latency_ms.ttft_p95,
                kv_utilization_mean: r.kv.utilization_mean,
                running_mean: r.running_mean,
                waiting_at_end: r.requests.waiting_at_end,
                preemptions: r.preemptions,
            })
            .collect(),
    });
    fleet
}

/// Every replica's refusals, named by the fleet's request ids, in their order.
fn fleet_rejections(reports: &[Report], routes: &[Route]) -> Vec<Rejection> {
    let mut global = vec![Vec::new(); reports.len()];
    for (id, route) in routes.iter().enumerate() {
        global[route.replica as usize].push(id as u32);
    }
    let mut all: Vec<Rejection> = reports
        .iter()
        .zip(&global)
        .flat_map(|(r, ids)| {
            r.rejections.iter().map(|x| Rejection { request: ids[x.request as usize], reason: x.reason.clone() })
        })
        .collect();
    all.sort_by_key(|r| r.request);
    all
}

/// The replicas' host tiers summed up (sizes and blocks the fleet's), the hit rates over the
/// fleet's lookups.
#[cfg(feature = "kv-offload")]
fn offload_sum(reports: &[Report], gpu_queries: u64, gpu_hits: u64) -> Option<crate::engine::metrics::OffloadReport> {
    let tiers: Vec<&crate::engine::metrics::OffloadReport> =
        reports.iter().filter_map(|r| r.offload.as_ref()).collect();
    let mut o = (*tiers.first()?).clone();
    let sum = |f: fn(&crate::engine::metrics::OffloadReport) -> u64| tiers.iter().map(|t| f(t)).sum::<u64>();
    let ratio = |num: u64, den: u64| if den > 0 { round_to(num as f64 / den as f64, 4) } else { 0.0 };
    o.cpu_gib = tiers.iter().map(|t| t.cpu_gib).sum();
    o.capacity_blocks = tiers.iter().map(|t| t.capacity_blocks).sum();
    o.resident_blocks = tiers.iter().map(|t| t.resident_blocks).sum();
    o.offload_hits = sum(|t| t.offload_hits);
    o.external_queries = sum(|t| t.external_queries);
    o.offload_hit_rate = ratio(o.offload_hits, gpu_queries);
    o.external_hit_rate = ratio(o.offload_hits, o.external_queries);
    o.combined_hit_rate = ratio(gpu_hits + o.offload_hits, gpu_queries);
    o.loads = sum(|t| t.loads);
    o.loaded_bytes = sum(|t| t.loaded_bytes);
    o.stored_bytes = sum(|t| t.stored_bytes);
    o.store_refusals = sum(|t| t.store_refusals);
    Some(o)
}
