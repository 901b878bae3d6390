//! Wires the page's controls to the app: transport (play, step, reset, speed, scrubber),
//! header (preset picker, compare, share, export), the settings form (one delegated listener;
//! Undo and Redo), the maps (hover, tap to pin, keyboard cursor), the charts (click to move the
//! time cursor), page-wide keyboard shortcuts, resizing, and a new `#lab=` fragment (hash
//! navigation). Every change of the lab is a `session::command::Command` handed to
//! [`App::dispatch`]; only the view's own state (hover, cursor, layout) is set here.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    Element, Event, EventTarget, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement, KeyboardEvent, MouseEvent,
};

use crate::session::command::{Command, MissionAction, Row};
use crate::session::lab::SPEEDS;
use crate::session::url_state::LabState;

use super::app::{App, Input};
use super::controls;
use super::dom;
use super::export;

/// Sends `cmd` from the page's own controls (a refusal is shown by the app).
fn send(a: &App, cmd: Command) {
    let _ = a.dispatch(cmd, Input::Page);
}

fn target_el(e: &Event) -> Option<Element> {
    e.target()?.dyn_into::<Element>().ok()
}

fn on<E: JsCast + wasm_bindgen::convert::FromWasmAbi + 'static>(id: &str, event: &str, f: impl FnMut(E) + 'static) {
    if let Some(el) = dom::by_id::<EventTarget>(id) {
        dom::listen(&el, event, f);
    }
}

pub fn wire(app: &Rc<App>) {
    wire_transport(app);
    wire_header(app);
    wire_form(app);
    wire_maps(app);
    wire_charts(app);
    wire_keys(app);
    wire_resize(app);
    wire_mission(app);
    wire_theme(app);
    wire_hash(app);
    wire_sweep(app);
    keep_forms_on_the_page();
}

/// No form of the page submits (every button acts through a listener; Enter in a field must not
/// reload the page). Done here rather than with inline `onsubmit` attributes, which a strict
/// Content-Security-Policy forbids.
fn keep_forms_on_the_page() {
    let Ok(forms) = dom::document().query_selector_all("form") else { return };
    for i in 0..forms.length() {
        if let Some(form) = forms.item(i) {
            dom::listen(&form, "submit", |e: web_sys::Event| e.prevent_default());
        }
    }
}

fn wire_mission(app: &Rc<App>) {
    for (id, action) in [
        ("hint-btn", MissionAction::Hint),
        ("solution-btn", MissionAction::Solution),
        ("restart-btn", MissionAction::Restart),
        ("exit-mission-btn", MissionAction::Exit),
    ] {
        let a = app.clone();
        on::<Event>(id, "click", move |_| send(&a, Command::Mission { action }));
    }
}

fn wire_transport(app: &Rc<App>) {
    let a = app.clone();
    on::<Event>("play-btn", "click", move |_| send(&a, Command::TogglePlay));
    let a = app.clone();
    on::<Event>("step-btn", "click", move |_| send(&a, Command::Step));
    let a = app.clone();
    on::<Event>("end-btn", "click", move |_| send(&a, Command::SeekEnd));
    let a = app.clone();
    on::<Event>("reset-btn", "click", move |_| send(&a, Command::Seek { t_s: 0.0 }));
    let a = app.clone();
    on::<Event>("speed-select", "change", move |e: Event| {
        if let Some(sel) = target_el(&e).and_then(|t| t.dyn_into::<HtmlSelectElement>().ok()) {
            send(&a, Command::Speed { speed: sel.value().parse::<f64>().unwrap_or(1.0) });
        }
    });
    let a = app.clone();
    on::<Event>("scrubber", "input", move |e: Event| {
        if let Some(input) = target_el(&e).and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) {
            send(&a, Command::Seek { t_s: input.value_as_number().max(0.0) });
        }
    });
}

