//! The settings form. Every control names the field it edits in `data-path`, a lab path
//! (`scheduler.max_num_seqs`, `workload.classes[0].n`, `allocator.block_size`: the command
//! dialect of `session::command`) and its type in `data-type`. An edit becomes a `set` command;
//! the session takes it, or refuses it and the control keeps what the user chose, held and
//! marked as not applied (`aria-invalid`, the class `held`) with the reason beside it
//! (`session::pending`). The same paths fill the form from the setup on screen (the running
//! setup with the held values), so the form and the session cannot disagree. In mission mode the controls no knob covers are
//! disabled, with a note saying which knobs the mission leaves free.

use serde_json::Value;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

use crate::engine::model::{gpu_preset, GPU_IDS, MODEL_IDS};
use crate::engine::startup_checks::ATTENTION_BACKENDS;
use crate::formats::calibration::shipped_calibration;
use crate::formats::model_catalogue::catalogue_ids;
use crate::formats::preset::{ArrivalDto, PresetDto};
use crate::missions::mission::Mission;
use crate::shipped;

use std::collections::BTreeMap;

use crate::session::control_edit::{
    control_unlocked, display_path, text_of, value_for, ATTENTION_BACKEND_PATH, CUSTOM_MODEL,
};
use crate::session::pending::Pending;
use crate::session::presets;
use crate::session::url_state::LabState;

use super::dom::{self, Node};

/// A labelled input bound to a preset path (`kind`: the `data-type` the form reads it as).
fn field(path: &str, label: &str, input_type: &str, kind: &str, limits: &[(&str, &str)]) -> Node {
    let input = limits
        .iter()
        .fold(dom::node("input").attr("type", input_type), |n, (k, v)| n.attr(k, v))
        .attr("data-path", path)
        .attr("data-type", kind);
    dom::node("label").class("field").child(dom::node("span").text(label)).child(input)
}

/// A row's "Remove …" button (`action`: `remove-class` or `remove-burst`).
fn remove_button(action: &str, i: usize, label: &str) -> Node {
    dom::node("button")
        .attr("type", "button")
        .class("btn small ghost")
        .attr("data-action", action)
        .attr("data-index", &i.to_string())
        .text(label)
}

const ANY_FROM_0: &[(&str, &str)] = &[("min", "0"), ("step", "any")];
const ANY_FROM_1: &[(&str, &str)] = &[("min", "1"), ("step", "any")];
const WHOLE_FROM_1: &[(&str, &str)] = &[("min", "1"), ("step", "1")];

fn class_row(i: usize, removable: bool) -> Node {
    let p = |f: &str| format!("workload.classes[{i}].{f}");
    let numbers = [
        field(&p("weight"), "Weight", "number", "num", ANY_FROM_0),
        field(&p("n"), "Samples n", "number", "int", &[("min", "1"), ("max", "16"), ("step", "1")]),
        field(&p("prompt_tokens.mean"), "Prompt mean", "number", "num", ANY_FROM_1),
        field(&p("prompt_tokens.p99"), "Prompt p99", "number", "num", ANY_FROM_1),
        field(&p("output_tokens.mean"), "Output mean", "number", "num", ANY_FROM_1),
        field(&p("output_tokens.p99"), "Output p99", "number", "num", ANY_FROM_1),
        field(&p("max_tokens"), "max_tokens", "number", "int", WHOLE_FROM_1),
        field(&p("shared_prefix_tokens"), "Shared prefix", "number", "int", &[("min", "0"), ("step", "1")]),
    ];
    let row = dom::node("fieldset")
        .class("row class-row")
        .attr("data-index", &i.to_string())
        .child(dom::node("legend").text(&format!("User class {}", i + 1)))
        .child(field(&p("name"), "Name", "text", "str", &[]))
        .child(dom::node("div").class("grid2").children(numbers));
    if removable {
        row.child(remove_button("remove-class", i, &format!("Remove class {}", i + 1)))
    } else {
        row
    }
}

fn burst_row(i: usize) -> Node {
    let p = |f: &str| format!("workload.arrival.bursts[{i}].{f}");
    let numbers = [
        field(&p("start_s"), "From (s)", "number", "num", ANY_FROM_0),
        field(&p("end_s"), "To (s)", "number", "num", ANY_FROM_0),
        field(&p("rate_per_s"), "Rate /s", "number", "num", ANY_FROM_0),
    ];
    dom::node("fieldset")
        .class("row burst-row")
        .attr("data-index", &i.to_string())
        .child(dom::node("legend").text(&format!("Burst {}", i + 1)))
        .child(dom::node("div").class("grid3").children(numbers))
        .child(remove_button("remove-burst", i, &format!("Remove burst {}", i + 1)))
}

