//! Long runs in a Web Worker: a run expected to bring more than
//! `trace_file::MAIN_THREAD_MAX_REQUESTS` requests (a day of traffic) goes to `www/worker.js`
//! instead of the interactive lab, so the page stays responsive. The Trace panel (`#trace-panel`)
//! shows its progress with a Cancel button (which terminates the worker; the lab never changed),
//! then the report's figures, the allocated-vs-live chart over the whole span, exports of the
//! report (JSON) and the series (CSV), and "Replay a 60 s window in the lab", which the worker
//! cuts from its trace. The worker's side is `worker.rs`.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, HtmlCanvasElement, HtmlElement, HtmlInputElement, MessageEvent, Worker};

use crate::engine::plan::group_thousands;
use crate::engine::StepPoint;
use crate::formats::preset::PresetDto;

use crate::session::command::Command;

use super::app::{App, Input};
use super::chart::{self, ChartRun};
use super::dom;

/// The replayed window's length, s.
pub const WINDOW_S: f64 = 60.0;

/// A finished run, as the worker handed it back.
struct Results {
    report_json: String,
    csv: String,
    points: Vec<StepPoint>,
    capacity: u64,
    duration_s: f64,
}

#[derive(Default)]
struct State {
    worker: Option<Worker>,
    /// The preset the run replays (its trace left out), for the window it cuts.
    base: Option<PresetDto>,
    summary: String,
    results: Option<Results>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn el(id: &str) -> Option<HtmlElement> {
    dom::by_id::<HtmlElement>(id)
}

fn show(id: &str, on: bool) {
    if let Some(e) = el(id) {
        dom::set_hidden(&e, !on);
    }
}

fn text(id: &str, t: &str) {
    if let Some(e) = el(id) {
        dom::set_text(&e, t);
    }
}

/// The panel's status line (and its error line, hidden when `error` is None).
pub fn status(line: &str, error: Option<&str>) {
    show("trace-panel", true);
    text("trace-status", line);
    text("trace-error", error.unwrap_or(""));
    show("trace-error", error.is_some());
}

/// Runs `base` in the worker, replaying the trace `trace` (empty: `base` as it is). A run
/// already going is cancelled first.
pub fn start(app: &Rc<App>, base: PresetDto, trace: String, what: &str) {
    cancel(None);
    let opts = web_sys::WorkerOptions::new();
    opts.set_type(web_sys::WorkerType::Module);
    let worker = match Worker::new_with_options("worker.js", &opts) {
        Ok(w) => w,
        Err(e) => {
            status("", Some(&format!("The long run could not start a worker ({e:?}). The lab keeps its setup.")));
            return;
        }
    };
    let a = app.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| on_message(&a, &e.data()));
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_error = Closure::<dyn FnMut(Event)>::new(move |e: Event| {
        let why = e.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).unwrap_or_default();
        finish_worker();
        status("", Some(&format!("The long run stopped: {why}. The lab keeps its setup.")));
    });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    let msg = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| {
        let _ = js_sys::Reflect::set(&msg, &k.into(), v);
    };
    set("kind", &"run".into());
    set("preset", &serde_json::to_string(&base).unwrap_or_default().into());
    set("text", &trace.into());
    let _ = worker.post_message(&msg);
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.worker = Some(worker);
        s.base = Some(base);
        s.summary = what.to_string();
    });
    status(&format!("Reading {what} in a background worker…"), None);
    progress(0.0, "starting");
    show("run-progress", true);
    show("run-results", false);
}

/// Whether a run is going.
pub fn running() -> bool {
    STATE.with(|s| s.borrow().worker.is_some() && s.borrow().results.is_none())
}

/// Stops the worker (if any); with a line, says so.
pub fn cancel(line: Option<&str>) {
    let had = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.results = None;
        s.worker.take().inspect(|w| w.terminate()).is_some()
    });
    show("run-progress", false);
    if let (true, Some(l)) = (had, line) {
        status(l, None);
    }
}

fn finish_worker() {
    STATE.with(|s| s.borrow_mut().worker.take().inspect(|w| w.terminate()));
    show("run-progress", false);
}

fn progress(fraction: f64, label: &str) {
    if let Some(bar) = dom::by_id::<web_sys::HtmlProgressElement>("run-progress-bar") {
        bar.set_value(fraction.clamp(0.0, 1.0));
    }
    text("run-progress-label", label);
}

