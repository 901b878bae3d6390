//! JSON text → DTO with the failing field's path in every error. Every document kvlab reads
//! (presets, missions, the mission index, calibrations, the lab's URL state) comes through here.
//!
//! The page's first module (built without the `panels` feature) reads without
//! serde_path_to_error, whose wrappers are 17 KB of its first load (docs/PERFORMANCE.md): a type
//! error there names its field only when the value serde complains about occurs once in the
//! document, and the page hands a document it cannot read without naming the field to the full
//! module, which reads it again and names the field (`Command::misreads_without_a_field`,
//! `web::full_lab`, docs/LAB.md "Two modules").

use crate::engine::config::ConfigError;
use crate::engine::plan::group_thousands;
use crate::engine::whole_number_range;

/// serde_json with the failing field's path in the error. The text is parsed into a JSON value
/// first and every DTO is read from a value, so each DTO's deserializer exists once in the wasm
/// bundle (not once per input type).
pub fn from_json_with_path<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ConfigError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("not valid JSON ({e})")))?;
    from_value_with_path(&value)
}

/// Reads a DTO from a parsed JSON value, naming the failing field's path.
#[cfg(feature = "panels")]
pub fn from_value_with_path<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        field_error(value, path, &message)
    })
}

/// Reads a DTO from a parsed JSON value; the first module's reader (see the module doc): the
/// failing field's path is the one scalar holding the value serde names, if only one does.
#[cfg(not(feature = "panels"))]
pub fn from_value_with_path<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<T, ConfigError> {
    T::deserialize(value).map_err(|e| field_error(value, String::new(), &e.to_string()))
}

/// The error of one field, out of the generic reader so that each DTO's copy of it stays small:
/// the field's path (deepened into a tagged object) and serde's words in a reader's. A field
/// with a fixed range names that range, not its type's ("lots" for max_num_seqs: 1 to 4,096,
/// not 0 to 4,294,967,295).
#[inline(never)]
fn field_error(value: &serde_json::Value, path: String, message: &str) -> ConfigError {
    let path = deepen_path(value, if path == "." { String::new() } else { path }, message);
    let mut words = plain_words(message);
    if let Some((lo, hi)) = whole_number_range(&path) {
        let range = format!("a whole number from {} to {}", group_thousands(lo.into()), group_thousands(hi.into()));
        words = words.replace("a whole number from 0 to 4,294,967,295", &range);
    }
    ConfigError::new(path, words)
}

/// serde reads a tagged object (`allocator`, `workload.arrival`) whole, so its errors stop at the
/// object's path. When exactly one member holds the number the message complains about, the
/// error is that member's (`allocator` → `allocator.block_size`).
fn deepen_path(root: &serde_json::Value, path: String, message: &str) -> String {
    let at = path.split('.').filter(|k| !k.is_empty()).try_fold(root, |v, k| v.get(k));
    let Some(serde_json::Value::Object(members)) = at else { return path };
    let Some((found, _)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "))
    else {
        return path;
    };
    let literal = found.split('`').nth(1);
    let holds = |v: &serde_json::Value| match (found.strip_prefix("string "), literal) {
        (Some(text), _) => v.as_str().is_some_and(|s| format!("{s:?}") == text),
        (None, Some(lit)) if found.starts_with("boolean") => v.as_bool().is_some_and(|b| b.to_string() == lit),
        (None, Some(lit)) => v.as_f64().is_some() && v.as_f64() == lit.parse::<f64>().ok(),
        (None, None) => false,
    };
    let mut leaves = Vec::new();
    collect_leaves(members, &path, &mut leaves);
    let mut hits = leaves.into_iter().filter(|(_, v)| holds(v));
    match (hits.next(), hits.next()) {
        (Some((leaf, _)), None) => leaf,
        _ => path,
    }
}

/// Every scalar below an object, with its path (`a.b[0].c`).
fn collect_leaves<'a>(
    members: &'a serde_json::Map<String, serde_json::Value>,
    at: &str,
    out: &mut Vec<(String, &'a serde_json::Value)>,
) {
    fn walk<'a>(v: &'a serde_json::Value, at: String, out: &mut Vec<(String, &'a serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => collect_leaves(m, &at, out),
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}[{i}]"), out);
                }
            }
            scalar => out.push((at, scalar)),
        }
    }
    for (key, v) in members {
        walk(v, if at.is_empty() { key.clone() } else { format!("{at}.{key}") }, out);
    }
}

