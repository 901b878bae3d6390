//! The page's two modules (docs/LAB.md, "Two modules"). The first view's module, built without
//! the `panels` feature, draws the lab, runs it and takes every edit of the settings; the full
//! module, built with it, adds what the first view does not show: the Sweep panel's runs,
//! missions, documents from text or files (presets, missions, config.json, traces), long runs in
//! the worker and the missions hub. `www/boot.js` starts the first view's module unless the URL
//! asks for one of those; when the learner, the JS handle or a host page asks for one later, this
//! module hands it over ([`hand_over`]): `boot.js` fetches the full module while this one keeps
//! running, then stops this one ([`stop_first_view`]), puts back the page as it was served, starts
//! the full module on the same URL (which carries the lab's state) and replays what was asked.
//! If the fetch fails, this module keeps running and the page says what failed.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::dom;

/// Whether this module is the full lab (built with the `panels` feature).
pub const FULL: bool = cfg!(feature = "panels");

/// Called by `www/boot.js` once the full module is fetched and compiled, right before it starts:
/// this module's listeners and animation frames do nothing from then on (`dom::stopped`).
#[cfg(not(feature = "panels"))]
#[wasm_bindgen(js_name = stopFirstView)]
pub fn stop_first_view() {
    dom::stop();
}

/// Something only the full module does, replayed there once it runs: a command (its JSON, as
/// `kvlab.command()` takes it), a trace file to load, a click on a control whose panel is the
/// full module's (the Load dialog), or the Preset JSON editor's text, typed into the full
/// module's editor and loaded from there; or the page's link, which the first module could not
/// apply and the full module reads again as it starts.
pub enum Handover<'a> {
    Command(&'a crate::session::command::Command),
    Trace { name: &'a str, text: &'a str },
    Click { id: &'a str },
    Editor { text: &'a str },
    Link,
}

/// Whether the first view's module refused `cmd`'s document without naming the wrong field
/// (`Command::misreads_without_a_field`): the full module, which names it, should read it again.
pub fn rereads(cmd: &crate::session::command::Command) -> bool {
    !FULL && cmd.misreads_without_a_field()
}

/// Asks `www/boot.js` to load the full module and do `what` there. Returns false when the page
/// has no loader (a test harness without `boot.js`).
pub fn hand_over(what: Handover<'_>) -> bool {
    let pending = match what {
        Handover::Command(cmd) => serde_json::json!({ "command": cmd.handover_json() }),
        Handover::Trace { name, text } => serde_json::json!({ "trace": { "name": name, "text": text } }),
        Handover::Click { id } => serde_json::json!({ "click": id }),
        Handover::Editor { text } => serde_json::json!({ "editor": text }),
        Handover::Link => serde_json::json!({ "link": true }),
    };
    let window = dom::window();
    let Ok(load) = js_sys::Reflect::get(&window, &JsValue::from_str("kvlabLoadFull")) else { return false };
    let Some(load) = load.dyn_ref::<js_sys::Function>() else { return false };
    load.call1(&window, &JsValue::from_str(&pending.to_string())).is_ok()
}
