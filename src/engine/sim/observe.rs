//! What a run shows: the [`Report`] it has produced so far, and the per-request view behind the
//! memory map's hover ([`RequestView`]).

use serde::Serialize;

use super::Simulation;
use crate::engine::alloc::KvCacheManager;
use crate::engine::config::AllocatorConfig;
use crate::engine::kv_spec::KvLayout;
use crate::engine::memory_budget::MemoryBudget;
use crate::engine::metrics::{
    percentile, round_to, sorted, GapHistogram, GpuMemoryReport, Integrals, KvSummary, LatencyMs, Report,
    RequestCounts, Summary, Throughput,
};
use crate::engine::model::GIB;
use crate::engine::plan::{group_thousands, startup_line};
use crate::engine::request::GroupStatus;

/// What a fleet merges from each replica: every latency sample, the time integrals and the
/// last finish.
pub struct RunSamples<'a> {
    pub ttft_us: &'a [f64],
    pub tpot_us: &'a [f64],
    pub e2e_us: &'a [f64],
    pub itl: &'a GapHistogram,
    pub integrals: &'a Integrals,
    pub last_finish_us: u64,
}

impl Simulation {
    /// Every latency sample and integral behind the report (a fleet sums its replicas' up).
    pub fn samples(&self) -> RunSamples<'_> {
        RunSamples {
            ttft_us: &self.ttft_us,
            tpot_us: &self.tpot_us,
            e2e_us: &self.e2e_us,
            itl: &self.itl,
            integrals: &self.integrals,
            last_finish_us: self.last_finish_us,
        }
    }

    /// Why the head of the waiting queue was not admitted in the last step (None: it was, or
    /// nothing waited).
    pub fn head_of_line(&self) -> Option<crate::engine::scheduler::HolReason> {
        self.last_hol
    }

    /// The longest wait so far, in milliseconds, of a request that arrived, was not refused and
    /// has no first token yet (0 when there is none).
    pub fn longest_wait_ms(&self) -> f64 {
        let longest = self
            .groups
            .iter()
            .filter(|g| g.first_token_us.is_none() && g.status != GroupStatus::Rejected)
            .map(|g| self.now_us.saturating_sub(g.arrival_us))
            .max()
            .unwrap_or(0);
        round_to(longest as f64 / 1000.0, 2)
    }

    /// TTFT p95 in milliseconds over every request that arrived and was not refused, a request
    /// still without its first token counted at its wait so far (a lower bound of its TTFT), so
    /// that a queue left waiting at the end shows. The report's `ttft_p95` counts only the
    /// requests that got a first token.
    pub fn ttft_p95_counting_waiting_ms(&self) -> f64 {
        round_to(percentile(&mut self.ttft_counting_waiting_us(), 95.0) / 1000.0, 2)
    }

    /// Every TTFT so far, µs, and the wait so far of every request still without a first token
    /// (not refused), in no particular order.
    pub fn ttft_counting_waiting_us(&self) -> Vec<f64> {
        let waiting = self
            .groups
            .iter()
            .filter(|g| g.first_token_us.is_none() && g.status != GroupStatus::Rejected)
            .map(|g| self.now_us.saturating_sub(g.arrival_us) as f64);
        self.ttft_us.iter().copied().chain(waiting).collect()
    }

    /// The length `output_tokens_per_s` divides by: `duration_s`, or with `until_all_finished`
    /// the time simulated so far (the run's length once it is done), at least 1 µs.
    fn run_length_us(&self) -> u64 {
        if self.config.until_all_finished {
            self.now_us.min(self.end_limit_us).max(1)
        } else {
            self.duration_us
        }
    }

    /// vLLM's startup line under hybrid KV cache groups: blocks ÷ groups × block size tokens,
    /// and blocks ÷ what one `max_model_len` request takes in every group (`kv_spec.rs`).
    fn hybrid_startup_line(&self) -> Option<String> {
        let arch = self.config.model.arch.as_ref().filter(|_| self.config.kv_cache_group_kinds().is_some())?;
        let layout = KvLayout::of(&arch.layer_attention);
        let (blocks, bs) = (self.config.num_gpu_blocks()?, self.kv.block_tokens() as u32);
        let s = &self.config.scheduler;
        let per_request = layout.blocks_per_request(s.max_model_len, bs, s.max_num_batched_tokens);
        Some(format!(
            "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: {:.2}x",
            group_thousands(layout.kv_cache_tokens(blocks, bs)),
            group_thousands(u64::from(s.max_model_len)),
            blocks as f64 / per_request.max(1) as f64
        ))
    }

    pub fn report(&self) -> Report {
        let i = &self.integrals;
        let ratio = |num: f64, den: f64| if den > 0.0 { round_to(num / den, 4) } else { 0.0 };
        let allocator = match self.config.allocator {
            AllocatorConfig::Contiguous { .. } => "contiguous",
            AllocatorConfig::Paged { .. } => "paged",
        };
        let capacity = self.kv.capacity_tokens();
        Report {
            preset: self.config.id.clone(),
            block_size_note: self.config.block_size_note(),
            gpu_memory: self.config.memory_budget().map(|b| gpu_memory_report(&b)),
            allocator: allocator.into(),
            engine: if self.config.paged_v1() { "v1" } else { "v0" }.into(),
            kv_bytes_per_token: self.config.kv_bytes_per_token(),
            capacity_tokens: capacity,
            // vLLM logs its pool as num_gpu_blocks × block size, v1's null block included.
            capacity_line: self.hybrid_startup_line().unwrap_or_else(|| {
                startup_line(
                    capacity + self.config.reserved_blocks() * self.kv.block_tokens(),
                    self.config.scheduler.max_model_len,
                )
            }),
            // To the end of the last step, which may run past the end of the run.
            sim_time_s: round_to(self.now_us as f64 / 1e6, 6),
            steps: self.steps,
            requests: RequestCounts {
                arrived: self.groups.len() as u32,
                finished: self.finished,
                running_at_end: self.groups_in(GroupStatus::Running),
                waiting_at_end: self.groups_in(GroupStatus::Waiting),
                swapped_at_end: self.groups_in(GroupStatus::Swapped),
                rejected: self.rejections.len() as u32,
            },
            kv: KvSummary {
                utilization_mean: ratio(i.utilization_us, i.allocated_time_us),
                allocated_fraction_mean: ratio(i.allocated_fraction_us, i.time_us),
                live_fraction_mean: ratio(i.live_fraction_us, i.time_us),
            },
            running_mean: ratio(i.running_us, i.time_us),
            running_max: self.running_max,
            preemptions: self.scheduler.preemptions().0,
            swap_preemptions: self.scheduler.preemptions().1,
            hol_blocked_steps: self.hol_blocked_steps,
            hol_blocked_with_free_memory_steps: self.hol_blocked_with_free_memory_steps,
            cow_copies: self.kv.cow_copies(),
            prefix_cache_hit_rate: round_to(self.kv.prefix_cache_hit_rate(), 4),
            prefix_cache_queries: self.kv.prefix_stats().0.queries,
            prefix_cache_hits: self.kv.prefix_stats().0.hits,
            latency_ms: LatencyMs::new(
                Summary::of_sorted_us(&sorted(&self.ttft_us)),
                Summary::of_sorted_us(&sorted(&self.tpot_us)),
                self.itl.summary(),
                Summary::of_sorted_us(&sorted(&self.e2e_us)),
            ),
            output_tokens_per_s: round_to(self.output_tokens as f64 / (self.run_length_us() as f64 / 1e6), 2),
            throughput: Throughput::new(
                self.finished,
                self.finished_input_tokens,
                self.finished_output_tokens,
                self.groups.first().map_or(0, |g| g.arrival_us),
                self.last_finish_us,
            ),
            paged_overhead: round_to(self.clock.paged_overhead(), 4),
            calibration: self.config.calibration.as_ref().map(|c| c.name.clone()),
            clock: self.clock.report(&self.config.gpu.name),
            rejections: self.rejections.clone(),
            #[cfg(feature = "kv-offload")]
            offload: self.offload_report(),
            #[cfg(feature = "fleet")]
            fleet: None,
        }
    }

    /// The host tier's figures, beside the GPU prefix cache's (one denominator: the prompt
    /// tokens looked up).
    #[cfg(feature = "kv-offload")]
    fn offload_report(&self) -> Option<crate::engine::metrics::OffloadReport> {
        let (o, c) = (self.config.kv_offload?, self.scheduler.connector()?);
        let st = c.stats();
        let ratio = |num: u64, den: u64| if den > 0 { round_to(num as f64 / den as f64, 4) } else { 0.0 };
        let gpu = self.kv.prefix_stats().0;
        Some(crate::engine::metrics::OffloadReport {
            cpu_gib: o.cpu_gib,
            capacity_blocks: st.capacity_chunks,
            resident_blocks: st.resident_chunks,
            offload_hits: st.hits,
            offload_hit_rate: ratio(st.hits, gpu.queries),
            external_hit_rate: ratio(st.hits, st.queries),
            external_queries: st.queries,
            combined_hit_rate: ratio(gpu.hits + st.hits, gpu.queries),
            loads: st.loads,
            loaded_bytes: st.loaded_bytes,
            stored_bytes: st.stored_bytes,
            store_refusals: st.store_refusals,
            link_gb_s: self.config.gpu.pcie_gb_s,
        })
    }
}