/// serde's "invalid type: string \"lots\", expected f64" in a learner's words ("\"lots\" is text;
/// use a number"): no Rust type names, and huge numbers in scientific notation.
pub fn plain_words(message: &str) -> String {
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "))
    else {
        return message.to_string();
    };
    format!("{} is not accepted here; use {}", describe_found(found), describe_expected(expected))
}

/// serde's description of the value it got: `string "x"`, ``integer `5` ``, ``floating point `1.5` ``,
/// ``boolean `true` ``, `null`, `map`, `sequence`.
fn describe_found(found: &str) -> String {
    let literal = |s: &str| s.trim_matches('`').to_string();
    if let Some(s) = found.strip_prefix("string ") {
        return format!("the text {s}");
    }
    if let Some(n) = found.strip_prefix("integer ").or_else(|| found.strip_prefix("floating point ")) {
        let n = literal(n);
        // 1e308 reads better than its 309 digits.
        return match n.parse::<f64>() {
            Ok(x) if n.trim_start_matches('-').len() > 15 => format!("{x:e}"),
            _ => n,
        };
    }
    if let Some(b) = found.strip_prefix("boolean ") {
        return literal(b);
    }
    match found {
        "map" => "an object".into(),
        "sequence" => "a list".into(),
        "null" | "unit value" => "null".into(),
        other => other.into(),
    }
}

/// serde's description of what it wanted, in JSON's words.
fn describe_expected(expected: &str) -> String {
    match expected {
        "f64" | "f32" => "a number".into(),
        "u8" => "a whole number from 0 to 255".into(),
        "u16" => "a whole number from 0 to 65,535".into(),
        "u32" => "a whole number from 0 to 4,294,967,295".into(),
        "u64" | "usize" => "a whole number of 0 or more".into(),
        "i32" | "i64" => "a whole number".into(),
        "a boolean" => "true or false".into(),
        "a string" => "text in quotes".into(),
        "a sequence" => "a list [ … ]".into(),
        e if e.starts_with("struct ") || e.starts_with("a map") || e.contains("tagged enum") => {
            "an object { … }".into()
        }
        e => e.replace("variant identifier", "one of the names"),
    }
}

#[cfg(test)]
mod tests {
    use super::plain_words;

    #[test]
    fn serde_errors_read_without_rust_types() {
        assert_eq!(
            plain_words(r#"invalid type: string "lots", expected f64"#),
            r#"the text "lots" is not accepted here; use a number"#
        );
        assert_eq!(
            plain_words("invalid type: floating point `1e20`, expected u32"),
            "1e20 is not accepted here; use a whole number from 0 to 4,294,967,295"
        );
        let huge = format!("invalid type: floating point `1{}`, expected u32", "0".repeat(308));
        assert!(plain_words(&huge).starts_with("1e308 is not accepted here"), "{}", plain_words(&huge));
        assert_eq!(
            plain_words("invalid value: integer `-16`, expected u32"),
            "-16 is not accepted here; use a whole number from 0 to 4,294,967,295"
        );
        assert_eq!(
            plain_words("invalid type: map, expected a boolean"),
            "an object is not accepted here; use true or false"
        );
        assert_eq!(
            plain_words("unknown field `colour`, expected one of `a`, `b`"),
            "unknown field `colour`, expected one of `a`, `b`"
        );
    }

    #[test]
    fn an_error_inside_a_tagged_object_names_the_member() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        #[allow(dead_code)]
        enum Alloc {
            Paged { block_size: u32, pool: u32 },
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Doc {
            allocator: Alloc,
        }
        let v = serde_json::json!({ "allocator": { "kind": "paged", "block_size": -16, "pool": 3 } });
        let e = super::from_value_with_path::<Doc>(&v).unwrap_err();
        assert_eq!(e.field, "allocator.block_size", "{e}");
        assert!(e.message.starts_with("-16 is not accepted here; use a whole number"), "{e}");
    }
}