fn field(v: &JsValue, k: &str) -> JsValue {
    js_sys::Reflect::get(v, &k.into()).unwrap_or(JsValue::UNDEFINED)
}

fn num(v: &JsValue, k: &str) -> f64 {
    field(v, k).as_f64().unwrap_or(0.0)
}

fn on_message(app: &Rc<App>, data: &JsValue) {
    let kind = field(data, "kind").as_string().unwrap_or_default();
    match kind.as_str() {
        "summary" => {
            let t = field(data, "text").as_string().unwrap_or_default();
            STATE.with(|s| s.borrow_mut().summary = t.clone());
            status(&format!("Running in a background worker: {t}. The lab stays usable meanwhile."), None);
        }
        "progress" => {
            let (now, dur) = (num(data, "now_s"), num(data, "duration_s").max(1e-9));
            let label = format!(
                "{} of {} simulated s · {} of {} requests",
                group_thousands(now as u64),
                group_thousands(dur.ceil() as u64),
                group_thousands(num(data, "arrived") as u64),
                group_thousands(num(data, "total") as u64)
            );
            progress(now / dur, &label);
        }
        "done" => done(data),
        "window" => replay_window(app, num(data, "start_s"), &field(data, "csv").as_string().unwrap_or_default()),
        "error" => {
            finish_worker();
            let m = field(data, "message").as_string().unwrap_or_default();
            status("", Some(&format!("Not run: {m}. The lab keeps its setup.")));
        }
        _ => {}
    }
}

fn done(data: &JsValue) {
    show("run-progress", false);
    let chart: Vec<f64> =
        field(data, "chart").dyn_into::<js_sys::Float64Array>().map(|a| a.to_vec()).unwrap_or_default();
    let points: Vec<StepPoint> = chart
        .chunks_exact(7)
        .map(|c| StepPoint {
            t_us: c[0] as u64,
            allocated_tokens: c[1] as u64,
            live_tokens: c[2] as u64,
            running: c[3] as u32,
            waiting: c[4] as u32,
            swapped: c[5] as u32,
            preemptions: c[6] as u32,
        })
        .collect();
    let report_json = field(data, "report").as_string().unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(&report_json).unwrap_or_default();
    let duration_s = report["sim_time_s"].as_f64().unwrap_or(0.0);
    let wall_s = num(data, "wall_ms") / 1e3;
    let summary = STATE.with(|s| s.borrow().summary.clone());
    status(&format!("Done: {summary}, simulated in {wall_s:.1} s in a background worker."), None);
    if let Some(root) = el("run-figures") {
        root.set_attribute("data-wall-ms", &format!("{:.0}", num(data, "wall_ms"))).ok();
        dom::replace_children(
            &root,
            figures(&report)
                .into_iter()
                .map(|(k, v)| dom::node("div").child(dom::node("dt").text(&k)).child(dom::node("dd").text(&v))),
        );
    }
    if let Some(input) = dom::by_id::<HtmlInputElement>("run-window-start") {
        input.set_value(&format!("{}", num(data, "busiest_s")));
        input.set_max(&format!("{}", (duration_s - 1.0).max(0.0)));
    }
    show("run-results", true);
    let results = Results {
        report_json,
        csv: field(data, "csv").as_string().unwrap_or_default(),
        points,
        capacity: num(data, "capacity") as u64,
        duration_s,
    };
    STATE.with(|s| s.borrow_mut().results = Some(results));
    draw();
}

/// The report's headline figures, as the panel lists them.
fn figures(r: &serde_json::Value) -> Vec<(String, String)> {
    let n = |p: &str| r.pointer(p).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let count = |p: &str| group_thousands(n(p) as u64);
    vec![
        ("Requests arrived".into(), count("/requests/arrived")),
        ("Finished".into(), count("/requests/finished")),
        ("Rejected".into(), count("/requests/rejected")),
        ("TTFT p50 / p95".into(), format!("{} / {}", ms(n("/latency_ms/ttft_p50")), ms(n("/latency_ms/ttft_p95")))),
        ("TPOT p50 / p95".into(), format!("{} / {}", ms(n("/latency_ms/tpot_p50")), ms(n("/latency_ms/tpot_p95")))),
        ("Output tokens/s".into(), format!("{:.0}", n("/output_tokens_per_s"))),
        ("Preemptions".into(), count("/preemptions")),
        ("KV allocated (mean)".into(), format!("{:.0}%", 100.0 * n("/kv/allocated_fraction_mean"))),
        ("KV live (mean)".into(), format!("{:.0}%", 100.0 * n("/kv/live_fraction_mean"))),
        ("Steps".into(), count("/steps")),
    ]
}

