//! What a mission does: a validated [`Mission`] (a `kvlab/mission@1` file whose fix is a valid
//! patch), knob patches merged into its broken preset, and star scoring. The file format itself
//! is `formats::mission`.
//!
//! Scoring is pure: [`score`] reads a preset and the [`Report`] its run produced.
//!
//! - **Stars are tiers.** Every goal belongs to star 1, 2 or 3 (`stars`), and every tier has at
//!   least one goal. A run earns star k when every goal of tiers 1..=k is met: stars = the largest
//!   such k. Meeting more goals never costs a star, and a mission reads as "first fix the
//!   problem (★), then without hurting this (★★), then on this budget (★★★)".
//! - **Knobs**: [`Mission::apply_patch`] rejects a patch that changes anything a knob does not
//!   cover. [`score`] never fails: a preset that changed a locked path scores 0 stars and lists
//!   the paths in `locked_changes`. A config path the preset lacks (a block size on a contiguous
//!   allocator) has no value: the goal is unmet.
//! - **A server vLLM refuses to start** (`engine::startup_checks`: no memory for the cache, a
//!   `max_model_len` request that does not fit, a block size the attention backend does not run)
//!   is a setup like any other: it is scored, not rejected. It earns 0 stars, no report, and
//!   carries vLLM's words in [`Score::startup_refusal`]. Only a malformed preset is an error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::config::{ConfigError, SimConfig};
use crate::engine::metrics::Report;
use crate::formats::mission::{
    name_missing_field, read_mission_dto, validate_mission_dto, Comparison, GoalDto, MissionDto, MAX_STARS,
};
use crate::formats::paths::{covers, diff, display_path, get_path, merge, parse_path, Seg};
use crate::formats::preset::{preset_dto_from_value, PresetDto};

/// A validated mission. Serializes as the mission file (its preset with defaults filled in).
#[derive(Clone, Debug, PartialEq)]
pub struct Mission {
    dto: MissionDto,
    knobs: Vec<Vec<Seg>>,
    fix_preset: PresetDto,
}

impl Serialize for Mission {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.dto.serialize(s)
    }
}

/// One goal, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalResult {
    pub label: String,
    pub metric: String,
    /// The run's value of the metric (None when the preset has no such path).
    pub actual: Option<f64>,
    pub comparison: Comparison,
    pub value: f64,
    /// The star (tier) this goal is part of.
    pub stars: u8,
    pub met: bool,
    pub explain: String,
}

/// Stars earned and why: every goal in file order, and any locked paths the preset changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub stars: u8,
    pub max_stars: u8,
    pub goals: Vec<GoalResult>,
    /// Preset paths changed that are not knobs of the mission; non-empty means 0 stars.
    pub locked_changes: Vec<String>,
    /// vLLM's refusal to start this setup, in its words (0 stars; no run, so no report metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_refusal: Option<String>,
}

/// What starting a well-formed setup gives: a configuration to run, or vLLM's refusal.
#[derive(Clone, Debug, PartialEq)]
pub enum Startup {
    Starts(Box<SimConfig>),
    /// vLLM's startup error, in its words.
    Refused(String),
}

/// Starts `preset` as vLLM would: its configuration, or vLLM's refusal to start it. A malformed
/// preset (a field the lab cannot read or out of range) is an error naming the field.
pub fn start(preset: &PresetDto) -> Result<Startup, ConfigError> {
    match preset.to_config() {
        Ok(config) => Ok(Startup::Starts(Box::new(config))),
        Err(e) if e.startup_refusal => Ok(Startup::Refused(e.message)),
        Err(e) => Err(e),
    }
}

/// Scores a run: stars = the largest k such that every goal of tiers 1..=k is met, or 0 if the
/// preset changed a path that is not a knob. Never fails and never panics.
pub fn score(mission: &Mission, preset: &PresetDto, report: &Report) -> Score {
    let report_v = serde_json::to_value(report).unwrap_or(Value::Null);
    score_values(mission, preset, &report_v, None)
}

/// Scores a setup vLLM refused to start: 0 stars, every report goal unmet (there was no run),
/// and `refusal`, vLLM's words, as the reason.
pub fn score_refused(mission: &Mission, preset: &PresetDto, refusal: &str) -> Score {
    score_values(mission, preset, &Value::Null, Some(refusal.to_string()))
}

