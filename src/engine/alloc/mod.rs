//! KV cache allocators behind one `KvCacheManager` the scheduler talks to: the contiguous slab
//! allocator and the paged block allocator. Both answer the same questions (can this request be
//! admitted, make room for n more tokens, free a sequence) and draw the same `MemoryMap`.

pub mod block;
pub mod block_pool;
pub mod contiguous;
pub mod free_queue;
pub mod ids;
pub mod own_hashes;
pub mod paged;

pub use block::{BlockEntry, KvCacheBlock};
pub use block_pool::BlockPool;
pub use contiguous::{ContiguousAllocator, Fit, Slab};
pub use free_queue::FreeBlockQueue;
pub use ids::{is_shared_content, splitmix64, PromptBlocks, RequestId, SeqId, TokenIdentity};
pub use paged::{
    BlockTable, ComputedBlocks, KvCacheGroups, PagedAdmit, PagedAllocator, PrefixStats, Shortfall, SingleTypeManager,
    SwappedKv, NULL_BLOCK,
};

use super::memory_map::{MapCell, MemoryMap};

/// Why the head of the waiting queue could not be admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// Total free memory would have been enough: the allocator, not the pool size, refused.
    pub enough_total_free: bool,
}

/// What admission asks of the allocator.
#[derive(Clone, Debug)]
pub struct AdmitRequest<'a> {
    pub request: RequestId,
    /// The sequence that runs the prefill; samples fork from it.
    pub parent: SeqId,
    pub samples: &'a [SeqId],
    pub identity: TokenIdentity,
    /// The whole known sequence (prompt, plus generated tokens after a preemption): paged
    /// admission requires it to fit, as vLLM's does.
    pub full_tokens: u32,
    /// Contiguous only: slab length per sample.
    pub reserve_tokens: u32,
    /// Paged: keep the watermark free (v0 always; v1 only while something runs).
    pub apply_watermark: bool,
    /// The request was preempted before (its prefix-cache lookup is counted apart).
    pub preempted_before: bool,
}

/// One per simulation, so the variants' sizes differ by a few hundred bytes once; boxing the
/// paged one would add a pointer to follow on every call of the hot path.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum KvCacheManager {
    Contiguous(ContiguousAllocator),
    Paged(PagedAllocator),
}

impl KvCacheManager {
    pub fn capacity_tokens(&self) -> u64 {
        match self {
            KvCacheManager::Contiguous(c) => u64::from(c.capacity_tokens()),
            KvCacheManager::Paged(p) => u64::from(p.pool().num_usable_blocks()) * u64::from(p.block_size()),
        }
    }

    /// Tokens per block (paged), 1 (contiguous).
    pub fn block_tokens(&self) -> u64 {
        match self {
            KvCacheManager::Contiguous(_) => 1,
            KvCacheManager::Paged(p) => u64::from(p.block_size()),
        }
    }

    /// Token slots reserved or held in referenced blocks.
    pub fn allocated_tokens(&self) -> u64 {
        match self {
            KvCacheManager::Contiguous(c) => u64::from(c.capacity_tokens() - c.free_tokens()),
            KvCacheManager::Paged(p) => {
                u64::from(p.pool().num_usable_blocks() - p.num_free_blocks()) * u64::from(p.block_size())
            }
        }
    }

    /// Changes whenever memory is placed or released, so an admission refused at one epoch is
    /// refused again at the same epoch (the scheduler skips the retry).
    pub fn epoch(&self) -> u64 {
        match self {
            KvCacheManager::Contiguous(c) => c.epoch(),
            KvCacheManager::Paged(p) => p.pool().epoch(),
        }
    }

    /// Token slots that hold KV.
    pub fn live_tokens(&self) -> u64 {
        match self {
            KvCacheManager::Contiguous(c) => c.live_tokens(),
            KvCacheManager::Paged(p) => p.live_tokens(),
        }
    }

    /// Prefix-cache hits for a request about to be admitted (paged with caching only).
    pub fn computed_blocks(&self, identity: &TokenIdentity, num_tokens: u32) -> ComputedBlocks {
        match self {
            KvCacheManager::Paged(p) => p.get_computed_blocks(identity, num_tokens),
            KvCacheManager::Contiguous(_) => ComputedBlocks::default(),
        }
    }

    /// Admits a request whose prefill will write `first_chunk` tokens now (after `computed`).
    pub fn admit(
        &mut self,
        req: &AdmitRequest<'_>,
        computed: &ComputedBlocks,
        first_chunk: u32,
    ) -> Result<(), Blocked> {
        self.admit_as(req, computed, first_chunk, false)
    }

