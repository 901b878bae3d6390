//! Applying a scheduled step: its work summed into the step-time model's inputs, time advanced
//! with its series point and integrals, and its results applied (prefills complete and fork,
//! samples make tokens, finished samples free their KV).

use super::Simulation;
use crate::engine::alloc::RequestId;
use crate::engine::clock::StepWork;
use crate::engine::request::GroupStatus;
use crate::engine::scheduler::{HolReason, ScheduledWork, SchedulerOutput, Target};

impl Simulation {
    pub(super) fn run_batch(&mut self, out: SchedulerOutput) {
        let mut work = StepWork::new(self.window, out.swapped_blocks);
        self.add_work(&mut work, &out.work);
        self.account_step(&work, out.hol);
        self.offload_after_step(&out.work);
        self.apply_work(&out.work);
        self.scheduler.recycle(out.work);
    }

    /// Adds scheduled work to the step's totals (a chunk of more than one token is prefill).
    pub(super) fn add_work(&mut self, work: &mut StepWork, items: &[ScheduledWork]) {
        for w in items {
            self.scheduled_tokens += u64::from(w.num_new_tokens);
            let prefill = w.target == Target::Prefill || w.num_new_tokens > 1;
            work.add(w.num_new_tokens, w.context_tokens, prefill);
        }
    }

    /// The step takes its time: the series point, the time integrals, head-of-line counts.
    pub(super) fn account_step(&mut self, work: &StepWork, hol: Option<HolReason>) {
        let dt = self.clock.step_us(work);
        let end = self.now_us + dt;
        let sample = self.sample(end);
        let counted = end.min(self.end_limit_us) - self.now_us;
        self.integrals.add(counted, &sample, self.kv.capacity_tokens());
        self.series.push(sample);
        self.running_max = self.running_max.max(sample.running);
        self.last_hol = hol;
        if let Some(reason) = hol {
            self.hol_blocked_steps += 1;
            if let HolReason::Memory(b) = reason {
                if b.enough_total_free {
                    self.hol_blocked_with_free_memory_steps += 1;
                }
            }
        }
        self.now_us = end;
        self.steps += 1;
    }

    /// The computed tokens land: prefills complete and fork, samples make their tokens.
    pub(super) fn apply_work(&mut self, items: &[ScheduledWork]) {
        for w in items {
            match w.target {
                Target::Prefill => self.advance_prefill(w.request, w.num_new_tokens),
                Target::Sample(k) => {
                    let s = &mut self.groups[w.request as usize].samples[k as usize];
                    s.num_computed += w.num_new_tokens;
                    if s.num_computed == s.num_tokens {
                        self.emit_token(w.request, k);
                    }
                }
            }
        }
    }

    fn advance_prefill(&mut self, r: RequestId, new: u32) {
        let g = &mut self.groups[r as usize];
        g.prefill_computed += new;
        if g.prefill_computed < g.prompt_tokens {
            return;
        }
        // The prompt is in the cache: every unfinished sample forks from the parent's table.
        let parent = g.parent();
        for k in 1..g.samples.len() {
            if !g.samples[k].finished {
                let seq = g.samples[k].seq;
                self.kv.fork(parent, seq, g.identity(seq));
            }
        }
        if g.samples[0].finished {
            self.kv.free(parent);
        }
        g.forked = true;
        let prompt = g.prompt_tokens;
        let mut first = Vec::new();
        for (k, s) in g.samples.iter_mut().enumerate() {
            if s.finished {
                continue;
            }
            s.num_computed = prompt;
            if s.generated == 0 {
                first.push(k as u32);
            }
        }
        for k in first {
            self.emit_token(r, k);
        }
    }

    /// Sequence `k` of request `r` produces one token; it may finish.
    #[inline]
    fn emit_token(&mut self, r: RequestId, k: u32) {
        let now = self.now_us;
        let g = &mut self.groups[r as usize];
        let s = &mut g.samples[k as usize];
        if s.generated > 0 {
            self.itl.add(now - s.last_token_us, 1);
        }
        s.last_token_us = now;
        s.generated += 1;
        s.num_tokens += 1;
        self.output_tokens += 1;
        let done = s.generated >= s.target || s.num_tokens >= self.config.scheduler.max_model_len;
        if g.first_token_us.is_none() {
            g.first_token_us = Some(now);
            self.ttft_us.push((now - g.arrival_us) as f64);
        }
        if done {
            self.finish_sample(r, k);
        }
    }

    /// Sequence `k` of request `r` reached its length: free its KV; the request may be done.
    #[cold]
    pub(super) fn finish_sample(&mut self, r: RequestId, k: u32) {
        let now = self.now_us;
        let g = &mut self.groups[r as usize];
        let s = &mut g.samples[k as usize];
        s.finished = true;
        let seq = s.seq;
        self.kv.free_finished(seq);
        self.finished_seqs += 1;
        if g.samples.iter().all(|s| s.finished) {
            g.status = GroupStatus::Finished;
            g.finish_us = Some(now);
            self.e2e_us.push((now - g.arrival_us) as f64);
            self.finished_input_tokens += u64::from(g.prompt_tokens);
            self.finished_output_tokens += g.samples.iter().map(|s| u64::from(s.generated)).sum::<u64>();
            self.last_finish_us = now;
            let max_gen = g.samples.iter().map(|s| s.generated).max().unwrap_or(1);
            if max_gen >= 2 {
                let first = g.first_token_us.unwrap_or(now);
                self.tpot_us.push((now - first) as f64 / f64::from(max_gen - 1));
            }
            self.finished += 1;
            self.client_free();
            self.kv.forget_request(r);
        }
        self.scheduler.finish_sample(&mut self.groups, r, k);
        self.offload_request_finished(seq);
    }
}
