//! A mission's "You may change" chips: each is a button that brings the settings form's first
//! control for that knob into view and focuses it (opening the JSON editor when no form control
//! covers the knob).

use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlElement};

use super::dom;
use crate::session::control_edit::control_unlocked;

/// The first shown, enabled form control that `knob` covers.
pub fn control_for(knob: &str) -> Option<HtmlElement> {
    let form = dom::by_id::<HtmlElement>("controls")?;
    let list = form.query_selector_all("[data-path]").ok()?;
    let knobs = [knob.to_string()];
    (0..list.length())
        .filter_map(|i| list.item(i)?.dyn_into::<HtmlElement>().ok())
        .filter(|el| (el.offset_width() > 0 || el.offset_height() > 0) && !el.has_attribute("disabled"))
        .find(|el| el.get_attribute("data-path").is_some_and(|p| control_unlocked(&knobs, &p)))
}

/// Focuses `knob`'s control (or the preset JSON editor), scrolled into view.
pub fn jump_to(knob: &str) {
    let target = control_for(knob).or_else(|| {
        let details = dom::by_id::<Element>("json-editor")?;
        let _ = details.set_attribute("open", "");
        dom::by_id::<HtmlElement>("preset-json")
    });
    if let Some(el) = target {
        el.scroll_into_view_with_bool(false);
        let _ = el.focus();
    }
}

/// A chip for `knob`: a button that jumps to its control.
pub fn chip(knob: &str) -> Element {
    let b = dom::el("button", "knob", Some(knob));
    let _ = b.set_attribute("type", "button");
    let _ = b.set_attribute("data-knob", knob);
    let _ = b.set_attribute("title", &format!("Go to the {knob} setting"));
    let k = knob.to_string();
    dom::listen::<Event>(&b, "click", move |_| jump_to(&k));
    b
}
