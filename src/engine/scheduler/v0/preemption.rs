//! Preemption under vLLM v0: the newest running group is the victim, preempted by recompute
//! (its blocks freed, back to the waiting queue's head) or by swap (its blocks copied to the CPU
//! swap space, a full swap space aborting the request as v0 raised), and swapped groups brought
//! back first, oldest first, when their blocks fit.

use crate::engine::alloc::{KvCacheManager, RequestId, SeqId};
use crate::engine::config::PreemptionMode;
use crate::engine::request::{GroupStatus, SequenceGroup};
use crate::engine::scheduler::output::{ScheduledWork, SchedulerOutput, Target};
use crate::engine::scheduler::v0::V0Scheduler;

impl V0Scheduler {
    /// Preempts the most recently admitted running group; true if that was `r` itself.
    pub(super) fn preempt_newest(
        &mut self,
        r: RequestId,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
    ) -> bool {
        let victim = *self.running.last().expect("running is not empty");
        self.preempt(victim, groups, kv, out);
        victim == r
    }

    fn preempt(
        &mut self,
        r: RequestId,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
    ) {
        let pos = self.running.iter().rposition(|&x| x == r).expect("victim is running");
        self.running.remove(pos);
        let g = &mut groups[r as usize];
        let seqs = g.live_seqs();
        g.preemptions += 1;
        self.num_preemptions += 1;
        out.preempted += 1;
        if let (PreemptionMode::Swap, KvCacheManager::Paged(p)) = (self.cfg.preemption, &mut *kv) {
            let blocks = u64::from(p.unique_blocks(&seqs));
            if self.swap_used_blocks + blocks <= self.swap_capacity_blocks {
                g.swapped = Some(Box::new(p.swap_out(&seqs)));
                g.status = GroupStatus::Swapped;
                self.swap_used_blocks += blocks;
                self.num_swap_preemptions += 1;
                out.swapped_blocks += blocks;
                self.swapped.push_back(r);
                return;
            }
        }
        for s in seqs {
            kv.free(s);
        }
        if self.cfg.preemption == PreemptionMode::Swap && matches!(kv, KvCacheManager::Paged(_)) {
            // v0 raises "Aborted due to the lack of CPU swap space": the request fails.
            g.status = GroupStatus::Rejected;
            out.aborted.push(r);
            return;
        }
        // Recompute: drop the KV; the group prefills its prompt again later.
        g.forked = false;
        g.prefill_computed = 0;
        for s in &mut g.samples {
            s.num_computed = 0;
        }
        g.status = GroupStatus::Waiting;
        self.waiting.push_front(r);
    }

    /// Brings swapped groups back while they fit, and runs their decode tokens in this step
    /// (charged to the budget, as v0's `_schedule_swapped` does).
    pub(super) fn schedule_swapped(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: &mut u32,
    ) {
        if self.swapped.is_empty() {
            return;
        }
        let mut seqs = self.running_seqs(groups);
        while let Some(&r) = self.swapped.front() {
            let g = &mut groups[r as usize];
            if seqs + g.num_seqs() > self.cfg.max_num_seqs || g.num_seqs() > *budget {
                break;
            }
            let KvCacheManager::Paged(p) = &mut *kv else { unreachable!("only paged groups swap") };
            let swapped = g.swapped.as_ref().expect("swapped group holds its KV");
            if !p.swap_in(swapped) {
                break;
            }
            seqs += g.num_seqs();
            let blocks = u64::from(swapped.num_blocks());
            self.swap_used_blocks -= blocks;
            out.swapped_blocks += blocks;
            g.swapped = None;
            g.status = GroupStatus::Running;
            self.swapped.pop_front();
            self.running.push(r);
            if !g.forked {
                continue; // back in mid-prefill: the running pass schedules its next chunk
            }
            let pairs: Vec<(SeqId, u32)> = g
                .samples
                .iter()
                .filter(|s| !s.finished && s.num_tokens > s.num_computed)
                .map(|s| (s.seq, s.num_tokens - s.num_computed))
                .collect();
            let tokens: u32 = pairs.iter().map(|p| p.1).sum();
            if tokens > *budget || !kv.can_allocate(&pairs) {
                continue; // back in, decoding from the next step
            }
            for (k, s) in g.samples.iter().enumerate() {
                if s.finished || s.num_tokens == s.num_computed {
                    continue;
                }
                let new = s.num_tokens - s.num_computed;
                kv.allocate_slots(s.seq, new).expect("checked by can_allocate");
                *budget -= new;
                out.work.push(ScheduledWork {
                    request: r,
                    target: Target::Sample(k as u32),
                    num_new_tokens: new,
                    context_tokens: s.num_tokens,
                });
            }
        }
    }
}
