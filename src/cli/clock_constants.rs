//! `kvlab validate --fit --write FILE` and `--cross --write FILE`: the measured constants kept as
//! data (`assets/clock/constants.json`, which `build.rs` turns into the clock's tables) rather
//! than as source to paste. A fit writes the roofline's constants of each GPU it fitted, or the
//! kernel clock's host costs per GPU and engine generation; a leave-one-out writes each GPU's
//! held-out error for the clock it ran. Everything else in the file is kept as it was.

use std::path::Path;

use serde_json::{json, Value};

use crate::engine::clock::ClockConstants;
use crate::engine::EngineVersion;

/// What one run of `validate` writes into the file.
pub enum Update<'a> {
    /// The roofline's constants of a GPU.
    Roofline(&'a str, ClockConstants),
    /// The kernel clock's host costs of a GPU and engine generation.
    KernelHost(&'a str, EngineVersion, ClockConstants),
    /// A GPU's runs and held-out median |error| (percent, one decimal) on the roofline or the
    /// kernel clock.
    HeldOut { kernels: bool, gpu: &'a str, runs: u32, median_abs_error_pct: f64 },
}

/// Reads `path`, applies `updates` and writes it back (pretty JSON, keys in order).
pub fn write(path: &Path, updates: &[Update<'_>]) -> Result<(), String> {
    let what = |e: &dyn std::fmt::Display| format!("--write {}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| what(&e))?;
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| what(&e))?;
    if doc["schema"] != "kvlab/clock-constants@1" {
        return Err(what(&"not a kvlab/clock-constants@1 file (assets/clock/constants.json is one)"));
    }
    for u in updates {
        apply(&mut doc, u);
    }
    let out = serde_json::to_string_pretty(&doc).map_err(|e| what(&e))? + "\n";
    std::fs::write(path, out).map_err(|e| what(&e))
}

fn apply(doc: &mut Value, u: &Update<'_>) {
    match *u {
        Update::Roofline(gpu, k) => {
            let entry = &mut doc["roofline"][gpu];
            entry["bandwidth_efficiency"] = json!(k.bandwidth_efficiency);
            entry["gemm_efficiency"] = json!(k.gemm_efficiency);
            entry["fixed_step_us"] = json!(k.fixed_step_us);
            entry["per_seq_us"] = json!(k.per_seq_us);
        }
        Update::KernelHost(gpu, engine, k) => {
            doc["kernel_host"][gpu][engine.name()] = json!({
                "fixed_step_us": k.fixed_step_us, "per_seq_us": k.per_seq_us, "per_prefill_us": k.per_prefill_us,
            });
        }
        Update::HeldOut { kernels, gpu, runs, median_abs_error_pct } => {
            let clock = if kernels { "kernels" } else { "roofline" };
            doc["held_out"][clock][gpu] = json!({"runs": runs, "median_abs_error_pct": median_abs_error_pct});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_replaces_its_entry_and_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("kvlab-clock-constants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("constants.json");
        let before = r#"{"schema": "kvlab/clock-constants@1", "notes": "kept",
            "roofline": {"h100-sxm": {"bandwidth_efficiency": 0.9, "gemm_efficiency": 0.6, "fixed_step_us": 1000.0,
                "per_seq_us": 10.0, "fitted_on": "kept too"}},
            "kernel_host": {}, "held_out": {"roofline": {}, "kernels": {}}}"#;
        std::fs::write(&path, before).unwrap();
        let k = ClockConstants {
            fixed_step_us: 50.0,
            per_seq_us: 44.9,
            per_prefill_us: 0.0,
            ..crate::engine::clock::clock_for("h100-sxm").0
        };
        let updates = [
            Update::KernelHost("h100-sxm", EngineVersion::V1, k),
            Update::HeldOut { kernels: true, gpu: "h200", runs: 107, median_abs_error_pct: 15.2 },
        ];
        write(&path, &updates).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["notes"], "kept");
        assert_eq!(doc["roofline"]["h100-sxm"]["fitted_on"], "kept too");
        assert_eq!(doc["kernel_host"]["h100-sxm"]["v1"]["per_seq_us"], 44.9);
        assert_eq!(doc["held_out"]["kernels"]["h200"]["runs"], 107);
        std::fs::write(&path, r#"{"schema": "kvlab/preset@1"}"#).unwrap();
        let e = write(&path, &updates).unwrap_err();
        assert!(e.contains("--write") && e.contains("kvlab/clock-constants@1"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
