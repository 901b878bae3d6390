//! Preset paths, the one implementation missions, the CLI and the page share: the schema of every `kvlab/preset@1` path, parsing and printing
//! paths (`workload.classes[0].n`, `workload.classes[*].n`), knob coverage, and the JSON work
//! knob patches need: merging a patch, diffing two presets, refusing arrays where objects belong.

use std::collections::BTreeSet;

use serde_json::Value;

use super::sniff::PRESET_SCHEMA;
use crate::engine::config::ConfigError;

/// What a preset path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    Number,
    Bool,
    Text,
    Object,
    Array,
    /// `model` and `gpu`: an id string or an object.
    TextOrObject,
}

/// Every path of a `kvlab/preset@1` object; `[]` stands for any array index.
pub const PRESET_PATHS: &[(&str, PathKind)] = {
    use PathKind::*;
    &[
        ("seed", Number),
        ("duration_s", Number),
        ("model", TextOrObject),
        ("model.name", Text),
        ("model.layers", Number),
        ("model.kv_heads", Number),
        ("model.head_dim", Number),
        ("model.params_b", Number),
        ("kv_dtype", Text),
        ("gpu", TextOrObject),
        ("kv_memory_gib", Number),
        ("gpu_memory_utilization", Number),
        ("gpu_memory_in_use_gib", Number),
        ("tensor_parallel_size", Number),
        ("attention_backend", Text),
        ("calibration", Text),
        ("clock", Text),
        ("until_all_finished", Bool),
        ("enforce_eager", Bool),
        ("kv_offload", Object),
        ("kv_offload.cpu_gib", Number),
        ("kv_offload.policy", Text),
        ("replicas", Number),
        ("router", Object),
        ("router.policy", Text),
        ("router.weights", Object),
        ("router.weights.queue", Number),
        ("router.weights.kv_cache", Number),
        ("router.weights.prefix", Number),
        ("router.prefix_index", Text),
        ("router.overlap_weight", Number),
        ("allocator", Object),
        ("allocator.kind", Text),
        ("allocator.reserve", Text),
        ("allocator.fit", Text),
        ("allocator.block_size", Number),
        ("allocator.prefix_caching", Bool),
        ("scheduler", Object),
        ("scheduler.engine", Text),
        ("scheduler.max_num_seqs", Number),
        ("scheduler.max_num_batched_tokens", Number),
        ("scheduler.preemption", Text),
        ("scheduler.swap_space_gib", Number),
        ("scheduler.max_model_len", Number),
        ("scheduler.chunked_prefill", Bool),
        ("scheduler.watermark", Number),
        ("workload", Object),
        ("workload.arrival", Object),
        ("workload.arrival.kind", Text),
        ("workload.arrival.rate_per_s", Number),
        ("workload.arrival.bursts", Array),
        ("workload.arrival.bursts[]", Object),
        ("workload.arrival.bursts[].start_s", Number),
        ("workload.arrival.bursts[].end_s", Number),
        ("workload.arrival.bursts[].rate_per_s", Number),
        ("workload.arrival.max_concurrency", Number),
        ("workload.arrival.client_round_trip_ms", Number),
        ("workload.arrival.num_requests", Number),
        ("workload.arrival.csv", Text),
        ("workload.arrival.text", Text),
        ("workload.arrival.format", Text),
        ("workload.arrival.max_tokens", Number),
        ("workload.arrival.start_s", Number),
        ("workload.arrival.end_s", Number),
        ("workload.arrival.speed", Number),
        ("workload.arrival.sample_one_in", Number),
        ("workload.arrival.replica", Object),
        ("workload.arrival.replica.index", Number),
        ("workload.arrival.replica.of", Number),
        ("workload.arrival.drop_failed", Bool),
        ("workload.arrival.seconds_per_unit", Number),
        ("workload.arrival.hash_block_tokens", Number),
        ("workload.classes", Array),
        ("workload.classes[]", Object),
        ("workload.classes[].name", Text),
        ("workload.classes[].weight", Number),
        ("workload.classes[].prompt_tokens", Object),
        ("workload.classes[].prompt_tokens.mean", Number),
        ("workload.classes[].prompt_tokens.p99", Number),
        ("workload.classes[].prompt_tokens.fixed", Number),
        ("workload.classes[].output_tokens", Object),
        ("workload.classes[].output_tokens.mean", Number),
        ("workload.classes[].output_tokens.p99", Number),
        ("workload.classes[].output_tokens.fixed", Number),
        ("workload.classes[].max_tokens", Number),
        ("workload.classes[].n", Number),
        ("workload.classes[].shared_prefix_tokens", Number),
        ("workload.classes[].tenants", Number),
    ]
};

