//! The settings form. Every control names the preset field it edits in `data-path`
//! (`scheduler.max_num_seqs`, `workload.classes.0.n`; `@…` paths for the allocator settings,
//! which live in either the preset or the remembered other allocator) and its type in
//! `data-type`. An edit changes a copy of the lab state through that path; the lab validates
//! it and either takes it or shows the error and puts the form back. The same paths fill the
//! form from the state, so the form and the state cannot disagree. In mission mode the controls
//! no knob covers are disabled, with a note saying which knobs the mission leaves free.

use serde_json::Value;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

use crate::engine::model::{gpu_preset, GPU_IDS, MODEL_IDS};
use crate::engine::startup_checks::ATTENTION_BACKENDS;
use crate::engine::version::EngineVersion;
use crate::formats::calibration::shipped_calibration;
use crate::formats::json::from_json_with_path;
use crate::formats::paths::{self, Seg};
use crate::formats::preset::{AllocatorDto, ArrivalDto, BurstDto, ClassDto};
use crate::missions::mission::Mission;
use crate::shipped;

use super::dom::{self, Node};
use super::presets;
use super::url_state::LabState;

const CUSTOM_MODEL: &str = "__custom";

/// A control's `data-path` (`workload.classes.0.n`, `@paged.block_size`) as preset-path
/// segments, read as written: a number is an array index, anything else a key.
pub fn control_path_segments(path: &str) -> Vec<Seg> {
    path.trim_start_matches('@')
        .split('.')
        .map(|s| match s.parse::<usize>() {
            Ok(i) if s.bytes().all(|b| b.is_ascii_digit()) => Seg::Index(i),
            _ => Seg::Key(s.to_string()),
        })
        .collect()
}

/// The preset path a control edits: its `data-path` read as written, except that the allocator
/// controls (`@paged.block_size`) edit `allocator.…` and switching the allocator (`@alloc.kind`)
/// replaces `allocator` whole.
fn preset_segments(control: &str) -> Vec<Seg> {
    let allocator = Seg::Key("allocator".into());
    match control.strip_prefix('@') {
        Some("alloc.kind") => vec![allocator],
        // Switching between given GiB and the GPU's share is a change of the KV memory.
        Some("kvmem.kind") => vec![Seg::Key("kv_memory_gib".into())],
        Some(rest) => {
            let field = rest.split_once('.').map_or(rest, |(_, f)| f);
            [vec![allocator], control_path_segments(field)].concat()
        }
        None => control_path_segments(control),
    }
}

/// Whether a mission with these knobs lets the learner use the control at `control`
/// (a `data-path`; `workload.classes` and `workload.arrival.bursts` for adding rows): some
/// knob covers the preset path it edits (`formats::paths::covers`).
pub fn control_unlocked(knobs: &[String], control: &str) -> bool {
    let path = preset_segments(control);
    knobs.iter().filter_map(|k| paths::parse_path(k)).any(|knob| paths::covers(&knob, &path))
}

/// A control's `data-path` as a learner reads it: `workload.classes[0].n`, `paged.block_size`.
pub fn display_path(path: &str) -> String {
    paths::display_path(&control_path_segments(path))
}

/// Reads a control's value as JSON of its `data-type` (`num`, `int`, `str`, `bool`).
pub fn parse_value(kind: &str, raw: &str, checked: bool, path: &str) -> Result<Value, String> {
    let name = display_path(path);
    match kind {
        "bool" => Ok(Value::Bool(checked)),
        "int" => raw
            .trim()
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| format!("{name}: \"{raw}\" is not a whole number; enter one like 16")),
        "num" => raw
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Value::from)
            .ok_or_else(|| format!("{name}: \"{raw}\" is not a number; enter one like 2.5")),
        _ => Ok(Value::String(raw.to_string())),
    }
}

fn set_in(root: &mut Value, path: &str, value: Value) -> Result<(), String> {
    paths::set_path(root, &control_path_segments(path), value).map_err(|e| format!("{}: {e}", display_path(path)))
}

fn get_in<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    paths::get_path(root, &control_path_segments(path))
}

