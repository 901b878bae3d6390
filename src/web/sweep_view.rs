//! The lab's Sweep panel (`#sweep` in index.html): fills the knob and metric pickers (events.rs
//! turns Run, Cancel and the pickers into commands), writes the progress line (or why the last
//! sweep was refused) and draws the metric against the knob with plotters, contiguous and paged
//! as two series. The job itself is `session::sweep`'s, in the session; app.rs steps it a time
//! budget per animation frame, so the page stays responsive. In mission mode
//! only the knobs the mission leaves free can be picked. Below the chart, the smallest-KV
//! search (kv_search.rs, stepped the same way): a TTFT p95 target, Find and Cancel, a progress
//! line, one answer per allocator and the target's error under its field; off in a mission that
//! locks `kv_memory_gib`.

use plotters::prelude::*;

use super::chart::FONT;
use web_sys::{Element, HtmlCanvasElement};

use crate::formats::sweep::ALLOCATORS;
use crate::session::lab::Lab;

use crate::engine::numbers::show_number;
use crate::engine::sweep::SweepMetrics;
use crate::formats::sweep_results::{value_text, SweepPoint};
use crate::session::control_edit::control_unlocked;
use crate::session::kv_search::{answer_text, plural, Answer, KvSearchJob, SearchField, SEARCH_KNOB};
use crate::session::sweep::{metric_value, SweepJob, SweepPanel, KNOBS, METRICS};

use super::chart::{self, px, ChartTheme};
use super::dom;

/// Fills the knob and metric pickers; false on a page without `#sweep`.
pub fn fill() -> bool {
    if dom::by_id::<Element>("sweep").is_none() {
        return false;
    }
    if let Some(sel) = dom::by_id::<Element>("sweep-knob") {
        dom::replace_children(&sel, KNOBS.iter().map(|(p, l)| dom::node("option").attr("value", p).text(l)));
    }
    if let Some(sel) = dom::by_id::<Element>("sweep-metric") {
        dom::replace_children(&sel, METRICS.iter().map(|(k, l)| dom::node("option").attr("value", k).text(l)));
    }
    true
}

/// Disables the knobs a mission locks or the preset has no place for (and Run when none is
/// left), and the KV search when the mission locks the KV memory.
pub fn lock(lab: &Lab) {
    let preset = serde_json::to_value(&lab.state.preset).unwrap_or_default();
    let (preset, mission) = (&preset, lab.mission.as_ref());
    let search_off = mission.is_some_and(|m| !control_unlocked(m.knobs(), SEARCH_KNOB));
    for id in ["sweep-search-run", "sweep-search-target", "sweep-search-range", "sweep-search-step"] {
        if let Some(el) = dom::by_id::<Element>(id) {
            let _ = el.toggle_attribute_with_force("disabled", search_off);
        }
    }
    if let Some(note) = dom::by_id::<web_sys::HtmlElement>("sweep-search-locked") {
        dom::set_hidden(&note, !search_off);
    }
    let Some(sel) = dom::by_id::<Element>("sweep-knob") else { return };
    let mut any = false;
    let options = sel.children();
    for i in 0..options.length() {
        let Some(o) = options.item(i) else { continue };
        let path = o.get_attribute("value").unwrap_or_default();
        let off = !SweepJob::offered(preset, mission, &path);
        any |= !off;
        let _ = o.toggle_attribute_with_force("disabled", off);
    }
    if let Some(run) = dom::by_id::<Element>("sweep-run") {
        let _ = run.toggle_attribute_with_force("disabled", !any);
    }
    // A knob that stopped applying (a trace loaded over a rate sweep) gives way to the first
    // one offered; until the reader picks one, the first that changes the preset's own run.
    if let Some(sel) = wasm_bindgen::JsCast::dyn_ref::<web_sys::HtmlSelectElement>(&sel) {
        let chosen = sel.selected_options().item(0);
        let picked = sel.has_attribute("data-picked");
        if chosen.is_none_or(|o| o.has_attribute("disabled")) || !picked {
            if let Some(first) = SweepJob::first_knob(preset, mission) {
                sel.set_value(first);
            }
        }
    }
}

