//! A trace's traffic as a preset workload (`kvlab fit`, docs/TRACES.md): the arrival rate of
//! every `bin_s` interval as a Poisson schedule, each class's prompt and output lengths as the
//! log-normal with the window's mean and p99, and, for traces with hash ids, the requests that
//! share leading blocks with an earlier request as a class with a shared prefix of their mean
//! shared length. The figures are the trace's own, so a preset built from a public trace carries
//! its traffic without carrying its rows; `tests/trace_fit.rs` re-fits the shipped ones.

use std::collections::BTreeSet;

use super::preset::{ArrivalDto, BurstDto, ClassDto, DistDto, WorkloadDto};
use super::trace::Trace;
use crate::engine::workload::TraceRow;

/// What `fit_workload` is asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// The window fitted: arrivals in [0, duration_s) of the (already windowed) trace.
    pub duration_s: f64,
    /// The width of the intervals whose rates the schedule keeps.
    pub bin_s: f64,
    /// The classes' `max_tokens` (outputs longer than it are capped by the engine, as in vLLM).
    pub max_tokens: u32,
    /// The name of the class (or the prefix of the two classes' names).
    pub class_name: String,
}

/// A fitted workload and the figures it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    pub workload: WorkloadDto,
    /// Requests in the window.
    pub requests: usize,
    /// Leading-block sharing of a hash-id trace: shared prompt tokens over all prompt tokens.
    pub shared_token_share: Option<f64>,
}

/// Block size the shared prefix is rounded down to (vLLM's default), so a 16-token paged pool
/// caches all of it.
const PREFIX_ROUNDING: u32 = 16;

/// Fits a workload to the first `duration_s` seconds of `trace`; refuses an empty window.
pub fn fit_workload(trace: &Trace, opts: &FitOptions) -> Result<Fit, String> {
    if !(opts.bin_s > 0.0 && opts.bin_s.is_finite()) {
        return Err(format!("the interval must be a positive number of seconds, not {}", opts.bin_s));
    }
    let rows: Vec<&TraceRow> = trace.rows.iter().filter(|r| r.arrival_s < opts.duration_s).collect();
    if rows.is_empty() {
        return Err(format!(
            "no request arrives in the first {} s of the trace; choose a window that holds some",
            opts.duration_s
        ));
    }
    let arrival = rate_schedule(&rows, opts.duration_s, opts.bin_s);
    let shared =
        trace.rows.first().and_then(|r| r.hash_ids.as_ref()).map(|_| shared_tokens(&rows, trace.hash_block_tokens));
    let mut classes = Vec::new();
    let mut share = None;
    match &shared {
        Some(shared) if shared.iter().any(|&s| s > 0) => {
            let (hit, miss): (Vec<_>, Vec<_>) = rows.iter().zip(shared).partition(|(_, &s)| s > 0);
            let hit_rows: Vec<&TraceRow> = hit.iter().map(|(r, _)| **r).collect();
            let mean_shared = hit.iter().map(|(_, &s)| f64::from(s)).sum::<f64>() / hit.len() as f64;
            let prefix = (mean_shared as u32) / PREFIX_ROUNDING * PREFIX_ROUNDING;
            let mut c = class(&format!("{} (shares a prefix)", opts.class_name), &hit_rows, opts.max_tokens);
            c.shared_prefix_tokens = prefix.min((c.prompt_tokens.mean_tokens() as u32).saturating_sub(1));
            classes.push(c);
            if !miss.is_empty() {
                let miss_rows: Vec<&TraceRow> = miss.iter().map(|(r, _)| **r).collect();
                classes.push(class(&format!("{} (new prompt)", opts.class_name), &miss_rows, opts.max_tokens));
            }
            let total: f64 = rows.iter().map(|r| f64::from(r.prompt_tokens)).sum();
            share = Some(shared.iter().map(|&s| f64::from(s)).sum::<f64>() / total);
        }
        _ => classes.push(class(&opts.class_name, &rows, opts.max_tokens)),
    }
    if shared.is_some() && share.is_none() {
        share = Some(0.0);
    }
    Ok(Fit { workload: WorkloadDto { arrival, classes }, requests: rows.len(), shared_token_share: share })
}

/// The mean rate over the window, and one burst per run of intervals whose rate differs from it.
fn rate_schedule(rows: &[&TraceRow], duration_s: f64, bin_s: f64) -> ArrivalDto {
    let bins = (duration_s / bin_s).ceil() as usize;
    let mut counts = vec![0u32; bins];
    for r in rows {
        counts[((r.arrival_s / bin_s) as usize).min(bins - 1)] += 1;
    }
    let rate_per_s = round6(rows.len() as f64 / duration_s);
    let mut bursts: Vec<BurstDto> = Vec::new();
    for (i, &c) in counts.iter().enumerate() {
        let start_s = i as f64 * bin_s;
        let end_s = (start_s + bin_s).min(duration_s);
        let rate = round6(f64::from(c) / (end_s - start_s));
        match bursts.last_mut() {
            Some(b) if b.rate_per_s == rate && b.end_s == start_s => b.end_s = end_s,
            _ => bursts.push(BurstDto { start_s, end_s, rate_per_s: rate }),
        }
    }
    bursts.retain(|b| b.rate_per_s != rate_per_s);
    ArrivalDto::Poisson { rate_per_s, bursts }
}

