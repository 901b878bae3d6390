//! A refusal's words as the lab shows them. [`within_locks`]: its advice within a mission's
//! locks. The engine's refusals end in the fixes that
//! make a setup run ("…; use \"recompute\", or set scheduler.engine to \"v0\""); in a mission
//! some of them change settings the learner cannot touch there. The alternatives naming a
//! locked setting are left out and the reason says that the mission keeps it (at its value);
//! when no alternative is left the reason says which settings the mission leaves free.
//! [`lab_words`]: vLLM's startup refusals (kept word for word where vLLM's words are the point:
//! a preset or a mission refused at startup) retold in the lab's words for the Sweep panel's
//! texts, with the sizes they give and the lab's settings as the fixes.

use crate::formats::paths::preset_path_kind;
use crate::missions::mission::Mission;

use super::control_edit::{control_unlocked, value_for};
use super::url_state::LabState;

/// The preset paths `text` names that `knobs` lock, in order, once each.
fn locked_paths<'a>(text: &'a str, knobs: &[String]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || "_.[]".contains(c))) {
        let token = token.trim_end_matches('.');
        if token.contains(|c: char| c.is_ascii_alphabetic())
            && preset_path_kind(token).is_some()
            && !control_unlocked(knobs, token)
            && !out.contains(&token)
        {
            out.push(token);
        }
    }
    out
}

/// The alternatives of an advice ("a, b, or c"; "a or b").
fn alternatives(advice: &str) -> Vec<&str> {
    advice.split(", or ").flat_map(|a| a.split(" or ")).flat_map(|a| a.split(", ")).map(str::trim).collect()
}

fn join(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// `message` with only the fixes `m` leaves to the learner (see the module doc).
pub fn within_locks(message: &str, m: &Mission) -> String {
    let Some((reason, advice)) = message.rsplit_once("; ") else { return message.to_string() };
    let knobs = m.knobs();
    let alts = alternatives(advice);
    let (free, locked): (Vec<&str>, Vec<&str>) = alts.iter().partition(|a| locked_paths(a, knobs).is_empty());
    if locked.is_empty() {
        return message.to_string();
    }
    let start = LabState::new(m.preset().clone());
    let kept: Vec<String> = locked
        .iter()
        .flat_map(|a| locked_paths(a, knobs))
        .map(|p| match value_for(&start, p) {
            Some(v) => format!("{p} at {v}"),
            None => p.to_string(),
        })
        .collect();
    let keeps = format!("mission {} keeps {}", m.number(), kept.join(" and "));
    if free.is_empty() {
        let knobs = super::missions::knob_list(m);
        return format!("{reason}; {keeps}: change {knobs} instead");
    }
    format!("{reason}; {} ({keeps})", join(&free))
}

/// vLLM's startup refusals in the lab's words (see the module doc); other text as it is.
pub fn lab_words(message: &str) -> String {
    let (prefix, body) = match message.split_once(": ") {
        Some((field, body)) if !field.contains(' ') => (format!("{field}: "), body),
        _ => (String::new(), message),
    };
    if body.starts_with("No available memory for the cache blocks.") {
        return format!(
            "{prefix}vLLM would start with no memory left for the KV cache (the weights, activations and CUDA graphs fill this instance's share of the GPU); raise gpu_memory_utilization, or use more tensor-parallel GPUs or a larger GPU"
        );
    }
    if let Some(rest) = body.strip_prefix("To serve at least one request with the model's max seq len (") {
        let between = |from: &str, to: &str| rest.split_once(from).and_then(|(_, r)| r.split_once(to)).map(|(v, _)| v);
        let len = rest.split_once(')').map(|(v, _)| v);
        let needed = rest.split_once("), (").and_then(|(_, r)| r.split_once(" GiB")).map(|(v, _)| v);
        let available = between("available KV cache memory (", " GiB");
        if let (Some(len), Some(needed), Some(available)) = (len, needed, available) {
            let fix = match between("estimated maximum model length is ", ". ") {
                Some(e) => format!("lower scheduler.max_model_len to {e} or less, or give the KV cache more memory"),
                None => "give the KV cache more memory".into(),
            };
            return format!(
                "{prefix}vLLM would not start: one request of max_model_len ({len} tokens) needs {needed} GiB of KV cache, more than the {available} GiB it has; {fix}"
            );
        }
    }
    message.to_string()
}
