//! `kvlab run`'s and `kvlab sweep`'s fleet: `--replicas`, `--router` and the router's figures over the preset's, the fleet's run, and the
//! summary's lines on the router and each replica (docs/ROUTING.md).

use clap::Args;

use crate::engine::fleet::{Fleet, PrefixIndex, RouterPolicy, ScorerWeights};
use crate::engine::metrics::FleetReport;
use crate::engine::{ConfigError, Report, SimConfig, Simulation, StepPoint};

/// The fleet's flags, over the preset's `replicas` and `router` (docs/ROUTING.md).
#[derive(Args, Debug, Default)]
pub struct FleetFlags {
    /// Copies of the setup behind a router (the preset's `replicas`).
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// The router's policy (the preset's `router.policy`): round_robin, random, least_loaded,
    /// prefix_aware or kv_aware.
    #[arg(long, value_name = "POLICY")]
    pub router: Option<String>,
    /// llm-d's scorer weights, queue,kv_cache,prefix (the preset's `router.weights`; 2,2,3).
    #[arg(long, value_name = "Q,K,P")]
    pub router_weights: Option<String>,
    /// prefix_aware's index: approximate (what the router sent where) or precise (the replicas'
    /// caches).
    #[arg(long, value_name = "INDEX")]
    pub prefix_index: Option<String>,
}

impl FleetFlags {
    /// The flags in place of the preset's fields, checked as the preset's would be; an error
    /// names the flag.
    pub fn apply(&self, config: &mut SimConfig) -> Result<(), String> {
        if let Some(name) = &self.router {
            config.router.policy = RouterPolicy::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = RouterPolicy::ALL.iter().map(|p| p.name()).collect();
                format!("--router {name}: not a policy; use one of {}", names.join(", "))
            })?;
        }
        if let Some(name) = &self.prefix_index {
            config.router.prefix_index = PrefixIndex::from_name(name)
                .ok_or_else(|| format!("--prefix-index {name}: use approximate or precise"))?;
        }
        if let Some(text) = &self.router_weights {
            let w: Vec<f64> =
                text.split(',').map(|x| x.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| {
                    format!("--router-weights {text}: three numbers, queue,kv_cache,prefix (llm-d's are 2,2,3)")
                })?;
            let [queue, kv_cache, prefix] = w[..] else {
                return Err(format!(
                    "--router-weights {text}: three numbers, queue,kv_cache,prefix (llm-d's are 2,2,3)"
                ));
            };
            config.router.weights = ScorerWeights { queue, kv_cache, prefix };
        }
        if let Some(n) = self.replicas {
            config.replicas = n;
        }
        config.validate_fields().map_err(|e| {
            let flag = match e.field.as_str() {
                "replicas" => self.replicas.map(|n| format!("--replicas {n}")),
                f if f.starts_with("router.weights") => {
                    self.router_weights.as_ref().map(|w| format!("--router-weights {w}"))
                }
                _ => None,
            };
            match flag {
                Some(flag) => format!("{flag}: {}", e.message),
                None => e.to_string(),
            }
        })
    }
}

/// Each replica's series, named.
pub type NamedSeries = Vec<(String, Vec<StepPoint>)>;

/// A configuration's run to its end, one replica or a fleet: the report and each replica's series.
pub fn run_to_end(config: SimConfig) -> Result<(Report, NamedSeries), ConfigError> {
    if config.replicas > 1 {
        let mut fleet = Fleet::new(config)?;
        let report = fleet.run_to_end();
        let series = fleet.replicas().iter().enumerate().map(|(i, r)| (format!("replica {i}"), r.series().to_vec()));
        return Ok((report, series.collect()));
    }
    let mut sim = Simulation::new(config)?;
    let report = sim.run_to_end();
    let series = vec![(report.allocator.clone(), sim.series().to_vec())];
    Ok((report, series))
}

/// The router and a line per replica.
pub fn fleet_lines(f: &FleetReport) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let mut s = format!(
        "fleet: {} replicas behind {} ({}); the busiest got {:.2}x the mean's requests\n",
        f.replicas, f.policy, f.rule, f.imbalance
    );
    for (i, r) in f.per_replica.iter().enumerate() {
        s += &format!(
            "  replica {i}: {} requests, {} finished, {} waiting at the end; prefix hits {}; TTFT p50 {:.0} ms, p95 {:.0} ms; {} of allocated KV live; {:.1} running; {} preemptions\n",
            r.requests,
            r.finished,
            r.waiting_at_end,
            pct(r.prefix_cache_hit_rate),
            r.ttft_p50,
            r.ttft_p95,
            pct(r.kv_utilization_mean),
            r.running_mean,
            r.preemptions
        );
    }
    s
}
