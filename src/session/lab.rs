//! The lab's model, apart from any drawing: the state the learner set (`LabState`), the runs
//! simulating it (one, or contiguous and paged in compare mode), the time shown, and playback.
//! Every change of state goes through [`Lab::apply`], which validates first and keeps the
//! previous runs when the new state is rejected. Time only ever moves by asking the engine to
//! step (going back replays from the engine's nearest checkpoint; the engine is deterministic). In mission mode the lab
//! also holds the mission, refuses states that change a locked path, and scores the learner's run.
//! A mission setup vLLM refuses to start (`missions::mission::start`) is scored, not rejected:
//! the lab then holds no run, only vLLM's words (`Lab::refusal`), and the score is final at once.

use crate::formats::preset::{AllocatorDto, PresetDto};
use crate::missions::mission::{score, score_refused, start, Mission, Score, Startup};

use super::run::Run;
use super::url_state::{LabState, MissionRef, PageOptions};

/// Playback speeds offered, in simulated seconds per real second; 0 means "as fast as the
/// engine goes".
pub const SPEEDS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 0.0];
pub const DEFAULT_SPEED: f64 = 2.0;

pub fn secs_to_us(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e6).round() as u64
    } else {
        0
    }
}

/// Compare mode sets one replica's two allocators side by side; a fleet's replicas already
/// fill the maps' row.
fn check_compare(state: &LabState) -> Result<(), String> {
    #[cfg(feature = "fleet")]
    if state.compare && state.preset.replicas > 1 {
        return Err(format!(
            "replicas: compare sets one replica's two allocators side by side, and this preset runs {} replicas; set replicas to 1 to compare, or turn Compare off to see the fleet",
            state.preset.replicas
        ));
    }
    let _ = state;
    Ok(())
}

pub struct Lab {
    pub state: LabState,
    pub runs: Vec<Run>,
    /// The simulated time shown.
    pub t_us: u64,
    pub playing: bool,
    pub speed: f64,
    pub options: PageOptions,
    /// The mission `state.mission` refers to (mission mode).
    pub mission: Option<Mission>,
    /// Mission mode: vLLM's refusal to start the learner's setup, in its words. There is no run
    /// then, and time stays at 0.
    pub refusal: Option<String>,
    /// The preset as it was last loaded whole (the first setup, a preset, a mission, a link),
    /// before any edit: the header and the picker show its title until the learner edits it.
    pub loaded: PresetDto,
    last_tick_ms: Option<f64>,
}

/// A mission's score of the learner's run at the time shown.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionStatus {
    pub score: Score,
    /// The run reached its end: the score is final.
    pub at_end: bool,
}

impl Lab {
    /// A lab on `state`; an invalid state is an error (the caller falls back to a default).
    pub fn new(state: LabState, options: PageOptions) -> Result<Lab, String> {
        let mut lab = Lab {
            state: state.clone(),
            runs: Vec::new(),
            t_us: 0,
            playing: false,
            speed: DEFAULT_SPEED,
            options,
            mission: None,
            refusal: None,
            loaded: state.preset.clone(),
            last_tick_ms: None,
        };
        lab.apply(state, false)?;
        Ok(lab)
    }

    /// The runs' length (the setup's, when vLLM refused to start it): the longest run's, as
    /// `shown_end_us` says (with `until_all_finished`, known once the run got there).
    pub fn duration_us(&self) -> u64 {
        self.runs.iter().map(Run::shown_end_us).max().unwrap_or_else(|| secs_to_us(self.state.preset.duration_s))
    }

    /// The latest time the runs can reach: their ends where known, else their latest possible
    /// ends (`Simulation::end_limit_us`); the End button seeks there.
    pub fn end_limit_us(&self) -> u64 {
        self.runs.iter().map(Run::end_limit_us).max().unwrap_or(0)
    }

    /// At the end of the run; a setup vLLM refused to start is over before it began.
    pub fn is_at_end(&self) -> bool {
        self.refusal.is_some() || (self.runs.iter().all(Run::end_known) && self.t_us >= self.duration_us())
    }

