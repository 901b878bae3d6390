//! vLLM v1's scheduler, step for step as `Scheduler.schedule()` in vLLM 0.33.0 runs it with FCFS,
//! no speculative decoding and no KV connector (the rules, with file and line, are listed in
//! docs/VLLM_PARITY.md; `tests/vllm_parity.rs` replays vLLM's own outputs against this code).
//!
//! Every sample is a request of its own (vLLM fans `n > 1` out into child requests). A step:
//!
//! 1. Running requests, in admission order, each take `num_tokens − num_computed` tokens (a
//!    prefill chunk or one decode token) from the shared budget. When the pool is short the
//!    last running request is preempted (recompute: blocks freed, back to the front of the
//!    waiting queue) until the allocation succeeds or the request preempted itself, which ends
//!    the running pass.
//! 2. Only if nothing was preempted, waiting requests are admitted from the head while budget
//!    and `max_num_seqs` allow: prefix-cache hits up to `num_tokens − 1`, then the whole known
//!    sequence must fit (above the watermark while anything runs) and the first chunk is
//!    allocated. The first request that cannot be admitted stops admission.

use std::collections::VecDeque;

use super::output::{HolReason, ScheduledWork, SchedulerOutput, Target};
use crate::engine::alloc::{AdmitRequest, Blocked, KvCacheManager, RequestId, SeqId, TokenIdentity};
use crate::engine::config::SchedulerConfig;
#[cfg(feature = "kv-offload")]
use crate::engine::offload::OffloadingConnector;
use crate::engine::request::{GroupStatus, SequenceGroup};

/// One v1 request: sample `sample` of the group `request`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRef {
    pub request: RequestId,
    pub sample: u32,
}

/// An admission refused at an allocator epoch (nothing placed or released since means the
/// same answer), so a long head-of-line wait does not redo the prefix lookup every step.
#[derive(Clone, Copy, Debug)]
struct Refusal {
    at: SampleRef,
    epoch: u64,
    /// Tokens left after the prefix-cache hits, and the chunk that was refused.
    remaining: u32,
    num_new_tokens: u32,
    apply_watermark: bool,
    blocked: Blocked,
}

#[derive(Clone, Debug)]
pub struct V1Scheduler {
    cfg: SchedulerConfig,
    waiting: VecDeque<SampleRef>,
    /// In admission order: the last is the first to be preempted.
    running: Vec<SampleRef>,
    num_preemptions: u64,
    scratch_work: Vec<ScheduledWork>,
    last_refusal: Option<Refusal>,
    /// The host tier's connector (`kv_offload`), as vLLM's scheduler holds its `connector`.
    #[cfg(feature = "kv-offload")]
    connector: Option<Box<OffloadingConnector>>,
}

impl SampleRef {
    fn key(self) -> u64 {
        u64::from(self.request) << 32 | u64::from(self.sample)
    }
}

/// Where `at` is in a queue. Compared eight at a time, which the compiler vectorizes: a finish
/// looks through the whole running queue (hundreds of requests on a large GPU).
fn position_of(queue: &[SampleRef], at: SampleRef) -> Option<usize> {
    let key = at.key();
    let mut base = 0;
    for chunk in queue.chunks(8) {
        if chunk.iter().fold(false, |hit, x| hit | (x.key() == key)) {
            return chunk.iter().position(|x| x.key() == key).map(|i| base + i);
        }
        base += chunk.len();
    }
    None
}

impl V1Scheduler {
    pub fn new(cfg: SchedulerConfig) -> Self {
        V1Scheduler {
            cfg,
            waiting: VecDeque::new(),
            running: Vec::new(),
            num_preemptions: 0,
            scratch_work: Vec::new(),
            last_refusal: None,
            #[cfg(feature = "kv-offload")]
            connector: None,
        }
    }

    /// With a host tier's connector (`kv_offload`).
    #[cfg(feature = "kv-offload")]
    pub fn with_connector(mut self, connector: Option<OffloadingConnector>) -> Self {
        self.connector = connector.map(Box::new);
        self
    }

    #[cfg(feature = "kv-offload")]
    pub fn connector(&self) -> Option<&OffloadingConnector> {
        self.connector.as_deref()
    }

