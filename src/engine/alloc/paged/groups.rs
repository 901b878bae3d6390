//! vLLM v1's hybrid KV cache in the paged allocator (`vllm/v1/core/kv_cache_coordinator.py`,
//! `single_type_kv_cache_manager.py`): a model whose layers are not all full attention keeps one
//! block table per KV cache group per request, every group drawing from the one `BlockPool` of
//! page-sized blocks. Each group has the manager of its layers' kind:
//!
//! - `FullAttention` keeps every block until the request ends;
//! - `SlidingWindow(W)` skips the tokens before the window (`get_num_skipped_tokens(c) =
//!   max(0, c − W + 1)`), `ChunkedLocalAttention(C)` those before the current chunk
//!   (`c ÷ C × C`): before each allocation `remove_skipped_blocks` replaces the blocks wholly
//!   behind them with the null block (block 0) and frees them, so the table keeps its length
//!   with a head of nulls.
//!
//! `allocate_slots` removes skipped blocks in every group, then asks each group for
//! `cdiv(tokens, block_size) − blocks in its table` new blocks and refuses (None: preempt) when
//! their sum does not fit. Admission (`full_sequence_must_fit`) counts each group's blocks for the
//! whole known sequence, capped for a window or chunk at `max_admission_blocks_per_request`.
//! Freeing walks the groups in order, each table's blocks last first, nulls left out.
//!
//! Prefix caching is refused beside hybrid groups (`SimConfig::validate`), as is vLLM v0, so a
//! block here is never shared: the pool keeps no records and the tables are the records.

use super::block_table::BlockTable;
use super::single_type::{first_held, held_tokens, KvCacheGroups, NULL_BLOCK};
use super::{ComputedBlocks, PagedAdmit, PagedAllocator, SeqTables, Shortfall};
use crate::engine::alloc::ids::SeqId;

impl PagedAllocator {
    /// The hybrid KV cache groups, when the model has them.
    pub fn kv_cache_groups(&self) -> Option<&KvCacheGroups> {
        self.groups.as_deref()
    }

    /// `seq`'s block table in KV cache group `g` (group 0: the allocator's own tables).
    pub fn group_table(&self, g: usize, seq: SeqId) -> Option<&BlockTable> {
        self.group_tables(g).get(seq)
    }

    /// Group `g`'s block tables.
    pub(super) fn group_tables(&self, g: usize) -> &SeqTables {
        match (g, &self.groups) {
            (0, _) | (_, None) => &self.tables,
            (g, Some(h)) => &h.tables[g - 1],
        }
    }

    /// Admission under hybrid groups: the whole known sequence must fit, each group counting
    /// `min(cdiv(tokens, block_size), its admission cap)` blocks, and so must the first chunk.
    pub(super) fn admit_grouped(
        &mut self,
        seq: SeqId,
        req: &PagedAdmit,
        computed: &ComputedBlocks,
    ) -> Result<(), Shortfall> {
        debug_assert!(computed.blocks.is_empty(), "no prefix caching beside hybrid groups");
        let h = self.groups.as_deref().expect("hybrid groups");
        let bs = self.block_size;
        let full_need: u32 = h
            .managers
            .iter()
            .map(|m| {
                let need = req.full_tokens.div_ceil(bs);
                m.max_admission_blocks_per_request(bs, h.max_in_flight_tokens, h.max_model_len)
                    .map_or(need, |c| need.min(c))
            })
            .sum();
        let chunk_need = req.num_new_tokens.div_ceil(bs) * h.len() as u32;
        let need = full_need.max(chunk_need);
        let watermark = if req.apply_watermark { self.watermark_blocks } else { 0 };
        let free = self.pool.num_free_blocks();
        if need + watermark > free {
            return Err(Shortfall { need, free });
        }
        let groups = h.len();
        let table = BlockTable {
            request: req.request,
            identity: req.identity.clone(),
            blocks: self.spare_tables.pop().unwrap_or_default(),
            num_tokens: 0,
            chain_hash: 0,
            chain_blocks: 0,
            cached_blocks: 0,
        };
        let h = self.groups.as_deref_mut().expect("hybrid groups");
        for g in 1..groups {
            h.tables[g - 1].insert(seq, BlockTable { blocks: Vec::new(), ..table.clone() });
        }
        self.tables.insert(seq, table);
        let ok = self.allocate_slots_grouped(seq, req.num_new_tokens);
        debug_assert!(ok.is_some());
        Ok(())
    }

