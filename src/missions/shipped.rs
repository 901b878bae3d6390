//! The shipped missions (`crate::shipped`), parsed: the hub's index, finding a mission by id.

use super::mission::{parse_mission, Mission};
use crate::formats::mission::{parse_mission_index, MissionIndex};
use crate::shipped;

/// The hub's list, in order.
pub fn index() -> Result<MissionIndex, String> {
    parse_mission_index(shipped::MISSION_INDEX).map_err(|e| format!("the mission index: {e}"))
}

/// Shipped mission ids in hub order.
pub fn ids() -> Vec<String> {
    index().map(|i| i.missions.into_iter().map(|m| m.id).collect()).unwrap_or_default()
}

/// The shipped mission file for `id`, if any.
pub fn json(id: &str) -> Option<&'static str> {
    let index = index().ok()?;
    let entry = index.missions.iter().find(|m| m.id == id)?;
    shipped::lookup(shipped::MISSIONS, &entry.file)
}

/// The shipped mission `id`; an unknown id is an error that lists the known ones.
pub fn mission(id: &str) -> Result<Mission, String> {
    let text = json(id).ok_or_else(|| format!("unknown mission \"{id}\"; use one of {}", ids().join(", ")))?;
    parse_mission(text).map_err(|e| format!("shipped mission {id}: {e}"))
}
