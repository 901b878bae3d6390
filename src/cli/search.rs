//! The searches `kvlab sweep` runs for an operator's question (the smallest KV memory, the
//! fewest replicas): the smallest point of a grid whose run meets a TTFT p95 target, by
//! `engine::sweep`'s bisection and steady-state rule, with why the point below misses.

use std::path::Path;

use crate::engine::config::{ConfigError, SimConfig};
use crate::engine::metrics::Report;
use crate::engine::sweep::{run_against_ttft_p95, smallest_meeting, NotFound};

/// The smallest point of a search grid whose run meets a TTFT p95 target, with the KV search's
/// steady-state rule (`engine::sweep::run_against_ttft_p95`), and why the point below misses.
pub struct TtftSearch {
    pub index: usize,
    pub report: Report,
    /// Runs the bisection took.
    pub runs: usize,
    /// The grid point below the answer and why it misses (None when the first point meets).
    pub below: Option<(usize, String)>,
}

/// Bisects `len` grid points (`config_at` each) for the smallest that meets `target` ms; a
/// configuration that cannot be built is an error naming `file`, and a grid whose last point
/// misses too is `last_misses` of why it misses.
pub fn smallest_meeting_ttft_p95(
    len: usize,
    config_at: impl Fn(usize) -> Result<SimConfig, ConfigError>,
    target: f64,
    file: &Path,
    last_misses: impl FnOnce(String) -> String,
) -> Result<TtftSearch, String> {
    // Why a grid point misses, said by running it again (one run; the search keeps only verdicts).
    let why_at = |i: usize| match config_at(i) {
        Ok(c) => run_against_ttft_p95(&c, target).1.unwrap_or_default(),
        Err(e) => e.to_string(),
    };
    let judge = |c: &SimConfig| {
        let (run, miss) = run_against_ttft_p95(c, target);
        (run, miss.is_none())
    };
    match smallest_meeting(len, &config_at, judge) {
        Ok(f) => Ok(TtftSearch {
            below: f.index.checked_sub(1).map(|i| (i, why_at(i))),
            index: f.index,
            runs: f.probes.len(),
            report: f.report,
        }),
        Err(NotFound::Config(e)) => Err(format!("{}: {e}", file.display())),
        Err(NotFound::LastMisses(_)) => Err(last_misses(why_at(len - 1))),
    }
}
