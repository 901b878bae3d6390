//! [`Session`]: the lab, its Sweep panel and its undo history behind one dispatcher. Every
//! [`Command`] goes through [`Session::apply`], which validates it, applies it or refuses it
//! (leaving everything as it was), records undo steps, and says what the page must follow
//! ([`Applied`]) or where the refusal belongs ([`Refused`]). Mission stars are earned here, by
//! one rule: the score on screen is the score kept. Whenever a command leaves a mission run with
//! a setup the learner chose at its end (playback or a seek reaching it, or a setting changed
//! while the time shown is already the end, which simulates the new setup to the end at once),
//! the final score the panel shows is recorded.

use serde_json::Value;

#[cfg(feature = "panels")]
use crate::missions::mission::Mission;

use super::command::{Applied, ChangeFrom, Command, DocKind, Refused};
#[cfg(feature = "panels")]
use super::command::{MissionAction, Place};
use super::history::{same_setup, History};
#[cfg(feature = "panels")]
use super::kv_search::{KvSearchJob, Refusal};
use super::lab::{secs_to_us, Lab};
use super::loader::{self, Document};
use super::pending::Pending;

mod held;
#[cfg(feature = "panels")]
use super::missions;
#[cfg(feature = "panels")]
use super::sweep::SweepJob;
use super::sweep::SweepPanel;
use super::url_state::{LabState, LinkedFile, MissionRef};
use super::{control_edit, presets};

/// The lab behind its one dispatcher.
pub struct Session {
    pub(super) lab: Lab,
    panel: SweepPanel,
    pub(super) history: History,
    /// Controls holding a value the lab refused (`pending.rs`).
    pub(super) pending: Pending,
    /// The mission setup whose final score was last kept (so it is kept once).
    recorded: Option<String>,
}

/// The refusal of a command only the full lab applies, in a build without the `panels` feature
/// (the page hands such commands to its full module before they reach here).
#[cfg(not(feature = "panels"))]
const FIRST_VIEW_ONLY: &str = "this needs the full lab (sweeps, missions, documents), which this build leaves out";

/// What a state change proposes: the next state, or why there is none.
type Proposal = Result<LabState, String>;