/// The progress line, the buttons' states and the chart; then the search's.
pub fn render(panel: &SweepPanel, dark: bool) {
    render_sweep(panel, dark);
    render_search(panel);
}

fn render_sweep(panel: &SweepPanel, dark: bool) {
    let Some(line) = dom::by_id::<Element>("sweep-progress") else { return };
    let running = panel.job.as_ref().is_some_and(SweepJob::running);
    dom::set_text(&line, panel.sweep_error.as_deref().unwrap_or(&progress_text(panel)));
    dom::toggle_class(&line, "error", panel.sweep_error.is_some());
    if let Some(cancel) = dom::by_id::<web_sys::HtmlElement>("sweep-cancel") {
        dom::set_hidden(&cancel, !running);
    }
    if let Some(run) = dom::by_id::<web_sys::HtmlElement>("sweep-run") {
        dom::set_hidden(&run, running);
    }
    let shown = panel.job.as_ref().filter(|j| j.done_points() > 0);
    render_table(shown, &panel.metric);
    for id in ["sweep-download-csv", "sweep-download-json"] {
        if let Some(b) = dom::by_id::<web_sys::HtmlButtonElement>(id) {
            b.set_disabled(shown.is_none());
        }
    }
    let Some(canvas) = dom::by_id::<HtmlCanvasElement>("sweep-chart") else { return };
    let job = shown;
    dom::set_hidden(&canvas, job.is_none());
    if let Some(job) = job {
        if let Err(e) = draw(&canvas, job, &panel.metric, ChartTheme::of(dark)) {
            dom::set_text(&line, &format!("The chart could not be drawn: {e}"));
        }
    }
}

fn progress_text(panel: &SweepPanel) -> String {
    let Some(job) = &panel.job else {
        return "No sweep run yet.".into();
    };
    let (k, n) = (job.done_points(), job.total_points());
    let note = job
        .unchanged_allocator()
        .map(|a| format!(" {} applies to one allocator only; {a} stays as the preset has it.", job.knob.path()))
        .unwrap_or_default();
    if job.cancelled {
        format!("Cancelled after {k} of {n} points.{note}")
    } else if job.finished() {
        let took = panel.took_ms.map(|ms| format!(" in {ms:.0} ms")).unwrap_or_default();
        format!(
            "{n} of {n} points{took}, each over {} s of traffic (the KV search below runs each point three times as long to judge the steady state, so its p95 for the same KV memory can be higher).{note}",
            tick(job.run_s())
        )
    } else {
        format!("Running… {k} of {n} points.")
    }
}

/// The search's line, its answers (one per allocator), the target field's error and its buttons.
fn render_search(panel: &SweepPanel) {
    let Some(line) = dom::by_id::<Element>("sweep-search-progress") else { return };
    let job = panel.search.as_ref();
    let running = job.is_some_and(KvSearchJob::running);
    dom::set_text(&line, &search_progress_text(panel));
    let answers = job.map(KvSearchJob::answers);
    for (a, allocator) in ALLOCATORS.iter().enumerate() {
        let Some(li) = dom::by_id::<web_sys::HtmlElement>(&format!("sweep-search-{allocator}")) else { continue };
        dom::set_hidden(&li, job.is_none());
        if let (Some(job), Some(answers)) = (job, &answers) {
            let answer = &answers[a];
            let text = answer_text(allocator, job.target_ms, answer);
            if li.text_content().as_deref() != Some(text.as_str()) {
                // The allocator's name in bold, the rest as text (the whole reads as `text`).
                let rest = text.strip_prefix(allocator).unwrap_or(&text);
                dom::replace_children(&li, [dom::node("strong").text(allocator), dom::node("span").text(rest)]);
            }
            dom::toggle_class(&li, "met", matches!(answer, Answer::Met { .. }));
        }
    }
    let error = panel.search_error.as_ref();
    if let Some(err) = dom::by_id::<web_sys::HtmlElement>("sweep-search-error") {
        dom::set_text(&err, error.map_or("", |e| e.message.as_str()));
        dom::set_hidden(&err, error.is_none());
    }
    for field in [SearchField::Target, SearchField::Range, SearchField::Step] {
        if let Some(input) = dom::by_id::<Element>(field.id()) {
            // `aria-invalid=""` reads as false: the attribute says "true" or is absent.
            let _ = if error.is_some_and(|e| e.field == Some(field)) {
                input.set_attribute("aria-invalid", "true")
            } else {
                input.remove_attribute("aria-invalid")
            };
        }
    }
    if let Some(cancel) = dom::by_id::<web_sys::HtmlElement>("sweep-search-cancel") {
        dom::set_hidden(&cancel, !running);
    }
    if let Some(run) = dom::by_id::<web_sys::HtmlElement>("sweep-search-run") {
        dom::set_hidden(&run, running);
    }
    if let Some(b) = dom::by_id::<web_sys::HtmlButtonElement>("sweep-search-download") {
        b.set_disabled(job.is_none());
    }
}

