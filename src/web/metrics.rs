//! The live metrics table, in the names a vLLM operator knows (`kv_cache_usage_perc`,
//! `num_requests_running`, …): one column per run (two in compare mode), values taken from the
//! engine's `Report` and the last `StepPoint`, plus the startup line per run. Cells are only
//! written when their text changes.

use web_sys::{Element, HtmlElement};

use crate::engine::plan::group_thousands;
use crate::engine::{Report, StepPoint};

use super::dom;

/// What one column of the table shows.
pub struct MetricsInput<'a> {
    pub label: &'a str,
    pub report: &'a Report,
    /// Its steps are priced from measured kernels (else the roofline or a calibration).
    #[cfg(feature = "kernel-clock")]
    pub on_kernels: bool,
    pub last: Option<&'a StepPoint>,
    /// Simulated seconds elapsed (for rates so far).
    pub elapsed_s: f64,
    pub duration_s: f64,
}

/// (key, name shown, hint, shown in the embed's compact table)
const ROWS: &[(&str, &str, &str, bool)] = &[
    ("kv_cache_usage_perc", "kv_cache_usage_perc", "share of the KV pool allocated", true),
    ("live_share", "live share of allocated", "allocated slots that hold tokens", true),
    ("running", "num_requests_running", "requests in the batch (vLLM v1 counts each of n samples)", true),
    ("waiting", "num_requests_waiting", "queued, not admitted", true),
    ("swapped", "num_requests_swapped", "preempted to CPU swap", false),
    ("preemptions", "num_preemptions", "running requests evicted so far", true),
    ("hol", "head-of-line blocked steps", "queue head not admitted (of which with enough free memory in total)", false),
    ("cow", "CoW copies", "partial prompt blocks copied per sample (vLLM v0)", false),
    ("prefix", "prefix_cache_hit_rate", "prompt tokens found in the prefix cache (first admissions)", false),
    ("ttft", "TTFT mean", "time to first token (p95, p99)", false),
    ("tpot", "TPOT mean", "time per output token, per request (p95, p99)", false),
    ("itl", "ITL mean", "every gap between a request's tokens (p99)", false),
    ("e2e", "end-to-end mean", "arrival to last token, finished requests (p99)", false),
    ("clock", "step times", "how close the latencies come to real vLLM runs on this GPU", false),
    ("tokens", "output tokens/s", "generated so far, per simulated second", false),
    ("requests", "requests finished / arrived", "so far", false),
    ("calibration", "step-time model", "calibration in use; extra cost of paged KV reads", false),
];

/// How good the step times are (`Report::clock`), as a cell: runs and error, or where from.
fn clock_cell(c: &crate::engine::metrics::ClockReport) -> (String, Option<String>) {
    match (&c.extrapolated_from, c.median_abs_error_pct) {
        (Some(from), Some(err)) => (
            format!("{} real run{}", c.measured_runs, if c.measured_runs == 1 { "" } else { "s" }),
            Some(format!("held-out median error {err:.1}%, on the {from}'s constants")),
        ),
        (Some(from), None) => ("extrapolated".into(), Some(format!("no run on this GPU: from the {from}"))),
        (None, Some(err)) => (
            format!("{} real run{}", c.measured_runs, if c.measured_runs == 1 { "" } else { "s" }),
            Some(format!("held-out median error {err:.1}%")),
        ),
        (None, None) => (c.line.clone(), None),
    }
}

