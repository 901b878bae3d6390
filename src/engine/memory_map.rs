//! A snapshot of physical KV memory a renderer can draw without knowing allocator internals:
//! one cell per block (paged) or per fixed slice of slots (contiguous), each with its owner
//! request, how many of its token slots hold KV, and flags (shared, copied, cached, slab start,
//! freed behind a window), and under vLLM v1's hybrid KV cache the group a held block serves. A
//! host-memory tier's buffer is drawn with the same cells, one per chunk.

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MapCell {
    /// Owning request id + 1; 0 means free.
    pub owner: u32,
    /// Token slots in this cell that hold KV (≤ the map's `cell_tokens`).
    pub live_tokens: u16,
    pub flags: u8,
    /// The KV cache group a held block belongs to under vLLM v1's hybrid KV cache (0 when the
    /// model has one group, and for a free block).
    pub group: u8,
}

impl MapCell {
    /// Referenced by more than one sequence (shared prompt or cached prefix).
    pub const SHARED: u8 = 1;
    /// Made by copy-on-write.
    pub const COPIED: u8 = 2;
    /// Free, but still holding a cached prefix block that a later request may reuse.
    pub const CACHED: u8 = 4;
    /// Part of a contiguous slab.
    pub const SLAB: u8 = 8;
    /// The first cell of a contiguous slab.
    pub const SLAB_START: u8 = 16;
    /// Free, last freed behind a sliding window or attention chunk (hybrid KV cache groups).
    pub const BEHIND_WINDOW: u8 = 32;
    /// A host tier's chunk (`kv_offload`) pinned by a load to the GPU in flight.
    pub const LOADING: u8 = 64;

    pub fn request(&self) -> Option<u32> {
        self.owner.checked_sub(1)
    }
    pub fn is_free(&self) -> bool {
        self.owner == 0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryMap {
    pub cell_tokens: u32,
    pub cells: Vec<MapCell>,
}

impl MemoryMap {
    pub fn allocated_cells(&self) -> usize {
        self.cells.iter().filter(|c| !c.is_free()).count()
    }
    pub fn live_tokens(&self) -> u64 {
        self.cells.iter().map(|c| u64::from(c.live_tokens)).sum()
    }
}
