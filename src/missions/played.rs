//! The custom missions a learner played (loaded from a file, pasted or linked), so the hub can
//! list them beside the shipped ones with their stars. The stars themselves stay in the star
//! record (`stars.rs`); this list only names the missions.
//!
//! The record is versioned JSON, `{ "schema": "kvlab/played@1", "missions": [{ "id", "number",
//! "title", "replay"? }] }`, newest first; `replay` is the link that plays the mission again
//! (`?mission_url=…` or `#lab=…`, relative to the lab's page). It is bounded ([`MAX_PLAYED`] entries, titles of at most
//! [`MAX_TITLE_CHARS`] characters, [`MAX_PLAYED_BYTES`] of text) and read defensively:
//! [`PlayedList::parse`] never fails, keeps every valid entry and drops the rest.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::stars::valid_mission_id;

/// The schema of the stored list.
pub const PLAYED_SCHEMA: &str = "kvlab/played@1";
/// Most missions remembered (the oldest are forgotten first).
pub const MAX_PLAYED: usize = 32;
/// Longest title kept, in characters (longer ones are cut, with "…").
pub const MAX_TITLE_CHARS: usize = 120;
/// Longest replay link kept (a longer one is dropped: the hub then says to open the file).
pub const MAX_REPLAY_CHARS: usize = 8 * 1024;
/// Largest stored text read; anything longer is ignored whole.
pub const MAX_PLAYED_BYTES: usize = MAX_PLAYED * (MAX_REPLAY_CHARS + 1024);

/// One custom mission a learner played.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayedMission {
    pub id: String,
    pub number: u32,
    pub title: String,
    /// The link that plays it again, relative to the lab's page: `?mission_url=…` for a linked
    /// file, `#lab=…` (the mission carried whole) for one loaded from a file or pasted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

/// A replay link the hub may put in an `href`: one of the lab's own two forms, short enough.
pub fn valid_replay(link: &str) -> bool {
    (link.starts_with("?mission_url=") || link.starts_with("#lab=")) && link.len() <= MAX_REPLAY_CHARS
}

/// The custom missions played, newest first, without repeats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayedList {
    missions: Vec<PlayedMission>,
}

fn clip_title(title: &str) -> String {
    let title = title.trim();
    if title.chars().count() <= MAX_TITLE_CHARS {
        return title.to_string();
    }
    let mut cut: String = title.chars().take(MAX_TITLE_CHARS - 1).collect();
    cut.push('…');
    cut
}

fn entry(v: &Value) -> Option<PlayedMission> {
    let id = v.get("id")?.as_str()?;
    let number = u32::try_from(v.get("number")?.as_u64()?).ok()?;
    let title = v.get("title")?.as_str()?;
    let replay = v.get("replay").and_then(Value::as_str).filter(|l| valid_replay(l)).map(str::to_string);
    valid_mission_id(id).then(|| PlayedMission { id: id.to_string(), number, title: clip_title(title), replay })
}

impl PlayedList {
    /// Reads stored text; anything unreadable (bad JSON, another schema, too long, entries
    /// without an id, number and title) is left out, never an error.
    pub fn parse(text: &str) -> PlayedList {
        let mut list = PlayedList::default();
        if text.len() > MAX_PLAYED_BYTES {
            return list;
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else { return list };
        if v.get("schema").and_then(Value::as_str) != Some(PLAYED_SCHEMA) {
            return list;
        }
        for e in v.get("missions").and_then(Value::as_array).into_iter().flatten().filter_map(entry) {
            if list.missions.len() < MAX_PLAYED && !list.missions.iter().any(|m| m.id == e.id) {
                list.missions.push(e);
            }
        }
        list
    }

    /// Puts a mission first (replacing its earlier entry), with the link that replays it when
    /// one is valid; false when its id is not valid.
    pub fn add(&mut self, id: &str, number: u32, title: &str, replay: Option<&str>) -> bool {
        if !valid_mission_id(id) {
            return false;
        }
        self.missions.retain(|m| m.id != id);
        let replay = replay.filter(|l| valid_replay(l)).map(str::to_string);
        self.missions.insert(0, PlayedMission { id: id.to_string(), number, title: clip_title(title), replay });
        self.missions.truncate(MAX_PLAYED);
        true
    }

    pub fn missions(&self) -> &[PlayedMission] {
        &self.missions
    }

    /// The stored text.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "schema": PLAYED_SCHEMA, "missions": self.missions }).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_bounded_and_newest_first() {
        let mut l = PlayedList::default();
        for i in 0..40 {
            let replay = format!("#lab={}", "x".repeat(MAX_REPLAY_CHARS - 5));
            assert!(l.add(&format!("m{i}"), i, &"t".repeat(300), Some(&replay)));
        }
        assert!(l.add("m39", 39, "again", None));
        assert_eq!(l.missions().len(), MAX_PLAYED);
        assert_eq!(l.missions()[0].title, "again");
        assert_eq!(l.missions()[1].id, "m38");
        assert!(l.missions()[1].title.chars().count() <= MAX_TITLE_CHARS);
        assert!(l.to_json().len() < MAX_PLAYED_BYTES);
        assert_eq!(PlayedList::parse(&l.to_json()), l);
        assert!(!l.add("", 1, "no id", None));
        assert_eq!(l.missions()[1].replay.as_ref().map(String::len), Some(MAX_REPLAY_CHARS));
    }

    #[test]
    fn only_the_labs_own_links_are_kept_as_replay_links() {
        let mut l = PlayedList::default();
        for (link, kept) in [
            ("?mission_url=missions%2Fmine.json", true),
            ("#lab=eyJ2Ijox", true),
            ("javascript:alert(1)", false),
            ("https://elsewhere.example/?mission_url=x", false),
            (&*format!("#lab={}", "x".repeat(MAX_REPLAY_CHARS)), false),
        ] {
            l.add("mine", 1, "Mine", Some(link));
            assert_eq!(l.missions()[0].replay.is_some(), kept, "{link}");
            let stored = l.to_json().replace("\"replay\":\"?mission_url=", "\"replay\":\"javascript:");
            assert!(PlayedList::parse(&stored).missions()[0].replay.as_deref().is_none_or(valid_replay));
        }
    }

    #[test]
    fn corrupt_text_keeps_what_is_valid() {
        assert!(PlayedList::parse("{").missions().is_empty());
        assert!(PlayedList::parse(r#"{"schema": "other", "missions": []}"#).missions().is_empty());
        assert!(PlayedList::parse(&"x".repeat(MAX_PLAYED_BYTES + 1)).missions().is_empty());
        let l = PlayedList::parse(
            r#"{"schema": "kvlab/played@1", "missions": [{"id": "a", "number": 1, "title": "A"},
            {"id": 3}, "text", {"id": "a", "number": 2, "title": "dup"}, {"id": "b", "number": -1, "title": "B"},
            {"id": "c", "number": 7, "title": "C"}]}"#,
        );
        let ids: Vec<&str> = l.missions().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
    }
}
