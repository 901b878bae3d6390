//! Which setup is on screen, by name: the header shows the loaded preset's `title` while the
//! setup is that preset (or a shipped one), and once it is edited a line derived from the setup
//! itself (allocator, KV memory, model and GPU), never a stale title with "(edited)" on it. The
//! preset picker shows the shipped id the setup matches, or the loaded title, or "custom
//! (edited)".

use crate::engine::numbers::show_number;
use crate::formats::preset::{AllocatorDto, FitDto, PresetDto};

use super::presets;
use super::url_state::LabState;

/// What the header and the picker show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Title {
    /// The header's line (None: no title to show).
    pub header: Option<String>,
    /// The header's tooltip: the line whole, and what an edited setup was loaded as.
    pub tooltip: String,
    /// The shipped preset the setup is exactly, if any.
    pub shipped: Option<&'static str>,
    /// The picker's first entry, for a setup no shipped preset matches.
    pub picker: String,
}

/// The title of `state`, whose setup was loaded whole as `loaded` (`Lab::loaded`).
pub fn title(state: &LabState, loaded: &PresetDto) -> Title {
    let p = &state.preset;
    let shipped = presets::matching_id(p);
    let unedited = shipped.is_some() || p == loaded;
    let named = p.title.trim();
    if unedited {
        let header = (!named.is_empty()).then(|| named.to_string());
        let picker = header.clone().unwrap_or_else(|| "custom".into());
        return Title { tooltip: named.to_string(), header, shipped, picker };
    }
    let line = format!("Edited: {}", describe(state));
    let was = loaded.title.trim();
    let tooltip = if was.is_empty() { line.clone() } else { format!("{line} (loaded as “{was}”)") };
    Title { header: Some(line), tooltip, shipped: None, picker: "custom (edited)".into() }
}

/// The setup in a few words: "Paged · 16-token blocks · 10 GiB KV · llama-3-8b on h100-sxm".
pub fn describe(state: &LabState) -> String {
    let p = &state.preset;
    let allocator = match &p.allocator {
        _ if state.compare => "Contiguous vs paged".to_string(),
        AllocatorDto::Contiguous { fit: FitDto::FirstFit, .. } => "Contiguous first-fit".into(),
        AllocatorDto::Contiguous { fit: FitDto::BestFit, .. } => "Contiguous best-fit".into(),
        AllocatorDto::Paged { block_size, .. } => format!("Paged · {block_size}-token blocks"),
    };
    let kv = match (p.kv_memory_gib, p.gpu_memory_utilization) {
        (_, Some(u)) => format!("KV from {}% of the GPU", show_number((u * 1000.0).round() / 10.0)),
        (Some(g), None) => format!("{} GiB KV", show_number(g)),
        (None, None) => "default KV".into(),
    };
    let model = match &p.model {
        serde_json::Value::String(id) => id.clone(),
        // A config.json's model by its name, its `_name_or_path` or its architecture, as the
        // engine names it.
        m => m
            .get("name")
            .or_else(|| m.get("hf_config").and_then(|c| c.get("_name_or_path")))
            .and_then(|n| n.as_str())
            .filter(|n| !n.trim().is_empty())
            .or_else(|| m.pointer("/hf_config/architectures/0").and_then(|a| a.as_str()))
            .unwrap_or("custom model")
            .to_string(),
    };
    let tp = if p.tensor_parallel_size > 1 { format!(" × {}", p.tensor_parallel_size) } else { String::new() };
    format!("{allocator} · {kv} · {model} on {}{tp}", p.gpu)
}

/// A file name's stem that says the setup (`describe`'s words, lower case, one hyphen between
/// words): "kvlab-paged-16-token-blocks-10-gib-kv-llama-3-8b-on-h100-sxm-x2". Only ASCII
/// letters, digits, dots and hyphens, at most 120 characters.
pub fn file_stem(state: &LabState) -> String {
    let words = describe(state).replace('×', "x").replace('%', "pct");
    let mut stem = String::from("kvlab");
    let mut gap = true;
    for c in words.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            if gap {
                stem.push('-');
            }
            stem.push(c.to_ascii_lowercase());
            gap = false;
        } else {
            gap = true;
        }
        if stem.len() >= 120 {
            break;
        }
    }
    stem
}

/// A run's length as the page writes it ("60 s", "425 s").
pub fn seconds_text(duration_us: u64) -> String {
    format!("{:.0} s", duration_us as f64 / 1e6)
}
