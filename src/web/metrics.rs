//! The live metrics table, in the names a vLLM operator knows (`kv_cache_usage_perc`,
//! `num_requests_running`, …): one column per run (two in compare mode), values taken from the
//! engine's `Report` and the last `StepSample`, plus the startup line per run. Cells are only
//! written when their text changes.

use web_sys::{Element, HtmlElement};

use crate::engine::plan::group_thousands;
use crate::engine::{Report, StepSample};

use super::dom;

/// What one column of the table shows.
pub struct MetricsInput<'a> {
    pub label: &'a str,
    pub report: &'a Report,
    pub last: Option<&'a StepSample>,
    /// Simulated seconds elapsed (for rates so far).
    pub elapsed_s: f64,
    pub duration_s: f64,
}

/// (key, name shown, hint, shown in the embed's compact table)
const ROWS: &[(&str, &str, &str, bool)] = &[
    ("kv_cache_usage_perc", "kv_cache_usage_perc", "KV pool allocated now (time mean)", true),
    ("live_share", "live share of allocated", "allocated slots holding tokens now (time mean)", true),
    ("running", "num_requests_running", "sequence groups decoding now (mean)", true),
    ("waiting", "num_requests_waiting", "queued, not admitted", true),
    ("swapped", "num_requests_swapped", "preempted to CPU swap", false),
    ("preemptions", "num_preemptions", "total (of which by swap)", true),
    ("hol", "head-of-line blocked steps", "total (with enough free memory in total)", false),
    ("cow", "CoW copies", "partial prompt blocks copied per sample", false),
    ("prefix", "prefix_cache_hit_rate", "prompt tokens found in the prefix cache", false),
    ("ttft", "TTFT p50 / p95", "time to first token", false),
    ("tpot", "TPOT p50 / p95", "time per output token", false),
    ("tokens", "output tokens/s", "generated so far, per simulated second", true),
    ("requests", "requests finished / arrived", "rejected requests in brackets", false),
];

pub struct MetricsView {
    table: HtmlElement,
    startup: HtmlElement,
    cells: Vec<Vec<Element>>,
    headers: Vec<Element>,
    columns: usize,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The value of row `key` for one run.
pub fn value(key: &str, m: &MetricsInput<'_>) -> String {
    let r = m.report;
    let last = m.last.copied().unwrap_or_default();
    let cap = r.capacity_tokens.max(1) as f64;
    match key {
        "kv_cache_usage_perc" => {
            format!("{} ({})", pct(f64::from(last.allocated_tokens) / cap), pct(r.kv.allocated_fraction_mean))
        }
        "live_share" => {
            let now = if last.allocated_tokens > 0 {
                f64::from(last.live_tokens) / f64::from(last.allocated_tokens)
            } else {
                0.0
            };
            format!("{} ({})", pct(now), pct(r.kv.utilization_mean))
        }
        "running" => format!("{} ({:.1})", last.running, r.running_mean),
        "waiting" => last.waiting.to_string(),
        "swapped" => last.swapped.to_string(),
        "preemptions" => format!("{} ({})", group_thousands(r.preemptions), group_thousands(r.swap_preemptions)),
        "hol" => format!(
            "{} ({})",
            group_thousands(r.hol_blocked_steps),
            group_thousands(r.hol_blocked_with_free_memory_steps)
        ),
        "cow" => group_thousands(r.cow_copies),
        "prefix" => pct(r.prefix_cache_hit_rate),
        "ttft" => format!("{} / {} ms", ms(r.latency_ms.ttft_p50), ms(r.latency_ms.ttft_p95)),
        "tpot" => format!("{} / {} ms", ms(r.latency_ms.tpot_p50), ms(r.latency_ms.tpot_p95)),
        "tokens" => {
            // The report divides by the whole duration; mid-run, show the rate so far.
            let rate = if m.elapsed_s > 0.0 { r.output_tokens_per_s * m.duration_s / m.elapsed_s } else { 0.0 };
            group_thousands(rate.round() as u64)
        }
        "requests" => {
            let mut s = format!("{} / {}", group_thousands(u64::from(r.requests.finished)), group_thousands(u64::from(r.requests.arrived)));
            if r.requests.rejected > 0 {
                s.push_str(&format!(" ({} rejected)", r.requests.rejected));
            }
            s
        }
        _ => String::new(),
    }
}

impl MetricsView {
    pub fn new() -> Result<MetricsView, String> {
        Ok(MetricsView {
            table: dom::need("metrics-table")?,
            startup: dom::need("startup-line")?,
            cells: Vec::new(),
            headers: Vec::new(),
            columns: 0,
        })
    }

    fn build(&mut self, columns: usize) {
        let mut html = String::from("<thead><tr><th scope=\"col\">metric</th>");
        for i in 0..columns {
            html.push_str(&format!("<th scope=\"col\" class=\"col-run\" data-col=\"{i}\"></th>"));
        }
        html.push_str("</tr></thead><tbody>");
        for (key, name, hint, key_row) in ROWS {
            html.push_str(&format!(
                "<tr data-key=\"{key}\"{}><th scope=\"row\"><code>{}</code><span class=\"hint\">{}</span></th>",
                if *key_row { " class=\"key\"" } else { "" },
                dom::escape(name),
                dom::escape(hint)
            ));
            for i in 0..columns {
                html.push_str(&format!("<td data-col=\"{i}\"></td>"));
            }
            html.push_str("</tr>");
        }
        html.push_str("</tbody>");
        self.table.set_inner_html(&html);
        self.headers = (0..columns)
            .filter_map(|i| self.table.query_selector(&format!("thead th[data-col=\"{i}\"]")).ok().flatten())
            .collect();
        self.cells = ROWS
            .iter()
            .map(|(key, ..)| {
                (0..columns)
                    .filter_map(|i| {
                        self.table.query_selector(&format!("tr[data-key=\"{key}\"] td[data-col=\"{i}\"]")).ok().flatten()
                    })
                    .collect()
            })
            .collect();
        self.columns = columns;
    }

    pub fn update(&mut self, runs: &[MetricsInput<'_>]) {
        if runs.len() != self.columns {
            self.build(runs.len());
        }
        for (i, m) in runs.iter().enumerate() {
            if let Some(h) = self.headers.get(i) {
                dom::set_text(h, m.label);
            }
            for (row, (key, ..)) in ROWS.iter().enumerate() {
                if let Some(cell) = self.cells.get(row).and_then(|c| c.get(i)) {
                    dom::set_text(cell, &value(key, m));
                }
            }
        }
        let lines: Vec<String> = runs
            .iter()
            .map(|m| if runs.len() > 1 { format!("[{}] {}", m.label, m.report.capacity_line) } else { m.report.capacity_line.clone() })
            .collect();
        dom::set_text(&self.startup, &lines.join("\n"));
    }
}
