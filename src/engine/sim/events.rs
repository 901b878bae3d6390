//! Event-driven stepping, the default: a step costs the events in it (slow block writes,
//! preemptions, finishes, admissions), not the running requests.
//!
//! The running requests in steady decode form a [`DecodeCohort`]; a step serves them all with
//! one token each as the step-by-step engine would (its running pass, in running order, only
//! ever does more than count on a slow write, so those are the only writes made here), sums the
//! step's work from the cohort's totals, runs the scheduler's own code for the rest of the step
//! (under v1 the running requests behind the cohort, typically a prefill being chunked; then
//! swaps and admissions), and applies the finishes. The requests' counters and the allocator's
//! tables are written down ([`Simulation::sync`]) before anything outside the engine's loop
//! reads them.
//!
//! The cohort takes vLLM v1's scheduler on the paged allocator (the cohort is the longest prefix
//! of the running queue in steady decode) and v0's on contiguous slabs without chunked prefill
//! (every running sample, or no cohort). Other steps run step by step, and `Stepping::Reference`
//! runs every step that way; `tests/stepping.rs` compares both, report and series, bit for bit.

use super::cohort::{DecodeCohort, Joining};
use super::{Simulation, Stepping};
use crate::engine::alloc::KvCacheManager;
use crate::engine::clock::StepWork;
use crate::engine::request::Sequence;
use crate::engine::scheduler::{SampleRef, ScheduledWork, Scheduler, SchedulerOutput, Target};

impl Simulation {
    /// Chooses how steps are taken from now on (the run so far is written down first).
    pub fn set_stepping(&mut self, stepping: Stepping) {
        self.dissolve_cohort();
        self.stepping = stepping;
    }

    pub fn stepping(&self) -> Stepping {
        self.stepping
    }

    /// Writes every cohort member's counters and KV length down, so the requests and the
    /// allocator read as the step-by-step engine would have left them.
    pub(super) fn sync(&mut self) {
        let tick = self.cohort.tick();
        let live: Vec<u32> = self.cohort.live().collect();
        for idx in live {
            self.sync_member(idx, tick);
        }
        // A cohort that has seen many requests leave is formed again from the running queue.
        if self.cohort.len_all() > 2 * self.cohort.alive() + 1024 {
            self.cohort = DecodeCohort::default();
        }
    }

    fn sync_member(&mut self, idx: u32, tick: u64) {
        let m = self.cohort.member(idx);
        let computed = m.computed_at(tick);
        let s = &mut self.groups[m.request as usize].samples[m.sample as usize];
        s.num_computed = computed;
        s.num_tokens = computed + 1;
        s.generated = m.generated_at(tick);
        if m.served_before(tick) {
            s.last_token_us = self.cohort.step_end_us();
        }
        self.kv.catch_up(m.seq, computed);
    }

    /// Writes the cohort down and disbands it (before a step-by-step step).
    pub(super) fn dissolve_cohort(&mut self) {
        if self.cohort.is_formed() {
            self.sync();
            self.cohort = DecodeCohort::default();
        }
    }

    /// Whether the cohort can take steps of this configuration at all.
    fn cohort_applies(&self) -> bool {
        if self.stepping != Stepping::Events {
            return false;
        }
        match (&self.scheduler, &self.kv) {
            // Hybrid KV cache groups free blocks behind a window as decode goes on, which the
            // cohort's formulas do not follow: those runs go step by step.
            (Scheduler::V1(_), KvCacheManager::Paged(p)) => p.kv_cache_groups().is_none(),
            (Scheduler::V0(s), KvCacheManager::Contiguous(_)) => {
                !self.config.scheduler.chunked_prefill && s.swapped().is_empty()
            }
            _ => false,
        }
    }