    #[cfg(feature = "kv-offload")]
    pub fn connector_mut(&mut self) -> Option<&mut OffloadingConnector> {
        self.connector.as_deref_mut()
    }

    /// `seq`'s load from the host tier is in flight.
    fn host_loading(&self, seq: SeqId) -> bool {
        #[cfg(feature = "kv-offload")]
        if let Some(c) = &self.connector {
            return c.is_loading(seq);
        }
        let _ = seq;
        false
    }

    /// Tokens the host tier holds for a request past its GPU hit (0 without a tier); None: it
    /// waits a step (`OffloadingConnector::lookup`).
    fn host_lookup(&mut self, seq: SeqId, identity: &TokenIdentity, gpu_hit: u32, num_tokens: u32) -> Option<u32> {
        #[cfg(feature = "kv-offload")]
        if let Some(c) = &mut self.connector {
            return c.lookup(seq, identity, gpu_hit, num_tokens);
        }
        let _ = (seq, identity, gpu_hit, num_tokens);
        Some(0)
    }

    /// Tells the host tier a request was admitted (`OffloadingConnector::admitted`).
    fn host_admitted(&mut self, seq: SeqId, at: SampleRef, gpu_hit: u32, external: u32, num_tokens: u32, again: bool) {
        #[cfg(feature = "kv-offload")]
        if let Some(c) = &mut self.connector {
            c.admitted(seq, (at.request, at.sample), gpu_hit, external, num_tokens, again);
        }
        let _ = (seq, at, gpu_hit, external, num_tokens, again);
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }

    pub fn recycle(&mut self, work: Vec<ScheduledWork>) {
        self.scratch_work = work;
    }

    /// Queues every sample of an arrived request, in order (vLLM adds the children together).
    pub fn add_request(&mut self, g: &SequenceGroup) {
        for k in 0..g.n() {
            self.waiting.push_back(SampleRef { request: g.request, sample: k });
        }
    }

    /// Takes the head's request off the waiting queue, all its samples with it.
    pub fn take_waiting_head(&mut self) -> Option<RequestId> {
        let head = self.waiting.pop_front()?;
        self.waiting.retain(|s| s.request != head.request);
        Some(head.request)
    }

    pub fn running(&self) -> &[SampleRef] {
        &self.running
    }

    pub fn waiting(&self) -> &VecDeque<SampleRef> {
        &self.waiting
    }

    pub fn preemptions(&self) -> u64 {
        self.num_preemptions
    }

    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// A finished sample leaves the running queue; its group runs while another sample does.
    pub fn finish_sample(&mut self, groups: &mut [SequenceGroup], at: SampleRef) {
        if let Some(pos) = position_of(&self.running, at) {
            self.running.remove(pos);
        }
        self.refresh_status(groups, at.request);
    }

    /// Every unfinished sample of a waiting or running group is in exactly one queue, finished
    /// ones in none; a group is running exactly when one of its samples is; at most
    /// `max_num_seqs` run.
    pub fn check_invariants(&self, groups: &[SequenceGroup]) -> Result<(), String> {
        if self.running.len() > self.cfg.max_num_seqs as usize {
            return Err(format!("{} running requests > max_num_seqs", self.running.len()));
        }
        let mut seen: Vec<Vec<u8>> = groups.iter().map(|g| vec![0; g.samples.len()]).collect();
        for at in self.running.iter().chain(self.waiting.iter()) {
            seen[at.request as usize][at.sample as usize] += 1;
        }
        for (g, seen) in groups.iter().zip(&seen) {
            let queued = matches!(g.status, GroupStatus::Running | GroupStatus::Waiting);
            for (s, &n) in g.samples.iter().zip(seen) {
                let should = u8::from(queued && !s.finished);
                if n != should {
                    return Err(format!("request {} sample {} is in {n} queues", g.request, s.seq));
                }
            }
            let runs = self.running.iter().any(|at| at.request == g.request);
            if runs != (g.status == GroupStatus::Running) {
                return Err(format!("request {} is {:?} but running = {runs}", g.request, g.status));
            }
        }
        Ok(())
    }

    /// Plans one step and makes its allocations.
    pub fn schedule(&mut self, groups: &mut [SequenceGroup], kv: &mut KvCacheManager) -> SchedulerOutput {
        let mut out = self.empty_output();
        let mut budget = self.cfg.max_num_batched_tokens;
        self.schedule_running_from(0, groups, kv, &mut out, &mut budget);
        self.schedule_after_running(groups, kv, &mut out, budget);
        out
    }

