//! The report as JSON (`kvlab run --json`, `report()` in the page; the contract is docs/REPORT.md)
//! and the run digest, which hashes that JSON with the per-step series.

use crate::engine::metrics::{Report, StepPoint};
use crate::engine::sim::Simulation;

/// The report as pretty-printed JSON, fields in the contract's order.
pub fn report_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("a report serializes")
}

/// Digest of everything `sim` has output so far (see [`run_digest`]).
pub fn digest(sim: &Simulation) -> u64 {
    run_digest(sim.series(), &sim.report())
}

/// FNV-1a over the series and the report JSON: one number that changes if any output bit does.
/// Pinned per shipped preset and compared on native and wasm.
pub fn run_digest(series: &[StepPoint], report: &Report) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for s in series {
        eat(&s.t_us.to_le_bytes());
        for v in [s.allocated_tokens, s.live_tokens] {
            eat(&v.to_le_bytes());
        }
        for v in [s.running, s.waiting, s.swapped, s.preemptions] {
            eat(&v.to_le_bytes());
        }
    }
    eat(serde_json::to_string(report).expect("report serializes").as_bytes());
    h
}
