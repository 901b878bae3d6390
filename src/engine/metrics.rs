//! What a run measured: the per-step series a chart draws, time-weighted KV fractions, counters,
//! latency percentiles, and the [`Report`] (its JSON contract is `formats::report`, documented in
//! docs/REPORT.md).

use serde::Serialize;

pub mod latency;
mod series;
pub use latency::{
    gap_bucket, percentile, percentile_of_sorted, round_to, sorted, GapHistogram, Summary, GAP_EXACT_BITS,
};
pub use series::{Series, StepPoint, BASE_BUCKET_US, SERIES_POINT_BUDGET};

/// Time integrals over the run, so means are weighted by simulated time, not by step count.
#[derive(Clone, Debug, Default)]
pub struct Integrals {
    pub time_us: f64,
    pub allocated_time_us: f64,
    pub utilization_us: f64,
    pub allocated_fraction_us: f64,
    pub live_fraction_us: f64,
    pub running_us: f64,
}

impl Integrals {
    /// Adds another run's integrals (a fleet's replicas, as one pool).
    pub fn merge(&mut self, other: &Integrals) {
        self.time_us += other.time_us;
        self.allocated_time_us += other.allocated_time_us;
        self.utilization_us += other.utilization_us;
        self.allocated_fraction_us += other.allocated_fraction_us;
        self.live_fraction_us += other.live_fraction_us;
        self.running_us += other.running_us;
    }

