//! The calibrations that ship with kvlab (`assets/calibration/*.json`), compiled in so that the
//! page and the CLI resolve a preset's `"calibration": "<name>"` the same way, offline.

use super::config::ConfigError;
use super::timing::{parse_calibration, Calibration};

/// (name, file text) of every shipped calibration, in the order the lab lists them.
pub const SHIPPED: &[(&str, &str)] = &[
    ("cuda-nvidia-h200", include_str!("../../assets/calibration/cuda-nvidia-h200.json")),
    ("host-xeon-2core", include_str!("../../assets/calibration/host-xeon-2core.json")),
];

pub fn shipped_names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(name, _)| *name).collect()
}

/// The shipped calibration called `name`; errors name the preset field `calibration`.
pub fn shipped_calibration(name: &str) -> Result<Calibration, ConfigError> {
    let (_, text) = SHIPPED.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        ConfigError::new(
            "calibration",
            format!(
                "unknown calibration \"{name}\"; use one of {} or leave it out for the default model",
                shipped_names().join(", ")
            ),
        )
    })?;
    parse_calibration(text).map_err(|e| ConfigError::new("calibration", format!("shipped file {name} is invalid: {e}")))
}
