//! `BlockTable`, a sequence's blocks, and `SeqTables`, the block tables by sequence id, kept as
//! a window over the ids that can still hold one.
//! Sequence ids only grow and requests mostly finish in the order they came, so the tables of a
//! run are a short window sliding over the ids: the finished ids before the first live table are
//! dropped, and a day of a million sequences holds the few hundred live ones, not a slot for
//! every id it ever gave out.

use std::collections::VecDeque;

use crate::engine::alloc::ids::{RequestId, SeqId, TokenIdentity};

/// A sequence's logical → physical block mapping plus its written length.
#[derive(Clone, Debug)]
pub struct BlockTable {
    pub request: RequestId,
    pub identity: TokenIdentity,
    pub blocks: Vec<u32>,
    pub num_tokens: u32,
    /// Prefix caching: the chained hash of the first `chain_blocks` blocks (0 for none), so a
    /// block is hashed from its parent without rehashing the table.
    pub chain_hash: u64,
    /// The blocks `chain_hash` covers: the cached ones but those of the sequence's own tokens
    /// waiting to be hashed ([`TokenIdentity::own_block_waits`]), which are the table's last.
    pub chain_blocks: u32,
    /// Prefix caching: the leading full blocks already cached. Under v1 a block of the request's
    /// own tokens that a decode fills is cached at the table's next slow write or when the
    /// table is freed, whichever comes first (`PagedAllocator::cache_full_blocks`): only its
    /// own request can look it up, and only after it is freed, so nothing reads its hash
    /// earlier. Everything else is cached in the write that fills it.
    pub cached_blocks: u32,
}

impl BlockTable {
    /// The chained hash of the first `full_blocks` blocks' tokens (0 for none).
    pub(super) fn chain_hash_of(identity: &TokenIdentity, full_blocks: u32, block_size: u32) -> u64 {
        (0..full_blocks).fold(0, |parent, b| identity.block_hash(parent, b, block_size))
    }
}

#[derive(Clone, Debug, Default)]
pub struct SeqTables {
    /// The id of `slots[0]`.
    base: SeqId,
    slots: VecDeque<Option<BlockTable>>,
}

impl SeqTables {
    pub fn get(&self, seq: SeqId) -> Option<&BlockTable> {
        let i = seq.checked_sub(self.base)?;
        self.slots.get(i as usize).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, seq: SeqId) -> Option<&mut BlockTable> {
        let i = seq.checked_sub(self.base)?;
        self.slots.get_mut(i as usize).and_then(Option::as_mut)
    }

    /// Gives `seq` its table (replacing any it had).
    pub fn insert(&mut self, seq: SeqId, table: BlockTable) {
        if self.slots.is_empty() {
            self.base = seq;
        }
        while seq < self.base {
            // An id older than the window (a request that waited while later ones finished).
            self.slots.push_front(None);
            self.base -= 1;
        }
        let i = (seq - self.base) as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        self.slots[i] = Some(table);
    }

    /// Takes `seq`'s table away, and drops the empty slots this leaves at the window's start.
    pub fn take(&mut self, seq: SeqId) -> Option<BlockTable> {
        let i = seq.checked_sub(self.base)? as usize;
        let table = self.slots.get_mut(i).and_then(Option::take);
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        table
    }

    /// Every table, by sequence id.
    pub fn iter(&self) -> impl Iterator<Item = (SeqId, &BlockTable)> {
        let base = self.base;
        self.slots.iter().enumerate().filter_map(move |(i, t)| t.as_ref().map(|t| (base + i as SeqId, t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(seq: SeqId) -> BlockTable {
        let identity = TokenIdentity {
            request: seq,
            seq,
            prefix_key: 0,
            shared_prefix_tokens: 0,
            prompt_tokens: 1,
            prompt_blocks: None,
            sole_sample: false,
        };
        BlockTable {
            request: seq,
            identity,
            blocks: vec![seq],
            num_tokens: 1,
            chain_hash: 0,
            chain_blocks: 0,
            cached_blocks: 0,
        }
    }

    #[test]
    fn the_window_slides_past_finished_ids_and_reaches_back_for_older_ones() {
        let mut t = SeqTables::default();
        (10..20).for_each(|s| t.insert(s, table(s)));
        (10..18).for_each(|s| assert!(t.take(s).is_some()));
        assert_eq!((t.base, t.slots.len()), (18, 2), "the finished ids before the first live table are gone");
        t.insert(3, table(3)); // a request that waited while later ones ran
        assert_eq!(t.iter().map(|(s, _)| s).collect::<Vec<_>>(), [3, 18, 19]);
        assert_eq!(t.get(3).map(|x| x.blocks[0]), Some(3));
        assert!(t.get(2).is_none() && t.get(17).is_none() && t.get(25).is_none());
        assert!(t.take(3).is_some());
        assert_eq!(t.base, 18);
    }
}
