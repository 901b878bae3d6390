//! The lab inside another page: `postMessage` between an embedded lab and its host (the page
//! whose iframe holds it). Every message is a plain object `{ "kvlab": 1, "type": …, … }`.
//!
//! Events (lab → host): `ready`, `resize` (`height`, `width`: the content's size in CSS pixels),
//! `state` (after every change: `state` is `kvlab.state()`'s object, plus `t_s`, `playing`),
//! `finished` (the run reached its end: `t_s`, `report`), `error` (`command`, `message`).
//! Commands (host → lab): every `session::command::Command` as its JSON (`play`, `pause`,
//! `seek` (`t_s`), `set` (`path`, `value`: a lab path such as `allocator.block_size`), `load`
//! (`preset`: a shipped id or a preset document), `compare` (`on`), `undo`, …), and `get`
//! (answers with `state`). A refused command answers with `error` and leaves nothing on the
//! reader's screen.
//!
//! Who may talk to the lab: the lab's own origin always; other origins only when the link lists
//! them (`?origins=https://a.example,https://b.example`, or `*` for any page). Commands from
//! anywhere else, or from any window but the parent, are ignored; events are posted only to
//! allowed origins (the parent's own, when the browser tells it). See docs/EMBED.md.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::MessageEvent;

use crate::session::command::{ChangeFrom, Command};

use super::app::{App, Input};
use super::dom;

/// What the host side remembers: who may talk, and what was last sent (events only on change).
/// [`wire`] makes one and hands it to the handlers it installs (the `App`'s change hook, the
/// message and resize listeners), which share it; no global holds it.
#[derive(Default)]
struct Host {
    /// Allowed origins besides the lab's own; `*` allows any.
    origins: Vec<String>,
    last_state: Option<String>,
    last_height: Option<i32>,
    finished_sent: bool,
    /// A `state` was posted since the host's last command arrived (every command is answered).
    answered: bool,
}

fn own_origin() -> String {
    dom::window().location().origin().unwrap_or_default()
}

/// Whether a message from `origin` may command the lab.
pub fn origin_allowed(origin: &str, own: &str, allowed: &[String]) -> bool {
    origin == own || allowed.iter().any(|a| a == "*" || a == origin)
}

/// The parent window, when the lab is inside a frame.
fn parent() -> Option<web_sys::Window> {
    let w = dom::window();
    let p = w.parent().ok().flatten()?;
    (!js_sys::Object::is(&p, &w)).then_some(p)
}

/// The target origins events go to: the parent's origin when the browser tells it (and it is
/// allowed), else every allowed origin (the browser delivers only to the one that matches).
fn targets(allowed: &[String]) -> Vec<String> {
    let own = own_origin();
    if allowed.iter().any(|a| a == "*") {
        return vec!["*".into()];
    }
    // `location.ancestorOrigins` (Chromium, WebKit), else the referrer's origin.
    let ancestors = js_sys::Reflect::get(&dom::window().location(), &"ancestorOrigins".into()).ok();
    let first = ancestors.and_then(|a| js_sys::Reflect::get(&a, &0.into()).ok()).and_then(|v| v.as_string());
    let parent_origin = first.or_else(|| {
        let referrer = dom::document().referrer();
        web_sys::Url::new(&referrer).ok().map(|u| u.origin())
    });
    match parent_origin {
        Some(p) if origin_allowed(&p, &own, allowed) => vec![p],
        Some(_) => Vec::new(),
        None => std::iter::once(own).chain(allowed.iter().cloned()).collect(),
    }
}

/// Posts `{kvlab: 1, type, …fields}` to the parent (nothing when the lab is not framed), to the
/// origins `host` allows.
fn post(host: &RefCell<Host>, kind: &str, fields: Value) {
    let Some(parent) = parent() else { return };
    let mut msg = json!({ "kvlab": 1, "type": kind });
    if let (Some(m), Value::Object(f)) = (msg.as_object_mut(), fields) {
        m.extend(f);
    }
    let Ok(data) = super::js::to_js(&msg) else { return };
    let allowed = host.borrow().origins.clone();
    for target in targets(&allowed) {
        let _ = parent.post_message(&data, &target);
    }
}

fn state_fields(app: &App) -> Value {
    let lab = app.lab();
    let state = serde_json::to_value(lab.snapshot()).unwrap_or(Value::Null);
    json!({ "state": state, "t_s": lab.t_us as f64 / 1e6, "playing": lab.playing })
}