    /// An output to fill, reusing the last step's work list.
    pub(crate) fn empty_output(&mut self) -> SchedulerOutput {
        SchedulerOutput::reusing(std::mem::take(&mut self.scratch_work))
    }

    /// The step's second half, once the running requests are served with `budget` left:
    /// admissions from the waiting queue if nothing was preempted.
    pub(crate) fn schedule_after_running(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        mut budget: u32,
    ) {
        if out.preempted == 0 {
            self.schedule_waiting(groups, kv, out, &mut budget);
        } else if !self.waiting.is_empty() {
            out.hol = Some(HolReason::Memory(Blocked { enough_total_free: false }));
        }
    }

    /// Takes the newest running request off the running queue (the next preemption victim).
    pub(crate) fn pop_running(&mut self) -> Option<SampleRef> {
        self.running.pop()
    }

    /// The running pass over the running queue from position `from` on (the event-driven
    /// engine serves the positions before it itself).
    pub(crate) fn schedule_running_from(
        &mut self,
        from: usize,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) {
        let mut i = from;
        while i < self.running.len() && *budget > 0 {
            let at = self.running[i];
            let s = &groups[at.request as usize].samples[at.sample as usize];
            // The rest of its prefill or one decode token, within the budget and max_model_len.
            let room = self.cfg.max_model_len.saturating_sub(s.num_computed + 1);
            let new = (s.num_tokens - s.num_computed).min(*budget).min(room);
            if new == 0 {
                i += 1;
                continue;
            }
            let (seq, computed) = (s.seq, s.num_computed);
            let mut scheduled = true;
            while kv.allocate_slots(seq, new).is_none() {
                let victim = self.running.pop().expect("the request itself is running");
                self.preempt(victim, groups, kv, out);
                if victim == at {
                    scheduled = false;
                    break;
                }
            }
            if !scheduled {
                break;
            }
            *budget -= new;
            out.work.push(ScheduledWork {
                request: at.request,
                target: Target::Sample(at.sample),
                num_new_tokens: new,
                context_tokens: computed + new,
            });
            i += 1;
        }
    }

    /// Recompute preemption: the KV is dropped and the request waits at the queue's front to
    /// prefill its prompt and generated tokens again in one pass.
    pub(crate) fn preempt(
        &mut self,
        at: SampleRef,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
    ) {
        let g = &mut groups[at.request as usize];
        let s = &mut g.samples[at.sample as usize];
        kv.free(s.seq);
        s.num_computed = 0;
        s.preemptions += 1;
        g.preemptions += 1;
        self.num_preemptions += 1;
        out.preempted += 1;
        self.waiting.push_front(at);
        self.refresh_status(groups, at.request);
    }

