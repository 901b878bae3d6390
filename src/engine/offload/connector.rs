//! The scheduler's side of vLLM's `OffloadingConnector`
//! (`vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py`, 0.33.0): what the
//! host tier holds for a request being admitted, the loads it starts, the stores each step
//! makes, and when the host link finishes each transfer.
//!
//! - **Lookup** (`get_num_new_matched_tokens`): a waiting request with nothing computed, after
//!   its GPU prefix-cache hit, scans the host tier from the first block past that hit; the run
//!   of consecutive chunks held is the hit, in tokens, up to the request's length. A chunk of
//!   the run still being stored, or being loaded by another request, delays the request a step
//!   ([`OffloadingConnector::lookup`] answers None).
//! - **Loads** are asynchronous, as vLLM runs them by default: the request is given its GPU
//!   blocks at once, computes nothing in that step and waits in the queue
//!   (`WAITING_FOR_REMOTE_KVS`); the load starts on the host link when that step's forward pass
//!   ends, behind the loads before it, and once it is done the request is admitted with the
//!   loaded tokens computed, its blocks entered in the GPU prefix cache then.
//! - **Stores** are write-through: each step, every scheduled request offers the full blocks of
//!   its prompt computed so far (`offload_prompt_only`); chunks held already are not written
//!   again. A store starts when the step ends, behind the stores before it, and its chunks are
//!   readable once it is done. GPU blocks are freed as usual: the host holds a copy.
//!
//! A chunk is one GPU block; one chunk's bytes cross the link at the GPU catalogue's host-link
//! rate, each tensor-parallel rank its shard in parallel.

use std::collections::{BTreeMap, VecDeque};

use super::manager::{ChunkLookup, CpuOffloadingManager};
use super::stats::OffloadStats;
use crate::engine::alloc::ids::chain_hash;
use crate::engine::alloc::{RequestId, SeqId, TokenIdentity};
use crate::engine::memory_map::MemoryMap;

#[derive(Clone, Debug, Default)]
struct RequestState {
    /// The chained hashes of the prompt's full blocks (the chunks' keys).
    hashes: Vec<u64>,
    /// The next prompt block to offer for storing.
    next_stored: u32,
    /// Blocks stored, reused or loaded: (position, key), for the finish's re-ranking.
    accessed: Vec<(u32, u64)>,
}

#[derive(Clone, Debug)]
struct LoadJob {
    /// The request and sample loading.
    owner: (RequestId, u32),
    keys: Vec<(u64, u32)>,
    /// When the host link finishes it; None until the step that started it has ended.
    done_us: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct OffloadingConnector {
    manager: CpuOffloadingManager,
    block_size: u32,
    /// One chunk's bytes, every layer and rank.
    chunk_bytes: u64,
    /// Microseconds one chunk takes over the host link.
    chunk_us: f64,
    requests: BTreeMap<SeqId, RequestState>,
    loads: BTreeMap<SeqId, LoadJob>,
    /// Loads started in this step, in order, timed when it ends.
    new_loads: Vec<SeqId>,
    /// Stores planned in this step, timed when it ends.
    new_stores: Vec<Vec<u64>>,
    /// Stores on the link, in completion order: (done, chunks).
    stores_in_flight: VecDeque<(u64, Vec<u64>)>,
    store_link_free_us: u64,
    load_link_free_us: u64,
    stats: OffloadStats,
}

impl OffloadingConnector {
    /// A tier of `capacity` chunks of `chunk_bytes` each, moved at `link_bytes_per_us` per
    /// direction by each of `tensor_parallel_size` ranks.
    pub fn new(
        capacity: u32,
        block_size: u32,
        chunk_bytes: u64,
        link_bytes_per_us: f64,
        tensor_parallel_size: u32,
    ) -> Self {
        OffloadingConnector {
            manager: CpuOffloadingManager::new(capacity),
            block_size,
            chunk_bytes,
            chunk_us: chunk_bytes as f64 / f64::from(tensor_parallel_size.max(1)) / link_bytes_per_us,
            requests: BTreeMap::new(),
            loads: BTreeMap::new(),
            new_loads: Vec::new(),
            new_stores: Vec::new(),
            stores_in_flight: VecDeque::new(),
            store_link_free_us: 0,
            load_link_free_us: 0,
            stats: OffloadStats { capacity_chunks: capacity, ..OffloadStats::default() },
        }
    }

