//! vLLM v0's scheduler (2023, the PagedAttention paper's): an FCFS waiting queue of sequence
//! groups, continuous batching bounded by `max_num_seqs` and `max_num_batched_tokens`, and
//! preemption of the most recently admitted group when a running sequence needs a block the pool
//! does not have (recompute, or swap to a bounded CPU space; a full swap space aborts the group,
//! as v0 raised an error). The contiguous allocator runs under this scheduler too.
//!
//! Order within a step follows v0. Without chunked prefill a step is prefill-first: when new
//! groups are admitted the step runs only their prefills. Otherwise running groups go first (in
//! admission order), then swapped groups come back if nothing was preempted (their decode tokens
//! charged to the same budget), then new groups if nothing is swapped out. When the head of the
//! waiting queue cannot be admitted nothing behind it is (head-of-line blocking).

use std::collections::VecDeque;

use super::output::{HolReason, ScheduledWork, SchedulerOutput, Target};
use crate::engine::alloc::{AdmitRequest, Blocked, KvCacheManager, RequestId, SeqId};
use crate::engine::config::{Reserve, SchedulerConfig};
use crate::engine::request::{GroupStatus, SequenceGroup};

mod preemption;

#[derive(Clone, Debug)]
pub struct V0Scheduler {
    cfg: SchedulerConfig,
    /// None when paged.
    reserve: Option<Reserve>,
    waiting: VecDeque<RequestId>,
    /// In admission order: the last is the newest, the first to be preempted.
    running: Vec<RequestId>,
    swapped: VecDeque<RequestId>,
    swap_capacity_blocks: u64,
    swap_used_blocks: u64,
    num_preemptions: u64,
    num_swap_preemptions: u64,
    /// Reused per step so the hot loop does not allocate.
    scratch_items: Vec<(SeqId, ScheduledWork)>,
    scratch_pairs: Vec<(SeqId, u32)>,
    scratch_work: Vec<ScheduledWork>,
    scratch_seqs: Vec<SeqId>,
    last_refusal: Option<Refusal>,
    /// The largest `n` of any group queued so far: `running.len() × max_n` bounds the running
    /// sequences from above, which spares counting them while admission is far from the limit.
    max_n: u32,
}

/// The last admission the allocator refused, and the allocator epoch it was refused at.
#[derive(Clone, Copy, Debug)]
struct Refusal {
    request: RequestId,
    remaining: u32,
    first: u32,
    epoch: u64,
    blocked: Blocked,
}

impl V0Scheduler {
    pub fn new(cfg: SchedulerConfig, reserve: Option<Reserve>, swap_capacity_blocks: u64) -> Self {
        V0Scheduler {
            cfg,
            reserve,
            waiting: VecDeque::new(),
            running: Vec::new(),
            swapped: VecDeque::new(),
            swap_capacity_blocks,
            swap_used_blocks: 0,
            num_preemptions: 0,
            num_swap_preemptions: 0,
            scratch_items: Vec::new(),
            scratch_pairs: Vec::new(),
            scratch_work: Vec::new(),
            scratch_seqs: Vec::new(),
            last_refusal: None,
            max_n: 0,
        }
    }

    /// Hands a step's work list back so the next step reuses its memory.
    pub fn recycle(&mut self, work: Vec<ScheduledWork>) {
        self.scratch_work = work;
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }

    /// Queues a request that arrived (FCFS: behind every waiting one).
    pub fn add_waiting(&mut self, g: &SequenceGroup) {
        self.max_n = self.max_n.max(g.n());
        self.waiting.push_back(g.request);
    }

    /// Takes the head of the waiting queue off it (the caller rejects it).
    pub fn take_waiting_head(&mut self) -> Option<RequestId> {
        self.waiting.pop_front()
    }

    /// Takes a request whose every sample finished off the running queue.
    pub fn finish(&mut self, request: RequestId) {
        let pos = self.running.iter().position(|&x| x == request).expect("finished group was running");
        self.running.remove(pos);
    }

    /// Running requests in admission order (the last is the next to be preempted).
    pub fn running(&self) -> &[RequestId] {
        &self.running
    }

    pub fn waiting(&self) -> &VecDeque<RequestId> {
        &self.waiting
    }

    pub fn swapped(&self) -> &VecDeque<RequestId> {
        &self.swapped
    }

    /// Preemptions so far (recompute and swap), and those by swap.
    pub fn preemptions(&self) -> (u64, u64) {
        (self.num_preemptions, self.num_swap_preemptions)
    }

