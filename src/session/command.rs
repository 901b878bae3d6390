//! Every change a learner, the JS handle (`window.kvlab`) or a host page (`postMessage`) can
//! make to the lab, as one serde-tagged type: the page's listeners, the handle and the host API
//! only build a [`Command`]; `Session::apply` (the `dispatch` module) is the one place that
//! applies it. The JSON form (`{"type": "set", "path": "scheduler.max_num_seqs", "value": 64}`) is what
//! a host page posts (docs/EMBED.md) and what `kvlab.command()` takes.
//!
//! Paths are preset paths as `formats::paths` writes them (`workload.classes[0].n`), with two
//! additions of the lab: `allocator.<field>` edits the settings of the allocator kind that has
//! that field (used now, or remembered for when it is chosen), and `allocator.kind` and
//! `kv_memory.kind` (`"gib"` or `"gpu"`) switch between kinds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::control_edit::Row;
use super::kv_search::SearchField;
pub use super::loader::Verdict;

mod read;

/// One change of the lab. Its JSON is read by `read.rs` (`TryFrom<Value>`), field by field as
/// serde's derive would, and written by the derive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "Value")]
pub enum Command {
    /// Plays from the time shown (from 0 at the end).
    Play,
    Pause,
    TogglePlay,
    /// One engine step, paused.
    Step,
    /// Moves to `t_s` seconds and pauses.
    Seek {
        t_s: f64,
    },
    /// Moves to the end of the run and pauses.
    SeekEnd,
    /// Simulated seconds per real second; 0 runs as fast as the engine goes.
    Speed {
        speed: f64,
    },
    /// Sets one field by its path (see the module doc) to `value`. A number written as text
    /// (`"64"`, as a form field holds it) is read as the number.
    Set {
        path: String,
        value: Value,
    },
    /// Contiguous and paged side by side.
    Compare {
        on: bool,
    },
    /// Adds a workload row (a copy of the last class, or a burst).
    AddRow {
        row: Row,
    },
    RemoveRow {
        row: Row,
        index: usize,
    },
    /// Shows or hides a chart series (`running`, `waiting`, `swapped`, `preemptions`).
    Series {
        name: String,
        show: bool,
    },
    /// A preset: a shipped preset's id, or a `kvlab/preset@1` document (an object, or its JSON
    /// text). Compare mode and hidden series are kept; a document also keeps the mission being
    /// played, whose locks then apply.
    Load {
        preset: Value,
    },
    /// A preset or a mission, told apart by `schema`, as the Load dialog reads it; `expect`
    /// refuses the other kind (for the link parameters). `source`: the URL the text was fetched
    /// from (`?preset_url=`), which the lab state then remembers with the text's digest.
    LoadDocument {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect: Option<DocKind>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// The whole lab state, as `kvlab.state()` gives it (an object, or its JSON text): a link.
    SetState {
        state: Value,
    },
    /// A shipped mission from its broken setup.
    StartMission {
        id: String,
    },
    /// The mission panel's buttons.
    Mission {
        action: MissionAction,
    },
    /// Returns the control of `path` (every control, when absent) from a value the lab refused
    /// to the running value (Escape in the control; the transport's "Discard").
    Discard {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Undoes the last change of the setup (Ctrl+Z), or first a refused value a control holds;
    /// `redo` does it again (Ctrl+Shift+Z).
    Undo,
    Redo,
    /// Plans and starts a sweep of `knob` over `values` (`A,B,C` or `LO:HI:N`).
    Sweep {
        knob: String,
        values: String,
    },
    CancelSweep,
    /// Charts another sweep metric.
    SweepMetric {
        metric: String,
    },
    /// The smallest-KV search: a TTFT p95 target (ms) and the KV range and step (GiB; empty
    /// for the defaults), as the fields hold them.
    KvSearch {
        target: String,
        #[serde(default)]
        range: String,
        #[serde(default)]
        step: String,
    },
    CancelKvSearch,
}

/// A command's JSON field that may also be given as its JSON text (null when the text is not
/// JSON), parsed once.
fn value_of(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::String(text) => std::borrow::Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null)),
        other => std::borrow::Cow::Borrowed(other),
    }
}

/// The document of the shipped preset a `load` command names by its id.
fn shipped_preset(v: &Value) -> Option<&'static str> {
    v.as_str().and_then(|id| crate::shipped::lookup(crate::shipped::PRESETS, id))
}

/// A `load` command's preset as JSON: a shipped preset's document for its id, else
/// [`value_of`].
fn preset_of(v: &Value) -> std::borrow::Cow<'_, Value> {
    match shipped_preset(v) {
        Some(text) => std::borrow::Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null)),
        None => value_of(v),
    }
}

