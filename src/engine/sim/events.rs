//! Event-driven stepping, the default: a step of vLLM v1's scheduler costs the events in it
//! (slow block writes, preemptions, finishes, admissions), not the running requests.
//!
//! The running requests form a [`DecodeCohort`]; a step serves them all with one token each as
//! the step-by-step engine would (its running pass, in running order, only ever does more than
//! count on a slow write, so those are the only writes made here), sums the step's work from
//! the cohort's totals, runs the scheduler's own admission pass, and applies the finishes. The
//! requests' counters and block tables are written down ([`Simulation::sync`]) before anything
//! outside the engine's loop reads them. Steps the cohort cannot take (another scheduler,
//! chunked prefill, more running requests than the token budget, a running request not in
//! steady decode) run step by step, and `Stepping::Reference` runs every step that way: the
//! tests compare both, report and series, bit for bit.

use super::cohort::{DecodeCohort, Joining};
use super::Simulation;
use crate::engine::alloc::{KvCacheManager, PagedAllocator};
use crate::engine::request::SequenceGroup;
use crate::engine::scheduler::{Scheduler, Target};
use crate::engine::timing::StepWork;

/// How `Simulation` takes its steps. Both give the same run, bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stepping {
    /// Event-driven where the cohort can take the step, step by step elsewhere.
    #[default]
    Events,
    /// Every step as the scheduler plans it, request by request: the reference.
    Reference,
}

fn paged(kv: &mut KvCacheManager) -> &mut PagedAllocator {
    match kv {
        KvCacheManager::Paged(p) => p,
        KvCacheManager::Contiguous(_) => unreachable!("event-driven steps run on the paged allocator"),
    }
}

impl Simulation {
    /// Chooses how steps are taken from now on (the run so far is written down first).
    pub fn set_stepping(&mut self, stepping: Stepping) {
        self.dissolve_cohort();
        self.stepping = stepping;
    }

    pub fn stepping(&self) -> Stepping {
        self.stepping
    }

    /// Writes every cohort member's counters and block table down, so the requests and the
    /// allocator read as the step-by-step engine would have left them.
    pub(super) fn sync(&mut self) {
        let tick = self.cohort.tick();
        let live: Vec<u32> = self.cohort.live().collect();
        for idx in live {
            self.sync_member(idx, tick);
        }
        // A cohort that has seen many requests leave is rebuilt from the running queue.
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
        paged(&mut self.kv).catch_up(m.seq, computed);
    }

    /// Writes the cohort down and disbands it (before a step-by-step step).
    pub(super) fn dissolve_cohort(&mut self) {
        if self.cohort.len_all() > 0 {
            self.sync();
            self.cohort = DecodeCohort::default();
        }
    }

    /// The running queue as a cohort, if every running request is in steady decode.
    fn form_cohort(&mut self) -> bool {
        let (Scheduler::V1(v1), KvCacheManager::Paged(kv)) = (&self.scheduler, &self.kv) else { return false };
        let mut cohort = DecodeCohort::new(kv.block_size(), kv.prefix_caching());
        let max_model_len = self.config.scheduler.max_model_len;
        for at in v1.running() {
            let g: &SequenceGroup = &self.groups[at.request as usize];
            let s = &g.samples[at.sample as usize];
            let steady = !s.finished && s.num_tokens == s.num_computed + 1 && g.first_token_us.is_some();
            if !steady || kv.table(s.seq).map(|t| t.num_tokens) != Some(s.num_computed) {
                return false;
            }
            cohort.join(Joining {
                request: at.request,
                sample: at.sample,
                seq: s.seq,
                computed: s.num_computed,
                generated: s.generated,
                target: s.target,
                max_model_len,
                last_block_shared: kv.last_block_shared(s.seq),
            });
        }
        self.cohort = cohort;
        true
    }

