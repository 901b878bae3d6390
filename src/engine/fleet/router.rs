//! The router: which replica each request goes to, chosen at its arrival from what the policy's
//! source reads there (docs/ROUTING.md).
//!
//! - `round_robin`: the next replica in turn.
//! - `random`: llm-d's `random-picker`, one replica drawn uniformly.
//! - `least_loaded`: llm-d's load-aware profile, the queue scorer (waiting requests, min–max over
//!   the replicas: `(max − q) / (max − min)`, 1 where all are equal) and the KV-cache
//!   utilisation scorer (`1 − usage`), weighted and summed; the highest score wins.
//! - `prefix_aware`: llm-d's default profile, those two and the prefix-cache scorer: the share of
//!   the prompt's 16-token blocks a replica holds, from the router's approximate index
//!   (`prefix_index.rs`) or, `precise`, from each replica's prefix cache (the blocks it would hit
//!   now, min–max over the replicas that hold any).
//! - `kv_aware`: NVIDIA Dynamo's KV router: the lowest `overlap_weight × prefill blocks + decode
//!   blocks`, where prefill blocks are the tokens the replica has still to prefill (this
//!   request's uncached ones and those of the requests routed there without a first token yet)
//!   over the block size, and decode blocks this request's uncached blocks plus the blocks the
//!   replica holds for its requests.
//!
//! - `cache_aware`: SGLang's router (`policies/cache_aware.rs`): when the load (requests in
//!   flight, the router's own count) is out of balance (the busiest has more than 64 above the
//!   idlest and more than 1.5 times it), the least loaded replica; else, when some replica's tree
//!   holds more than 0.3 of the prompt, one holding its longest match; else the replica with the
//!   smallest tree. The chosen replica's tree then takes the prompt. The tree is the approximate
//!   index at SGLang's size (2^26 characters a worker, 4 to a token: 1,048,576 blocks).
//!
//! llm-d's picker shuffles the replicas before taking the best score, so ties go to one drawn
//! uniformly; Dynamo draws among its tied lowest costs too. The draws come from the router's own
//! ChaCha8 stream, seeded by the preset: one seed, one routing.

use super::config::{PrefixIndex, RouterConfig, RouterPolicy};
use super::prefix_index::{prompt_hashes, router_identity, ApproximatePrefixIndex, INDEX_BLOCK_TOKENS};
use crate::engine::alloc::splitmix64;
use crate::engine::request::GroupStatus;
use crate::engine::sim::Simulation;
use crate::engine::workload::{RequestSpec, WorkloadRng};

/// SGLang's `cache_threshold`: the share of a prompt a tree must match to win it.
pub const SGLANG_CACHE_THRESHOLD: f64 = 0.3;
/// SGLang's `balance_abs_threshold` and `balance_rel_threshold`.
pub const SGLANG_BALANCE_ABS: usize = 64;
pub const SGLANG_BALANCE_REL: f64 = 1.5;
/// SGLang's `max_tree_size` (2^26 characters a worker) in 16-token blocks of 4 characters a token.
pub const SGLANG_TREE_BLOCKS: usize = (1 << 26) / (4 * INDEX_BLOCK_TOKENS as usize);

/// The router's state: its turn, its random stream, its prefix index and, for `kv_aware`, the
/// prefills it sent each replica that have not started.
#[derive(Clone, Debug)]
pub struct Router {
    config: RouterConfig,
    turn: u32,
    rng: WorkloadRng,
    index: Option<ApproximatePrefixIndex>,
    /// Per replica: (its id there, tokens it had to prefill when routed) of each request routed
    /// there with no first token yet (Dynamo's active prefill tokens).
    prefilling: Vec<Vec<(u32, u32)>>,
}

/// Where the router sent a request: the replica and the request's id there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub replica: u32,
    pub local: u32,
}

