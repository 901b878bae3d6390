//! The setup a learner last chose in each mission, so the hub's "Continue" takes them back to
//! their change instead of the broken setup the mission starts from.
//!
//! The record is versioned JSON, `{ "schema": "kvlab/last-setups@1", "setups": { "<mission id>":
//! "#lab=…" } }`: for each mission the lab's own link to that setup (the whole lab state, the
//! mission included, from the start of the run). It is bounded ([`MAX_SETUPS`] missions, links
//! of at most [`MAX_LINK_CHARS`] characters, [`MAX_RECORD_BYTES`] of text) and read defensively:
//! [`LastSetups::parse`] never fails and keeps every valid entry.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::stars::valid_mission_id;

/// The schema of the stored record.
pub const LAST_SETUPS_SCHEMA: &str = "kvlab/last-setups@1";
/// Most missions remembered (the shipped eleven and the custom ones a learner plays).
pub const MAX_SETUPS: usize = 64;
/// Longest link kept (a longer setup is not remembered: the hub then opens the mission's start).
pub const MAX_LINK_CHARS: usize = 8 * 1024;
/// Largest stored text read; anything longer is ignored whole.
pub const MAX_RECORD_BYTES: usize = MAX_SETUPS * (MAX_LINK_CHARS + 128);

/// A link the hub may put in an `href`: the lab's own `#lab=` form, short enough, base64url.
pub fn valid_link(link: &str) -> bool {
    link.strip_prefix("#lab=").is_some_and(|b64| {
        !b64.is_empty() && b64.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'=')
    }) && link.len() <= MAX_LINK_CHARS
}

/// Each mission's last setup, by mission id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LastSetups {
    setups: BTreeMap<String, String>,
}

impl LastSetups {
    /// Reads a stored record, keeping every valid entry (an unreadable one reads as empty).
    pub fn parse(text: &str) -> LastSetups {
        let mut out = LastSetups::default();
        if text.len() > MAX_RECORD_BYTES {
            return out;
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else { return out };
        if v.get("schema").and_then(Value::as_str) != Some(LAST_SETUPS_SCHEMA) {
            return out;
        }
        let Some(setups) = v.get("setups").and_then(Value::as_object) else { return out };
        for (id, link) in setups.iter().take(MAX_SETUPS) {
            if let Some(link) = link.as_str() {
                out.set(id, link);
            }
        }
        out
    }

    /// Remembers `link` as mission `id`'s last setup; false when either is not valid or the
    /// record is full of other missions (nothing changes then).
    pub fn set(&mut self, id: &str, link: &str) -> bool {
        if !valid_mission_id(id) || !valid_link(link) {
            return false;
        }
        if !self.setups.contains_key(id) && self.setups.len() >= MAX_SETUPS {
            return false;
        }
        self.setups.insert(id.to_string(), link.to_string()) != Some(link.to_string())
    }

    /// Mission `id`'s last setup, as a link relative to the lab's page.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.setups.get(id).map(String::as_str)
    }

    pub fn to_json(&self) -> String {
        json!({ "schema": LAST_SETUPS_SCHEMA, "setups": self.setups }).to_string()
    }
}