    /// Takes one step event-driven; false (nothing changed) when this step has to run step by
    /// step.
    pub(super) fn event_step(&mut self) -> bool {
        if self.stepping != Stepping::Events || self.config.scheduler.chunked_prefill {
            return false;
        }
        let Scheduler::V1(v1) = &self.scheduler else { return false };
        let running = v1.running().len();
        if running == 0 || running > self.config.scheduler.max_num_batched_tokens as usize {
            return false;
        }
        if self.cohort.alive() != running {
            self.dissolve_cohort();
            if !self.form_cohort() {
                return false;
            }
        }
        self.run_event_step();
        self.event_steps += 1;
        true
    }

    fn run_event_step(&mut self) {
        let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("checked by event_step") };
        let mut out = v1.empty_output();
        let written = self.serve_cohort(&mut out);
        let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("checked by event_step") };
        let served = self.cohort.alive() as u32;
        paged(&mut self.kv).count_deferred_writes(u64::from(served) - written);
        let budget = self.config.scheduler.max_num_batched_tokens - served;
        v1.schedule_after_running(&mut self.groups, &mut self.kv, &mut out, budget);
        let mut work = StepWork {
            decode_tokens: u64::from(served),
            kv_read_tokens: self.cohort.computed_sum() + u64::from(served),
            ..StepWork::default()
        };
        self.scheduled_tokens += u64::from(served);
        self.add_work(&mut work, &out.work);
        self.cohort.advance();
        self.account_step(&work, out.hol);
        // Every member made its token; those at their length finish, in running order.
        self.output_tokens += u64::from(served);
        let mut finished = Vec::new();
        self.cohort.pop_finished(&mut finished);
        let tick = self.cohort.tick();
        for idx in finished {
            self.sync_member(idx, tick);
            self.cohort.remove(idx);
            let m = self.cohort.member(idx);
            self.finish_sample(m.request, m.sample);
        }
        self.apply_work(&out.work);
        self.join_admitted(&out.work);
        self.scheduler.recycle(out.work);
    }

    /// The running pass: every member takes one token; the slow writes are made in running
    /// order, preempting from the newest end when the pool is short, as the step-by-step pass
    /// does. Returns the slow writes made.
    fn serve_cohort(&mut self, out: &mut crate::engine::scheduler::SchedulerOutput) -> u64 {
        let tick = self.cohort.tick();
        let slow = self.cohort.take_slow();
        let mut written = 0;
        for &idx in &slow {
            let m = self.cohort.member(idx);
            if !m.is_alive() {
                continue;
            }
            paged(&mut self.kv).catch_up(m.seq, m.computed_at(tick));
            loop {
                if self.kv.allocate_slots(m.seq, 1).is_some() {
                    written += 1;
                    self.cohort.wrote_slow(idx);
                    break;
                }
                let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("checked by event_step") };
                let victim = v1.pop_running().expect("the request itself is running");
                let samples = &self.groups[victim.request as usize].samples;
                let vidx = self.cohort.of_seq(samples[victim.sample as usize].seq).expect("running is the cohort");
                self.sync_member(vidx, tick);
                self.cohort.remove(vidx);
                let Scheduler::V1(v1) = &mut self.scheduler else { unreachable!("checked by event_step") };
                v1.preempt(victim, &mut self.groups, &mut self.kv, out);
                if vidx == idx {
                    break;
                }
            }
        }
        self.cohort.restore_bucket(slow);
        written
    }

    /// Requests admitted this step join the cohort when their prefill is done.
    fn join_admitted(&mut self, work: &[crate::engine::scheduler::ScheduledWork]) {
        let KvCacheManager::Paged(kv) = &self.kv else { unreachable!("checked by event_step") };
        let max_model_len = self.config.scheduler.max_model_len;
        for w in work {
            let Target::Sample(k) = w.target else { continue };
            let s = &self.groups[w.request as usize].samples[k as usize];
            if s.finished || s.num_tokens != s.num_computed + 1 {
                continue; // not in steady decode: the next step forms the cohort again or runs step by step
            }
            self.cohort.join(Joining {
                request: w.request,
                sample: k,
                seq: s.seq,
                computed: s.num_computed,
                generated: s.generated,
                target: s.target,
                max_model_len,
                last_block_shared: kv.last_block_shared(s.seq),
            });
        }
    }
}
