//! The paged allocator (PagedAttention): each sequence owns a `BlockTable` of physical blocks,
//! taken one at a time as its tokens arrive. Samples of one request share the prompt's blocks
//! (ref counts), the partial last block is copied on a sample's first write (copy-on-write), and
//! with prefix caching full blocks are found again by the hash of (parent hash, tokens).
//!
//! `allocate_slots` returns None when the pool is short, which is the scheduler's cue to preempt.

use super::block_pool::BlockPool;

mod block_table;
mod groups;
mod records;
pub mod single_type;
use super::ids::{chain_hash, is_shared_content, RequestId, SeqId, TokenIdentity};
use crate::engine::model_arch::LayerAttention;
use crate::engine::version::EngineVersion;
pub use block_table::BlockTable;
use block_table::SeqTables;
pub use single_type::{KvCacheGroups, SingleTypeManager, NULL_BLOCK};

/// Emptied block tables kept for reuse, at most (a bound on the memory they hold).
const MAX_SPARE_TABLES: usize = 256;

/// A preempted group's KV, moved to CPU swap space with its sharing structure kept.
#[derive(Clone, Debug, Default)]
pub struct SwappedKv {
    /// Tokens held by each swapped block.
    pub block_fill: Vec<u32>,
    /// Per sequence: its table as indices into `block_fill`.
    pub seqs: Vec<(SeqId, RequestId, TokenIdentity, Vec<u32>, u32)>,
}

impl SwappedKv {
    pub fn num_blocks(&self) -> u32 {
        self.block_fill.len() as u32
    }
}

/// What a prefix-cache lookup found: full blocks already holding the first tokens.
#[derive(Clone, Debug, Default)]
pub struct ComputedBlocks {
    pub blocks: Vec<u32>,
    pub num_tokens: u32,
}

#[derive(Clone, Debug)]
pub struct PagedAllocator {
    pool: BlockPool,
    block_size: u32,
    watermark_blocks: u32,
    prefix_caching: bool,
    tables: SeqTables,
    /// Emptied block-table buffers kept for the next admissions (no allocation per request).
    spare_tables: Vec<Vec<u32>>,
    live_tokens: u64,
    pub cow_copies: u64,
    /// Prefix-cache lookups of requests admitted for the first time (vLLM's `PrefixCacheStats`).
    pub prefix: PrefixStats,
    /// The same for re-admissions after a preemption, which vLLM reports apart.
    pub preempted_prefix: PrefixStats,
    /// vLLM v1's hybrid KV cache groups (sliding-window or chunked layers); None when every
    /// layer attends to everything, the one-table path.
    groups: Option<Box<KvCacheGroups>>,
    /// Sequences whose blocks are being loaded from the host tier: their full blocks enter the
    /// prefix cache once the load is done (vLLM's `delay_cache_blocks`).
    loading: Vec<SeqId>,
}

/// Tokens looked up in the prefix cache and tokens found, as `PrefixCacheStats` counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefixStats {
    pub queries: u64,
    pub hits: u64,
}

/// What admission asks of the paged allocator.
#[derive(Clone, Debug)]
pub struct PagedAdmit {
    pub request: RequestId,
    pub identity: TokenIdentity,
    /// Tokens computed in the admitting step (after the prefix-cache hits).
    pub num_new_tokens: u32,
    /// The whole known sequence, which must fit before admission.
    pub full_tokens: u32,
    pub apply_watermark: bool,
    /// The request was preempted before (its lookup counts apart).
    pub preempted_before: bool,
}

/// Why an admission was refused: blocks it needed and blocks free (the watermark aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub need: u32,
    pub free: u32,
}

impl PagedAllocator {
    /// `num_blocks` as vLLM counts them (v1's null block included).
    pub fn new(num_blocks: u32, block_size: u32, prefix_caching: bool, watermark: f64, engine: EngineVersion) -> Self {
        PagedAllocator {
            pool: BlockPool::new(num_blocks, prefix_caching, engine),
            block_size,
            watermark_blocks: (watermark * f64::from(num_blocks)) as u32,
            prefix_caching,
            tables: SeqTables::default(),
            spare_tables: Vec::new(),
            live_tokens: 0,
            cow_copies: 0,
            prefix: PrefixStats::default(),
            preempted_prefix: PrefixStats::default(),
            groups: None,
            loading: Vec::new(),
        }
    }