    pub fn add(&mut self, dt_us: u64, s: &StepPoint, capacity: u64) {
        let dt = dt_us as f64;
        self.time_us += dt;
        self.running_us += dt * f64::from(s.running);
        self.allocated_fraction_us += dt * s.allocated_tokens as f64 / capacity as f64;
        self.live_fraction_us += dt * s.live_tokens as f64 / capacity as f64;
        if s.allocated_tokens > 0 {
            self.allocated_time_us += dt;
            self.utilization_us += dt * s.live_tokens as f64 / s.allocated_tokens as f64;
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestCounts {
    pub arrived: u32,
    pub finished: u32,
    pub running_at_end: u32,
    pub waiting_at_end: u32,
    pub swapped_at_end: u32,
    pub rejected: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvSummary {
    /// Share of allocated (reserved) KV memory that holds tokens, time-weighted over steps where
    /// anything is allocated.
    pub utilization_mean: f64,
    /// Allocated share of capacity, time-weighted.
    pub allocated_fraction_mean: f64,
    /// Live (token-holding) share of capacity, time-weighted.
    pub live_fraction_mean: f64,
}

/// Latencies in ms, as `vllm bench serve` names them (docs/REPORT.md): the first four keys are
/// the report's original ones, the rest were added after them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyMs {
    pub ttft_p50: f64,
    pub ttft_p95: f64,
    pub tpot_p50: f64,
    pub tpot_p95: f64,
    pub ttft_mean: f64,
    pub ttft_p90: f64,
    pub ttft_p99: f64,
    pub tpot_mean: f64,
    pub tpot_p90: f64,
    pub tpot_p99: f64,
    pub itl_mean: f64,
    pub itl_p50: f64,
    pub itl_p90: f64,
    pub itl_p95: f64,
    pub itl_p99: f64,
    pub e2e_mean: f64,
    pub e2e_p50: f64,
    pub e2e_p90: f64,
    pub e2e_p95: f64,
    pub e2e_p99: f64,
}

impl LatencyMs {
    /// The latencies from their summaries.
    pub fn new(ttft: Summary, tpot: Summary, itl: Summary, e2e: Summary) -> LatencyMs {
        LatencyMs {
            ttft_p50: ttft.p50,
            ttft_p95: ttft.p95,
            tpot_p50: tpot.p50,
            tpot_p95: tpot.p95,
            ttft_mean: ttft.mean,
            ttft_p90: ttft.p90,
            ttft_p99: ttft.p99,
            tpot_mean: tpot.mean,
            tpot_p90: tpot.p90,
            tpot_p99: tpot.p99,
            itl_mean: itl.mean,
            itl_p50: itl.p50,
            itl_p90: itl.p90,
            itl_p95: itl.p95,
            itl_p99: itl.p99,
            e2e_mean: e2e.mean,
            e2e_p50: e2e.p50,
            e2e_p90: e2e.p90,
            e2e_p95: e2e.p95,
            e2e_p99: e2e.p99,
        }
    }
}

/// Throughput over the benchmark's duration, as `vllm bench serve` computes it: from the first
/// arrival to the last finish, counting the finished requests and their tokens only.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// First arrival to last finish, seconds (0 when no request finished).
    pub duration_s: f64,
    /// Prompt tokens of the finished requests.
    pub input_tokens: u64,
    /// Output tokens of the finished requests (every sample's).
    pub output_tokens: u64,
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub total_tokens_per_s: f64,
}

impl Throughput {
    /// `finished` requests with their tokens, the first arriving at `first_arrival_us` and the
    /// last finishing at `last_finish_us`.
    pub fn new(
        finished: u32,
        input_tokens: u64,
        output_tokens: u64,
        first_arrival_us: u64,
        last_finish_us: u64,
    ) -> Self {
        let duration_us = last_finish_us.saturating_sub(first_arrival_us);
        if finished == 0 || duration_us == 0 {
            return Throughput { input_tokens, output_tokens, ..Throughput::default() };
        }
        let s = duration_us as f64 / 1e6;
        Throughput {
            duration_s: round_to(s, 6),
            input_tokens,
            output_tokens,
            requests_per_s: round_to(f64::from(finished) / s, 4),
            output_tokens_per_s: round_to(output_tokens as f64 / s, 2),
            total_tokens_per_s: round_to((input_tokens + output_tokens) as f64 / s, 2),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rejection {
    pub request: u32,
    pub reason: String,
}

/// What a run measured, field for field the report contract of docs/REPORT.md (extended, never
/// renamed; `formats::report` writes it as JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub preset: String,
    pub allocator: String,
    /// The vLLM scheduler the run followed: `v1` or `v0` (the contiguous allocator: `v0`).
    pub engine: String,
    pub kv_bytes_per_token: u64,
    pub capacity_tokens: u64,
    pub capacity_line: String,
    pub sim_time_s: f64,
    pub steps: u64,
    pub requests: RequestCounts,
    pub kv: KvSummary,
    pub running_mean: f64,
    pub running_max: u32,
    pub preemptions: u64,
    pub swap_preemptions: u64,
    pub hol_blocked_steps: u64,
    pub hol_blocked_with_free_memory_steps: u64,
    pub cow_copies: u64,
    pub prefix_cache_hit_rate: f64,
    /// Prompt tokens looked up in the prefix cache and found there (vLLM's
    /// `prefix_cache_queries` and `prefix_cache_hits` counters; first admissions only).
    pub prefix_cache_queries: u64,
    pub prefix_cache_hits: u64,
    pub latency_ms: LatencyMs,
    pub output_tokens_per_s: f64,
    /// Over the benchmark's duration (first arrival to last finish), as vLLM's client counts.
    pub throughput: Throughput,
    pub paged_overhead: f64,
    pub calibration: Option<String>,
    /// How good the step times are on this GPU (`engine::clock`).
    pub clock: ClockReport,
    pub rejections: Vec<Rejection>,
    /// Present when the block size is not one vLLM's default attention backend runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size_note: Option<String>,
    /// Present when the KV memory was derived from the GPU (`gpu_memory_utilization`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory: Option<GpuMemoryReport>,
    /// Present with a host tier (`kv_offload`): what it held, found and moved. Builds without
    /// the tier (the page's first module) have no such field.
    #[cfg(feature = "kv-offload")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<OffloadReport>,
    /// Present for a fleet (`replicas` above 1): the router and each replica. The report's other
    /// figures are then the fleet's (engine::fleet, docs/ROUTING.md).
    #[cfg(feature = "fleet")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetReport>,
}

/// A fleet behind its router: the policy and what each replica got and did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetReport {
    pub replicas: u32,
    pub policy: String,
    /// The rule the policy follows, and its source.
    pub rule: String,
    /// The most requests a replica was sent over the mean (1: even).
    pub imbalance: f64,
    pub per_replica: Vec<ReplicaReport>,
}

/// One replica of a fleet.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplicaReport {
    /// Requests the router sent it (arrived there).
    pub requests: u32,
    pub finished: u32,
    pub prefix_cache_hit_rate: f64,
    pub ttft_p50: f64,
    pub ttft_p95: f64,
    pub kv_utilization_mean: f64,
    pub running_mean: f64,
    pub waiting_at_end: u32,
    pub preemptions: u64,
}

/// The host tier over a run. Hits per tier share one denominator, the prompt tokens looked up
/// (`prefix_cache_queries`): `prefix_cache_hits` on the GPU, `offload_hits` on the host; vLLM's
/// own host hit rate divides by the tokens the GPU did not hold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OffloadReport {
    pub cpu_gib: f64,
    /// Blocks the tier holds at most, and at the end of the run.
    pub capacity_blocks: u32,
    pub resident_blocks: u32,
    /// Prompt tokens found on the host, first admissions (vLLM's `external_prefix_cache_hits`).
    pub offload_hits: u64,
    /// `offload_hits` over `prefix_cache_queries`, beside `prefix_cache_hit_rate`.
    pub offload_hit_rate: f64,
    /// `offload_hits` over the tokens the GPU did not hold (vLLM's external prefix cache hit
    /// rate, `external_prefix_cache_queries`).
    pub external_hit_rate: f64,
    pub external_queries: u64,
    /// GPU and host hits together over `prefix_cache_queries`.
    pub combined_hit_rate: f64,
    /// Requests admitted with a load from the host, and the bytes loaded and stored.
    pub loads: u64,
    pub loaded_bytes: u64,
    pub stored_bytes: u64,
    /// Stores refused whole for want of room (vLLM's `kv_offload_allocation_failure`).
    pub store_refusals: u64,
    /// The host link's rate per direction, GB/s (the GPU catalogue's PCIe or C2C figure).
    pub link_gb_s: f64,
}

/// How far the step times can be trusted on the run's GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockReport {
    /// Real vLLM runs on this GPU that the clock was fitted to or checked on (0: none).
    pub measured_runs: u32,
    /// Their median absolute error over every figure compared, each run predicted without it,
    /// percent (None: no run).
    pub median_abs_error_pct: Option<f64>,
    /// The measured GPU whose constants this one takes, when it has none of its own (its runs,
    /// if any, were predicted with them).
    pub extrapolated_from: Option<String>,
    /// The sentence the page and `kvlab run` print.
    pub line: String,
}

/// The memory budget vLLM's worker computed on each GPU of the replica, and its startup lines.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuMemoryReport {
    pub gpu_memory_utilization: f64,
    pub tensor_parallel_size: u32,
    pub requested_gib_per_gpu: f64,
    pub weights_gib_per_gpu: f64,
    pub peak_activation_gib_per_gpu: f64,
    pub cuda_graph_gib_per_gpu: f64,
    pub non_torch_gib_per_gpu: f64,
    pub kv_gib_per_gpu: f64,
    pub kv_gib_per_replica: f64,
    pub kv_heads_per_gpu: u32,
    /// vLLM's startup lines, in vLLM's order.
    pub startup_lines: Vec<String>,
}
