//! What the trace readers share: the format ids, a row as a reader hands it over, and the
//! helpers that word a bad field's error with its line and column.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A trace format; its id (`TraceFormat::id`) is what presets and `--trace-format` name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// Detected from the header line or the JSON keys.
    #[default]
    Auto,
    Kvlab,
    Azure,
    Burstgpt,
    Mooncake,
    Bailian,
    VllmTimed,
    Vidur,
    Splitwise,
    Blis,
}

/// Every format and its id, in the order error messages list them.
pub const FORMATS: [(TraceFormat, &str); 10] = [
    (TraceFormat::Auto, "auto"),
    (TraceFormat::Kvlab, "kvlab"),
    (TraceFormat::Azure, "azure"),
    (TraceFormat::Burstgpt, "burstgpt"),
    (TraceFormat::Mooncake, "mooncake"),
    (TraceFormat::Bailian, "bailian"),
    (TraceFormat::VllmTimed, "vllm-timed"),
    (TraceFormat::Vidur, "vidur"),
    (TraceFormat::Splitwise, "splitwise"),
    (TraceFormat::Blis, "blis"),
];

impl TraceFormat {
    pub fn id(self) -> &'static str {
        FORMATS.iter().find(|(f, _)| *f == self).map_or("auto", |(_, id)| id)
    }

    pub fn from_id(id: &str) -> Option<TraceFormat> {
        FORMATS.iter().find(|(_, i)| *i == id).map(|(f, _)| *f)
    }

    /// The ids, comma-separated, for error messages.
    pub fn ids() -> String {
        FORMATS.iter().map(|(_, id)| *id).collect::<Vec<_>>().join(", ")
    }
}

/// A row as a reader hands it over: its time in the file's own seconds.
#[derive(Clone, Debug)]
pub(crate) struct RawRow {
    pub t: f64,
    pub prompt: u32,
    pub output: u32,
    pub n: u32,
    pub hash_ids: Option<Arc<[u32]>>,
    /// The session key (options.rs): sampling and replicas keep equal keys together.
    pub session: u64,
    pub failed: bool,
}

/// What a reader returns: its rows and the zero its times are measured from (None: the first
/// request's time).
pub(crate) struct Parsed {
    pub rows: Vec<RawRow>,
    pub origin: Option<f64>,
    pub hash_block_tokens: u32,
}

/// The most tokens one prompt or output may declare.
pub const MAX_TRACE_TOKENS: u32 = 10_000_000;

/// `line 17, column ContextTokens: …`.
pub(crate) fn at(line: u64, column: &str, message: impl std::fmt::Display) -> String {
    format!("line {line}, column {column}: {message}")
}

/// A token count written as a whole number (at least `min`).
pub(crate) fn tokens(line: u64, column: &str, s: &str, min: u32) -> Result<u32, String> {
    let v: u64 =
        s.trim().parse().map_err(|_| at(line, column, format!("expected a whole number of tokens, found \"{s}\"")))?;
    if v < u64::from(min) {
        return Err(at(line, column, format!("expected at least {min} token, found {v}")));
    }
    if v > u64::from(MAX_TRACE_TOKENS) {
        return Err(at(line, column, format!("expected at most {MAX_TRACE_TOKENS} tokens, found {v}")));
    }
    Ok(v as u32)
}

/// A time written as a number ≥ 0 in `unit`s.
pub(crate) fn time_number(line: u64, column: &str, s: &str, unit: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| at(line, column, format!("expected a number of {unit} ≥ 0, found \"{s}\"")))
}
