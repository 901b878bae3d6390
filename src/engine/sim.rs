//! `Simulation`: one seeded run of one configuration. `step()` admits arrivals, asks the
//! scheduler for a batch, advances simulated time by the step-time model, and applies the results
//! (prompts fork into samples, tokens are sampled, finished sequences free their KV).
//!
//! Arrivals are known up front (Poisson, a trace) or, in a closed loop
//! (`Arrival::Concurrency`), as the run goes: each request that ends (finished or refused) frees
//! its client, whose next request arrives one client round trip later.

use super::alloc::{ContiguousAllocator, KvCacheManager, PagedAllocator, RequestId, SeqId};
use super::clock::StepClock;
use super::config::{AllocatorConfig, ConfigError, SimConfig};
use super::memory_map::MemoryMap;
use super::metrics::{GapHistogram, Integrals, Rejection, Report, Series, StepPoint};
use super::model::GIB;
use super::request::{GroupStatus, Sequence, SequenceGroup};
use super::scheduler::{HolReason, Scheduler};
use super::workload::{generate, Arrival, RequestSpec};
use std::collections::VecDeque;
use std::sync::Arc;

mod apply;
pub mod checkpoints;
mod cohort;
mod events;
mod feed;
pub mod observe;
mod offload;

use cohort::DecodeCohort;

/// Cell size (tokens) of the contiguous memory map, matching vLLM's default block size.
pub const CONTIGUOUS_CELL_TOKENS: u32 = 16;

/// How `Simulation` takes its steps. Both give the same run, bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stepping {
    /// Event-driven where the cohort can take the step, step by step elsewhere.
    #[default]
    Events,
    /// Every step as the scheduler plans it, request by request: the reference.
    Reference,
}

#[derive(Clone, Debug)]
pub struct Simulation {
    config: SimConfig,
    /// Every request of the run, made up front and never changed: shared by clones (the
    /// checkpoints' snapshots) instead of copied.
    requests: Arc<Vec<RequestSpec>>,
    groups: Vec<SequenceGroup>,
    next_seq: SeqId,
    kv: KvCacheManager,
    scheduler: Scheduler,
    clock: StepClock,
    /// The model's sliding window (0: none), which the step's work caps windowed layers' reads at.
    window: u32,
    duration_us: u64,
    /// When the run stops at the latest (`SimConfig::end_limit_us`): `duration_us`, or later with
    /// `until_all_finished`.
    end_limit_us: u64,
    /// Closed loop: when each free client sends its next request, in the order the clients came
    /// free (the next request to arrive takes the front). None for arrivals known up front.
    clients: Option<VecDeque<u64>>,
    /// Every request arriving before this time is in `requests` (`u64::MAX`: all of them, made
    /// up front). A fleet's replica is fed as its router routes (`fleet.rs`): it runs no further
    /// than this, idles only to an arrival it was fed, and is not finished while more may come.
    feed_until_us: u64,
    now_us: u64,
    steps: u64,
    series: Series,
    integrals: Integrals,
    hol_blocked_steps: u64,
    hol_blocked_with_free_memory_steps: u64,
    /// Why the head of the waiting queue was not admitted in the last step (None: it was, or
    /// none waited).
    last_hol: Option<HolReason>,
    running_max: u32,
    finished: u32,
    /// Samples finished (v1 requests, children counted one by one).
    finished_seqs: u64,
    /// Tokens scheduled over all steps.
    scheduled_tokens: u64,
    output_tokens: u64,
    ttft_us: Vec<f64>,
    tpot_us: Vec<f64>,
    /// End-to-end latency (arrival to finish) of every finished request.
    e2e_us: Vec<f64>,
    /// Every gap between two consecutive output tokens of a sample (ITL).
    itl: GapHistogram,
    /// Prompt and output tokens of the finished requests, and the last finish (throughput over
    /// the benchmark's duration).
    finished_input_tokens: u64,
    finished_output_tokens: u64,
    last_finish_us: u64,
    rejections: Vec<Rejection>,
    stepping: Stepping,
    /// Steps the cohort took (the rest ran step by step).
    event_steps: u64,
    /// The running requests as formulas of a tick (event-driven stepping), written down into
    /// `groups` and `kv` by `sync`.
    cohort: DecodeCohort,
}

