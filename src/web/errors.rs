//! How the lab reports trouble on the page. Bad input (a preset, a link, a control value)
//! becomes a dismissible message in `#messages` while the lab keeps its previous state; a
//! panic (a bug) is reported once in `#panic` with a reload button, and logged to the
//! console, so the page never just freezes.

use std::sync::atomic::{AtomicBool, Ordering};

use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use super::dom;

static PANICKED: AtomicBool = AtomicBool::new(false);

/// Installs the panic hook (idempotent): console output plus a visible report.
pub fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        if PANICKED.swap(true, Ordering::SeqCst) {
            return;
        }
        show_panic(&info.to_string());
    }));
}

/// Whether a panic has happened (the lab stops drawing; the report stays visible).
pub fn panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

fn show_panic(detail: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let Some(el) = doc.get_element_by_id("panic").and_then(|e| e.dyn_into::<HtmlElement>().ok()) else { return };
    dom::clear(&el);
    dom::append(&el, dom::el("strong", "", Some("The lab hit an internal error and stopped.")));
    let _ = el.append_with_str_1(" ");
    dom::append(&el, dom::el("span", "", Some("Your link still holds your setup: reload to continue.")));
    let _ = el.append_with_str_1(" ");
    let reload = dom::append(&el, dom::el("button", "", Some("Reload")));
    let _ = reload.set_attribute("type", "button");
    dom::listen(&reload, "click", |_: web_sys::Event| {
        let _ = dom::window().location().reload();
    });
    let details = dom::append(&el, dom::el("details", "", None));
    dom::append(&details, dom::el("summary", "", Some("Details for a bug report")));
    dom::append(&details, dom::el("pre", "", Some(detail)));
    el.set_hidden(false);
    if let Some(root) = doc.get_element_by_id("kvlab") {
        let _ = root.set_attribute("data-state", "panicked");
    }
}

/// Shows a message for bad input; the previous message of the same kind is replaced.
pub fn show_error(kind: &str, text: &str) {
    show_message(kind, text, "error");
}

/// Shows a notice (something the learner should know, not a mistake of theirs), replacing the
/// previous one of the same kind.
pub fn show_notice(kind: &str, text: &str) {
    show_message(kind, text, "notice");
}

/// Shows good news (a check that passed), replacing the previous message of the same kind.
pub fn show_ok(kind: &str, text: &str) {
    show_message(kind, text, "ok");
}

fn show_message(kind: &str, text: &str, class: &str) {
    let Some(box_) = dom::by_id::<HtmlElement>("messages") else {
        web_sys::console::error_1(&text.into());
        return;
    };
    clear_error(kind);
    let msg = dom::node("div")
        .class(&format!("msg {class}"))
        .attr("data-kind", kind)
        .attr("role", if class == "error" { "alert" } else { "status" })
        .child(dom::node("span").class("msg-text").text(text))
        .child(
            dom::node("button")
                .attr("type", "button")
                .class("msg-close")
                .attr("aria-label", "Dismiss message")
                .text("×"),
        )
        .build();
    if let Ok(Some(btn)) = msg.query_selector(".msg-close") {
        let m = msg.clone();
        dom::listen::<web_sys::Event>(&btn, "click", move |_| m.remove());
    }
    let _ = box_.append_child(&msg);
}

/// Removes the messages of one kind ("" for all).
pub fn clear_error(kind: &str) {
    let Some(box_) = dom::by_id::<HtmlElement>("messages") else { return };
    let selector = if kind.is_empty() { ".msg".to_string() } else { format!(".msg[data-kind=\"{kind}\"]") };
    if let Ok(list) = box_.query_selector_all(&selector) {
        for i in 0..list.length() {
            if let Some(n) = list.item(i).and_then(|n| n.dyn_into::<web_sys::Element>().ok()) {
                n.remove();
            }
        }
    }
}

/// Removes the refusals of input (a preset, a mission, a link, a control value): called when a
/// new setup loads, so no stale "Preset not loaded" stays above a preset that did load.
pub fn clear_input_errors() {
    for kind in ["preset", "mission", "link", "control"] {
        clear_error(kind);
    }
}

/// Text of the messages on the page (for the JS API and tests).
pub fn current_errors() -> Vec<String> {
    let Some(box_) = dom::by_id::<HtmlElement>("messages") else { return Vec::new() };
    let Ok(list) = box_.query_selector_all(".msg .msg-text") else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)?.text_content()).collect()
}
