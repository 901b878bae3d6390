//! A request as the scheduler sees it: a `SequenceGroup` of `n` parallel samples, each a
//! [`Sequence`], that share one prefill (vLLM's nouns). Token counting follows vLLM: a sequence
//! has `num_tokens` (prompt + generated) of which
//! `num_computed` have KV in the cache; a step computes the difference and, once caught up,
//! samples one more token. Recompute preemption sets `num_computed` back to zero.

use super::alloc::{PromptBlocks, RequestId, SeqId, SwappedKv, TokenIdentity};
use super::workload::prefix_key;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupStatus {
    Waiting,
    Running,
    Swapped,
    Finished,
    Rejected,
}

/// One of a request's `n` parallel samples: its own tokens and, once forked, its own KV.
#[derive(Clone, Debug)]
pub struct Sequence {
    pub seq: SeqId,
    pub num_tokens: u32,
    pub num_computed: u32,
    pub generated: u32,
    /// Hidden output length: known to the workload, learned by the scheduler only at the end.
    pub target: u32,
    pub finished: bool,
    /// Times this sample was preempted (v1 counts per request, and so per sample).
    pub preemptions: u32,
    /// When its latest output token landed (µs; meaningless while `generated` is 0): the start
    /// of its next inter-token gap.
    pub last_token_us: u64,
}

#[derive(Clone, Debug)]
pub struct SequenceGroup {
    pub request: RequestId,
    pub arrival_us: u64,
    pub class: u16,
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub shared_prefix_tokens: u32,
    /// Which of its class's tenants sent it (`RequestSpec::tenant`).
    pub tenant: u32,
    /// The prompt's blocks as a trace names them (hash-level prefix sharing).
    pub prompt_blocks: Option<PromptBlocks>,
    pub status: GroupStatus,
    /// The samples hold their own block tables: v0 once the prompt is computed, v1 always.
    pub forked: bool,
    /// Prompt tokens with KV in the parent's (samples[0]'s) table while not forked.
    pub prefill_computed: u32,
    pub samples: Vec<Sequence>,
    pub first_token_us: Option<u64>,
    pub finish_us: Option<u64>,
    /// Boxed: few groups are ever swapped, and a day of traffic keeps a million groups.
    pub swapped: Option<Box<SwappedKv>>,
    pub preemptions: u32,
    pub reject_reason: Option<String>,
}

impl SequenceGroup {
    pub fn n(&self) -> u32 {
        self.samples.len() as u32
    }

    pub fn parent(&self) -> SeqId {
        self.samples[0].seq
    }

    pub fn identity(&self, seq: SeqId) -> TokenIdentity {
        TokenIdentity {
            request: self.request,
            seq,
            prefix_key: if self.shared_prefix_tokens > 0 { prefix_key(self.class, self.tenant) } else { 0 },
            shared_prefix_tokens: self.shared_prefix_tokens,
            prompt_tokens: self.prompt_tokens,
            prompt_blocks: self.prompt_blocks.clone(),
            sole_sample: self.samples.len() == 1,
        }
    }

    /// Sequences that hold KV right now.
    pub fn live_seqs(&self) -> Vec<SeqId> {
        if self.forked {
            self.samples.iter().filter(|s| !s.finished).map(|s| s.seq).collect()
        } else {
            vec![self.parent()]
        }
    }

    /// Sequences this group counts against max_num_seqs.
    pub fn num_seqs(&self) -> u32 {
        if self.forked {
            self.samples.iter().filter(|s| !s.finished).count() as u32
        } else {
            self.n()
        }
    }

    pub fn generated(&self) -> u64 {
        self.samples.iter().map(|s| u64::from(s.generated)).sum()
    }
}
