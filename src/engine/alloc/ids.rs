//! The ids the allocators key on, what a sequence's tokens are for prefix caching, and the hash
//! that chains full blocks (vLLM hashes a block by its parent's hash and its tokens).

pub type RequestId = u32;
pub type SeqId = u32;

/// What a sequence's tokens are, as far as prefix caching can tell: the first
/// `shared_prefix_tokens` are the class's system prompt, the rest of the prompt belongs to the
/// request, and generated tokens belong to the sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenIdentity {
    pub request: RequestId,
    pub seq: SeqId,
    /// 0 = no shared prefix; otherwise the class index + 1.
    pub prefix_key: u32,
    pub shared_prefix_tokens: u32,
    pub prompt_tokens: u32,
}

impl TokenIdentity {
    /// Hash of full block `b` chained on its parent's hash, as vLLM hashes (parent, tokens).
    pub fn block_hash(&self, parent: u64, b: u32, block_size: u32) -> u64 {
        let end = (b + 1) * block_size;
        let content = if self.prefix_key != 0 && end <= self.shared_prefix_tokens {
            (1u64 << 62) | (u64::from(self.prefix_key) << 32) | u64::from(b)
        } else if end <= self.prompt_tokens {
            (2u64 << 62) | (u64::from(self.request) << 32) | u64::from(b)
        } else {
            (3u64 << 62) | (u64::from(self.seq) << 32) | u64::from(b)
        };
        splitmix64(parent ^ splitmix64(content ^ u64::from(block_size).rotate_left(20)))
    }
}

/// SplitMix64's finaliser: a fast, well-mixed 64-bit hash (block hashes, K/V test patterns).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
