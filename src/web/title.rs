//! Which preset is on screen, by name: the header shows a preset's `title`, and the preset
//! picker shows the shipped id it matches, or the loaded preset's title until the learner edits
//! it (then "custom (edited)").

use web_sys::{HtmlElement, HtmlSelectElement};

use crate::formats::preset::PresetDto;

use super::dom;
use crate::session::presets;
use crate::session::url_state::LabState;

/// The picker's label for a preset no shipped one matches.
pub fn picker_label(preset: &PresetDto, unedited: bool) -> String {
    let title = preset.title.trim();
    if unedited && !title.is_empty() {
        title.to_string()
    } else {
        "custom (edited)".to_string()
    }
}

/// The header's line for `preset`: its title, marked once edited (None without a title).
pub fn header_line(preset: &PresetDto, unedited: bool) -> Option<String> {
    let title = preset.title.trim();
    match (title.is_empty(), unedited) {
        (true, _) => None,
        (false, true) => Some(title.to_string()),
        (false, false) => Some(format!("{title} (edited)")),
    }
}

/// Puts the preset's name into the picker and the header; `loaded` is the preset as last loaded
/// whole (`Lab::loaded`), so an equal one is unedited.
pub fn show(state: &LabState, loaded: &PresetDto) {
    let shipped = presets::matching_id(&state.preset);
    let unedited = shipped.is_some() || state.preset == *loaded;
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("preset-select") {
        if let Some(first) = sel.item(0) {
            let label = picker_label(&state.preset, unedited);
            if first.text_content().as_deref() != Some(label.as_str()) {
                dom::set_text(&first, &label);
            }
        }
        sel.set_value(shipped.unwrap_or(""));
    }
    if let Some(el) = dom::by_id::<HtmlElement>("preset-title") {
        let line = header_line(&state.preset, unedited);
        dom::set_text(&el, line.as_deref().unwrap_or(""));
        // The header cuts a long title; hovering shows it whole.
        let _ = el.set_attribute("title", line.as_deref().unwrap_or(""));
        dom::set_hidden(&el, line.is_none());
    }
}
