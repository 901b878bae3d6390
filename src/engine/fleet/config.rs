//! How a fleet is set up (`replicas`, `router`): the router's policy and the figures each
//! policy's source uses by default. Always compiled, so every build reads a preset's fleet;
//! the fleet itself (`Fleet`, the router) is the cargo feature `fleet`.

use serde::{Deserialize, Serialize};

/// The most replicas a fleet may have (the approximate prefix index keeps a 64-bit set of
/// replicas per block).
pub const MAX_REPLICAS: u32 = 64;

/// Which rule picks a request's replica (docs/ROUTING.md names each rule's source).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouterPolicy {
    /// Each request to the next replica in turn.
    #[default]
    RoundRobin,
    /// llm-d's random picker: a replica drawn uniformly.
    Random,
    /// llm-d's load-aware profile: the queue and KV-utilisation scorers.
    LeastLoaded,
    /// llm-d's default profile: queue, KV-utilisation and prefix-cache scorers; the prefix
    /// index approximate (what the router sent where) or precise (what each replica holds).
    PrefixAware,
    /// NVIDIA Dynamo's KV router: the lowest overlap weight × prefill blocks + decode blocks,
    /// overlaps read from each replica's prefix cache.
    KvAware,
    /// SGLang's router, cache-aware: the least loaded replica when the load is out of balance,
    /// else the replica holding the longest match of the prompt in the router's tree when it
    /// covers more than 0.3 of it, else the replica with the smallest tree.
    CacheAware,
}

impl RouterPolicy {
    pub const ALL: [RouterPolicy; 6] = [
        RouterPolicy::RoundRobin,
        RouterPolicy::Random,
        RouterPolicy::LeastLoaded,
        RouterPolicy::PrefixAware,
        RouterPolicy::KvAware,
        RouterPolicy::CacheAware,
    ];

    /// The preset's name of the policy.
    pub fn name(self) -> &'static str {
        match self {
            RouterPolicy::RoundRobin => "round_robin",
            RouterPolicy::Random => "random",
            RouterPolicy::LeastLoaded => "least_loaded",
            RouterPolicy::PrefixAware => "prefix_aware",
            RouterPolicy::KvAware => "kv_aware",
            RouterPolicy::CacheAware => "cache_aware",
        }
    }

    pub fn from_name(name: &str) -> Option<RouterPolicy> {
        RouterPolicy::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether a choice reads the replicas' state (their queues, KV, caches) at the arrival, so
    /// the replicas must have run up to it; round robin and random choose from the arrivals alone.
    pub fn reads_replicas(self) -> bool {
        !matches!(self, RouterPolicy::RoundRobin | RouterPolicy::Random)
    }
}

/// Where the prefix-cache scorer learns which replica holds a prompt's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixIndex {
    /// llm-d's `prefix-cache-scorer`: the blocks of every prompt the router sent to a replica, in
    /// an LRU per replica (31,250 blocks of 16 tokens, 256 blocks of a prompt at most).
    #[default]
    Approximate,
    /// llm-d's `precise-prefix-cache-scorer`: the blocks each replica's prefix cache holds now
    /// (vLLM's KV events), scored min–max over the replicas.
    Precise,
}

impl PrefixIndex {
    pub fn name(self) -> &'static str {
        match self {
            PrefixIndex::Approximate => "approximate",
            PrefixIndex::Precise => "precise",
        }
    }

    pub fn from_name(name: &str) -> Option<PrefixIndex> {
        [PrefixIndex::Approximate, PrefixIndex::Precise].into_iter().find(|p| p.name() == name)
    }
}

/// The weights of llm-d's scorers: each scorer's score in [0, 1] times its weight, summed
/// (Gateway API Inference Extension's `default-plugins.yaml`: queue 2, KV utilisation 2,
/// prefix 3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScorerWeights {
    pub queue: f64,
    pub kv_cache: f64,
    pub prefix: f64,
}

impl Default for ScorerWeights {
    fn default() -> Self {
        ScorerWeights { queue: 2.0, kv_cache: 2.0, prefix: 3.0 }
    }
}

/// The router in front of a fleet's replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouterConfig {
    pub policy: RouterPolicy,
    /// `least_loaded` and `prefix_aware` (the prefix weight only there).
    pub weights: ScorerWeights,
    /// `prefix_aware`'s index.
    pub prefix_index: PrefixIndex,
    /// `kv_aware`: Dynamo's `overlap_score_weight` (1.0 by default).
    pub overlap_weight: f64,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            policy: RouterPolicy::default(),
            weights: ScorerWeights::default(),
            prefix_index: PrefixIndex::default(),
            overlap_weight: 1.0,
        }
    }
}
