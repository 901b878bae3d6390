//! Replay on vLLM's step clock: the engine runs a step-indexed trace the way the reference
//! harness (`scripts/vllm-reference/harness.py`) runs vLLM's own scheduler, so the two can be
//! compared step for step. Requests of step `s` arrive at the start of step `s`; every step is one
//! `schedule()` and one update; the run ends in the step in which the last request finishes.
//! Readouts are taken right after scheduling, as the harness takes them: running and waiting
//! requests (samples counted one by one), KV usage = 1 − free / usable blocks, and the step's
//! preemptions, prefix-cache queries and hits (first admissions only), scheduled tokens and
//! finished requests.

use super::clock::StepClock;
use super::config::{AllocatorConfig, ConfigError, EngineVersion, SchedulerConfig, SimConfig};
use super::metrics::StepPoint;
use super::model::{model_preset, ModelSpec, GIB};
use super::model_arch::{Attention, Biases, LayerAttention, Mlp, ModelArch, WeightDtype};
use super::sim::Simulation;
use super::workload::{Arrival, RequestSpec, WorkloadConfig};

/// Most steps a replay runs before it gives up (a trace that never drains).
pub const MAX_REPLAY_STEPS: u64 = 1_000_000;

/// One row of a step-indexed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTraceRow {
    pub arrival_step: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Rows with the same prefix id share their first `prefix_tokens` prompt tokens.
    pub prefix: Option<(String, u32)>,
    pub n: u32,
}

/// The harness's flags.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayParams {
    /// vLLM's `num_gpu_blocks` (under v1 block 0 is the null block).
    pub num_blocks: u32,
    pub block_size: u32,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub chunked_prefill: bool,
    pub prefix_caching: bool,
    pub watermark: Option<f64>,
    pub max_model_len: u32,
    pub engine: EngineVersion,
    /// The harness's `--sliding-window W`: every even layer (0, 2, …) attends to its last `W`
    /// tokens, as Gemma-2's do, so vLLM v1 runs two KV cache groups of 16 layers.
    pub sliding_window: Option<u32>,
}

/// What happened on each step (index = step).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplaySteps {
    pub num_running: Vec<u32>,
    pub num_waiting: Vec<u32>,
    pub kv_usage: Vec<f64>,
    pub preemptions_cum: Vec<u64>,
    pub prefix_queries: Vec<u64>,
    pub prefix_hits: Vec<u64>,
    pub tokens_scheduled: Vec<u64>,
    pub finished: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySummary {
    pub steps: u64,
    pub total_preemptions: u64,
    /// None without prefix caching.
    pub prefix_hit_rate: Option<f64>,
    pub mean_kv_usage: f64,
    pub peak_kv_usage: f64,
    pub max_num_running: u32,
    pub num_requests: u64,
    pub total_tokens_scheduled: u64,
    pub prefix_queries: u64,
    pub prefix_hits: u64,
    pub preempted_prefix_queries: u64,
    pub preempted_prefix_hits: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub per_step: ReplaySteps,
    pub summary: ReplaySummary,
}

