//! The shipped missions (assets/missions/, embedded in the bundle) and what the page needs to
//! play one: finding a mission by id, resolving a lab state's [`MissionRef`], and which controls
//! a mission's knobs leave free (a knob covers every preset path below it; `[*]` matches any
//! array index). Scoring itself is the engine's (`engine::mission::score`).

use crate::engine::mission::{parse_mission, parse_mission_index, Mission, MissionIndex};

use super::lab::error_text;
use super::url_state::MissionRef;

/// The hub's list, in order.
pub const INDEX: &str = include_str!("../../assets/missions/index.json");

/// (file name in the index, mission JSON) of every shipped mission.
pub const SHIPPED: &[(&str, &str)] = &[
    ("m1-paging.json", include_str!("../../assets/missions/m1-paging.json")),
    ("m2-block-size.json", include_str!("../../assets/missions/m2-block-size.json")),
    ("m3-preemption-storm.json", include_str!("../../assets/missions/m3-preemption-storm.json")),
    ("m4-burst-budget.json", include_str!("../../assets/missions/m4-burst-budget.json")),
    ("m5-prefix-cache.json", include_str!("../../assets/missions/m5-prefix-cache.json")),
    ("m6-fp8-kv.json", include_str!("../../assets/missions/m6-fp8-kv.json")),
];

pub fn index() -> Result<MissionIndex, String> {
    parse_mission_index(INDEX).map_err(|e| format!("the mission index: {}", error_text(&e)))
}

/// Shipped mission ids in hub order.
pub fn ids() -> Vec<String> {
    index().map(|i| i.missions.into_iter().map(|m| m.id).collect()).unwrap_or_default()
}

/// The shipped mission file for `id`, if any.
pub fn json(id: &str) -> Option<&'static str> {
    let index = index().ok()?;
    let entry = index.missions.iter().find(|m| m.id == id)?;
    SHIPPED.iter().find(|(file, _)| *file == entry.file).map(|(_, text)| *text)
}

/// The shipped mission `id`; an unknown id is an error that lists the known ones.
pub fn shipped(id: &str) -> Result<Mission, String> {
    let text = json(id).ok_or_else(|| format!("unknown mission \"{id}\"; use one of {}", ids().join(", ")))?;
    parse_mission(text).map_err(|e| format!("shipped mission {id}: {}", error_text(&e)))
}

/// The mission a lab state refers to: its custom file, or the shipped one.
pub fn resolve(r: &MissionRef) -> Result<Mission, String> {
    match &r.custom {
        Some(dto) => {
            let m = Mission::from_dto((**dto).clone()).map_err(|e| format!("the mission: {}", error_text(&e)))?;
            if m.id() != r.id {
                return Err(format!("mission.id: \"{}\" does not match the mission's id \"{}\"", r.id, m.id()));
            }
            Ok(m)
        }
        None => shipped(&r.id),
    }
}

/// The reference a lab state keeps for `m`: by id when it is exactly a shipped mission.
pub fn reference(m: &Mission) -> MissionRef {
    let is_shipped = shipped(m.id()).is_ok_and(|s| s.dto() == m.dto());
    MissionRef {
        id: m.id().to_string(),
        custom: (!is_shipped).then(|| Box::new(m.dto().clone())),
        hints: 0,
        solution: false,
    }
}

/// One step of a path: a key, an index, or any index (`[*]`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
    Any,
}

/// `workload.classes[0].n` / `workload.classes[*].n` → segments.
fn knob_segments(knob: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in knob.split('.') {
        let mut pieces = part.split('[');
        out.push(Seg::Key(pieces.next().unwrap_or_default().to_string()));
        for p in pieces {
            let inner = p.trim_end_matches(']');
            out.push(if inner == "*" { Seg::Any } else { inner.parse().map_or(Seg::Any, Seg::Index) });
        }
    }
    out
}

/// The preset path a form control edits, as segments: `workload.classes.0.n` →
/// `workload.classes[0].n`; `@paged.block_size` → `allocator.block_size`; switching the
/// allocator (`@alloc.kind`) replaces `allocator` whole.
fn control_segments(control: &str) -> Vec<Seg> {
    if control == "@alloc.kind" {
        return vec![Seg::Key("allocator".into())];
    }
    let path = match control.strip_prefix('@') {
        Some(rest) => format!("allocator.{}", rest.split_once('.').map_or(rest, |(_, f)| f)),
        None => control.to_string(),
    };
    path.split('.')
        .map(|s| match s.parse::<usize>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key(s.to_string()),
        })
        .collect()
}

/// Whether a mission with these knobs lets the learner use the control at `control`
/// (a `data-path`; `workload.classes` and `workload.arrival.bursts` for adding rows).
pub fn control_unlocked(knobs: &[String], control: &str) -> bool {
    let path = control_segments(control);
    knobs.iter().any(|k| {
        let knob = knob_segments(k);
        knob.len() <= path.len()
            && knob.iter().zip(&path).all(|(k, p)| k == p || matches!((k, p), (Seg::Any, Seg::Index(_))))
    })
}

/// The knob names as a learner reads them (`scheduler.max_num_seqs`, `allocator`).
pub fn knob_list(m: &Mission) -> String {
    m.knobs().join(", ")
}
