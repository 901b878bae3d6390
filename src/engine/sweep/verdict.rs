//! What meeting a TTFT p95 target means for the smallest-KV search: a run judged over a
//! horizon long enough to show its steady state, not only the preset's own `duration_s`.
//!
//! A 60 s run can end before an overloaded server's queue has grown far or its requests have
//! waited long: a queue growing by two requests a second looks like a fluctuation over the last
//! third of a minute. So a configuration whose traffic goes on (Poisson arrivals, bursts or
//! not: the base rate continues after the last one) is judged over [`STEADY_STATE_FACTOR`]
//! times its duration (180 s for the 60 s presets), and keeps up only when its waiting queue at
//! the end of that horizon is at most [`QUEUE_GROWTH_FACTOR`] × the queue at `duration_s` plus
//! [`QUEUE_GROWTH_SLACK`] requests, besides the trend over the horizon's last third and the
//! latency rules. A trace or a closed loop brings no traffic past its own end (a trace's rows
//! end, a closed loop's clients wait for their answers), so those are judged over their own run.

use super::super::config::{ConfigError, SimConfig};
use super::super::metrics::{Report, StepPoint};
use super::super::numbers::show_number;
use super::super::request::GroupStatus;
use super::super::sim::Simulation;
use super::super::workload::Arrival;

/// How many times a Poisson preset's `duration_s` the search runs it to judge it.
pub const STEADY_STATE_FACTOR: f64 = 3.0;
/// The waiting queue at the end of the horizon may be this many times the queue at `duration_s`…
pub const QUEUE_GROWTH_FACTOR: f64 = 1.5;
/// …plus this many requests.
pub const QUEUE_GROWTH_SLACK: f64 = 10.0;
/// A server whose waiting queue is not empty this share of the time past `duration_s` runs at
/// its full load most of the time…
pub const SATURATED_SHARE: f64 = 0.5;
/// …and does not keep up when requests arrive at this share or more of the rate it finishes
/// them at full load: its queue, near the critical load, wanders ever further.
pub const MAX_LOAD_AT_FULL: f64 = 0.97;

/// The configuration the search runs to judge `config`: the same setup over the steady-state
/// horizon (Poisson traffic), or `config` itself (a trace, a closed loop, a run that drains).
pub fn steady_state_config(config: &SimConfig) -> SimConfig {
    let mut c = config.clone();
    if matches!(c.workload.arrival, Arrival::Poisson { .. }) && !c.until_all_finished {
        c.duration_s = config.duration_s * STEADY_STATE_FACTOR;
    }
    c
}

/// Whether a run meets a TTFT p95 target of `target_ms` milliseconds, as the smallest-KV search
/// counts it ([`ttft_p95_miss`] finds nothing wrong); `window_us` is the preset's own duration
/// within the run (the run's whole length when it was not extended).
pub fn meets_ttft_p95(sim: &Simulation, r: &Report, target_ms: f64, window_us: u64) -> bool {
    ttft_p95_miss(sim, r, target_ms, window_us).is_none()
}

/// Why a run misses a TTFT p95 target, or None when it meets it: a request refused; none
/// finished; TTFT p95 over the target, over the requests that got a first token (the report's)
/// or over every request that arrived, the ones still waiting at the end counted at their wait
/// so far (an overloaded run whose queue only grows misses, however quickly the requests it did
/// serve got their first token); or the run not keeping up with its traffic ([`keeps_up`]).
pub fn ttft_p95_miss(sim: &Simulation, r: &Report, target_ms: f64, window_us: u64) -> Option<String> {
    miss_of(r, sim.now_us(), target_ms, || sim.ttft_p95_counting_waiting_ms(), || keeps_up(sim, target_ms, window_us))
}

/// The rules of [`ttft_p95_miss`] over a run's report, the time it reached, its TTFT p95
/// counting the requests still waiting, and whether it keeps up (one replica's or a fleet's;
/// the last two asked only when the earlier rules pass).
fn miss_of(
    r: &Report,
    now_us: u64,
    target_ms: f64,
    counting_waiting_ms: impl FnOnce() -> f64,
    keeps_up: impl FnOnce() -> Result<(), String>,
) -> Option<String> {
    let (p95, target) = (show_number(r.latency_ms.ttft_p95), show_number(target_ms));
    let over = format!("over {} s", show_number((now_us as f64 / 1e6).round()));
    if r.requests.rejected > 0 {
        return Some(format!("{} requests are refused", r.requests.rejected));
    }
    if r.requests.finished == 0 {
        return Some(format!("no request finished {over}"));
    }
    if r.latency_ms.ttft_p95 > target_ms {
        return Some(format!("TTFT p95 is {p95} ms {over}, over {target} ms"));
    }
    let counting_waiting = counting_waiting_ms();
    if counting_waiting > target_ms {
        return Some(format!(
            "TTFT p95 is {} ms {over} counting the {} requests still waiting at the end",
            show_number(counting_waiting),
            r.requests.waiting_at_end
        ));
    }
    keeps_up().err()
}

