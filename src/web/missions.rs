//! What the page needs to play a mission: the shipped ones (`missions::shipped`), resolving a lab
//! state's [`MissionRef`], and which controls a mission's knobs leave free (a knob covers every
//! preset path below it, as `formats::paths::covers` decides). Scoring is `missions::mission`'s.

use super::url_state::MissionRef;
use crate::formats::paths::{covers, parse_path, Seg};
use crate::missions::mission::Mission;

pub use crate::missions::shipped::{ids, index, json};

/// The shipped mission `id`; an unknown id is an error that lists the known ones.
pub fn shipped(id: &str) -> Result<Mission, String> {
    crate::missions::shipped::mission(id)
}

/// The mission a lab state refers to: its custom file, or the shipped one.
pub fn resolve(r: &MissionRef) -> Result<Mission, String> {
    match &r.custom {
        Some(dto) => {
            let m = Mission::from_dto((**dto).clone()).map_err(|e| format!("the mission: {e}"))?;
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
    knobs.iter().filter_map(|k| parse_path(k)).any(|knob| covers(&knob, &path))
}

/// The knob names as a learner reads them (`scheduler.max_num_seqs`, `allocator`).
pub fn knob_list(m: &Mission) -> String {
    m.knobs().join(", ")
}