    /// The queues agree with the requests' states: every running, waiting or swapped request is
    /// in exactly the queue of its status, and running sequences respect `max_num_seqs`.
    pub fn check_invariants(&self, groups: &[SequenceGroup]) -> Result<(), String> {
        let mut seen = vec![0u8; groups.len()];
        for (queue, status) in [
            (self.running.iter().collect::<Vec<_>>(), GroupStatus::Running),
            (self.waiting.iter().collect(), GroupStatus::Waiting),
            (self.swapped.iter().collect(), GroupStatus::Swapped),
        ] {
            for &r in queue {
                seen[r as usize] += 1;
                if groups[r as usize].status != status {
                    return Err(format!("request {r} is queued as {status:?} but is {:?}", groups[r as usize].status));
                }
            }
        }
        let running_seqs = self.running_seqs(groups);
        if running_seqs > self.cfg.max_num_seqs {
            return Err(format!("{running_seqs} running sequences > max_num_seqs"));
        }
        for g in groups {
            let queued = seen[g.request as usize];
            let should = matches!(g.status, GroupStatus::Running | GroupStatus::Waiting | GroupStatus::Swapped);
            if queued != u8::from(should) {
                return Err(format!("request {} ({:?}) is in {queued} queues", g.request, g.status));
            }
        }
        Ok(())
    }

    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty() && self.swapped.is_empty()
    }

    fn running_seqs(&self, groups: &[SequenceGroup]) -> u32 {
        self.running.iter().map(|&r| groups[r as usize].num_seqs()).sum()
    }

    /// Slab length per sample for a contiguous allocator.
    pub fn reservation(&self, g: &SequenceGroup) -> u32 {
        match self.reserve {
            Some(Reserve::MaxModelLen) | None => self.cfg.max_model_len,
            Some(Reserve::PromptPlusMaxTokens) => (g.prompt_tokens + g.max_tokens).min(self.cfg.max_model_len),
        }
    }

    /// Plans one step and makes its allocations.
    pub fn schedule(&mut self, groups: &mut [SequenceGroup], kv: &mut KvCacheManager) -> SchedulerOutput {
        let mut out = self.empty_output();
        let mut budget = self.cfg.max_num_batched_tokens;
        if self.prefill_first() && self.swapped.is_empty() {
            // Paged v0 without chunked prefill: a step that admits prefills runs only those.
            self.schedule_waiting(groups, kv, &mut out, &mut budget);
            if !out.work.is_empty() {
                return out;
            }
            budget = self.cfg.max_num_batched_tokens;
        }
        self.schedule_running(groups, kv, &mut out, &mut budget);
        self.schedule_after_running(groups, kv, &mut out, budget);
        out
    }

    /// Paged v0 without chunked prefill runs admissions in steps of their own.
    fn prefill_first(&self) -> bool {
        self.reserve.is_none() && !self.cfg.chunked_prefill
    }

    /// An output to fill, reusing the last step's work list.
    pub(crate) fn empty_output(&mut self) -> SchedulerOutput {
        SchedulerOutput::reusing(std::mem::take(&mut self.scratch_work))
    }

    /// The step's second half, once the running groups are served with `budget` left:
    /// swapped groups come back, then new ones are admitted, if nothing was preempted.
    pub(crate) fn schedule_after_running(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        mut budget: u32,
    ) {
        if out.preempted == 0 {
            self.schedule_swapped(groups, kv, out, &mut budget);
        }
        if out.preempted == 0 && self.swapped.is_empty() && !self.prefill_first() {
            self.schedule_waiting(groups, kv, out, &mut budget);
        } else if !self.waiting.is_empty() {
            out.hol = Some(HolReason::Memory(Blocked { enough_total_free: false }));
        }
    }

    fn schedule_running(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) {
        let mut i = 0;
        let mut items = std::mem::take(&mut self.scratch_items);
        let mut pairs = std::mem::take(&mut self.scratch_pairs);
        while i < self.running.len() && *budget > 0 {
            let r = self.running[i];
            if !running_work(&groups[r as usize], r, *budget, self.cfg.chunked_prefill, &mut items) {
                i += 1;
                continue;
            }
            if !self.allocate_group(r, &items, &mut pairs, groups, kv, out) {
                break; // the group itself was preempted
            }
            for (_, w) in &items {
                *budget -= w.num_new_tokens;
                out.work.push(*w);
            }
            i += 1;
        }
        self.scratch_items = items;
        self.scratch_pairs = pairs;
    }

    /// Allocates the slots of a running group's work, preempting from the newest end until they
    /// fit; false when the group itself was the victim.
    fn allocate_group(
        &mut self,
        r: RequestId,
        items: &[(SeqId, ScheduledWork)],
        pairs: &mut Vec<(SeqId, u32)>,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
    ) -> bool {
        if let [(seq, w)] = items[..] {
            // One sequence (the common case): allocate_slots is all-or-nothing by itself.
            while kv.allocate_slots(seq, w.num_new_tokens).is_none() {
                if self.preempt_newest(r, groups, kv, out) {
                    return false;
                }
            }
            return true;
        }
        pairs.clear();
        pairs.extend(items.iter().map(|(s, w)| (*s, w.num_new_tokens)));
        while !kv.can_allocate(pairs) {
            if self.preempt_newest(r, groups, kv, out) {
                return false;
            }
        }
        for (seq, w) in items {
            kv.allocate_slots(*seq, w.num_new_tokens).expect("checked by can_allocate");
        }
        true
    }

    fn schedule_waiting(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) {
        if self.waiting.is_empty() {
            return;
        }
        // Running sequences: an upper bound, and the exact count once the bound is not enough
        // (the same decisions as counting every step, without the walk over running groups).
        let mut seqs_bound = (self.running.len() as u32).saturating_mul(self.max_n);
        let mut seqs: Option<u32> = None;
        while let Some(&r) = self.waiting.front() {
            let n = groups[r as usize].n();
            if seqs_bound.saturating_add(n) > self.cfg.max_num_seqs {
                let exact = *seqs.get_or_insert_with(|| self.running_seqs(groups));
                if exact + n > self.cfg.max_num_seqs {
                    out.hol = Some(HolReason::SeqLimit);
                    return;
                }
            }
            if !self.admit_head(r, groups, kv, out, budget) {
                return;
            }
            seqs_bound = seqs_bound.saturating_add(n);
            if let Some(exact) = seqs.as_mut() {
                *exact += n;
            }
        }
    }

    /// Admits the waiting queue's head `r` with its first prefill chunk, or records why it waits
    /// (`out.hol`) and returns false.
    fn admit_head(
        &mut self,
        r: RequestId,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) -> bool {
        let g = &groups[r as usize];
        // An admission refused at this allocator epoch is refused again: nothing was placed
        // or released since, so skip the prefix lookup and the allocator's search.
        let epoch = kv.epoch();
        let memo = self.last_refusal.filter(|m| m.request == r && m.epoch == epoch);
        let identity = g.identity(g.parent());
        let (computed, remaining) = match memo {
            Some(m) => (None, m.remaining),
            None => {
                let c = kv.computed_blocks(&identity, g.prompt_tokens);
                let remaining = g.prompt_tokens - c.num_tokens;
                (Some(c), remaining)
            }
        };
        let first = if self.cfg.chunked_prefill { remaining.min(*budget) } else { remaining };
        if first == 0 || first > *budget {
            out.hol = Some(HolReason::TokenBudget);
            return false;
        }
        if let Some(m) = memo.filter(|m| m.first == first) {
            out.hol = Some(HolReason::Memory(m.blocked));
            return false;
        }
        let computed = computed.unwrap_or_else(|| kv.computed_blocks(&identity, g.prompt_tokens));
        self.scratch_seqs.clear();
        self.scratch_seqs.extend(g.samples.iter().map(|s| s.seq));
        let req = AdmitRequest {
            request: r,
            parent: g.parent(),
            samples: &self.scratch_seqs,
            identity,
            full_tokens: g.prompt_tokens,
            reserve_tokens: self.reservation(g),
            apply_watermark: true,
            preempted_before: g.preemptions > 0,
        };
        if let Err(blocked) = kv.admit(&req, &computed, first) {
            out.hol = Some(HolReason::Memory(blocked));
            self.last_refusal = Some(Refusal { request: r, remaining, first, epoch, blocked });
            return false;
        }
        let g = &mut groups[r as usize];
        g.status = GroupStatus::Running;
        g.prefill_computed = computed.num_tokens;
        *budget -= first;
        out.work.push(ScheduledWork {
            request: r,
            target: Target::Prefill,
            num_new_tokens: first,
            context_tokens: computed.num_tokens + first,
        });
        self.waiting.pop_front();
        self.running.push(r);
        true
    }
}

/// This step's work for running group `r` within `budget`: the rest of its prompt (whole, unless
/// prefill is chunked) or each unfinished sample's new tokens. False when the prompt does not fit.
fn running_work(
    g: &SequenceGroup,
    r: RequestId,
    budget: u32,
    chunked_prefill: bool,
    items: &mut Vec<(SeqId, ScheduledWork)>,
) -> bool {
    items.clear();
    if !g.forked {
        let remaining = g.prompt_tokens - g.prefill_computed;
        let new = if chunked_prefill { remaining.min(budget) } else { remaining };
        if new > budget {
            return false;
        }
        items.push((
            g.parent(),
            ScheduledWork {
                request: r,
                target: Target::Prefill,
                num_new_tokens: new,
                context_tokens: g.prefill_computed + new,
            },
        ));
        return true;
    }
    let mut left = budget;
    for (k, s) in g.samples.iter().enumerate() {
        if s.finished || left == 0 {
            continue;
        }
        let new = (s.num_tokens - s.num_computed).min(left);
        left -= new;
        items.push((
            s.seq,
            ScheduledWork {
                request: r,
                target: Target::Sample(k as u32),
                num_new_tokens: new,
                context_tokens: s.num_computed + new,
            },
        ));
    }
    true
}
