//! The shipped presets (`crate::shipped::PRESETS`) as the page uses them: by id, as DTOs, and
//! which one a setup is exactly.

use std::sync::OnceLock;

use crate::formats::preset::{parse_preset_dto, PresetDto};
use crate::shipped;

pub use crate::shipped::{DEFAULT_PRESET_ID as DEFAULT_ID, PRESETS as SHIPPED};

pub fn json(id: &str) -> Option<&'static str> {
    shipped::lookup(SHIPPED, id)
}

/// The shipped preset as a DTO; an unknown id is an error that lists the known ones.
pub fn dto(id: &str) -> Result<PresetDto, String> {
    let text = json(id).ok_or_else(|| format!("unknown preset \"{id}\"; use one of {}", ids().join(", ")))?;
    parse_preset_dto(text).map_err(|e| format!("shipped preset {id}: {e}"))
}

pub fn ids() -> Vec<&'static str> {
    shipped::names(SHIPPED)
}

/// Every shipped preset, parsed once (the header asks on every edit).
fn parsed() -> &'static [(&'static str, PresetDto)] {
    static PARSED: OnceLock<Vec<(&'static str, PresetDto)>> = OnceLock::new();
    PARSED.get_or_init(|| SHIPPED.iter().filter_map(|(id, _)| dto(id).ok().map(|d| (*id, d))).collect())
}

/// The shipped preset this DTO is exactly (ignoring nothing), if any.
pub fn matching_id(preset: &PresetDto) -> Option<&'static str> {
    parsed().iter().find(|(_, d)| d == preset).map(|(id, _)| *id)
}
