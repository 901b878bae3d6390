//! How the lab reports a panic (a bug): once, in `#panic`, with a reload button, and logged to
//! the console, so the page never just freezes. A panic hook has no page state to reach, so this
//! report is the one thing on the page kept outside `App`; the messages about bad input are
//! messages.rs's.

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
