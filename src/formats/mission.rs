//! Mission files (`kvlab/mission@1`) and the mission index (`kvlab/missions-index@1`) at the edge:
//! serde DTOs with `deny_unknown_fields`, read and checked so that every error names the field
//! (`preset.scheduler.max_num_seqs`, `goals[0].metric`, `knobs[2]`). What a mission *does*
//! (patches, scoring, runs) is `missions::mission`.
//!
//! - **Metrics** are paths into the report JSON (`kv.utilization_mean`, `latency_ms.ttft_p95`;
//!   see [`REPORT_METRICS`]) or, with a `config.` prefix, into the submitted preset
//!   (`config.kv_memory_gib`, `config.allocator.block_size`; booleans read as 1 and 0).
//! - **Knobs** are preset paths the learner may change (`allocator`, `kv_memory_gib`,
//!   `workload.classes[0].max_tokens`, `workload.classes[*].n`); a knob covers everything below it.
//!   Switching an object's `kind` (allocator, arrival) changes the whole object, so it needs the
//!   object itself as a knob (`allocator`), not `allocator.kind`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json::{from_json_with_path, from_value_with_path};
use super::paths::{check_preset_shape, display_path, parse_path, preset_path_kind, PathKind, Seg};
use super::preset::{PresetDto, MAX_PRESET_BYTES};
use super::sniff::{MISSION_INDEX_SCHEMA, MISSION_SCHEMA, PRESET_SCHEMA};
use crate::engine::config::ConfigError;

/// Stars a mission awards at most (and the number of goal tiers).
pub const MAX_STARS: u8 = 3;

const MAX_GOALS: usize = 12;
const MAX_KNOBS: usize = 32;
const MAX_HINTS: usize = 10;

/// The mission file as an instructor writes it. [`parse_mission`] validates it into a [`Mission`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionDto {
    pub schema: String,
    pub id: String,
    pub number: u32,
    pub title: String,
    pub story: String,
    pub task: String,
    /// The broken setup: a complete `kvlab/preset@1` object.
    pub preset: PresetDto,
    pub knobs: Vec<String>,
    pub goals: Vec<GoalDto>,
    #[serde(default)]
    pub hints: Vec<String>,
    /// The documented fix: a partial preset merged into `preset` (see [`Mission::apply_patch`]).
    pub fix: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalDto {
    pub metric: String,
    pub comparison: Comparison,
    pub value: f64,
    /// The star (tier, 1 to 3) this goal is part of.
    pub stars: u8,
    pub label: String,
    pub explain: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = ">")]
    Above,
    #[serde(rename = "<")]
    Below,
    /// Exact; meant for whole-number config values (`config.allocator.block_size == 16`).
    #[serde(rename = "==")]
    Equal,
}

impl Comparison {
    /// Whether `actual <comparison> value` holds (never for NaN).
    pub fn holds(self, actual: f64, value: f64) -> bool {
        match self {
            Comparison::AtLeast => actual >= value,
            Comparison::AtMost => actual <= value,
            Comparison::Above => actual > value,
            Comparison::Below => actual < value,
            Comparison::Equal => actual == value,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::AtLeast => ">=",
            Comparison::AtMost => "<=",
            Comparison::Above => ">",
            Comparison::Below => "<",
            Comparison::Equal => "==",
        }
    }
}