impl Router {
    pub fn new(config: RouterConfig, replicas: u32, seed: u64) -> Router {
        let index = match (config.policy, config.prefix_index) {
            (RouterPolicy::PrefixAware, PrefixIndex::Approximate) => Some(ApproximatePrefixIndex::new(replicas)),
            (RouterPolicy::CacheAware, _) => Some(ApproximatePrefixIndex::with_capacity(replicas, SGLANG_TREE_BLOCKS)),
            _ => None,
        };
        Router {
            config,
            turn: 0,
            rng: WorkloadRng::new(splitmix64(seed ^ 0x726f_7574_6572)),
            index,
            prefilling: vec![Vec::new(); replicas as usize],
        }
    }

    /// The replica request `request` (the fleet's id) goes to. The replicas have run to its
    /// arrival where the policy reads them (`RouterPolicy::reads_replicas`).
    pub fn route(&mut self, spec: &RequestSpec, request: u32, replicas: &[Simulation]) -> u32 {
        let n = replicas.len() as u32;
        match self.config.policy {
            RouterPolicy::RoundRobin => {
                let replica = self.turn % n;
                self.turn = (self.turn + 1) % n;
                replica
            }
            RouterPolicy::Random => self.draw(n),
            RouterPolicy::LeastLoaded => self.best(&load_scores(&self.config, replicas), true),
            RouterPolicy::PrefixAware => {
                let hashes = self.index.as_ref().map(|_| prompt_hashes(spec, request));
                let prefix = match (&self.index, &hashes) {
                    (Some(ix), Some(h)) if !h.is_empty() => {
                        ix.matches(h).into_iter().map(|c| f64::from(c) / h.len() as f64).collect()
                    }
                    (Some(_), _) => vec![0.0; replicas.len()],
                    (None, _) => precise_prefix_scores(spec, replicas),
                };
                let w = self.config.weights.prefix;
                let scores: Vec<f64> =
                    load_scores(&self.config, replicas).iter().zip(prefix).map(|(l, p)| l + w * p).collect();
                let replica = self.best(&scores, true);
                if let (Some(ix), Some(h)) = (&mut self.index, &hashes) {
                    ix.insert(replica, h);
                }
                replica
            }
            RouterPolicy::KvAware => {
                let (costs, new_tokens) = self.kv_costs(spec, replicas);
                let replica = self.best(&costs, false);
                // The request joins the replica's active prefills under the id it gets there.
                let local = replicas[replica as usize].requests().len() as u32;
                self.prefilling[replica as usize].push((local, new_tokens[replica as usize]));
                replica
            }
            RouterPolicy::CacheAware => self.cache_aware(spec, request, replicas),
        }
    }

    /// SGLang's cache-aware choice, the prompt then in the chosen replica's tree.
    fn cache_aware(&mut self, spec: &RequestSpec, request: u32, replicas: &[Simulation]) -> u32 {
        let loads: Vec<f64> = replicas.iter().map(|s| s.in_flight() as f64).collect();
        let (lo, hi) = (loads.iter().copied().fold(f64::MAX, f64::min), loads.iter().copied().fold(0.0, f64::max));
        let hashes = prompt_hashes(spec, request);
        let ix = self.index.as_ref().expect("cache_aware keeps its tree");
        let imbalanced = hi - lo > SGLANG_BALANCE_ABS as f64 && hi > lo * SGLANG_BALANCE_REL;
        let (depth, holders) = ix.deepest(&hashes);
        let matched = (depth * INDEX_BLOCK_TOKENS).min(spec.prompt_tokens);
        let replica = if imbalanced {
            self.best(&loads, false)
        } else if f64::from(matched) > SGLANG_CACHE_THRESHOLD * f64::from(spec.prompt_tokens.max(1)) {
            let held: Vec<u32> = (0..replicas.len() as u32).filter(|&r| holders & (1 << r) != 0).collect();
            held[self.draw(held.len() as u32) as usize]
        } else {
            let sizes: Vec<f64> = (0..replicas.len() as u32).map(|r| ix.len(r) as f64).collect();
            self.best(&sizes, false)
        };
        self.index.as_mut().expect("cache_aware keeps its tree").insert(replica, &hashes);
        replica
    }

