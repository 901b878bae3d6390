//! How a settings control reads and edits the lab state, without the DOM. A control's
//! `data-path` is a lab path (`session::command`'s dialect): a preset path as `formats::paths`
//! writes it (`scheduler.max_num_seqs`, `workload.classes[0].n`), where `allocator.<field>`
//! edits the settings of the allocator kind that has the field (used now or remembered for when
//! it is chosen), and `allocator.kind` and `kv_memory.kind` switch kinds. Also: the value a
//! control shows (the engine's default where the preset leaves a field out), parsing what the
//! learner typed, the edit itself, adding and removing workload rows, and which controls a
//! mission's knobs leave free.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::version::EngineVersion;
use crate::formats::json::from_json_with_path;
use crate::formats::paths::{self, PathKind, Seg};
use crate::formats::preset::{AllocatorDto, ArrivalDto, BurstDto, ClassDto};

use super::url_state::LabState;

/// A workload row kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Row {
    Class,
    Burst,
}

/// The model picker's value for a model given by its shape rather than by id.
pub const CUSTOM_MODEL: &str = "__custom";

pub const ATTENTION_BACKEND_PATH: &str = "attention_backend";
/// Switches the allocator in use (`"contiguous"` or `"paged"`), keeping the other's settings.
pub const ALLOCATOR_KIND_PATH: &str = "allocator.kind";
/// Switches between KV memory given in GiB (`"gib"`) and the GPU's share (`"gpu"`).
pub const KV_MEMORY_KIND_PATH: &str = "kv_memory.kind";
/// The host-memory KV tier's size (`kv_offload`): 0 leaves the tier out.
pub const KV_OFFLOAD_GIB_PATH: &str = "kv_offload.cpu_gib";

/// The allocator fields of each kind.
const PAGED_FIELDS: &[&str] = &["block_size", "prefix_caching"];
const CONTIGUOUS_FIELDS: &[&str] = &["reserve", "fit"];

/// A lab path as preset-path segments (`workload.classes[0].n`); an error names the path.
pub fn control_path_segments(path: &str) -> Result<Vec<Seg>, String> {
    paths::parse_path(path)
        .ok_or_else(|| format!("\"{path}\" is not a preset path; write one like workload.classes[0].n"))
}

/// `allocator.<field>`: whether the field is the paged allocator's (None: not an allocator field).
fn allocator_field(path: &str) -> Option<(bool, &str)> {
    let field = path.strip_prefix("allocator.")?;
    if PAGED_FIELDS.contains(&field) {
        Some((true, field))
    } else if CONTIGUOUS_FIELDS.contains(&field) {
        Some((false, field))
    } else {
        None
    }
}

/// The preset path a control edits: the lab path itself, except that switching the allocator
/// replaces `allocator` whole and switching the KV memory's kind changes `kv_memory_gib`.
fn preset_segments(control: &str) -> Vec<Seg> {
    let path = match control {
        ALLOCATOR_KIND_PATH => "allocator",
        KV_MEMORY_KIND_PATH => "kv_memory_gib",
        other => other,
    };
    control_path_segments(path).unwrap_or_default()
}

/// Whether a mission with these knobs lets the learner use the control at `control`
/// (a `data-path`; `workload.classes` and `workload.arrival.bursts` for adding rows): some
/// knob covers the preset path it edits (`formats::paths::covers`).
pub fn control_unlocked(knobs: &[String], control: &str) -> bool {
    let path = preset_segments(control);
    knobs.iter().filter_map(|k| paths::parse_path(k)).any(|knob| paths::covers(&knob, &path))
}

/// A lab path as a learner reads it (`workload.classes[0].n`).
pub fn display_path(path: &str) -> String {
    paths::parse_path(path).map_or_else(|| path.to_string(), |s| paths::display_path(&s))
}

fn set_in(root: &mut Value, path: &str, value: Value) -> Result<(), String> {
    paths::set_path(root, &control_path_segments(path)?, value).map_err(|e| format!("{}: {e}", display_path(path)))
}

fn get_in<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    paths::get_path(root, &control_path_segments(path).ok()?)
}

/// A number the host or a form wrote as text (`"64"`) for a number field, read as the number
/// (whole numbers as integers); text that is not a number is refused naming the field.
fn coerce(path: &str, value: Value) -> Result<Value, String> {
    let Value::String(text) = &value else { return Ok(value) };
    if paths::preset_path_kind(path) != Some(PathKind::Number) {
        return Ok(value);
    }
    match text.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9e15 => Ok(Value::from(f as i64)),
        Ok(f) if f.is_finite() => Ok(Value::from(f)),
        _ => Err(format!("{}: \"{text}\" is not a number; enter one like 16", display_path(path))),
    }
}