    /// A sample that would join the cohort now, if it is in steady decode.
    fn joining(&self, request: u32, sample: u32) -> Option<Joining> {
        let g = &self.groups[request as usize];
        let s: &Sequence = &g.samples[sample as usize];
        let steady = !s.finished && s.num_tokens == s.num_computed + 1 && g.first_token_us.is_some();
        if !steady || self.kv.seq_tokens(s.seq) != Some(s.num_computed) {
            return None;
        }
        let shared = match &self.kv {
            KvCacheManager::Paged(p) => p.last_block_shared(s.seq),
            KvCacheManager::Contiguous(_) => false,
        };
        Some(Joining {
            request,
            sample,
            seq: s.seq,
            computed: s.num_computed,
            generated: s.generated,
            target: s.target,
            max_model_len: self.config.scheduler.max_model_len,
            last_block_shared: shared,
        })
    }

    /// The running samples in running order (v0: each running group's unfinished samples).
    fn running_samples(&self) -> Vec<SampleRef> {
        match &self.scheduler {
            Scheduler::V1(s) => s.running().to_vec(),
            Scheduler::V0(s) => s
                .running()
                .iter()
                .flat_map(|&r| {
                    let g = &self.groups[r as usize];
                    let forked = g.forked;
                    g.samples
                        .iter()
                        .enumerate()
                        .filter(move |(_, x)| forked && !x.finished)
                        .map(move |(k, _)| SampleRef { request: r, sample: k as u32 })
                })
                .collect(),
        }
    }

    /// The running queue as a cohort. Under v1 the cohort is the longest prefix of the running
    /// queue in steady decode (the rest, usually a prefill being chunked, is served step by
    /// step after it); under v0 it is every running sample or none.
    fn form_cohort(&mut self) -> bool {
        self.cohort = match &self.kv {
            KvCacheManager::Paged(p) => DecodeCohort::paged(p.block_size(), p.decode_fill_is_slow()),
            KvCacheManager::Contiguous(_) => DecodeCohort::contiguous(),
        }
        .with_window(self.window);
        match &self.scheduler {
            Scheduler::V1(_) => {
                self.extend_cohort();
                true
            }
            Scheduler::V0(s) => {
                // An unforked (prefilling) group has no samples to serve yet.
                let prefilling = s.running().iter().any(|&r| !self.groups[r as usize].forked);
                let all_joined = !prefilling
                    && self.running_samples().into_iter().all(|at| match self.joining(at.request, at.sample) {
                        Some(j) => {
                            self.cohort.join(j);
                            true
                        }
                        None => false,
                    });
                if !all_joined {
                    self.cohort = DecodeCohort::default();
                }
                all_joined
            }
        }
    }

    /// v1: running requests right after the cohort join it while they are in steady decode.
    fn extend_cohort(&mut self) {
        let Scheduler::V1(v1) = &self.scheduler else { unreachable!("v1 only") };
        let mut next = self.cohort.alive();
        while let Some(&at) = v1.running().get(next) {
            let Some(j) = self.joining(at.request, at.sample) else { break };
            self.cohort.join(j);
            next += 1;
        }
    }

    /// Takes one step event-driven; false (nothing changed) when this step has to run step by
    /// step.
    pub(super) fn event_step(&mut self) -> bool {
        if !self.cohort_applies() || self.scheduler.num_running() == 0 {
            return false;
        }
        if !self.cohort.is_formed() && !self.form_cohort() {
            return false;
        }
        let members = self.cohort.alive();
        if members == 0 || members > self.config.scheduler.max_num_batched_tokens as usize {
            return false; // nothing to gain, or some members would wait for budget
        }
        self.run_event_step();
        self.event_steps += 1;
        true
    }