/// Numeric report paths a goal may name, with what each measures.
pub const REPORT_METRICS: &[(&str, &str)] = &[
    ("kv_bytes_per_token", "bytes of KV cache one token costs"),
    ("capacity_tokens", "tokens of KV the pool holds"),
    ("sim_time_s", "simulated seconds"),
    ("steps", "scheduler steps run"),
    ("requests.arrived", "requests that arrived"),
    ("requests.finished", "requests whose every sample finished"),
    ("requests.running_at_end", "requests still running at the end"),
    ("requests.waiting_at_end", "requests still queued at the end"),
    ("requests.swapped_at_end", "requests swapped out to CPU at the end"),
    ("requests.rejected", "requests that could never fit and were refused"),
    ("kv.utilization_mean", "share of allocated KV memory that holds tokens (time-weighted)"),
    ("kv.allocated_fraction_mean", "allocated share of KV capacity (time-weighted)"),
    ("kv.live_fraction_mean", "token-holding share of KV capacity (time-weighted)"),
    ("running_mean", "sequences running per step, time-weighted mean"),
    ("running_max", "most sequences running at once"),
    ("preemptions", "preemptions (recompute and swap)"),
    ("swap_preemptions", "preemptions by swap"),
    ("hol_blocked_steps", "steps on which the head of the queue could not be admitted"),
    ("hol_blocked_with_free_memory_steps", "blocked steps on which enough memory was free in total"),
    ("cow_copies", "copy-on-write block copies (parallel sampling)"),
    ("prefix_cache_hit_rate", "share of prompt tokens found in the prefix cache"),
    ("offload.offload_hit_rate", "share of prompt tokens found in the host tier (runs with kv_offload)"),
    ("fleet.imbalance", "the most requests one replica was sent over the mean (runs with replicas)"),
    ("offload.combined_hit_rate", "share of prompt tokens found on the GPU or in the host tier (runs with kv_offload)"),
    ("latency_ms.ttft_p50", "median time to first token, ms"),
    ("latency_ms.ttft_p95", "95th percentile time to first token, ms"),
    ("latency_ms.tpot_p50", "median time per output token, ms"),
    ("latency_ms.tpot_p95", "95th percentile time per output token, ms"),
    ("latency_ms.ttft_mean", "mean time to first token, ms"),
    ("latency_ms.ttft_p90", "90th percentile time to first token, ms"),
    ("latency_ms.ttft_p99", "99th percentile time to first token, ms"),
    ("latency_ms.tpot_mean", "mean time per output token, ms"),
    ("latency_ms.tpot_p90", "90th percentile time per output token, ms"),
    ("latency_ms.tpot_p99", "99th percentile time per output token, ms"),
    ("latency_ms.itl_mean", "mean gap between consecutive tokens (ITL), ms"),
    ("latency_ms.itl_p50", "median ITL, ms"),
    ("latency_ms.itl_p90", "90th percentile ITL, ms"),
    ("latency_ms.itl_p95", "95th percentile ITL, ms"),
    ("latency_ms.itl_p99", "99th percentile ITL, ms"),
    ("latency_ms.e2e_mean", "mean end-to-end latency of finished requests, ms"),
    ("latency_ms.e2e_p50", "median end-to-end latency, ms"),
    ("latency_ms.e2e_p90", "90th percentile end-to-end latency, ms"),
    ("latency_ms.e2e_p95", "95th percentile end-to-end latency, ms"),
    ("latency_ms.e2e_p99", "99th percentile end-to-end latency, ms"),
    ("throughput.requests_per_s", "finished requests per second, first arrival to last finish"),
    ("throughput.output_tokens_per_s", "output tokens per second over the benchmark's duration"),
    ("throughput.total_tokens_per_s", "prompt and output tokens per second over the benchmark's duration"),
    ("output_tokens_per_s", "output tokens per simulated second"),
    ("paged_overhead", "extra cost of paged KV reads (0.12 + 1.3 / block_size by default; 0 contiguous)"),
];

/// Why `metric` cannot name a goal's value, or None when it can.
pub fn metric_problem(metric: &str) -> Option<String> {
    if let Some(rest) = metric.strip_prefix("config.") {
        let segs = match parse_path(rest) {
            Some(s) if !s.contains(&Seg::Any) => s,
            _ => {
                return Some(format!(
                    "\"{metric}\" is not a path; write config.<preset path>, e.g. config.kv_memory_gib"
                ))
            }
        };
        return match preset_path_kind(rest) {
            Some(PathKind::Number | PathKind::Bool) => None,
            Some(_) => Some(format!("{} is not a number", display_path(&segs))),
            None => Some(format!("no preset has the path {rest}; see the preset fields in docs/SCHEMA.md")),
        };
    }
    if REPORT_METRICS.iter().any(|(m, _)| *m == metric) {
        None
    } else {
        Some(format!(
            "unknown metric \"{metric}\"; use a report metric ({}) or config.<preset path>",
            REPORT_METRICS.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(", ")
        ))
    }
}

