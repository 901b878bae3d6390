//! What the page needs to play a mission: the shipped ones (`missions::shipped`), resolving a lab
//! state's [`MissionRef`], and the knob list a learner reads. Which controls a mission's knobs leave
//! free is `controls::control_unlocked`'s; scoring is `missions::mission`'s.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

use super::url_state::{LabState, MissionRef};
use crate::missions::mission::Mission;
use crate::missions::played::valid_replay;

pub use crate::missions::shipped::{ids, index, json};

/// The shipped mission `id`; an unknown id is an error that lists the known ones.
pub fn shipped(id: &str) -> Result<Mission, String> {
    crate::missions::shipped::mission(id)
}

/// The mission a lab state refers to: its custom file, or the shipped one.
pub fn resolve(r: &MissionRef) -> Result<Mission, String> {
    if !cfg!(feature = "panels") {
        // The page's first module has no missions (`Command::needs_panels`).
        return Err(format!("mission {}: missions are the full lab's", r.id));
    }
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

/// The knob names as a learner reads them (`scheduler.max_num_seqs`, `allocator`).
pub fn knob_list(m: &Mission) -> String {
    m.knobs().join(", ")
}

/// The link (relative to the lab's page) that plays the custom mission `state` plays again from
/// its start: `?mission_url=…` when it came from a linked file, else `#lab=…` carrying the mission
/// whole. None for a shipped mission (the hub links those itself) or a link too long to keep.
pub fn replay_link(state: &LabState) -> Option<String> {
    if !cfg!(feature = "panels") {
        return None; // the page's first module has no missions
    }
    let r = state.mission.as_ref()?;
    let custom = r.custom.as_ref()?;
    let link = match &state.source {
        Some(file) => format!("?mission_url={}", utf8_percent_encode(&file.url, NON_ALPHANUMERIC)),
        None => {
            let m = Mission::from_dto((**custom).clone()).ok()?;
            let mut start = LabState::new(m.preset().clone());
            start.mission = Some(MissionRef { hints: 0, solution: false, ..r.clone() });
            format!("#{}", start.to_fragment())
        }
    };
    valid_replay(&link).then_some(link)
}
