//! JSON text → DTO with the failing field's path in every error. Every document kvlab reads
//! (presets, missions, the mission index, calibrations, the lab's URL state) comes through here.

use crate::engine::config::ConfigError;

/// serde_json with the failing field's path in the error. The text is parsed into a JSON value
/// first and every DTO is read from a value, so each DTO's deserializer exists once in the wasm
/// bundle (not once per input type).
pub fn from_json_with_path<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ConfigError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("not valid JSON ({e})")))?;
    from_value_with_path(&value)
}

/// Reads a DTO from a parsed JSON value, naming the failing field's path.
pub fn from_value_with_path<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ConfigError::new(if path == "." { String::new() } else { path }, e.into_inner().to_string())
    })
}
