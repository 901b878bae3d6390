//! Production LLM request traces, read by format into the engine's `TraceRow`s
//! (docs/TRACES.md): kvlab's own CSV, Azure LLM inference 2023/2024/2025, BurstGPT 1–3,
//! Mooncake, Qwen-Bailian, vLLM's timed trace, Vidur, SplitwiseSim and BLIS TraceV2.
//!
//! [`read_trace`] detects the format (or takes the one it is told), reads every row (a bad row is
//! refused naming its 1-based line and its column: the header's name in a CSV, the key in JSON
//! lines), drops and counts failed rows, then applies the [`TraceOptions`] in their documented
//! order (`options.rs`). Submodules: `detect.rs` (auto-detection, and files that are not request
//! traces), `csv_formats.rs` (the CSV families, read by column name with the `csv` crate),
//! `jsonl.rs` (the JSON-lines families), `time.rs` (datetime strings), `options.rs`.

mod csv_formats;
mod detect;
mod jsonl;
pub mod options;
mod rows;
pub mod time;

pub use detect::detect_format;
pub use options::{OptionError, Replica, TraceOptions};
use rows::{Parsed, RawRow};
pub use rows::{TraceFormat, FORMATS, MAX_TRACE_TOKENS};

use crate::engine::workload::TraceRow;

/// A trace as read: its rows (sorted by arrival, seconds from the window's start) and what the
/// CLI and the page say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The format read (never `Auto`).
    pub format: TraceFormat,
    pub rows: Vec<TraceRow>,
    /// Tokens each hash id stands for (Mooncake 512, Qwen-Bailian 16, vllm-timed its option).
    pub hash_block_tokens: u32,
    /// Failed rows dropped (BurstGPT).
    pub dropped_failed: u64,
    /// Data rows in the file, failed ones included, before any option.
    pub rows_read: u64,
    /// Last arrival minus the first of the rows kept (0 for fewer than two).
    pub span_s: f64,
}

impl Trace {
    /// `mooncake, 2,000 requests over 669.0 s (0 failed rows dropped)`.
    pub fn describe(&self) -> String {
        format!(
            "{}, {} requests over {:.1} s ({} failed rows dropped)",
            self.format.id(),
            thousands(self.rows.len() as u64),
            self.span_s,
            thousands(self.dropped_failed)
        )
    }
}

/// `12345` → `12,345`.
pub fn thousands(n: u64) -> String {
    crate::engine::plan::group_thousands(n)
}

/// Reads a trace's text with these options (module doc; options.rs for their order).
pub fn read_trace(text: &str, options: &TraceOptions) -> Result<Trace, TraceError> {
    options.validate().map_err(TraceError::Option)?;
    let format = match options.format {
        TraceFormat::Auto => detect_format(text).map_err(TraceError::Text)?,
        f => f,
    };
    let parsed = match format {
        TraceFormat::Auto => unreachable!("detected above"),
        TraceFormat::Kvlab => csv_formats::read_kvlab(text),
        TraceFormat::Azure => csv_formats::read_azure(text),
        TraceFormat::Burstgpt => csv_formats::read_burstgpt(text, options.drop_failed),
        TraceFormat::Vidur => csv_formats::read_vidur(text),
        TraceFormat::Splitwise => csv_formats::read_splitwise(text),
        TraceFormat::Blis => csv_formats::read_blis(text),
        TraceFormat::Mooncake => jsonl::read_mooncake(text),
        TraceFormat::Bailian => jsonl::read_bailian(text),
        TraceFormat::VllmTimed => jsonl::read_vllm_timed(text, options.seconds_per_unit, options.hash_block_tokens),
    }
    .map_err(TraceError::Text)?;
    Ok(finish(format, parsed, options))
}

/// Why a trace was refused: its text (line and column in the message) or an option.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceError {
    Text(String),
    Option(OptionError),
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Text(m) => f.write_str(m),
            TraceError::Option(e) => write!(f, "{} {}", e.option, e.message),
        }
    }
}

/// Steps 1–6 of options.rs over a reader's rows (failed rows were refused by the reader unless
/// they are to be dropped).
fn finish(format: TraceFormat, parsed: Parsed, o: &TraceOptions) -> Trace {
    let rows_read = parsed.rows.len() as u64;
    let origin = parsed.origin.unwrap_or_else(|| parsed.rows.iter().map(|r| r.t).fold(f64::INFINITY, f64::min));
    let mut raw: Vec<RawRow> = parsed.rows;
    let before = raw.len();
    raw.retain(|r| !r.failed);
    let dropped_failed = (before - raw.len()) as u64;
    raw.sort_by(|a, b| a.t.total_cmp(&b.t));
    let rows: Vec<TraceRow> = raw
        .into_iter()
        .filter_map(|r| {
            let rel = if origin == 0.0 { r.t } else { r.t - origin };
            (o.in_window(rel) && o.keeps_session(r.session)).then(|| TraceRow {
                arrival_s: o.rescale(rel),
                prompt_tokens: r.prompt,
                output_tokens: r.output,
                n: r.n,
                hash_ids: r.hash_ids,
            })
        })
        .collect();
    let span_s = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => b.arrival_s - a.arrival_s,
        _ => 0.0,
    };
    Trace { format, rows, hash_block_tokens: parsed.hash_block_tokens, dropped_failed, rows_read, span_s }
}

/// kvlab's own CSV (`arrival_s,prompt_tokens,output_tokens[,n]`; an optional header line and `#`
/// comments skipped), rows sorted by arrival: what `workload.arrival.csv` and `--trace` always
/// read, with the same errors (`line 2: arrival_s must be …`).
pub fn parse_trace_csv(text: &str) -> Result<Vec<TraceRow>, String> {
    let options = TraceOptions { format: TraceFormat::Kvlab, ..TraceOptions::default() };
    read_trace(text, &options).map(|t| t.rows).map_err(|e| e.to_string())
}