fn wire_header(app: &Rc<App>) {
    let a = app.clone();
    on::<Event>("preset-select", "change", move |e: Event| {
        let Some(sel) = target_el(&e).and_then(|t| t.dyn_into::<HtmlSelectElement>().ok()) else { return };
        send(&a, Command::Load { preset: sel.value().into() });
    });
    let a = app.clone();
    on::<Event>("compare-toggle", "change", move |e: Event| {
        let Some(cb) = target_el(&e).and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        send(&a, Command::Compare { on: cb.checked() });
    });
    let a = app.clone();
    on::<Event>("share-btn", "click", move |_| {
        let url = a.share_url();
        a.update_url();
        export::copy_text(&a.messages, &url, "share-btn", "Link copied ✓", "this link to share the lab as it is now");
    });
    let a = app.clone();
    on::<Event>("embed-btn", "click", move |_| {
        a.update_url();
        let snippet = export::embed_snippet(&a.share_url());
        let what = "this snippet to embed the lab as it is now";
        export::copy_text(&a.messages, &snippet, "embed-btn", "Snippet copied ✓", what);
    });
    super::menu::wire("export-btn", "export-menu");
    let a = app.clone();
    on::<Event>("export-menu", "click", move |e: Event| {
        let Some(what) = target_el(&e)
            .and_then(|t| t.closest("[data-export]").ok().flatten())
            .and_then(|b| b.get_attribute("data-export"))
        else {
            return;
        };
        if let Err(err) = export::export(&a, &what) {
            a.messages.error("export", &format!("Export failed: {err}"));
        }
    });
}

fn wire_form(app: &Rc<App>) {
    let a = app.clone();
    on::<Event>("controls", "change", move |e: Event| on_control(&a, &e));
    let a = app.clone();
    on::<Event>("controls", "input", move |e: Event| on_control(&a, &e));
    let a = app.clone();
    on::<Event>("controls", "click", move |e: Event| {
        let Some(btn) = target_el(&e).and_then(|t| t.closest("[data-action]").ok().flatten()) else { return };
        let action = btn.get_attribute("data-action").unwrap_or_default();
        let index: usize = btn.get_attribute("data-index").and_then(|i| i.parse().ok()).unwrap_or(0);
        on_form_action(&a, &action, index);
    });
    wire_preset_file(app);
    let a = app.clone();
    on::<KeyboardEvent>("controls", "keydown", move |e: KeyboardEvent| {
        // Escape in a control holding a value that is not applied puts the running value back.
        let Some(path) = target_el(&e).and_then(|t| t.get_attribute("data-path")) else { return };
        if e.key() == "Escape" && a.session().pending().held(&path).is_some() {
            e.prevent_default();
            e.stop_propagation();
            send(&a, Command::Discard { path: Some(path) });
        }
    });
    let a = app.clone();
    on::<Event>("discard-btn", "click", move |_| send(&a, Command::Discard { path: None }));
    let a = app.clone();
    on::<Event>("undo-btn", "click", move |_| send(&a, Command::Undo));
    let a = app.clone();
    on::<Event>("redo-btn", "click", move |_| send(&a, Command::Redo));
}

/// A control of the form changed: its value goes to its preset path (sliders as they move,
/// other fields on change: Enter or leaving the field).
fn on_control(a: &App, e: &Event) {
    let Some(el) = target_el(e) else { return };
    if e.type_() == "input" && el.get_attribute("type").as_deref() != Some("range") {
        return;
    }
    // What the control holds goes to the session as it is: the session reads a number written
    // as text, and refuses what is not one beside the control.
    if let Some((path, value)) = controls::read_control(&el) {
        send(a, Command::Set { path, value });
    }
}