impl ReplayParams {
    /// The configuration the replay runs: Llama-3-8B's KV shape (what the harness plans with),
    /// FP16, a pool of exactly `num_blocks` blocks.
    pub fn to_config(&self) -> Result<SimConfig, ConfigError> {
        let model = match self.sliding_window {
            None => model_preset("llama-3-8b").expect("shipped model"),
            Some(w) => ModelSpec::from_arch("llama-3-8b-sliding", llama_3_8b_sliding(w)),
        };
        let mut config = SimConfig {
            id: "replay".into(),
            title: "replay".into(),
            duration_s: MAX_REPLAY_STEPS as f64 / 1e6,
            kv_memory_gib: 0.0,
            model,
            allocator: AllocatorConfig::Paged { block_size: self.block_size, prefix_caching: self.prefix_caching },
            scheduler: SchedulerConfig {
                engine: self.engine,
                max_num_seqs: self.max_num_seqs,
                max_num_batched_tokens: self.max_num_batched_tokens,
                max_model_len: self.max_model_len,
                chunked_prefill: self.chunked_prefill,
                watermark: self.watermark,
                ..SchedulerConfig::default()
            },
            workload: WorkloadConfig {
                arrival: Arrival::Trace { rows: Vec::new().into(), max_tokens: 1, hash_block_tokens: 16 },
                classes: Vec::new(),
            },
            ..SimConfig::default()
        };
        // A pool of exactly num_blocks blocks (of one group's layers under hybrid groups).
        let bytes = u64::from(self.num_blocks) * config.bytes_per_block(self.block_size);
        config.kv_memory_gib = bytes as f64 / GIB as f64;
        config.validate()?;
        if config.num_gpu_blocks() != Some(u64::from(self.num_blocks)) {
            return Err(ConfigError::new("--num-blocks", "the pool does not come out at this many blocks"));
        }
        Ok(config)
    }
}

/// Llama-3-8B's shape (the harness's config.json) with a sliding window of `window` tokens on
/// every even layer, as the harness's `--sliding-window` declares its layers to vLLM.
fn llama_3_8b_sliding(window: u32) -> ModelArch {
    ModelArch {
        architecture: "LlamaForCausalLM".into(),
        layers: 32,
        hidden_size: 4096,
        intermediate_size: 14_336,
        vocab_size: 128_256,
        tie_word_embeddings: false,
        attention: Attention::Grouped { heads: 32, kv_heads: 8, head_dim: 128, bias: false },
        experts: None,
        layer_attention: (0..32)
            .map(|i| if i % 2 == 0 { LayerAttention::SlidingWindow(window) } else { LayerAttention::Full })
            .collect(),
        norms_per_layer: 2,
        mlp: Mlp::Gated,
        biases: Biases::default(),
        qk_norm: false,
        vision_params: 0,
        dtype: WeightDtype::Bf16,
        quantization: None,
        // The step clock replays read no memory budget: no rotary cache is counted.
        rope_cache_elements: 0,
        derived_max_len: None,
    }
}

/// The trace's requests in arrival order (rows of one step keep their order); prefix ids become
/// prefix classes.
pub fn trace_requests(rows: &[StepTraceRow]) -> Vec<RequestSpec> {
    let mut order: Vec<&StepTraceRow> = rows.iter().collect();
    order.sort_by_key(|r| r.arrival_step);
    let mut prefix_ids: Vec<&str> = Vec::new();
    order
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let (class, shared) = match &r.prefix {
                Some((id, tokens)) if *tokens > 0 => {
                    let k = prefix_ids.iter().position(|p| p == id).unwrap_or_else(|| {
                        prefix_ids.push(id);
                        prefix_ids.len() - 1
                    });
                    (k as u16, (*tokens).min(r.prompt_tokens))
                }
                _ => (0, 0),
            };
            RequestSpec {
                id: i as u32,
                arrival_us: r.arrival_step,
                class,
                prompt_tokens: r.prompt_tokens,
                output_tokens: vec![r.output_tokens; r.n as usize],
                max_tokens: r.output_tokens,
                shared_prefix_tokens: shared,
                tenant: 0,
                prompt_blocks: None,
            }
        })
        .collect()
}

/// Counters read after each step, kept to turn them into per-step deltas.
#[derive(Clone, Copy, Default)]
struct Cumulative {
    queries: u64,
    hits: u64,
    scheduled: u64,
    finished: u64,
}

impl Cumulative {
    fn of(sim: &Simulation) -> Self {
        let (prefix, _) = sim.kv().prefix_stats();
        Cumulative {
            queries: prefix.queries,
            hits: prefix.hits,
            scheduled: sim.scheduled_tokens(),
            finished: sim.finished_seqs(),
        }
    }
}