/// vLLM's memory budget as the report shows it: GiB per GPU and per replica, and its startup lines.
fn gpu_memory_report(b: &MemoryBudget) -> GpuMemoryReport {
    let gib = |bytes: f64| round_to(bytes / GIB as f64, 4);
    GpuMemoryReport {
        gpu_memory_utilization: b.gpu_memory_utilization,
        tensor_parallel_size: b.tensor_parallel_size,
        requested_gib_per_gpu: gib(b.requested_bytes as f64),
        weights_gib_per_gpu: gib(b.weights_bytes as f64),
        peak_activation_gib_per_gpu: gib(b.peak_activation_bytes as f64),
        cuda_graph_gib_per_gpu: gib(b.cuda_graph_bytes as f64),
        non_torch_gib_per_gpu: gib(b.non_torch_bytes as f64),
        kv_gib_per_gpu: gib(b.available_kv_bytes as f64),
        kv_gib_per_replica: gib(b.replica_kv_bytes() as f64),
        kv_heads_per_gpu: b.kv_heads_per_gpu,
        startup_lines: b.startup_lines(),
    }
}

/// What the page shows when a cell of the map is hovered.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RequestView {
    pub request: u32,
    pub class: u16,
    pub status: String,
    pub arrival_s: f64,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub n: u32,
    pub preemptions: u32,
    pub samples: Vec<SampleView>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SampleView {
    pub seq: u32,
    pub generated: u32,
    pub kv_tokens: u32,
    pub finished: bool,
    /// Paged: physical block ids in logical order.
    pub block_table: Vec<u32>,
    pub shared_blocks: u32,
    pub copied_blocks: u32,
    /// Contiguous: [start, len, live] in token slots.
    pub slab: Option<[u32; 3]>,
    /// Hybrid KV cache groups: every group's block table in group order (group 0's is also
    /// `block_table`), with the null block (0) where a window freed a block; empty otherwise.
    pub kv_cache_groups: Vec<Vec<u32>>,
}

