//! The ids the allocators key on, what a sequence's tokens are for prefix caching, and the hash
//! that chains full blocks (vLLM hashes a block by its parent's hash and its tokens).

use std::sync::Arc;

pub type RequestId = u32;
pub type SeqId = u32;

/// A prompt's tokens as a trace names them: block ids of the trace's own block size
/// (`block_tokens`), equal ids meaning equal tokens. They are translated onto the allocator's
/// block size when a block is hashed, so two prompts share exactly the allocator blocks whose
/// tokens lie in the trace blocks they share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptBlocks {
    pub ids: Arc<[u32]>,
    pub block_tokens: u32,
}

impl PromptBlocks {
    /// The content of the allocator block covering tokens `[start, end)` when every one of them
    /// lies in the trace's blocks (`None` past them): the ids it spans and where it starts in the
    /// first.
    fn content(&self, start: u32, end: u32) -> Option<u64> {
        let bt = self.block_tokens;
        if u64::from(end) > self.ids.len() as u64 * u64::from(bt) {
            return None;
        }
        let (first, last) = (start / bt, (end - 1) / bt);
        let seed = splitmix64(u64::from(start % bt) | (1 << 40));
        Some(self.ids[first as usize..=last as usize].iter().fold(seed, |h, &id| splitmix64(h ^ u64::from(id))))
    }
}

/// What a sequence's tokens are, as far as prefix caching can tell: the first
/// `shared_prefix_tokens` are the class's system prompt, or the trace's `prompt_blocks` name the
/// prompt's tokens; the rest of the prompt belongs to the request, and generated tokens belong to
/// the sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenIdentity {
    pub request: RequestId,
    pub seq: SeqId,
    /// 0 = no shared prefix; otherwise the class index + 1.
    pub prefix_key: u32,
    pub shared_prefix_tokens: u32,
    pub prompt_tokens: u32,
    pub prompt_blocks: Option<PromptBlocks>,
    /// The request has this one sequence: no sibling sample reads its prompt's own blocks, so
    /// only the sequence itself can hit any of its own blocks, once admitted again after a
    /// preemption (false is always safe: the blocks are listed as they fill).
    pub sole_sample: bool,
}

impl TokenIdentity {
    /// Hash of full block `b` chained on its parent's hash, as vLLM hashes (parent, tokens).
    pub fn block_hash(&self, parent: u64, b: u32, block_size: u32) -> u64 {
        chain_hash(parent, self.block_content(b, block_size), block_size)
    }

    /// Only this sequence can ever hit block `b` of its own tokens (its content names the
    /// sequence, or the request has no other sample), and only after it is freed: the block
    /// can wait until then to be hashed and listed (`PagedAllocator::list_own_blocks`).
    pub fn own_block_waits(&self, content: u64) -> bool {
        content >> 62 == 3 || (content >> 62 == 2 && self.sole_sample)
    }

    /// What full block `b`'s tokens are, tagged in the top two bits: 0 a block the trace names,
    /// 1 the class's system prompt, 2 the request's own prompt, 3 the sample's generated tokens.
    pub fn block_content(&self, b: u32, block_size: u32) -> u64 {
        let end = (b + 1) * block_size;
        let traced = match &self.prompt_blocks {
            Some(p) if end <= self.prompt_tokens => p.content(b * block_size, end),
            _ => None,
        };
        if let Some(c) = traced {
            c >> 2
        } else if self.prefix_key != 0 && end <= self.shared_prefix_tokens {
            (1u64 << 62) | (u64::from(self.prefix_key) << 32) | u64::from(b)
        } else if end <= self.prompt_tokens {
            (2u64 << 62) | (u64::from(self.request) << 32) | u64::from(b)
        } else {
            (3u64 << 62) | (u64::from(self.seq) << 32) | u64::from(b)
        }
    }
}

/// Whether a [`TokenIdentity::block_content`] is one other requests may hold too (a trace's block
/// or a system prompt), rather than tokens of one request only.
pub fn is_shared_content(content: u64) -> bool {
    content >> 62 < 2
}

/// The hash of a block with `content` chained on its parent's hash.
pub fn chain_hash(parent: u64, content: u64, block_size: u32) -> u64 {
    splitmix64(parent ^ splitmix64(content ^ u64::from(block_size).rotate_left(20)))
}

/// SplitMix64's finaliser: a fast, well-mixed 64-bit hash (block hashes, K/V test patterns).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
