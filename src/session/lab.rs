//! The lab's model, apart from any drawing: the state the learner set (`LabState`), the runs
//! simulating it (one, or contiguous and paged in compare mode), the time shown, and playback.
//! Every change of state goes through [`Lab::apply`], which validates first and keeps the
//! previous runs when the new state is rejected. Time only ever moves by asking the engine to
//! step (going back replays from the engine's nearest checkpoint; the engine is deterministic). In mission mode the lab
//! also holds the mission, refuses states that change a locked path, and scores the learner's run.
//! A mission setup vLLM refuses to start (`missions::mission::start`) is scored, not rejected:
//! the lab then holds no run, only vLLM's words (`Lab::refusal`), and the score is final at once.

use crate::engine::plan::group_thousands;
use crate::engine::sim::checkpoints::{Checkpoints, DEFAULT_BUDGET_BYTES};
use crate::engine::workload::Arrival;
use crate::engine::{AllocatorConfig, Report, SimConfig, Simulation, StepPoint};
use crate::formats::preset::{AllocatorDto, FitDto, PresetDto, ReserveDto};
use crate::missions::mission::{score, score_refused, start, Mission, Score, Startup};

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

/// One simulation of one preset, with the longest series seen so far for the chart.
pub struct Run {
    /// "contiguous" or "paged".
    pub label: &'static str,
    pub title: String,
    pub preset: PresetDto,
    pub config: SimConfig,
    pub sim: Simulation,
    /// Snapshots of this run, so going back in time replays from the nearest one.
    checkpoints: Checkpoints,
    target_us: u64,
    pub class_names: Vec<String>,
    /// Where the run ends, once it has been simulated that far (a run with `until_all_finished`
    /// ends when its last request finishes; going back in time keeps what was learned).
    known_end_us: Option<u64>,
}

/// How long a run shows as being: `duration_s`; with `until_all_finished`, its end once it is
/// done, and until then `duration_s` or the time simulated so far, whichever is later (the
/// chart's axis and the time slider grow with the run).
pub fn shown_end_us(sim: &Simulation) -> u64 {
    if !sim.config().until_all_finished {
        sim.duration_us()
    } else if sim.is_done() {
        sim.end_us()
    } else {
        sim.duration_us().max(sim.now_us())
    }
}

impl Run {
    pub fn new(preset: PresetDto) -> Result<Run, String> {
        let config = preset.to_config().map_err(|e| e.to_string())?;
        check_page_limits(&config)?;
        let mut sim = Simulation::new(config.clone()).map_err(|e| e.to_string())?;
        let checkpoints = Checkpoints::new(&mut sim, DEFAULT_BUDGET_BYTES);
        let paged = matches!(preset.allocator, AllocatorDto::Paged { .. });
        Ok(Run {
            label: if paged { "paged" } else { "contiguous" },
            title: allocator_title(&preset.allocator, &config),
            class_names: preset.workload.classes.iter().map(|c| c.name.clone()).collect(),
            preset,
            config,
            sim,
            checkpoints,
            target_us: 0,
            known_end_us: None,
        })
    }

    /// How long this run shows as being (`shown_end_us`), its end once it was reached.
    pub fn shown_end_us(&self) -> u64 {
        self.known_end_us.unwrap_or_else(|| shown_end_us(&self.sim))
    }

    /// Where time can go in this run: its end when known, else its latest possible end.
    fn end_limit_us(&self) -> u64 {
        self.known_end_us.unwrap_or_else(|| self.sim.end_limit_us())
    }

    /// The run's end is known: it was reached, or it is `duration_s`.
    fn end_known(&self) -> bool {
        self.known_end_us.is_some() || !self.sim.config().until_all_finished
    }

    fn note_end(&mut self) {
        if self.known_end_us.is_none() && self.sim.is_done() {
            self.known_end_us = Some(self.sim.end_us());
        }
    }

    pub fn is_paged(&self) -> bool {
        self.label == "paged"
    }

    /// Brings the simulation to `t_us` (from the nearest checkpoint when that is earlier).
    pub fn seek(&mut self, t_us: u64) {
        self.target_us = t_us;
        self.checkpoints.seek(&mut self.sim, t_us);
        self.note_end();
    }

    /// One engine step; the new time becomes the target.
    pub fn step(&mut self) {
        self.sim.step();
        self.target_us = self.sim.now_us();
        self.note_end();
    }

    /// What the chart draws: the series up to the time shown, never beyond it (after going
    /// back in time the run is simulated again from 0, and the chart shows no future).
    /// A step that ends past the time shown (a long prefill) is left out until the time reaches it.
    pub fn chart_series(&self) -> &[StepPoint] {
        let series = self.sim.series();
        &series[..series.partition_point(|p| p.t_us <= self.target_us)]
    }

    pub fn report(&self) -> Report {
        self.sim.report()
    }

    pub fn last_sample(&self) -> Option<&StepPoint> {
        self.sim.series().last()
    }

