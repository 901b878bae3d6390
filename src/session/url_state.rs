//! The whole lab state as one serde value that round-trips through the URL, so that a link
//! reproduces what its sender saw: the preset (as the `kvlab/preset@1` DTO), compare mode, the
//! settings of the allocator not in use, the time shown and the hidden chart series.
//!
//! Format: `#lab=<base64url(JSON)>` in the fragment. The query keeps page options:
//! `?embed=1` (compact, no page chrome), `?preset=<id>` and `?mission=<id>` (shipped ones),
//! `?preset_url=` / `?mission_url=` (a same-origin path or a `data:` URL), `?compare=1`, `?t=30`,
//! `?origins=` (host pages allowed to drive an embed) and `?hub=1` (the missions hub). The
//! fragment, when present, wins over the query's starting points. (`?theme=` and `?panels=` are
//! the stylesheet's, read by www/early.js.)

use serde::{Deserialize, Serialize};

use crate::engine::ConfigError;
use crate::formats::json::from_json_with_path;
use crate::formats::mission::MissionDto;
use crate::formats::preset::{AllocatorDto, PresetDto};
use crate::formats::sniff::PRESET_SCHEMA;
use crate::missions::stars::valid_mission_id;

pub const STATE_VERSION: u32 = 1;
pub const FRAGMENT_KEY: &str = "lab=";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabState {
    /// Format version of this state (1).
    pub v: u32,
    pub preset: PresetDto,
    /// Contiguous and paged side by side on the same traffic.
    #[serde(default)]
    pub compare: bool,
    /// The settings of the allocator kind the preset does not use (compare mode draws it, and
    /// switching the allocator brings them back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt: Option<AllocatorDto>,
    /// Simulated time shown, in seconds; absent means "from the start".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_s: Option<f64>,
    /// Chart series the learner hid (`running`, `waiting`, `swapped`, `preemptions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Mission mode: the mission being played (its preset is `preset`'s starting point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mission: Option<MissionRef>,
    /// The linked file (`?preset_url=`, `?mission_url=`) this setup was loaded from: on a reload
    /// the file is fetched again, and this state is kept only while the file is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<LinkedFile>,
}

/// A file a setup was loaded from by a link, and the digest of the text it had then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkedFile {
    pub url: String,
    pub digest: String,
}

/// The mission a lab state plays: a shipped one by id, or a custom one carried whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissionRef {
    pub id: String,
    /// A mission that does not ship with the lab (a file, pasted JSON, `mission_url`): the whole
    /// mission file, so that the link reproduces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Box<MissionDto>>,
    /// Hints revealed so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hints: u32,
    /// The setup is the documented fix, put there by "Show solution" (its stars are not saved).
    #[serde(default, skip_serializing_if = "is_false")]
    pub solution: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl MissionRef {
    pub fn shipped(id: &str) -> MissionRef {
        MissionRef { id: id.to_string(), custom: None, hints: 0, solution: false }
    }
}

impl LabState {
    pub fn new(preset: PresetDto) -> LabState {
        LabState {
            v: STATE_VERSION,
            preset,
            compare: false,
            alt: None,
            t_s: None,
            hidden: Vec::new(),
            mission: None,
            source: None,
        }
    }

    /// The allocator settings of `kind` ("contiguous" or "paged"): the preset's when it uses
    /// that kind, else the remembered ones, else the defaults.
    pub fn allocator_of(&self, paged: bool) -> AllocatorDto {
        let is_paged = |a: &AllocatorDto| matches!(a, AllocatorDto::Paged { .. });
        if is_paged(&self.preset.allocator) == paged {
            return self.preset.allocator.clone();
        }
        match &self.alt {
            Some(a) if is_paged(a) == paged => a.clone(),
            _ if paged => AllocatorDto::Paged { block_size: 16, prefix_caching: None },
            _ => AllocatorDto::default(),
        }
    }

    pub fn is_paged(&self) -> bool {
        matches!(self.preset.allocator, AllocatorDto::Paged { .. })
    }

    /// Makes `paged` the allocator in use, remembering the other one's settings.
    pub fn switch_allocator(&mut self, paged: bool) {
        if self.is_paged() == paged {
            return;
        }
        let next = self.allocator_of(paged);
        self.alt = Some(std::mem::replace(&mut self.preset.allocator, next));
    }

    /// The presets to simulate: one, or (compare mode) contiguous then paged on the same traffic.
    pub fn runs(&self) -> Vec<PresetDto> {
        if !self.compare {
            return vec![self.preset.clone()];
        }
        [false, true]
            .into_iter()
            .map(|paged| {
                let mut p = self.preset.clone();
                p.allocator = self.allocator_of(paged);
                p
            })
            .collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the lab state serializes")
    }

