//! llm-d's approximate prefix index (`prefix-cache-scorer`, Gateway API Inference Extension's
//! `plugins/multi/prefix`): the router remembers the blocks of every prompt it sent to a replica,
//! in an LRU per replica, and scores a new prompt by how many of its leading blocks each replica
//! was sent. It learns nothing from the replicas themselves, so it can be wrong both ways: a
//! block evicted on the GPU still counts, a block another route filled does not.
//!
//! Blocks are 16 tokens (llm-d's `blockSizeTokens`), chained as vLLM chains its block hashes; a
//! prompt counts its first 256 full blocks (`maxPrefixBlocksToMatch`); each replica's LRU holds
//! 31,250 blocks (`lruCapacityPerServer`). Ordered maps only, so no hash order reaches a choice.
//!
//! A block of a request's own tokens (and every block after it, chained on it) has a hash no
//! other prompt can have: it never matches, and is never sent again, so in the LRU it only takes
//! room until it ages out. Such blocks are kept as a count in the LRU's order, not as hashes: the
//! same evictions at the same times, without a map entry per block of every prompt.

use std::collections::{BTreeMap, VecDeque};

use crate::engine::alloc::{is_shared_content, TokenIdentity};
use crate::engine::workload::{prefix_key, RequestSpec};

/// Tokens per block of the index (llm-d's `blockSizeTokens`).
pub const INDEX_BLOCK_TOKENS: u32 = 16;
/// Blocks of a prompt the index hashes at most (llm-d's `maxPrefixBlocksToMatch`).
pub const MAX_PREFIX_BLOCKS: usize = 256;
/// Blocks each replica's LRU keeps (llm-d's `lruCapacityPerServer`).
pub const LRU_BLOCKS_PER_REPLICA: usize = 31_250;

/// A prompt's blocks as the router sees them: the chained hashes of its leading blocks that
/// another prompt may share, then how many of its own follow (full 16-token blocks, 256 at most).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptHashes {
    pub shared: Vec<u64>,
    pub own: u32,
}

