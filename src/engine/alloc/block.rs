//! `KvCacheBlock`, one physical block's record, as vLLM's `kv_cache_utils.py` names it, and
//! [`BlockEntry`], the block pool's entry for a block where blocks can be shared: the record
//! beside the prefix cache's hash slot and the free queue's stamp, read by the block pool that
//! keeps the entries and the free queue that reads their ref counts and stamps.

use super::ids::RequestId;

/// One block's record, 12 bytes. A usable block is in the free queue exactly when its ref
/// count is 0, so no flag says so.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvCacheBlock {
    pub ref_cnt: u32,
    /// The request that last took this block (for drawing the map).
    pub owner: RequestId,
    /// Token slots written (≤ block size, which is at most 256).
    pub filled: u16,
    /// The block was made by copy-on-write.
    pub copied: bool,
    /// Its cached content is a prefix other requests may share (a class's system prompt, or
    /// tokens a trace names), not tokens only its own request holds.
    pub shared_content: bool,
}

/// Where a block's hash is kept, if it has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cached {
    #[default]
    No,
    /// In the pool's hash → blocks map.
    InMap,
    /// In its request's own list (`own_hashes.rs`).
    Own,
}

/// A block's entry in a pool whose blocks can be shared (prefix caching, or v0), 32 bytes: its
/// record, its hash (prefix caching: set once the block is full, kept while it sits free), and
/// the free queue's stamp. Handing a block out, caching it and freeing it each read and write
/// all three, so they share a cache line: a day of traffic cycles through the whole pool, and
/// three arrays cost three misses a block where one entry costs one (docs/PERFORMANCE.md).
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockEntry {
    pub block: KvCacheBlock,
    /// Bumped each time the block joins the free queue (prefix caching only; `free_queue.rs`).
    pub stamp: u32,
    pub hash: u64,
    /// The times the block was cached (an own list's entry counts only while its block keeps
    /// the generation it was cached at).
    pub generation: u32,
    pub cached: Cached,
}
