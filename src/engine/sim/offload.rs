//! The host tier's part of a step (`kv_offload`): before the scheduler plans it, transfers the
//! host link has finished complete (a request whose load is done has its blocks entered in the
//! prefix cache and can be admitted); once the step's time is known, the step's scheduled
//! requests offer their newly computed prompt blocks for storing and the step's transfers go on
//! the link. The connector itself is `engine::offload`. Without the `kv-offload` feature (the
//! page's first module) there is no tier, and nothing to do.

use super::Simulation;
use crate::engine::alloc::SeqId;
use crate::engine::config::{Reserve, SimConfig};
use crate::engine::memory_map::MemoryMap;
use crate::engine::offload::HostChunk;
#[cfg(feature = "kv-offload")]
use crate::engine::scheduler::Target;
use crate::engine::scheduler::{ScheduledWork, Scheduler};

impl Simulation {
    /// The run's scheduler, with the host tier's connector where the build and the
    /// configuration have one.
    pub(super) fn scheduler_for(config: &SimConfig, reserve: Option<Reserve>, swap_blocks: u64) -> Scheduler {
        let scheduler = Scheduler::new(config.scheduler.clone(), config.paged_v1(), reserve, swap_blocks);
        #[cfg(feature = "kv-offload")]
        let scheduler = scheduler.with_connector(config.offloading_connector());
        scheduler
    }
}

#[cfg(not(feature = "kv-offload"))]
impl Simulation {
    pub(super) fn poll_offload(&mut self) {}
    pub(super) fn offload_after_step(&mut self, _work: &[ScheduledWork]) {}
    pub(super) fn wait_for_transfers(&mut self) -> bool {
        false
    }
    pub(super) fn offload_request_finished(&mut self, _seq: SeqId) {}
    /// No host tier in this build.
    pub fn host_memory_map(&self, _max_cells: usize) -> Option<MemoryMap> {
        None
    }
    /// No host tier in this build.
    pub fn host_chunk(&self, _id: u32) -> Option<HostChunk> {
        None
    }
}

#[cfg(feature = "kv-offload")]
impl Simulation {
    /// Transfers done by now complete. A request whose whole sequence was loaded computes its
    /// last token again (vLLM sets `num_computed_tokens` one short).
    pub(super) fn poll_offload(&mut self) {
        let Some(c) = self.scheduler.connector_mut() else { return };
        for (seq, request, sample) in c.poll(self.now_us) {
            let s = &mut self.groups[request as usize].samples[sample as usize];
            let recompute_last = s.num_computed >= s.num_tokens;
            if recompute_last {
                s.num_computed = s.num_tokens - 1;
            }
            self.kv.loaded(seq, recompute_last);
        }
    }

    /// The step that ended now computed `work`: its prompt blocks are offered for storing, and
    /// the step's loads and stores go on the host link.
    pub(super) fn offload_after_step(&mut self, work: &[ScheduledWork]) {
        let Some(c) = self.scheduler.connector_mut() else { return };
        for w in work {
            let Target::Sample(k) = w.target else { continue };
            let g = &self.groups[w.request as usize];
            if w.context_tokens - w.num_new_tokens >= g.prompt_tokens {
                continue; // a decode token: only prompts are offloaded (`offload_prompt_only`)
            }
            let seq = g.samples[k as usize].seq;
            c.offer_stores(seq, w.request, &g.identity(seq), w.context_tokens);
        }
        c.end_step(self.now_us);
    }

    /// A step that scheduled no tokens but started loads: they go on the link now, and the
    /// engine waits for the first transfer to finish (vLLM keeps stepping while transfers are
    /// pending). False when no transfer is pending.
    pub(super) fn wait_for_transfers(&mut self) -> bool {
        let now = self.now_us;
        let Some(c) = self.scheduler.connector_mut() else { return false };
        c.end_step(now);
        let Some(done) = c.next_done_us() else { return false };
        let next = done.max(now + 1);
        self.advance_idle(next.min(self.end_limit_us));
        true
    }

    /// Sample `seq` ended (finished or refused): the host tier re-ranks what it touched.
    pub(super) fn offload_request_finished(&mut self, seq: SeqId) {
        if let Some(c) = self.scheduler.connector_mut() {
            c.request_finished(seq);
        }
    }

    /// The host tier's buffer right now in at most `max_cells` cells (one a chunk where they
    /// fit); None without a tier.
    pub fn host_memory_map(&self, max_cells: usize) -> Option<MemoryMap> {
        self.scheduler.connector().map(|c| c.host_map(max_cells))
    }

    /// The chunk at `id` of the host buffer, if a tier holds one there.
    pub fn host_chunk(&self, id: u32) -> Option<HostChunk> {
        self.scheduler.connector()?.manager().chunk_at(id)
    }
}
