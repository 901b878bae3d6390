//! How a settings control reads and edits the lab state, without the DOM: a control's
//! `data-path` (`scheduler.max_num_seqs`, `workload.classes.0.n`, `@paged.block_size` for the
//! allocator settings kept for the other allocator too) as preset-path segments, the value a
//! control shows (the engine's default where the preset leaves a field out), parsing what the
//! learner typed, the edit itself, adding and removing workload rows, and which controls a
//! mission's knobs leave free.

use serde_json::Value;

use crate::engine::version::EngineVersion;
use crate::formats::json::from_json_with_path;
use crate::formats::paths::{self, Seg};
use crate::formats::preset::{AllocatorDto, ArrivalDto, BurstDto, ClassDto};

use super::url_state::LabState;

/// The model picker's value for a model given by its shape rather than by id.
pub const CUSTOM_MODEL: &str = "__custom";

pub const ATTENTION_BACKEND_PATH: &str = "attention_backend";

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

pub fn text_of(v: &Value) -> String {
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