/// The form's buttons (`data-action`): rows added and removed, the JSON editor's load and
/// download.
fn on_form_action(a: &App, action: &str, index: usize) {
    match action {
        "add-class" => send(a, Command::AddRow { row: Row::Class }),
        "add-burst" => send(a, Command::AddRow { row: Row::Burst }),
        "remove-class" => send(a, Command::RemoveRow { row: Row::Class, index }),
        "remove-burst" => send(a, Command::RemoveRow { row: Row::Burst, index }),
        "apply-json" => {
            if let Some(ta) = dom::by_id::<HtmlTextAreaElement>("preset-json") {
                super::json_editor::apply(a, &ta.value());
            }
        }
        "download-json" => {
            let text = serde_json::to_string_pretty(&a.lab().state.preset).unwrap_or_default();
            let name = format!("{}-preset.json", crate::session::title::file_stem(&a.lab().state));
            if let Err(err) = export::download_text(&name, "application/json", &text) {
                a.messages.error("export", &format!("Download failed: {err}"));
            }
        }
        _ => {}
    }
}

/// The JSON editor's "Open a file…": the file's preset is loaded.
fn wire_preset_file(app: &Rc<App>) {
    let a = app.clone();
    on::<Event>("preset-file", "change", move |e: Event| {
        let Some(input) = target_el(&e).and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
        let Ok(reader) = web_sys::FileReader::new() else { return };
        let a2 = a.clone();
        let r2 = reader.clone();
        let onload = Closure::once_into_js(move || {
            if let Some(text) = r2.result().ok().and_then(|v| v.as_string()) {
                super::json_editor::apply(&a2, &text);
            }
        });
        reader.set_onload(Some(onload.unchecked_ref()));
        let _ = reader.read_as_text(&file);
        input.set_value("");
    });
}

fn wire_maps(app: &Rc<App>) {
    let maps = app.view.borrow().maps.len();
    for i in 0..maps {
        wire_map_pointer(app, i);
        wire_map_keys(app, i);
        if super::full_lab::FULL && i < 2 {
            wire_host_band(app, i);
        }
    }
    // The pointer over anything but a map lets a hovered cell go: a map that moved, shrank or
    // hid under a still pointer (Compare toggled, the page reflowed at the end of a run) fired
    // no `mouseleave`, and the inspector must not keep describing it.
    let a = app.clone();
    dom::listen::<MouseEvent>(&dom::document(), "mousemove", move |e: MouseEvent| {
        let on_map = e.target().and_then(|t| t.dyn_into::<Element>().ok()).is_some_and(|t| {
            let id = t.id();
            // A fleet's replicas have maps past the two the page is served with (the full lab's).
            matches!(id.as_str(), "map-0" | "map-1")
                || super::full_lab::FULL && id.strip_prefix("map-").is_some_and(|i| i.parse::<u8>().is_ok())
        });
        if !on_map && a.view.borrow().hover.is_some() {
            a.view.borrow_mut().hover = None;
            a.request_frame();
        }
        if super::full_lab::FULL {
            let_host_band_go(&a, &e);
        }
    });
}

/// So with the host bands' hovered chunk (the full lab).
fn let_host_band_go(a: &App, e: &MouseEvent) {
    let on_host = e.target().and_then(|t| t.dyn_into::<Element>().ok()).is_some_and(|t| t.id().starts_with("host-"));
    let mut view = a.view.borrow_mut();
    if let Some(h) = view.hosts_mut().filter(|h| !on_host && h.hover.is_some()) {
        h.hover = None;
        drop(view);
        a.request_frame();
    }
}

/// The cell of map `i` under the pointer.
fn cell_at(a: &App, i: usize, e: &MouseEvent) -> Option<usize> {
    let view = a.view.borrow();
    let rect = view.maps[i].canvas.get_bounding_client_rect();
    view.maps[i].cell_at_css(f64::from(e.client_x()) - rect.left(), f64::from(e.client_y()) - rect.top())
}

