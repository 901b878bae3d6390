//! `kvlab run`'s and `kvlab sweep`'s fleet: `--replicas`, `--router` and the router's figures over the preset's, the fleet's run, and the
//! summary's lines on the router and each replica (docs/ROUTING.md).

use std::path::Path;

use clap::Args;
use serde_json::{json, Value};

use crate::engine::fleet::{Fleet, PrefixIndex, RouterPolicy, ScorerWeights, MAX_REPLICAS};
use crate::engine::metrics::FleetReport;
use crate::engine::sweep::check_horizon_s;
use crate::engine::{ConfigError, Report, SimConfig, Simulation, StepPoint};
use crate::formats::sweep::config_of;

/// The fleet's flags, over the preset's `replicas` and `router` (docs/ROUTING.md).
#[derive(Args, Debug, Default)]
pub struct FleetFlags {
    /// Copies of the setup behind a router (the preset's `replicas`).
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// The router's policy (the preset's `router.policy`): round_robin, random, least_loaded,
    /// prefix_aware, kv_aware or cache_aware.
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
    /// The flags written into a preset's JSON (`kvlab sweep` plans its points from it), checked
    /// against `config`, the preset's configuration, as [`FleetFlags::apply`] checks them.
    pub fn patch_preset(&self, preset: &mut Value, config: &SimConfig) -> Result<(), String> {
        let mut checked = config.clone();
        self.apply(&mut checked)?;
        if self.replicas.is_some() {
            preset["replicas"] = json!(checked.replicas);
        }
        if self.router.is_none() && self.router_weights.is_none() && self.prefix_index.is_none() {
            return Ok(());
        }
        let r = checked.router;
        let mut router = preset.get("router").cloned().unwrap_or_else(|| json!({}));
        router["policy"] = json!(r.policy.name());
        if self.router_weights.is_some() {
            router["weights"] =
                json!({ "queue": r.weights.queue, "kv_cache": r.weights.kv_cache, "prefix": r.weights.prefix });
        }
        if self.prefix_index.is_some() {
            router["prefix_index"] = json!(r.prefix_index.name());
        }
        preset["router"] = router;
        Ok(())
    }

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

/// `kvlab sweep --min-replicas-for-ttft-p95-ms`: the fewest replicas in `range` (`LO:HI`) whose
/// fleet meets the target over the steady-state horizon (`engine::sweep::run_against_ttft_p95`),
/// by bisection, as the smallest-KV search finds its memory.
pub fn min_replicas(path: &Path, preset: &Value, target: f64, range: &str, json: bool) -> Result<(), String> {
    if !(target.is_finite() && target > 0.0) {
        return Err(format!("--min-replicas-for-ttft-p95-ms: {target} is not a time; give milliseconds above 0"));
    }
    let bad_range = || format!("--replicas-range {range}: give LO:HI, whole numbers from 1 to {MAX_REPLICAS}, LO ≤ HI");
    let (lo, hi) = range.split_once(':').ok_or_else(bad_range)?;
    let (lo, hi) =
        (lo.trim().parse::<u32>().map_err(|_| bad_range())?, hi.trim().parse::<u32>().map_err(|_| bad_range())?);
    if lo == 0 || hi > MAX_REPLICAS || lo > hi {
        return Err(bad_range());
    }
    let with_replicas = |n: u32| {
        let mut p = preset.clone();
        p["replicas"] = json!(n);
        config_of(&p)
    };
    let counts: Vec<u32> = (lo..=hi).collect();
    let found = super::search::smallest_meeting_ttft_p95(
        counts.len(),
        |i| with_replicas(counts[i]),
        target,
        path,
        |why| {
            format!(
            "--min-replicas-for-ttft-p95-ms: even {hi} replicas miss {target} ms ({why}); raise --replicas-range's HI or the target, or route otherwise"
        )
        },
    )?;
    let n = counts[found.index];
    let below = found.below.as_ref().map(|(i, why)| (counts[*i], why.as_str()));
    let config = with_replicas(n).map_err(|e| format!("{}: {e}", path.display()))?;
    let checked_over_s = check_horizon_s(&config);
    if json {
        let v = json!({
            "target_ttft_p95_ms": target,
            "policy": config.router.policy.name(),
            "replicas": n,
            "ttft_p95_ms": found.report.latency_ms.ttft_p95,
            "misses_at_replicas": below.map(|b| b.0),
            "misses_because": below.map(|b| b.1),
            "runs": found.runs,
            "checked_over_s": checked_over_s,
            "range": { "lo": lo, "hi": hi },
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    println!(
        "fewest replicas with TTFT p95 ≤ {target} ms behind {}: {n} (TTFT p95 {} ms over {} s of traffic, every replica's queue steady)",
        config.router.policy.name(),
        found.report.latency_ms.ttft_p95,
        crate::engine::numbers::show_number(checked_over_s)
    );
    match below {
        Some((b, why)) => println!("  {b} replicas miss it ({why}); {} runs, bisection over {lo}…{hi}", found.runs),
        None => println!("  the bottom of the range already meets it; lower --replicas-range's LO to look further"),
    }
    Ok(())
}