/// Reads a mission file into its DTO: the size limit, JSON, arrays where objects belong, and serde
/// with the failing field's path (`goals[1].metric`, `preset.scheduler.max_num_seqs`).
pub fn read_mission_dto(json: &str) -> Result<MissionDto, ConfigError> {
    if json.len() > MAX_PRESET_BYTES {
        return Err(ConfigError::new(
            "",
            format!("the mission is {} bytes; the limit is {MAX_PRESET_BYTES} bytes", json.len()),
        ));
    }
    let value: Value = serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("not valid JSON ({e})")))?;
    let Value::Object(root) = &value else {
        return Err(ConfigError::new("", format!("a mission is a JSON object with \"schema\": \"{MISSION_SCHEMA}\"")));
    };
    if let Some(preset) = root.get("preset") {
        check_preset_shape(preset, &mut Vec::new()).map_err(|e| e.within("preset"))?;
    }
    if let Some(Value::Array(goals)) = root.get("goals") {
        if let Some(i) = goals.iter().position(|g| !g.is_object()) {
            return Err(ConfigError::new(format!("goals[{i}]"), "write each goal as an object {\"metric\": …}"));
        }
    }
    from_value_with_path(&value).map_err(name_missing_field)
}

/// serde says "missing field `x`" at the parent's path; name the field itself.
pub fn name_missing_field(mut e: ConfigError) -> ConfigError {
    if e.message.starts_with("unknown field ``") {
        // An empty key: serde's path ends in a bare dot.
        e.field = format!("{}[\"\"]", e.field.trim_end_matches('.'));
    } else if let Some(name) = e.message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        e.field = if e.field.is_empty() { name.to_string() } else { format!("{}.{name}", e.field) };
    } else if e.field.is_empty() && !e.message.starts_with("not valid JSON") {
        e.message = format!("a mission is a JSON object with \"schema\": \"{MISSION_SCHEMA}\" ({})", e.message);
    }
    e
}

fn check_text(field: &str, text: &str, max_chars: usize) -> Result<(), ConfigError> {
    if text.trim().is_empty() {
        return Err(ConfigError::new(field, "write something here; it is shown to the learner"));
    }
    let n = text.chars().count();
    if n > max_chars {
        return Err(ConfigError::new(field, format!("{n} characters; keep it to {max_chars}")));
    }
    Ok(())
}

/// Checks everything a mission file says on its own (schema, id, texts, the preset, knobs, goals,
/// hints, that the fix is an object) and returns the parsed knobs. Whether the fix is a valid
/// patch is the mission's to check (`missions::Mission::from_dto`).
pub fn validate_mission_dto(dto: &MissionDto) -> Result<Vec<Vec<Seg>>, ConfigError> {
    if dto.schema != MISSION_SCHEMA {
        return Err(ConfigError::new(
            "schema",
            format!("\"{}\" is not a mission schema this lab reads; use \"{MISSION_SCHEMA}\"", dto.schema),
        ));
    }
    let id_ok = (1..=64).contains(&dto.id.len())
        && dto.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !dto.id.starts_with('-');
    if !id_ok {
        return Err(ConfigError::new("id", "use 1 to 64 lowercase letters, digits and dashes, e.g. \"m1-paging\""));
    }
    if !(1..=99).contains(&dto.number) {
        return Err(ConfigError::new("number", format!("{} is out of range; use 1 to 99", dto.number)));
    }
    check_text("title", &dto.title, 120)?;
    check_text("story", &dto.story, 4000)?;
    check_text("task", &dto.task, 1000)?;
    if dto.preset.schema != PRESET_SCHEMA {
        return Err(ConfigError::new(
            "preset.schema",
            format!("\"{}\" is not a preset schema; use \"{PRESET_SCHEMA}\"", dto.preset.schema),
        ));
    }
    // A setup vLLM refuses to start is a fair broken setup (it scores 0 stars with vLLM's words).
    if let Err(e) = dto.preset.to_config() {
        if !e.startup_refusal {
            return Err(e.within("preset"));
        }
    }
    let knobs = validate_knobs(&dto.knobs)?;
    validate_goals(&dto.goals)?;
    if dto.hints.len() > MAX_HINTS {
        return Err(ConfigError::new("hints", format!("{} hints; keep it to {MAX_HINTS}", dto.hints.len())));
    }
    for (i, h) in dto.hints.iter().enumerate() {
        check_text(&format!("hints[{i}]"), h, 1000)?;
    }
    if !dto.fix.is_object() {
        return Err(ConfigError::new(
            "fix",
            "the fix is a JSON object shaped like a preset, e.g. {\"kv_memory_gib\": 4}",
        ));
    }
    Ok(knobs)
}