impl Session {
    pub fn new(lab: Lab) -> Session {
        Session {
            lab,
            panel: SweepPanel::default(),
            history: History::default(),
            pending: Pending::default(),
            recorded: None,
        }
    }

    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    pub fn panel(&self) -> &SweepPanel {
        &self.panel
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// Applies `cmd`, or refuses it and changes nothing but the value a control holds (a
    /// refused `set` stays held in its control, not applied: `pending.rs`). `now_ms` is the
    /// page's clock, used only for how long a sweep or a search took.
    pub fn apply(&mut self, cmd: Command, now_ms: f64) -> Result<Applied, Refused> {
        self.apply_with(cmd, now_ms, true)
    }

    /// [`Session::apply`]; `hold`: whether a refused `set` stays held in its control (false for
    /// a sender with no control on screen, such as a host page).
    pub fn apply_with(&mut self, cmd: Command, now_ms: f64, hold: bool) -> Result<Applied, Refused> {
        let judged = matches!(cmd, Command::Set { .. } | Command::Discard { .. } | Command::Undo);
        let mut applied = self.apply_command(cmd, now_ms, hold)?;
        if applied.setup && !judged {
            // The running setup changed under the held values: judge them again (they may run).
            self.settle();
        }
        if applied.earned.is_none() {
            // Whatever the command was (a seek, a setting changed at the end, an undo), a final
            // score on screen is a score kept.
            applied.earned = self.keep_stars();
        }
        Ok(applied)
    }

    fn apply_command(&mut self, cmd: Command, now_ms: f64, hold: bool) -> Result<Applied, Refused> {
        #[cfg(not(feature = "panels"))]
        let _ = now_ms;
        let from = cmd.from();
        if !matches!(cmd, Command::Set { .. }) {
            self.history.break_run();
        }
        let lab = &mut self.lab;
        match cmd {
            Command::Play => {
                lab.play();
                Ok(self.time_moved())
            }
            Command::Pause => {
                lab.pause();
                Ok(Applied::default())
            }
            Command::TogglePlay => {
                if lab.playing {
                    lab.pause();
                } else {
                    lab.play();
                }
                Ok(self.time_moved())
            }
            Command::Step => {
                lab.step();
                Ok(self.time_moved())
            }
            Command::Seek { t_s } => {
                if !(t_s.is_finite() && t_s >= 0.0) {
                    return Err(Refused::page(from, "seek: t_s must be a number of seconds from 0"));
                }
                lab.pause();
                lab.seek(secs_to_us(t_s));
                Ok(self.time_moved())
            }
            Command::SeekEnd => {
                lab.pause();
                let end = lab.end_limit_us();
                lab.seek(end);
                Ok(self.time_moved())
            }
            Command::Speed { speed } => {
                lab.speed = if speed.is_finite() && speed > 0.0 { speed } else { 0.0 };
                Ok(Applied::default())
            }
            Command::Set { path, value } => self.set_field(path, value, hold),
            Command::Discard { path } => Ok(self.discard(path.as_deref())),
            Command::Compare { on } => {
                let next = LabState { compare: on, ..lab.state.clone() };
                self.change(from, true, None, Ok(next))
            }
            Command::AddRow { row } => {
                let next = control_edit::add_row(&lab.state, row);
                self.change(from, true, None, Ok(next))
            }
            Command::RemoveRow { row, index } => {
                let next = control_edit::remove_row(&lab.state, row, index);
                // The rows' paths move: a value held in a row's control is let go.
                self.discard_rows();
                self.change(from, true, None, Ok(next))
            }
            Command::Series { name, show } => {
                let mut next = lab.state.clone();
                next.hidden.retain(|h| h != &name);
                if !show {
                    next.hidden.push(name);
                }
                self.change(from, true, None, Ok(next))
            }
            Command::Load { preset } => {
                let proposal = self.load_preset(preset);
                self.change(from, false, None, proposal)
            }
            Command::LoadDocument { text, expect, source } => {
                // A linked file's refusal names the file (`?preset_url=`).
                let applied = self.load_document(&text, expect).map_err(|mut r| {
                    if let Some(url) = &source {
                        r.message = format!("{url}: {}", r.message);
                    }
                    r
                })?;
                self.lab.state.source = source.map(|url| LinkedFile { url, digest: loader::digest(&text) });
                Ok(applied)
            }
            #[cfg(not(feature = "panels"))]
            cmd if cmd.needs_panels() => Err(Refused::page(from, FIRST_VIEW_ONLY)),
            Command::SetState { state } => {
                let json = match state {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                let proposal = LabState::from_json(&json).map_err(|e| e.to_string());
                self.change(from, false, None, proposal)
            }
            #[cfg(feature = "panels")]
            Command::StartMission { id } => {
                let m = missions::shipped(&id).map_err(|e| Refused::page(from, e))?;
                self.start_mission(&m)
            }
            #[cfg(feature = "panels")]
            Command::Mission { action } => self.mission_action(action),
            Command::Undo | Command::Redo => self.undo_or_redo(matches!(cmd, Command::Undo)),
            #[cfg(feature = "panels")]
            Command::Sweep { knob, values } => {
                let held = self.held_blocks_runs().map_or(Ok(()), Err);
                let job = held.and_then(|()| self.preset_value()).and_then(|p| {
                    let m = self.lab.mission.as_ref();
                    SweepJob::plan_for(&p, m, &knob, &values)
                });
                let panel = &mut self.panel;
                let job = job.map_err(|message| {
                    let refused = Refused { from, place: Place::Sweep, message };
                    panel.sweep_error = Some(refused.text());
                    // What the panel showed was another sweep's: not under this refusal.
                    panel.job = None;
                    refused
                })?;
                panel.sweep_error = None;
                panel.job = Some(job);
                panel.started_ms = now_ms;
                panel.took_ms = None;
                Ok(Applied::default())
            }
            #[cfg(feature = "panels")]
            Command::CancelSweep => {
                if let Some(job) = self.panel.job.as_mut().filter(|j| j.running()) {
                    job.cancelled = true;
                }
                Ok(Applied::default())
            }
            #[cfg(feature = "panels")]
            Command::SweepMetric { metric } => {
                self.panel.metric = metric;
                Ok(Applied::default())
            }
            #[cfg(feature = "panels")]
            Command::KvSearch { target, range, step } => {
                let fields = super::kv_search::SearchFields { target, range, step };
                let held = self.held_blocks_runs().map_or(Ok(()), Err);
                let job = held.and_then(|()| self.preset_value()).map_err(Refusal::general).and_then(|p| {
                    let m = self.lab.mission.as_ref();
                    KvSearchJob::plan_for(&p, m, &fields)
                });
                let panel = &mut self.panel;
                match job {
                    Ok(job) => {
                        panel.search = Some(job);
                        panel.search_started_ms = now_ms;
                        panel.search_took_ms = None;
                        panel.search_error = None;
                        Ok(Applied::default())
                    }
                    Err(e) => {
                        let refused = Refused { from, place: Place::Search(e.field), message: e.message.clone() };
                        panel.search_error = Some(Refusal { message: refused.text(), ..e });
                        // The last search's answer was another target's: not under this refusal.
                        panel.search = None;
                        Err(refused)
                    }
                }
            }
            #[cfg(feature = "panels")]
            Command::CancelKvSearch => {
                if let Some(s) = self.panel.search.as_mut().filter(|s| s.running()) {
                    s.cancelled = true;
                }
                Ok(Applied::default())
            }
            #[cfg(not(feature = "panels"))]
            _ => Err(Refused::page(from, FIRST_VIEW_ONLY)),
        }
    }

    /// Advances playback to the page's `now_ms` (see `Lab::tick`); the stars a mission run
    /// earned by reaching its end.
    pub fn tick(&mut self, now_ms: f64, budget_ms: f64, clock: &dyn Fn() -> f64) -> Option<(String, u8)> {
        if self.lab.tick(now_ms, budget_ms, clock) {
            self.keep_stars()
        } else {
            None
        }
    }

    /// Runs the sweep's next runs within `budget_ms` of `clock`, or else the smallest-KV
    /// search's (a search started during a sweep waits for it); true while runs remain.
    pub fn step_jobs(&mut self, budget_ms: f64, clock: &dyn Fn() -> f64) -> bool {
        if !cfg!(feature = "panels") {
            return false;
        }
        let panel = &mut self.panel;
        if let Some(job) = panel.job.as_mut().filter(|j| j.running()) {
            if job.step(budget_ms, clock) {
                return true;
            }
            panel.took_ms = Some(clock() - panel.started_ms);
            return panel.search.as_ref().is_some_and(|s| s.running());
        }
        let Some(search) = panel.search.as_mut().filter(|s| s.running()) else { return false };
        let more = search.step(budget_ms, clock);
        if !more {
            panel.search_took_ms = Some(clock() - panel.search_started_ms);
        }
        more
    }

    /// Takes a proposed state when every run of it validates; `field` is the control path an
    /// edit came from (one undo step for a run of edits of it). A whole new setup (`from` not a
    /// control) lets go of every value a control held.
    pub(super) fn change(
        &mut self,
        from: ChangeFrom,
        keep_time: bool,
        field: Option<&str>,
        proposal: Proposal,
    ) -> Result<Applied, Refused> {
        let before = self.lab.state.clone();
        let applied = proposal.and_then(|s| self.lab.apply(s, keep_time));
        applied.map_err(|e| Refused::page(from, self.advise(&e)))?;
        if !matches!(from, ChangeFrom::Control | ChangeFrom::Mission) || !keep_time {
            self.clear_held();
        }
        if from != ChangeFrom::Control {
            // A whole new setup: the header shows its title until the learner edits it.
            self.lab.loaded = self.lab.state.preset.clone();
        }
        if !same_setup(&before, &self.lab.state) {
            self.history.record(before, field);
        }
        // A setup vLLM refuses to start is over before it began, and one changed at the end of
        // the run is simulated to the end at once: either score is final now.
        Ok(Applied { setup: true, earned: self.keep_stars(), verdict: None })
    }

    fn time_moved(&mut self) -> Applied {
        Applied { earned: self.keep_stars(), ..Applied::default() }
    }

    /// At the end of a mission run (not the shown solution), its stars, once per setup.
    fn keep_stars(&mut self) -> Option<(String, u8)> {
        let r = self.lab.state.mission.as_ref().filter(|r| !r.solution)?;
        if !self.lab.is_at_end() {
            return None;
        }
        let key = format!("{}|{}", r.id, serde_json::to_string(&self.lab.state.preset).unwrap_or_default());
        if self.recorded.as_deref() == Some(key.as_str()) {
            return None;
        }
        let id = r.id.clone();
        let status = self.lab.mission_status()?;
        self.recorded = Some(key);
        Some((id, status.score.stars))
    }

    #[cfg(feature = "panels")]
    fn preset_value(&self) -> Result<Value, String> {
        serde_json::to_value(&self.lab.state.preset).map_err(|e| e.to_string())
    }

    /// `load`'s next state: a shipped preset by id, or a preset document (keeping the mission).
    fn load_preset(&self, preset: Value) -> Proposal {
        let s = &self.lab.state;
        let is_id = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let text = match preset {
            Value::String(id) if is_id(&id) => {
                let mut next = LabState::new(presets::dto(&id)?);
                next.compare = s.compare;
                next.hidden = s.hidden.clone();
                return Ok(next);
            }
            Value::String(text) => text,
            doc @ Value::Object(_) => doc.to_string(),
            _ => return Err("load: preset must be a shipped preset id or a kvlab/preset@1 document".into()),
        };
        let dto = crate::formats::preset::parse_preset_dto(&text).map_err(|e| e.to_string())?;
        let mut next = LabState::new(dto);
        next.compare = s.compare;
        next.hidden = s.hidden.clone();
        next.mission = s.mission.clone().map(|r| MissionRef { solution: false, ..r });
        Ok(next)
    }

    /// A preset (the free lab, keeping compare mode) or a mission (after the mission check,
    /// whose verdict comes back); `expect` refuses the other kind.
    fn load_document(&mut self, text: &str, expect: Option<DocKind>) -> Result<Applied, Refused> {
        let kind = if loader::is_mission(text) { DocKind::Mission } else { DocKind::Preset };
        let from = if expect.unwrap_or(kind) == DocKind::Mission { ChangeFrom::Mission } else { ChangeFrom::Preset };
        if let Some(want) = expect.filter(|w| *w != kind) {
            let (is, want) = (kind.name(), want.name());
            return Err(Refused::page(from, format!("this is a {is}, not a {want}; use {is}_url")));
        }
        // The first view's module reads presets only; `Command::needs_panels` sends missions and
        // config.json files to the full module.
        #[cfg(not(feature = "panels"))]
        let document = loader::parse_preset_document(text).map(|dto| Document::Preset(Box::new(dto)));
        #[cfg(feature = "panels")]
        let document = loader::parse_document(text);
        match document.map_err(|e| Refused::page(from, loader::with_line(&e, text)))? {
            #[cfg(feature = "panels")]
            Document::Mission(m) => {
                let mut applied = self.start_mission(&m)?;
                applied.verdict = Some(loader::verdict(&m));
                Ok(applied)
            }
            #[cfg(feature = "panels")]
            Document::ModelConfig(model) => {
                // The setup on screen with this model: an edit of its model, undone as one.
                let mut next = self.lab.state.clone();
                next.preset.model = *model;
                self.discard(Some("model"));
                self.change(ChangeFrom::Control, true, Some("model"), Ok(next))
            }
            Document::Preset(dto) => {
                let mut next = LabState::new(*dto);
                next.compare = self.lab.state.compare;
                next.hidden = self.lab.state.hidden.clone();
                self.change(from, false, None, Ok(next))
            }
            #[cfg(not(feature = "panels"))]
            _ => Err(Refused::page(from, FIRST_VIEW_ONLY)),
        }
    }

    #[cfg(feature = "panels")]
    /// Starts `m` from its broken setup, at 0 s and paused (the learner reads the story first).
    fn start_mission(&mut self, m: &Mission) -> Result<Applied, Refused> {
        let mut next = LabState::new(m.preset().clone());
        next.hidden = self.lab.state.hidden.clone();
        next.mission = Some(missions::reference(m));
        let applied = self.change(ChangeFrom::Mission, false, None, Ok(next))?;
        self.lab.pause();
        Ok(applied)
    }

    #[cfg(feature = "panels")]
    fn mission_action(&mut self, action: MissionAction) -> Result<Applied, Refused> {
        let from = ChangeFrom::Mission;
        let Some(m) = self.lab.mission.clone() else {
            return Err(Refused::page(from, "no mission is being played; open one from the missions page"));
        };
        let mut next = self.lab.state.clone();
        match action {
            MissionAction::Hint => {
                if let Some(r) = &mut next.mission {
                    r.hints = (r.hints + 1).min(m.hints().len() as u32);
                }
                self.change(from, true, None, Ok(next))
            }
            MissionAction::Solution | MissionAction::Restart => {
                let solution = action == MissionAction::Solution;
                next.preset = if solution { m.fix_preset().clone() } else { m.preset().clone() };
                next.compare = false;
                next.t_s = None;
                if let Some(r) = &mut next.mission {
                    r.solution = solution;
                }
                let applied = self.change(from, false, None, Ok(next))?;
                // The solution is shown playing (unless the learner asked for no motion); a
                // restart waits for Play, as a mission's start does.
                if solution && !self.lab.options.reduced_motion {
                    self.lab.play();
                } else {
                    self.lab.pause();
                }
                Ok(applied)
            }
            MissionAction::Exit => {
                next.mission = None;
                self.change(from, true, None, Ok(next))
            }
        }
    }

    fn undo_or_redo(&mut self, undo: bool) -> Result<Applied, Refused> {
        if undo {
            if let Some(applied) = self.undo_held() {
                return Ok(applied);
            }
        } else {
            self.clear_held();
        }
        let current = self.lab.state.clone();
        let step = if undo { self.history.undo(current) } else { self.history.redo(current) };
        let word = if undo { "undo" } else { "redo" };
        let Some(mut target) = step else {
            return Err(Refused::page(ChangeFrom::Control, format!("nothing to {word}")));
        };
        target.hidden = self.lab.state.hidden.clone();
        let saved = target.clone();
        match self.lab.apply(target, true) {
            Ok(()) => Ok(Applied { setup: true, earned: None, verdict: None }),
            Err(e) => {
                if undo {
                    self.history.restore_undo(saved);
                } else {
                    self.history.restore_redo(saved);
                }
                Err(Refused::page(ChangeFrom::Control, format!("{word}: {e}")))
            }
        }
    }
}