/// Top-level preset fields that do not change a run (a renamed attempt is the same attempt).
const COSMETIC: &[&str] = &["schema", "id", "title"];

/// One step of a path: a key, an array index, or `[*]` (any index; knobs only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
    Any,
}

/// Parses `a.b[0].c` / `a.b[*].c`; None if malformed.
pub fn parse_path(s: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    for part in s.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        let key_ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !key_ok {
            return None;
        }
        segs.push(Seg::Key(key.to_string()));
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let inner = rest.strip_prefix('[')?.get(..close - 1)?;
            segs.push(match inner {
                "*" => Seg::Any,
                _ if !inner.is_empty() && inner.len() <= 6 && inner.bytes().all(|b| b.is_ascii_digit()) => {
                    Seg::Index(inner.parse().ok()?)
                }
                _ => return None,
            });
            rest = &rest[close + 1..];
        }
    }
    Some(segs)
}

/// `a.b[0].c`; a key that is not a plain name is written as `["a key"]`.
pub fn display_path(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                s.push_str(&format!("[{}]", Value::String(k.clone())));
            }
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
            Seg::Any => s.push_str("[*]"),
        }
    }
    s
}

/// The `PRESET_PATHS` pattern of a path (`workload.classes[].n`).
pub fn pattern(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(_) | Seg::Any => s.push_str("[]"),
        }
    }
    s
}

/// What a preset path (`workload.classes[0].n`, `workload.classes[*].n`) holds, or None when no
/// preset has that path.
pub fn preset_path_kind(path: &str) -> Option<PathKind> {
    kind_of_pattern(&pattern(&parse_path(path)?))
}

fn kind_of_pattern(p: &str) -> Option<PathKind> {
    PRESET_PATHS.iter().find(|(q, _)| *q == p).map(|&(_, k)| k)
}

/// Whether knob `knob` lets the learner change `path`.
pub fn covers(knob: &[Seg], path: &[Seg]) -> bool {
    knob.len() <= path.len()
        && knob.iter().zip(path).all(|(k, p)| match (k, p) {
            (Seg::Any, Seg::Index(_)) => true,
            _ => k == p,
        })
}

pub fn get_path<'a>(mut v: &'a Value, segs: &[Seg]) -> Option<&'a Value> {
    for seg in segs {
        v = match seg {
            Seg::Key(k) => v.get(k.as_str())?,
            Seg::Index(i) => v.get(*i)?,
            Seg::Any => return None,
        };
    }
    Some(v)
}

/// Sets the value at `segs` (the last key is inserted when missing); the error says what was in
/// the way ("not in this preset", "no such item").
pub fn set_path(root: &mut Value, segs: &[Seg], value: Value) -> Result<(), &'static str> {
    let Some((last, parents)) = segs.split_last() else {
        return Err("empty path");
    };
    let mut cur = root;
    for seg in parents {
        cur = match (cur, seg) {
            (Value::Object(map), Seg::Key(k)) => map.get_mut(k).ok_or("not in this preset")?,
            (Value::Array(items), Seg::Index(i)) => items.get_mut(*i).ok_or("no such item")?,
            (Value::Array(_), _) => return Err("bad index"),
            _ => return Err("not in this preset"),
        };
    }
    match (cur, last) {
        (Value::Object(map), Seg::Key(k)) => {
            map.insert(k.clone(), value);
        }
        (Value::Array(items), Seg::Index(i)) => *items.get_mut(*i).ok_or("no such item")? = value,
        (Value::Array(_), _) => return Err("bad index"),
        _ => return Err("not in this preset"),
    }
    Ok(())
}

/// Refuses a JSON array where a preset expects an object. serde would read it field by field in
/// order, so `"scheduler": [64]` would silently mean `max_num_seqs: 64`; this names the field.
pub fn check_preset_json_shape(preset: &Value) -> Result<(), ConfigError> {
    if !preset.is_object() {
        return Err(ConfigError::new("", format!("a preset is a JSON object {{\"schema\": \"{PRESET_SCHEMA}\", …}}")));
    }
    check_preset_shape(preset, &mut Vec::new())
}