pub struct MetricsView {
    table: HtmlElement,
    startup: HtmlElement,
    /// Per row, per column: the main and the secondary figure.
    cells: Vec<Vec<(Element, Element)>>,
    headers: Vec<Element>,
    labels: Vec<String>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        group_thousands(x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}

/// The value of row `key` for one run: the figure now, and a secondary figure (the time mean,
/// or the part in brackets).
pub fn value(key: &str, m: &MetricsInput<'_>) -> (String, Option<String>) {
    let r = m.report;
    let last = m.last.copied().unwrap_or_default();
    let cap = r.capacity_tokens.max(1) as f64;
    let one = |s: String| (s, None);
    match key {
        "kv_cache_usage_perc" => {
            (pct((last.allocated_tokens as f64) / cap), Some(format!("mean {}", pct(r.kv.allocated_fraction_mean))))
        }
        "live_share" => {
            let now = if last.allocated_tokens > 0 {
                (last.live_tokens as f64) / (last.allocated_tokens as f64)
            } else {
                0.0
            };
            (pct(now), Some(format!("mean {}", pct(r.kv.utilization_mean))))
        }
        "running" => (last.running.to_string(), Some(format!("mean {:.1}", r.running_mean))),
        "waiting" => one(last.waiting.to_string()),
        "swapped" => one(last.swapped.to_string()),
        "preemptions" => (
            group_thousands(r.preemptions),
            (r.swap_preemptions > 0).then(|| format!("{} by swap", group_thousands(r.swap_preemptions))),
        ),
        "hol" => (
            group_thousands(r.hol_blocked_steps),
            Some(format!("{} with enough free", group_thousands(r.hol_blocked_with_free_memory_steps))),
        ),
        "cow" => one(group_thousands(r.cow_copies)),
        "prefix" => one(pct(r.prefix_cache_hit_rate)),
        // A latency is never exactly 0 (every step takes time): 0 means no request has one yet.
        "ttft" if r.latency_ms.ttft_p95 == 0.0 => ("—".into(), Some("no first token yet".into())),
        "tpot" if r.latency_ms.tpot_p95 == 0.0 => ("—".into(), Some("no second token yet".into())),
        "itl" if r.latency_ms.itl_p99 == 0.0 => ("—".into(), Some("no second token yet".into())),
        "e2e" if r.latency_ms.e2e_p99 == 0.0 => ("—".into(), Some("no request finished yet".into())),
        "ttft" => {
            let l = &r.latency_ms;
            (format!("{} ms", ms(l.ttft_mean)), Some(format!("p95 {} · p99 {} ms", ms(l.ttft_p95), ms(l.ttft_p99))))
        }
        "tpot" => {
            let l = &r.latency_ms;
            (format!("{} ms", ms(l.tpot_mean)), Some(format!("p95 {} · p99 {} ms", ms(l.tpot_p95), ms(l.tpot_p99))))
        }
        "itl" => (format!("{} ms", ms(r.latency_ms.itl_mean)), Some(format!("p99 {} ms", ms(r.latency_ms.itl_p99)))),
        "e2e" => (format!("{} ms", ms(r.latency_ms.e2e_mean)), Some(format!("p99 {} ms", ms(r.latency_ms.e2e_p99)))),
        "tokens" => {
            // The report divides by the whole duration; mid-run, show the rate so far.
            let rate = if m.elapsed_s > 0.0 { r.output_tokens_per_s * m.duration_s / m.elapsed_s } else { 0.0 };
            one(group_thousands(rate.round() as u64))
        }
        "requests" => (
            format!(
                "{} / {}",
                group_thousands(u64::from(r.requests.finished)),
                group_thousands(u64::from(r.requests.arrived))
            ),
            (r.requests.rejected > 0).then(|| format!("{} rejected", r.requests.rejected)),
        ),
        "clock" => clock_cell(&r.clock),
        #[cfg(feature = "kernel-clock")]
        "calibration" if m.on_kernels => ("measured kernels".into(), Some("vLLM's paged kernels".into())),
        "calibration" => (
            r.calibration.clone().unwrap_or_else(|| "default".into()),
            Some(if r.paged_overhead > 0.0 {
                format!("paged reads +{:.0}%", 100.0 * r.paged_overhead)
            } else {
                "contiguous reads".into()
            }),
        ),
        _ => one(String::new()),
    }
}

impl MetricsView {
    pub fn new() -> Result<MetricsView, String> {
        Ok(MetricsView {
            table: dom::need("metrics-table")?,
            startup: dom::need("startup-line")?,
            cells: Vec::new(),
            headers: Vec::new(),
            labels: Vec::new(),
        })
    }

