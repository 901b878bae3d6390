//! `kvlab run`'s trace flags (`--trace FILE`, `--trace-format`, `--trace-window S:E`,
//! `--trace-speed X`, `--trace-sample K`, `--trace-replica I/N`): read into the preset's trace
//! arrival (`formats::preset::TraceArrivalDto`); a bad value is refused naming the flag and the fix.

use std::path::PathBuf;

use clap::Args;

use crate::formats::preset::TraceArrivalDto;
use crate::formats::trace::{Replica, TraceFormat};

#[derive(Args, Debug, Default, Clone)]
pub struct TraceFlags {
    /// Replay a request trace instead of the preset's arrivals (any format of docs/TRACES.md).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The trace's format: auto, kvlab, azure, burstgpt, mooncake, bailian, vllm-timed, vidur,
    /// splitwise or blis.
    #[arg(long, value_name = "F", requires = "trace", value_parser = parse_format)]
    pub trace_format: Option<TraceFormat>,
    /// Keep arrivals in [S, E) seconds from the trace's first request, shifted so S is 0
    /// (`60:120`; `:120` or `60:` leave one end open).
    #[arg(long, value_name = "S:E", requires = "trace", value_parser = parse_window)]
    pub trace_window: Option<(Option<f64>, Option<f64>)>,
    /// Divide arrivals by X (2 replays twice as fast).
    #[arg(long, value_name = "X", requires = "trace")]
    pub trace_speed: Option<f64>,
    /// Keep one session in K (deterministic, by a hash of the session).
    #[arg(long, value_name = "K", requires = "trace")]
    pub trace_sample: Option<u32>,
    /// Keep replica I's share of a fleet of N (0-based: 0/4 … 3/4).
    #[arg(long, value_name = "I/N", requires = "trace", value_parser = parse_replica)]
    pub trace_replica: Option<Replica>,
}

fn parse_format(s: &str) -> Result<TraceFormat, String> {
    TraceFormat::from_id(s).ok_or_else(|| format!("unknown trace format \"{s}\"; use one of {}", TraceFormat::ids()))
}

fn parse_window(s: &str) -> Result<(Option<f64>, Option<f64>), String> {
    let fix = "write START:END in seconds, such as 0:60 (either end may be left out)";
    let (a, b) = s.split_once(':').ok_or_else(|| format!("\"{s}\" has no ':'; {fix}"))?;
    let num = |x: &str| -> Result<Option<f64>, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(None);
        }
        x.parse::<f64>().map(Some).map_err(|_| format!("\"{x}\" is not a number of seconds; {fix}"))
    };
    Ok((num(a)?, num(b)?))
}

fn parse_replica(s: &str) -> Result<Replica, String> {
    let fix = "write INDEX/COUNT, such as 0/4 for the first of four replicas";
    let (i, n) = s.split_once('/').ok_or_else(|| format!("\"{s}\" has no '/'; {fix}"))?;
    let int = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("\"{x}\" is not a whole number; {fix}"));
    Ok(Replica { index: int(i)?, of: int(n)? })
}

/// The flag that sets a trace option (for option errors in the flags' words).
fn flag_of(option: &str) -> &'static str {
    match option {
        "start_s" | "end_s" => "--trace-window",
        "speed" => "--trace-speed",
        "sample_one_in" => "--trace-sample",
        "replica.index" | "replica.of" => "--trace-replica",
        _ => "--trace",
    }
}

impl TraceFlags {
    /// The trace arrival these flags ask for, with the file's text; option errors name the flag.
    pub fn arrival(&self, text: String, max_tokens: u32) -> Result<TraceArrivalDto, String> {
        let (start_s, end_s) = self.trace_window.unwrap_or((None, None));
        let dto = TraceArrivalDto {
            text: Some(text),
            format: self.trace_format,
            max_tokens,
            start_s,
            end_s,
            speed: self.trace_speed,
            sample_one_in: self.trace_sample,
            replica: self.trace_replica,
            ..TraceArrivalDto::default()
        };
        dto.options().validate().map_err(|e| format!("{}: {} {}", flag_of(e.option), e.option, e.message))?;
        Ok(dto)
    }
}