fn search_progress_text(panel: &SweepPanel) -> String {
    let Some(job) = &panel.search else {
        return "The smallest KV memory whose TTFT p95 meets a target, for each allocator.".into();
    };
    let (runs, most) = (job.runs(), job.max_runs());
    let (lo, hi, step) = job.grid();
    if job.cancelled {
        format!("Cancelled after {runs} {}.", plural(runs, "run"))
    } else if job.finished() {
        let took = panel.search_took_ms.map(|ms| format!(" in {ms:.0} ms")).unwrap_or_default();
        format!("{runs} runs{took}, bisection over {lo}…{hi} GiB in {step} GiB steps.")
    } else if panel.job.as_ref().is_some_and(SweepJob::running) {
        "Waiting for the sweep to finish…".into()
    } else {
        format!("Searching… {runs} runs of at most {most}.")
    }
}

/// The knob's values as x positions: the numbers themselves, or 0, 1, 2… for texts.
fn xs(points: &[SweepPoint]) -> (Vec<f64>, bool) {
    let nums: Option<Vec<f64>> = points.iter().map(|p| p.0.as_f64()).collect();
    match nums {
        Some(v) => (v, true),
        None => ((0..points.len()).map(|i| i as f64).collect(), false),
    }
}

/// A tick label: whole numbers with thousands separators, others with up to 3 digits.
pub fn tick(v: f64) -> String {
    // From a thousand up, whole numbers with thousands separators ("45,886", "153,847").
    let v = if v.abs() >= 1000.0 && v.abs() < 1e15 { v.round() } else { v };
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let n = v.abs() as u64;
        let s = crate::engine::plan::group_thousands(n);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else {
        show_number((v * 1000.0).round() / 1000.0)
    }
}

