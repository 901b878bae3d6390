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
//! is not applied").

use serde_json::Value;

use super::command::{Applied, ChangeFrom, Place, Refused};
use super::control_edit::{self, display_path, value_for};
use super::dispatch::Session;
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
    edits: Vec<Held>,
    refusals: Vec<(String, String)>,
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
fn field_of(message: &str) -> Option<&str> {
    let (head, _) = message.split_once(": ")?;
    (!head.is_empty() && !head.contains(' ')).then_some(head)
}

fn sentence(why: &str) -> String {
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

impl Session {
    /// The held edits and their refusals.
    pub fn pending(&self) -> &Pending {
        &self.pending
    }

    /// The setup the controls show: the running one with every held edit applied.
    pub fn screen(&self) -> LabState {
        screen_of(&self.lab.state, &self.pending.edits).0
    }

    /// Undo has a step: a held edit to drop, or a setup to go back to.
    pub fn can_undo(&self) -> bool {
        !self.pending.is_empty() || self.history.can_undo()
    }

    /// Which setup runs while controls hold values that are not applied, one sentence per held
    /// control ("Running with recompute — your choice swap is not applied."); None when the
    /// controls show the running setup.
    pub fn running_note(&self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let running = &self.lab.state;
        let lines: Vec<String> = self
            .pending
            .edits
            .iter()
            .map(|h| {
                let now = value_for(running, &h.path).map_or_else(|| "its running value".into(), |v| value_words(&h.path, &v));
                format!("Running with {now} — your choice {} is not applied.", value_words(&h.path, &h.value))
            })
            .collect();
        Some(lines.join(" "))
    }

    /// The Set command: see the module doc. `hold`: a refused value stays held in its control
    /// (the page's form); otherwise a refusal leaves nothing held (a host page's `set`).
    pub(super) fn set_field(&mut self, path: String, value: Value, hold: bool) -> Result<Applied, Refused> {
        let from = ChangeFrom::Control;
        let place = Place::Control(path.clone());
        let mut edits = self.pending.edits.clone();
        edits.retain(|h| h.path != path);
        edits.push(Held { path: path.clone(), value: value.clone() });
        // The screen setup with this edit: when it runs, every held value it could read is applied.
        let (screen, unreadable) = screen_of(&self.lab.state, &edits);
        if !unreadable.iter().any(|(p, _)| *p == path) {
            // The screen setup with this edit: when it runs, every held value it could read is
            // applied with it.
            if let Ok(applied) = self.change(from, true, Some(&path), Ok(screen)) {
                edits.retain(|h| unreadable.iter().any(|(p, _)| *p == h.path));
                self.pending.edits = edits;
                self.judge();
                return Ok(applied);
            }
            if !self.pending.is_empty() {
                // Fine on the running setup: it applies alone, and the others stay held.
                let alone = control_edit::edit(&self.lab.state, &path, value);
                if let Ok(applied) = self.change(from, true, Some(&path), alone) {
                    self.pending.edits.retain(|h| h.path != path);
                    self.settle();
                    return Ok(applied);
                }
            }
        }
        if !hold {
            let message = self.check_screen(&edits).err().unwrap_or_else(|| format!("{path}: refused"));
            return Err(Refused { from, place, message });
        }
        self.pending.edits = edits;
        self.judge();
        let message = match (self.pending.refusal(&path), self.pending.refusals.last()) {
            (Some(why), _) => why.trim_end_matches('.').to_string(),
            (None, Some((_, why))) => format!(
                "{}: not applied while the setup on screen is refused: {}",
                display_path(&path),
                why.trim_end_matches('.')
            ),
            (None, None) => format!("{}: not applied", display_path(&path)),
        };
        Err(Refused { from, place, message })
    }

    /// Returns the control of `path` (every control, for None) to the running value.
    pub(super) fn discard(&mut self, path: Option<&str>) -> Applied {
        let before = self.pending.edits.len();
        self.pending.edits.retain(|h| path.is_some_and(|p| p != h.path));
        if self.pending.edits.len() == before {
            return Applied::default();
        }
        self.settle();
        Applied { setup: true, ..Applied::default() }
    }

    /// Lets go of the values held by workload rows' controls (a row removed moves their paths).
    pub(super) fn discard_rows(&mut self) {
        let row = |p: &str| p.starts_with("workload.classes[") || p.starts_with("workload.arrival.bursts[");
        self.pending.edits.retain(|h| !row(&h.path));
    }

    /// Why a sweep or a search cannot run while controls hold values that are not applied: it
    /// would run a setup other than the one on screen.
    pub(super) fn held_blocks_runs(&self) -> Option<String> {
        let h = self.pending.edits.last()?;
        Some(format!(
            "{} holds {}, which is not applied; change it to a value the lab accepts or press Undo, then run it on the setup on screen",
            display_path(&h.path),
            value_words(&h.path, &h.value)
        ))
    }

    /// Undo with edits held: the latest one goes back to the running value.
    pub(super) fn undo_held(&mut self) -> Option<Applied> {
        self.pending.edits.pop()?;
        self.settle();
        Some(Applied { setup: true, ..Applied::default() })
    }

    /// Drops every held edit (a whole new setup replaces them).
    pub(super) fn clear_held(&mut self) {
        self.pending = Pending::default();
    }

    /// After the running setup or the held edits changed: the screen setup runs when it can;
    /// otherwise its refusals are judged again.
    pub(super) fn settle(&mut self) {
        if self.pending.is_empty() {
            self.pending.refusals.clear();
            return;
        }
        let (screen, unreadable) = screen_of(&self.lab.state, &self.pending.edits);
        if self.lab.check(&screen).is_ok() {
            let _ = self.change(ChangeFrom::Control, true, None, Ok(screen));
            self.pending.edits.retain(|h| unreadable.iter().any(|(p, _)| *p == h.path));
        }
        self.judge();
    }

    /// Whether the screen setup of `edits` runs, or why not.
    fn check_screen(&self, edits: &[Held]) -> Result<(), String> {
        let (screen, unreadable) = screen_of(&self.lab.state, edits);
        if let Some((_, e)) = unreadable.into_iter().last() {
            return Err(e);
        }
        self.lab.check(&screen).map_err(|e| self.advise(&e))
    }

    /// The refusals of the held edits, against the screen setup (see the module doc).
    fn judge(&mut self) {
        let (screen, unreadable) = screen_of(&self.lab.state, &self.pending.edits);
        let mut refusals: Vec<(String, String)> =
            unreadable.iter().map(|(p, e)| (p.clone(), sentence(&self.advise(e)))).collect();
        let readable: Vec<&Held> =
            self.pending.edits.iter().filter(|h| !unreadable.iter().any(|(p, _)| *p == h.path)).collect();
        if let Some(latest) = readable.last() {
            if let Err(e) = self.lab.check(&screen) {
                let named = field_of(&e).and_then(|f| readable.iter().find(|h| h.path == f || preset_field(&h.path) == f));
                let path = named.map_or(latest.path.clone(), |h| h.path.clone());
                refusals.retain(|(p, _)| *p != path);
                refusals.push((path, sentence(&self.advise(&e))));
            }
        }
        self.pending.refusals = refusals;
    }

    /// A refusal's advice, as far as the mission being played lets the learner follow it.
    pub(super) fn advise(&self, message: &str) -> String {
        match &self.lab.mission {
            Some(m) => super::advice::within_locks(message, m),
            None => message.to_string(),
        }
    }
}

/// The preset field a control path edits (`allocator.block_size` → `allocator.block_size`;
/// the switches of kind → the field they change).
fn preset_field(path: &str) -> &str {
    match path {
        control_edit::KV_MEMORY_KIND_PATH => "gpu_memory_utilization",
        control_edit::ALLOCATOR_KIND_PATH => "allocator",
        other => other,
    }
}
