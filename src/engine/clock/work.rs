//! The work of one scheduler step, kept apart by kind before any clock prices it: the decodes
//! (how many sequences, the context they read) and the prefill chunks (how many, their tokens,
//! the context they end at, the query–key pairs their causal attention computes), and the swaps.
//! A roofline only needs the totals; a clock built from kernel timings prices decode attention
//! by its batch and context and prefill attention by its chunks, so the two are never summed here.
//!
//! A model with sliding-window layers (gpt-oss, Gemma 2/3, Mistral) reads only the last `window`
//! tokens in those layers: the step keeps the windowed reads and pairs beside the full ones, and
//! a clock prices each kind of layer with its own.

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
    /// The model's sliding window (0: no windowed layers, and the windowed sums stay 0).
    pub window: u32,
    /// What the windowed layers read and compute: the sums above with every context capped at
    /// the window (a decode reads `min(ctx, W)` tokens; a chunk of `c` reads `min(ctx, c + W − 1)`
    /// and its query at position `j` attends to `min(j, W)` keys).
    pub decode_window_context_tokens: u64,
    pub prefill_window_context_tokens: u64,
    pub prefill_window_attention_pairs: u64,
}

impl StepWork {
    /// The work of a step of a model whose windowed layers read `window` tokens (0: none), with
    /// `swap_blocks` swapped.
    pub fn new(window: u32, swap_blocks: u64) -> StepWork {
        StepWork { window, swap_blocks, ..StepWork::default() }
    }

    /// Adds one scheduled sequence's chunk: `new_tokens` computed, ending at `context_tokens`.
    pub fn add(&mut self, new_tokens: u32, context_tokens: u32, prefill: bool) {
        let (c, ctx) = (u64::from(new_tokens), u64::from(context_tokens));
        let w = u64::from(self.window);
        if prefill {
            self.prefill_tokens += c;
            self.prefill_chunks += 1;
            self.prefill_context_tokens += ctx;
            let offset = ctx.saturating_sub(c);
            self.prefill_attention_pairs += c * offset + c * (c + 1) / 2;
            if w > 0 {
                self.prefill_window_context_tokens += ctx.min(c + w - 1);
                self.prefill_window_attention_pairs += window_pairs(offset, ctx, w);
            }
        } else {
            self.decode_tokens += c;
            self.decode_seqs += 1;
            self.decode_context_tokens += ctx;
            if w > 0 {
                self.decode_window_context_tokens += ctx.min(w);
            }
        }
    }

    /// `seqs` decoding sequences whose contexts sum to `context_tokens`, and to
    /// `window_context_tokens` each capped at the window (the event-driven cohort adds its
    /// members at once).
    pub fn add_decodes(&mut self, seqs: u64, context_tokens: u64, window_context_tokens: u64) {
        self.decode_tokens += seqs;
        self.decode_seqs += seqs;
        self.decode_context_tokens += context_tokens;
        if self.window > 0 {
            self.decode_window_context_tokens += window_context_tokens;
        }
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

    /// Context tokens a windowed layer's attention reads, prefill and decode together.
    pub fn window_kv_read_tokens(&self) -> u64 {
        self.prefill_window_context_tokens + self.decode_window_context_tokens
    }
}

/// Query–key pairs of a chunk computing positions `offset + 1 ..= end` under a window of `w`:
/// the query at position `j` attends to `min(j, w)` keys.
fn window_pairs(offset: u64, end: u64, w: u64) -> u64 {
    let below = end.min(w); // positions up to here attend to all before them
    let ramp = if below > offset { (below * (below + 1) - offset * (offset + 1)) / 2 } else { 0 };
    ramp + (end - below.max(offset)) * w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The windowed sums against a count, query by query.
    #[test]
    fn windowed_sums_match_a_direct_count() {
        for w in [1u32, 4, 7, 128] {
            for (c, ctx) in [(1u32, 1u32), (1, 5), (3, 3), (10, 10), (5, 9), (200, 300), (16, 1000), (1, 130)] {
                let mut work = StepWork::new(w, 0);
                let prefill = c > 1 || ctx == c;
                work.add(c, ctx, prefill);
                let offset = ctx - c;
                let pairs: u64 = (offset + 1..=ctx).map(|j| u64::from(j.min(w))).sum();
                let first_key = (offset + 1).saturating_sub(w - 1).max(1);
                let read = u64::from(ctx - first_key + 1);
                if prefill {
                    assert_eq!(work.prefill_window_attention_pairs, pairs, "pairs of {c} after {offset}, window {w}");
                    assert_eq!(work.prefill_window_context_tokens, read, "read of {c} after {offset}, window {w}");
                } else {
                    assert_eq!(work.decode_window_context_tokens, read, "decode at {ctx}, window {w}");
                }
            }
        }
    }

    #[test]
    fn without_a_window_the_windowed_sums_stay_zero() {
        let mut work = StepWork::default();
        work.add(100, 100, true);
        work.add(1, 500, false);
        work.add_decodes(3, 900, 300);
        assert_eq!(work.window_kv_read_tokens() + work.prefill_window_attention_pairs, 0);
        assert_eq!(work.kv_read_tokens(), 1500);
    }
}