/// Prompt tokens each row shares with earlier rows: its leading hash ids whose chain (the id and
/// every id before it) an earlier row already had, times the trace's block size; at most the
/// prompt less one token (the last prompt token is always computed, as in vLLM).
fn shared_tokens(rows: &[&TraceRow], block_tokens: u32) -> Vec<u32> {
    let mut seen: BTreeSet<Vec<u32>> = BTreeSet::new();
    rows.iter()
        .map(|r| {
            let ids = r.hash_ids.as_deref().unwrap_or(&[]);
            let leading = (1..=ids.len()).take_while(|&k| seen.contains(&ids[..k])).count();
            for k in leading + 1..=ids.len() {
                seen.insert(ids[..k].to_vec());
            }
            (leading as u32 * block_tokens).min(r.prompt_tokens.saturating_sub(1))
        })
        .collect()
}

fn class(name: &str, rows: &[&TraceRow], max_tokens: u32) -> ClassDto {
    let prompts: Vec<u32> = rows.iter().map(|r| r.prompt_tokens).collect();
    let outputs: Vec<u32> = rows.iter().map(|r| r.output_tokens.max(1)).collect();
    let mut n: Vec<u32> = rows.iter().map(|r| r.n).collect();
    n.sort_unstable();
    ClassDto {
        name: name.to_string(),
        weight: rows.len() as f64,
        prompt_tokens: dist(&prompts),
        output_tokens: dist(&outputs),
        max_tokens,
        n: n[n.len() / 2].max(1),
        shared_prefix_tokens: 0,
        #[cfg(feature = "panels")]
        tenants: 1,
    }
}

/// Mean and nearest-rank p99, to 0.1 token, the p99 at least the mean.
fn dist(values: &[u32]) -> DistDto {
    let mut v = values.to_vec();
    v.sort_unstable();
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
    let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    let mean = (mean * 10.0).round() / 10.0;
    DistDto::log_normal(mean, f64::from(v[rank - 1]).max(mean))
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::trace::{read_trace, TraceOptions};

    fn opts(duration_s: f64, bin_s: f64) -> FitOptions {
        FitOptions { duration_s, bin_s, max_tokens: 2048, class_name: "chat".into() }
    }

    #[test]
    fn rates_per_interval_become_bursts_around_the_mean() {
        let csv = "arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n1.5,100,10\n2.5,300,30\n3.5,100,10\n";
        let trace = read_trace(csv, &TraceOptions::default()).unwrap();
        let fit = fit_workload(&trace, &opts(4.0, 2.0)).unwrap();
        // 4 requests in 4 s: a mean of 1/s, and both intervals run at it.
        assert_eq!(fit.workload.arrival, ArrivalDto::Poisson { rate_per_s: 1.0, bursts: vec![] });
        let fit = fit_workload(&trace, &opts(4.0, 1.0)).unwrap();
        assert_eq!(fit.requests, 4);
        let c = &fit.workload.classes[0];
        assert_eq!(c.prompt_tokens, DistDto::log_normal(150.0, 300.0));
        assert_eq!(c.output_tokens, DistDto::log_normal(15.0, 30.0));
        let fit = fit_workload(&trace, &opts(8.0, 2.0)).unwrap();
        let ArrivalDto::Poisson { rate_per_s, bursts } = fit.workload.arrival else { panic!() };
        assert_eq!(rate_per_s, 0.5);
        assert_eq!(
            bursts,
            vec![
                BurstDto { start_s: 0.0, end_s: 4.0, rate_per_s: 1.0 },
                BurstDto { start_s: 4.0, end_s: 8.0, rate_per_s: 0.0 }
            ]
        );
    }

    #[test]
    fn leading_blocks_seen_before_become_a_shared_prefix_class() {
        let lines = [
            r#"{"timestamp": 0, "input_length": 2048, "output_length": 10, "hash_ids": [1, 2, 3, 4]}"#,
            r#"{"timestamp": 1000, "input_length": 2048, "output_length": 10, "hash_ids": [1, 2, 5, 6]}"#,
            r#"{"timestamp": 2000, "input_length": 1024, "output_length": 10, "hash_ids": [7, 2]}"#,
        ];
        let trace = read_trace(&lines.join("\n"), &TraceOptions::default()).unwrap();
        let fit = fit_workload(&trace, &opts(3.0, 1.0)).unwrap();
        // Only the second request shares (blocks 1, 2: 1,024 of 5,120 prompt tokens); block 2 of
        // the third follows a different block, so its chain is new.
        assert_eq!(fit.shared_token_share, Some(1024.0 / 5120.0));
        let names: Vec<&str> = fit.workload.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["chat (shares a prefix)", "chat (new prompt)"]);
        assert_eq!(fit.workload.classes[0].shared_prefix_tokens, 1024);
        assert_eq!(fit.workload.classes[0].weight, 1.0);
        assert_eq!(fit.workload.classes[1].weight, 2.0);
    }

    #[test]
    fn an_empty_window_is_refused() {
        let trace = read_trace("arrival_s,prompt_tokens,output_tokens\n5,100,10\n", &TraceOptions::default()).unwrap();
        // The window starts at the first arrival, so the row is at 0: a window before it is empty
        // only when the trace is; a zero interval is refused.
        assert!(fit_workload(&trace, &opts(1.0, 0.0)).unwrap_err().contains("positive"));
        let empty = Trace { rows: vec![], ..trace };
        assert!(fit_workload(&empty, &opts(60.0, 10.0)).unwrap_err().contains("no request"));
    }
}