    /// Parses and checks a state: the JSON, its version, and the preset's schema. (Whether the
    /// preset validates is for the caller to check with `to_config`.)
    pub fn from_json(json: &str) -> Result<LabState, ConfigError> {
        let s: LabState = from_json_with_path(json)?;
        if s.v != STATE_VERSION {
            return Err(ConfigError::new(
                "v",
                format!("lab state version {} is not one this page reads; use {STATE_VERSION}", s.v),
            ));
        }
        if s.preset.schema != PRESET_SCHEMA {
            return Err(ConfigError::new(
                "preset.schema",
                format!("\"{}\" is not a preset schema this lab reads; use \"{PRESET_SCHEMA}\"", s.preset.schema),
            ));
        }
        if let Some(m) = &s.mission {
            if !valid_mission_id(&m.id) {
                return Err(ConfigError::new(
                    "mission.id",
                    "use 1 to 64 lowercase letters, digits and dashes, e.g. \"m1-paging\"",
                ));
            }
        }
        if let Some(t) = s.t_s {
            if !(t.is_finite() && t >= 0.0) {
                return Err(ConfigError::new("t_s", format!("{t} is not a time; use seconds from 0")));
            }
        }
        Ok(s)
    }

    /// The fragment (without `#`) that encodes this state.
    pub fn to_fragment(&self) -> String {
        format!("{FRAGMENT_KEY}{}", base64url_encode(self.to_json().as_bytes()))
    }

    /// Reads a state from a URL fragment (with or without the leading `#`); `Ok(None)` when the
    /// fragment carries no lab state.
    pub fn from_fragment(fragment: &str) -> Result<Option<LabState>, String> {
        let Some(json) = Self::fragment_json(fragment)? else { return Ok(None) };
        LabState::from_json(&json).map(Some).map_err(|e| format!("the link's lab state: {e}"))
    }

    /// The JSON text of the lab state a URL fragment carries, not read yet; `Ok(None)` when it
    /// carries none.
    pub fn fragment_json(fragment: &str) -> Result<Option<String>, String> {
        let f = fragment.strip_prefix('#').unwrap_or(fragment);
        let Some(encoded) = f.split('&').find_map(|part| part.strip_prefix(FRAGMENT_KEY)) else {
            return Ok(None);
        };
        let bytes = base64url_decode(encoded).map_err(|e| format!("the link's lab state is damaged ({e})"))?;
        String::from_utf8(bytes).map(Some).map_err(|_| "the link's lab state is not UTF-8 text".to_string())
    }
}

/// Page options read from the query string.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageOptions {
    pub embed: bool,
    pub preset: Option<String>,
    /// `mission=<id>`: start a shipped mission.
    pub mission: Option<String>,
    /// `preset_url=` / `mission_url=`: a document to fetch (same-origin path or `data:` URL).
    pub preset_url: Option<String>,
    pub mission_url: Option<String>,
    /// `hub=1`: the missions hub instead of the lab.
    pub hub: bool,
    pub bench: bool,
    /// `autoplay=1` plays the lab at load (it opens paused otherwise).
    pub autoplay: Option<bool>,
    /// The reader asked for less motion (`prefers-reduced-motion`, set by the page, not the
    /// query): nothing plays by itself.
    pub reduced_motion: bool,
    /// `compare=1`: start in compare mode (when the link has no fragment).
    pub compare: Option<bool>,
    /// `t=<seconds>`: start at that simulated time, paused (when the link has no fragment).
    pub t_s: Option<f64>,
    /// `origins=https://a.example,https://b.example` (or `*`): the pages that may drive an
    /// embedded lab with `postMessage` besides its own origin (see `host.rs`).
    pub origins: Vec<String>,
}

/// The query parameters the page reads.
pub const QUERY_KEYS: &[&str] =
    &["embed", "preset", "mission", "preset_url", "mission_url", "hub", "bench", "autoplay", "compare", "t", "origins"];

impl PageOptions {
    /// Parses `?embed=1&preset=<id>&mission=<id>&hub=1&bench=1&autoplay=0&preset_url=…`
    /// (values percent-decoded by the caller).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> PageOptions {
        let mut o = PageOptions::default();
        let truthy = |v: &str| !matches!(v, "0" | "false" | "no" | "off");
        let text = |v: &str| (!v.is_empty()).then(|| v.to_string());
        for (k, v) in pairs {
            match k {
                "embed" => o.embed = truthy(v),
                "preset" => o.preset = text(v),
                "mission" => o.mission = text(v),
                "preset_url" => o.preset_url = text(v),
                "mission_url" => o.mission_url = text(v),
                "hub" => o.hub = truthy(v),
                "bench" => o.bench = truthy(v),
                "autoplay" => o.autoplay = Some(truthy(v)),
                "compare" => o.compare = Some(truthy(v)),
                "t" => o.t_s = v.trim().parse::<f64>().ok().filter(|t| t.is_finite() && *t >= 0.0),
                "origins" => {
                    o.origins = v
                        .split(',')
                        .map(|x| x.trim().trim_end_matches('/').to_string())
                        .filter(|x| !x.is_empty())
                        .collect()
                }
                _ => {}
            }
        }
        o
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 §5).
pub fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Decodes base64url; also accepts the standard alphabet (`+`, `/`) and `=` padding, which
/// links pick up when pasted through other tools.
pub fn base64url_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, ch) in text.trim_end_matches('=').bytes().enumerate() {
        let v = match ch {
            b'A'..=b'Z' => ch - b'A',
            b'a'..=b'z' => ch - b'a' + 26,
            b'0'..=b'9' => ch - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return Err(format!("character {:?} at position {i} is not base64url", ch as char)),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 {
        return Err("the text is cut off".into());
    }
    Ok(out)
}