impl Simulation {
    pub fn new(config: SimConfig) -> Result<Simulation, ConfigError> {
        config.validate()?;
        if config.replicas > 1 {
            // engine::fleet::Fleet runs a fleet, a Simulation per replica (the lab's full module
            // and `kvlab run` do); a run alone (a replay, the worker's long run) holds one.
            return Err(ConfigError::new(
                "replicas",
                "this run holds one replica: run the fleet with `kvlab run`, or set replicas to 1",
            ));
        }
        let clock = config.clock();
        Ok(Simulation::with_clock(config, clock))
    }

    /// The configuration's own traffic under a given clock (`kvlab validate --fit` tries many).
    /// The configuration must already be valid.
    pub fn with_clock(config: SimConfig, clock: StepClock) -> Simulation {
        let requests = generate(&config.workload, config.duration_us(), config.seed, config.scheduler.max_model_len);
        Simulation::with_requests(config, requests, clock)
    }

    /// A run of given requests under a given clock (`kvlab replay` counts steps with
    /// `StepClock::one_tick_per_step`). The configuration must already be valid; the run's end
    /// limit is bounded in steps of this clock's shortest step.
    pub fn with_requests(config: SimConfig, requests: Vec<RequestSpec>, clock: StepClock) -> Simulation {
        let capacity = config.capacity_tokens();
        let (kv, reserve, block_size) = match config.allocator {
            AllocatorConfig::Contiguous { reserve, fit } => {
                (KvCacheManager::Contiguous(ContiguousAllocator::new(capacity as u32, fit)), Some(reserve), None)
            }
            AllocatorConfig::Paged { block_size, prefix_caching } => (
                KvCacheManager::Paged({
                    let p = PagedAllocator::new(
                        config.num_gpu_blocks().unwrap_or(0) as u32,
                        block_size,
                        prefix_caching,
                        config.scheduler.watermark(),
                        config.scheduler.engine,
                    );
                    match config.kv_cache_group_kinds() {
                        // vLLM v1's hybrid KV cache; one step's tokens are in flight (no async
                        // scheduling, no pipeline parallelism).
                        Some(kinds) => p.with_kv_cache_groups(
                            &kinds,
                            config.scheduler.max_num_batched_tokens,
                            config.scheduler.max_model_len,
                        ),
                        None => p,
                    }
                }),
                None,
                Some(block_size),
            ),
        };
        let bpt = config.kv_bytes_per_token();
        let swap_blocks = match block_size {
            Some(bs) => (config.scheduler.swap_space_gib * GIB as f64) as u64 / (bpt * u64::from(bs)),
            None => 0,
        };
        let clients = match config.workload.arrival {
            Arrival::Concurrency { max_concurrency, .. } => {
                Some(VecDeque::from(vec![0; (max_concurrency as usize).min(requests.len())]))
            }
            Arrival::Poisson { .. } | Arrival::Trace { .. } => None,
        };
        Simulation {
            scheduler: Self::scheduler_for(&config, reserve, swap_blocks),
            duration_us: config.duration_us(),
            end_limit_us: config.end_limit_with(clock.floor_us()),
            clock,
            window: config.model.sliding_window().map_or(0, |w| w.window),
            clients,
            feed_until_us: u64::MAX,
            config,
            groups: Vec::with_capacity(requests.len()),
            requests: Arc::new(requests),
            next_seq: 0,
            kv,
            now_us: 0,
            steps: 0,
            series: Series::new(),
            integrals: Integrals::default(),
            hol_blocked_steps: 0,
            hol_blocked_with_free_memory_steps: 0,
            last_hol: None,
            running_max: 0,
            finished: 0,
            finished_seqs: 0,
            scheduled_tokens: 0,
            output_tokens: 0,
            ttft_us: Vec::new(),
            tpot_us: Vec::new(),
            e2e_us: Vec::new(),
            itl: GapHistogram::default(),
            finished_input_tokens: 0,
            finished_output_tokens: 0,
            last_finish_us: 0,
            rejections: Vec::new(),
            stepping: Stepping::default(),
            event_steps: 0,
            cohort: DecodeCohort::default(),
        }
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }
    pub fn now_us(&self) -> u64 {
        self.now_us
    }
    /// The configured `duration_s`, µs: arrivals of a Poisson or trace workload fall before it,
    /// and a run without `until_all_finished` ends there.
    pub fn duration_us(&self) -> u64 {
        self.duration_us
    }
    /// When the run stops at the latest: `duration_us`, or with `until_all_finished` the drain
    /// limit (`SimConfig::end_limit_us`); such a run ends earlier, once all its requests finish.
    pub fn end_limit_us(&self) -> u64 {
        self.end_limit_us
    }
    /// When the run ends, as far as is known now: its end once done, else `end_limit_us`.
    pub fn end_us(&self) -> u64 {
        if self.is_done() {
            self.now_us.min(self.end_limit_us)
        } else {
            self.end_limit_us
        }
    }
    pub fn is_done(&self) -> bool {
        self.now_us >= self.end_limit_us || (self.config.until_all_finished && self.all_finished())
    }
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// Steps taken event-driven so far (see `Stepping`).
    pub fn event_steps(&self) -> u64 {
        self.event_steps
    }
    pub fn series(&self) -> &[StepPoint] {
        self.series.points()
    }
    pub fn kv(&self) -> &KvCacheManager {
        &self.kv
    }
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }
    pub fn requests(&self) -> &[RequestSpec] {
        &self.requests
    }
    pub fn groups(&self) -> &[SequenceGroup] {
        &self.groups
    }
    pub fn clock(&self) -> &StepClock {
        &self.clock
    }
    /// Requests refused so far, with why.
    pub fn rejections(&self) -> &[Rejection] {
        &self.rejections
    }
    /// Samples finished so far (children of `n > 1` counted one by one).
    pub fn finished_seqs(&self) -> u64 {
        self.finished_seqs
    }
    /// Tokens scheduled over all steps so far.
    pub fn scheduled_tokens(&self) -> u64 {
        self.scheduled_tokens
    }
    /// Requests given to this run that have not ended (finished or refused), those not yet
    /// arrived included: what a router counts as a replica's load (SGLang's in-flight requests).
    pub fn in_flight(&self) -> usize {
        self.requests.len() - self.finished as usize - self.rejections.len()
    }

    /// Every request that will arrive has arrived and none is left to run.
    pub fn all_finished(&self) -> bool {
        self.feed_until_us == u64::MAX && self.groups.len() == self.requests.len() && self.scheduler.is_idle()
    }

    /// The physical KV memory map right now.
    pub fn memory_map(&self) -> MemoryMap {
        let unfinished = |r: RequestId| {
            self.groups
                .get(r as usize)
                .is_some_and(|g| !matches!(g.status, GroupStatus::Finished | GroupStatus::Rejected))
        };
        self.kv.memory_map(CONTIGUOUS_CELL_TOKENS, unfinished)
    }

    /// Runs steps until simulated time reaches `t_us` (or the end; a replica, no further than it
    /// has been fed).
    pub fn run_until(&mut self, t_us: u64) {
        let t_us = t_us.min(self.end_limit_us).min(self.feed_until_us);
        while self.now_us < t_us && self.advance() {}
        self.sync();
    }

    pub fn run_to_end(&mut self) -> Report {
        self.run_until(self.end_limit_us);
        self.report()
    }

    /// Allocator, scheduler and request bookkeeping agree (see ARCHITECTURE.md, Invariants).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.kv.check_invariants()?;
        self.scheduler.check_invariants(&self.groups)?;
        for g in &self.groups {
            for s in &g.samples {
                if s.num_computed > s.num_tokens || s.generated > s.target {
                    return Err(format!("request {} sample {} counts are inconsistent", g.request, s.seq));
                }
            }
        }
        if let Arrival::Concurrency { max_concurrency, .. } = self.config.workload.arrival {
            // A closed loop: every client has one request out or is free to send one.
            let ended = |g: &&SequenceGroup| matches!(g.status, GroupStatus::Finished | GroupStatus::Rejected);
            let in_flight = self.groups.len() - self.groups.iter().filter(ended).count();
            let free = self.clients.as_ref().map_or(0, VecDeque::len);
            let clients = (max_concurrency as usize).min(self.requests.len());
            if in_flight + free != clients {
                return Err(format!(
                    "closed loop of {max_concurrency} clients: {in_flight} requests in flight, {free} clients free"
                ));
            }
        }
        Ok(())
    }

    /// When the next request arrives, if that is known yet (a closed loop knows it once a client
    /// is free); None once every request has arrived.
    pub fn next_arrival_us(&self) -> Option<u64> {
        let spec = self.requests.get(self.groups.len())?;
        match &self.clients {
            Some(free) => free.front().copied(),
            None => Some(spec.arrival_us),
        }
    }

    /// A request ended (finished or refused): in a closed loop its client's next request reaches
    /// the engine one round trip later.
    fn client_free(&mut self) {
        if let Some(free) = &mut self.clients {
            let round_trip_us = match self.config.workload.arrival {
                Arrival::Concurrency { round_trip_us, .. } => round_trip_us,
                Arrival::Poisson { .. } | Arrival::Trace { .. } => 0,
            };
            free.push_back(self.now_us.saturating_add(round_trip_us));
        }
    }

    fn admit_arrivals(&mut self) {
        let requests = Arc::clone(&self.requests);
        while let Some(spec) = requests.get(self.groups.len()) {
            let Some(arrival_us) = self.next_arrival_us() else { break };
            if arrival_us > self.now_us || arrival_us >= self.end_limit_us {
                break;
            }
            if let Some(free) = &mut self.clients {
                free.pop_front();
            }
            let n = spec.n();
            let samples = (0..n)
                .map(|k| Sequence {
                    seq: self.next_seq + k,
                    num_tokens: spec.prompt_tokens,
                    num_computed: 0,
                    generated: 0,
                    target: spec.output_tokens[k as usize],
                    finished: false,
                    preemptions: 0,
                    last_token_us: 0,
                })
                .collect();
            self.next_seq += n;
            let mut g = SequenceGroup {
                request: spec.id,
                arrival_us,
                class: spec.class,
                prompt_tokens: spec.prompt_tokens,
                max_tokens: spec.max_tokens,
                shared_prefix_tokens: spec.shared_prefix_tokens,
                tenant: spec.tenant,
                prompt_blocks: spec.prompt_blocks.clone(),
                status: GroupStatus::Waiting,
                forked: self.config.paged_v1(),
                prefill_computed: 0,
                samples,
                first_token_us: None,
                finish_us: None,
                swapped: None,
                preemptions: 0,
                reject_reason: None,
            };
            if let Some(reason) = self.never_fits(spec) {
                g.status = GroupStatus::Rejected;
                self.rejections.push(Rejection { request: spec.id, reason: reason.clone() });
                g.reject_reason = Some(reason);
                self.client_free();
            } else {
                self.scheduler.add_request(&g);
            }
            self.groups.push(g);
        }
    }

    /// Why a request can never run to completion under this configuration, if it cannot.
    fn never_fits(&self, spec: &RequestSpec) -> Option<String> {
        let s = &self.config.scheduler;
        if spec.prompt_tokens >= s.max_model_len {
            return Some(format!("prompt of {} tokens ≥ max_model_len {}", spec.prompt_tokens, s.max_model_len));
        }
        if !self.config.paged_v1() && spec.n() > s.max_num_seqs {
            return Some(format!("n = {} > max_num_seqs {}", spec.n(), s.max_num_seqs));
        }
        if !s.chunked_prefill && spec.prompt_tokens > s.max_num_batched_tokens {
            return Some(format!(
                "prompt of {} tokens > max_num_batched_tokens {} without chunked prefill",
                spec.prompt_tokens, s.max_num_batched_tokens
            ));
        }
        let need = self.config.worst_case_tokens(spec.prompt_tokens, spec.max_tokens, spec.n());
        let capacity = self.config.capacity_tokens();
        (need > capacity).then(|| format!("needs up to {need} tokens of KV; the pool holds {capacity}"))
    }

    fn reject_head(&mut self, reason: &str) {
        if let Some(r) = self.scheduler.take_waiting_head() {
            let seqs: Vec<SeqId> = self.groups[r as usize].samples.iter().map(|s| s.seq).collect();
            for seq in seqs {
                self.offload_request_finished(seq);
            }
            let g = &mut self.groups[r as usize];
            g.status = GroupStatus::Rejected;
            g.reject_reason = Some(reason.to_string());
            self.rejections.push(Rejection { request: r, reason: reason.to_string() });
            self.client_free();
            // A preempted request may have blocks of its own cached; nothing will look them up.
            self.kv.forget_request(r);
        }
    }

    /// Advances the simulation by one scheduler step (or an idle gap). False once done.
    pub fn step(&mut self) -> bool {
        let more = self.advance();
        self.sync();
        more
    }

    /// One step, leaving the cohort's requests unwritten (`sync` writes them down).
    fn advance(&mut self) -> bool {
        if self.is_done() {
            return false;
        }
        self.admit_arrivals();
        self.poll_offload();
        if self.scheduler.is_idle() {
            // Nothing runs: on to the next arrival, or to the end when none is known (a closed
            // loop whose requests all arrived).
            // A replica whose next request is not routed yet stays where it is: the idle gap
            // is one stretch, to the arrival it is fed next, as if it had known it all along.
            let next = match self.next_arrival_us() {
                Some(t) => t,
                None if self.feed_until_us != u64::MAX => return false,
                None => self.end_limit_us,
            };
            self.advance_idle(next.min(self.end_limit_us));
            if self.is_done() {
                self.admit_arrivals();
            }
            return true;
        }
        if self.event_step() {
            if self.is_done() {
                self.admit_arrivals();
            }
            return true;
        }
        self.dissolve_cohort();
        let out = self.scheduler.schedule(&mut self.groups, &mut self.kv);
        for &r in &out.aborted {
            let reason = "aborted: CPU swap space is full (vLLM v0 raises an error); raise scheduler.swap_space_gib";
            self.groups[r as usize].reject_reason = Some(reason.to_string());
            self.rejections.push(Rejection { request: r, reason: reason.to_string() });
            self.client_free();
        }
        let did_something = out.preempted > 0 || out.swapped_blocks > 0 || !out.aborted.is_empty();
        if out.work.is_empty() && !did_something {
            if self.wait_for_transfers() {
                // Nothing computes until the host link delivers (a load, or a store a lookup waits on).
            } else if self.scheduler.num_running() == 0 && self.scheduler.num_swapped() == 0 {
                self.reject_head("cannot be admitted even into an empty KV cache");
            } else {
                let next = self.now_us + self.clock.floor_us();
                self.advance_idle(next.min(self.end_limit_us));
            }
            return true;
        }
        // A step that only preempted or swapped still takes a step (and its PCIe time).
        self.run_batch(out);
        if self.is_done() {
            self.admit_arrivals(); // every request that arrived before the end is counted
        }
        true
    }

    fn advance_idle(&mut self, until_us: u64) {
        if until_us <= self.now_us {
            self.now_us = until_us.max(self.now_us);
            return;
        }
        let sample = self.sample(until_us);
        self.integrals.add(until_us - self.now_us, &sample, self.kv.capacity_tokens());
        self.series.push(sample);
        self.now_us = until_us;
    }

    fn sample(&self, t_us: u64) -> StepPoint {
        StepPoint {
            t_us,
            allocated_tokens: self.kv.allocated_tokens(),
            live_tokens: self.kv.live_tokens(),
            running: self.scheduler.num_running() as u32,
            waiting: self.scheduler.num_waiting() as u32,
            swapped: self.scheduler.num_swapped() as u32,
            preemptions: self.scheduler.preemptions().0 as u32,
        }
    }
}