    fn build(&mut self, labels: Vec<String>) {
        let columns = labels.len();
        let head_cells = (0..columns)
            .map(|i| dom::node("th").attr("scope", "col").class("col-run").attr("data-col", &i.to_string()));
        let head = dom::node("thead")
            .child(dom::node("tr").child(dom::node("th").attr("scope", "col").text("metric")).children(head_cells));
        let rows = ROWS.iter().map(|(key, name, hint, key_row)| {
            let title = dom::node("th")
                .attr("scope", "row")
                .child(dom::node("code").text(name))
                .child(dom::node("span").class("hint").text(hint));
            let values = labels.iter().enumerate().map(|(i, label)| {
                dom::node("td")
                    .attr("data-col", &i.to_string())
                    .attr("data-label", label)
                    .child(dom::node("span").class("v"))
                    .child(dom::node("span").class("m"))
            });
            dom::node("tr").attr("data-key", key).class(if *key_row { "key" } else { "" }).child(title).children(values)
        });
        dom::replace_children(&self.table, [head, dom::node("tbody").children(rows)]);
        self.headers = (0..columns)
            .filter_map(|i| self.table.query_selector(&format!("thead th[data-col=\"{i}\"]")).ok().flatten())
            .collect();
        self.cells = ROWS
            .iter()
            .map(|(key, ..)| {
                (0..columns)
                    .filter_map(|i| {
                        let td = format!("tr[data-key=\"{key}\"] td[data-col=\"{i}\"]");
                        let v = self.table.query_selector(&format!("{td} .v")).ok().flatten()?;
                        let m = self.table.query_selector(&format!("{td} .m")).ok().flatten()?;
                        Some((v, m))
                    })
                    .collect()
            })
            .collect();
        self.labels = labels;
    }

    pub fn update(&mut self, runs: &[MetricsInput<'_>]) {
        let labels: Vec<String> = runs.iter().map(|m| m.label.to_string()).collect();
        if labels != self.labels {
            self.build(labels);
        }
        for (i, m) in runs.iter().enumerate() {
            if let Some(h) = self.headers.get(i) {
                dom::set_text(h, m.label);
            }
            for (row, (key, ..)) in ROWS.iter().enumerate() {
                if let Some((v, sub)) = self.cells.get(row).and_then(|c| c.get(i)) {
                    let (main, secondary) = value(key, m);
                    dom::set_text(v, &main);
                    dom::set_text(sub, secondary.as_deref().unwrap_or(""));
                }
            }
        }
        let lines: Vec<String> = runs
            .iter()
            .map(|m| {
                // Derived from the GPU: vLLM's startup lines in its order; else its capacity line.
                let text = match &m.report.gpu_memory {
                    Some(g) => {
                        g.startup_lines.iter().cloned().chain(tensor_parallel_line(g)).collect::<Vec<_>>().join("\n")
                    }
                    None => m.report.capacity_line.clone(),
                };
                // vLLM v1 counts its null block in the line; the map and the chart leave it out.
                let text = if m.report.allocator == "paged" && m.report.engine == "v1" {
                    format!(
                        "{text}\n(vLLM's count includes its null block, which holds no tokens and is never handed out: the map and the chart show the {} tokens requests can use.)",
                        crate::engine::plan::group_thousands(m.report.capacity_tokens)
                    )
                } else {
                    text
                };
                if runs.len() > 1 {
                    format!("[{}] {text}", m.label)
                } else {
                    text
                }
            })
            .collect();
        dom::set_text(&self.startup, &lines.join("\n"));
        // No run (a mission setup vLLM refused to start): no startup lines to show.
        dom::set_hidden(&self.startup, lines.is_empty());
    }
}

/// Under tensor parallelism vLLM's lines are one GPU's: say so, with the replica's total.
fn tensor_parallel_line(g: &crate::engine::metrics::GpuMemoryReport) -> Option<String> {
    (g.tensor_parallel_size > 1).then(|| {
        format!(
            "per GPU (1 of {}): weights {:.2} GiB, KV {:.2} GiB, {} KV heads; per replica: KV {:.2} GiB",
            g.tensor_parallel_size, g.weights_gib_per_gpu, g.kv_gib_per_gpu, g.kv_heads_per_gpu, g.kv_gib_per_replica
        )
    })
}
