//! Calibration files (`kvlab/calibration@1`, see docs/CALIBRATION.md): the file `kvlab calibrate`
//! writes and presets name, its size limit and validation (errors name the field), and the
//! numbers the step-time model takes from it ([`Calibration::step_time`]).

use serde::{Deserialize, Serialize};

use super::json::from_json_with_path;
use super::sniff::CALIBRATION_SCHEMA;
use crate::engine::clock::{OverheadPoint, StepTimeCalibration};
use crate::engine::config::ConfigError;
use crate::engine::model::{gpu_preset, GPU_IDS};
use crate::shipped;

/// Largest calibration file accepted.
pub const MAX_CALIBRATION_BYTES: usize = 4 << 20;

/// A calibration file as `kvlab calibrate` writes it (see docs/CALIBRATION.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub schema: String,
    pub name: String,
    pub device: String,
    pub method: String,
    pub date: String,
    /// Effective fraction of the GPU's nominal bandwidth that KV and weight reads reach.
    pub bandwidth_efficiency: f64,
    /// Fixed cost of one step (launches, scheduling), microseconds.
    pub fixed_step_us: f64,
    /// The lab's GPU preset (`h200`, …) of the measured device, when it has one: presets using
    /// this calibration read memory at that GPU's bandwidth × `bandwidth_efficiency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Paged-read overhead relative to contiguous, by block size (sorted by block size).
    pub paged_overhead: Vec<OverheadPoint>,
    #[serde(default)]
    pub measurements: serde_json::Value,
}

impl Calibration {
    /// One line for people (see `StepTimeCalibration::describe`).
    pub fn describe(&self, preset_gpu: &str) -> String {
        self.step_time().describe(preset_gpu)
    }

    /// The numbers the step-time model uses.
    pub fn step_time(&self) -> StepTimeCalibration {
        StepTimeCalibration {
            name: self.name.clone(),
            device: self.device.clone(),
            date: self.date.clone(),
            bandwidth_efficiency: self.bandwidth_efficiency,
            fixed_step_us: self.fixed_step_us,
            gpu: self.gpu.clone(),
            paged_overhead: self.paged_overhead.clone(),
        }
    }
}

/// Parses and validates a calibration file (`kvlab/calibration@1`, see docs/CALIBRATION.md).
/// Unknown fields and out-of-range values are errors that name the field
/// (`paged_overhead[2].overhead: ...`).
pub fn parse_calibration(json: &str) -> Result<Calibration, ConfigError> {
    if json.len() > MAX_CALIBRATION_BYTES {
        return Err(ConfigError::new(
            "",
            format!("calibration file is {} bytes; the limit is {MAX_CALIBRATION_BYTES}", json.len()),
        ));
    }
    let c: Calibration = from_json_with_path(json)?;
    c.validate()?;
    Ok(c)
}

/// The shipped calibration called `name`; errors name the preset field `calibration`.
pub fn shipped_calibration(name: &str) -> Result<Calibration, ConfigError> {
    let text = shipped::lookup(shipped::CALIBRATIONS, name).ok_or_else(|| {
        ConfigError::new(
            "calibration",
            format!(
                "unknown calibration \"{name}\"; use one of {} or leave it out for the default model",
                shipped::names(shipped::CALIBRATIONS).join(", ")
            ),
        )
    })?;
    parse_calibration(text).map_err(|e| ConfigError::new("calibration", format!("shipped file {name} is invalid: {e}")))
}

fn check_number(field: &str, v: f64, lo: f64, lo_open: bool, hi: f64) -> Result<(), ConfigError> {
    let above = if lo_open { v > lo } else { v >= lo };
    if v.is_finite() && above && v <= hi {
        Ok(())
    } else {
        let range = if lo_open { format!("greater than {lo} and at most {hi}") } else { format!("from {lo} to {hi}") };
        Err(ConfigError::new(field, format!("{v} is out of range; use a number {range}")))
    }
}

impl Calibration {
    /// Checks the schema, the ranges and the order of the overhead points.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.schema != CALIBRATION_SCHEMA {
            return Err(ConfigError::new(
                "schema",
                format!("\"{}\" is not a calibration file; expected \"{CALIBRATION_SCHEMA}\"", self.schema),
            ));
        }
        if self.name.trim().is_empty() {
            return Err(ConfigError::new("name", "give the calibration a name (it appears in reports)"));
        }
        check_number("bandwidth_efficiency", self.bandwidth_efficiency, 0.0, true, 1.5)?;
        check_number("fixed_step_us", self.fixed_step_us, 0.0, false, 1e6)?;
        if let Some(g) = self.gpu.as_deref().filter(|g| gpu_preset(g).is_none()) {
            return Err(ConfigError::new(
                "gpu",
                format!("unknown GPU \"{g}\"; use one of {} or leave it out", GPU_IDS.join(", ")),
            ));
        }
        if self.paged_overhead.is_empty() {
            return Err(ConfigError::new("paged_overhead", "list at least one {block_size, overhead} point"));
        }
        let mut prev = 0;
        for (i, p) in self.paged_overhead.iter().enumerate() {
            let field = |k: &str| format!("paged_overhead[{i}].{k}");
            if !(1..=256).contains(&p.block_size) {
                return Err(ConfigError::new(
                    field("block_size"),
                    format!("{} is out of range; use a block size from 1 to 256", p.block_size),
                ));
            }
            if p.block_size <= prev {
                return Err(ConfigError::new(
                    field("block_size"),
                    format!("{} follows {prev}; list points by strictly increasing block size", p.block_size),
                ));
            }
            prev = p.block_size;
            check_number(&field("overhead"), p.overhead, -0.5, false, 20.0)?;
        }
        Ok(())
    }
}