/// An `<option>` of a selector.
fn option(value: &str, label: &str) -> Node {
    dom::node("option").attr("value", value).text(label)
}

/// Adds the attention backend selector after the block size (once): vLLM's own choice, or one
/// backend pinned as `--attention-backend` does, each labelled with the block sizes it runs. Under
/// a pinned backend vLLM refuses other block sizes; under its own choice the lab labels them.
fn add_attention_backend_control() {
    let Some(block) = dom::document().query_selector("[data-path='allocator.block_size']").ok().flatten() else {
        return;
    };
    let exists = dom::document().query_selector("[data-path='attention_backend']").ok().flatten().is_some();
    let Some(label) = block.parent_element().filter(|_| !exists) else { return };
    let field = dom::el("label", "field", None);
    dom::append(&field, dom::el("span", "", Some("Attention backend")));
    let select = dom::append(&field, dom::el("select", "", None));
    let _ = select.set_attribute("data-path", ATTENTION_BACKEND_PATH);
    let _ = select.set_attribute("data-type", "str");
    let _ = select.set_attribute(
        "title",
        "vLLM's --attention-backend. Left to vLLM it is FlashAttention here, and blocks it does not run are labelled; pinned, vLLM refuses to start with a block size the backend does not run.",
    );
    let default = dom::append(&select, dom::el("option", "", Some("vLLM's choice (FlashAttention)")));
    let _ = default.set_attribute("value", "");
    for b in ATTENTION_BACKENDS {
        let text = format!("{} ({}): blocks of {}", b.vllm_name(), b.id(), b.block_sizes_text());
        let option = dom::append(&select, dom::el("option", "", Some(&text)));
        let _ = option.set_attribute("value", b.id());
    }
    let _ = label.after_with_node_1(&field);
}

/// Fills the option lists that come from the engine (models, GPUs, presets, speeds).
pub fn fill_options(speeds: &[f64], speed: f64) {
    add_attention_backend_control();
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("ctl-model") {
        let custom = option(CUSTOM_MODEL, "custom (from the preset JSON)").attr("disabled", "");
        // The lab's five ids, then the catalogue's Hugging Face ids (read from their config.json).
        let catalogue = dom::node("optgroup")
            .attr("label", "From config.json (Hugging Face id)")
            .children(catalogue_ids().iter().map(|m| option(m, m)));
        dom::replace_children(&sel, MODEL_IDS.iter().map(|m| option(m, m)).chain([catalogue, custom]));
    }
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("ctl-gpu") {
        let gpus = GPU_IDS.iter().map(|g| option(g, &gpu_preset(g).map(|s| s.name).unwrap_or_default()));
        dom::replace_children(&sel, gpus);
    }
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("ctl-calibration") {
        let mut options = vec![option("", "none (default model)")];
        for name in shipped::names(shipped::CALIBRATIONS) {
            // The label leads with the device the constants were measured on ("NVIDIA H200",
            // "host memory"), so a narrow selector still shows it; the title says it all.
            let Ok(c) = shipped_calibration(name) else { continue };
            let short = c.device.strip_prefix("cuda: ").unwrap_or(&c.device);
            let short = short.split(':').next().unwrap_or(short);
            let title = format!("{name}: measured on {} ({})", c.device, c.date);
            options.push(option(name, &format!("{short} ({name})")).attr("title", &title));
        }
        dom::replace_children(&sel, options);
    }
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("preset-select") {
        let shipped = presets::SHIPPED
            .iter()
            .map(|(id, _)| option(id, id).attr("title", &presets::dto(id).map(|d| d.title).unwrap_or_default()));
        dom::replace_children(&sel, [option("", "custom (edited)").attr("disabled", "")].into_iter().chain(shipped));
    }
    if let Some(sel) = dom::by_id::<HtmlSelectElement>("speed-select") {
        let options = speeds.iter().map(|s| {
            let label = if *s == 0.0 { "max".to_string() } else { format!("{s}×") };
            option(&s.to_string(), &label)
        });
        dom::replace_children(&sel, options);
        sel.set_value(&speed.to_string());
    }
}