    /// Dynamo's cost of each replica, and the prompt tokens the request would prefill on each.
    fn kv_costs(&mut self, spec: &RequestSpec, replicas: &[Simulation]) -> (Vec<f64>, Vec<u32>) {
        let w = self.config.overlap_weight;
        replicas
            .iter()
            .zip(&mut self.prefilling)
            .map(|(sim, pending)| {
                // A request leaves the active prefills with its first token (or when refused).
                pending.retain(|&(local, _)| {
                    sim.groups().get(local as usize).is_none_or(|g| {
                        g.first_token_us.is_none() && !matches!(g.status, GroupStatus::Rejected | GroupStatus::Finished)
                    })
                });
                let bs = sim.kv().block_tokens().max(1) as f64;
                let cached = cached_tokens(spec, sim);
                let new_tokens = spec.prompt_tokens.saturating_sub(cached);
                let active: u64 = pending.iter().map(|&(_, t)| u64::from(t)).sum();
                let prefill_blocks = (f64::from(new_tokens) + active as f64) / bs;
                let request_blocks = (f64::from(spec.prompt_tokens) / bs).ceil() - (f64::from(cached) / bs).floor();
                let decode_blocks = request_blocks.max(0.0) + sim.kv().allocated_tokens() as f64 / bs;
                (w * prefill_blocks + decode_blocks, new_tokens)
            })
            .unzip()
    }

    /// The approximate index's LRUs and holders agree.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.index.as_ref().map_or(Ok(()), ApproximatePrefixIndex::check_invariants)
    }

    /// The best figure's replica (highest or lowest), ties drawn uniformly.
    fn best(&mut self, scores: &[f64], highest: bool) -> u32 {
        let better = |a: f64, b: f64| if highest { a > b } else { a < b };
        let mut top = scores[0];
        for &s in &scores[1..] {
            if better(s, top) {
                top = s;
            }
        }
        let tied: Vec<u32> = (0..scores.len() as u32).filter(|&r| scores[r as usize] == top).collect();
        if tied.len() == 1 {
            tied[0]
        } else {
            tied[self.draw(tied.len() as u32) as usize]
        }
    }

    fn draw(&mut self, n: u32) -> u32 {
        ((self.rng.uniform() * f64::from(n)) as u32).min(n - 1)
    }
}

/// llm-d's queue and KV-utilisation scorers, weighted and summed, per replica.
fn load_scores(config: &RouterConfig, replicas: &[Simulation]) -> Vec<f64> {
    let queues: Vec<usize> = replicas.iter().map(|s| s.scheduler().num_waiting()).collect();
    let (lo, hi) = (queues.iter().copied().min().unwrap_or(0), queues.iter().copied().max().unwrap_or(0));
    replicas
        .iter()
        .zip(&queues)
        .map(|(sim, &q)| {
            let queue = if hi == lo { 1.0 } else { (hi - q) as f64 / (hi - lo) as f64 };
            let capacity = sim.kv().capacity_tokens().max(1) as f64;
            let kv = 1.0 - sim.kv().allocated_tokens() as f64 / capacity;
            config.weights.queue * queue + config.weights.kv_cache * kv
        })
        .collect()
}

/// llm-d's precise prefix scorer: the blocks each replica would hit now, min–max over the
/// replicas that hold any (1 where those are equal), 0 elsewhere.
fn precise_prefix_scores(spec: &RequestSpec, replicas: &[Simulation]) -> Vec<f64> {
    let hits: Vec<u32> = replicas.iter().map(|sim| cached_tokens(spec, sim)).collect();
    let held = hits.iter().copied().filter(|&h| h > 0);
    let (lo, hi) = (held.clone().min().unwrap_or(0), held.max().unwrap_or(0));
    hits.iter()
        .map(|&h| match h {
            0 => 0.0,
            _ if hi == lo => 1.0,
            _ => f64::from(h - lo) / f64::from(hi - lo),
        })
        .collect()
}

/// The prompt tokens `sim`'s GPU prefix cache would give the request now.
fn cached_tokens(spec: &RequestSpec, sim: &Simulation) -> u32 {
    let identity = router_identity(spec, sim.requests().len() as u32);
    sim.kv().computed_blocks(&identity, spec.prompt_tokens).num_tokens
}