    /// `allocate_slots` under hybrid groups: `remove_skipped_blocks` in every group (which frees
    /// blocks even when the allocation then fails, as in vLLM), then each group's new blocks, or
    /// None when their sum is more than the free blocks.
    pub(super) fn allocate_slots_grouped(&mut self, seq: SeqId, num_new_tokens: u32) -> Option<()> {
        let bs = self.block_size;
        let Self { tables, pool, groups, live_tokens, .. } = self;
        let h = groups.as_deref_mut().expect("hybrid groups");
        let n = h.len();
        let cur = tables.get(seq).expect("allocate_slots on unknown seq").num_tokens;
        for g in 0..n {
            let skipped = h.managers[g].get_num_skipped_tokens(cur) / bs;
            if skipped == 0 {
                continue;
            }
            let t = if g == 0 { tables.get_mut(seq) } else { h.tables[g - 1].get_mut(seq) }.expect("a table per group");
            let end = (skipped as usize).min(t.blocks.len());
            let start = first_held(&t.blocks, end);
            if start == end {
                continue;
            }
            pool.free_table(&t.blocks[start..end], (end - start) as u32 * bs);
            for b in &mut t.blocks[start..end] {
                h.behind_window[*b as usize] = true;
                *b = NULL_BLOCK;
            }
            *live_tokens -= (end - start) as u64 * u64::from(bs);
        }
        let total = cur + num_new_tokens;
        let len = tables.get(seq).expect("checked").blocks.len() as u32;
        let per_group = total.div_ceil(bs).saturating_sub(len);
        if pool.num_free_blocks() < per_group * n as u32 {
            return None;
        }
        let last_fill = total - (total.div_ceil(bs).max(1) - 1) * bs;
        for g in 0..n {
            let t = if g == 0 { tables.get_mut(seq) } else { h.tables[g - 1].get_mut(seq) }.expect("a table per group");
            let start = t.blocks.len();
            pool.get_new_blocks(per_group, t.request, &mut t.blocks, bs, last_fill).expect("checked free count");
            for &b in &t.blocks[start..] {
                h.behind_window[b as usize] = false;
            }
            t.num_tokens = total;
        }
        *live_tokens += u64::from(num_new_tokens) * n as u64;
        Some(())
    }

    /// Free blocks allocating `(seq, new tokens)` would take in every group (blocks behind a
    /// window, which the allocation frees first, not counted back).
    pub(super) fn blocks_needed_grouped(&self, seq: SeqId, num_new_tokens: u32) -> u32 {
        let t = self.table(seq).expect("blocks_needed on unknown seq");
        let per_group = (t.num_tokens + num_new_tokens).div_ceil(self.block_size).saturating_sub(t.blocks.len() as u32);
        per_group * self.groups.as_deref().map_or(1, |h| h.len() as u32)
    }

