//! The prefix cache's index of the blocks that hold one request's own tokens (vLLM v1): its
//! prompt past any shared prefix, and its samples' generated tokens.
//!
//! vLLM keeps every full block in one hash → blocks map. A block of one request's own tokens
//! can only ever be hit by that request, when it is admitted again after a preemption: its hash
//! chains content that names the request (`TokenIdentity::block_content`). Most blocks are of
//! that kind, and most are never hit, yet each would cost a map insertion when it fills and a
//! removal when it is evicted. So they are listed by request instead, in the order they were
//! cached: caching one appends an entry (its hash, the block, the block's cache generation and
//! its index in the sequence), evicting it leaves the entry behind, stale (the block's hash is
//! gone or its generation moved on), and a request's list is dropped when the request ends
//! ([`OwnHashes::forget`]). A lookup reads the request's list once, so a request never admitted
//! before (an empty list) costs nothing, and finds what the one map would find: the oldest block
//! still cached under each hash.
//!
//! The lists are a window over the request ids, as `paged/block_table.rs` keeps the block
//! tables: requests mostly end in the order they came, so a day of a million requests holds the
//! lists of the few hundred it runs.

use std::collections::VecDeque;

use super::ids::RequestId;

/// One block cached under a hash of its request's own tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnEntry {
    pub hash: u64,
    pub block: u32,
    /// The block's cache generation when it was cached (it counts only while the block keeps it).
    pub generation: u32,
    /// The block's index in its sequence (a hash of block `b` only matches a lookup of block `b`).
    pub index: u32,
}

#[derive(Clone, Debug, Default)]
pub struct OwnHashes {
    /// The request of `lists[0]`.
    base: RequestId,
    /// Each request's entries in the order they were cached (empty: none, or dropped).
    lists: VecDeque<Vec<OwnEntry>>,
}

impl OwnHashes {
    /// Appends an entry to `request`'s list.
    pub fn push(&mut self, request: RequestId, entry: OwnEntry) {
        if self.lists.is_empty() {
            self.base = request;
        }
        while request < self.base {
            // A request older than the window (one that waited while later ones ended).
            self.lists.push_front(Vec::new());
            self.base -= 1;
        }
        let i = (request - self.base) as usize;
        if self.lists.len() <= i {
            self.lists.resize_with(i + 1, Vec::new);
        }
        self.lists[i].push(entry);
    }

    /// `request`'s entries, oldest first (stale ones included).
    pub fn list(&self, request: RequestId) -> &[OwnEntry] {
        request.checked_sub(self.base).and_then(|i| self.lists.get(i as usize)).map_or(&[], Vec::as_slice)
    }

    /// Drops `request`'s list: it has ended, so nothing will look its blocks up again.
    pub fn forget(&mut self, request: RequestId) {
        let Some(i) = request.checked_sub(self.base) else { return };
        if let Some(list) = self.lists.get_mut(i as usize) {
            *list = Vec::new();
        }
        while self.lists.front().is_some_and(Vec::is_empty) {
            self.lists.pop_front();
            self.base += 1;
        }
    }

    /// Every request's list, by request id (empty ones left out).
    pub fn iter(&self) -> impl Iterator<Item = (RequestId, &[OwnEntry])> {
        let base = self.base;
        self.lists
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(move |(i, l)| (base + i as RequestId, l.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn entry(block: u32) -> OwnEntry {
        OwnEntry { hash: u64::from(block), block, generation: 1, index: 0 }
    }

    #[test]
    fn the_window_slides_past_ended_requests_and_reaches_back_for_older_ones() {
        let mut own = OwnHashes::default();
        (10..20).for_each(|r| own.push(r, entry(r)));
        (10..18).for_each(|r| own.forget(r));
        assert_eq!((own.base, own.lists.len()), (18, 2), "the ended requests before the first live one are gone");
        own.push(3, entry(3));
        own.push(19, entry(40));
        assert_eq!(own.iter().map(|(r, l)| (r, l.len())).collect::<Vec<_>>(), [(3, 1), (18, 1), (19, 2)]);
        assert_eq!(own.list(19), [entry(19), entry(40)], "oldest first");
        assert!(own.list(2).is_empty() && own.list(17).is_empty() && own.list(25).is_empty());
        own.forget(3);
        own.forget(2); // never listed: nothing to do
        assert_eq!(own.base, 18);
    }
}
