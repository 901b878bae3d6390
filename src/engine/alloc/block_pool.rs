//! The paged allocator's physical side, named as vLLM's `block_pool.py` names it:
//! `KvCacheBlock`s with reference counts, the `FreeBlockQueue` (`free_queue.rs`) and a
//! `BlockPool` that hands out blocks from the queue's head and keeps a hash → block map for
//! prefix caching. Under v1 a block of one request's own tokens is listed by its request
//! instead (`own_hashes.rs`): only that request can hit it, and most such blocks are evicted
//! unhit, so caching and evicting them costs no map update. A block only its own sequence can
//! hit is not even hashed until its table is freed with the request unfinished
//! (`mark_own_block`, then `list_own_block`): a request that runs to its end never is.
//!
//! Freeing follows the engine: vLLM v1 puts blocks without a hash at the queue's head (reused
//! first) and hashed ones at the tail (evicted last, least recently used), keeps duplicate hashes,
//! and reserves block 0 as the null block; v0 puts every freed block at the tail and caches one
//! block per hash. A free block that still holds a cached prefix keeps its hash until it is reused.
//!
//! Block records are kept only where a block can have more than one holder: prefix caching
//! (cache hits), or v0 (forked samples, swaps), each in a [`BlockEntry`] with the block's hash
//! and free-queue stamp (one cache line shared by two blocks). vLLM v1 without prefix caching never shares a
//! block, so a block is held exactly when one block table holds it, and the tables are the
//! records (`PagedAllocator::block_records` derives them): handing out and freeing a block
//! then moves its id between the queue and a table and writes nothing else.

use std::collections::BTreeMap;

use super::block::{BlockEntry, Cached, KvCacheBlock};
use super::free_queue::FreeBlockQueue;
use super::ids::RequestId;
use super::own_hashes::{OwnEntry, OwnHashes};
use crate::engine::version::EngineVersion;

#[derive(Clone, Debug)]
pub struct BlockPool {
    /// One entry per block where blocks can be shared (its record, hash and free-queue stamp
    /// together); empty where they cannot (see the module doc).
    blocks: Vec<BlockEntry>,
    num_blocks: u32,
    free_queue: FreeBlockQueue,
    /// Hash → the blocks cached under it, oldest first (v1 keeps duplicates; v0 holds one).
    cached: BTreeMap<u64, Vec<u32>>,
    /// v1: the blocks of each request's own tokens, by request.
    own: OwnHashes,
    enable_caching: bool,
    engine: EngineVersion,
    /// Scratch for `free_blocks` (blocks to put at the head, in order).
    scratch_front: Vec<u32>,
    /// Bumped whenever a block leaves or joins the free queue (what admission depends on).
    epoch: u64,
}

impl BlockPool {
    /// `num_blocks` as vLLM counts them: under v1 block 0 is the null block, never handed out.
    pub fn new(num_blocks: u32, enable_caching: bool, engine: EngineVersion) -> Self {
        let shares = enable_caching || engine == EngineVersion::V0;
        let mut blocks = if shares { vec![BlockEntry::default(); num_blocks as usize] } else { Vec::new() };
        let mut free_queue = FreeBlockQueue::new(num_blocks, enable_caching);
        let first = u32::from(engine == EngineVersion::V1).min(num_blocks);
        for id in first..num_blocks {
            free_queue.push_back(&mut blocks, id, false);
        }
        BlockPool {
            blocks,
            num_blocks,
            free_queue,
            cached: BTreeMap::new(),
            own: OwnHashes::default(),
            enable_caching,
            engine,
            scratch_front: Vec::new(),
            epoch: 0,
        }
    }

    /// Every block, the null block included (vLLM's `num_gpu_blocks`).
    pub fn num_blocks(&self) -> u32 {
        self.num_blocks
    }

    /// Blocks that can hold tokens: all but v1's null block.
    pub fn num_usable_blocks(&self) -> u32 {
        self.num_blocks() - self.first_usable()
    }

    /// The first block id that can hold tokens (1 under v1: block 0 is the null block).
    pub fn first_usable(&self) -> u32 {
        u32::from(self.engine == EngineVersion::V1).min(self.num_blocks())
    }

