//! The report as JSON (`kvlab run --json`, `report()` in the page; the contract is docs/REPORT.md)
//! and the run digest, which hashes that JSON with the per-step series.

use serde_json::{json, Value};

use super::preset::PresetDto;
use super::sniff::REPORT_SCHEMA;
use crate::engine::metrics::{Report, StepPoint};
use crate::engine::sim::Simulation;

/// The report as pretty-printed JSON, fields in the contract's order.
pub fn report_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("a report serializes")
}

/// A report as the lab exports it (`kvlab/report@1`): the report's fields (docs/REPORT.md), or
/// `reports`, one per allocator in compare mode, beside `setup`, the whole preset that made
/// them (model, GPU, tensor parallelism, KV memory, allocator, scheduler, workload, seed), its
/// words (`title`), and `at_s`, the simulated time the reports were taken at. Loading the file
/// (the page's Load dialog, `kvlab run`) runs `setup` again.
pub fn exported_report(setup: &PresetDto, title: &str, at_s: f64, reports: &[Report]) -> Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), REPORT_SCHEMA.into());
    doc.insert("title".into(), title.into());
    doc.insert("at_s".into(), json!(at_s));
    match reports {
        [one] => {
            if let Ok(Value::Object(fields)) = serde_json::to_value(one) {
                doc.extend(fields);
            }
        }
        many => {
            doc.insert("reports".into(), serde_json::to_value(many).unwrap_or_default());
        }
    }
    doc.insert("setup".into(), serde_json::to_value(setup).unwrap_or_default());
    Value::Object(doc)
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
