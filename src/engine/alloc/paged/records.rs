//! What each block holds, as records: kept by the block pool where blocks can be shared, and
//! derived from the block tables where they cannot (vLLM v1 without prefix caching, where a
//! block is held exactly when one table holds it). Also the checks that hold the tables, the
//! records and the free queue to each other.

use std::borrow::Cow;

use super::{PagedAllocator, NULL_BLOCK};
use crate::engine::alloc::{KvCacheBlock, RequestId};
use crate::engine::memory_map::MapCell;

impl PagedAllocator {
    /// Every block's record, the null block included: the pool's own where blocks can be
    /// shared, else made from the tables (a held block has its table's request as owner and the
    /// tokens its place in the table holds; a free block is all zeros).
    pub fn block_records(&self) -> Cow<'_, [KvCacheBlock]> {
        if self.pool.shares_blocks() {
            return Cow::Owned(self.pool.blocks().copied().collect());
        }
        let mut records = vec![KvCacheBlock::default(); self.pool.num_blocks() as usize];
        self.for_each_held_block(|id, owner, filled, _| {
            let r = &mut records[id as usize];
            r.ref_cnt += 1;
            (r.owner, r.filled) = (owner, filled);
        });
        Cow::Owned(records)
    }

    /// The memory map's cells where no block can be shared, straight from the tables (no
    /// block is shared, copied or cached, so a held cell has no flags): one per usable block,
    /// from block [`BlockPool::first_usable`](crate::engine::alloc::BlockPool::first_usable) on.
    /// Under hybrid groups a held cell names its KV cache group, and a free block that was last
    /// freed behind a sliding window or chunk is marked so.
    pub fn held_cells(&self) -> Vec<MapCell> {
        debug_assert!(!self.pool.shares_blocks(), "records are kept where blocks can be shared");
        let first = self.pool.first_usable();
        let mut cells = vec![MapCell::default(); self.pool.num_usable_blocks() as usize];
        if let Some(h) = self.kv_cache_groups() {
            for (cell, &behind) in cells.iter_mut().zip(&h.behind_window[first as usize..]) {
                if behind {
                    cell.flags = MapCell::BEHIND_WINDOW;
                }
            }
        }
        self.for_each_held_block(|id, owner, live_tokens, group| {
            cells[(id - first) as usize] = MapCell { owner: owner + 1, live_tokens, flags: 0, group };
        });
        cells
    }

    /// Calls `f` for every block a table holds, table by table and group by group: (block, the
    /// table's request, the tokens it holds: the block size but in a table's last block, its
    /// KV cache group). The null blocks a window left in a table are not held.
    fn for_each_held_block(&self, mut f: impl FnMut(u32, RequestId, u16, u8)) {
        let bs = self.block_size;
        let groups = self.kv_cache_groups().map_or(1, |h| h.len());
        for g in 0..groups {
            for (_, t) in self.group_tables(g).iter() {
                let Some((&last, full)) = t.blocks.split_last() else { continue };
                for &id in full.iter().filter(|&&id| groups == 1 || id != NULL_BLOCK) {
                    f(id, t.request, bs as u16, g as u8);
                }
                if groups == 1 || last != NULL_BLOCK {
                    f(last, t.request, (t.num_tokens - full.len() as u32 * bs) as u16, g as u8);
                }
            }
        }
    }

    /// free + referenced = total; no free block is in a table; each block's ref count equals the
    /// block-table references to it (where blocks cannot be shared, no block is in two tables or
    /// twice in one); tables hold exactly ⌈tokens / block size⌉ blocks; live tokens match the
    /// referenced blocks.
    pub fn check_invariants(&self) -> Result<(), String> {
        let free = self.pool.check_invariants()?;
        let n = self.pool.num_blocks() as usize;
        let mut refs = vec![0u32; n];
        let groups = self.kv_cache_groups().map_or(1, |h| h.len());
        for (g, (seq, t)) in (0..groups).flat_map(|g| self.group_tables(g).iter().map(move |x| (g, x))) {
            if self.kv_cache_groups().is_some() {
                self.check_group_table(g, seq, t)?;
            }
            let nulls = if self.kv_cache_groups().is_some() {
                t.blocks.iter().take_while(|&&b| b == NULL_BLOCK).count()
            } else {
                0
            };
            if t.blocks.len() as u32 != self.blocks_for(t.num_tokens) {
                return Err(format!(
                    "seq {seq} holds {} blocks for {} tokens (block size {})",
                    t.blocks.len(),
                    t.num_tokens,
                    self.block_size
                ));
            }
            for &b in &t.blocks[nulls..] {
                if (b as usize) < self.pool.first_usable() as usize || b as usize >= n {
                    return Err(format!("seq {seq} holds block {b}, which is not a usable block"));
                }
                if free[b as usize] {
                    return Err(format!("seq {seq} holds block {b}, which is in the free queue"));
                }
                refs[b as usize] += 1;
            }
        }
        let shares = self.pool.shares_blocks();
        let records = self.block_records();
        let mut referenced = 0u32;
        let mut live = 0u64;
        for (id, b) in records.iter().enumerate() {
            if !shares && refs[id] > 1 {
                return Err(format!("block {id} is held {} times where no block is shared", refs[id]));
            }
            if b.ref_cnt != refs[id] {
                return Err(format!("block {id}: ref count {} but {} table references", b.ref_cnt, refs[id]));
            }
            if u32::from(b.filled) > self.block_size {
                return Err(format!("block {id} holds {} tokens > block size", b.filled));
            }
            if b.ref_cnt > 0 {
                referenced += 1;
                live += u64::from(b.filled);
            }
            if self.pool.block_hash(id as u32).is_some() && u32::from(b.filled) != self.block_size {
                return Err(format!("block {id} is cached with {} of {} tokens", b.filled, self.block_size));
            }
        }
        if referenced + self.pool.num_free_blocks() != self.pool.num_usable_blocks() {
            return Err(format!(
                "free ({}) + referenced ({referenced}) != usable total ({})",
                self.pool.num_free_blocks(),
                self.pool.num_usable_blocks()
            ));
        }
        if live != self.live_tokens {
            return Err(format!("live tokens counter {} != {live} in referenced blocks", self.live_tokens));
        }
        Ok(())
    }

    /// A hybrid group's table: its tokens are the request's (every group's table holds the
    /// same), only a window's or chunk's group holds nulls, and only as a head of blocks wholly
    /// behind the window of the tokens it holds.
    fn check_group_table(&self, g: usize, seq: u32, t: &super::BlockTable) -> Result<(), String> {
        let h = self.kv_cache_groups().expect("hybrid groups");
        let tokens = self.table(seq).map(|t0| t0.num_tokens);
        if tokens != Some(t.num_tokens) {
            return Err(format!("seq {seq}: group {g} holds {} tokens, group 0 {tokens:?}", t.num_tokens));
        }
        let nulls = t.blocks.iter().take_while(|&&b| b == NULL_BLOCK).count() as u32;
        if t.blocks[nulls as usize..].contains(&NULL_BLOCK) {
            return Err(format!("seq {seq}: group {g} holds the null block after a held block"));
        }
        let skipped = h.managers[g].get_num_skipped_tokens(t.num_tokens) / self.block_size;
        if nulls > skipped {
            return Err(format!(
                "seq {seq}: group {g} ({:?}) dropped {nulls} blocks, but only {skipped} are behind its window",
                h.managers[g]
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::PagedAllocator;
    use crate::engine::alloc::{ComputedBlocks, PagedAdmit, TokenIdentity};
    use crate::engine::version::EngineVersion;

    /// Ten 4-token blocks, requests 0 and 1 admitted with 6 tokens each (two blocks apiece).
    fn two_requests(engine: EngineVersion) -> PagedAllocator {
        let mut p = PagedAllocator::new(10, 4, false, 0.0, engine);
        for seq in 0..2 {
            let identity = TokenIdentity {
                request: seq,
                seq,
                prefix_key: 0,
                shared_prefix_tokens: 0,
                prompt_tokens: 6,
                prompt_blocks: None,
                sole_sample: false,
            };
            let admit = PagedAdmit {
                request: seq,
                identity,
                num_new_tokens: 6,
                full_tokens: 6,
                apply_watermark: false,
                preempted_before: false,
            };
            p.admit(seq, &admit, &ComputedBlocks::default()).expect("fits");
        }
        p.check_invariants().expect("consistent after admission");
        p
    }

    fn table_mut(p: &mut PagedAllocator, seq: usize) -> &mut Vec<u32> {
        &mut p.tables.get_mut(seq as u32).expect("admitted").blocks
    }

    #[test]
    fn without_records_the_tables_are_checked_against_each_other_and_the_queue() {
        let p = two_requests(EngineVersion::V1);
        assert!(!p.pool.shares_blocks());
        assert_eq!(p.pool.blocks().len(), 0, "no records where no block is shared");
        let records = p.block_records();
        let held: Vec<(u32, u16)> = records.iter().filter(|r| r.ref_cnt > 0).map(|r| (r.owner, r.filled)).collect();
        assert_eq!(held, [(0, 4), (0, 2), (1, 4), (1, 2)], "blocks 1-4: (owner, tokens) from the tables");

        // A block held by two tables.
        let mut twice = p.clone();
        let b = table_mut(&mut twice, 0)[0];
        table_mut(&mut twice, 1)[0] = b;
        let err = twice.check_invariants().unwrap_err();
        assert!(err.contains("block 1 is held 2 times"), "{err}");

        // A table holding a block that is also free.
        let mut free_and_held = p.clone();
        table_mut(&mut free_and_held, 1)[1] = 9; // blocks 5-9 are free
        let err = free_and_held.check_invariants().unwrap_err();
        assert!(err.contains("holds block 9, which is in the free queue"), "{err}");

        // A table dropped without freeing its blocks: they are neither held nor free.
        let mut leaked = p.clone();
        leaked.tables.take(1);
        let err = leaked.check_invariants().unwrap_err();
        assert!(err.contains("free (5) + referenced (2) != usable total (9)"), "{err}");
    }

    #[test]
    fn with_records_ref_counts_are_checked_against_the_tables() {
        let mut p = two_requests(EngineVersion::V0);
        assert!(p.pool.shares_blocks());
        let b = table_mut(&mut p, 0)[0];
        table_mut(&mut p, 1)[0] = b;
        let err = p.check_invariants().unwrap_err();
        assert!(err.contains("ref count 1 but 2 table references"), "{err}");
    }
}