/// One configuration judged against a TTFT p95 target over its steady-state horizon
/// ([`steady_state_config`]): that run's report (or the engine's refusal) and why it misses the
/// target ([`ttft_p95_miss`]; None: it meets it; a refused run never does). A setup refused only
/// because the longer horizon passes one of the engine's run bounds is judged over its own
/// duration instead.
pub fn run_against_ttft_p95(config: &SimConfig, target_ms: f64) -> (Result<Report, ConfigError>, Option<String>) {
    #[cfg(feature = "fleet")]
    if config.replicas > 1 {
        return fleet_against_ttft_p95(config, target_ms);
    }
    let steady = steady_state_config(config);
    let sim = Simulation::new(steady).or_else(|e| match Simulation::new(config.clone()) {
        Ok(sim) => Ok(sim),
        Err(_) => Err(e),
    });
    match sim {
        Ok(mut sim) => {
            let report = sim.run_to_end();
            let miss = ttft_p95_miss(&sim, &report, target_ms, config.duration_us());
            (Ok(report), miss)
        }
        Err(e) => {
            let why = format!("refused: {e}");
            (Err(e), Some(why))
        }
    }
}

/// A fleet judged as [`run_against_ttft_p95`] judges one replica: over the steady-state
/// horizon, no request refused, TTFT p95 within the target over every request of the fleet
/// (the report's, then counting the requests still waiting), and every replica keeping up
/// ([`keeps_up`]): a router that leaves one replica's queue growing misses, whatever the others do.
#[cfg(feature = "fleet")]
fn fleet_against_ttft_p95(config: &SimConfig, target_ms: f64) -> (Result<Report, ConfigError>, Option<String>) {
    use super::super::fleet::Fleet;
    use super::super::metrics::{percentile, round_to};
    let fleet = Fleet::new(steady_state_config(config)).or_else(|e| Fleet::new(config.clone()).map_err(|_| e));
    let mut fleet = match fleet {
        Ok(f) => f,
        Err(e) => {
            let why = format!("refused: {e}");
            return (Err(e), Some(why));
        }
    };
    let r = fleet.run_to_end();
    let counting_waiting = || {
        let mut all: Vec<f64> = fleet.replicas().iter().flat_map(Simulation::ttft_counting_waiting_us).collect();
        round_to(percentile(&mut all, 95.0) / 1000.0, 2)
    };
    let every_replica_keeps_up = || {
        fleet.replicas().iter().enumerate().try_for_each(|(i, sim)| {
            keeps_up(sim, target_ms, config.duration_us()).map_err(|e| format!("replica {i}: {e}"))
        })
    };
    let miss = miss_of(&r, fleet.now_us(), target_ms, counting_waiting, every_replica_keeps_up);
    (Ok(r), miss)
}

/// How long the search runs `config` to judge it, seconds (the steady-state horizon, or the
/// run's own length where the traffic ends with it).
pub fn check_horizon_s(config: &SimConfig) -> f64 {
    steady_state_config(config).duration_s
}

/// Whether a run keeps up with its traffic, or why not:
/// - no request still without a first token has waited longer than `target_ms` at the end;
/// - when the run goes on past `window_us` (the preset's own duration, which the steady-state
///   horizon extends), its waiting queue at the end is at most [`QUEUE_GROWTH_FACTOR`] × the
///   queue at `window_us` plus [`QUEUE_GROWTH_SLACK`] requests;
/// - and past `window_us` the server is not at its limit: where requests wait at least
///   [`SATURATED_SHARE`] of the time (the server at full load), they arrive at less than
///   [`MAX_LOAD_AT_FULL`] of the rate it finishes them while they wait ([`load_between`]);
/// - the waiting queue does not grow over the last third of the run: its time-weighted mean
///   over the last sixth is at most its mean over the sixth before plus a slack of 5% (and at
///   least 2 requests), so a queue that only fluctuates passes and one that builds up does not.
pub fn keeps_up(sim: &Simulation, target_ms: f64, window_us: u64) -> Result<(), String> {
    let longest = sim.longest_wait_ms();
    if longest > target_ms {
        return Err(format!(
            "a request has waited {} ms for its first token at the end, longer than the {} ms target",
            show_number(longest),
            show_number(target_ms)
        ));
    }
    let end = sim.now_us();
    // Only a run configured past the window has a steady state to judge (a run's last step
    // may end a little after its own duration).
    if window_us < sim.duration_us() {
        let at_window = waiting_at(sim.series(), window_us);
        let at_end = waiting_at(sim.series(), end);
        if at_end > QUEUE_GROWTH_FACTOR * at_window + QUEUE_GROWTH_SLACK {
            let (arrival_rate, finish_rate) = rates_between(sim, window_us, end);
            return Err(format!(
                "the waiting queue grows from {} requests at {} s to {} at {} s: {} requests/s arrive, {} finish",
                at_window,
                show_number(window_us as f64 / 1e6),
                at_end,
                show_number((end as f64 / 1e6).round()),
                show_number((arrival_rate * 10.0).round() / 10.0),
                show_number((finish_rate * 10.0).round() / 10.0),
            ));
        }
        let (busy, arrival_rate, capacity) = load_between(sim, window_us, end);
        if let Some(capacity) = capacity.filter(|&c| busy >= SATURATED_SHARE && arrival_rate >= MAX_LOAD_AT_FULL * c) {
            return Err(format!(
                "the server is at its limit: past {} s requests wait {}% of the time, and {} requests/s arrive against \
                 the {} it finishes at full load ({}%)",
                show_number(window_us as f64 / 1e6),
                show_number((busy * 100.0).round()),
                show_number((arrival_rate * 10.0).round() / 10.0),
                show_number((capacity * 10.0).round() / 10.0),
                show_number((arrival_rate / capacity * 100.0).round()),
            ));
        }
    }
    let endf = end as f64;
    let (earlier, later) = (
        mean_waiting(sim.series(), endf * 2.0 / 3.0, endf * 5.0 / 6.0),
        mean_waiting(sim.series(), endf * 5.0 / 6.0, endf),
    );
    if later > earlier + (0.05 * earlier).max(2.0) {
        return Err(format!(
            "the waiting queue grows over the last third of the {} s run: about {} requests wait, then {}",
            show_number((endf / 1e6).round()),
            show_number(earlier.round()),
            show_number(later.round())
        ));
    }
    Ok(())
}

