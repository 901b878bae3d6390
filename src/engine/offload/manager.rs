//! vLLM's `CPUOffloadingManager` (`vllm/v1/kv_offload/cpu/manager.py`, 0.33.0) with its `lru`
//! cache policy (`cpu/policies/lru.py`): which KV chunks the host tier holds, which are still
//! being stored (not readable yet), which are pinned by loads, and which goes first when a store
//! needs room.
//!
//! A chunk is one GPU block here (vLLM's default `blocks_per_chunk = 1`), keyed by the block's
//! chained hash, which names the whole prefix up to it. Its status is vLLM's `ref_cnt`: −1 while
//! its store is in flight, 0 ready and evictable, > 0 pinned by that many loads.
//!
//! Recency is vLLM's rank order, not the time of the last touch: a request gets one rank the first
//! time it touches the tier, and its chunks are ranked (request rank, −position), so within a
//! request the tail is evicted before the head; when the request finishes, its chunks get fresh
//! ranks tail first, the head freshest. Eviction takes the smallest rank among the ready,
//! unpinned chunks not in the store being made room for, and happens only inside
//! [`CpuOffloadingManager::prepare_store`]. vLLM keeps the evictable chunks in a lazy heap; an
//! ordered set gives the same order here.
//!
//! Each chunk has a place in the host buffer, its chunk id, given as vLLM's chunk pool gives it:
//! never-used ids in order first, then the ids freed by evictions, last freed first
//! (`_allocate_chunks`, `_free_chunk`). [`CpuOffloadingManager::host_map`] draws the buffer by
//! those ids.

use std::collections::{BTreeMap, BTreeSet};

use super::stats::HostChunk;
use crate::engine::alloc::{RequestId, SeqId};
use crate::engine::memory_map::{MapCell, MemoryMap};

/// A chunk's place in the eviction order: smallest first.
type Rank = (u64, i64);

/// What a lookup of one chunk finds (vLLM's `LookupResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkLookup {
    Miss,
    /// Its store is still in flight: not readable yet.
    Pending,
    Hit,
}

#[derive(Clone, Copy, Debug)]
struct Chunk {
    /// −1 while stored, 0 ready, > 0 pinned by loads.
    ref_cnt: i32,
    rank: Rank,
    /// Its place in the host buffer.
    id: u32,
    /// The request that stored it.
    owner: RequestId,
}

#[derive(Clone, Debug)]
pub struct CpuOffloadingManager {
    capacity: u32,
    chunks: BTreeMap<u64, Chunk>,
    /// Ready, unpinned chunks in eviction order.
    evictable: BTreeSet<(Rank, u64)>,
    /// Each request's rank, given the first time it touches the tier.
    request_ranks: BTreeMap<SeqId, u64>,
    next_rank: u64,
    /// The key held at each chunk id handed out at least once (None: free); its length is
    /// vLLM's `_num_allocated_chunks`.
    slots: Vec<Option<u64>>,
    /// The ids freed since, reused last freed first (`_free_list`).
    free_ids: Vec<u32>,
}

impl CpuOffloadingManager {
    /// A tier of `capacity` chunks.
    pub fn new(capacity: u32) -> Self {
        CpuOffloadingManager {
            capacity,
            chunks: BTreeMap::new(),
            evictable: BTreeSet::new(),
            request_ranks: BTreeMap::new(),
            next_rank: 0,
            slots: Vec::new(),
            free_ids: Vec::new(),
        }
    }

    /// A chunk id for a new chunk: a never-used one while any is left, else the last freed.
    fn allocate_id(&mut self) -> u32 {
        if self.slots.len() < self.capacity as usize {
            self.slots.push(None);
            return self.slots.len() as u32 - 1;
        }
        self.free_ids.pop().expect("room was made before allocating")
    }

    /// The chunk at `id` of the host buffer, if one is held there.
    pub fn chunk_at(&self, id: u32) -> Option<HostChunk> {
        let key = (*self.slots.get(id as usize)?)?;
        let c = self.chunks.get(&key)?;
        Some(HostChunk { owner: c.owner, ref_cnt: c.ref_cnt })
    }