    pub fn stats(&self) -> OffloadStats {
        OffloadStats { resident_chunks: self.manager.len() as u32, ..self.stats }
    }

    pub fn manager(&self) -> &CpuOffloadingManager {
        &self.manager
    }

    /// The host buffer in at most `max_cells` cells (`CpuOffloadingManager::host_map`).
    pub fn host_map(&self, max_cells: usize) -> MemoryMap {
        self.manager.host_map(self.block_size, max_cells)
    }

    fn state(&mut self, seq: SeqId, identity: &TokenIdentity) -> &mut RequestState {
        let bs = self.block_size;
        let st = self.requests.entry(seq).or_default();
        let full = identity.prompt_tokens / bs;
        if st.hashes.len() < full as usize {
            let mut parent = st.hashes.last().copied().unwrap_or(0);
            for b in st.hashes.len() as u32..full {
                parent = chain_hash(parent, identity.block_content(b, bs), bs);
                st.hashes.push(parent);
            }
        }
        st
    }

    /// Tokens the host tier holds for `seq` past its GPU hit of `gpu_hit_tokens` (block-aligned),
    /// up to `num_tokens`: 0 for none, None when a chunk of the run is still being stored or is
    /// being loaded for another request (the request waits a step).
    pub fn lookup(
        &mut self,
        seq: SeqId,
        identity: &TokenIdentity,
        gpu_hit_tokens: u32,
        num_tokens: u32,
    ) -> Option<u32> {
        let bs = self.block_size;
        let start = gpu_hit_tokens / bs;
        let hashes = std::mem::take(&mut self.state(seq, identity).hashes);
        let end = (num_tokens / bs).min(hashes.len() as u32);
        let (mut hits, mut delayed) = (0u32, false);
        for &key in hashes.get(start as usize..end.max(start) as usize).unwrap_or_default() {
            match self.manager.lookup(key) {
                ChunkLookup::Miss => break,
                ChunkLookup::Pending => delayed = true,
                ChunkLookup::Hit => delayed |= self.manager.is_loading(key),
            }
            hits += 1;
        }
        self.requests.get_mut(&seq).expect("state made above").hashes = hashes;
        if delayed {
            return None;
        }
        Some(hits * bs)
    }

    /// `seq` (sample `owner.1` of request `owner.0`) is admitted after a lookup that found
    /// `external` tokens (0: none) past its GPU hit: counts the lookup (`queries`: the tokens the
    /// GPU did not hold) and starts the load. A request with no load offers its whole prompt for
    /// storing again (chunks held already only count as reused); one with a load offers the
    /// blocks after it.
    pub fn admitted(
        &mut self,
        seq: SeqId,
        owner: (RequestId, u32),
        gpu_hit_tokens: u32,
        external: u32,
        num_tokens: u32,
        preempted_before: bool,
    ) {
        let queries = u64::from(num_tokens - gpu_hit_tokens);
        let (q, h) = if preempted_before {
            (&mut self.stats.preempted_queries, &mut self.stats.preempted_hits)
        } else {
            (&mut self.stats.queries, &mut self.stats.hits)
        };
        if queries > 0 {
            *q += queries;
            *h += u64::from(external);
        }
        let bs = self.block_size;
        let st = self.requests.get_mut(&seq).expect("a lookup came first");
        if external == 0 {
            st.next_stored = 0;
            return;
        }
        let (start, end) = (gpu_hit_tokens / bs, (gpu_hit_tokens + external) / bs);
        let keys: Vec<(u64, u32)> = (start..end).map(|b| (st.hashes[b as usize], b)).collect();
        st.next_stored = end;
        st.accessed.extend(keys.iter().map(|&(k, b)| (b, k)));
        self.manager.prepare_load(seq, &keys);
        self.stats.loads += 1;
        self.stats.loaded_bytes += keys.len() as u64 * self.chunk_bytes;
        self.loads.insert(seq, LoadJob { owner, keys, done_us: None });
        self.new_loads.push(seq);
    }

