//! The [`Session`]'s side of held values (`session::pending`): the `set` command that holds a
//! refused value, `discard`, Undo of a held value, and judging the held values again against
//! the setup on screen whenever the running setup changes.

use serde_json::Value;

use crate::session::command::{Applied, ChangeFrom, Place, Refused};
use crate::session::control_edit::{self, display_path, value_for};
use crate::session::pending::{field_of, preset_field, screen_of, sentence, value_words, Held, Pending};
use crate::session::url_state::LabState;

use super::Session;

/// Controls whose values shape other refusals (the GPU, model and memory they name): a refusal
/// judged without one of them would not be about the setup on screen.
const SHAPING: &[&str] = &[
    "gpu",
    "model",
    "kv_dtype",
    "kv_memory_gib",
    control_edit::KV_MEMORY_KIND_PATH,
    "gpu_memory_utilization",
    "gpu_memory_in_use_gib",
    "tensor_parallel_size",
];

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
                let now = value_for(running, &h.path)
                    .map_or_else(|| "its running value".into(), |v| value_words(&h.path, &v));
                format!("Running with {now} — your choice {} is not applied.", value_words(&h.path, &h.value))
            })
            .collect();
        Some(lines.join(" "))
    }

    /// The Set command: see the module doc. `hold`: a refused value stays held in its control
    /// (the page's form); otherwise a refusal leaves nothing held (a host page's `set`).
    pub(in crate::session) fn set_field(&mut self, path: String, value: Value, hold: bool) -> Result<Applied, Refused> {
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
            (None, Some((_, why))) => {
                // The value typed, in the reason given for holding it ("kv_memory_gib: 1000 is
                // held, not applied, while …").
                let typed = self.pending.edits.iter().rev().find(|h| h.path == path).map(|h| match &h.value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
                let typed =
                    typed.map(|t| format!(" {t} is held, not applied,")).unwrap_or_else(|| " not applied".into());
                format!(
                    "{}:{typed} while the setup on screen is refused: {}",
                    display_path(&path),
                    why.trim_end_matches('.')
                )
            }
            (None, None) => format!("{}: not applied", display_path(&path)),
        };
        Err(Refused { from, place, message })
    }

    /// Returns the control of `path` (every control, for None) to the running value.
    pub(in crate::session) fn discard(&mut self, path: Option<&str>) -> Applied {
        let before = self.pending.edits.len();
        self.pending.edits.retain(|h| path.is_some_and(|p| p != h.path));
        if self.pending.edits.len() == before {
            return Applied::default();
        }
        self.settle();
        Applied { setup: true, ..Applied::default() }
    }

    /// Lets go of the values held by workload rows' controls (a row removed moves their paths).
    pub(in crate::session) fn discard_rows(&mut self) {
        let row = |p: &str| p.starts_with("workload.classes[") || p.starts_with("workload.arrival.bursts[");
        self.pending.edits.retain(|h| !row(&h.path));
    }

    #[cfg(feature = "panels")]
    /// Why a sweep or a search cannot run while controls hold values that are not applied: it
    /// would run a setup other than the one on screen.
    pub(in crate::session) fn held_blocks_runs(&self) -> Option<String> {
        let h = self.pending.edits.last()?;
        Some(format!(
            "{} holds {}, which is not applied; change it to a value the lab accepts or press Undo, then run it on the setup on screen",
            display_path(&h.path),
            value_words(&h.path, &h.value)
        ))
    }

    /// Undo with edits held: the latest one goes back to the running value.
    pub(in crate::session) fn undo_held(&mut self) -> Option<Applied> {
        self.pending.edits.pop()?;
        self.settle();
        Some(Applied { setup: true, ..Applied::default() })
    }

    /// Drops every held edit (a whole new setup replaces them).
    pub(in crate::session) fn clear_held(&mut self) {
        self.pending = Pending::default();
    }

    /// After the running setup or the held edits changed: the screen setup runs when it can;
    /// otherwise its refusals are judged again.
    pub(in crate::session) fn settle(&mut self) {
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
        let (_, unreadable) = screen_of(&self.lab.state, &self.pending.edits);
        let mut refusals: Vec<(String, String)> =
            unreadable.iter().map(|(p, e)| (p.clone(), sentence(&self.advise(e)))).collect();
        let readable: Vec<&Held> =
            self.pending.edits.iter().filter(|h| !unreadable.iter().any(|(p, _)| *p == h.path)).collect();
        // The screen setup's refusal, at the held control it names (else the latest). When it
        // names a held control whose value shapes no other reason (a block size, a scheduler
        // field), that value is set aside and the rest judged again: the next cause gets its
        // own reason, at the control it names.
        let mut left: Vec<Held> = self.pending.edits.clone();
        let mut first = true;
        while let Some(latest) = readable.iter().rev().find(|h| left.iter().any(|l| l.path == h.path)) {
            let (screen, _) = screen_of(&self.lab.state, &left);
            let Err(e) = self.lab.check(&screen) else { break };
            let named = field_of(&e)
                .and_then(|f| readable.iter().find(|h| h.path == f || preset_field(&h.path) == f))
                .filter(|h| !refusals.iter().any(|(p, _)| *p == h.path));
            let path = match (named, first) {
                (Some(h), _) => h.path.clone(),
                (None, true) => latest.path.clone(),
                (None, false) => break,
            };
            first = false;
            refusals.retain(|(p, _)| *p != path);
            refusals.push((path.clone(), sentence(&self.advise(&e))));
            if SHAPING.contains(&path.as_str()) {
                break;
            }
            left.retain(|h| h.path != path);
        }
        self.pending.refusals = refusals;
    }

    /// A refusal's advice, as far as the mission being played lets the learner follow it.
    pub(in crate::session) fn advise(&self, message: &str) -> String {
        match &self.lab.mission {
            Some(m) => crate::session::advice::within_locks(message, m),
            None => message.to_string(),
        }
    }
}