impl ReplaySteps {
    /// Records one engine step that took `ticks` step-clock ticks: the readouts repeat on every
    /// tick, the deltas since `before` land on the first.
    fn record(&mut self, point: &StepPoint, usage: f64, ticks: u64, before: Cumulative, now: Cumulative) {
        for tick in 0..ticks {
            let first = tick == 0;
            let delta = |now: u64, before: u64| if first { now - before } else { 0 };
            self.num_running.push(point.running);
            self.num_waiting.push(point.waiting);
            self.kv_usage.push(usage);
            self.preemptions_cum.push(u64::from(point.preemptions));
            self.prefix_queries.push(delta(now.queries, before.queries));
            self.prefix_hits.push(delta(now.hits, before.hits));
            self.tokens_scheduled.push(delta(now.scheduled, before.scheduled));
            self.finished.push(delta(now.finished, before.finished));
        }
    }

    /// vLLM's engine core keeps stepping while finished request ids are still to be handed to the
    /// workers (`Scheduler.has_requests()` counts them), so the run ends with one empty step.
    fn push_final_empty_step(&mut self) {
        let Some(&cum) = self.preemptions_cum.last() else { return };
        self.num_running.push(0);
        self.num_waiting.push(0);
        self.kv_usage.push(0.0);
        self.preemptions_cum.push(cum);
        for v in [&mut self.prefix_queries, &mut self.prefix_hits, &mut self.tokens_scheduled, &mut self.finished] {
            v.push(0);
        }
    }
}

/// Runs the trace to its last finished request on the step clock.
pub fn replay(rows: &[StepTraceRow], params: &ReplayParams) -> Result<Replay, ConfigError> {
    let config = params.to_config()?;
    let requests = trace_requests(rows);
    let num_requests = requests.iter().map(|r| u64::from(r.n())).sum();
    let mut sim = Simulation::with_requests(config, requests, StepClock::one_tick_per_step());
    let mut steps = ReplaySteps::default();
    let mut before = Cumulative::default();
    while !sim.all_finished() {
        let (t0, series_len) = (sim.now_us(), sim.series().len());
        if t0 >= MAX_REPLAY_STEPS || !sim.step() {
            return Err(ConfigError::new("trace", format!("the trace did not drain in {MAX_REPLAY_STEPS} steps")));
        }
        let ticks = sim.now_us() - t0;
        if ticks == 0 {
            if let Some(r) = sim.rejections().first() {
                return Err(ConfigError::new("trace", format!("request {} is rejected: {}", r.request, r.reason)));
            }
            continue;
        }
        debug_assert_eq!(sim.series().len(), series_len + 1);
        let point = *sim.series().last().expect("a step records a point");
        let usage = point.allocated_tokens as f64 / sim.kv().capacity_tokens() as f64;
        let now = Cumulative::of(&sim);
        steps.record(&point, usage, ticks, before, now);
        before = now;
    }
    steps.push_final_empty_step();
    let summary = summarize(&sim, &steps, params, num_requests);
    Ok(Replay { per_step: steps, summary })
}

fn summarize(sim: &Simulation, steps: &ReplaySteps, params: &ReplayParams, num_requests: u64) -> ReplaySummary {
    let (prefix, preempted) = sim.kv().prefix_stats();
    let n = steps.kv_usage.len();
    ReplaySummary {
        steps: n as u64,
        total_preemptions: sim.scheduler().preemptions().0,
        prefix_hit_rate: params.prefix_caching.then(|| {
            if prefix.queries > 0 {
                prefix.hits as f64 / prefix.queries as f64
            } else {
                0.0
            }
        }),
        mean_kv_usage: if n > 0 { steps.kv_usage.iter().sum::<f64>() / n as f64 } else { 0.0 },
        peak_kv_usage: steps.kv_usage.iter().copied().fold(0.0, f64::max),
        max_num_running: steps.num_running.iter().copied().max().unwrap_or(0),
        num_requests,
        total_tokens_scheduled: sim.scheduled_tokens(),
        prefix_queries: prefix.queries,
        prefix_hits: prefix.hits,
        preempted_prefix_queries: preempted.queries,
        preempted_prefix_hits: preempted.hits,
    }
}
