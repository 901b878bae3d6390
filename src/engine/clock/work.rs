//! The work of one scheduler step, kept apart by kind before any clock prices it: the decodes
//! (how many sequences, the context they read) and the prefill chunks (how many, their tokens,
//! the context they end at, the query–key pairs their causal attention computes), and the swaps.
//! A roofline only needs the totals; a clock built from kernel timings prices decode attention
//! by its batch and context and prefill attention by its chunks, so the two are never summed here.

/// Work one scheduler step does.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepWork {
    /// Tokens the step's prefill chunks compute (a chunk of more than one token is prefill).
    pub prefill_tokens: u64,
    /// Prefill chunks scheduled (one per sequence that prefills in the step).
    pub prefill_chunks: u64,
    /// The contexts the prefill chunks end at, summed (each chunk reads its whole context).
    pub prefill_context_tokens: u64,
    /// Query–key pairs prefill attention computes: a chunk of `c` tokens after `o` computed ones
    /// (causal) is `c·o + c(c+1)/2`.
    pub prefill_attention_pairs: u64,
    /// Tokens decoded (one per decoding sequence).
    pub decode_tokens: u64,
    /// Sequences that decode in the step.
    pub decode_seqs: u64,
    /// The decoding sequences' contexts, summed: the KV their attention reads.
    pub decode_context_tokens: u64,
    /// Blocks swapped to or from host memory (vLLM v0's swap preemption).
    pub swap_blocks: u64,
}

impl StepWork {
    /// Adds one scheduled sequence's chunk: `new_tokens` computed, ending at `context_tokens`.
    pub fn add(&mut self, new_tokens: u32, context_tokens: u32, prefill: bool) {
        let (c, ctx) = (u64::from(new_tokens), u64::from(context_tokens));
        if prefill {
            self.prefill_tokens += c;
            self.prefill_chunks += 1;
            self.prefill_context_tokens += ctx;
            let offset = ctx.saturating_sub(c);
            self.prefill_attention_pairs += c * offset + c * (c + 1) / 2;
        } else {
            self.decode_tokens += c;
            self.decode_seqs += 1;
            self.decode_context_tokens += ctx;
        }
    }

    /// `seqs` decoding sequences whose contexts sum to `context_tokens` (the event-driven cohort
    /// adds its members at once).
    pub fn add_decodes(&mut self, seqs: u64, context_tokens: u64) {
        self.decode_tokens += seqs;
        self.decode_seqs += seqs;
        self.decode_context_tokens += context_tokens;
    }

    /// Tokens the step computes.
    pub fn tokens(&self) -> u64 {
        self.prefill_tokens + self.decode_tokens
    }

    /// Sequences the step schedules.
    pub fn seqs(&self) -> u64 {
        self.prefill_chunks + self.decode_seqs
    }

    /// Context tokens attention reads, prefill and decode together.
    pub fn kv_read_tokens(&self) -> u64 {
        self.prefill_context_tokens + self.decode_context_tokens
    }
}