/// Hover shows a cell of map `i` in the inspector; a click pins it (a second click releases it).
fn wire_map_pointer(app: &Rc<App>, i: usize) {
    let id = format!("map-{i}");
    let hover = move |a: &App, cell: Option<usize>| {
        let mut view = a.view.borrow_mut();
        let next = cell.map(|c| (i, c));
        if view.hover != next {
            view.hover = next;
            drop(view);
            a.request_frame();
        }
    };
    let a = app.clone();
    on::<MouseEvent>(&id, "mousemove", move |e: MouseEvent| hover(&a, cell_at(&a, i, &e)));
    let a = app.clone();
    on::<MouseEvent>(&id, "mouseleave", move |_| hover(&a, None));
    let a = app.clone();
    on::<MouseEvent>(&id, "click", move |e: MouseEvent| {
        let cell = cell_at(&a, i, &e).map(|c| (i, c));
        {
            let mut view = a.view.borrow_mut();
            view.pinned = if view.pinned == cell { None } else { cell };
            view.hover = cell;
        }
        a.request_frame();
    });
}

/// Hover shows a chunk of host band `i` in the inspector and frames its request on both maps.
fn wire_host_band(app: &Rc<App>, i: usize) {
    let id = format!("host-{i}");
    let hover = move |a: &App, e: Option<&MouseEvent>| {
        let mut view = a.view.borrow_mut();
        let Some(hosts) = view.hosts_mut() else { return };
        let next = e.and_then(|e| {
            let rect = hosts.views[i].canvas.get_bounding_client_rect();
            let x = f64::from(e.client_x()) - rect.left();
            hosts.views[i].cell_at_css(x, f64::from(e.client_y()) - rect.top()).map(|c| (i, c))
        });
        if hosts.hover != next {
            hosts.hover = next;
            drop(view);
            a.request_frame();
        }
    };
    let a = app.clone();
    on::<MouseEvent>(&id, "mousemove", move |e: MouseEvent| hover(&a, Some(&e)));
    let a = app.clone();
    on::<MouseEvent>(&id, "mouseleave", move |_| hover(&a, None));
}

/// Arrow keys and PageUp/PageDown move a cell cursor over focused map `i`; Escape releases it.
fn wire_map_keys(app: &Rc<App>, i: usize) {
    let id = format!("map-{i}");
    let a = app.clone();
    on::<KeyboardEvent>(&id, "keydown", move |e: KeyboardEvent| {
        let cols = a.view.borrow().maps[i].layout.cols as isize;
        let delta = match e.key().as_str() {
            "ArrowLeft" => -1,
            "ArrowRight" => 1,
            "ArrowUp" => -cols,
            "ArrowDown" => cols,
            "PageUp" => -cols * 8,
            "PageDown" => cols * 8,
            "Escape" => {
                let mut view = a.view.borrow_mut();
                view.cursor = None;
                view.pinned = None;
                drop(view);
                a.request_frame();
                return;
            }
            _ => return,
        };
        e.prevent_default();
        e.stop_propagation();
        move_cursor(&a, i, delta);
    });
    let a = app.clone();
    on::<Event>(&id, "blur", move |_| {
        a.view.borrow_mut().cursor = None;
        a.request_frame();
    });
}

/// Moves map `i`'s cell cursor by `delta` cells (to the first cell when it was elsewhere).
fn move_cursor(a: &App, i: usize, delta: isize) {
    {
        let mut view = a.view.borrow_mut();
        let n = view.maps[i].cell_count() as isize;
        let cur = view.cursor.filter(|c| c.0 == i).map_or(0, |c| c.1 as isize);
        let next = if view.cursor.is_some_and(|c| c.0 == i) { (cur + delta).clamp(0, (n - 1).max(0)) } else { 0 };
        view.cursor = Some((i, next as usize));
        view.pinned = None;
    }
    a.request_frame();
}

