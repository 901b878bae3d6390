//! The setup's name on screen (`session::title`): the header line and its tooltip, and the
//! preset picker's choice.

use web_sys::{HtmlElement, HtmlSelectElement};

use crate::formats::preset::PresetDto;
use crate::session::title::title;
use crate::session::url_state::LabState;

use super::dom;

/// Puts the setup's name into the picker and the header; `loaded` is the preset as last loaded
/// whole (`Lab::loaded`).
pub fn show(state: &LabState, loaded: &PresetDto) {
    let t = title(state, loaded);
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("preset-select") {
        if let Some(first) = sel.item(0) {
            if first.text_content().as_deref() != Some(t.picker.as_str()) {
                dom::set_text(&first, &t.picker);
            }
        }
        sel.set_value(t.shipped.unwrap_or(""));
    }
    if let Some(el) = dom::by_id::<HtmlElement>("preset-title") {
        let line = t.header.as_deref().unwrap_or("");
        if el.text_content().as_deref() != Some(line) {
            dom::set_text(&el, line);
        }
        // The header cuts a long line on one row; hovering shows it whole.
        let _ = el.set_attribute("title", &t.tooltip);
        dom::set_hidden(&el, t.header.is_none());
    }
}
