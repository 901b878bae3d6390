//! The JSON-lines families, one object per line read with `serde_json`: Mooncake
//! (`timestamp` in ms, `hash_ids` of 512-token blocks), Qwen-Bailian (`timestamp` in seconds,
//! `hash_ids` of 16-token blocks, sessions along `parent_chat_id`) and vLLM bench's timed trace
//! (Mooncake's keys, with a seconds multiplier and a chunk hash size). A bad value is refused
//! naming its line and key.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::options::ordinal_key;
use super::rows::{at, tokens, Parsed, RawRow, MAX_TRACE_TOKENS};

/// Mooncake's tokens per hash id.
pub const MOONCAKE_BLOCK_TOKENS: u32 = 512;
/// Qwen-Bailian's tokens per hash id.
pub const BAILIAN_BLOCK_TOKENS: u32 = 16;

/// Every non-blank line as a JSON object, with its 1-based line number.
fn objects(text: &str) -> impl Iterator<Item = Result<(u64, Map<String, Value>), String>> + '_ {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| {
        let line = i as u64 + 1;
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => Ok((line, m)),
            Ok(other) => Err(format!("line {line}: expected a JSON object, found {}", short(&other))),
            Err(e) => Err(format!("line {line}: not JSON: {e}")),
        }
    })
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

fn get<'m>(line: u64, m: &'m Map<String, Value>, key: &str) -> Result<&'m Value, String> {
    m.get(key).ok_or_else(|| {
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        format!("line {line}: missing key \"{key}\"; the line has {}", keys.join(", "))
    })
}

/// A whole number of tokens at `key` (a JSON integer).
fn token_key(line: u64, m: &Map<String, Value>, key: &str, min: u32) -> Result<u32, String> {
    let v = get(line, m, key)?;
    match v.as_u64() {
        Some(n) if n <= u64::from(MAX_TRACE_TOKENS) => tokens(line, key, &n.to_string(), min),
        Some(n) => Err(at(line, key, format!("expected at most {MAX_TRACE_TOKENS} tokens, found {n}"))),
        None => Err(at(line, key, format!("expected a whole number of tokens, found {}", short(v)))),
    }
}

/// A time ≥ 0 at `key` (any JSON number) in the file's unit.
fn time_key(line: u64, m: &Map<String, Value>, key: &str, unit: &str) -> Result<f64, String> {
    let v = get(line, m, key)?;
    v.as_f64()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| at(line, key, format!("expected a number of {unit} ≥ 0, found {}", short(v))))
}

/// `hash_ids`, when present: an array of whole-number block ids.
fn hash_ids(line: u64, m: &Map<String, Value>) -> Result<Option<Arc<[u32]>>, String> {
    let Some(v) = m.get("hash_ids") else { return Ok(None) };
    let bad = || at(line, "hash_ids", format!("expected an array of whole-number block ids, found {}", short(v)));
    let items = v.as_array().ok_or_else(bad)?;
    let ids: Option<Vec<u32>> = items.iter().map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok())).collect();
    Ok(Some(ids.ok_or_else(bad)?.into()))
}

/// Mooncake-shaped lines: `timestamp × seconds_per_unit` seconds, `input_length`,
/// `output_length`, optional `hash_ids`.
fn read_timed(text: &str, seconds_per_unit: f64, unit: &str, hash_block_tokens: u32) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    for item in objects(text) {
        let (line, m) = item?;
        let t = time_key(line, &m, "timestamp", unit)? * seconds_per_unit;
        let prompt = token_key(line, &m, "input_length", 1)?;
        let output = token_key(line, &m, "output_length", 1)?;
        let session = ordinal_key(rows.len() as u64);
        rows.push(RawRow { t, prompt, output, n: 1, hash_ids: hash_ids(line, &m)?, session, failed: false });
    }
    Ok(Parsed { rows, origin: None, hash_block_tokens })
}

/// Mooncake (FAST'25 and the arXiv trace): `timestamp` in milliseconds, 512-token hash blocks.
pub(crate) fn read_mooncake(text: &str) -> Result<Parsed, String> {
    read_timed(text, 0.001, "milliseconds", MOONCAKE_BLOCK_TOKENS)
}

/// vLLM bench's timed trace: `timestamp × seconds_per_unit` seconds (vLLM's default 1),
/// `hash_block_tokens` per id (vLLM's default 16).
pub(crate) fn read_vllm_timed(text: &str, seconds_per_unit: f64, hash_block_tokens: u32) -> Result<Parsed, String> {
    read_timed(text, seconds_per_unit, "timestamp units", hash_block_tokens)
}

/// Qwen-Bailian: `timestamp` in seconds, 16-token hash blocks; a request's session is the root of
/// its `parent_chat_id` chain (`-1` ends it; so does a parent absent from the file).
pub(crate) fn read_bailian(text: &str) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    let mut chats = Vec::new();
    let mut parent_of = BTreeMap::new();
    for item in objects(text) {
        let (line, m) = item?;
        let id_key = |key: &str| -> Result<i64, String> {
            let v = get(line, &m, key)?;
            v.as_i64().ok_or_else(|| at(line, key, format!("expected a whole-number id, found {}", short(v))))
        };
        let chat = id_key("chat_id")?;
        let parent = id_key("parent_chat_id")?;
        let t = time_key(line, &m, "timestamp", "seconds")?;
        let prompt = token_key(line, &m, "input_length", 1)?;
        let output = token_key(line, &m, "output_length", 1)?;
        parent_of.insert(chat, parent);
        chats.push(chat);
        rows.push(RawRow { t, prompt, output, n: 1, hash_ids: hash_ids(line, &m)?, session: 0, failed: false });
    }
    let limit = parent_of.len();
    for (row, chat) in rows.iter_mut().zip(chats) {
        let mut root = chat;
        // A chain longer than the file is a loop: stop where it started repeating.
        for _ in 0..limit {
            match parent_of.get(&root) {
                Some(&p) if p >= 0 && parent_of.contains_key(&p) => root = p,
                _ => break,
            }
        }
        row.session = super::options::text_key(&root.to_string());
    }
    Ok(Parsed { rows, origin: None, hash_block_tokens: BAILIAN_BLOCK_TOKENS })
}
