//! vLLM's `FreeBlockQueue` (`kv_cache_utils.py`): the free blocks in eviction order.
//! Allocation pops the head, frees push either end, and a cached block revived by a prefix hit
//! leaves from the middle in O(1).
//!
//! vLLM keeps a doubly linked list through the blocks. Here the order is a ring buffer of block
//! ids, read in place when a prefill takes many blocks at once. Leaving the middle only takes
//! the block out (its ref count leaves 0): with prefix caching every entry carries a stamp,
//! bumped each time its block joins the queue, and an entry counts only while its block is free
//! and carries that stamp, so the entry left behind is skipped. The ring then holds each id
//! beside its entry's stamp and whether the block is in the hash → blocks map (one ring, one
//! place touched per push or pop, and the block's record not read to take the head); the blocks' current
//! stamps live in the pool's [`BlockEntry`]s, beside the ref counts they are read with. Only prefix caching revives
//! blocks from the middle; without it every entry is current and no stamps are kept. The queue
//! counts the entries left behind, so while there are none (no cache hit revived a block since
//! they were last dropped) the head is taken without reading its block's record or stamp.

use std::collections::VecDeque;

use super::block::BlockEntry;

/// The bits of a block's stamp its queue entry's tag keeps (the top bit makes way for the
/// in-map bit; a stale entry would need 2^31 re-entries of its block to pass for current).
const STAMP_MASK: u32 = u32::MAX >> 1;

#[derive(Clone, Debug)]
pub struct FreeBlockQueue {
    /// Block ids, head first (without stamps; empty with them).
    ids: VecDeque<u32>,
    /// Block ids with their entry's tag, head first (prefix caching only; empty without it):
    /// one ring, so taking the head or pushing a block touches one place. The tag is the
    /// entry's stamp (31 bits) above one bit that says the block was in the hash → blocks map
    /// when it joined, which a free block stays until it leaves: taking the head then needs
    /// nothing from the block's record to know whether a hash must leave the map.
    stamped_ids: VecDeque<(u32, u32)>,
    /// Entries carry stamps (prefix caching); each block's current one is its entry's.
    stamped: bool,
    len: u32,
    /// Entries left behind by blocks that left the middle (stale), still in `ids`.
    stale: u32,
}

impl FreeBlockQueue {
    /// An empty queue for `num_blocks` blocks; `stamped` where cached blocks can leave the middle.
    pub fn new(num_blocks: u32, stamped: bool) -> Self {
        FreeBlockQueue {
            ids: VecDeque::with_capacity(if stamped { 0 } else { num_blocks as usize }),
            stamped_ids: VecDeque::with_capacity(if stamped { num_blocks as usize } else { 0 }),
            stamped,
            len: 0,
            stale: 0,
        }
    }

    /// Free blocks in the queue.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn stamped(&self) -> bool {
        self.stamped
    }

    fn current(entries: &[BlockEntry], id: u32, tag: u32) -> bool {
        let e = &entries[id as usize];
        e.block.ref_cnt == 0 && e.stamp & STAMP_MASK == tag >> 1
    }

    /// The tag of a block joining the queue (prefix caching only): its new stamp, and whether
    /// it is in the hash → blocks map.
    fn enter(&self, entries: &mut [BlockEntry], id: u32, in_map: bool) -> Option<u32> {
        if !self.stamped {
            return None;
        }
        let stamp = &mut entries[id as usize].stamp;
        *stamp = stamp.wrapping_add(1);
        Some((*stamp << 1) | u32::from(in_map))
    }

    /// Puts block `id` at the tail; `in_map` says it is in the hash → blocks map; `entries`
    /// are the pool's (read only when stamped).
    #[inline]
    pub fn push_back(&mut self, entries: &mut [BlockEntry], id: u32, in_map: bool) {
        match self.enter(entries, id, in_map) {
            Some(tag) => self.stamped_ids.push_back((id, tag)),
            None => self.ids.push_back(id),
        }
        self.len += 1;
    }

    /// Puts block `id` at the head, as [`FreeBlockQueue::push_back`] puts it at the tail.
    pub fn push_front(&mut self, entries: &mut [BlockEntry], id: u32, in_map: bool) {
        match self.enter(entries, id, in_map) {
            Some(tag) => self.stamped_ids.push_front((id, tag)),
            None => self.ids.push_front(id),
        }
        self.len += 1;
    }

    /// Pushes every block of `ids` to the front in turn: the last ends up at the head. Without
    /// stamps only.
    pub fn push_front_all(&mut self, ids: &[u32]) {
        debug_assert!(!self.stamped(), "stamped queues push one block at a time");
        self.ids.reserve(ids.len());
        for &id in ids {
            self.ids.push_front(id);
        }
        self.len += ids.len() as u32;
    }

    /// A cached block left the middle: its ref count just left 0, so its entry is stale.
    pub fn remove(&mut self, entries: &[BlockEntry]) {
        debug_assert!(self.stamped(), "only prefix caching revives free blocks");
        self.len -= 1;
        self.stale += 1;
        // Stale entries are dropped once they outnumber the live ones.
        if self.stamped_ids.len() > 2 * self.len as usize + 64 {
            self.stamped_ids.retain(|&(id, tag)| Self::current(entries, id, tag));
            self.stale = 0;
        }
    }

    /// Takes the block at the head, with whether it is in the hash → blocks map; None when the
    /// queue is empty. While no entry is stale the block's record is not read.
    #[inline]
    pub fn pop_front(&mut self, entries: &[BlockEntry]) -> Option<(u32, bool)> {
        if !self.stamped() {
            let id = self.ids.pop_front()?;
            self.len -= 1;
            return Some((id, false));
        }
        while let Some((id, tag)) = self.stamped_ids.pop_front() {
            if self.stale == 0 {
                debug_assert!(Self::current(entries, id, tag), "an uncounted stale entry");
                self.len -= 1;
                return Some((id, tag & 1 == 1));
            }
            if Self::current(entries, id, tag) {
                self.len -= 1;
                return Some((id, tag & 1 == 1));
            }
            self.stale -= 1;
        }
        None
    }

    /// Takes the first `n` blocks onto `out` at once (`n` ≤ `len`). Without stamps only: every
    /// entry is current, so they are copied out in place.
    pub fn pop_front_n(&mut self, n: u32, out: &mut Vec<u32>) {
        debug_assert!(!self.stamped(), "stamped queues pop one block at a time");
        debug_assert!(n <= self.len);
        let n = n as usize;
        let (front, back) = self.ids.as_slices();
        let from_front = n.min(front.len());
        out.extend_from_slice(&front[..from_front]);
        out.extend_from_slice(&back[..n - from_front]);
        self.ids.drain(..n);
        self.len -= n as u32;
    }

    /// Block ids from head to tail.
    pub fn iter<'a>(&'a self, entries: &'a [BlockEntry]) -> Box<dyn Iterator<Item = u32> + 'a> {
        if !self.stamped() {
            return Box::new(self.ids.iter().copied());
        }
        Box::new(self.stamped_ids.iter().filter(move |&&(id, tag)| Self::current(entries, id, tag)).map(|&(id, _)| id))
    }
}