    /// Admits a request whose first `loaded` tokens after `computed` come from the host tier
    /// (paged only): its blocks enter the prefix cache when [`KvCacheManager::loaded`] is told.
    pub fn admit_loading(
        &mut self,
        req: &AdmitRequest<'_>,
        computed: &ComputedBlocks,
        loaded: u32,
    ) -> Result<(), Blocked> {
        self.admit_as(req, computed, loaded, true)
    }

    /// A load admitted by [`KvCacheManager::admit_loading`] is done (paged only).
    pub fn loaded(&mut self, seq: SeqId, recompute_last: bool) {
        if let KvCacheManager::Paged(p) = self {
            p.loaded(seq, recompute_last);
        }
    }

    fn admit_as(
        &mut self,
        req: &AdmitRequest<'_>,
        computed: &ComputedBlocks,
        first_chunk: u32,
        loading: bool,
    ) -> Result<(), Blocked> {
        match self {
            KvCacheManager::Contiguous(c) => {
                let need = req.reserve_tokens * req.samples.len() as u32;
                if c.reserve_all(req.request, req.samples, req.reserve_tokens) {
                    let wrote = c.write(req.parent, first_chunk);
                    debug_assert!(wrote);
                    Ok(())
                } else {
                    Err(Blocked { enough_total_free: c.free_tokens() >= need })
                }
            }
            KvCacheManager::Paged(p) => {
                let admit = PagedAdmit {
                    request: req.request,
                    identity: req.identity.clone(),
                    num_new_tokens: first_chunk,
                    full_tokens: req.full_tokens,
                    apply_watermark: req.apply_watermark,
                    preempted_before: req.preempted_before,
                };
                // Enough in total when only the watermark refused (cached hits that would leave
                // the free queue are part of the need).
                let admitted = if loading {
                    p.admit_loading(req.parent, &admit, computed)
                } else {
                    p.admit(req.parent, &admit, computed)
                };
                admitted.map_err(|s| Blocked { enough_total_free: s.need <= s.free })
            }
        }
    }

    /// Room for `n` more tokens of `seq`, written at once; None when the pool is short.
    pub fn allocate_slots(&mut self, seq: SeqId, n: u32) -> Option<()> {
        match self {
            KvCacheManager::Contiguous(c) => c.write(seq, n).then_some(()),
            KvCacheManager::Paged(p) => p.allocate_slots(seq, n),
        }
    }

    /// Whether every `(seq, new tokens)` pair can be allocated at once.
    pub fn can_allocate(&self, work: &[(SeqId, u32)]) -> bool {
        match self {
            KvCacheManager::Contiguous(c) => {
                work.iter().all(|&(s, n)| c.slab(s).is_some_and(|slab| slab.live + n <= slab.len))
            }
            KvCacheManager::Paged(p) => p.blocks_needed_all(work) <= p.num_free_blocks(),
        }
    }

    /// Starts sample `child` from the parent's prompt KV.
    pub fn fork(&mut self, parent: SeqId, child: SeqId, identity: TokenIdentity) {
        match self {
            KvCacheManager::Contiguous(c) => c.copy_live(parent, child),
            KvCacheManager::Paged(p) => p.fork(parent, child, identity),
        }
    }

    /// Event-driven stepping: `tokens` decode tokens written on the fast path (counted now,
    /// written down by `catch_up`).
    pub fn count_deferred_writes(&mut self, tokens: u64) {
        match self {
            KvCacheManager::Contiguous(c) => c.count_deferred_writes(tokens),
            KvCacheManager::Paged(p) => p.count_deferred_writes(tokens),
        }
    }

    /// Writes down `seq`'s deferred writes: it holds `tokens` tokens of KV.
    pub fn catch_up(&mut self, seq: SeqId, tokens: u32) {
        match self {
            KvCacheManager::Contiguous(c) => c.catch_up(seq, tokens),
            KvCacheManager::Paged(p) => p.catch_up(seq, tokens),
        }
    }

    /// Tokens of KV `seq` holds (written tokens of its table, or live tokens of its slab).
    pub fn seq_tokens(&self, seq: SeqId) -> Option<u32> {
        match self {
            KvCacheManager::Contiguous(c) => c.slab(seq).map(|s| s.live),
            KvCacheManager::Paged(p) => p.table(seq).map(|t| t.num_tokens),
        }
    }

    pub fn free(&mut self, seq: SeqId) {
        match self {
            KvCacheManager::Contiguous(c) => c.free(seq),
            KvCacheManager::Paged(p) => p.free(seq),
        }
    }

