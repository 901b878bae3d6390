//! Values handed to JavaScript as plain objects, arrays, numbers and strings, not JSON text to
//! parse again: serde-wasm-bindgen with its JSON-compatible serializer (maps become plain
//! objects, `None` becomes `null`). Integers stay exact up to 2^53, which holds every count the
//! engine reports; a larger one is an error rather than a silently rounded number.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

/// `value` as a plain JavaScript value.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, String> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| e.to_string())
}

/// A plain JavaScript value (an object from `postMessage`, an argument) read as `T`.
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(value).map_err(|e| e.to_string())
}