fn label_of(table: &[(&str, &'static str)], key: &str) -> &'static str {
    table.iter().find(|(k, _)| *k == key).map_or("", |(_, l)| *l)
}

fn draw(canvas: &HtmlCanvasElement, job: &SweepJob, metric: &str, t: &'static ChartTheme) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    let dpr = chart::size_canvas(canvas);
    let root = chart::area(canvas, t)?;
    let points = job.points();
    let (x, numeric) = xs(&points);
    let series: Vec<(RGBColor, Vec<(f64, f64)>)> = [(t.allocated, 0), (t.live, 1)]
        .into_iter()
        .map(|(colour, a)| {
            let pts = points
                .iter()
                .zip(&x)
                .filter_map(|(p, &xv)| p.1[a].as_ref().ok().map(|m| (xv, metric_value(m, metric))));
            (colour, pts.collect())
        })
        .collect();
    let (lo, hi) = x.iter().fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    let pad = if hi > lo { (hi - lo) * 0.04 } else { 1.0 };
    let y_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0, f64::max).max(1e-9) * 1.1;
    let mut c = ChartBuilder::on(&root)
        .margin(px(10.0, dpr))
        .x_label_area_size(px(40.0, dpr))
        .y_label_area_size(px(64.0, dpr))
        .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..y_max)
        .map_err(err)?;
    let font = (FONT, 11.5 * dpr).into_font().color(&t.muted);
    let labels: Vec<String> = points.iter().map(|p| value_text(p.0)).collect();
    let x_fmt = move |v: &f64| {
        if numeric {
            tick(*v)
        } else {
            labels.get(v.round() as usize).filter(|_| (v - v.round()).abs() < 1e-6).cloned().unwrap_or_default()
        }
    };
    let y_fmt = |v: &f64| tick(*v);
    c.configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(t.grid)
        .axis_style(t.axis)
        .x_labels(if numeric { 6 } else { points.len().max(2) })
        .y_labels(5)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(label_of(KNOBS, &job.knob.path()))
        .y_desc(label_of(METRICS, metric))
        .axis_desc_style(font.clone())
        .label_style(font)
        .draw()
        .map_err(err)?;
    for (colour, pts) in series {
        let style = colour.stroke_width(px(2.0, dpr).max(1));
        c.draw_series(std::iter::once(PathElement::new(pts.clone(), style))).map_err(err)?;
        c.draw_series(pts.into_iter().map(|p| Circle::new(p, px(3.5, dpr), colour.filled()))).map_err(err)?;
    }
    root.present().map_err(err)
}

/// One cell of the table: the metric, with unfinished and rejected requests when there are any
/// (a run that left requests waiting is not as good as its latency looks), or why it was refused.
fn cell(m: &Result<SweepMetrics, String>, metric: &str) -> (String, String) {
    match m {
        Ok(m) => {
            let mut text = tick(metric_value(m, metric));
            let mut notes = Vec::new();
            if m.unfinished > 0 && metric != "unfinished" {
                // Requests still running or waiting when the run stopped: normal in a healthy run
                // (the last arrivals), a sign of a queue only when it is large.
                notes.push(format!("{} in flight at the end", tick(f64::from(m.unfinished))));
            }
            if m.rejected > 0 && metric != "rejected" {
                notes.push(format!("{} rejected", m.rejected));
            }
            if !notes.is_empty() {
                text = format!("{text} ({})", notes.join(", "));
            }
            let title = format!(
                "KV utilisation {:.1}% · TTFT p95 {} ms · TPOT p95 {} ms · {} preemptions · {} output tokens/s · {} unfinished · {} rejected",
                m.kv_utilization * 100.0,
                tick(m.ttft_p95_ms),
                tick(m.tpot_p95_ms),
                m.preemptions,
                tick(m.output_tokens_per_s),
                m.unfinished,
                m.rejected
            );
            (text, title)
        }
        Err(e) => ("refused".into(), crate::session::advice::lab_words(e)),
    }
}

/// The points as a table: the knob's value, then each allocator's metric (every figure of the
/// run in the cell's tooltip).
fn render_table(job: Option<&SweepJob>, metric: &str) {
    let Some(table) = dom::by_id::<Element>("sweep-table") else { return };
    let Some(job) = job else {
        dom::replace_children(&table, std::iter::empty::<dom::Node>());
        let _ = table.set_attribute("hidden", "");
        return;
    };
    let _ = table.remove_attribute("hidden");
    let head = dom::node("tr").children(
        [label_of(KNOBS, &job.knob.path()), "contiguous", "paged"]
            .into_iter()
            .map(|h| dom::node("th").attr("scope", "col").text(h)),
    );
    let caption = dom::node("caption").text(label_of(METRICS, metric));
    let rows = job.points().into_iter().map(|(v, runs)| {
        let cells = runs.into_iter().map(|m| {
            let (text, title) = cell(m, metric);
            dom::node("td").attr("title", &title).text(&text)
        });
        dom::node("tr").child(dom::node("th").attr("scope", "row").text(&value_text(v))).children(cells)
    });
    dom::replace_children(&table, [caption, dom::node("thead").child(head), dom::node("tbody").children(rows)]);
}
