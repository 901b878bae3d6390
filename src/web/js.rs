//! Values handed to JavaScript as plain objects, arrays, numbers and strings, not JSON text to
//! parse again: serde_json writes the value and the browser's `JSON.parse` makes the objects
//! (maps become plain objects, `None` becomes `null`), and `JSON.stringify` reads one back. One
//! serializer, serde_json's, serves this, the exports and the links, which keeps the bundle
//! smaller than a second one would. Integers stay exact up to 2^53, which holds every count the
//! engine reports; a larger one is an error rather than a silently rounded number.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `value` as a plain JavaScript value.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    check_integers(&text)?;
    js_sys::JSON::parse(&text).map_err(|e| format!("JSON.parse refused the value: {e:?}"))
}

/// A plain JavaScript value (an object from `postMessage`, an argument) read as `T`.
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, String> {
    let text = js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| "not a JSON value (undefined, a function, or a cycle)".to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Refuses JSON text holding an integer that a JavaScript number would round.
fn check_integers(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            // Skip a string, escapes included.
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                let number = &text[start..i];
                let integer = !number.contains(['.', 'e', 'E']);
                let digits = number.trim_start_matches('-');
                if integer && digits.parse::<u64>().map_or(true, |n| n > MAX_SAFE_INTEGER) {
                    return Err(format!("{number} is past 2^53, which a JavaScript number cannot hold exactly"));
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}
