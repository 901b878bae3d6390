//! A fleet: `replicas` copies of one configuration behind a router (`router`), each replica its
//! own engine, pool and clock, as a vLLM deployment behind llm-d's inference scheduler or
//! Dynamo's KV router runs (docs/ROUTING.md).
//!
//! The fleet draws the workload once, at the fleet's rate, and routes each request at its
//! arrival. A policy that reads the replicas (queues, KV usage, prefix caches) sees each as it
//! stands once it has run up to that arrival (a replica mid-step shows the state its last step
//! left, as a real server's metrics do); round robin and random routing read nothing, so every
//! request is routed first and the replicas then run apart, on rayon's threads natively. Either
//! way each replica is an ordinary `Simulation`, fed its requests in order
//! (`Simulation::feed`), and the routing draws from the router's own seeded stream: one seed,
//! one result, bit for bit, however many threads.
//!
//! `config.rs` (always compiled) is the preset's side; the rest is the cargo feature `fleet`.

pub mod config;
#[cfg(feature = "fleet")]
pub mod prefix_index;
#[cfg(feature = "fleet")]
mod report;
#[cfg(feature = "fleet")]
pub mod router;
#[cfg(feature = "fleet")]
mod run;
#[cfg(feature = "fleet")]
mod series;

pub use config::{PrefixIndex, RouterConfig, RouterPolicy, ScorerWeights, MAX_REPLICAS};

#[cfg(feature = "fleet")]
pub use report::{imbalance, rule};
#[cfg(feature = "fleet")]
pub use router::Route;
#[cfg(feature = "fleet")]
pub use run::Fleet;

/// A configuration run to its end: one replica, or (with the `fleet` feature) a fleet behind its
/// router; the report either way.
pub fn run_to_end(
    config: crate::engine::config::SimConfig,
) -> Result<crate::engine::metrics::Report, crate::engine::config::ConfigError> {
    #[cfg(feature = "fleet")]
    if config.replicas > 1 {
        return Ok(Fleet::new(config)?.run_to_end());
    }
    Ok(crate::engine::sim::Simulation::new(config)?.run_to_end())
}