fn score_values(mission: &Mission, preset: &PresetDto, report_v: &Value, refusal: Option<String>) -> Score {
    let preset_v = serde_json::to_value(preset).unwrap_or(Value::Null);
    let goals: Vec<GoalResult> = mission
        .scoring_goals()
        .into_iter()
        .map(|g| {
            let note = report_v.get(BACKEND_BLOCK_SIZE_METRIC).and_then(Value::as_str);
            let actual = if g.metric == BACKEND_BLOCK_SIZE_METRIC {
                // 1 where the run's block size is one vLLM would not run, 0 where it is; no
                // figure without a run.
                (!report_v.is_null()).then_some(if note.is_some() { 1.0 } else { 0.0 })
            } else {
                resolve(&g.metric, &preset_v, report_v)
            };
            let explain = match note.filter(|_| g.metric == BACKEND_BLOCK_SIZE_METRIC) {
                Some(note) => {
                    format!("{note}. vLLM would pick another backend or refuse to start; use a multiple of 16.")
                }
                None => g.explain,
            };
            GoalResult {
                met: actual.is_some_and(|a| g.comparison.holds(a, g.value)),
                label: g.label,
                metric: g.metric,
                actual,
                comparison: g.comparison,
                value: g.value,
                stars: g.stars,
                explain,
            }
        })
        .collect();
    let locked_changes = mission.locked_changes(preset);
    let mut stars = 0;
    if locked_changes.is_empty() && refusal.is_none() {
        for tier in 1..=MAX_STARS {
            if goals.iter().filter(|g| g.stars == tier).all(|g| g.met) {
                stars = tier;
            } else {
                break;
            }
        }
    }
    Score { stars, max_stars: MAX_STARS, goals, locked_changes, startup_refusal: refusal }
}

/// The metric of the goal a mission adds when it lets the learner pick the block size: the
/// report's `block_size_note`, present when the size is one vLLM's default attention backend
/// (FlashAttention, multiples of 16) does not run.
pub const BACKEND_BLOCK_SIZE_METRIC: &str = "block_size_note";