    /// The host buffer as a map of at most `max_cells` cells, each a run of consecutive chunk
    /// ids (one chunk a cell when the buffer has no more chunks than that; `cell_tokens` says how
    /// many tokens a cell spans): a cell takes the owner of its first held chunk, counts the
    /// tokens of its stored chunks as live (a chunk whose store is in flight is allocated and
    /// empty), and is marked [`MapCell::LOADING`] when a load pins one of its chunks.
    pub fn host_map(&self, block_size: u32, max_cells: usize) -> MemoryMap {
        let per_cell = (self.capacity as usize).div_ceil(max_cells.max(1)).max(1);
        let n = (self.capacity as usize).div_ceil(per_cell);
        let mut cells = vec![MapCell::default(); n];
        // The id of each cell's first held chunk (the page draws this every frame: one pass
        // over the held chunks, no lookup).
        let mut first = vec![u32::MAX; n];
        for c in self.chunks.values() {
            let at = c.id as usize / per_cell;
            let cell = &mut cells[at];
            if c.id < first[at] {
                first[at] = c.id;
                cell.owner = c.owner + 1;
            }
            if c.ref_cnt >= 0 {
                cell.live_tokens = cell.live_tokens.saturating_add(block_size.min(u32::from(u16::MAX)) as u16);
            }
            if c.ref_cnt > 0 {
                cell.flags |= MapCell::LOADING;
            }
        }
        MemoryMap { cell_tokens: block_size * per_cell as u32, cells }
    }

    /// Chunks held (being stored, ready or pinned).
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn lookup(&self, key: u64) -> ChunkLookup {
        match self.chunks.get(&key) {
            None => ChunkLookup::Miss,
            Some(c) if c.ref_cnt < 0 => ChunkLookup::Pending,
            Some(_) => ChunkLookup::Hit,
        }
    }

    /// The chunk is pinned by a load in flight.
    pub fn is_loading(&self, key: u64) -> bool {
        self.chunks.get(&key).is_some_and(|c| c.ref_cnt > 0)
    }

    fn request_rank(&mut self, seq: SeqId) -> u64 {
        let next = &mut self.next_rank;
        *self.request_ranks.entry(seq).or_insert_with(|| {
            *next += 1;
            *next
        })
    }

    /// `seq` reads or re-offers these chunks (`position`: the block's index in the sequence):
    /// each moves up to the request's rank at its position, never down (`on_request_access`).
    fn on_request_access(&mut self, seq: SeqId, keys: &[(u64, u32)]) {
        let request_rank = self.request_rank(seq);
        for &(key, position) in keys {
            let rank = (request_rank, -i64::from(position));
            let Some(c) = self.chunks.get_mut(&key) else { continue };
            if c.rank >= rank {
                continue;
            }
            if self.evictable.remove(&(c.rank, key)) {
                self.evictable.insert((rank, key));
            }
            c.rank = rank;
        }
    }

    /// Pins ready chunks for a load by `seq` (each must be a hit) and records the access.
    pub fn prepare_load(&mut self, seq: SeqId, keys: &[(u64, u32)]) {
        for &(key, _) in keys {
            let c = self.chunks.get_mut(&key).expect("a loaded chunk is held");
            assert!(c.ref_cnt >= 0, "a chunk is loaded before its store completed");
            if c.ref_cnt == 0 {
                self.evictable.remove(&(c.rank, key));
            }
            c.ref_cnt += 1;
        }
        self.on_request_access(seq, keys);
    }

    /// A load of these chunks completed: unpinned, evictable again at no pins.
    pub fn complete_load(&mut self, keys: &[(u64, u32)]) {
        for &(key, _) in keys {
            let c = self.chunks.get_mut(&key).expect("a loaded chunk stays held while pinned");
            c.ref_cnt -= 1;
            if c.ref_cnt == 0 {
                self.evictable.insert((c.rank, key));
            }
        }
    }

