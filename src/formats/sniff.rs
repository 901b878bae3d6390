//! The one place that tells kvlab's documents apart: every `schema` id kvlab reads or writes, and
//! which kind of document a parsed JSON value is. The preset parser, the CLI's `check`, and the
//! page's loader all ask [`sniff`]; none of them reads `"schema"` by hand.

use serde_json::Value;

pub const PRESET_SCHEMA: &str = "kvlab/preset@1";
pub const MISSION_SCHEMA: &str = "kvlab/mission@1";
pub const MISSION_INDEX_SCHEMA: &str = "kvlab/missions-index@1";
pub const CALIBRATION_SCHEMA: &str = "kvlab/calibration@1";
pub const STARS_SCHEMA: &str = "kvlab/stars@1";
/// An exported report: the run's report (docs/REPORT.md) with the whole setup that made it.
pub const REPORT_SCHEMA: &str = "kvlab/report@1";

/// What a JSON document says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Document {
    Preset,
    Mission,
    MissionIndex,
    Calibration,
    Stars,
    /// An exported report, whose `setup` is the preset that made it.
    Report,
    /// A `schema` that is not one of kvlab's (or not a string).
    OtherSchema,
    /// A model's Hugging Face `config.json` (no `schema`; `architectures` or `model_type`).
    ModelConfig,
    /// An object without `schema`.
    NoSchema,
    /// Not a JSON object at all.
    NotAnObject,
}

/// The kind of document `value` is, by its top-level `schema`.
pub fn sniff(value: &Value) -> Document {
    let Some(map) = value.as_object() else {
        return Document::NotAnObject;
    };
    match map.get("schema") {
        None if map.get("architectures").is_some_and(Value::is_array)
            || map.get("model_type").is_some_and(Value::is_string) =>
        {
            Document::ModelConfig
        }
        None => Document::NoSchema,
        Some(Value::String(s)) => match s.as_str() {
            PRESET_SCHEMA => Document::Preset,
            MISSION_SCHEMA => Document::Mission,
            MISSION_INDEX_SCHEMA => Document::MissionIndex,
            CALIBRATION_SCHEMA => Document::Calibration,
            STARS_SCHEMA => Document::Stars,
            REPORT_SCHEMA => Document::Report,
            _ => Document::OtherSchema,
        },
        Some(_) => Document::OtherSchema,
    }
}

/// The kind of document `text` is, or None when it is not JSON.
pub fn sniff_text(text: &str) -> Option<Document> {
    serde_json::from_str::<Value>(text).ok().map(|v| sniff(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_told_apart_by_schema() {
        assert_eq!(sniff_text(r#"{"schema": "kvlab/preset@1"}"#), Some(Document::Preset));
        assert_eq!(sniff_text(r#"{"schema": "kvlab/mission@1"}"#), Some(Document::Mission));
        assert_eq!(sniff_text(r#"{"schema": "kvlab/missions-index@1"}"#), Some(Document::MissionIndex));
        assert_eq!(sniff_text(r#"{"schema": "kvlab/calibration@1"}"#), Some(Document::Calibration));
        assert_eq!(sniff_text(r#"{"schema": "kvlab/stars@1"}"#), Some(Document::Stars));
        assert_eq!(sniff_text(r#"{"schema": 3}"#), Some(Document::OtherSchema));
        assert_eq!(sniff_text(r#"{"seed": 3}"#), Some(Document::NoSchema));
        assert_eq!(sniff_text(r#"{"architectures": ["LlamaForCausalLM"]}"#), Some(Document::ModelConfig));
        assert_eq!(sniff_text(r#"{"model_type": "gemma3"}"#), Some(Document::ModelConfig));
        assert_eq!(sniff_text(r#"{"architectures": "LlamaForCausalLM"}"#), Some(Document::NoSchema));
        assert_eq!(sniff_text("[1]"), Some(Document::NotAnObject));
        assert_eq!(sniff_text("{"), None);
    }
}
