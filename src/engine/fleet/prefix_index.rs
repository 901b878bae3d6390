//! llm-d's approximate prefix index (`prefix-cache-scorer`, Gateway API Inference Extension's
//! `plugins/multi/prefix`): the router remembers the blocks of every prompt it sent to a replica,
//! in an LRU per replica, and scores a new prompt by how many of its leading blocks each replica
//! was sent. It learns nothing from the replicas themselves, so it can be wrong both ways: a
//! block evicted on the GPU still counts, a block another route filled does not.
//!
//! Blocks are 16 tokens (llm-d's `blockSizeTokens`), chained as vLLM chains its block hashes; a
//! prompt counts its first 256 full blocks (`maxPrefixBlocksToMatch`); each replica's LRU holds
//! 31,250 blocks (`lruCapacityPerServer`). Ordered maps only, so no hash order reaches a choice.

use std::collections::BTreeMap;

use crate::engine::alloc::TokenIdentity;
use crate::engine::workload::{prefix_key, RequestSpec};

/// Tokens per block of the index (llm-d's `blockSizeTokens`).
pub const INDEX_BLOCK_TOKENS: u32 = 16;
/// Blocks of a prompt the index hashes at most (llm-d's `maxPrefixBlocksToMatch`).
pub const MAX_PREFIX_BLOCKS: usize = 256;
/// Blocks each replica's LRU keeps (llm-d's `lruCapacityPerServer`).
pub const LRU_BLOCKS_PER_REPLICA: usize = 31_250;

/// The prompt's chained block hashes as the router sees them: its full 16-token blocks, at most
/// 256. `request` is the fleet's id, which names the prompt's own tokens.
pub fn prompt_hashes(spec: &RequestSpec, request: u32) -> Vec<u64> {
    let identity = router_identity(spec, request);
    let full = (spec.prompt_tokens / INDEX_BLOCK_TOKENS) as usize;
    let mut parent = 0;
    (0..full.min(MAX_PREFIX_BLOCKS) as u32)
        .map(|b| {
            parent = identity.block_hash(parent, b, INDEX_BLOCK_TOKENS);
            parent
        })
        .collect()
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

/// One replica's LRU of block hashes.
#[derive(Clone, Debug, Default)]
struct Lru {
    stamp_of: BTreeMap<u64, u64>,
    by_stamp: BTreeMap<u64, u64>,
}

/// The router's index: which replicas were sent each block, each replica's blocks in an LRU.
#[derive(Clone, Debug)]
pub struct ApproximatePrefixIndex {
    /// Block hash → the replicas whose LRU holds it (bit `r`).
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
    /// in order, each counted for every replica holding it, until one no replica holds.
    pub fn matches(&self, hashes: &[u64]) -> Vec<u32> {
        let mut counts = vec![0u32; self.lrus.len()];
        for h in hashes {
            let Some(&mask) = self.holders.get(h) else { break };
            let mut m = mask;
            while m != 0 {
                counts[m.trailing_zeros() as usize] += 1;
                m &= m - 1;
            }
        }
        counts
    }

    /// The router sent these blocks to `replica`: each becomes its freshest, the oldest evicted
    /// past the capacity.
    pub fn insert(&mut self, replica: u32, hashes: &[u64]) {
        let r = replica as usize;
        let bit = 1u64 << replica;
        for &h in hashes {
            let stamp = self.next_stamp;
            self.next_stamp += 1;
            let lru = &mut self.lrus[r];
            if let Some(old) = lru.stamp_of.insert(h, stamp) {
                lru.by_stamp.remove(&old);
            } else {
                *self.holders.entry(h).or_insert(0) |= bit;
            }
            lru.by_stamp.insert(stamp, h);
            if lru.stamp_of.len() > self.capacity {
                let (_, evicted) = lru.by_stamp.pop_first().expect("an LRU past its capacity holds blocks");
                lru.stamp_of.remove(&evicted);
                if let Some(mask) = self.holders.get_mut(&evicted) {
                    *mask &= !bit;
                    if *mask == 0 {
                        self.holders.remove(&evicted);
                    }
                }
            }
        }
    }

    /// Blocks replica `r`'s LRU holds.
    pub fn len(&self, r: u32) -> usize {
        self.lrus[r as usize].stamp_of.len()
    }

    /// Every replica's LRU within its capacity, and the holders' sets exactly the LRUs' blocks.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut held = 0usize;
        for (r, lru) in self.lrus.iter().enumerate() {
            if lru.stamp_of.len() > self.capacity || lru.stamp_of.len() != lru.by_stamp.len() {
                return Err(format!(
                    "replica {r}'s prefix LRU holds {} blocks, {} stamps",
                    lru.stamp_of.len(),
                    lru.by_stamp.len()
                ));
            }
            for (h, s) in &lru.stamp_of {
                if lru.by_stamp.get(s) != Some(h) || self.holders.get(h).is_none_or(|m| m & (1 << r) == 0) {
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

    #[test]
    fn the_walk_stops_at_the_first_block_no_replica_holds() {
        let mut ix = ApproximatePrefixIndex::new(3);
        ix.insert(0, &[1, 2, 3]);
        ix.insert(2, &[1, 2]);
        assert_eq!(ix.matches(&[1, 2, 3, 4]), vec![3, 0, 2]);
        assert_eq!(ix.matches(&[9, 1, 2]), vec![0, 0, 0]);
        ix.check_invariants().unwrap();
    }

    #[test]
    fn the_oldest_block_goes_first_and_a_reused_one_is_fresh_again() {
        let mut ix = ApproximatePrefixIndex::with_capacity(1, 3);
        ix.insert(0, &[1, 2, 3]);
        ix.insert(0, &[1]);
        ix.insert(0, &[4]);
        assert_eq!(ix.matches(&[1]), vec![1]);
        assert_eq!(ix.matches(&[2]), vec![0]);
        assert_eq!(ix.len(0), 3);
        ix.check_invariants().unwrap();
    }
}
