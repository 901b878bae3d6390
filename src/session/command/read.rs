//! A command read from its JSON (`{"type": "seek", "t_s": 12}`), field by field: what serde's
//! derive would accept and refuse with the same words ("unknown variant `fly`, expected one of
//! …", "unknown field `t`, expected `t_s`", "missing field `t_s`"), in a fraction of the code the
//! derive generates for an internally tagged enum of this many variants (the bundle's first load,
//! docs/PERFORMANCE.md). Each field's value is read by its own type's `Deserialize`.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Command;

/// Every command's `type`, in the order `Command` lists them.
const TYPES: [&str; 24] = [
    "play",
    "pause",
    "toggle_play",
    "step",
    "seek",
    "seek_end",
    "speed",
    "set",
    "compare",
    "add_row",
    "remove_row",
    "series",
    "load",
    "load_document",
    "set_state",
    "start_mission",
    "mission",
    "undo",
    "redo",
    "sweep",
    "cancel_sweep",
    "sweep_metric",
    "kv_search",
    "cancel_kv_search",
];

/// "`a`, `b`" as serde lists names.
fn listed(names: &[&str]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// The fields of one command's object, each taken once.
struct Fields(Map<String, Value>);

impl Fields {
    /// Refuses a field the command does not have, as serde words it.
    fn only(&self, allowed: &[&str]) -> Result<(), String> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(match allowed {
                [] => format!("unknown field `{k}`, there are no fields"),
                [one] => format!("unknown field `{k}`, expected `{one}`"),
                _ => format!("unknown field `{k}`, expected one of {}", listed(allowed)),
            }),
        }
    }

    fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, String> {
        self.0.remove(name).map(|v| serde_json::from_value(v).map_err(|e| e.to_string())).transpose()
    }

    fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, String> {
        self.take(name)?.ok_or_else(|| format!("missing field `{name}`"))
    }

    /// An optional field: absent and `null` are both `None`.
    fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, String> {
        match self.0.get(name) {
            Some(Value::Null) => {
                self.0.remove(name);
                Ok(None)
            }
            _ => self.take(name),
        }
    }
}

/// What serde's derive names a JSON value that is not the object it expected.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        Value::Number(n) if n.is_u64() => format!("integer `{n}`"),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
    }
}

impl TryFrom<Value> for Command {
    type Error = String;

    fn try_from(value: Value) -> Result<Command, String> {
        use Command::*;
        let Value::Object(mut map) = value else {
            return Err(format!("invalid type: {}, expected internally tagged enum Command", kind(&value)));
        };
        let ty = match map.remove("type") {
            Some(Value::String(s)) => s,
            Some(other) => return Err(format!("invalid type: {}, expected variant identifier", kind(&other))),
            None => return Err("missing field `type`".into()),
        };
        let mut f = Fields(map);
        let allowed: &[&str] = match ty.as_str() {
            "seek" => &["t_s"],
            "speed" => &["speed"],
            "set" => &["path", "value"],
            "compare" => &["on"],
            "add_row" => &["row"],
            "remove_row" => &["row", "index"],
            "series" => &["name", "show"],
            "load" => &["preset"],
            "load_document" => &["text", "expect", "source"],
            "set_state" => &["state"],
            "start_mission" => &["id"],
            "mission" => &["action"],
            "sweep" => &["knob", "values"],
            "sweep_metric" => &["metric"],
            "kv_search" => &["target", "range", "step"],
            t if TYPES.contains(&t) => &[],
            t => return Err(format!("unknown variant `{t}`, expected one of {}", listed(&TYPES))),
        };
        f.only(allowed)?;
        Ok(match ty.as_str() {
            "play" => Play,
            "pause" => Pause,
            "toggle_play" => TogglePlay,
            "step" => Step,
            "seek" => Seek { t_s: f.required("t_s")? },
            "seek_end" => SeekEnd,
            "speed" => Speed { speed: f.required("speed")? },
            "set" => Set { path: f.required("path")?, value: f.required("value")? },
            "compare" => Compare { on: f.required("on")? },
            "add_row" => AddRow { row: f.required("row")? },
            "remove_row" => RemoveRow { row: f.required("row")?, index: f.required("index")? },
            "series" => Series { name: f.required("name")?, show: f.required("show")? },
            "load" => Load { preset: f.required("preset")? },
            "load_document" => {
                LoadDocument { text: f.required("text")?, expect: f.optional("expect")?, source: f.optional("source")? }
            }
            "set_state" => SetState { state: f.required("state")? },
            "start_mission" => StartMission { id: f.required("id")? },
            "mission" => Mission { action: f.required("action")? },
            "undo" => Undo,
            "redo" => Redo,
            "sweep" => Sweep { knob: f.required("knob")?, values: f.required("values")? },
            "cancel_sweep" => CancelSweep,
            "sweep_metric" => SweepMetric { metric: f.required("metric")? },
            "kv_search" => KvSearch {
                target: f.required("target")?,
                range: f.take("range")?.unwrap_or_default(),
                step: f.take("step")?.unwrap_or_default(),
            },
            _ => CancelKvSearch,
        })
    }
}