/// The class length a path of the class controls names (`workload.classes[i].prompt_tokens.mean`
/// or `….p99`, likewise `output_tokens`), when that length is fixed (`{"fixed": N}`): the class
/// index, whether it is the output length, and whether the field is the p99.
fn fixed_length_field(state: &LabState, path: &str) -> Option<(usize, bool, bool)> {
    let segs = control_path_segments(path).ok()?;
    let [Seg::Key(workload), Seg::Key(classes), Seg::Index(i), Seg::Key(dist), Seg::Key(field)] = segs.as_slice()
    else {
        return None;
    };
    if (workload.as_str(), classes.as_str()) != ("workload", "classes") {
        return None;
    }
    let output = match dist.as_str() {
        "prompt_tokens" => false,
        "output_tokens" => true,
        _ => return None,
    };
    let p99 = match field.as_str() {
        "mean" => false,
        "p99" => true,
        _ => return None,
    };
    let i = *i;
    let class = state.preset.workload.classes.get(i)?;
    let d = if output { &class.output_tokens } else { &class.prompt_tokens };
    d.fixed.map(|_| (i, output, p99))
}

/// The state after setting the field at `path` to `value` (not yet validated as a config).
pub fn edit(state: &LabState, path: &str, value: Value) -> Result<LabState, String> {
    let mut next = state.clone();
    // A fixed length (a log-normal whose mean and p99 are both N): a new mean keeps it fixed at
    // that length, a new p99 makes it the log-normal of mean N and that p99.
    if let Some((i, output, p99)) = fixed_length_field(state, path) {
        let x =
            coerce(path, value)?.as_f64().ok_or_else(|| format!("{}: enter a number of tokens", display_path(path)))?;
        let class = &mut next.preset.workload.classes[i];
        let d = if output { &mut class.output_tokens } else { &mut class.prompt_tokens };
        let n = f64::from(d.fixed.unwrap_or(0));
        *d = if p99 {
            crate::formats::preset::DistDto::log_normal(n, x)
        } else if x >= 1.0 && x.fract() == 0.0 && x <= f64::from(u32::MAX) {
            crate::formats::preset::DistDto { mean: None, p99: None, fixed: Some(x as u32) }
        } else {
            return Err(format!("{}: {x} is not a whole number of tokens; enter one like 512", display_path(path)));
        };
        return Ok(next);
    }
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
    // The first module hands this field to the full lab (`Command::needs_panels`).
    #[cfg(feature = "kv-offload")]
    if path == KV_OFFLOAD_GIB_PATH {
        // An emptied field is 0: no tier.
        let gib = if value.as_str().is_some_and(|t| t.trim().is_empty()) {
            0.0
        } else {
            // Not a number (JSON true): NaN, which the tier's range check refuses at the field.
            coerce(path, value)?.as_f64().unwrap_or(f64::NAN)
        };
        return Ok(with_host_tier(next, gib));
    }
    if path == ALLOCATOR_KIND_PATH {
        match value.as_str() {
            Some("paged") => next.switch_allocator(true),
            Some("contiguous") => next.switch_allocator(false),
            _ => return Err(format!("allocator.kind: {value} is not an allocator; use \"contiguous\" or \"paged\"")),
        }
        return Ok(next);
    }
    if path == KV_MEMORY_KIND_PATH {
        let from_gpu = match value.as_str() {
            Some("gpu") => true,
            Some("gib") => false,
            _ => return Err(format!("kv_memory.kind: {value} is not a kind; use \"gib\" or \"gpu\"")),
        };
        if from_gpu != next.preset.gpu_memory_utilization.is_some() {
            let p = &mut next.preset;
            // vLLM's default share, or the lab's default KV memory.
            (p.kv_memory_gib, p.gpu_memory_utilization) = if from_gpu { (None, Some(0.9)) } else { (Some(10.0), None) };
            p.gpu_memory_in_use_gib = 0.0;
        }
        return Ok(next);
    }
    if let Some((paged, field)) = allocator_field(path) {
        let mut alloc = serde_json::to_value(next.allocator_of(paged)).map_err(|e| e.to_string())?;
        set_in(&mut alloc, field, coerce(path, value)?)?;
        let alloc: AllocatorDto =
            from_json_with_path(&alloc.to_string()).map_err(|e| format!("allocator.{field}: {}", e.message))?;
        if next.is_paged() == paged {
            next.preset.allocator = alloc;
        } else {
            next.alt = Some(alloc);
        }
        return Ok(next);
    }
    if paths::preset_path_kind(path).is_none() {
        return Err(format!("\"{path}\" is not a field of a preset; see docs/SCHEMA.md for the paths"));
    }
    let value = coerce(path, value)?;
    let fraction = value.as_f64().filter(|f| f.fract() != 0.0);
    let mut v = serde_json::to_value(&next.preset).map_err(|e| e.to_string())?;
    // A preset without a router routes round robin: a router field edits that one.
    #[cfg(feature = "panels")]
    if path.starts_with("router.") && next.preset.router.is_none() {
        v["router"] = serde_json::json!({ "policy": "round_robin" });
    }
    set_in(&mut v, path, value)?;
    next.preset = from_json_with_path(&v.to_string()).map_err(|e| match fraction {
        // serde's words for a fraction in a whole-number field give the type's range, not the field's.
        Some(f) if e.message.contains("whole number") => {
            format!("{}: {f} is not a whole number; enter one like {}", display_path(path), f.round().max(1.0))
        }
        // The first module's reader may not name the field (formats::json): it is the one set.
        _ if e.field.is_empty() => format!("{}: {}", display_path(path), e.message),
        _ => e.to_string(),
    })?;
    Ok(next)
}

