//! The shipped presets (assets/presets/*.json), embedded in the bundle, in the order the
//! picker lists them. `contiguous-default` comes first and is what a bare page opens with.

use crate::engine::preset::{parse_preset_dto, PresetDto};

/// (id, preset JSON) of every shipped preset.
pub const SHIPPED: &[(&str, &str)] = &[
    ("contiguous-default", include_str!("../../assets/presets/contiguous-default.json")),
    ("paged-default", include_str!("../../assets/presets/paged-default.json")),
    ("contiguous-max-model-len", include_str!("../../assets/presets/contiguous-max-model-len.json")),
    ("fp8-kv", include_str!("../../assets/presets/fp8-kv.json")),
    ("bursty", include_str!("../../assets/presets/bursty.json")),
    ("parallel-sampling", include_str!("../../assets/presets/parallel-sampling.json")),
    ("prefix-caching", include_str!("../../assets/presets/prefix-caching.json")),
    ("long-report-2gb", include_str!("../../assets/presets/long-report-2gb.json")),
];

pub const DEFAULT_ID: &str = "contiguous-default";

pub fn json(id: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(i, _)| *i == id).map(|(_, j)| *j)
}

/// The shipped preset as a DTO; an unknown id is an error that lists the known ones.
pub fn dto(id: &str) -> Result<PresetDto, String> {
    let text = json(id).ok_or_else(|| format!("unknown preset \"{id}\"; use one of {}", ids().join(", ")))?;
    parse_preset_dto(text).map_err(|e| format!("shipped preset {id}: {e}"))
}

pub fn ids() -> Vec<&'static str> {
    SHIPPED.iter().map(|(i, _)| *i).collect()
}

/// The shipped preset this DTO is exactly (ignoring nothing), if any.
pub fn matching_id(preset: &PresetDto) -> Option<&'static str> {
    SHIPPED.iter().find(|(id, _)| dto(id).is_ok_and(|d| &d == preset)).map(|(id, _)| *id)
}