/// The Preset JSON editor (json_editor.rs) and the reason under it when its text was refused;
/// the editor's id is also its key among the held controls.
pub const EDITOR_ID: &str = "preset-json";
pub const EDITOR_ERROR_ID: &str = "preset-json-error";

/// What the form shows besides the state.
pub struct Form<'a> {
    /// The most KV the run's GPUs hold (`engine::gpu_fit::max_kv_gib`): the KV slider's end.
    pub kv_max_gib: Option<f64>,
    /// The page's own held elements (the JSON editor: key → why).
    pub invalid: &'a BTreeMap<String, String>,
    /// Controls holding a value that is not applied, and the refusals shown for them.
    pub pending: &'a Pending,
    /// Undo and Redo are on when there is a step to take.
    pub can_undo: bool,
    pub can_redo: bool,
}

/// Puts the setup on screen `state` into the form: rows, values, which allocator settings show,
/// the held controls' marks, Undo and Redo, and the locks of `mission` (the lab parsed it once;
/// the form never parses it again); the title and the JSON text are the `running` setup's.
pub fn sync(state: &LabState, running: &LabState, mission: Option<&Mission>, loaded: &PresetDto, form_state: &Form) {
    let kv_max_gib = form_state.kv_max_gib;
    let Some(form) = dom::by_id::<HtmlElement>("controls") else { return };
    // Rows of classes and bursts (rebuilt only when their number changes, so focus survives).
    let classes = state.preset.workload.classes.len();
    if let Some(box_) = dom::by_id::<HtmlElement>("classes") {
        if box_.child_element_count() as usize != classes {
            dom::replace_children(&box_, (0..classes).map(|i| class_row(i, classes > 1)));
        }
    }
    let (poisson, concurrency, bursts) = match &state.preset.workload.arrival {
        ArrivalDto::Poisson { bursts, .. } => (true, false, bursts.len()),
        ArrivalDto::Concurrency { .. } => (false, true, 0),
        ArrivalDto::Trace(_) => (false, false, 0),
    };
    if let Some(box_) = dom::by_id::<HtmlElement>("bursts") {
        if box_.child_element_count() as usize != bursts {
            dom::replace_children(&box_, (0..bursts).map(burst_row));
        }
    }
    if let Some(el) = dom::by_id::<HtmlElement>("arrival-poisson") {
        dom::set_hidden(&el, !poisson);
    }
    if let Some(el) = dom::by_id::<HtmlElement>("arrival-trace") {
        dom::set_hidden(&el, poisson || concurrency);
    }
    if let Some(el) = dom::by_id::<HtmlElement>("arrival-concurrency") {
        dom::set_hidden(&el, !concurrency);
    }
    let from_gpu = state.preset.gpu_memory_utilization.is_some();
    if let Some(el) = dom::by_id::<HtmlElement>("kvmem-gib") {
        dom::set_hidden(&el, from_gpu);
    }
    if let Some(el) = dom::by_id::<HtmlElement>("kvmem-gpu") {
        dom::set_hidden(&el, !from_gpu);
    }
    if let (Some(max), Ok(Some(slider))) =
        (kv_max_gib, form.query_selector("input[type=range][data-path='kv_memory_gib']"))
    {
        // Half-GiB steps, as the slider moves; never below its minimum.
        let top = ((max * 2.0).floor() / 2.0).max(0.5);
        let _ = slider.set_attribute("max", &top.to_string());
    }
    let paged = state.is_paged();
    if let Some(el) = dom::by_id::<HtmlElement>("alloc-contiguous") {
        dom::set_hidden(&el, paged && !state.compare);
    }
    if let Some(el) = dom::by_id::<HtmlElement>("alloc-paged") {
        dom::set_hidden(&el, !paged && !state.compare);
    }
    if let Ok(list) = form.query_selector_all("[data-path]") {
        for i in 0..list.length() {
            if let Some(el) = list.item(i).and_then(|n| n.dyn_into::<Element>().ok()) {
                let path = el.get_attribute("data-path").unwrap_or_default();
                match form_state.pending.held(&path) {
                    Some(v) => {
                        set_value(&el, v);
                        mark(&el, Some(&held_note(form_state.pending, &path)));
                    }
                    None => {
                        mark(&el, None);
                        set_control(&el, state);
                    }
                }
            }
        }
    }
    for (id, on) in [("undo-btn", form_state.can_undo), ("redo-btn", form_state.can_redo)] {
        if let Some(b) = dom::by_id::<web_sys::HtmlButtonElement>(id) {
            b.set_disabled(!on);
        }
    }
    if let Some(cb) = dom::by_id::<HtmlInputElement>("compare-toggle") {
        cb.set_checked(state.compare);
    }
    super::title::show(running, loaded);
    if let Some(ta) = dom::by_id::<HtmlTextAreaElement>(EDITOR_ID) {
        // Refused text stays in the editor (json_editor.rs) until a new setup replaces it.
        let held = form_state.invalid.contains_key(EDITOR_ID);
        if !held && dom::document().active_element().as_ref() != Some(ta.as_ref()) {
            ta.set_value(&serde_json::to_string_pretty(&running.preset).unwrap_or_default());
        }
        if !held && ta.has_attribute("aria-invalid") {
            let _ = ta.remove_attribute("aria-invalid");
            let _ = ta.remove_attribute("aria-describedby");
            if let Some(note) = dom::by_id::<Element>(EDITOR_ERROR_ID) {
                note.remove();
            }
        }
    }
    lock(&form, mission);
}