/// `next` with a host tier of `gib` GiB (its policy kept), or none at 0.
#[cfg(feature = "kv-offload")]
fn with_host_tier(mut next: LabState, gib: f64) -> LabState {
    let policy = next.preset.kv_offload.as_ref().map(|o| o.policy).unwrap_or_default();
    next.preset.kv_offload = (gib != 0.0).then_some(crate::formats::preset::KvOffloadDto { cpu_gib: gib, policy });
    next
}

/// The value the control at `path` shows for `state`, as text (or a bool for checkboxes).
pub fn value_for(state: &LabState, path: &str) -> Option<Value> {
    if path == ALLOCATOR_KIND_PATH {
        return Some(Value::from(if state.is_paged() { "paged" } else { "contiguous" }));
    }
    if path == KV_MEMORY_KIND_PATH {
        return Some(Value::from(if state.preset.gpu_memory_utilization.is_some() { "gpu" } else { "gib" }));
    }
    if let Some((paged, field)) = allocator_field(path) {
        let alloc = serde_json::to_value(state.allocator_of(paged)).ok()?;
        return get_in(&alloc, field).cloned().or_else(|| engine_default(state, path));
    }
    if path == "calibration" {
        return Some(Value::from(state.preset.calibration.clone().unwrap_or_default()));
    }
    if let Some((i, output, _)) = fixed_length_field(state, path) {
        let class = &state.preset.workload.classes[i];
        return (if output { class.output_tokens } else { class.prompt_tokens }).fixed.map(Value::from);
    }
    let v = serde_json::to_value(&state.preset).ok()?;
    if path == "model" && v.get("model").is_some_and(Value::is_object) {
        return Some(Value::from(CUSTOM_MODEL));
    }
    get_in(&v, path).cloned().or_else(|| engine_default(state, path))
}

/// What a field the preset leaves out means: the default of the preset's vLLM scheduler (the
/// batch limits vLLM's for its GPU), or the field's own default (one GPU, nothing else on it).
fn engine_default(state: &LabState, path: &str) -> Option<Value> {
    let engine = EngineVersion::from(state.preset.scheduler.engine);
    match path {
        "scheduler.watermark" => Some(Value::from(engine.default_watermark())),
        "allocator.prefix_caching" => Some(Value::from(engine.default_prefix_caching())),
        "tensor_parallel_size" | "replicas" => Some(Value::from(1)),
        "router.policy" => Some(Value::from("round_robin")),
        // The first view's control shows the roofline as served (a clock hands the page over).
        #[cfg(feature = "kernel-clock")]
        "clock" => Some(Value::from("roofline")),
        ATTENTION_BACKEND_PATH => Some(Value::from("")),
        "gpu_memory_in_use_gib" | KV_OFFLOAD_GIB_PATH => Some(Value::from(0)),
        "scheduler.max_num_batched_tokens" => state.preset.batch_limits().map(|(tokens, _)| Value::from(tokens)),
        "scheduler.max_num_seqs" => state.preset.batch_limits().map(|(_, seqs)| Value::from(seqs)),
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
pub fn add_row(state: &LabState, row: Row) -> LabState {
    let mut next = state.clone();
    match row {
        Row::Class => {
            let mut c = next.preset.workload.classes.last().cloned().unwrap_or_default();
            c.name = format!("class{}", next.preset.workload.classes.len() + 1);
            next.preset.workload.classes.push(ClassDto { weight: 1.0, ..c });
        }
        Row::Burst => {
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
    }
    next
}

pub fn remove_row(state: &LabState, row: Row, index: usize) -> LabState {
    let mut next = state.clone();
    match row {
        Row::Class if index < next.preset.workload.classes.len() => {
            next.preset.workload.classes.remove(index);
        }
        Row::Burst => {
            if let ArrivalDto::Poisson { bursts, .. } = &mut next.preset.workload.arrival {
                if index < bursts.len() {
                    bursts.remove(index);
                }
            }
        }
        Row::Class => {}
    }
    next
}