    /// Frees a request's blocks group by group (vLLM's coordinator frees its managers in order),
    /// each table's last block first, its leading nulls left out.
    pub(super) fn free_grouped(&mut self, seq: SeqId) {
        let bs = self.block_size;
        let Some(mut first) = self.tables.take(seq) else { return };
        let h = self.groups.as_deref_mut().expect("hybrid groups");
        let mut rest: Vec<BlockTable> = Vec::with_capacity(h.len().saturating_sub(1));
        for tables in &mut h.tables {
            rest.extend(tables.take(seq));
        }
        for t in std::iter::once(&first).chain(rest.iter()) {
            let held = held_tokens(t, bs);
            let nulls = t.blocks.iter().take_while(|&&b| b == NULL_BLOCK).count();
            self.live_tokens -= self.pool.free_table(&t.blocks[nulls..], held);
        }
        if self.spare_tables.len() < super::MAX_SPARE_TABLES {
            first.blocks.clear();
            self.spare_tables.push(first.blocks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::single_type::SingleTypeManager;
    use super::*;
    use crate::engine::alloc::ids::TokenIdentity;
    use crate::engine::model_arch::LayerAttention;
    use crate::engine::version::EngineVersion;

    fn admit(p: &mut PagedAllocator, seq: SeqId, prompt: u32, first_chunk: u32) -> Result<(), Shortfall> {
        let identity = TokenIdentity {
            request: seq,
            seq,
            prefix_key: 0,
            shared_prefix_tokens: 0,
            prompt_tokens: prompt,
            prompt_blocks: None,
            sole_sample: false,
        };
        let req = PagedAdmit {
            request: seq,
            identity,
            num_new_tokens: first_chunk,
            full_tokens: prompt,
            apply_watermark: false,
            preempted_before: false,
        };
        p.admit(seq, &req, &ComputedBlocks::default())
    }

    /// A full-attention group and a sliding-window group of 8 tokens, 4-token blocks, 64 blocks.
    fn gpt_oss_like() -> PagedAllocator {
        let kinds = [LayerAttention::SlidingWindow(8), LayerAttention::Full];
        PagedAllocator::new(64, 4, false, 0.0, EngineVersion::V1).with_kv_cache_groups(&kinds, 16, 1024)
    }

    #[test]
    fn skipped_tokens_follow_vllms_examples() {
        let sw = SingleTypeManager::SlidingWindow { sliding_window: 4 };
        assert_eq!(sw.get_num_skipped_tokens(7), 4);
        assert_eq!(sw.get_num_skipped_tokens(2), 0);
        let ch = SingleTypeManager::ChunkedLocalAttention { attention_chunk_size: 8 };
        assert_eq!(
            (ch.get_num_skipped_tokens(13), ch.get_num_skipped_tokens(8), ch.get_num_skipped_tokens(7)),
            (8, 8, 0)
        );
        assert_eq!(SingleTypeManager::FullAttention.get_num_skipped_tokens(1000), 0);
        // gpt-oss's 128-token window with 16-token blocks and 8,192 tokens in flight.
        assert_eq!(
            SingleTypeManager::SlidingWindow { sliding_window: 128 }
                .max_admission_blocks_per_request(16, 8192, 131_072),
            Some((127 + 8192u32).div_ceil(16) + 1)
        );
    }

    #[test]
    fn the_window_group_frees_the_blocks_behind_it_and_keeps_nulls_in_their_place() {
        let mut p = gpt_oss_like();
        admit(&mut p, 0, 20, 20).expect("fits");
        p.check_invariants().expect("after admission");
        // 20 tokens: 5 blocks in each group, none behind the window yet (it is freed next step).
        assert_eq!(p.num_free_blocks(), 63 - 10);
        // The decode step after: 20 computed, the window of the 21st token starts at token 13,
        // so blocks 0-2 (tokens 0-11) are behind it.
        p.allocate_slots(0, 1).expect("fits");
        p.check_invariants().expect("after a decode step");
        let sliding = &p.group_tables(0).get(0).unwrap().blocks;
        assert_eq!(&sliding[..3], &[NULL_BLOCK; 3]);
        assert!(sliding[3..].iter().all(|&b| b != NULL_BLOCK));
        assert_eq!(sliding.len(), 6);
        assert_eq!(p.group_tables(1).get(0).unwrap().blocks.len(), 6, "full attention keeps every block");
        assert_eq!(p.num_free_blocks(), 63 - 12 + 3);
        let freed = p.kv_cache_groups().unwrap().behind_window.iter().filter(|&&b| b).count();
        // The three freed blocks went to the queue's head, and the step's two new blocks (one
        // per group) came from there: one is still free, and the map can tell it.
        assert_eq!(freed, 1, "the map can tell blocks freed behind the window");
        p.free(0);
        p.check_invariants().expect("after free");
        assert_eq!(p.num_free_blocks(), 63);
        assert_eq!(p.live_tokens(), 0);
    }

    /// A chunked group (vLLM's `ChunkedLocalAttentionManager`, run when
    /// VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1) drops the blocks of finished chunks.
    #[test]
    fn a_chunked_group_frees_the_blocks_of_finished_chunks() {
        let kinds = [LayerAttention::Chunked(8), LayerAttention::Full];
        let mut p = PagedAllocator::new(64, 4, false, 0.0, EngineVersion::V1).with_kv_cache_groups(&kinds, 16, 1024);
        admit(&mut p, 0, 7, 7).expect("fits");
        p.allocate_slots(0, 1).expect("token 8"); // 7 computed: nothing skipped yet
        assert!(!p.group_tables(0).get(0).unwrap().blocks.contains(&NULL_BLOCK));
        p.allocate_slots(0, 1).expect("token 9"); // 8 computed: the first chunk is behind
        p.check_invariants().expect("consistent");
        assert_eq!(p.group_tables(0).get(0).unwrap().blocks[..2], [NULL_BLOCK; 2]);
        assert_eq!(p.group_tables(1).get(0).unwrap().blocks.len(), 3);
        assert_eq!(p.live_tokens(), 9 + 1, "9 tokens in the full group, 1 in the chunk's");
    }

    #[test]
    fn admission_caps_a_window_groups_blocks_and_a_short_pool_refuses() {
        // 1,000 tokens known, 16-token chunks: full attention counts 250 blocks, the window
        // group its cap: cdiv(min(7 + 16, 1024), 4) + 1 = 7.
        let mut p = gpt_oss_like();
        let e = admit(&mut p, 0, 1000, 16).unwrap_err();
        assert_eq!(e, Shortfall { need: 250 + 7, free: 63 });
        admit(&mut p, 1, 200, 16).expect("50 + 7 blocks fit in 63");
        p.check_invariants().expect("consistent");
        // A running request that cannot grow is refused, after its skipped blocks are freed.
        let before = p.num_free_blocks();
        assert!(p.allocate_slots(1, 200).is_none());
        assert!(p.num_free_blocks() > before, "remove_skipped_blocks ran before the refusal");
        p.check_invariants().expect("consistent after a refusal");
    }
}