    /// vLLM v1's hybrid KV cache: one table per group of `kinds` (in vLLM's group order) for
    /// every request, all from this pool. Only without prefix caching, under v1.
    pub fn with_kv_cache_groups(
        mut self,
        kinds: &[LayerAttention],
        max_in_flight_tokens: u32,
        max_model_len: u32,
    ) -> Self {
        assert!(
            !self.pool.shares_blocks(),
            "hybrid KV cache groups run under v1 without prefix caching (SimConfig::validate)"
        );
        self.groups =
            Some(Box::new(KvCacheGroups::new(kinds, self.pool.num_blocks(), max_in_flight_tokens, max_model_len)));
        self
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }
    pub fn pool(&self) -> &BlockPool {
        &self.pool
    }
    pub fn num_free_blocks(&self) -> u32 {
        self.pool.num_free_blocks()
    }
    pub fn watermark_blocks(&self) -> u32 {
        self.watermark_blocks
    }
    pub fn live_tokens(&self) -> u64 {
        self.live_tokens
    }
    pub fn table(&self, seq: SeqId) -> Option<&BlockTable> {
        self.tables.get(seq)
    }
    pub fn tables(&self) -> impl Iterator<Item = (SeqId, &BlockTable)> {
        self.tables.iter()
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.block_size)
    }

    /// Full blocks of `identity`'s first `num_tokens` already in the prefix cache (at least one
    /// token is always left to compute, as in vLLM).
    pub fn get_computed_blocks(&self, identity: &TokenIdentity, num_tokens: u32) -> ComputedBlocks {
        let mut found = ComputedBlocks::default();
        if !self.prefix_caching {
            return found;
        }
        let (bs, max_blocks) = (self.block_size, num_tokens.saturating_sub(1) / self.block_size);
        // The request's own blocks from the first one looked up on, found in one pass.
        let mut own: Option<(u32, Vec<u32>)> = None;
        let mut parent = 0u64;
        for b in 0..max_blocks {
            let content = identity.block_content(b, bs);
            let h = chain_hash(parent, content, bs);
            let hit = if self.in_hash_map(content) {
                self.pool.get_cached_block(h)
            } else if !self.pool.has_own_blocks(identity.request) {
                None
            } else {
                let (first, blocks) = own.get_or_insert_with(|| {
                    let mut hashes = vec![h];
                    for k in b + 1..max_blocks {
                        let parent = hashes[hashes.len() - 1];
                        hashes.push(chain_hash(parent, identity.block_content(k, bs), bs));
                    }
                    let mut blocks = vec![u32::MAX; hashes.len()];
                    self.pool.own_cached_blocks(identity.request, b, &hashes, &mut blocks);
                    (b, blocks)
                });
                Some(blocks[(b - *first) as usize]).filter(|&id| id != u32::MAX)
            };
            match hit {
                Some(id) => found.blocks.push(id),
                None => break,
            }
            parent = h;
        }
        found.num_tokens = found.blocks.len() as u32 * self.block_size;
        found
    }

    /// A full block of this content is cached in the pool's hash → blocks map; under v1 a block
    /// of one request's own tokens is in that request's own list instead.
    fn in_hash_map(&self, content: u64) -> bool {
        is_shared_content(content) || self.pool.engine() == EngineVersion::V0
    }

    /// Request `r` has ended: the blocks of its own tokens leave its list (`own_hashes.rs`).
    pub fn forget_request(&mut self, r: RequestId) {
        self.pool.forget_request(r);
    }

    /// Admits a new sequence as vLLM's `allocate_slots` admits a waiting request: the whole known
    /// sequence (`full_tokens`: the prompt, plus generated tokens after a preemption) must fit
    /// above the watermark, then the first chunk (`computed` hits plus `num_new_tokens`) is
    /// allocated. Hit blocks nobody references sit in the free queue, so they count against the
    /// free blocks too. False (and nothing changed) when the pool is too short.
    pub fn admit(&mut self, seq: SeqId, req: &PagedAdmit, computed: &ComputedBlocks) -> Result<(), Shortfall> {
        assert!(self.table(seq).is_none(), "seq {seq} admitted twice");
        if self.groups.is_some() {
            return self.admit_grouped(seq, req, computed);
        }
        let hit_blocks = computed.blocks.len() as u32;
        let revived = computed.blocks.iter().filter(|&&b| self.pool.block(b).ref_cnt == 0).count() as u32;
        let watermark = if req.apply_watermark { self.watermark_blocks } else { 0 };
        let free = self.pool.num_free_blocks();
        let full = self.blocks_for(req.full_tokens).saturating_sub(hit_blocks) + revived;
        let chunk = self.blocks_for(computed.num_tokens + req.num_new_tokens).saturating_sub(hit_blocks) + revived;
        let need = full.max(chunk);
        if need + watermark > free {
            return Err(Shortfall { need, free });
        }
        for &b in &computed.blocks {
            if self.pool.block(b).ref_cnt == 0 {
                self.live_tokens += u64::from(self.pool.block(b).filled);
            }
            self.pool.touch(b, req.request);
        }
        if self.prefix_caching {
            let stats = if req.preempted_before { &mut self.preempted_prefix } else { &mut self.prefix };
            // vLLM counts the request's `num_tokens` as the query: the whole known sequence.
            stats.queries += u64::from(req.full_tokens);
            stats.hits += u64::from(computed.num_tokens);
        }
        let mut blocks = self.spare_tables.pop().unwrap_or_default();
        blocks.extend_from_slice(&computed.blocks);
        self.tables.insert(
            seq,
            BlockTable {
                request: req.request,
                identity: req.identity.clone(),
                blocks,
                num_tokens: computed.num_tokens,
                // A hit block carries its chained hash.
                chain_hash: computed.blocks.last().and_then(|&b| self.pool.block_hash(b)).unwrap_or(0),
                chain_blocks: hit_blocks,
                cached_blocks: hit_blocks,
            },
        );
        let ok = self.allocate_slots(seq, req.num_new_tokens);
        debug_assert!(ok.is_some());
        Ok(())
    }

    /// Free blocks `allocate_slots(seq, num_new_tokens)` would take (copy-on-write included).
    pub fn blocks_needed(&self, seq: SeqId, num_new_tokens: u32) -> u32 {
        self.blocks_needed_all(&[(seq, num_new_tokens)])
    }

    /// Free blocks allocating every `(seq, new tokens)` pair in turn would take. A partial last
    /// block shared by `r` sequences is copied once per writer except the last holder, who then
    /// writes in place: `k` of them writing costs `min(k, r − 1)` copies.
    pub fn blocks_needed_all(&self, work: &[(SeqId, u32)]) -> u32 {
        if self.groups.is_some() {
            return work.iter().map(|&(seq, n)| self.blocks_needed_grouped(seq, n)).sum();
        }
        let mut need = 0;
        let mut shared: Vec<(u32, u32)> = Vec::new(); // (partial block, writers)
        for &(seq, n) in work {
            let t = self.table(seq).expect("blocks_needed on unknown seq");
            need += self.blocks_for(t.num_tokens + n).saturating_sub(t.blocks.len() as u32);
            if n > 0 && t.num_tokens % self.block_size != 0 {
                let last = *t.blocks.last().expect("a partial block exists");
                if self.pool.holders(last) > 1 {
                    match shared.iter_mut().find(|(b, _)| *b == last) {
                        Some((_, k)) => *k += 1,
                        None => shared.push((last, 1)),
                    }
                }
            }
        }
        need + shared.iter().map(|&(b, k)| k.min(self.pool.holders(b) - 1)).sum::<u32>()
    }

    /// Makes room for `num_new_tokens` more tokens of `seq` and writes them: copy-on-write of a
    /// shared partial last block, then new blocks as needed. None (nothing changed) if short.
    pub fn allocate_slots(&mut self, seq: SeqId, num_new_tokens: u32) -> Option<()> {
        if self.groups.is_some() {
            return self.allocate_slots_grouped(seq, num_new_tokens);
        }
        let bs = self.block_size;
        let v0_caching = self.prefix_caching && self.pool.engine() == EngineVersion::V0;
        let table = self.tables.get_mut(seq).expect("allocate_slots on unknown seq");
        // Fast path of every decode step: one token into a private, partly filled last block
        // (also the token that fills it, when no prefix cache needs the full block's hash in
        // that write: see `BlockTable::cached_blocks`).
        let cur = table.num_tokens;
        let offset = cur % bs;
        let hashed_now = |t: &BlockTable| {
            let content = t.identity.block_content(cur / bs, bs);
            self.prefix_caching && (v0_caching || !t.identity.own_block_waits(content))
        };
        if num_new_tokens == 1 && offset != 0 && (offset + 1 != bs || !hashed_now(table)) {
            let last = *table.blocks.last().expect("a partial block exists");
            if self.pool.holders(last) == 1 {
                table.num_tokens += 1;
                self.pool.set_filled(last, offset + 1);
                self.live_tokens += 1;
                return Some(());
            }
        }
        // Fast path of a decode token that needs a new block (every decode step with 1-token
        // blocks), when no prefix cache hashes it: the last block, if any, is full, so there is
        // nothing to copy.
        if num_new_tokens == 1 && offset == 0 && !self.prefix_caching {
            let id = self.pool.get_new_block(table.request)?;
            self.pool.set_filled(id, 1);
            table.blocks.push(id);
            table.num_tokens += 1;
            self.live_tokens += 1;
            return Some(());
        }
        let total = cur + num_new_tokens;
        let need = total.div_ceil(bs).saturating_sub(table.blocks.len() as u32);
        let cow = cur % bs != 0 && num_new_tokens > 0 && table.blocks.last().is_some_and(|&b| self.pool.holders(b) > 1);
        if self.pool.num_free_blocks() < need + u32::from(cow) {
            return None;
        }
        // The table and the pool are borrowed apart (the table stays in place).
        let Self { tables, pool, live_tokens, cow_copies, prefix_caching, loading, .. } = self;
        let table = tables.get_mut(seq).expect("checked above");
        let request = table.request;
        if let (true, Some(last)) = (cow, table.blocks.last_mut()) {
            let old = *last;
            let new = pool.get_new_block(request).expect("checked free count");
            let filled = u32::from(pool.block(old).filled);
            pool.set_filled(new, filled);
            pool.mark_copied(new);
            pool.free_blocks([old]); // still referenced by the other samples
            *live_tokens += u64::from(filled);
            *cow_copies += 1;
            *last = new;
        }
        // Write the tokens: into the partly filled last block, then new blocks (full but the
        // last); cache blocks that became full.
        let first_new = table.blocks.len() as u32;
        if cur / bs < first_new {
            pool.set_filled(table.blocks[(cur / bs) as usize], (total - cur / bs * bs).min(bs));
        }
        let last_fill = total - (total.div_ceil(bs).max(1) - 1) * bs;
        pool.get_new_blocks(need, request, &mut table.blocks, bs, last_fill).expect("checked free count");
        table.num_tokens = total;
        *live_tokens += u64::from(num_new_tokens);
        // (Only a host tier's load leaves a sequence uncached: `admit_loading`.)
        if *prefix_caching && !(cfg!(feature = "kv-offload") && loading.contains(&seq)) {
            Self::cache_full_blocks(pool, table, bs);
        }
        Some(())
    }

    /// Admits `seq` as [`PagedAllocator::admit`] does, its first chunk being tokens loaded from
    /// the host tier: their blocks enter the prefix cache only when [`PagedAllocator::loaded`]
    /// says the load is done.
    pub fn admit_loading(&mut self, seq: SeqId, req: &PagedAdmit, computed: &ComputedBlocks) -> Result<(), Shortfall> {
        self.loading.push(seq);
        let admitted = self.admit(seq, req, computed);
        if admitted.is_err() {
            self.loading.retain(|&s| s != seq);
        }
        admitted
    }

    /// `seq`'s load is done: its full blocks enter the prefix cache. With `recompute_last` (the
    /// whole sequence was loaded) its last token is taken back first, to be computed again, as
    /// vLLM sets `num_computed_tokens` to one short of the request's tokens.
    pub fn loaded(&mut self, seq: SeqId, recompute_last: bool) {
        self.loading.retain(|&s| s != seq);
        let bs = self.block_size;
        let table = self.tables.get_mut(seq).expect("a loaded sequence holds its blocks");
        if recompute_last {
            table.num_tokens -= 1;
            let last = *table.blocks.last().expect("a loaded sequence holds blocks");
            self.pool.set_filled(last, table.num_tokens - bs * (table.blocks.len() as u32 - 1));
            self.live_tokens -= 1;
            // Loads are whole blocks, so a whole sequence loaded ends on a block's last token.
            debug_assert_ne!(table.num_tokens % bs, 0, "the last loaded block keeps tokens");
        }
        Self::cache_full_blocks(&mut self.pool, table, bs);
    }

    /// Caches `table`'s full blocks not cached yet, in order (prefix caching only): shared
    /// content (and every block under v0) in the pool's hash → blocks map, a request's own
    /// tokens under v1 in its own list; a block only the sequence itself can hit is marked
    /// cached now and hashed and listed when the table is freed with the request unfinished
    /// ([`PagedAllocator::list_own_blocks`]).
    #[inline(never)]
    fn cache_full_blocks(pool: &mut BlockPool, table: &mut BlockTable, bs: u32) {
        let v1 = pool.engine() == EngineVersion::V1;
        let full = table.num_tokens / bs;
        for b in table.cached_blocks..full {
            let id = table.blocks[b as usize];
            // Content comes in order (a trace's blocks, a system prompt, the request's prompt,
            // generated tokens), so the blocks that wait are the table's last: once one waits,
            // every later one does, with no need to read its content.
            if v1 && table.chain_blocks < b {
                pool.mark_own_block(id);
                continue;
            }
            let content = table.identity.block_content(b, bs);
            if v1 && table.identity.own_block_waits(content) {
                pool.mark_own_block(id);
                continue;
            }
            debug_assert_eq!(table.chain_blocks, b, "a block to hash now follows one waiting to be hashed");
            let h = chain_hash(table.chain_hash, content, bs);
            if is_shared_content(content) || !v1 {
                pool.cache_full_block(id, h, is_shared_content(content));
            } else {
                pool.cache_own_block(id, h, table.identity.request, b);
            }
            (table.chain_hash, table.chain_blocks) = (h, b + 1);
        }
        table.cached_blocks = table.cached_blocks.max(full);
    }

    /// Hashes and lists the blocks `table` marked cached without a hash (a sequence's own tokens,
    /// [`TokenIdentity::own_block_waits`]), as `cache_full_blocks` would have in the writes that
    /// filled them: the table is being freed and its request may be admitted again.
    #[cold]
    fn list_own_blocks(pool: &mut BlockPool, table: &mut BlockTable, bs: u32) {
        for b in table.chain_blocks..table.cached_blocks {
            let h = chain_hash(table.chain_hash, table.identity.block_content(b, bs), bs);
            pool.list_own_block(table.blocks[b as usize], h, table.identity.request, b);
            (table.chain_hash, table.chain_blocks) = (h, b + 1);
        }
    }

    /// Whether a decode token that fills its block leaves the fast path (a block of generated
    /// tokens is the request's own: only v0 caches it in that write).
    pub fn decode_fill_is_slow(&self) -> bool {
        self.prefix_caching && self.pool.engine() == EngineVersion::V0
    }

    /// Event-driven stepping: `tokens` decode tokens were written on the fast path (one token
    /// each into a private, partly filled last block) without updating the tables or block
    /// records yet; only the live count moves now. [`PagedAllocator::catch_up`] writes them down.
    pub fn count_deferred_writes(&mut self, tokens: u64) {
        self.live_tokens += tokens;
    }

    /// Writes down the deferred fast-path writes of `seq`: its table holds `num_tokens` tokens
    /// (no more than its blocks hold) and its last block is filled to match.
    pub fn catch_up(&mut self, seq: SeqId, num_tokens: u32) {
        let bs = self.block_size;
        let table = self.tables.get_mut(seq).expect("catch_up on unknown seq");
        let blocks = table.blocks.len() as u32;
        debug_assert!(num_tokens >= table.num_tokens && num_tokens <= blocks * bs, "catch_up past the blocks");
        table.num_tokens = num_tokens;
        if let Some(&last) = table.blocks.last() {
            self.pool.set_filled(last, num_tokens - bs * (blocks - 1));
        }
    }

    /// The last block of `seq` is partly filled and shared: its next write copies it first.
    pub fn last_block_shared(&self, seq: SeqId) -> bool {
        self.table(seq).is_some_and(|t| {
            t.num_tokens % self.block_size != 0 && t.blocks.last().is_some_and(|&b| self.pool.holders(b) > 1)
        })
    }

    pub fn prefix_caching(&self) -> bool {
        self.prefix_caching
    }

    /// A new sample shares every block of its parent (ref counts go up).
    pub fn fork(&mut self, parent: SeqId, child: SeqId, identity: TokenIdentity) {
        assert!(self.groups.is_none(), "v1 never forks; hybrid groups run only under v1");
        let p = self.table(parent).expect("fork from unknown seq").clone();
        for &b in &p.blocks {
            self.pool.touch(b, p.request);
        }
        self.tables.insert(child, BlockTable { identity, ..p });
    }

    /// Releases the sequence's blocks, last block first (so tail blocks are evicted first); its
    /// request may be admitted again (a preemption), so the prefix cache lists its own blocks.
    pub fn free(&mut self, seq: SeqId) {
        self.free_table_of(seq, true);
    }

    /// Releases a finished sequence's blocks, as [`PagedAllocator::free`] does; nothing will
    /// look up the blocks of its own tokens again, so they are cached but not listed.
    pub fn free_finished(&mut self, seq: SeqId) {
        self.free_table_of(seq, false);
    }

    fn free_table_of(&mut self, seq: SeqId, may_return: bool) {
        if self.groups.is_some() {
            return self.free_grouped(seq);
        }
        let Some(mut table) = self.tables.take(seq) else { return };
        if self.prefix_caching {
            // A full block is cached before it is freed (it then goes to the queue's tail).
            Self::cache_full_blocks(&mut self.pool, &mut table, self.block_size);
            // A sample of several finishes with its siblings running: its blocks are listed, as
            // every free own block of an unfinished request is.
            if may_return || !table.identity.sole_sample {
                Self::list_own_blocks(&mut self.pool, &mut table, self.block_size);
            }
        }
        self.live_tokens -= self.pool.free_table(&table.blocks, table.num_tokens);
        if self.spare_tables.len() < MAX_SPARE_TABLES {
            table.blocks.clear();
            self.spare_tables.push(table.blocks);
        }
    }

    /// Unique blocks the given sequences hold (what a swap-out would move).
    pub fn unique_blocks(&self, seqs: &[SeqId]) -> u32 {
        let mut ids: Vec<u32> =
            seqs.iter().filter_map(|&s| self.table(s)).flat_map(|t| t.blocks.iter().copied()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len() as u32
    }

    /// Moves the sequences' KV to CPU (keeping which blocks they share) and frees their blocks.
    pub fn swap_out(&mut self, seqs: &[SeqId]) -> SwappedKv {
        let mut out = SwappedKv::default();
        let mut index: Vec<(u32, u32)> = Vec::new(); // (gpu block, cpu index), sorted by block
        for &s in seqs {
            let Some(t) = self.table(s) else { continue };
            let mut cpu_table = Vec::with_capacity(t.blocks.len());
            for &b in &t.blocks {
                let cpu = match index.binary_search_by_key(&b, |&(g, _)| g) {
                    Ok(i) => index[i].1,
                    Err(i) => {
                        let c = out.block_fill.len() as u32;
                        out.block_fill.push(u32::from(self.pool.block(b).filled));
                        index.insert(i, (b, c));
                        c
                    }
                };
                cpu_table.push(cpu);
            }
            out.seqs.push((s, t.request, t.identity.clone(), cpu_table, t.num_tokens));
        }
        for &s in seqs {
            self.free(s);
        }
        out
    }

    /// Brings swapped KV back into fresh blocks; false (nothing changed) if they do not fit
    /// above the watermark.
    pub fn swap_in(&mut self, kv: &SwappedKv) -> bool {
        if self.pool.num_free_blocks() < kv.num_blocks() + self.watermark_blocks {
            return false;
        }
        let owner = kv.seqs.first().map_or(0, |s| s.1);
        let gpu: Vec<u32> = kv
            .block_fill
            .iter()
            .map(|&filled| {
                let b = self.pool.get_new_block(owner).expect("checked free count");
                self.pool.set_filled(b, filled);
                self.live_tokens += u64::from(filled);
                b
            })
            .collect();
        let mut used = vec![false; gpu.len()];
        for (seq, request, identity, cpu_table, num_tokens) in &kv.seqs {
            let blocks: Vec<u32> = cpu_table
                .iter()
                .map(|&c| {
                    if std::mem::replace(&mut used[c as usize], true) {
                        self.pool.touch(gpu[c as usize], *request);
                    }
                    gpu[c as usize]
                })
                .collect();
            let cached_blocks = if self.prefix_caching { *num_tokens / self.block_size } else { 0 };
            let chain_hash = BlockTable::chain_hash_of(identity, cached_blocks, self.block_size);
            self.tables.insert(
                *seq,
                BlockTable {
                    request: *request,
                    identity: identity.clone(),
                    blocks,
                    num_tokens: *num_tokens,
                    chain_hash,
                    chain_blocks: cached_blocks,
                    cached_blocks,
                },
            );
        }
        true
    }
}