/// Whether a preset is one only the full lab runs: its arrivals are a trace, or its model is
/// read from a config.json (a Hugging Face id of the catalogue, or `{"hf_config": …}`), whose
/// readers the first module leaves out.
fn preset_needs_panels(preset: &Value) -> bool {
    preset.pointer("/workload/arrival/kind").and_then(Value::as_str) == Some("trace")
        || preset.get("model").is_some_and(model_needs_panels)
        || preset.get("kv_offload").is_some_and(|tier| !tier.is_null())
        || preset.get("replicas").is_some()
        || preset.get("clock").is_some()
        || preset.get("router").is_some()
        || preset
            .pointer("/workload/classes")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c.get("tenants").is_some()))
}

/// A preset's `model`, other than one of the lab's own five models (ids or figures).
fn model_needs_panels(model: &Value) -> bool {
    match model {
        Value::String(id) => crate::engine::model::model_preset(id).is_none(),
        Value::Object(fields) => fields.contains_key("hf_config"),
        _ => false,
    }
}

/// What a document must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    Preset,
    Mission,
}

impl DocKind {
    pub fn name(self) -> &'static str {
        match self {
            DocKind::Preset => "preset",
            DocKind::Mission => "mission",
        }
    }
}

/// The mission panel's buttons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissionAction {
    /// One more hint.
    Hint,
    /// The documented fix, from 0 s, playing; its stars are not kept.
    Solution,
    /// The broken setup again, from 0 s, paused.
    Restart,
    /// Back to the free lab, keeping the setup.
    Exit,
}

/// Where a change comes from: it names the page message a refusal leaves (and an accepted change
/// clears), and how that message starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFrom {
    /// A control of the form, a key, the JS handle's setters, a host page's `set`.
    Control,
    /// A preset (picker, JSON editor, file, `load`).
    Preset,
    /// A mission (start, hint, solution, restart, exit).
    Mission,
    /// A link (`#lab=` fragment, `set_state`).
    Link,
    /// Time and playback.
    Time,
    /// The Sweep panel.
    Sweep,
}

impl ChangeFrom {
    /// The kind of the page message this source leaves.
    pub fn message_kind(self) -> &'static str {
        match self {
            ChangeFrom::Control => "control",
            ChangeFrom::Preset => "preset",
            ChangeFrom::Mission => "mission",
            ChangeFrom::Link => "link",
            ChangeFrom::Time => "time",
            ChangeFrom::Sweep => "sweep",
        }
    }

    fn refusal_prefix(self) -> &'static str {
        match self {
            ChangeFrom::Preset => "Preset not loaded: ",
            ChangeFrom::Mission => "Mission not loaded: ",
            ChangeFrom::Link => "Link not applied: ",
            ChangeFrom::Sweep => "Sweep not run: ",
            ChangeFrom::Control | ChangeFrom::Time => "",
        }
    }
}

impl Command {
    /// Whether only the full lab applies it: the page's first module is built without the
    /// `panels` feature (the Sweep panel's runs, missions, config.json files and the catalogue's
    /// models read from them, traces, the kernel clock) and hands such a command to the full
    /// module (`web::full_lab`): a preset or a link's state is one when its arrivals are a trace,
    /// its model is not one of the lab's five or it names its clock, a link's state when it plays
    /// a mission, and setting the model to a Hugging Face id or the clock.
    pub fn needs_panels(&self) -> bool {
        use Command::*;
        match self {
            Sweep { .. } | CancelSweep | SweepMetric { .. } | KvSearch { .. } | CancelKvSearch => true,
            StartMission { .. } | Mission { .. } => true,
            LoadDocument { text, expect, .. } => {
                let document = serde_json::from_str(text).unwrap_or(Value::Null);
                *expect == Some(DocKind::Mission)
                    || super::loader::needs_panels(&document)
                    || preset_needs_panels(&document)
            }
            Load { preset } => preset_needs_panels(&preset_of(preset)),
            SetState { state } => {
                let state = value_of(state);
                state.get("mission").is_some_and(|m| !m.is_null())
                    || state.get("preset").is_some_and(preset_needs_panels)
            }
            // The host tier's size, a fleet, a class's tenants, the clock: only the full lab reads them.
            Set { path, value } => {
                (path == "model" && model_needs_panels(value))
                    || path == super::control_edit::KV_OFFLOAD_GIB_PATH
                    || path == "replicas"
                    || path == "clock"
                    || path.starts_with("router")
                    || path.ends_with(".tenants")
            }
            _ => false,
        }
    }

    /// Whether its document fails to read with no field named. The page's first module reads
    /// without field paths (`formats::json`): where it refuses such a document, it hands the
    /// command to the full module, which reads it again and names the field. A document that
    /// reads, whose error names its field, or that is not JSON at all is refused where it is.
    pub fn misreads_without_a_field(&self) -> bool {
        use crate::formats::preset::preset_dto_from_value;
        let unplaced = |e: crate::engine::config::ConfigError| e.field.is_empty();
        match self {
            Command::Load { preset } if self.reads_a_document() => match &*value_of(preset) {
                Value::Null => false,
                document => preset_dto_from_value(document).err().is_some_and(unplaced),
            },
            Command::LoadDocument { text, .. } => match serde_json::from_str::<Value>(text) {
                Ok(document) => preset_dto_from_value(&document).err().is_some_and(unplaced),
                Err(_) => false,
            },
            Command::SetState { state } => match &*value_of(state) {
                Value::Null => false,
                state => super::url_state::LabState::from_json(&state.to_string()).err().is_some_and(unplaced),
            },
            _ => false,
        }
    }

