//! What a scheduler step decides, whichever scheduler made it: the work to run, preemptions and
//! swaps, and why the head of the waiting queue waited.

use crate::engine::alloc::{Blocked, RequestId};

/// Which sequence of a group a piece of work is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The shared prefill of a v0 group that has not forked yet.
    Prefill,
    /// Sample index within the group (its prefill chunks too, under v1).
    Sample(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduledWork {
    pub request: RequestId,
    pub target: Target,
    pub num_new_tokens: u32,
    /// Context length after this step (what attention reads).
    pub context_tokens: u32,
}

/// Why the head of the queue waited this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolReason {
    Memory(Blocked),
    SeqLimit,
    TokenBudget,
}

#[derive(Clone, Debug, Default)]
pub struct SchedulerOutput {
    pub work: Vec<ScheduledWork>,
    pub preempted: u32,
    pub swapped_blocks: u64,
    pub hol: Option<HolReason>,
    /// v0: groups aborted because CPU swap space was full (vLLM v0 raises an error then).
    pub aborted: Vec<RequestId>,
}

impl SchedulerOutput {
    /// An empty output whose work list reuses `work`'s memory (last step's list).
    pub fn reusing(mut work: Vec<ScheduledWork>) -> Self {
        work.clear();
        SchedulerOutput { work, ..SchedulerOutput::default() }
    }
}