    fn run_event_step(&mut self) {
        let mut out = self.scheduler.empty_output();
        let written = self.serve_cohort(&mut out);
        let served = self.cohort.alive() as u32;
        self.kv.count_deferred_writes(u64::from(served) - written);
        let mut budget = self.config.scheduler.max_num_batched_tokens - served;
        if let Scheduler::V1(v1) = &mut self.scheduler {
            // The running requests behind the cohort (a prefill being chunked), step by step.
            v1.schedule_running_from(served as usize, &mut self.groups, &mut self.kv, &mut out, &mut budget);
        }
        self.scheduler.schedule_after_running(&mut self.groups, &mut self.kv, &mut out, budget);
        let mut work = StepWork::new(self.window, out.swapped_blocks);
        let window_sum = self.cohort.window_context_sum();
        work.add_decodes(u64::from(served), self.cohort.computed_sum() + u64::from(served), window_sum);
        self.scheduled_tokens += u64::from(served);
        self.add_work(&mut work, &out.work);
        let fresh = self.cohort.take_fresh();
        let start = self.now_us;
        self.cohort.advance();
        self.account_step(&work, out.hol);
        self.offload_after_step(&out.work);
        self.cohort.set_step_end(self.now_us);
        self.count_cohort_gaps(&fresh, start, served);
        // Every member made its token; those at their length finish, in running order.
        self.output_tokens += u64::from(served);
        let tick = self.cohort.tick();
        while let Some(idx) = self.cohort.next_finished() {
            self.sync_member(idx, tick);
            self.cohort.remove(idx);
            let m = self.cohort.member(idx);
            self.finish_sample(m.request, m.sample);
        }
        self.apply_work(&out.work);
        if matches!(self.scheduler, Scheduler::V1(_)) {
            self.extend_cohort();
        } else if !self.join_admitted(&out.work) {
            self.dissolve_cohort();
        }
        self.scheduler.recycle(out.work);
    }

    /// The inter-token gaps of a cohort step from `start` to now: a member served in the step
    /// before made its previous token at `start` (cohort steps follow each other with nothing
    /// between them); one that joined since then made it when its `last_token_us` says (or
    /// makes its first token now).
    fn count_cohort_gaps(&mut self, fresh: &[u32], start: u64, served: u32) {
        let (end, mut veterans) = (self.now_us, u64::from(served));
        for &idx in fresh {
            let m = self.cohort.member(idx);
            if !m.is_alive() {
                continue;
            }
            veterans -= 1;
            let s = &self.groups[m.request as usize].samples[m.sample as usize];
            if s.generated > 0 {
                self.itl.add(end - s.last_token_us, 1);
            }
        }
        self.itl.add(end - start, veterans);
    }

    /// The running pass: every member takes one token; the slow writes are made in running
    /// order, preempting from the newest end when the pool is short, as the step-by-step pass
    /// does (v1; contiguous slabs are reserved up front and never short). Returns the slow
    /// writes made.
    fn serve_cohort(&mut self, out: &mut SchedulerOutput) -> u64 {
        let tick = self.cohort.tick();
        let slow = self.cohort.take_slow();
        let mut written = 0;
        for &idx in &slow {
            let m = self.cohort.member(idx);
            if !m.is_alive() {
                continue;
            }
            if self.cohort.defers_writes() {
                self.kv.catch_up(m.seq, m.computed_at(tick));
            }
            loop {
                if self.kv.allocate_slots(m.seq, 1).is_some() {
                    written += 1;
                    self.cohort.wrote_slow(idx);
                    break;
                }
                let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("only v1 writes can be short") };
                let victim = v1.pop_running().expect("the request itself is running");
                // The newest first: the requests behind the cohort, then its own newest members.
                let seq = self.groups[victim.request as usize].samples[victim.sample as usize].seq;
                let vidx = self.cohort.of_seq(seq);
                if let Some(vidx) = vidx {
                    self.sync_member(vidx, tick);
                    self.cohort.remove(vidx);
                }
                let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("checked above") };
                v1.preempt(victim, &mut self.groups, &mut self.kv, out);
                if vidx == Some(idx) {
                    break;
                }
            }
        }
        self.cohort.restore_bucket(slow);
        written
    }

    /// v0: groups admitted this step join the cohort, in running order, once their prefill is
    /// done; false when one is not in steady decode (the cohort no longer covers the running
    /// queue).
    fn join_admitted(&mut self, work: &[ScheduledWork]) -> bool {
        for w in work {
            let samples: Vec<u32> = match w.target {
                Target::Sample(k) => vec![k],
                // A v0 group's prefill: its samples forked from it.
                Target::Prefill => (0..self.groups[w.request as usize].n()).collect(),
            };
            for k in samples {
                if self.groups[w.request as usize].samples[k as usize].finished {
                    continue;
                }
                match self.joining(w.request, k) {
                    Some(j) => self.cohort.join(j),
                    None => return false,
                };
            }
        }
        true
    }
}