impl PromptHashes {
    /// Every block the index counts of the prompt.
    pub fn len(&self) -> usize {
        self.shared.len() + self.own as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The prompt's blocks for the index. `request` is the fleet's id, which names the prompt's own
/// tokens.
pub fn prompt_hashes(spec: &RequestSpec, request: u32) -> PromptHashes {
    let identity = router_identity(spec, request);
    let full = (spec.prompt_tokens / INDEX_BLOCK_TOKENS).min(MAX_PREFIX_BLOCKS as u32);
    let mut shared = Vec::new();
    let mut parent = 0;
    for b in 0..full {
        if !is_shared_content(identity.block_content(b, INDEX_BLOCK_TOKENS)) {
            return PromptHashes { shared, own: full - b };
        }
        parent = identity.block_hash(parent, b, INDEX_BLOCK_TOKENS);
        shared.push(parent);
    }
    PromptHashes { shared, own: 0 }
}

/// What a request's tokens are, as a replica would hash them if it were request `request`.
pub fn router_identity(spec: &RequestSpec, request: u32) -> TokenIdentity {
    TokenIdentity {
        request,
        seq: 0,
        prefix_key: if spec.shared_prefix_tokens > 0 { prefix_key(spec.class, spec.tenant) } else { 0 },
        shared_prefix_tokens: spec.shared_prefix_tokens,
        prompt_tokens: spec.prompt_tokens,
        prompt_blocks: spec.prompt_blocks.clone(),
        sole_sample: spec.output_tokens.len() == 1,
    }
}

/// One use in an LRU's order: a block that may be shared (its hash, stamped), or a run of a
/// prompt's own blocks.
#[derive(Clone, Copy, Debug)]
enum Use {
    Shared { stamp: u64, hash: u64 },
    Own(u32),
}

/// One replica's LRU: each shared block's latest use, and the uses in order, oldest first. A use
/// a later one replaced stays until it reaches the front and is skipped (a touch costs a push,
/// not a search).
#[derive(Clone, Debug, Default)]
struct Lru {
    stamp_of: BTreeMap<u64, u64>,
    uses: VecDeque<Use>,
    /// Own blocks held (the `Own` runs in `uses`, summed).
    own: usize,
}

impl Lru {
    fn len(&self) -> usize {
        self.stamp_of.len() + self.own
    }

    fn is_current(&self, u: &Use) -> bool {
        match *u {
            Use::Shared { stamp, hash } => self.stamp_of.get(&hash) == Some(&stamp),
            Use::Own(_) => true,
        }
    }
}

/// The router's index: which replicas were sent each block, each replica's blocks in an LRU.
#[derive(Clone, Debug)]
pub struct ApproximatePrefixIndex {
    /// Shared block hash → the replicas whose LRU holds it (bit `r`).
    holders: BTreeMap<u64, u64>,
    lrus: Vec<Lru>,
    capacity: usize,
    next_stamp: u64,
}

impl ApproximatePrefixIndex {
    pub fn new(replicas: u32) -> ApproximatePrefixIndex {
        ApproximatePrefixIndex::with_capacity(replicas, LRU_BLOCKS_PER_REPLICA)
    }

    pub fn with_capacity(replicas: u32, capacity: usize) -> ApproximatePrefixIndex {
        ApproximatePrefixIndex {
            holders: BTreeMap::new(),
            lrus: vec![Lru::default(); replicas as usize],
            capacity: capacity.max(1),
            next_stamp: 0,
        }
    }

    /// Per replica, how many of the prompt's leading blocks it was sent: the blocks are walked
    /// in order, each counted for every replica holding it, until one no replica holds (a
    /// prompt's own blocks never are).
    pub fn matches(&self, prompt: &PromptHashes) -> Vec<u32> {
        let mut counts = vec![0u32; self.lrus.len()];
        for h in &prompt.shared {
            let Some(&mask) = self.holders.get(h) else { break };
            let mut m = mask;
            while m != 0 {
                counts[m.trailing_zeros() as usize] += 1;
                m &= m - 1;
            }
        }
        counts
    }

    /// SGLang's tree match: how many of the prompt's leading blocks some replica holds (the
    /// walk stops at the first no replica holds), and the replicas holding the last of them.
    pub fn deepest(&self, prompt: &PromptHashes) -> (u32, u64) {
        let (mut depth, mut holders) = (0, 0);
        for h in &prompt.shared {
            match self.holders.get(h) {
                Some(&mask) if mask != 0 => {
                    depth += 1;
                    holders = mask;
                }
                _ => break,
            }
        }
        (depth, holders)
    }

    /// The router sent these blocks to `replica`: each becomes its freshest, in the prompt's
    /// order, the oldest evicted past the capacity.
    pub fn insert(&mut self, replica: u32, prompt: &PromptHashes) {
        let r = replica as usize;
        let bit = 1u64 << replica;
        for &hash in &prompt.shared {
            let stamp = self.next_stamp;
            self.next_stamp += 1;
            let lru = &mut self.lrus[r];
            if lru.stamp_of.insert(hash, stamp).is_none() {
                *self.holders.entry(hash).or_insert(0) |= bit;
            }
            lru.uses.push_back(Use::Shared { stamp, hash });
            self.evict(r);
        }
        if prompt.own > 0 {
            let lru = &mut self.lrus[r];
            lru.own += prompt.own as usize;
            lru.uses.push_back(Use::Own(prompt.own));
            self.evict(r);
        }
        // Replaced uses are dropped once they outnumber the live ones, so the queue stays
        // within twice the capacity.
        let lru = &mut self.lrus[r];
        if lru.uses.len() > 2 * self.capacity.max(lru.len()) {
            let current: Vec<Use> = lru.uses.iter().filter(|u| lru.is_current(u)).copied().collect();
            lru.uses = current.into();
        }
    }

    /// Replica `r`'s oldest blocks out until its LRU is within the capacity.
    fn evict(&mut self, r: usize) {
        let bit = 1u64 << r;
        let lru = &mut self.lrus[r];
        while lru.len() > self.capacity {
            let front = lru.uses.front_mut().expect("an LRU past its capacity holds blocks");
            match *front {
                Use::Own(n) => {
                    let out = (n as usize).min(lru.own + lru.stamp_of.len() - self.capacity);
                    lru.own -= out;
                    if out == n as usize {
                        lru.uses.pop_front();
                    } else {
                        *front = Use::Own(n - out as u32);
                    }
                }
                Use::Shared { stamp, hash } => {
                    lru.uses.pop_front();
                    if lru.stamp_of.get(&hash) != Some(&stamp) {
                        continue; // a later use of the block replaced this one
                    }
                    lru.stamp_of.remove(&hash);
                    if let Some(mask) = self.holders.get_mut(&hash) {
                        *mask &= !bit;
                        if *mask == 0 {
                            self.holders.remove(&hash);
                        }
                    }
                }
            }
        }
    }

    /// Blocks replica `r`'s LRU holds.
    pub fn len(&self, r: u32) -> usize {
        self.lrus[r as usize].len()
    }

    /// Every replica's LRU within its capacity, its order holding each block once, and the
    /// holders' sets exactly the LRUs' shared blocks.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut held = 0usize;
        for (r, lru) in self.lrus.iter().enumerate() {
            let shared = lru.uses.iter().filter(|u| matches!(u, Use::Shared { .. }) && lru.is_current(u)).count();
            let own: usize = lru.uses.iter().map(|u| if let Use::Own(n) = u { *n as usize } else { 0 }).sum();
            if lru.len() > self.capacity || shared != lru.stamp_of.len() || own != lru.own {
                return Err(format!(
                    "replica {r}'s prefix LRU holds {} shared and {} own blocks, its order {shared} and {own}",
                    lru.stamp_of.len(),
                    lru.own
                ));
            }
            for h in lru.stamp_of.keys() {
                if self.holders.get(h).is_none_or(|m| m & (1 << r) == 0) {
                    return Err(format!("replica {r}'s prefix LRU and the holders disagree on block {h:#x}"));
                }
            }
            held += lru.stamp_of.len();
        }
        let bits: usize = self.holders.values().map(|m| m.count_ones() as usize).sum();
        if bits != held {
            return Err(format!("the prefix index lists {bits} holdings, its LRUs {held}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(h: &[u64]) -> PromptHashes {
        PromptHashes { shared: h.to_vec(), own: 0 }
    }

    #[test]
    fn the_walk_stops_at_the_first_block_no_replica_holds() {
        let mut ix = ApproximatePrefixIndex::new(3);
        ix.insert(0, &shared(&[1, 2, 3]));
        ix.insert(2, &shared(&[1, 2]));
        assert_eq!(ix.matches(&shared(&[1, 2, 3, 4])), vec![3, 0, 2]);
        assert_eq!(ix.matches(&shared(&[9, 1, 2])), vec![0, 0, 0]);
        ix.check_invariants().unwrap();
    }

    #[test]
    fn the_oldest_block_goes_first_and_a_reused_one_is_fresh_again() {
        let mut ix = ApproximatePrefixIndex::with_capacity(1, 3);
        ix.insert(0, &shared(&[1, 2, 3]));
        ix.insert(0, &shared(&[1]));
        ix.insert(0, &shared(&[4]));
        assert_eq!(ix.matches(&shared(&[1])), vec![1]);
        assert_eq!(ix.matches(&shared(&[2])), vec![0]);
        assert_eq!(ix.len(0), 3);
        ix.check_invariants().unwrap();
    }

    #[test]
    fn own_blocks_take_room_in_order_and_age_out_as_blocks_would() {
        let mut ix = ApproximatePrefixIndex::with_capacity(1, 4);
        ix.insert(0, &PromptHashes { shared: vec![1], own: 2 });
        ix.insert(0, &PromptHashes { shared: vec![2], own: 0 });
        assert_eq!(ix.len(0), 4);
        // One more block: the oldest, block 1, goes; then two more: the first prompt's own two.
        ix.insert(0, &shared(&[3]));
        assert_eq!(ix.matches(&shared(&[1])), vec![0]);
        ix.insert(0, &PromptHashes { shared: vec![], own: 1 });
        assert_eq!(ix.matches(&shared(&[2])), vec![1]);
        assert_eq!(ix.len(0), 4);
        ix.insert(0, &PromptHashes { shared: vec![], own: 3 });
        assert_eq!(ix.matches(&shared(&[2])), vec![0]);
        assert_eq!(ix.matches(&shared(&[3])), vec![0]);
        ix.check_invariants().unwrap();
    }
}