    /// Why requests wait at the time shown, when the head of the queue was not admitted in the
    /// last step: the reason in the learner's words (the metrics panel shows it).
    pub fn queue_note(&self) -> Option<String> {
        use crate::engine::scheduler::HolReason;
        let last = self.sim.series().last()?;
        if last.waiting == 0 {
            return None;
        }
        let behind = match last.waiting {
            1 => "It waits".to_string(),
            n => format!(
                "It and the {} requests behind it wait (first come, first served)",
                group_thousands(u64::from(n) - 1)
            ),
        };
        let free =
            100.0 * (1.0 - self.sim.kv().allocated_tokens() as f64 / self.sim.kv().capacity_tokens().max(1) as f64);
        let s = &self.config.scheduler;
        let why = match self.sim.head_of_line()? {
            HolReason::Memory(b) if b.enough_total_free && !self.is_paged() => format!(
                "its slab (prompt + max_tokens, reserved whole) is larger than any hole, though {free:.0}% of the KV memory is free in all: external fragmentation, free memory in pieces too small to use (paged blocks need no single hole)"
            ),
            HolReason::Memory(b) if b.enough_total_free => {
                format!("its blocks do not fit beside the watermark vLLM keeps, though {free:.0}% of the KV memory is free")
            }
            HolReason::Memory(_) if !self.is_paged() => format!(
                "its slab (prompt + max_tokens, reserved whole) is larger than the {free:.0}% of the KV memory that is free"
            ),
            HolReason::Memory(_) => format!("its prompt needs more blocks than the {free:.0}% of the KV memory that is free"),
            HolReason::SeqLimit => format!("max_num_seqs ({}) requests already run", s.max_num_seqs),
            HolReason::TokenBudget => format!(
                "its prompt does not fit in what is left of the step's token budget (max_num_batched_tokens {}; raise it, or turn on chunked prefill where the scheduler has it)",
                s.max_num_batched_tokens
            ),
        };
        Some(format!("The request at the head of the queue is not admitted: {why}. {behind}."))
    }
}

/// Most memory-map cells the page draws (a 1,024 × 1,024 canvas at one pixel a cell).
pub const MAX_MAP_CELLS: u64 = 1 << 20;
/// Most requests a page run may generate (the engine makes them all up front).
pub const MAX_PAGE_REQUESTS: f64 = 250_000.0;

/// Setups the engine accepts but a browser tab cannot draw or hold smoothly.
pub fn check_page_limits(config: &SimConfig) -> Result<(), String> {
    let cell_tokens = match config.allocator {
        AllocatorConfig::Paged { block_size, .. } => u64::from(block_size),
        AllocatorConfig::Contiguous { .. } => u64::from(crate::engine::sim::CONTIGUOUS_CELL_TOKENS),
    };
    let cells = config.capacity_tokens() / cell_tokens.max(1);
    if cells > MAX_MAP_CELLS {
        return Err(format!(
            "kv_memory_gib: {} GiB makes a map of {} cells of {cell_tokens} tokens; the page draws up to {}: use less KV memory or larger blocks",
            config.kv_memory_gib,
            group_thousands(cells),
            group_thousands(MAX_MAP_CELLS)
        ));
    }
    if let Arrival::Concurrency { num_requests, .. } = config.workload.arrival {
        if f64::from(num_requests) > MAX_PAGE_REQUESTS {
            return Err(format!(
                "workload.arrival.num_requests: {} requests is more than the page simulates ({}); lower it (the native `kvlab run` has no such limit)",
                group_thousands(u64::from(num_requests)),
                group_thousands(MAX_PAGE_REQUESTS as u64)
            ));
        }
    }
    if let Arrival::Poisson { rate_per_s, bursts } = &config.workload.arrival {
        let expected = rate_per_s * config.duration_s
            + bursts.iter().map(|b| b.rate_per_s * (b.end_s - b.start_s).max(0.0)).sum::<f64>();
        if expected > MAX_PAGE_REQUESTS {
            return Err(format!(
                "workload.arrival.rate_per_s: about {} requests in {} s is more than the page simulates ({}); lower the rate or the duration (the native `kvlab run` has no such limit)",
                group_thousands(expected as u64),
                config.duration_s,
                group_thousands(MAX_PAGE_REQUESTS as u64)
            ));
        }
    }
    Ok(())
}

/// "Contiguous · first-fit · reserve prompt + max_tokens" / "Paged · 16-token blocks · vLLM v1".
/// Defaults the preset leaves out (prefix caching) are read from the resolved configuration.
pub fn allocator_title(a: &AllocatorDto, config: &SimConfig) -> String {
    match a {
        AllocatorDto::Contiguous { reserve, fit } => format!(
            "Contiguous · {} · reserve {}",
            match fit {
                FitDto::FirstFit => "first-fit",
                FitDto::BestFit => "best-fit",
            },
            match reserve {
                ReserveDto::PromptPlusMaxTokens => "prompt + max_tokens",
                ReserveDto::MaxModelLen => "max_model_len",
            }
        ),
        AllocatorDto::Paged { block_size, .. } => {
            let caching = matches!(config.allocator, AllocatorConfig::Paged { prefix_caching: true, .. });
            let tp = config.tensor_parallel_size;
            format!(
                "Paged · {block_size}-token blocks{}{} · vLLM {}{}",
                // A size vLLM's default backend does not run is labelled, not refused.
                if config.block_size_note().is_some() { " (not a FlashAttention size)" } else { "" },
                if caching { " · prefix caching" } else { "" },
                config.scheduler.engine.name(),
                if tp > 1 { format!(" · TP {tp}") } else { String::new() }
            )
        }
    }
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
        for p in state.runs() {
            if self.runs.iter().any(|r| r.preset == p) {
                continue;
            }
            let paged = matches!(p.allocator, AllocatorDto::Paged { .. });
            let label = if paged { "paged" } else { "contiguous" };
            let checked = p.to_config().map_err(|e| e.to_string()).and_then(|config| {
                check_page_limits(&config)?;
                Simulation::new(config).map(drop).map_err(|e| e.to_string())
            });
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
        let t = first.sim.now_us().min(first.sim.end_limit_us());
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