impl Simulation {
    /// Requests (groups of `n` samples) in a state: a v1 group runs while any sample runs.
    fn groups_in(&self, status: GroupStatus) -> u32 {
        self.groups.iter().filter(|g| g.status == status).count() as u32
    }

    pub fn request_view(&self, request: u32) -> Option<RequestView> {
        let g = self.groups.get(request as usize)?;
        let samples = g
            .samples
            .iter()
            .map(|s| {
                let mut v = SampleView {
                    seq: s.seq,
                    generated: s.generated,
                    kv_tokens: 0,
                    finished: s.finished,
                    block_table: Vec::new(),
                    shared_blocks: 0,
                    copied_blocks: 0,
                    slab: None,
                    kv_cache_groups: Vec::new(),
                };
                match &self.kv {
                    KvCacheManager::Paged(p) => {
                        if let Some(t) = p.table(s.seq) {
                            v.kv_tokens = t.num_tokens;
                            v.block_table = t.blocks.clone();
                            v.shared_blocks = t.blocks.iter().filter(|&&b| p.pool().holders(b) > 1).count() as u32;
                            v.copied_blocks = t.blocks.iter().filter(|&&b| p.pool().copied(b)).count() as u32;
                        }
                        if let Some(h) = p.kv_cache_groups() {
                            v.kv_cache_groups = (0..h.len())
                                .filter_map(|g| p.group_table(g, s.seq).map(|t| t.blocks.clone()))
                                .collect();
                        }
                    }
                    KvCacheManager::Contiguous(c) => {
                        if let Some(slab) = c.slab(s.seq) {
                            v.kv_tokens = slab.live;
                            v.slab = Some([slab.start, slab.len, slab.live]);
                        }
                    }
                }
                v
            })
            .collect();
        Some(RequestView {
            request,
            class: g.class,
            status: format!("{:?}", g.status).to_ascii_lowercase(),
            arrival_s: g.arrival_us as f64 / 1e6,
            prompt_tokens: g.prompt_tokens,
            max_tokens: g.max_tokens,
            n: g.n(),
            preemptions: g.preemptions,
            samples,
        })
    }
}
