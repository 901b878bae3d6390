//! What a run measured: the per-step series a chart draws, time-weighted KV fractions, counters,
//! latency percentiles, and the [`Report`] (its JSON contract is `formats::report`, documented in
//! docs/REPORT.md).

use serde::Serialize;

mod series;
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

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyMs {
    pub ttft_p50: f64,
    pub ttft_p95: f64,
    pub tpot_p50: f64,
    pub tpot_p95: f64,
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
    pub paged_overhead: f64,
    pub calibration: Option<String>,
    pub rejections: Vec<Rejection>,
    /// Present when the block size is not one vLLM's default attention backend runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size_note: Option<String>,
    /// Present when the KV memory was derived from the GPU (`gpu_memory_utilization`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory: Option<GpuMemoryReport>,
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

/// Nearest-rank percentile of an unsorted list (0 when empty).
pub fn percentile(values: &mut [f64], p: f64) -> f64 {
    // Values equal under `total_cmp` are the same bits, so an unstable sort is as good.
    values.sort_unstable_by(f64::total_cmp);
    percentile_of_sorted(values, p)
}

/// A sorted copy (by `f64::total_cmp`), for taking several percentiles.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Nearest-rank percentile of a list sorted by `f64::total_cmp` (0 when empty).
pub fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = libm::ceil(p / 100.0 * sorted.len() as f64) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Rounds for the report so that JSON stays readable (and exact across platforms).
pub fn round_to(x: f64, digits: i32) -> f64 {
    let m = libm::pow(10.0, f64::from(digits));
    libm::round(x * m) / m
}