    /// Whether it carries a whole document (a preset, a link's state) that the first module
    /// reads without naming a wrong field's path (`formats::json`).
    pub fn reads_a_document(&self) -> bool {
        match self {
            Command::Load { preset } => shipped_preset(preset).is_none(),
            Command::LoadDocument { .. } | Command::SetState { .. } => true,
            _ => false,
        }
    }

    /// The JSON form (`kvlab.command()`'s) of the commands [`Command::needs_panels`] may say the
    /// full lab applies, which the page's first module hands over (`web::full_lab`); null for
    /// the others. Written out rather than through the derived `Serialize`, which the first module
    /// would carry whole (5.8 KB) for these few; `tests/session_commands.rs` holds the two equal.
    pub fn handover_json(&self) -> Value {
        use serde_json::json;
        use Command::*;
        match self {
            Sweep { knob, values } => json!({ "type": "sweep", "knob": knob, "values": values }),
            CancelSweep => json!({ "type": "cancel_sweep" }),
            SweepMetric { metric } => json!({ "type": "sweep_metric", "metric": metric }),
            KvSearch { target, range, step } => {
                json!({ "type": "kv_search", "target": target, "range": range, "step": step })
            }
            CancelKvSearch => json!({ "type": "cancel_kv_search" }),
            StartMission { id } => json!({ "type": "start_mission", "id": id }),
            Mission { action } => json!({ "type": "mission", "action": action }),
            LoadDocument { text, expect, source } => {
                let mut v = json!({ "type": "load_document", "text": text });
                if let Some(e) = expect {
                    v["expect"] = json!(e);
                }
                if let Some(s) = source {
                    v["source"] = json!(s);
                }
                v
            }
            Load { preset } => json!({ "type": "load", "preset": preset }),
            SetState { state } => json!({ "type": "set_state", "state": state }),
            Set { path, value } => json!({ "type": "set", "path": path, "value": value }),
            _ => Value::Null,
        }
    }

    /// Where the command comes from, for its messages.
    pub fn from(&self) -> ChangeFrom {
        use Command::*;
        match self {
            Play | Pause | TogglePlay | Step | Seek { .. } | SeekEnd | Speed { .. } => ChangeFrom::Time,
            Set { .. }
            | Compare { .. }
            | AddRow { .. }
            | RemoveRow { .. }
            | Series { .. }
            | Discard { .. }
            | Undo
            | Redo => ChangeFrom::Control,
            Load { .. } => ChangeFrom::Preset,
            LoadDocument { expect: Some(DocKind::Mission), .. } => ChangeFrom::Mission,
            LoadDocument { text, .. } if super::loader::is_mission(text) => ChangeFrom::Mission,
            LoadDocument { .. } => ChangeFrom::Preset,
            SetState { .. } => ChangeFrom::Link,
            StartMission { .. } | Mission { .. } => ChangeFrom::Mission,
            Sweep { .. } | CancelSweep | SweepMetric { .. } | KvSearch { .. } | CancelKvSearch => ChangeFrom::Sweep,
        }
    }
}

/// Where the eye should find a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Beside the control of this path (the control keeps what the user chose, held and marked
    /// not applied: `session::pending`).
    Control(String),
    /// Under the smallest-KV search's fields (the one named marked invalid).
    Search(Option<SearchField>),
    /// In the Sweep panel's progress line, in place of the last sweep's.
    Sweep,
    /// A page message of the command's source.
    Page,
}

/// A command the lab refused: nothing changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub from: ChangeFrom,
    pub place: Place,
    /// The reason, naming the field and the fix ("scheduler.max_num_seqs: …; use …").
    pub message: String,
}

impl Refused {
    pub fn page(from: ChangeFrom, message: impl Into<String>) -> Refused {
        Refused { from, place: Place::Page, message: message.into() }
    }

    /// The message as the page shows it: the source's prefix, the reason, and that nothing
    /// changed.
    pub fn text(&self) -> String {
        // vLLM's own words end in a full stop ("… for more details."): one stop, not two.
        let why = self.message.trim_end().trim_end_matches('.');
        match self.place {
            Place::Search(_) => format!("Search not run: {why}."),
            Place::Sweep => format!("Sweep not run: {why}."),
            _ => format!("{}{why}. The lab keeps its previous setup.", self.from.refusal_prefix()),
        }
    }
}

/// What an applied command changed, for the page to follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    /// The setup changed: the form, the maps and the title follow, and earlier refusals of the
    /// form are cleared.
    pub setup: bool,
    /// The stars a mission run just earned, to keep (`(mission id, stars)`).
    pub earned: Option<(String, u8)>,
    /// A mission document was loaded: the mission check's verdict.
    pub verdict: Option<Verdict>,
}