fn wire_charts(app: &Rc<App>) {
    for (id, kv) in [("chart-kv", true), ("chart-queues", false)] {
        let a = app.clone();
        on::<MouseEvent>(id, "click", move |e: MouseEvent| {
            let t = {
                let view = a.view.borrow();
                let (canvas, b) = if kv { (&view.kv_chart, view.kv_box) } else { (&view.queue_chart, view.queue_box) };
                let rect = canvas.get_bounding_client_rect();
                b.time_at(f64::from(e.client_x()) - rect.left())
            };
            if let Some(t) = t {
                send(&a, Command::Seek { t_s: t.max(0.0) });
            }
        });
    }
    let a = app.clone();
    let toggles = dom::document().query_selector(".series-toggles").ok().flatten();
    if let Some(el) = toggles {
        dom::listen::<Event>(&el, "change", move |e: Event| {
            let Some(cb) = target_el(&e).and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
            let Some(series) = cb.get_attribute("data-series") else { return };
            send(&a, Command::Series { name: series, show: cb.checked() });
        });
    }
}

fn is_typing(el: Option<Element>) -> bool {
    el.is_some_and(|el| {
        let tag = el.tag_name().to_ascii_lowercase();
        let ty = el.get_attribute("type").unwrap_or_default();
        // Range inputs and radios use the arrow keys themselves.
        matches!(tag.as_str(), "textarea" | "select") || (tag == "input" && ty != "checkbox")
    })
}

fn wire_keys(app: &Rc<App>) {
    let a = app.clone();
    dom::listen::<KeyboardEvent>(&dom::document(), "keydown", move |e: KeyboardEvent| {
        if e.default_prevented() || e.alt_key() {
            return;
        }
        let target = e.target().and_then(|t| t.dyn_into::<Element>().ok());
        if is_typing(target.clone()) {
            return; // a field's own keys (its undo too) are the field's
        }
        if e.ctrl_key() || e.meta_key() {
            let cmd = match e.key().as_str() {
                "z" | "Z" if e.shift_key() => Command::Redo,
                "z" | "Z" => Command::Undo,
                "y" | "Y" => Command::Redo,
                _ => return,
            };
            e.prevent_default();
            send(&a, cmd);
            return;
        }
        let on_control = target.as_ref().is_some_and(|t| {
            matches!(t.tag_name().to_ascii_lowercase().as_str(), "button" | "a" | "summary" | "input")
        });
        // Home and End jump in time whatever has focus (a button right after it was pressed, a
        // link), except the time scrubber, whose own Home and End do the same.
        let on_slider = target.as_ref().is_some_and(|t| t.get_attribute("type").as_deref() == Some("range"));
        let step_s = if e.shift_key() { 5.0 } else { 1.0 };
        let t = a.lab().t_us as f64 / 1e6;
        let cmd = match e.key().as_str() {
            " " | "k" if !on_control || e.key() == "k" => Command::TogglePlay,
            "." | "s" => Command::Step,
            "r" | "R" => Command::Seek { t_s: 0.0 },
            "c" | "C" => Command::Compare { on: !a.lab().state.compare },
            "[" | "]" => {
                let speed = a.lab().speed;
                let i = SPEEDS.iter().position(|s| *s == speed).unwrap_or(2);
                let j = if e.key() == "]" { (i + 1).min(SPEEDS.len() - 1) } else { i.saturating_sub(1) };
                Command::Speed { speed: SPEEDS[j] }
            }
            "ArrowLeft" | "ArrowRight" if !on_control || target.as_ref().is_some_and(|t| t.tag_name() == "BUTTON") => {
                Command::Seek { t_s: if e.key() == "ArrowLeft" { (t - step_s).max(0.0) } else { t + step_s } }
            }
            "Home" if !on_slider => Command::Seek { t_s: 0.0 },
            "End" if !on_slider => Command::SeekEnd,
            "Escape" => {
                let mut view = a.view.borrow_mut();
                view.pinned = None;
                view.cursor = None;
                drop(view);
                a.request_frame();
                return;
            }
            _ => return,
        };
        e.prevent_default();
        send(&a, cmd);
    });
}