    /// `seq` offers these chunks for storing. Chunks held already are not written again (a
    /// ready one counts as an access); the others are stored if there is room, evicting as
    /// needed, else none of them is (vLLM refuses the whole store, and the caller offers the
    /// chunks again next step). Returns the chunks to store (now pending), or None.
    pub fn prepare_store(&mut self, seq: SeqId, owner: RequestId, keys: &[(u64, u32)]) -> Option<Vec<(u64, u32)>> {
        let to_store: Vec<(u64, u32)> = keys.iter().copied().filter(|(k, _)| !self.chunks.contains_key(k)).collect();
        let reused: Vec<(u64, u32)> =
            keys.iter().copied().filter(|(k, _)| self.chunks.get(k).is_some_and(|c| c.ref_cnt >= 0)).collect();
        self.on_request_access(seq, &reused);
        let free = self.capacity as usize - self.chunks.len();
        let need = to_store.len().saturating_sub(free);
        if need > 0 {
            let protected: BTreeSet<u64> = keys.iter().map(|&(k, _)| k).collect();
            let victims: Vec<(Rank, u64)> =
                self.evictable.iter().filter(|(_, k)| !protected.contains(k)).take(need).copied().collect();
            if victims.len() < need {
                return None;
            }
            for v in victims {
                self.evictable.remove(&v);
                let gone = self.chunks.remove(&v.1).expect("an evictable chunk is held");
                self.slots[gone.id as usize] = None;
                self.free_ids.push(gone.id);
            }
        }
        let request_rank = self.request_rank(seq);
        for &(key, position) in &to_store {
            let id = self.allocate_id();
            self.slots[id as usize] = Some(key);
            self.chunks.insert(key, Chunk { ref_cnt: -1, rank: (request_rank, -i64::from(position)), id, owner });
        }
        Some(to_store)
    }

    /// A store completed: the chunk is readable and evictable.
    pub fn complete_store(&mut self, key: u64) {
        let c = self.chunks.get_mut(&key).expect("a chunk being stored is held");
        debug_assert_eq!(c.ref_cnt, -1, "a store completes once");
        c.ref_cnt = 0;
        self.evictable.insert((c.rank, key));
    }

    /// `seq` finished: the chunks it stored, reused or loaded (head first) take fresh ranks, tail
    /// first, so its head is the freshest (`on_request_finished`); its rank is dropped.
    pub fn on_request_finished(&mut self, seq: SeqId, head_first: &[u64]) {
        self.request_ranks.remove(&seq);
        for &key in head_first.iter().rev() {
            let Some(c) = self.chunks.get_mut(&key) else { continue };
            self.next_rank += 1;
            let rank = (self.next_rank, 0);
            if self.evictable.remove(&(c.rank, key)) {
                self.evictable.insert((rank, key));
            }
            c.rank = rank;
        }
    }