    /// Admissions from the waiting queue, in order, while budget and `max_num_seqs` allow. With
    /// a host tier, a request whose load is in flight keeps its place and is passed over, one
    /// whose load is done is admitted with the loaded tokens computed, and one whose lookup must
    /// wait a step (a chunk of its hit still being stored or loaded) is passed over too, as
    /// vLLM's `skip_request` does.
    fn schedule_waiting(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) {
        let mut i = 0;
        while *budget > 0 {
            let Some(&at) = self.waiting.get(i) else { return };
            if self.running.len() >= self.cfg.max_num_seqs as usize {
                out.hol = Some(HolReason::SeqLimit);
                return;
            }
            let g = &groups[at.request as usize];
            let s = &g.samples[at.sample as usize];
            if self.host_loading(s.seq) {
                i += 1;
                continue;
            }
            if cfg!(feature = "kv-offload") && kv.seq_tokens(s.seq).is_some() {
                // Its load is done: the loaded tokens are computed, the rest is its prefill.
                // (Only a host tier leaves a waiting request holding blocks.)
                let (seq, computed) = (s.seq, s.num_computed);
                let remaining = s.num_tokens - computed;
                if !self.cfg.chunked_prefill && remaining > *budget {
                    out.hol = Some(HolReason::TokenBudget);
                    return;
                }
                let new = remaining.min(*budget);
                if kv.allocate_slots(seq, new).is_none() {
                    out.hol = Some(HolReason::Memory(Blocked { enough_total_free: false }));
                    return;
                }
                self.admitted(groups, at, i, computed, new, budget, out);
                continue;
            }
            let identity = g.identity(s.seq);
            let apply_watermark = !self.running.is_empty();
            let epoch = kv.epoch();
            if let Some(blocked) = self.refused_again(at, epoch, *budget, apply_watermark) {
                out.hol = Some(HolReason::Memory(blocked));
                return;
            }
            // Prefix-cache hits (whole blocks, at most num_tokens − 1 tokens), then the host
            // tier's past them, then the rest.
            let computed = kv.computed_blocks(&identity, s.num_tokens);
            let Some(external) = self.host_lookup(s.seq, &identity, computed.num_tokens, s.num_tokens) else {
                i += 1;
                continue;
            };
            let remaining = s.num_tokens - computed.num_tokens;
            if external == 0 && !self.cfg.chunked_prefill && remaining > *budget {
                out.hol = Some(HolReason::TokenBudget);
                return;
            }
            // A load computes nothing in this step: its tokens are written as they arrive.
            let new = if external > 0 { external } else { remaining.min(*budget) };
            let seq = s.seq;
            let preempted_before = s.preemptions > 0;
            let req = AdmitRequest {
                request: at.request,
                parent: seq,
                samples: std::slice::from_ref(&seq),
                identity,
                full_tokens: s.num_tokens.min(self.cfg.max_model_len),
                reserve_tokens: 0,
                apply_watermark,
                preempted_before,
            };
            let admitted =
                if external > 0 { kv.admit_loading(&req, &computed, new) } else { kv.admit(&req, &computed, new) };
            if let Err(blocked) = admitted {
                out.hol = Some(HolReason::Memory(blocked));
                self.last_refusal =
                    Some(Refusal { at, epoch, remaining, num_new_tokens: new, apply_watermark, blocked });
                return;
            }
            self.host_admitted(seq, at, computed.num_tokens, external, s.num_tokens, preempted_before);
            if external > 0 {
                // vLLM's WAITING_FOR_REMOTE_KVS: blocks held, tokens counted computed, no budget.
                groups[at.request as usize].samples[at.sample as usize].num_computed = computed.num_tokens + external;
                i += 1;
                continue;
            }
            self.admitted(groups, at, i, computed.num_tokens, new, budget, out);
        }
    }

    /// The waiting request at `i` runs from this step, `new` tokens after its `computed` ones.
    #[allow(clippy::too_many_arguments)]
    fn admitted(
        &mut self,
        groups: &mut [SequenceGroup],
        at: SampleRef,
        i: usize,
        computed: u32,
        new: u32,
        budget: &mut u32,
        out: &mut SchedulerOutput,
    ) {
        let g = &mut groups[at.request as usize];
        g.status = GroupStatus::Running;
        g.samples[at.sample as usize].num_computed = computed;
        *budget -= new;
        out.work.push(ScheduledWork {
            request: at.request,
            target: Target::Sample(at.sample),
            num_new_tokens: new,
            context_tokens: computed + new,
        });
        self.waiting.remove(i);
        self.running.push(at);
    }

    /// The head's admission was refused at this allocator epoch with the same chunk and
    /// watermark: nothing was placed or released since, so it is refused again (no prefix
    /// lookup, no allocator search).
    fn refused_again(&self, at: SampleRef, epoch: u64, budget: u32, apply_watermark: bool) -> Option<Blocked> {
        let m = self.last_refusal.filter(|m| m.at == at && m.epoch == epoch)?;
        let new = m.remaining.min(budget);
        let fits_budget = self.cfg.chunked_prefill || m.remaining <= budget;
        (fits_budget && new == m.num_new_tokens && m.apply_watermark == apply_watermark).then_some(m.blocked)
    }

    /// A group runs while any of its samples runs, waits while any is queued, else is done.
    fn refresh_status(&self, groups: &mut [SequenceGroup], r: RequestId) {
        let g = &mut groups[r as usize];
        if matches!(g.status, GroupStatus::Finished | GroupStatus::Rejected) {
            return;
        }
        g.status =
            if self.running.iter().any(|at| at.request == r) { GroupStatus::Running } else { GroupStatus::Waiting };
    }
}