/// The waiting queue after the last step that ends at or before `t_us` (0 before any step).
fn waiting_at(series: &[StepPoint], t_us: u64) -> f64 {
    let i = series.partition_point(|p| p.t_us <= t_us);
    i.checked_sub(1).map_or(0.0, |i| f64::from(series[i].waiting))
}

/// The load over `(from_us, to_us]` against what the server finishes at full load: the share of
/// that time the waiting queue is not empty (the pool or the batch is full, so the server runs
/// at its capacity), requests arriving per second, and requests finishing per second while the
/// queue is not empty (None when it is empty all along).
pub fn load_between(sim: &Simulation, from_us: u64, to_us: u64) -> (f64, f64, Option<f64>) {
    let series = sim.series();
    let (mut busy_us, mut before) = (0u64, 0u64);
    let mut busy: Vec<(u64, u64)> = Vec::new();
    for p in series {
        let (a, b) = (before.max(from_us), p.t_us.min(to_us));
        if b > a && p.waiting > 0 {
            busy_us += b - a;
            match busy.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ => busy.push((a, b)),
            }
        }
        before = p.t_us;
    }
    let secs = (to_us.saturating_sub(from_us) as f64 / 1e6).max(1e-6);
    let arrived = sim.requests().iter().filter(|r| r.arrival_us > from_us && r.arrival_us <= to_us).count();
    let in_busy = |t: u64| {
        let i = busy.partition_point(|&(_, b)| b < t);
        busy.get(i).is_some_and(|&(a, b)| a < t && t <= b)
    };
    let finished_busy =
        sim.groups().iter().filter(|g| g.status == GroupStatus::Finished && g.finish_us.is_some_and(in_busy)).count();
    let busy_share = busy_us as f64 / 1e6 / secs;
    let capacity = (busy_us > 0).then(|| finished_busy as f64 / (busy_us as f64 / 1e6));
    (busy_share, arrived as f64 / secs, capacity)
}

/// Requests arriving and requests finishing per second over `(from_us, to_us]`.
fn rates_between(sim: &Simulation, from_us: u64, to_us: u64) -> (f64, f64) {
    let inside = |t: u64| t > from_us && t <= to_us;
    let arrived = sim.requests().iter().filter(|r| inside(r.arrival_us)).count();
    let finished =
        sim.groups().iter().filter(|g| g.status == GroupStatus::Finished && g.finish_us.is_some_and(inside)).count();
    let secs = (to_us.saturating_sub(from_us) as f64 / 1e6).max(1e-6);
    (arrived as f64 / secs, finished as f64 / secs)
}

/// Time-weighted mean of the waiting queue over the steps that end in (from_us, to_us] (each
/// step weighted by its length); 0 when none does.
fn mean_waiting(series: &[StepPoint], from_us: f64, to_us: f64) -> f64 {
    let (mut sum, mut time) = (0.0, 0.0);
    let mut before = 0u64;
    for p in series {
        let t = p.t_us as f64;
        if t > from_us && t <= to_us {
            let dt = (p.t_us - before.min(p.t_us)) as f64;
            sum += f64::from(p.waiting) * dt;
            time += dt;
        }
        before = p.t_us;
    }
    if time > 0.0 {
        sum / time
    } else {
        0.0
    }
}