/// The state after setting the field at `path` to `value` (not yet validated as a config).
pub fn edit(state: &LabState, path: &str, value: Value) -> Result<LabState, String> {
    let mut next = state.clone();
    if path == ATTENTION_BACKEND_PATH {
        // "" is vLLM's own choice: the field is left out.
        next.preset.attention_backend = match value {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s),
            other => return Err(format!("attention_backend: {other} is not a backend name")),
        };
        return Ok(next);
    }
    if path == "calibration" {
        // "" is the selector's "none (default model)": the field is left out.
        next.preset.calibration = match value {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s),
            other => return Err(format!("calibration: {other} is not a calibration name")),
        };
        return Ok(next);
    }
    if let Some(rest) = path.strip_prefix('@') {
        if rest == "alloc.kind" {
            next.switch_allocator(value.as_str() == Some("paged"));
            return Ok(next);
        }
        if rest == "kvmem.kind" {
            let from_gpu = value.as_str() == Some("gpu");
            if from_gpu != next.preset.gpu_memory_utilization.is_some() {
                let p = &mut next.preset;
                // vLLM's default share, or the lab's default KV memory.
                (p.kv_memory_gib, p.gpu_memory_utilization) =
                    if from_gpu { (None, Some(0.9)) } else { (Some(10.0), None) };
                p.gpu_memory_in_use_gib = 0.0;
            }
            return Ok(next);
        }
        let (kind, field) = rest.split_once('.').ok_or_else(|| format!("{path}: unknown control"))?;
        let paged = kind == "paged";
        let mut alloc = serde_json::to_value(next.allocator_of(paged)).map_err(|e| e.to_string())?;
        set_in(&mut alloc, field, value)?;
        let alloc: AllocatorDto =
            from_json_with_path(&alloc.to_string()).map_err(|e| format!("allocator.{field}: {}", e.message))?;
        if next.is_paged() == paged {
            next.preset.allocator = alloc;
        } else {
            next.alt = Some(alloc);
        }
        return Ok(next);
    }
    let mut v = serde_json::to_value(&next.preset).map_err(|e| e.to_string())?;
    set_in(&mut v, path, value)?;
    next.preset = from_json_with_path(&v.to_string()).map_err(|e| e.to_string())?;
    Ok(next)
}

/// The value the control at `path` shows for `state`, as text (or a bool for checkboxes).
pub fn value_for(state: &LabState, path: &str) -> Option<Value> {
    if let Some(rest) = path.strip_prefix('@') {
        if rest == "alloc.kind" {
            return Some(Value::from(if state.is_paged() { "paged" } else { "contiguous" }));
        }
        if rest == "kvmem.kind" {
            return Some(Value::from(if state.preset.gpu_memory_utilization.is_some() { "gpu" } else { "gib" }));
        }
        let (kind, field) = rest.split_once('.')?;
        let alloc = serde_json::to_value(state.allocator_of(kind == "paged")).ok()?;
        return get_in(&alloc, field).cloned().or_else(|| engine_default(state, path));
    }
    if path == "calibration" {
        return Some(Value::from(state.preset.calibration.clone().unwrap_or_default()));
    }
    let v = serde_json::to_value(&state.preset).ok()?;
    if path == "model" && v.get("model").is_some_and(Value::is_object) {
        return Some(Value::from(CUSTOM_MODEL));
    }
    get_in(&v, path).cloned().or_else(|| engine_default(state, path))
}

