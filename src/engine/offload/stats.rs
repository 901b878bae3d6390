//! What the host tier reports (`engine::offload`): its counts over a run, and what one chunk of
//! its buffer holds. Its own file, below the connector and the manager that fill it.

use serde::Serialize;

/// What one chunk of the host buffer holds (`CpuOffloadingManager::chunk_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostChunk {
    /// The request that stored it.
    pub owner: crate::engine::alloc::RequestId,
    /// −1 while its store is in flight, 0 ready, > 0 pinned by that many loads.
    pub ref_cnt: i32,
}

/// What the host tier did over a run, as vLLM counts it: lookups of requests admitted for the
/// first time (`queries`: the tokens not found on the GPU; `hits`: the tokens found on the host,
/// vLLM's `external_prefix_cache_queries` / `_hits`), re-admissions after a preemption apart, and
/// the bytes each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OffloadStats {
    pub capacity_chunks: u32,
    /// Chunks held at the end of the run.
    pub resident_chunks: u32,
    pub queries: u64,
    pub hits: u64,
    pub preempted_queries: u64,
    pub preempted_hits: u64,
    /// Requests admitted with a load.
    pub loads: u64,
    pub loaded_bytes: u64,
    pub stored_bytes: u64,
    /// Stores refused whole for want of evictable room (vLLM's `kv_offload_allocation_failure`).
    pub store_refusals: u64,
}
