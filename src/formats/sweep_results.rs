//! A sweep's results as files, the one writer `kvlab sweep --json` / `--csv` and the page's Sweep
//! panel downloads share: per point, the knob's value and each allocator's metrics, or why the
//! engine refused that run.

use serde_json::{json, Value};

use super::sweep::ALLOCATORS;
use crate::engine::sweep::SweepMetrics;

/// One point of a sweep: the knob's value and the two runs ([`ALLOCATORS`] order).
pub type SweepPoint<'a> = (&'a Value, [&'a Result<SweepMetrics, String>; 2]);

/// A run's metrics as JSON, or `{"error": why}`.
pub fn metrics_json(m: &Result<SweepMetrics, String>) -> Value {
    match m {
        Ok(m) => serde_json::to_value(m).expect("JSON of plain numbers"),
        Err(e) => json!({ "error": e }),
    }
}

/// `{"knob": path, "points": [{"value", "contiguous", "paged"}]}`.
pub fn sweep_json(knob: &str, points: &[SweepPoint]) -> Value {
    let points: Vec<Value> = points
        .iter()
        .map(|(v, r)| json!({ "value": v, ALLOCATORS[0]: metrics_json(r[0]), ALLOCATORS[1]: metrics_json(r[1]) }))
        .collect();
    json!({ "knob": knob, "points": points })
}

/// The knob's value as a cell: a text as it is, a number as JSON writes it.
pub fn value_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// One row per point and allocator; a refused run has its reason in `error`.
pub fn sweep_csv(points: &[SweepPoint]) -> String {
    let mut out = String::from(
        "value,allocator,kv_utilization,ttft_p95_ms,tpot_p95_ms,preemptions,output_tokens_per_s,unfinished,rejected,error\n",
    );
    for (v, r) in points {
        let v = value_text(v);
        for (a, m) in ALLOCATORS.iter().zip(r) {
            let line = match m {
                Ok(m) => format!(
                    "{v},{a},{},{},{},{},{},{},{},\n",
                    m.kv_utilization,
                    m.ttft_p95_ms,
                    m.tpot_p95_ms,
                    m.preemptions,
                    m.output_tokens_per_s,
                    m.unfinished,
                    m.rejected
                ),
                Err(e) => format!("{v},{a},,,,,,,,\"{}\"\n", e.replace('"', "\"\"")),
            };
            out.push_str(&line);
        }
    }
    out
}
