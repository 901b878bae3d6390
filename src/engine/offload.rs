//! A host-memory (CPU) tier for KV blocks, as vLLM 0.33.0's `OffloadingConnector` keeps one
//! (`--kv-offloading-size`, the `native` backend): full prompt blocks are copied to host memory
//! as they are computed, a request being admitted looks up the host tier after the GPU prefix
//! cache, and a hit is loaded over the host link instead of recomputed.
//!
//! [`CpuOffloadingManager`] is what the host holds (vLLM's `CPUOffloadingManager` with its `lru`
//! policy); [`OffloadingConnector`] is the scheduler's side (lookups, loads, stores, the link's
//! timing). docs/OFFLOAD.md says what is followed, with vLLM's files, and what is not. Both come
//! with the `kv-offload` feature (native builds, the page's full module); the page's first module
//! hands a preset with a host tier to the full one.

#[cfg(feature = "kv-offload")]
mod connector;
#[cfg(feature = "kv-offload")]
mod manager;

#[cfg(feature = "kv-offload")]
pub use connector::OffloadingConnector;
#[cfg(feature = "kv-offload")]
pub use manager::{ChunkLookup, CpuOffloadingManager};

mod stats;
pub use stats::{HostChunk, OffloadStats};

use serde::{Deserialize, Serialize};

/// GiB, as vLLM's `--kv-offloading-size` counts them (2^30 bytes).
const GIB: f64 = (1u64 << 30) as f64;
/// vLLM aligns each host chunk to the page size (`BLOCK_SIZE_ALIGNMENT`, `mmap.PAGESIZE`).
const CHUNK_ALIGNMENT: u64 = 4096;

/// Which chunk the host tier evicts first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OffloadPolicy {
    /// vLLM's `LRUCachePolicy` (`eviction_policy: "lru"`, the default).
    #[default]
    Lru,
}

/// The host tier of a run: its size over the replica (vLLM's `cpu_bytes_to_use`, every
/// tensor-parallel rank together) and its eviction policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvOffloadConfig {
    pub cpu_gib: f64,
    pub policy: OffloadPolicy,
}

impl KvOffloadConfig {
    /// Chunks of `chunk_bytes` (one GPU block over every layer and rank) the tier holds:
    /// `cpu_bytes_to_use // round_up(bytes per chunk, 4096)`, as vLLM's `CPUOffloadingSpec`.
    pub fn capacity_chunks(&self, chunk_bytes: u64) -> u32 {
        let aligned = chunk_bytes.div_ceil(CHUNK_ALIGNMENT) * CHUNK_ALIGNMENT;
        ((self.cpu_gib * GIB) as u64 / aligned.max(1)).min(u64::from(u32::MAX)) as u32
    }
}
