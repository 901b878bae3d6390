//! A file dropped on the lab or opened in the Load dialog, when it is a trace rather than a
//! kvlab document (no DOM): the current preset with `workload.arrival` replaced by the trace and
//! `duration_s` covering its span, what the page says it read, and where the run goes (the
//! interactive lab, or the long-run worker past [`MAIN_THREAD_MAX_REQUESTS`]). The worker
//! (`worker.rs`) builds its run with the same [`trace_preset`].

use crate::engine::plan::group_thousands;
use crate::engine::workload::TraceRow;
use crate::formats::preset::{ArrivalDto, PresetDto, TraceArrivalDto};
use crate::formats::sniff::{sniff_text, Document};
use crate::formats::trace::{read_trace, TraceOptions};

/// Runs expected to have more requests than this go to the worker (`www/worker.js`): about a
/// second of simulation in wasm, the most the page's main thread may spend at once.
pub const MAIN_THREAD_MAX_REQUESTS: u64 = 50_000;

/// The largest trace a link (`#lab=…`) carries; past it, Copy link and Embed are off.
pub const LINK_MAX_TRACE_BYTES: usize = 32 << 10;

/// The `max_tokens` a trace's requests get when the preset has no class to take it from.
pub const DEFAULT_TRACE_MAX_TOKENS: u32 = 2048;

/// A trace made into a preset.
#[derive(Clone, Debug)]
pub struct TraceLoad {
    pub preset: PresetDto,
    /// The format's id as the page shows it (`mooncake`, `azure`, `kvlab`: docs/TRACES.md).
    pub format: String,
    pub requests: u64,
    /// The last arrival, s.
    pub span_s: f64,
}

impl TraceLoad {
    /// "mooncake trace: 2,000 requests over 669 s".
    pub fn summary(&self) -> String {
        summary(&self.format, self.requests, self.span_s)
    }
}

pub fn summary(format: &str, requests: u64, span_s: f64) -> String {
    let s = if requests == 1 { "" } else { "s" };
    format!("{format} trace: {} request{s} over {} s", group_thousands(requests), group_thousands(span_s.ceil() as u64))
}

/// Whether a file's text is a kvlab document (a JSON object naming a `schema`) or a model's
/// config.json rather than a trace: JSON Lines and other schema-less JSON are traces.
pub fn is_document(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with('{')
        && matches!(
            sniff_text(text),
            Some(Document::Preset | Document::Mission | Document::ModelConfig | Document::OtherSchema)
        )
}

/// Lines of `text`, counted without parsing: an upper bound on its requests, to route a big
/// trace to the worker before the main thread reads it.
pub fn line_count(text: &str) -> u64 {
    text.as_bytes().iter().filter(|&&b| b == b'\n').count() as u64 + 1
}

/// The trace's rows and its format's name.
fn read_rows(text: &str) -> Result<(String, Vec<TraceRow>), String> {
    let trace = read_trace(text, &TraceOptions::default()).map_err(|e| e.to_string())?;
    Ok((trace.format.id().to_string(), trace.rows))
}

/// The arrival that replays `text`.
fn trace_arrival(text: &str, max_tokens: u32) -> ArrivalDto {
    ArrivalDto::Trace(TraceArrivalDto { text: Some(text.to_string()), max_tokens, ..TraceArrivalDto::default() })
}

/// `current` replaying the trace `text` from start to end. Errors say where the trace is wrong
/// ("line 17: …") or which preset field refuses it.
pub fn trace_preset(current: &PresetDto, text: &str) -> Result<TraceLoad, String> {
    let (format, rows) = read_rows(text)?;
    if rows.is_empty() {
        return Err("the trace has no requests".into());
    }
    let span_s = rows.iter().map(|r| r.arrival_s).fold(0.0, f64::max);
    let max_tokens = current.workload.classes.first().map_or(DEFAULT_TRACE_MAX_TOKENS, |c| c.max_tokens);
    let mut preset = current.clone();
    preset.workload.arrival = trace_arrival(text, max_tokens);
    // Every arrival strictly inside the run: the last one at span_s too.
    preset.duration_s = (span_s.floor() + 1.0).max(1.0);
    let requests = preset.to_config().map_err(|e| e.to_string())?.run_bounds().expected_requests;
    Ok(TraceLoad { preset, format, requests, span_s })
}

/// Requests `preset` is expected to bring (the Poisson mean or the trace rows in the run).
pub fn expected_requests(preset: &PresetDto) -> Result<u64, String> {
    Ok(preset.to_config().map_err(|e| e.to_string())?.run_bounds().expected_requests)
}

/// The bytes of trace a preset carries inline (0 for Poisson traffic and closed loops).
pub fn trace_bytes(preset: &PresetDto) -> usize {
    match &preset.workload.arrival {
        ArrivalDto::Trace(t) => t.text.as_ref().or(t.csv.as_ref()).map_or(0, String::len),
        ArrivalDto::Poisson { .. } | ArrivalDto::Concurrency { .. } => 0,
    }
}

/// Why a link cannot carry `preset` (None when it can).
pub fn link_problem(preset: &PresetDto) -> Option<String> {
    let bytes = trace_bytes(preset);
    (bytes > LINK_MAX_TRACE_BYTES).then(|| {
        format!(
            "This lab replays a trace from a file ({}), too big for a link: Copy link and Embed are off. \
             Share the preset JSON instead (Settings → Preset JSON → Download).",
            size_words(bytes)
        )
    })
}

/// "1.2 MB", "48 KB".
pub fn size_words(bytes: usize) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{} KB", bytes.div_ceil(1000))
    }
}

/// The rows arriving in `[start_s, start_s + len_s)`, moved to start at 0, as kvlab CSV.
pub fn window_csv(rows: &[TraceRow], start_s: f64, len_s: f64) -> String {
    let mut out = String::from("arrival_s,prompt_tokens,output_tokens,n\n");
    for r in rows.iter().filter(|r| r.arrival_s >= start_s && r.arrival_s < start_s + len_s) {
        out.push_str(&format!("{:.6},{},{},{}\n", r.arrival_s - start_s, r.prompt_tokens, r.output_tokens, r.n));
    }
    out
}

/// The start (whole seconds) of the `len_s` window with the most arrivals; 0 for none.
pub fn busiest_window_s(arrivals_us: &[u64], len_s: f64) -> f64 {
    let len_us = (len_s * 1e6) as u64;
    let (mut best, mut best_start, mut lo) = (0usize, 0u64, 0usize);
    for (hi, &t) in arrivals_us.iter().enumerate() {
        while arrivals_us[lo] + len_us <= t {
            lo += 1;
        }
        if hi + 1 - lo > best {
            best = hi + 1 - lo;
            best_start = arrivals_us[lo];
        }
    }
    (best_start / 1_000_000) as f64
}

/// `preset` replaying only `csv` (a window of its trace) for `len_s` seconds.
pub fn window_preset(preset: &PresetDto, csv: &str, len_s: f64) -> PresetDto {
    let mut p = preset.clone();
    let max_tokens = match &p.workload.arrival {
        ArrivalDto::Trace(t) => t.max_tokens,
        ArrivalDto::Poisson { .. } | ArrivalDto::Concurrency { .. } => DEFAULT_TRACE_MAX_TOKENS,
    };
    p.workload.arrival = trace_arrival(csv, max_tokens);
    p.duration_s = len_s;
    p
}