/// "42.1 ms", "870 ms", "12.3 s", "1,047 s".
fn ms(v: f64) -> String {
    match v {
        v if v < 100.0 => format!("{v:.1} ms"),
        v if v < 10_000.0 => format!("{v:.0} ms"),
        v if v < 100_000.0 => format!("{:.1} s", v / 1e3),
        v => format!("{} s", group_thousands((v / 1e3).round() as u64)),
    }
}

/// Draws the finished run's chart (again, after a resize or a theme change).
pub fn draw() {
    let Some(canvas) = dom::by_id::<HtmlCanvasElement>("run-chart") else { return };
    STATE.with(|s| {
        let s = s.borrow();
        let Some(r) = s.results.as_ref() else { return };
        let runs = [ChartRun { series: &r.points, capacity_tokens: r.capacity, dashed: false }];
        let theme = chart::ChartTheme::of(super::theme::is_dark());
        if let Err(e) = chart::draw_kv(&canvas, &runs, r.duration_s.max(1.0), r.duration_s, theme) {
            web_sys::console::warn_1(&e.into());
        }
    });
}

/// Asks the worker for the window from the start field.
fn ask_window() {
    let start = dom::by_id::<HtmlInputElement>("run-window-start").map(|i| i.value_as_number()).unwrap_or(0.0);
    let start = if start.is_finite() { start.max(0.0) } else { 0.0 };
    STATE.with(|s| {
        if let Some(w) = s.borrow().worker.as_ref() {
            let msg = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&msg, &"kind".into(), &"window".into());
            let _ = js_sys::Reflect::set(&msg, &"start_s".into(), &start.into());
            let _ = js_sys::Reflect::set(&msg, &"len_s".into(), &WINDOW_S.into());
            let _ = w.post_message(&msg);
        }
    });
}

fn replay_window(app: &Rc<App>, start_s: f64, csv: &str) {
    let Some(base) = STATE.with(|s| s.borrow().base.clone()) else { return };
    if csv.lines().count() <= 1 {
        status(&format!("No request arrives in the 60 s from {start_s} s; choose another start."), None);
        return;
    }
    let preset = crate::session::trace_file::window_preset(&base, csv, WINDOW_S);
    let preset = serde_json::to_value(&preset).unwrap_or_default();
    let result = app.dispatch(Command::Load { preset }, Input::Page);
    if result.is_ok() {
        let end = start_s + WINDOW_S;
        status(&format!("The lab replays {start_s}–{end} s of the trace: press Play to watch the map."), None);
    }
}

/// Wires the panel's buttons.
pub fn wire(app: &Rc<App>) {
    let on = |id: &str, f: Box<dyn Fn()>| {
        if let Some(b) = el(id) {
            dom::listen::<Event>(&b, "click", move |_| f());
        }
    };
    on("run-cancel", Box::new(|| cancel(Some("Cancelled: the lab keeps its previous setup."))));
    on("run-window", Box::new(ask_window));
    on(
        "run-export-report",
        Box::new(|| export(|r| ("kvlab-long-run-report.json", "application/json", &r.report_json))),
    );
    on("run-export-csv", Box::new(|| export(|r| ("kvlab-long-run-series.csv", "text/csv", &r.csv))));
    on(
        "trace-close",
        Box::new(|| {
            cancel(None);
            STATE.with(|s| *s.borrow_mut() = State::default());
            show("trace-panel", false);
        }),
    );
    let _ = app;
}

fn export(pick: impl Fn(&Results) -> (&'static str, &'static str, &String)) {
    STATE.with(|s| {
        if let Some(r) = s.borrow().results.as_ref() {
            let (name, mime, body) = pick(r);
            if let Err(e) = super::export::download_text(name, mime, body) {
                status("", Some(&e));
            }
        }
    });
}
