//! A fleet's step series: the replicas' series merged into one, as the lab's chart draws a
//! fleet (the allocated and live KV of every replica's pool together, the requests running and
//! waiting on any replica).
//!
//! Each replica's series holds a point at the end of each of its steps (or a bucket of steps);
//! between its points a replica stands as its last point left it. The fleet's series has a
//! point at each time any replica's has one: every replica's latest point at that time, summed
//! (a replica with no point yet counts as empty). Preemptions are cumulative per replica, so
//! their sum is the fleet's.

use crate::engine::metrics::StepPoint;
use crate::engine::sim::Simulation;

/// The replicas' series merged by time (points at one time folded into one).
pub fn fleet_series(replicas: &[Simulation]) -> Vec<StepPoint> {
    let series: Vec<&[StepPoint]> = replicas.iter().map(Simulation::series).collect();
    let mut next = vec![0usize; series.len()];
    let mut sum = StepPoint::default();
    let mut out: Vec<StepPoint> = Vec::with_capacity(series.iter().map(|s| s.len()).max().unwrap_or(0));
    // The earliest next point of any replica; every replica's point at that time joins it.
    while let Some(t) = series.iter().zip(&next).filter_map(|(s, &i)| s.get(i)).map(|p| p.t_us).min() {
        for (s, i) in series.iter().zip(next.iter_mut()) {
            while let Some(p) = s.get(*i).filter(|p| p.t_us == t) {
                let before = if *i > 0 { s[*i - 1] } else { StepPoint::default() };
                sum.allocated_tokens = sum.allocated_tokens + p.allocated_tokens - before.allocated_tokens;
                sum.live_tokens = sum.live_tokens + p.live_tokens - before.live_tokens;
                sum.running = sum.running + p.running - before.running;
                sum.waiting = sum.waiting + p.waiting - before.waiting;
                sum.swapped = sum.swapped + p.swapped - before.swapped;
                sum.preemptions = sum.preemptions + p.preemptions - before.preemptions;
                *i += 1;
            }
        }
        sum.t_us = t;
        out.push(sum);
    }
    out
}