/// The transport's line saying which setup runs while controls hold values that are not
/// applied (`Session::running_note`), with its Discard button, and the metrics' note that their
/// figures are the running setup's; both hidden when the controls show the running setup.
pub fn running_note(note: Option<&str>) {
    if let Some(text) = dom::by_id::<HtmlElement>("running-note-text") {
        dom::set_text(&text, note.unwrap_or_default());
    }
    for id in ["running-note", "metrics-held"] {
        if let Some(el) = dom::by_id::<HtmlElement>(id) {
            dom::set_hidden(&el, note.is_none());
        }
    }
}

/// Disables the controls the mission's knobs do not cover (all enabled outside missions).
fn lock(form: &HtmlElement, mission: Option<&Mission>) {
    let knobs = mission.map(|m| m.knobs().to_vec());
    let locked = |path: &str| knobs.as_ref().is_some_and(|k| !control_unlocked(k, path));
    let set = |el: &Element, off: bool| {
        if el.has_attribute("disabled") != off {
            let _ = el.toggle_attribute_with_force("disabled", off);
        }
        let title = "Locked in this mission";
        if off {
            let _ = el.set_attribute("title", title);
        } else if el.get_attribute("title").as_deref() == Some(title) {
            let _ = el.remove_attribute("title");
        }
    };
    if let Ok(list) = form.query_selector_all("[data-path], [data-action]") {
        for i in 0..list.length() {
            let Some(el) = list.item(i).and_then(|n| n.dyn_into::<Element>().ok()) else { continue };
            let path = match (el.get_attribute("data-path"), el.get_attribute("data-action").as_deref()) {
                (Some(p), _) => p,
                (None, Some("add-class" | "remove-class")) => "workload.classes".into(),
                (None, Some("add-burst" | "remove-burst")) => "workload.arrival.bursts".into(),
                _ => continue,
            };
            set(&el, locked(&path));
        }
    }
    if let Some(sel) = dom::by_id::<Element>("preset-select") {
        set(&sel, mission.is_some());
    }
    if let Some(pick) = dom::by_id::<HtmlElement>("preset-pick") {
        // A mission's setup is the mission's; the picker returns when the mission is left.
        dom::set_hidden(&pick, mission.is_some());
    }
    dom::toggle_class(form, "mission-locked", mission.is_some());
    if let Some(note) = dom::by_id::<HtmlElement>("lock-note") {
        if let Some(m) = mission {
            dom::set_text(
                &note,
                &format!(
                    "Mission {} lets you change {}. The greyed-out settings are locked.",
                    m.number(),
                    crate::session::missions::knob_list(m)
                ),
            );
        }
        dom::set_hidden(&note, mission.is_none());
    }
}

/// The element a control's refusal is shown after: its labelled field, or the control itself.
fn field_of(el: &Element) -> Element {
    el.closest(".field, .check, .radios").ok().flatten().unwrap_or_else(|| el.clone())
}