    /// At most `capacity` chunks; the evictable set is exactly the ready, unpinned chunks at
    /// their ranks; each chunk sits at its own id, and the ids handed out are the held and the
    /// freed ones, each once.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.chunks.len() > self.capacity as usize {
            return Err(format!("host tier holds {} chunks > capacity {}", self.chunks.len(), self.capacity));
        }
        if self.chunks.len() + self.free_ids.len() != self.slots.len() {
            return Err(format!(
                "{} chunks held and {} ids free, but {} ids handed out",
                self.chunks.len(),
                self.free_ids.len(),
                self.slots.len()
            ));
        }
        for (key, c) in &self.chunks {
            if self.slots.get(c.id as usize) != Some(&Some(*key)) {
                return Err(format!("chunk {key:#x} is not at its id {}", c.id));
            }
        }
        if self.free_ids.iter().any(|&id| self.slots.get(id as usize) != Some(&None)) {
            return Err("a free chunk id holds a chunk".into());
        }
        let ready = self.chunks.iter().filter(|(_, c)| c.ref_cnt == 0).count();
        if ready != self.evictable.len() {
            return Err(format!("{ready} ready chunks but {} evictable", self.evictable.len()));
        }
        for (rank, key) in &self.evictable {
            match self.chunks.get(key) {
                Some(c) if c.ref_cnt == 0 && c.rank == *rank => {}
                _ => return Err(format!("evictable chunk {key:#x} is not ready at its rank")),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[u64]) -> Vec<(u64, u32)> {
        ks.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect()
    }

    #[test]
    fn a_store_is_readable_once_complete_and_a_full_tier_evicts_the_tail_of_the_oldest_request_first() {
        let mut m = CpuOffloadingManager::new(3);
        assert_eq!(m.prepare_store(1, 1, &keys(&[10, 11, 12])).map(|v| v.len()), Some(3));
        assert_eq!(m.lookup(10), ChunkLookup::Pending);
        for k in [10, 11, 12] {
            m.complete_store(k);
        }
        assert_eq!(m.lookup(11), ChunkLookup::Hit);
        // A second request needs one chunk: the first request's tail (12) goes.
        assert!(m.prepare_store(2, 2, &keys(&[20])).is_some());
        assert_eq!(m.lookup(12), ChunkLookup::Miss);
        assert_eq!(m.lookup(10), ChunkLookup::Hit);
        m.check_invariants().expect("invariants");
    }

    #[test]
    fn a_finished_request_becomes_the_freshest_with_its_head_last_to_go() {
        let mut m = CpuOffloadingManager::new(4);
        for (seq, ks) in [(1, [10, 11]), (2, [20, 21])] {
            m.prepare_store(seq, seq, &keys(&ks)).expect("room");
            for k in ks {
                m.complete_store(k);
            }
        }
        m.on_request_finished(1, &[10, 11]);
        // Request 2's chunks are now the oldest: its tail, then its head, then 1's tail.
        let got = m.prepare_store(3, 3, &keys(&[30, 31, 32])).expect("room after eviction");
        assert_eq!(got.len(), 3);
        assert_eq!(
            (m.lookup(21), m.lookup(20), m.lookup(11), m.lookup(10)),
            (ChunkLookup::Miss, ChunkLookup::Miss, ChunkLookup::Miss, ChunkLookup::Hit)
        );
        m.check_invariants().expect("invariants");
    }

    #[test]
    fn chunk_ids_are_handed_out_fresh_first_then_last_freed_first_and_the_host_map_draws_them() {
        let mut m = CpuOffloadingManager::new(3);
        m.prepare_store(1, 7, &keys(&[10, 11, 12])).expect("room");
        for k in [10, 11] {
            m.complete_store(k);
        }
        // Ids 0, 1, 2 in order; 12's store is still in flight.
        let map = m.host_map(16, usize::MAX);
        assert_eq!(map.cells.len(), 3);
        assert_eq!(map.cells.iter().map(|c| (c.owner, c.live_tokens)).collect::<Vec<_>>(), [(8, 16), (8, 16), (8, 0)]);
        m.complete_store(12);
        m.prepare_load(2, &[(10, 0)]);
        assert_eq!(m.host_map(16, usize::MAX).cells[0].flags, MapCell::LOADING);
        assert_eq!(m.chunk_at(0), Some(HostChunk { owner: 7, ref_cnt: 1 }));
        m.complete_load(&[(10, 0)]);
        // Two new chunks evict 12 (id 2), then 11 (id 1): the last freed, id 1, goes first.
        m.prepare_store(3, 9, &keys(&[30, 31])).expect("room after eviction");
        let owners: Vec<u32> = m.host_map(16, usize::MAX).cells.iter().map(|c| c.owner).collect();
        assert_eq!(owners, [8, 10, 10]);
        assert_eq!(m.slots, [Some(10), Some(30), Some(31)]);
        m.check_invariants().expect("invariants");
        // Two cells: chunks 0-1 (the first held chunk's owner; 10 stored, 30 still being stored)
        // and chunk 2 (31, being stored).
        let coarse = m.host_map(16, 2);
        assert_eq!(coarse.cell_tokens, 32);
        assert_eq!(coarse.cells.iter().map(|c| (c.owner, c.live_tokens)).collect::<Vec<_>>(), [(8, 16), (10, 0)]);
    }

    #[test]
    fn pinned_and_pending_chunks_are_never_evicted_and_a_store_without_room_is_refused_whole() {
        let mut m = CpuOffloadingManager::new(2);
        m.prepare_store(1, 1, &keys(&[10, 11])).expect("room");
        m.complete_store(10);
        m.prepare_load(2, &[(10, 0)]);
        assert!(m.is_loading(10));
        // 10 is pinned, 11 pending: nothing can go.
        assert!(m.prepare_store(3, 3, &keys(&[30])).is_none());
        assert_eq!(m.len(), 2);
        m.complete_load(&[(10, 0)]);
        assert!(m.prepare_store(3, 3, &keys(&[30])).is_some());
        assert_eq!(m.lookup(10), ChunkLookup::Miss);
        m.check_invariants().expect("invariants");
    }
}