pub fn check_preset_shape(v: &Value, path: &mut Vec<Seg>) -> Result<(), ConfigError> {
    match v {
        Value::Array(items) => {
            let kind = if path.is_empty() { Some(PathKind::Object) } else { kind_of_pattern(&pattern(path)) };
            match kind {
                Some(PathKind::Array) => {
                    for (i, item) in items.iter().enumerate() {
                        path.push(Seg::Index(i));
                        check_preset_shape(item, path)?;
                        path.pop();
                    }
                    Ok(())
                }
                Some(PathKind::Object | PathKind::TextOrObject) => {
                    Err(ConfigError::new(display_path(path), "write an object { … } here, not an array"))
                }
                _ => Ok(()), // a type or unknown-field error that serde names
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                path.push(Seg::Key(k.clone()));
                check_preset_shape(x, path)?;
                path.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Merges `patch` into `base`: objects merge key by key; anything else replaces. An object whose
/// `kind` differs from the base's replaces it whole (switching allocator kinds). `null` is refused.
pub fn merge(base: &mut Value, patch: &Value, path: &mut Vec<Seg>) -> Result<(), ConfigError> {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                path.push(Seg::Key(k.clone()));
                if pv.is_null() {
                    return Err(ConfigError::new(
                        display_path(path),
                        "null is not a value; give the value you want, or leave the field out to keep the mission's",
                    ));
                }
                match b.get_mut(k) {
                    Some(bv) if bv.is_object() && pv.is_object() && !switches_kind(bv, pv) => merge(bv, pv, path)?,
                    _ => {
                        b.insert(k.clone(), pv.clone());
                    }
                }
                path.pop();
            }
        }
        (b, p) => *b = p.clone(),
    }
    Ok(())
}

fn switches_kind(base: &Value, patch: &Value) -> bool {
    patch.get("kind").is_some_and(|k| Some(k) != base.get("kind"))
}

/// Paths where `new` differs from `base` (both normalized presets). A changed `kind` or a
/// resized array reports the object or array itself.
pub fn diff(base: &Value, new: &Value, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match (base, new) {
        (Value::Object(a), Value::Object(b)) => {
            if a.get("kind") != b.get("kind") {
                out.push(path.clone());
                return;
            }
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                if path.is_empty() && COSMETIC.contains(&k.as_str()) {
                    continue;
                }
                path.push(Seg::Key(k.clone()));
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(x, y, path, out),
                    _ => out.push(path.clone()),
                }
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                path.push(Seg::Index(i));
                diff(x, y, path, out);
                path.pop();
            }
        }
        _ => {
            if base != new {
                out.push(path.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_cover() {
        let p = |s: &str| parse_path(s).unwrap();
        assert_eq!(display_path(&p("workload.classes[0].n")), "workload.classes[0].n");
        assert!(covers(&p("allocator"), &p("allocator.block_size")));
        assert!(covers(&p("workload.classes[*].n"), &p("workload.classes[3].n")));
        assert!(!covers(&p("workload.classes[*].n"), &p("workload.classes")));
        assert!(!covers(&p("scheduler.max_num_seqs"), &p("scheduler")));
        for bad in ["", "a..b", "A", "a[", "a[x]", "a]", "a[1", "[0]", "a.[0]"] {
            assert!(parse_path(bad).is_none(), "{bad}");
        }
        assert_eq!(preset_path_kind("workload.classes[2].prompt_tokens.p99"), Some(PathKind::Number));
        assert_eq!(preset_path_kind("allocator.kind"), Some(PathKind::Text));
        assert_eq!(preset_path_kind("allocator.colour"), None);
    }

    #[test]
    fn set_path_writes_where_get_path_reads() {
        let p = |s: &str| parse_path(s).unwrap();
        let mut v = serde_json::json!({"scheduler": {"max_num_seqs": 4}, "workload": {"classes": [{"n": 1}]}});
        set_path(&mut v, &p("scheduler.max_num_seqs"), Value::from(8)).unwrap();
        set_path(&mut v, &p("workload.classes[0].n"), Value::from(2)).unwrap();
        set_path(&mut v, &p("scheduler.watermark"), Value::from(0.1)).unwrap();
        assert_eq!(get_path(&v, &p("scheduler.max_num_seqs")), Some(&Value::from(8)));
        assert_eq!(get_path(&v, &p("workload.classes[0].n")), Some(&Value::from(2)));
        assert_eq!(get_path(&v, &p("scheduler.watermark")), Some(&Value::from(0.1)));
        assert_eq!(set_path(&mut v, &p("workload.classes[3].n"), Value::from(2)), Err("no such item"));
        assert_eq!(set_path(&mut v, &p("allocator.block_size"), Value::from(2)), Err("not in this preset"));
        assert_eq!(set_path(&mut v, &[], Value::Null), Err("empty path"));
    }
}