/// In a mission that lets the learner pick the block size, a size vLLM's default attention
/// backend does not run cannot earn the top star, whatever the lab's figures say: vLLM would
/// not serve it so. The goal is scored (and shown as a card) from the start, met or not.
fn backend_block_size_goal() -> GoalDto {
    GoalDto {
        metric: BACKEND_BLOCK_SIZE_METRIC.into(),
        comparison: Comparison::AtMost,
        value: 0.0,
        stars: MAX_STARS,
        label: "A block size vLLM's attention backend runs".into(),
        explain: "vLLM's default attention backend, FlashAttention, runs block sizes that are multiples of 16. \
                  The lab simulates any size, but a size vLLM would not serve cannot earn the top star."
            .into(),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// The value of `metric` for a run of `preset` that produced `report` (None when absent).
pub fn metric_value(metric: &str, preset: &PresetDto, report: &Report) -> Option<f64> {
    resolve(metric, &serde_json::to_value(preset).ok()?, &serde_json::to_value(report).ok()?)
}

fn resolve(metric: &str, preset: &Value, report: &Value) -> Option<f64> {
    let (root, path) = match metric.strip_prefix("config.") {
        Some(rest) => (preset, rest),
        None => (report, metric),
    };
    let segs = parse_path(path)?;
    get_path(root, &segs).and_then(number)
}

/// Parses and validates a mission; errors name the field (`goals[1].metric`,
/// `preset.scheduler.max_num_seqs`, `fix.allocator.block_size`).
pub fn parse_mission(json: &str) -> Result<Mission, ConfigError> {
    Mission::from_dto(read_mission_dto(json)?)
}

impl Mission {
    /// Validates a deserialized mission file (everything [`parse_mission`] checks after JSON).
    pub fn from_dto(dto: MissionDto) -> Result<Mission, ConfigError> {
        let knobs = validate_mission_dto(&dto)?;
        let fix_preset = patch_preset(&dto.preset, &knobs, &dto.knobs, &dto.fix).map_err(|e| e.within("fix"))?;
        if changed_paths(&dto.preset, &fix_preset).is_empty() {
            return Err(ConfigError::new(
                "fix",
                "the fix changes nothing in the preset; write the change that earns three stars",
            ));
        }
        Ok(Mission { dto, knobs, fix_preset })
    }

    pub fn dto(&self) -> &MissionDto {
        &self.dto
    }
    pub fn id(&self) -> &str {
        &self.dto.id
    }
    pub fn number(&self) -> u32 {
        self.dto.number
    }
    pub fn title(&self) -> &str {
        &self.dto.title
    }
    pub fn story(&self) -> &str {
        &self.dto.story
    }
    pub fn task(&self) -> &str {
        &self.dto.task
    }
    pub fn knobs(&self) -> &[String] {
        &self.dto.knobs
    }
    pub fn goals(&self) -> &[GoalDto] {
        &self.dto.goals
    }
    /// Every goal that scores, each of which the mission panel shows as a card: the file's
    /// goals in order, then, where a knob lets the learner pick the block size, the goal of a
    /// size vLLM's attention backend runs.
    pub fn scoring_goals(&self) -> Vec<GoalDto> {
        let block_size = [Seg::Key("allocator".into()), Seg::Key("block_size".into())];
        let chosen = self.dto.knobs.iter().filter_map(|k| parse_path(k)).any(|k| covers(&k, &block_size));
        let mut goals = self.dto.goals.clone();
        if chosen {
            goals.push(backend_block_size_goal());
        }
        goals
    }
    pub fn hints(&self) -> &[String] {
        &self.dto.hints
    }
    /// The broken setup the mission loads.
    pub fn preset(&self) -> &PresetDto {
        &self.dto.preset
    }
    /// The documented fix as a patch (what "show solution" applies).
    pub fn fix(&self) -> &Value {
        &self.dto.fix
    }
    /// The broken setup with the fix applied.
    pub fn fix_preset(&self) -> &PresetDto {
        &self.fix_preset
    }

    /// Merges a knob patch (a partial preset: `{"allocator": {"kind": "paged"}}`) into the
    /// mission's preset. Objects merge key by key, anything else replaces, an object with a
    /// different `kind` replaces the whole object, and `null` is refused. The result must be a
    /// valid preset that changes only knobs (vLLM may still refuse to start it; that scores 0
    /// stars); errors name the preset path.
    pub fn apply_patch(&self, patch: &Value) -> Result<PresetDto, ConfigError> {
        patch_preset(&self.dto.preset, &self.knobs, &self.dto.knobs, patch)
    }

    /// Refuses a preset that changes a path no knob covers; the error names the first one.
    pub fn check_locks(&self, preset: &PresetDto) -> Result<(), ConfigError> {
        check_locks(&self.dto.preset, &self.knobs, &self.dto.knobs, preset)
    }

    /// Paths `preset` changes that no knob covers (empty when the preset plays by the rules).
    pub fn locked_changes(&self, preset: &PresetDto) -> Vec<String> {
        locked_changes(&self.dto.preset, &self.knobs, preset)
    }

    /// Runs `preset` to the end and scores it; a setup vLLM refuses to start has no report and
    /// scores 0 stars with vLLM's words ([`Score::startup_refusal`]).
    pub fn run(&self, preset: &PresetDto) -> Result<(Option<Report>, Score), ConfigError> {
        match start(preset)? {
            Startup::Starts(config) => {
                let report = crate::engine::fleet::run_to_end(*config)?;
                let s = score(self, preset, &report);
                Ok((Some(report), s))
            }
            Startup::Refused(words) => Ok((None, score_refused(self, preset, &words))),
        }
    }

    /// Applies a knob patch, runs it and scores it.
    pub fn run_patch(&self, patch: &Value) -> Result<(PresetDto, Option<Report>, Score), ConfigError> {
        let preset = self.apply_patch(patch)?;
        let (report, s) = self.run(&preset)?;
        Ok((preset, report, s))
    }
}

fn patch_preset(
    base: &PresetDto,
    knobs: &[Vec<Seg>],
    knob_names: &[String],
    patch: &Value,
) -> Result<PresetDto, ConfigError> {
    if !patch.is_object() {
        return Err(ConfigError::new("", "a patch is a JSON object shaped like a preset, e.g. {\"kv_memory_gib\": 4}"));
    }
    let mut merged = serde_json::to_value(base)
        .map_err(|e| ConfigError::new("preset", format!("cannot be written as JSON: {e}")))?;
    merge(&mut merged, patch, &mut Vec::new())?;
    let dto = preset_dto_from_value(&merged).map_err(name_missing_field)?;
    check_locks(base, knobs, knob_names, &dto)?;
    start(&dto)?;
    Ok(dto)
}

/// Refuses a preset that changes a path no knob covers, naming the first such path.
fn check_locks(
    base: &PresetDto,
    knobs: &[Vec<Seg>],
    knob_names: &[String],
    dto: &PresetDto,
) -> Result<(), ConfigError> {
    match locked_changes(base, knobs, dto).into_iter().next() {
        Some(path) => Err(ConfigError::new(
            &path,
            format!("this mission keeps {path} as it is; you may change {}", knob_names.join(", ")),
        )),
        None => Ok(()),
    }
}

fn changed_paths(base: &PresetDto, preset: &PresetDto) -> Vec<Vec<Seg>> {
    let (Ok(base), Ok(new)) = (serde_json::to_value(base), serde_json::to_value(preset)) else {
        return vec![Vec::new()];
    };
    let mut out = Vec::new();
    diff(&base, &new, &mut Vec::new(), &mut out);
    out
}

fn locked_changes(base: &PresetDto, knobs: &[Vec<Seg>], preset: &PresetDto) -> Vec<String> {
    changed_paths(base, preset)
        .into_iter()
        .filter(|p| !knobs.iter().any(|k| covers(k, p)))
        .map(|p| if p.is_empty() { "(the whole preset)".to_string() } else { display_path(&p) })
        .collect()
}
