//! Undo and redo of the setup: the lab states before each change, newest last. Time, playback
//! and the hidden series are not setups and are not recorded. Consecutive edits of one field (a
//! slider dragged, digits typed) are one step, so one Ctrl+Z takes the field back to where it
//! was before the drag.

use super::url_state::LabState;

/// How many setups are kept.
pub const MAX_STEPS: usize = 100;

#[derive(Default)]
pub struct History {
    undo: Vec<LabState>,
    redo: Vec<LabState>,
    /// The field the newest undo step edited, while edits of that field follow each other.
    last_field: Option<String>,
}

/// Whether `a` and `b` are the same setup (what history records).
pub fn same_setup(a: &LabState, b: &LabState) -> bool {
    a.preset == b.preset
        && a.compare == b.compare
        && a.alt == b.alt
        && a.mission.as_ref().map(|m| (&m.id, m.solution)) == b.mission.as_ref().map(|m| (&m.id, m.solution))
}

impl History {
    /// Records that the setup `before` was changed by an edit of `field` (None: a whole change,
    /// a preset or a mission), unless it continues an edit of the same field.
    pub fn record(&mut self, before: LabState, field: Option<&str>) {
        let continues = field.is_some() && self.last_field.as_deref() == field;
        self.redo.clear();
        self.last_field = field.map(String::from);
        if continues {
            return;
        }
        self.undo.push(before);
        if self.undo.len() > MAX_STEPS {
            self.undo.remove(0);
        }
    }

    /// The setup to go back to from `current`, which redo then brings back.
    pub fn undo(&mut self, current: LabState) -> Option<LabState> {
        let s = self.undo.pop()?;
        self.redo.push(current);
        self.last_field = None;
        Some(s)
    }

    /// The setup undo last left, pushing `current` back on the undo side.
    pub fn redo(&mut self, current: LabState) -> Option<LabState> {
        let s = self.redo.pop()?;
        self.undo.push(current);
        self.last_field = None;
        Some(s)
    }

    /// Gives back a step that `undo` or `redo` took when applying it was refused.
    pub fn restore_undo(&mut self, s: LabState) {
        self.redo.pop();
        self.undo.push(s);
    }

    pub fn restore_redo(&mut self, s: LabState) {
        self.undo.pop();
        self.redo.push(s);
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Ends the current run of edits of one field (a control lost focus, another command came).
    pub fn break_run(&mut self) {
        self.last_field = None;
    }
}