fn validate_knobs(knobs: &[String]) -> Result<Vec<Vec<Seg>>, ConfigError> {
    if knobs.is_empty() {
        return Err(ConfigError::new(
            "knobs",
            "list at least one preset path the learner may change, e.g. \"kv_memory_gib\"",
        ));
    }
    if knobs.len() > MAX_KNOBS {
        return Err(ConfigError::new("knobs", format!("{} knobs; keep it to {MAX_KNOBS}", knobs.len())));
    }
    let mut out = Vec::new();
    for (i, k) in knobs.iter().enumerate() {
        let field = format!("knobs[{i}]");
        let segs = parse_path(k).ok_or_else(|| {
            ConfigError::new(&field, format!("\"{k}\" is not a preset path; write e.g. \"scheduler.max_num_seqs\""))
        })?;
        if preset_path_kind(k).is_none() {
            return Err(ConfigError::new(
                &field,
                format!("no preset has the path \"{k}\"; see the preset fields in docs/SCHEMA.md"),
            ));
        }
        if let Some(parent) = k.strip_suffix(".kind") {
            return Err(ConfigError::new(
                &field,
                format!("switching kinds replaces the whole object; list \"{parent}\" instead"),
            ));
        }
        if out.contains(&segs) {
            return Err(ConfigError::new(&field, format!("\"{k}\" is listed twice")));
        }
        out.push(segs);
    }
    Ok(out)
}

fn validate_goals(goals: &[GoalDto]) -> Result<(), ConfigError> {
    if goals.is_empty() || goals.len() > MAX_GOALS {
        return Err(ConfigError::new(
            "goals",
            format!("{} goals; write 1 to {MAX_GOALS}, at least one per star", goals.len()),
        ));
    }
    for (i, g) in goals.iter().enumerate() {
        let f = |k: &str| format!("goals[{i}].{k}");
        if let Some(problem) = metric_problem(&g.metric) {
            return Err(ConfigError::new(f("metric"), problem));
        }
        if !g.value.is_finite() {
            return Err(ConfigError::new(f("value"), "use a finite number"));
        }
        if !(1..=MAX_STARS).contains(&g.stars) {
            return Err(ConfigError::new(
                f("stars"),
                format!("{} is out of range; use 1, 2 or 3 (the star this goal is part of)", g.stars),
            ));
        }
        check_text(&f("label"), &g.label, 120)?;
        check_text(&f("explain"), &g.explain, 1000)?;
    }
    for tier in 1..=MAX_STARS {
        if !goals.iter().any(|g| g.stars == tier) {
            return Err(ConfigError::new(
                "goals",
                format!("no goal has \"stars\": {tier}; every star from 1 to {MAX_STARS} needs at least one goal"),
            ));
        }
    }
    Ok(())
}

/// `assets/missions/index.json`: the missions in order, for the series hub.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionIndex {
    pub schema: String,
    pub missions: Vec<MissionIndexEntry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionIndexEntry {
    pub id: String,
    pub number: u32,
    pub title: String,
    /// The mission file, relative to the index.
    pub file: String,
}

/// Parses the mission index: ids unique, numbers strictly increasing, files plain `*.json` names.
pub fn parse_mission_index(json: &str) -> Result<MissionIndex, ConfigError> {
    let index: MissionIndex = from_json_with_path(json).map_err(name_missing_field)?;
    if index.schema != MISSION_INDEX_SCHEMA {
        return Err(ConfigError::new("schema", format!("use \"{MISSION_INDEX_SCHEMA}\"")));
    }
    let mut last = 0;
    let mut ids = BTreeSet::new();
    for (i, m) in index.missions.iter().enumerate() {
        let f = |k: &str| format!("missions[{i}].{k}");
        if !ids.insert(m.id.as_str()) {
            return Err(ConfigError::new(f("id"), format!("\"{}\" is listed twice", m.id)));
        }
        if m.number <= last {
            return Err(ConfigError::new(f("number"), "list missions in increasing order of number"));
        }
        last = m.number;
        let file_ok =
            m.file.ends_with(".json") && !m.file.contains("..") && !m.file.starts_with('/') && !m.file.contains('\\');
        if !file_ok {
            return Err(ConfigError::new(f("file"), "use a relative path to a .json file next to the index"));
        }
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons() {
        assert!(Comparison::AtLeast.holds(1.0, 1.0));
        assert!(!Comparison::Below.holds(1.0, 1.0));
        assert!(!Comparison::AtMost.holds(f64::NAN, 1.0));
        assert!(Comparison::Equal.holds(16.0, 16.0));
    }
}
