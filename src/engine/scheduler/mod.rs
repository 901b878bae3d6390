//! The scheduler: what runs in each step and which memory it takes. Two generations of vLLM's
//! scheduler live here, chosen by `scheduler.engine`:
//!
//! - [`v1`]: vLLM's current scheduler (`vllm/v1/core/sched/scheduler.py`). Every sample is its own
//!   request; running requests are served first, then waiting ones are admitted only when their
//!   whole known sequence fits; preemption is recompute only.
//! - [`v0`]: the 2023 scheduler the PagedAttention paper describes, also the one the contiguous
//!   allocator runs under: sequence groups of `n` samples sharing blocks with copy-on-write,
//!   a 1% watermark, swap to CPU, and prefill-first steps without chunked prefill.
//!
//! Both fill the same [`SchedulerOutput`], which the simulation applies.

use super::alloc::{KvCacheManager, RequestId};
use super::config::{Reserve, SchedulerConfig};
#[cfg(feature = "kv-offload")]
use super::offload::OffloadingConnector;
use super::request::SequenceGroup;

pub mod output;
pub mod v0;
pub mod v1;

pub use output::{HolReason, ScheduledWork, SchedulerOutput, Target};
pub use v0::V0Scheduler;
pub use v1::{SampleRef, V1Scheduler};

/// One scheduler, of the generation the configuration asks for.
#[derive(Clone, Debug)]
pub enum Scheduler {
    V0(V0Scheduler),
    V1(V1Scheduler),
}

impl Scheduler {
    /// A v1 scheduler when `v1` (paged allocator, `engine: v1`), else v0's.
    pub fn new(cfg: SchedulerConfig, v1: bool, reserve: Option<Reserve>, swap_capacity_blocks: u64) -> Self {
        if v1 {
            Scheduler::V1(V1Scheduler::new(cfg))
        } else {
            Scheduler::V0(V0Scheduler::new(cfg, reserve, swap_capacity_blocks))
        }
    }

    #[cfg(feature = "kv-offload")]
    /// With a host tier's connector (`kv_offload`, v1 only: validation refuses it elsewhere).
    pub fn with_connector(self, connector: Option<OffloadingConnector>) -> Self {
        match self {
            Scheduler::V1(s) => Scheduler::V1(s.with_connector(connector)),
            v0 => v0,
        }
    }

    #[cfg(feature = "kv-offload")]
    /// The host tier's connector, if the run has one.
    pub fn connector(&self) -> Option<&OffloadingConnector> {
        match self {
            Scheduler::V1(s) => s.connector(),
            Scheduler::V0(_) => None,
        }
    }

    #[cfg(feature = "kv-offload")]
    pub fn connector_mut(&mut self) -> Option<&mut OffloadingConnector> {
        match self {
            Scheduler::V1(s) => s.connector_mut(),
            Scheduler::V0(_) => None,
        }
    }

    pub fn config(&self) -> &SchedulerConfig {
        match self {
            Scheduler::V0(s) => s.config(),
            Scheduler::V1(s) => s.config(),
        }
    }

    /// Queues an arrived request behind every waiting one (FCFS); v1 queues each sample.
    pub fn add_request(&mut self, g: &SequenceGroup) {
        match self {
            Scheduler::V0(s) => s.add_waiting(g),
            Scheduler::V1(s) => s.add_request(g),
        }
    }

    /// Takes the request at the head of the waiting queue off it (the caller rejects it).
    pub fn take_waiting_head(&mut self) -> Option<RequestId> {
        match self {
            Scheduler::V0(s) => s.take_waiting_head(),
            Scheduler::V1(s) => s.take_waiting_head(),
        }
    }

    /// Plans one step and makes its allocations.
    pub fn schedule(&mut self, groups: &mut [SequenceGroup], kv: &mut KvCacheManager) -> SchedulerOutput {
        match self {
            Scheduler::V0(s) => s.schedule(groups, kv),
            Scheduler::V1(s) => s.schedule(groups, kv),
        }
    }

    /// An output to fill, reusing the last step's work list.
    pub(crate) fn empty_output(&mut self) -> SchedulerOutput {
        match self {
            Scheduler::V0(s) => s.empty_output(),
            Scheduler::V1(s) => s.empty_output(),
        }
    }

    /// The step's second half once the running requests are served with `budget` left (the
    /// event-driven engine serves them itself): swaps and admissions.
    pub(crate) fn schedule_after_running(
        &mut self,
        groups: &mut [SequenceGroup],
        kv: &mut KvCacheManager,
        out: &mut SchedulerOutput,
        budget: u32,
    ) {
        match self {
            Scheduler::V0(s) => s.schedule_after_running(groups, kv, out, budget),
            Scheduler::V1(s) => s.schedule_after_running(groups, kv, out, budget),
        }
    }

    /// Hands a step's work list back so the next step reuses its memory.
    pub fn recycle(&mut self, work: Vec<ScheduledWork>) {
        match self {
            Scheduler::V0(s) => s.recycle(work),
            Scheduler::V1(s) => s.recycle(work),
        }
    }

    /// Sample `k` of request `r` finished (its KV is already freed).
    pub fn finish_sample(&mut self, groups: &mut [SequenceGroup], r: RequestId, k: u32) {
        match self {
            Scheduler::V0(s) => {
                if groups[r as usize].samples.iter().all(|s| s.finished) {
                    s.finish(r);
                }
            }
            Scheduler::V1(s) => s.finish_sample(groups, SampleRef { request: r, sample: k }),
        }
    }

    /// Requests running now (v1 counts each sample, as `num_requests_running` does).
    pub fn num_running(&self) -> usize {
        match self {
            Scheduler::V0(s) => s.running().len(),
            Scheduler::V1(s) => s.running().len(),
        }
    }

    /// Requests waiting now (v1 counts each sample, as `num_requests_waiting` does).
    pub fn num_waiting(&self) -> usize {
        match self {
            Scheduler::V0(s) => s.waiting().len(),
            Scheduler::V1(s) => s.waiting().len(),
        }
    }

    /// Groups swapped out to CPU (v0 only).
    pub fn num_swapped(&self) -> usize {
        match self {
            Scheduler::V0(s) => s.swapped().len(),
            Scheduler::V1(_) => 0,
        }
    }

    /// Preemptions so far (recompute and swap), and those by swap.
    pub fn preemptions(&self) -> (u64, u64) {
        match self {
            Scheduler::V0(s) => s.preemptions(),
            Scheduler::V1(s) => (s.preemptions(), 0),
        }
    }

    pub fn is_idle(&self) -> bool {
        match self {
            Scheduler::V0(s) => s.is_idle(),
            Scheduler::V1(s) => s.is_idle(),
        }
    }

    /// The queues agree with the requests' states (see ARCHITECTURE.md, Invariants).
    pub fn check_invariants(&self, groups: &[SequenceGroup]) -> Result<(), String> {
        match self {
            Scheduler::V0(s) => s.check_invariants(groups),
            Scheduler::V1(s) => {
                s.check_invariants(groups)?;
                #[cfg(feature = "kv-offload")]
                s.connector().map_or(Ok(()), OffloadingConnector::check_invariants)?;
                Ok(())
            }
        }
    }
}