/// Marks control `el` invalid with `why` beside it (`aria-invalid`, `aria-describedby` and a
/// `p.field-error` after its field), or clears the mark. A radio group is marked once.
fn mark(el: &Element, why: Option<&str>) {
    let field = field_of(el);
    let existing = field.next_element_sibling().filter(|n| n.class_list().contains("field-error"));
    match why {
        Some(text) => {
            let path = el.get_attribute("data-path").unwrap_or_default();
            let id = format!("err-{}", path.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
            let _ = el.set_attribute("aria-invalid", "true");
            let _ = el.set_attribute("aria-describedby", &id);
            let note = existing.unwrap_or_else(|| {
                let p = dom::el("p", "field-error", None);
                let _ = field.after_with_node_1(&p);
                p
            });
            let _ = note.set_attribute("id", &id);
            let _ = note.set_attribute("role", "alert");
            if note.text_content().as_deref() != Some(text) {
                dom::set_text(&note, text);
            }
        }
        None => {
            if el.has_attribute("aria-invalid") {
                let _ = el.remove_attribute("aria-invalid");
                let _ = el.remove_attribute("aria-describedby");
            }
            if let Some(n) = existing {
                n.remove();
            }
        }
    }
}

/// Whether the form has a control for `path` that the reader can see.
pub fn has_control(path: &str) -> bool {
    control(path).is_some_and(|el| el.dyn_ref::<HtmlElement>().is_some_and(|h| h.offset_parent().is_some()))
}

fn control(path: &str) -> Option<Element> {
    let form = dom::by_id::<HtmlElement>("controls")?;
    let list = form.query_selector_all("[data-path]").ok()?;
    (0..list.length())
        .filter_map(|i| list.item(i).and_then(|n| n.dyn_into::<Element>().ok()))
        .find(|el| el.get_attribute("data-path").as_deref() == Some(path))
}

/// Brings the control of `path` and its refusal into view when either is not wholly in it.
pub fn reveal(path: &str) {
    if let Some(el) = control(path) {
        let field = field_of(&el);
        let note = field.next_element_sibling().unwrap_or_else(|| field.clone());
        reveal_both(&field, &note);
    }
}

/// Scrolls `top` and `bottom` (an element and what follows it) to the middle of the view when
/// either lies outside it or under the sticky transport bar; otherwise nothing moves.
pub fn reveal_both(top: &Element, bottom: &Element) {
    let bar = dom::document()
        .query_selector(".transport")
        .ok()
        .flatten()
        .map_or(0.0, |t| t.get_bounding_client_rect().bottom().max(0.0));
    let view_h = dom::window().inner_height().ok().and_then(|h| h.as_f64()).unwrap_or(0.0);
    let (a, b) = (top.get_bounding_client_rect(), bottom.get_bounding_client_rect());
    if a.top() >= bar && b.bottom() <= view_h {
        return;
    }
    let options = web_sys::ScrollIntoViewOptions::new();
    options.set_block(web_sys::ScrollLogicalPosition::Center);
    bottom.scroll_into_view_with_scroll_into_view_options(&options);
}

/// What a held control says beside itself: its refusal, or where the refusal of the setup on
/// screen is shown.
fn held_note(pending: &Pending, path: &str) -> String {
    match (pending.refusal(path), pending.refusals().last()) {
        (Some(why), _) => format!("Not applied: {why}"),
        (None, Some((other, _))) => {
            format!("Not applied: the setup on screen is refused (the reason is beside {}).", display_path(other))
        }
        (None, None) => "Not applied.".into(),
    }
}

fn set_control(el: &Element, state: &LabState) {
    let path = el.get_attribute("data-path").unwrap_or_default();
    let Some(v) = value_for(state, &path) else { return };
    set_value(el, &v);
}

/// Shows `v` in control `el` (a radio is checked when it is its value).
fn set_value(el: &Element, v: &Value) {
    if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
        match input.type_().as_str() {
            "checkbox" => input.set_checked(v.as_bool().unwrap_or(false)),
            "radio" => input.set_checked(input.value() == text_of(v)),
            _ => {
                let text = text_of(v);
                if input.value() != text {
                    input.set_value(&text);
                }
            }
        }
    } else if let Some(sel) = el.dyn_ref::<HtmlSelectElement>() {
        sel.set_value(&text_of(v));
    }
}

/// The (path, value) a control event asks for, the value as the control holds it (a checkbox's
/// bool, else its text: the session reads numbers and refuses what is not one); None for
/// controls without a path (or an unchecked radio).
pub fn read_control(el: &Element) -> Option<(String, Value)> {
    let path = el.get_attribute("data-path")?;
    if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
        match input.type_().as_str() {
            "radio" if !input.checked() => None,
            "checkbox" => Some((path, Value::Bool(input.checked()))),
            _ => Some((path, Value::String(input.value()))),
        }
    } else {
        el.dyn_ref::<HtmlSelectElement>().map(|sel| (path, Value::String(sel.value())))
    }
}
