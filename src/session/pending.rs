//! Values the lab refused, kept on screen and never mistaken for the run. A refused edit of a
//! control stays in the control as the learner chose it (it is *held*: not applied), and the run
//! goes on with the setup last accepted (the *running* setup). The *screen* setup is the running
//! one with every held edit applied in order; refusals are judged against it, so the reason shown
//! names the GPU, model and sizes the controls show, and one cause gives one refusal: each held
//! edit whose text the lab cannot read has its own, and the screen setup has at most one more,
//! placed at the held control it names (else the latest one).
//!
//! An edit that makes the screen setup acceptable applies every held edit with it; an edit
//! refused on the screen but fine on the running setup applies alone (the others stay held);
//! Undo (with edits held) and `discard` return controls to the running value. [`running_note`]
//! is the transport's line saying which setup runs ("Running with recompute — your choice swap
//! is not applied"). The session's side of it (`Session::pending`, `screen`, the `set` command)
//! is `dispatch/held.rs`.

use serde_json::Value;

use super::control_edit::{self, display_path};
use super::url_state::LabState;

/// A control holding a value that is not applied: its path and the value as it holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    pub path: String,
    pub value: Value,
}

/// The held edits, oldest first, and the refusals shown for them (control path, why).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pending {
    pub(super) edits: Vec<Held>,
    pub(super) refusals: Vec<(String, String)>,
}

impl Pending {
    pub fn edits(&self) -> &[Held] {
        &self.edits
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The value held by the control of `path`, if it holds one.
    pub fn held(&self, path: &str) -> Option<&Value> {
        self.edits.iter().find(|h| h.path == path).map(|h| &h.value)
    }

    /// The refusals shown, one per cause: (control path, why, ending in a full stop).
    pub fn refusals(&self) -> &[(String, String)] {
        &self.refusals
    }

    /// The refusal shown beside the control of `path`.
    pub fn refusal(&self, path: &str) -> Option<&str> {
        self.refusals.iter().find(|(p, _)| p == path).map(|(_, why)| why.as_str())
    }
}

/// The running setup with `edits` applied in order: the screen setup, and the edits the lab
/// cannot read (their own refusals), which it leaves out.
pub fn screen_of(running: &LabState, edits: &[Held]) -> (LabState, Vec<(String, String)>) {
    let mut state = running.clone();
    let mut unreadable = Vec::new();
    for h in edits {
        match control_edit::edit(&state, &h.path, h.value.clone()) {
            Ok(next) => state = next,
            Err(e) => unreadable.push((h.path.clone(), e)),
        }
    }
    (state, unreadable)
}

/// The leading field of a refusal ("scheduler.preemption: …").
pub(super) fn field_of(message: &str) -> Option<&str> {
    let (head, _) = message.split_once(": ")?;
    (!head.is_empty() && !head.contains(' ')).then_some(head)
}

pub(super) fn sentence(why: &str) -> String {
    format!("{}.", why.trim_end().trim_end_matches('.'))
}

/// A control's value in words, for the transport's line.
pub fn value_words(path: &str, value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), crate::engine::numbers::show_number),
        other => other.to_string(),
    };
    let last = path.rsplit('.').next().unwrap_or(path);
    match (path, value) {
        (control_edit::KV_MEMORY_KIND_PATH, _) if text == "gpu" => "KV memory from the GPU".into(),
        (control_edit::KV_MEMORY_KIND_PATH, _) => "KV memory given in GiB".into(),
        (control_edit::ALLOCATOR_KIND_PATH, _) => format!("the {text} allocator"),
        ("kv_memory_gib", _) => format!("{text} GiB of KV"),
        ("tensor_parallel_size", _) => format!("tensor_parallel_size {text}"),
        ("allocator.block_size", _) => format!("{text}-token blocks"),
        ("scheduler.engine", _) => format!("vLLM {text}"),
        ("model" | "gpu" | "scheduler.preemption" | "kv_dtype", _) => text,
        (_, Value::Bool(b)) => format!("{} {}", last.replace('_', " "), if *b { "on" } else { "off" }),
        (control_edit::ATTENTION_BACKEND_PATH, _) if text.is_empty() => "vLLM's own attention backend".into(),
        _ => format!("{} {text}", display_path(path)),
    }
}

/// The preset field a control path edits (`allocator.block_size` → `allocator.block_size`;
/// the switches of kind → the field they change).
pub(super) fn preset_field(path: &str) -> &str {
    match path {
        control_edit::KV_MEMORY_KIND_PATH => "gpu_memory_utilization",
        control_edit::ALLOCATOR_KIND_PATH => "allocator",
        other => other,
    }
}
