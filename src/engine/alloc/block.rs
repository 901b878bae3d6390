//! `KvCacheBlock`, one physical block's record, as vLLM's `kv_cache_utils.py` names it: shared
//! by the block pool that keeps the records and the free queue that reads their ref counts.

use super::ids::RequestId;

/// One block's record, 12 bytes. A usable block is in the free queue exactly when its ref
/// count is 0, so no flag says so.
#[derive(Clone, Debug, Default)]
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