/// What a field the preset leaves out means: the default of the preset's vLLM scheduler, or the
/// field's own default (one GPU, nothing else on it).
fn engine_default(state: &LabState, path: &str) -> Option<Value> {
    let engine = EngineVersion::from(state.preset.scheduler.engine);
    match path {
        "scheduler.watermark" => Some(Value::from(engine.default_watermark())),
        "@paged.prefix_caching" => Some(Value::from(engine.default_prefix_caching())),
        "tensor_parallel_size" => Some(Value::from(1)),
        ATTENTION_BACKEND_PATH => Some(Value::from("")),
        "gpu_memory_in_use_gib" => Some(Value::from(0)),
        _ => None,
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// Adds a user class (a copy of the last one) or a burst (10 s at four times the base rate).
pub fn add_row(state: &LabState, what: &str) -> Result<LabState, String> {
    let mut next = state.clone();
    match what {
        "class" => {
            let mut c = next.preset.workload.classes.last().cloned().unwrap_or_default();
            c.name = format!("class{}", next.preset.workload.classes.len() + 1);
            next.preset.workload.classes.push(ClassDto { weight: 1.0, ..c });
        }
        "burst" => {
            let d = next.preset.duration_s;
            if let ArrivalDto::Poisson { rate_per_s, bursts } = &mut next.preset.workload.arrival {
                let start = (d / 3.0).floor();
                bursts.push(BurstDto {
                    start_s: start,
                    end_s: (start + 10.0).min(d),
                    rate_per_s: (*rate_per_s * 4.0).max(1.0),
                });
            }
        }
        _ => return Err(format!("unknown row kind {what}")),
    }
    Ok(next)
}

pub fn remove_row(state: &LabState, what: &str, index: usize) -> LabState {
    let mut next = state.clone();
    match what {
        "class" if index < next.preset.workload.classes.len() => {
            next.preset.workload.classes.remove(index);
        }
        "burst" => {
            if let ArrivalDto::Poisson { bursts, .. } = &mut next.preset.workload.arrival {
                if index < bursts.len() {
                    bursts.remove(index);
                }
            }
        }
        _ => {}
    }
    next
}

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
    let p = |f: &str| format!("workload.classes.{i}.{f}");
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
    let p = |f: &str| format!("workload.arrival.bursts.{i}.{f}");
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

const ATTENTION_BACKEND_PATH: &str = "attention_backend";

/// Adds the attention backend selector after the block size (once): vLLM's own choice, or one
/// backend pinned as `--attention-backend` does, each labelled with the block sizes it runs. Under
/// a pinned backend vLLM refuses other block sizes; under its own choice the lab labels them.
fn add_attention_backend_control() {
    let Some(block) = dom::document().query_selector("[data-path='@paged.block_size']").ok().flatten() else {
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
        dom::replace_children(&sel, MODEL_IDS.iter().map(|m| option(m, m)).chain([custom]));
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

/// Puts `state` into the form: rows, values, which allocator settings show, the JSON text, and
/// the locks of `mission` (the lab parsed it once; the form never parses it again).
pub fn sync(state: &LabState, mission: Option<&Mission>) {
    let Some(form) = dom::by_id::<HtmlElement>("controls") else { return };
    // Rows of classes and bursts (rebuilt only when their number changes, so focus survives).
    let classes = state.preset.workload.classes.len();
    if let Some(box_) = dom::by_id::<HtmlElement>("classes") {
        if box_.child_element_count() as usize != classes {
            dom::replace_children(&box_, (0..classes).map(|i| class_row(i, classes > 1)));
        }
    }
    let (poisson, bursts) = match &state.preset.workload.arrival {
        ArrivalDto::Poisson { bursts, .. } => (true, bursts.len()),
        ArrivalDto::Trace { .. } => (false, 0),
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
        dom::set_hidden(&el, poisson);
    }
    let from_gpu = state.preset.gpu_memory_utilization.is_some();
    if let Some(el) = dom::by_id::<HtmlElement>("kvmem-gib") {
        dom::set_hidden(&el, from_gpu);
    }
    if let Some(el) = dom::by_id::<HtmlElement>("kvmem-gpu") {
        dom::set_hidden(&el, !from_gpu);
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
                set_control(&el, state);
            }
        }
    }
    if let Some(cb) = dom::by_id::<HtmlInputElement>("compare-toggle") {
        cb.set_checked(state.compare);
    }
    super::title::show(state);
    if let Some(ta) = dom::by_id::<HtmlTextAreaElement>("preset-json") {
        if dom::document().active_element().as_ref() != Some(ta.as_ref()) {
            ta.set_value(&serde_json::to_string_pretty(&state.preset).unwrap_or_default());
        }
    }
    lock(&form, mission);
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
                    super::missions::knob_list(m)
                ),
            );
        }
        dom::set_hidden(&note, mission.is_none());
    }
}

fn set_control(el: &Element, state: &LabState) {
    let path = el.get_attribute("data-path").unwrap_or_default();
    let Some(v) = value_for(state, &path) else { return };
    if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
        match input.type_().as_str() {
            "checkbox" => input.set_checked(v.as_bool().unwrap_or(false)),
            "radio" => input.set_checked(input.value() == text_of(&v)),
            _ => {
                let text = text_of(&v);
                if input.value() != text {
                    input.set_value(&text);
                }
            }
        }
    } else if let Some(sel) = el.dyn_ref::<HtmlSelectElement>() {
        sel.set_value(&text_of(&v));
    }
}

/// The (path, value) a control event asks for; None for controls without a path (or an
/// unchecked radio).
pub fn read_control(el: &Element) -> Option<Result<(String, Value), String>> {
    let path = el.get_attribute("data-path")?;
    let kind = el.get_attribute("data-type").unwrap_or_else(|| "str".into());
    let (raw, checked) = if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
        if input.type_() == "radio" && !input.checked() {
            return None;
        }
        (input.value(), input.checked())
    } else if let Some(sel) = el.dyn_ref::<HtmlSelectElement>() {
        (sel.value(), false)
    } else {
        return None;
    };
    Some(parse_value(&kind, &raw, checked, &path).map(|v| (path, v)))
}