    /// `seq`'s load is in flight (its request waits).
    pub fn is_loading(&self, seq: SeqId) -> bool {
        self.loads.contains_key(&seq)
    }

    /// Requests whose load is in flight.
    pub fn num_loading(&self) -> usize {
        self.loads.len()
    }

    /// When the next transfer in flight finishes, if one is timed.
    pub fn next_done_us(&self) -> Option<u64> {
        let load = self.loads.values().filter_map(|j| j.done_us).min();
        let store = self.stores_in_flight.front().map(|s| s.0);
        load.into_iter().chain(store).min()
    }

    /// `seq` (of request `owner`) computed its first `computed` tokens by the end of this step:
    /// the full blocks of its prompt among them not offered yet are offered for storing.
    pub fn offer_stores(&mut self, seq: SeqId, owner: RequestId, identity: &TokenIdentity, computed: u32) {
        let bs = self.block_size;
        let storable = computed.min(identity.prompt_tokens) / bs;
        let st = self.state(seq, identity);
        if st.next_stored >= storable {
            return;
        }
        let keys: Vec<(u64, u32)> = (st.next_stored..storable).map(|b| (st.hashes[b as usize], b)).collect();
        let Some(stored) = self.manager.prepare_store(seq, owner, &keys) else {
            self.stats.store_refusals += 1;
            return;
        };
        let st = self.requests.get_mut(&seq).expect("state made above");
        st.next_stored = storable;
        st.accessed.extend(keys.iter().map(|&(k, b)| (b, k)));
        self.stats.stored_bytes += stored.len() as u64 * self.chunk_bytes;
        if !stored.is_empty() {
            self.new_stores.push(stored.into_iter().map(|(k, _)| k).collect());
        }
    }

    /// The step that started the new transfers ended at `end_us`: each goes on its link then,
    /// behind the transfers before it in the same direction.
    pub fn end_step(&mut self, end_us: u64) {
        for seq in std::mem::take(&mut self.new_loads) {
            let job = self.loads.get_mut(&seq).expect("a new load is in flight");
            let start = end_us.max(self.load_link_free_us);
            let done = start + (job.keys.len() as f64 * self.chunk_us).ceil() as u64;
            job.done_us = Some(done);
            self.load_link_free_us = done;
        }
        for keys in std::mem::take(&mut self.new_stores) {
            let start = end_us.max(self.store_link_free_us);
            let done = start + (keys.len() as f64 * self.chunk_us).ceil() as u64;
            self.store_link_free_us = done;
            self.stores_in_flight.push_back((done, keys));
        }
    }

    /// Transfers done by `now_us` complete: stored chunks become readable, loaded ones are
    /// unpinned. Returns the sequences whose load is done, with their request and sample, in
    /// sequence order.
    pub fn poll(&mut self, now_us: u64) -> Vec<(SeqId, RequestId, u32)> {
        while self.stores_in_flight.front().is_some_and(|s| s.0 <= now_us) {
            let (_, keys) = self.stores_in_flight.pop_front().expect("checked above");
            for k in keys {
                self.manager.complete_store(k);
            }
        }
        let done: Vec<SeqId> =
            self.loads.iter().filter(|(_, j)| j.done_us.is_some_and(|d| d <= now_us)).map(|(&s, _)| s).collect();
        done.into_iter()
            .map(|seq| {
                let job = self.loads.remove(&seq).expect("listed above");
                self.manager.complete_load(&job.keys);
                (seq, job.owner.0, job.owner.1)
            })
            .collect()
    }

    /// `seq` ended (finished or refused): the chunks it touched take fresh ranks, head freshest.
    pub fn request_finished(&mut self, seq: SeqId) {
        let Some(mut st) = self.requests.remove(&seq) else { return };
        st.accessed.sort_unstable();
        st.accessed.dedup();
        let head_first: Vec<u64> = st.accessed.iter().map(|&(_, k)| k).collect();
        self.manager.on_request_finished(seq, &head_first);
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        self.manager.check_invariants()
    }
}