/// After a change (the address bar just followed it): `state` when the state differs from what
/// was last sent, and `finished` once when the run has reached its end.
fn changed(app: &App, host: &RefCell<Host>) {
    if parent().is_none() {
        return;
    }
    let fields = state_fields(app);
    let key = fields.to_string();
    let at_end = app.lab().is_at_end();
    let (send_state, send_finished) = {
        let mut h = host.borrow_mut();
        let new = h.last_state.as_deref() != Some(key.as_str());
        h.last_state = Some(key);
        let finished = at_end && !h.finished_sent;
        h.finished_sent = at_end;
        h.answered |= new;
        (new, finished)
    };
    if send_state {
        post(host, "state", fields);
    }
    if send_finished {
        let lab = app.lab();
        let report = lab.runs.first().map(|r| serde_json::to_value(r.report()).unwrap_or(Value::Null));
        post(host, "finished", json!({ "t_s": lab.t_us as f64 / 1e6, "report": report }));
    }
}

/// Starts listening to the host and tells it the lab is ready (with its first `state` and size).
pub fn wire(app: &Rc<App>, origins: &[String]) {
    if parent().is_none() {
        return;
    }
    let host = Rc::new(RefCell::new(Host { origins: origins.to_vec(), ..Host::default() }));
    let h = host.clone();
    *app.on_change.borrow_mut() = Some(Box::new(move |app: &App| changed(app, &h)));
    let (a, h) = (app.clone(), host.clone());
    dom::listen::<MessageEvent>(&dom::window(), "message", move |e: MessageEvent| on_message(&a, &h, &e));
    wire_resize(host.clone());
    post(&host, "ready", state_fields(app));
    changed(app, &host);
}

fn wire_resize(host: Rc<RefCell<Host>>) {
    let send = move || {
        let Some(root) = dom::document().document_element() else { return };
        let height = root.scroll_height();
        let fresh = {
            let mut h = host.borrow_mut();
            let fresh = h.last_height != Some(height);
            h.last_height = Some(height);
            fresh
        };
        if fresh {
            post(&host, "resize", json!({ "height": height, "width": root.client_width() }));
        }
    };
    send();
    let cb = wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |_| send());
    if let (Ok(observer), Some(body)) =
        (web_sys::ResizeObserver::new(cb.as_ref().unchecked_ref()), dom::document().body())
    {
        observer.observe(&body);
        std::mem::forget(observer);
    }
    cb.forget();
}

fn on_message(app: &Rc<App>, host: &RefCell<Host>, e: &MessageEvent) {
    let allowed = host.borrow().origins.clone();
    if !origin_allowed(&e.origin(), &own_origin(), &allowed) {
        return;
    }
    // Only the parent commands the lab (not another frame or an opener).
    let from_parent = match (e.source(), parent()) {
        (Some(src), Some(p)) => js_sys::Object::is(&src, &p),
        _ => false,
    };
    if !from_parent {
        return;
    }
    let Ok(msg) = super::js::from_js::<Value>(e.data()) else { return };
    if msg.get("kvlab") != Some(&json!(1)) {
        return; // someone else's message
    }
    let kind = msg.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    if kind == "get" {
        post(host, "state", state_fields(app));
        return;
    }
    host.borrow_mut().answered = false;
    match command(app, &msg) {
        Err(message) => post(host, "error", json!({ "command": kind, "message": message })),
        // Every command gets a reply: the state it left, even when nothing in it changed.
        Ok(()) if !host.borrow().answered => {
            let fields = state_fields(app);
            host.borrow_mut().last_state = Some(fields.to_string());
            post(host, "state", fields);
        }
        Ok(()) => {}
    }
}

/// A host's message as a command: the message less its `kvlab` marker is the command's JSON
/// (`{"type": "set", "path": …, "value": …}`; every `session::command::Command` is accepted).
fn command(app: &Rc<App>, msg: &Value) -> Result<(), String> {
    let mut body = msg.clone();
    if let Some(m) = body.as_object_mut() {
        m.remove("kvlab");
    }
    let kind = msg.get("type").and_then(Value::as_str).unwrap_or("");
    let cmd: Command = serde_json::from_value(body).map_err(|e| {
        format!("{kind}: {e}; see docs/EMBED.md for the commands and their fields (play, pause, seek, set, load, compare, get, …)")
    })?;
    // The Sweep panel is the full lab's: an embed has no place to show a sweep or a search.
    if app.lab().options.embed && cmd.from() == ChangeFrom::Sweep {
        return Err(format!(
            "{kind}: sweeps and the KV search run in the full lab's Sweep panel, not in an embed; open the full lab (the frame's \"Open full lab\" link) or run `kvlab sweep` (docs/EMBED.md)"
        ));
    }
    app.dispatch(cmd, Input::Host).map(drop)
}
