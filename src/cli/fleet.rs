//! `kvlab run`'s fleet: `--replicas` and `--router` over the preset's, the fleet's run, and the
//! summary's lines on the router and each replica (docs/ROUTING.md).

use crate::engine::fleet::{Fleet, RouterPolicy};
use crate::engine::metrics::FleetReport;
use crate::engine::{ConfigError, Report, SimConfig, Simulation, StepPoint};

/// `--replicas` and `--router` in place of the preset's `replicas` and `router.policy`, checked
/// as the preset's would be; an error names the flag.
pub fn set_fleet(config: &mut SimConfig, replicas: Option<u32>, router: Option<&str>) -> Result<(), String> {
    if let Some(name) = router {
        config.router.policy = RouterPolicy::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = RouterPolicy::ALL.iter().map(|p| p.name()).collect();
            format!("--router {name}: not a policy; use one of {}", names.join(", "))
        })?;
    }
    if let Some(n) = replicas {
        config.replicas = n;
        config.validate_fields().map_err(|e| match e.field.as_str() {
            "replicas" => format!("--replicas {n}: {}", e.message),
            _ => e.to_string(),
        })?;
    }
    Ok(())
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