fn wire_resize(app: &Rc<App>) {
    let a = app.clone();
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |_| {
        a.view.borrow_mut().layout_dirty = true;
        a.request_frame();
    });
    if let Ok(observer) = web_sys::ResizeObserver::new(cb.as_ref().unchecked_ref()) {
        for id in ["maps", "map-panel-0", "map-panel-1"] {
            if let Some(el) = dom::by_id::<Element>(id) {
                observer.observe(&el);
            }
        }
        if let Some(el) = dom::by_id::<Element>("chart-kv") {
            observer.observe(&el);
        }
        std::mem::forget(observer);
    }
    cb.forget();
}

/// Following a link to the same page with another `#lab=` fragment (or editing it in the address
/// bar) fires `hashchange` without reloading: the lab takes the new state. The address bar's own
/// updates use `replaceState`, which fires nothing.
fn wire_hash(app: &Rc<App>) {
    let a = app.clone();
    dom::listen::<Event>(&dom::window(), "hashchange", move |_| {
        let hash = dom::window().location().hash().unwrap_or_default();
        match LabState::from_fragment(&hash) {
            Ok(Some(state)) => {
                if state != a.lab().snapshot() {
                    send(&a, Command::SetState { state: state.to_json().into() });
                }
            }
            Ok(None) => {}
            Err(e) => a.messages.error("link", &format!("Link not applied: {e}. The lab keeps its previous setup.")),
        }
    });
}

/// Redraws the canvases (and the legend's swatches) when the system switches between light and
/// dark: `?theme=auto`, the default, follows it (`super::theme`).
fn wire_theme(app: &Rc<App>) {
    let Ok(Some(query)) = dom::window().match_media("(prefers-color-scheme: dark)") else { return };
    let a = app.clone();
    dom::listen::<Event>(query.unchecked_ref::<EventTarget>(), "change", move |_| {
        super::map::paint_swatches();
        a.view.borrow_mut().invalidate();
        a.request_frame();
    });
}

/// The Sweep panel (sweep_view.rs): Run, Cancel, the metric picker and the KV search's Find and
/// Cancel as commands.
fn wire_sweep(app: &Rc<App>) {
    use super::sweep_view;
    use web_sys::{HtmlInputElement, HtmlSelectElement};
    if !sweep_view::fill() {
        return;
    }
    let value = |id: &str| {
        dom::by_id::<HtmlSelectElement>(id)
            .map(|s| s.value())
            .or_else(|| dom::by_id::<HtmlInputElement>(id).map(|i| i.value()))
            .unwrap_or_default()
    };
    let a = app.clone();
    on("sweep-run", "click", move |_: Event| {
        send(&a, Command::Sweep { knob: value("sweep-knob"), values: value("sweep-values") })
    });
    // The reader's own pick of a knob stays (sweep_view::lock otherwise starts on the preset's).
    on("sweep-knob", "change", move |e: Event| {
        if let Some(el) = target_el(&e) {
            let _ = el.set_attribute("data-picked", "");
        }
    });
    let a = app.clone();
    on("sweep-cancel", "click", move |_: Event| send(&a, Command::CancelSweep));
    let a = app.clone();
    on("sweep-metric", "change", move |_: Event| send(&a, Command::SweepMetric { metric: value("sweep-metric") }));
    let a = app.clone();
    on("sweep-search-run", "click", move |_: Event| {
        let cmd = Command::KvSearch {
            target: value("sweep-search-target"),
            range: value("sweep-search-range"),
            step: value("sweep-search-step"),
        };
        send(&a, cmd);
    });
    let a = app.clone();
    on("sweep-search-cancel", "click", move |_: Event| send(&a, Command::CancelKvSearch));
    for (id, what) in [
        ("sweep-download-csv", "sweep-csv"),
        ("sweep-download-json", "sweep-json"),
        ("sweep-search-download", "search-json"),
    ] {
        let a = app.clone();
        on(id, "click", move |_: Event| {
            if let Err(err) = export::export(&a, what) {
                a.messages.error("export", &format!("Export failed: {err}"));
            }
        });
    }
    sweep_view::lock(&app.lab());
}