    /// Frees a finished sequence's KV (its own blocks need not be findable again).
    pub fn free_finished(&mut self, seq: SeqId) {
        match self {
            KvCacheManager::Contiguous(c) => c.free(seq),
            KvCacheManager::Paged(p) => p.free_finished(seq),
        }
    }

    /// Request `r` has ended (finished or refused): the prefix cache stops listing the blocks
    /// of its own tokens, which nothing will look up again (they stay cached until evicted).
    pub fn forget_request(&mut self, r: RequestId) {
        if let KvCacheManager::Paged(p) = self {
            p.forget_request(r);
        }
    }

    pub fn cow_copies(&self) -> u64 {
        match self {
            KvCacheManager::Paged(p) => p.cow_copies,
            KvCacheManager::Contiguous(_) => 0,
        }
    }

    /// Hits over queries of first admissions (re-admissions after preemption left out, as
    /// vLLM's `prefix_cache_hit_rate` leaves them out).
    pub fn prefix_cache_hit_rate(&self) -> f64 {
        match self {
            KvCacheManager::Paged(p) if p.prefix.queries > 0 => p.prefix.hits as f64 / p.prefix.queries as f64,
            _ => 0.0,
        }
    }

    /// Prefix-cache figures so far: first admissions, and re-admissions after a preemption.
    pub fn prefix_stats(&self) -> (PrefixStats, PrefixStats) {
        match self {
            KvCacheManager::Paged(p) => (p.prefix, p.preempted_prefix),
            KvCacheManager::Contiguous(_) => (PrefixStats::default(), PrefixStats::default()),
        }
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        let r = match self {
            KvCacheManager::Contiguous(c) => c.check_invariants(),
            KvCacheManager::Paged(p) => p.check_invariants(),
        };
        if self.live_tokens() > self.allocated_tokens() {
            return Err(format!("live {} > allocated {}", self.live_tokens(), self.allocated_tokens()));
        }
        r
    }

    /// The physical memory map: one cell per block (paged) or per `cell_tokens` slots
    /// (contiguous). A free block is marked as a cached prefix only where a later request could
    /// hit it: its tokens are shared content, or its request (`unfinished`) may still come back
    /// for them after a preemption.
    pub fn memory_map(&self, contiguous_cell_tokens: u32, unfinished: impl Fn(RequestId) -> bool) -> MemoryMap {
        match self {
            KvCacheManager::Paged(p) => {
                // v1's null block holds nothing and is never handed out: the map leaves it out.
                if !p.pool().shares_blocks() {
                    return MemoryMap { cell_tokens: p.block_size(), cells: p.held_cells() };
                }
                let first = p.pool().first_usable() as usize;
                let cells = p
                    .pool()
                    .blocks()
                    .skip(first)
                    .zip(first as u32..)
                    .map(|(b, id)| {
                        if b.ref_cnt == 0 {
                            MapCell {
                                owner: 0,
                                live_tokens: 0,
                                flags: if p.pool().block_hash(id).is_some() && (b.shared_content || unfinished(b.owner))
                                {
                                    MapCell::CACHED
                                } else {
                                    0
                                },
                                group: 0,
                            }
                        } else {
                            let mut flags = 0;
                            if b.ref_cnt > 1 {
                                flags |= MapCell::SHARED;
                            }
                            if b.copied {
                                flags |= MapCell::COPIED;
                            }
                            MapCell { owner: b.owner + 1, live_tokens: b.filled, flags, group: 0 }
                        }
                    })
                    .collect();
                MemoryMap { cell_tokens: p.block_size(), cells }
            }
            KvCacheManager::Contiguous(c) => {
                let ct = contiguous_cell_tokens.max(1);
                let n = c.capacity_tokens().div_ceil(ct) as usize;
                let mut cells = vec![MapCell::default(); n];
                let mut cover = vec![0u32; n];
                for s in c.slabs() {
                    let (start, end) = (s.start, s.start + s.len);
                    let live_end = s.start + s.live;
                    for cell in (start / ct)..end.div_ceil(ct) {
                        let (lo, hi) = (cell * ct, (cell + 1) * ct);
                        let overlap = hi.min(end) - lo.max(start);
                        if overlap > cover[cell as usize] {
                            cover[cell as usize] = overlap;
                            let live = hi.min(live_end).saturating_sub(lo.max(start));
                            let mut flags = MapCell::SLAB;
                            if cell == start / ct {
                                flags |= MapCell::SLAB_START;
                            }
                            cells[cell as usize] =
                                MapCell { owner: s.request + 1, live_tokens: live as u16, flags, group: 0 };
                        }
                    }
                }
                MemoryMap { cell_tokens: ct, cells }
            }
        }
    }
}