    pub fn engine(&self) -> EngineVersion {
        self.engine
    }
    pub fn num_free_blocks(&self) -> u32 {
        self.free_queue.len()
    }
    /// A block can have more than one holder (prefix caching, or v0), so records are kept.
    pub fn shares_blocks(&self) -> bool {
        self.enable_caching || self.engine == EngineVersion::V0
    }
    /// A block's record; only where blocks can be shared ([`BlockPool::shares_blocks`]).
    pub fn block(&self, id: u32) -> &KvCacheBlock {
        &self.blocks[id as usize].block
    }
    /// Every block's record in block-id order; none where blocks cannot be shared.
    pub fn blocks(&self) -> impl ExactSizeIterator<Item = &KvCacheBlock> + '_ {
        self.blocks.iter().map(|e| &e.block)
    }
    /// The references to a block some table holds (1 where blocks cannot be shared).
    #[inline]
    pub fn holders(&self, id: u32) -> u32 {
        self.blocks.get(id as usize).map_or(1, |e| e.block.ref_cnt)
    }
    /// The block was made by copy-on-write (never where blocks cannot be shared).
    pub fn copied(&self, id: u32) -> bool {
        self.blocks.get(id as usize).is_some_and(|e| e.block.copied)
    }
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// Hashes in the hash → blocks map (under v1, those of shared content).
    pub fn num_cached_blocks(&self) -> usize {
        self.cached.len()
    }
    /// The hash a full block is cached under (prefix caching only); a block marked cached but
    /// not listed yet ([`BlockPool::mark_own_block`]) reads as cached under the hash it held
    /// before, which nothing reads until it is listed.
    pub fn block_hash(&self, id: u32) -> Option<u64> {
        self.blocks.get(id as usize).filter(|e| e.cached != Cached::No).map(|e| e.hash)
    }

    /// Takes the block at the head of the free queue, evicting its cached hash; None if empty.
    pub fn get_new_block(&mut self, owner: RequestId) -> Option<u32> {
        let (id, in_map) = self.free_queue.pop_front(&self.blocks)?;
        self.epoch += 1;
        if self.shares_blocks() {
            self.hand_out(id, in_map, owner, 0);
        }
        Some(id)
    }

    /// Writes the record of block `id`, just taken from the free queue, as held by `owner` with
    /// `filled` tokens, and evicts its hash if it is in the map (`in_map`, as the queue said).
    /// Only written: a day of traffic cycles through the whole pool, and a store to a block's
    /// entry need not wait for it to arrive.
    #[inline(always)]
    fn hand_out(&mut self, id: u32, in_map: bool, owner: RequestId, filled: u16) {
        let e = &mut self.blocks[id as usize];
        debug_assert_eq!(e.block.ref_cnt, 0);
        debug_assert_eq!(in_map, e.cached == Cached::InMap, "block {id} left the map while free");
        e.block = KvCacheBlock { ref_cnt: 1, owner, filled, ..KvCacheBlock::default() };
        // An own list's entry is left behind, stale: the block no longer carries a hash.
        e.cached = Cached::No;
        if in_map {
            self.evict_hash(id);
        }
    }

    /// Takes block `id`, just handed out, out of the hash → blocks map.
    #[cold]
    fn evict_hash(&mut self, id: u32) {
        let h = self.blocks[id as usize].hash;
        if let Some(ids) = self.cached.get_mut(&h) {
            ids.retain(|&x| x != id);
            if ids.is_empty() {
                self.cached.remove(&h);
            }
        }
    }

    /// Takes `n` blocks from the head of the free queue onto `out`, as `n` calls of
    /// [`BlockPool::get_new_block`] would (a prefill's blocks in one pass), and fills them with
    /// tokens being written: `fill` each, the last `last_fill`.
    pub fn get_new_blocks(
        &mut self,
        n: u32,
        owner: RequestId,
        out: &mut Vec<u32>,
        fill: u32,
        last_fill: u32,
    ) -> Option<()> {
        if self.free_queue.len() < n {
            return None;
        }
        out.reserve(n as usize);
        if self.enable_caching {
            for k in 0..n {
                let (id, in_map) = self.free_queue.pop_front(&self.blocks).expect("counted above");
                self.hand_out(id, in_map, owner, (if k + 1 == n { last_fill } else { fill }) as u16);
                out.push(id);
            }
            self.epoch += u64::from(n);
            return Some(());
        }
        // Without prefix caching no block carries a hash and none leaves the queue's middle, so
        // every entry is current: the first `n` are the blocks, copied out in place.
        let start = out.len();
        self.free_queue.pop_front_n(n, out);
        self.epoch += u64::from(n);
        if self.shares_blocks() {
            let fill = fill as u16;
            for &id in &out[start..] {
                let b = &mut self.blocks[id as usize].block;
                debug_assert_eq!(b.ref_cnt, 0, "block {id} in the free queue is referenced");
                *b = KvCacheBlock { ref_cnt: 1, owner, filled: fill, ..KvCacheBlock::default() };
            }
            if n > 0 {
                self.blocks[out[out.len() - 1] as usize].block.filled = last_fill as u16;
            }
        }
        Some(())
    }

    /// Adds a reference; a block revived from the free queue (a cache hit) leaves it.
    pub fn touch(&mut self, id: u32, owner: RequestId) {
        let b = &mut self.blocks[id as usize].block;
        b.ref_cnt += 1;
        if b.ref_cnt == 1 {
            b.owner = owner;
            // Its entry in the queue is stale now that the block is referenced.
            self.free_queue.remove(&self.blocks);
            self.epoch += 1;
        }
    }

    /// Drops one reference from each block, given in eviction order (the first is evicted
    /// first), and returns the tokens of the blocks that became free. v1 puts the unhashed ones at
    /// the queue's head in that order and the hashed ones at the tail; v0 puts all at the tail.
    /// Only where blocks can be shared.
    pub fn free_blocks(&mut self, ordered: impl IntoIterator<Item = u32>) -> u64 {
        let mut front = std::mem::take(&mut self.scratch_front);
        front.clear();
        let mut freed_tokens = 0u64;
        for id in ordered {
            let Some((filled, cached)) = self.release(id) else { continue };
            freed_tokens += u64::from(filled);
            if self.engine == EngineVersion::V1 && cached == Cached::No {
                front.push(id);
            } else {
                self.free_queue.push_back(&mut self.blocks, id, cached == Cached::InMap);
            }
            self.epoch += 1;
        }
        for &id in front.iter().rev() {
            self.free_queue.push_front(&mut self.blocks, id, false);
        }
        self.scratch_front = front;
        freed_tokens
    }

    /// Drops one reference from block `id`; when that was the last one, its tokens and where
    /// its hash is kept.
    #[inline]
    fn release(&mut self, id: u32) -> Option<(u32, Cached)> {
        let e = &mut self.blocks[id as usize];
        assert!(e.block.ref_cnt > 0, "block {id} freed with ref count 0");
        e.block.ref_cnt -= 1;
        (e.block.ref_cnt == 0).then_some((u32::from(e.block.filled), e.cached))
    }

    /// Frees a block table's blocks last block first, as `free_blocks(table.iter().rev())`
    /// does, and returns the tokens of the blocks that became free. `num_tokens` is what the
    /// table holds: the tokens freed where blocks cannot be shared.
    pub fn free_table(&mut self, table: &[u32], num_tokens: u32) -> u64 {
        if self.shares_blocks() {
            return self.free_blocks(table.iter().rev().copied());
        }
        // v1 without prefix caching: every block of the table becomes free and goes to the
        // head, the table's last block first in line, which is pushing them to the front in
        // table order.
        self.free_queue.push_front_all(table);
        self.epoch += table.len() as u64;
        u64::from(num_tokens)
    }

    /// Records the tokens a block holds (nothing to record where blocks cannot be shared).
    #[inline]
    pub fn set_filled(&mut self, id: u32, filled: u32) {
        debug_assert!(filled <= 256, "a block holds at most 256 tokens");
        if let Some(e) = self.blocks.get_mut(id as usize) {
            e.block.filled = filled as u16;
        }
    }
    /// Marks a block made by copy-on-write (which only shared blocks need).
    pub fn mark_copied(&mut self, id: u32) {
        self.blocks[id as usize].block.copied = true;
    }

    /// A block cached under `hash` (the oldest, as vLLM's `get_one_block`).
    pub fn get_cached_block(&self, hash: u64) -> Option<u32> {
        self.cached.get(&hash).and_then(|ids| ids.first().copied())
    }

    /// Registers a full block under its hash; `shared_content` says whether requests other than
    /// its own may hold the same tokens. v1 caches duplicates too (vLLM never de-duplicates, so
    /// block tables stay append-only); v0 keeps the first block with a hash.
    pub fn cache_full_block(&mut self, id: u32, hash: u64, shared_content: bool) {
        if !self.enable_caching || self.block_hash(id).is_some() {
            return;
        }
        let ids = self.cached.entry(hash).or_default();
        if self.engine == EngineVersion::V0 && !ids.is_empty() {
            return;
        }
        ids.push(id);
        let e = &mut self.blocks[id as usize];
        e.generation = e.generation.wrapping_add(1);
        (e.hash, e.cached) = (hash, Cached::InMap);
        e.block.shared_content = shared_content;
        // A new hash can turn a refused admission into a hit: admission memos are stale.
        self.epoch += 1;
    }

    /// v1: registers a full block of `request`'s own tokens (block `index` of its sequence)
    /// under its hash, in the request's own list: what [`BlockPool::cache_full_block`] does
    /// with content nobody else holds, which only that request can look up again
    /// ([`BlockPool::own_cached_blocks`]).
    pub fn cache_own_block(&mut self, id: u32, hash: u64, request: RequestId, index: u32) {
        if self.mark_own_block(id) {
            self.list_own_block(id, hash, request, index);
        }
    }

    /// v1: marks a full block of a sequence's own tokens cached without hashing it yet
    /// ([`TokenIdentity::own_block_waits`](crate::engine::alloc::TokenIdentity::own_block_waits)):
    /// freed, it goes to the queue's tail like any cached block; its hash and its entry in
    /// its request's own list come when its table is freed with the request unfinished
    /// ([`BlockPool::list_own_block`]). False (nothing changed) where it is cached already, or
    /// without prefix caching.
    pub fn mark_own_block(&mut self, id: u32) -> bool {
        debug_assert_eq!(self.engine, EngineVersion::V1, "v0 caches one block per hash, in the map");
        if !self.enable_caching || self.block_hash(id).is_some() {
            return false;
        }
        let e = &mut self.blocks[id as usize];
        e.generation = e.generation.wrapping_add(1);
        e.cached = Cached::Own;
        e.block.shared_content = false;
        self.epoch += 1;
        true
    }

    /// Lists block `id`, marked by [`BlockPool::mark_own_block`], under its hash in `request`'s
    /// own list (block `index` of its sequence), as [`BlockPool::cache_own_block`] would have.
    pub fn list_own_block(&mut self, id: u32, hash: u64, request: RequestId, index: u32) {
        let e = &mut self.blocks[id as usize];
        debug_assert_eq!(e.cached, Cached::Own, "block {id} is listed without being marked");
        e.hash = hash;
        self.own.push(request, OwnEntry { hash, block: id, generation: e.generation, index });
    }

    /// The entry still stands for its block (cached since, not evicted).
    fn own_entry_current(&self, e: &OwnEntry) -> bool {
        let s = &self.blocks[e.block as usize];
        s.cached == Cached::Own && s.generation == e.generation
    }

    /// Whether `request` has blocks of its own cached (ones evicted since may be among them).
    pub fn has_own_blocks(&self, request: RequestId) -> bool {
        !self.own.list(request).is_empty()
    }

    /// The oldest block cached under each of `hashes`, hashes of `request`'s own tokens in
    /// blocks `first`, `first + 1`, … of a sequence, written to `out` (`u32::MAX` where none
    /// is): what looking each up in the one map would find, in one pass over the request's list.
    pub fn own_cached_blocks(&self, request: RequestId, first: u32, hashes: &[u64], out: &mut [u32]) {
        debug_assert_eq!(hashes.len(), out.len());
        for e in self.own.list(request) {
            let Some(k) = e.index.checked_sub(first).map(|k| k as usize).filter(|&k| k < hashes.len()) else {
                continue;
            };
            if out[k] == u32::MAX && hashes[k] == e.hash && self.own_entry_current(e) {
                out[k] = e.block;
            }
        }
    }

    /// `request` has ended: nothing will look its own blocks up again. They stay cached (at the
    /// free queue's tail, evicted in turn) but leave its list.
    pub fn forget_request(&mut self, request: RequestId) {
        self.own.forget(request);
    }

    /// The free queue's length matches the blocks in it, which are usable and there once each;
    /// with records, every ref-0 block is in it and none other is, and every cached hash points
    /// at a block that carries it. Returns which blocks are free.
    pub fn check_invariants(&self) -> Result<Vec<bool>, String> {
        let n = self.num_blocks as usize;
        let null = self.first_usable() as usize;
        let mut free = vec![false; n];
        let mut count = 0u32;
        for id in self.free_queue.iter(&self.blocks) {
            if (id as usize) < null || id as usize >= n {
                return Err(format!("block {id} is in the free queue but is not a usable block"));
            }
            if free[id as usize] {
                return Err(format!("block {id} is twice in the free queue"));
            }
            free[id as usize] = true;
            count += 1;
            if self.blocks.get(id as usize).is_some_and(|e| e.block.ref_cnt != 0) {
                return Err(format!("block {id} is in the free queue with ref count > 0"));
            }
        }
        if count != self.free_queue.len() {
            return Err(format!("free queue links {count} blocks but counts {}", self.free_queue.len()));
        }
        for (id, b) in self.blocks().enumerate() {
            if id < null {
                if b.ref_cnt != 0 || self.block_hash(id as u32).is_some() {
                    return Err(format!("null block {id} was handed out"));
                }
                continue;
            }
            if b.ref_cnt == 0 && !free[id] {
                return Err(format!("block {id} has ref count 0 but is not free"));
            }
            if let Some(h) = self.block_hash(id as u32) {
                let own = self.blocks[id].cached == Cached::Own;
                if !own && !self.cached.get(&h).is_some_and(|ids| ids.contains(&(id as u32))) {
                    return Err(format!("block {id} carries a hash the hash map does not list it under"));
                }
                if own && (b.shared_content || self.engine != EngineVersion::V1) {
                    return Err(format!("block {id} of shared content (or under v0) is in an own list"));
                }
            }
        }
        self.check_own_lists()?;
        for (&h, ids) in &self.cached {
            if ids.is_empty() || (self.engine == EngineVersion::V0 && ids.len() > 1) {
                return Err(format!("hash {h:#x} lists {} blocks", ids.len()));
            }
            for &id in ids {
                if self.block_hash(id) != Some(h) || self.blocks[id as usize].cached != Cached::InMap {
                    return Err(format!("cached hash points at block {id}, which does not carry it"));
                }
            }
        }
        Ok(free)
    }

    /// Every current entry of an own list is its block's, once; and a free block cached as its
    /// request's own is listed by that request, unless the request has ended (its list
    /// dropped). A held one may wait to be listed until it is freed (`mark_own_block`).
    fn check_own_lists(&self) -> Result<(), String> {
        let mut listed = vec![false; self.blocks.len()];
        for (request, list) in self.own.iter() {
            for e in list.iter().filter(|e| self.own_entry_current(e)) {
                if self.blocks[e.block as usize].hash != e.hash {
                    return Err(format!("request {request} lists block {} under a hash it does not carry", e.block));
                }
                if std::mem::replace(&mut listed[e.block as usize], true) {
                    return Err(format!("block {} is listed twice as a request's own", e.block));
                }
            }
        }
        for (id, s) in self.blocks.iter().enumerate() {
            let owner = s.block.owner;
            if s.cached == Cached::Own && !listed[id] && s.block.ref_cnt == 0 && self.has_own_blocks(owner) {
                return Err(format!("block {id} of request {owner}'s own tokens is missing from its list"));
            }
        }
        Ok(())
    }
}