    /// Replaces the state when every run of it validates; otherwise keeps everything as it was
    /// and returns the error ("field: message"). `keep_time` stays at the current time instead
    /// of the state's `t_s`.
    pub fn apply(&mut self, mut state: LabState, keep_time: bool) -> Result<(), String> {
        let same = |o: &MissionRef, r: &MissionRef| o.id == r.id && o.custom == r.custom;
        let mission = match (&state.mission, &self.mission, &self.state.mission) {
            (None, ..) => None,
            (Some(r), Some(m), Some(o)) if same(o, r) => Some(m.clone()),
            (Some(r), ..) => Some(super::missions::resolve(r)?),
        };
        if let (Some(m), Some(r)) = (&mission, &mut state.mission) {
            m.check_locks(&state.preset).map_err(|e| e.to_string())?;
            if r.solution && state.preset != *m.fix_preset() {
                r.solution = false;
            }
            r.hints = r.hints.min(m.hints().len() as u32);
        }
        check_compare(&state)?;
        let presets = state.runs();
        if presets.len() == self.runs.len() && presets.iter().zip(&self.runs).all(|(p, r)| *p == r.preset) {
            // Only what is drawn around the runs changed (hidden series, hints): keep them.
            let t = if keep_time { self.t_us } else { secs_to_us(state.t_s.unwrap_or(0.0)) };
            self.state = state;
            self.mission = mission;
            self.seek(t);
            return Ok(());
        }
        if mission.is_some() {
            if let Startup::Refused(words) = start(&state.preset).map_err(|e| e.to_string())? {
                self.state = state;
                self.runs = Vec::new();
                self.mission = mission;
                self.refusal = Some(words);
                self.seek(0);
                return Ok(());
            }
        }
        let runs = presets
            .into_iter()
            .map(|p| {
                let label = if matches!(p.allocator, AllocatorDto::Paged { .. }) { "paged" } else { "contiguous" };
                Run::new(p).map_err(|e| if state.compare { format!("{e} (in the {label} run)") } else { e })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let t = if keep_time { self.t_us } else { secs_to_us(state.t_s.unwrap_or(0.0)) };
        self.state = state;
        self.runs = runs;
        self.mission = mission;
        self.refusal = None;
        self.t_us = 0;
        self.seek(t);
        Ok(())
    }

    /// Builds the runs again from the same state, at the time shown (the clock they can run on
    /// changed: `kernel_clock`); where the state no longer runs, the runs stay as they were.
    pub fn rebuild_runs(&mut self) -> Result<(), String> {
        let runs = std::mem::take(&mut self.runs);
        let rebuilt = self.apply(self.state.clone(), true);
        if rebuilt.is_err() {
            self.runs = runs;
        }
        rebuilt
    }

    /// Whether [`Lab::apply`] would take `state`, or its refusal; nothing changes.
    pub fn check(&self, state: &LabState) -> Result<(), String> {
        let mission = match (&state.mission, &self.mission) {
            (None, _) => None,
            (Some(r), Some(m)) if self.state.mission.as_ref().is_some_and(|o| o.id == r.id && o.custom == r.custom) => {
                Some(m.clone())
            }
            (Some(r), _) => Some(super::missions::resolve(r)?),
        };
        if let Some(m) = &mission {
            m.check_locks(&state.preset).map_err(|e| e.to_string())?;
            if let Startup::Refused(_) = start(&state.preset).map_err(|e| e.to_string())? {
                return Ok(()); // scored, not refused
            }
        }
        check_compare(state)?;
        for p in state.runs() {
            if self.runs.iter().any(|r| r.preset == p) {
                continue;
            }
            let paged = matches!(p.allocator, AllocatorDto::Paged { .. });
            let label = if paged { "paged" } else { "contiguous" };
            let checked = p.to_config().map_err(|e| e.to_string()).and_then(Run::check);
            checked.map_err(|e| if state.compare { format!("{e} (in the {label} run)") } else { e })?;
        }
        Ok(())
    }

    /// Shows time `t_us` (clamped to the run).
    pub fn seek(&mut self, t_us: u64) {
        let t = if self.runs.is_empty() { 0 } else { t_us.min(self.end_limit_us()) };
        for run in &mut self.runs {
            run.seek(t);
        }
        // A run with `until_all_finished` may have ended before `t`.
        self.t_us = t.min(self.duration_us());
        if self.is_at_end() {
            self.playing = false;
        }
    }

    /// One engine step of the first run; the others follow to the same time.
    pub fn step(&mut self) {
        self.playing = false;
        if self.is_at_end() {
            return;
        }
        let Some((first, rest)) = self.runs.split_first_mut() else { return };
        first.step();
        let t = first.now_us().min(first.end_limit_us());
        for run in rest {
            run.seek(t);
        }
        self.t_us = t;
    }

    pub fn play(&mut self) {
        if self.is_at_end() {
            self.seek(0);
        }
        self.playing = true;
        self.last_tick_ms = None;
    }

    pub fn pause(&mut self) {
        self.playing = false;
        self.last_tick_ms = None;
    }

    /// Advances playback to wall-clock `now_ms`. At speed 0 it steps for about
    /// `budget_ms` of wall time (measured by `clock`). Returns whether time moved.
    pub fn tick(&mut self, now_ms: f64, budget_ms: f64, clock: &dyn Fn() -> f64) -> bool {
        if !self.playing {
            self.last_tick_ms = None;
            return false;
        }
        let dt_ms = self.last_tick_ms.map_or(16.7, |last| (now_ms - last).clamp(0.0, 100.0));
        self.last_tick_ms = Some(now_ms);
        let before = self.t_us;
        if self.speed > 0.0 {
            let t = self.t_us + (dt_ms * 1000.0 * self.speed).round() as u64;
            self.seek(t);
        } else {
            let start = clock();
            while !self.is_at_end() && clock() - start < budget_ms {
                self.seek(self.t_us + 250_000);
            }
        }
        self.t_us != before
    }

    /// Every map the page draws, in order: each run's, or each replica of a fleet run.
    pub fn panels(&self) -> Vec<super::run::Panel<'_>> {
        self.runs.iter().flat_map(Run::map_panels).collect()
    }

    /// The run of the learner's own preset (in compare mode, the one whose allocator is in use).
    pub fn scored_run(&self) -> Option<&Run> {
        self.runs.iter().find(|r| r.preset == self.state.preset).or(self.runs.first())
    }

    /// The mission's score of the run so far (None outside mission mode).
    pub fn mission_status(&self) -> Option<MissionStatus> {
        if !cfg!(feature = "panels") {
            return None; // the page's first module has no missions
        }
        let m = self.mission.as_ref()?;
        if let Some(words) = &self.refusal {
            return Some(MissionStatus { score: score_refused(m, &self.state.preset, words), at_end: true });
        }
        let run = self.scored_run()?;
        Some(MissionStatus { score: score(m, &run.preset, &run.report()), at_end: self.is_at_end() })
    }

    /// The state with the time shown, as a link should carry it.
    pub fn snapshot(&self) -> LabState {
        let mut s = self.state.clone();
        s.t_s = (self.t_us > 0).then(|| self.t_us as f64 / 1e6);
        s
    }
}
