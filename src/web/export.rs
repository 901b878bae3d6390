//! Exports: the memory map(s) and the charts as PNG (composited with their titles onto one
//! canvas), the series as CSV, the preset as JSON, and copying the share link.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlAnchorElement, HtmlCanvasElement};

use crate::render::series_csv;

use super::app::App;
use super::dom;
use super::messages::Messages;

fn js_err(e: JsValue) -> String {
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// The exports' file names say the setup on screen and the time shown:
/// `kvlab-paged-16-token-blocks-10-gib-kv-llama-3-8b-on-h100-sxm-60.0s-report.json`.
fn file_stem(app: &App) -> String {
    let lab = app.lab();
    format!("{}-{:.1}s", crate::session::title::file_stem(&lab.state), lab.t_us as f64 / 1e6)
}

pub fn export(app: &App, what: &str) -> Result<(), String> {
    let stem = file_stem(app);
    match what {
        "map" => download_url(&format!("{stem}-map.png"), &map_png(app)?),
        "chart" => download_url(&format!("{stem}-chart.png"), &chart_png(app)?),
        "csv" => download_text(&format!("{stem}-series.csv"), "text/csv", &csv(app)),
        "report" => download_text(&format!("{stem}-report.json"), "application/json", &report_json(app)),
        // The Sweep panel's files: sweeps and searches run in the full module.
        "sweep-csv" | "sweep-json" | "search-json" if !super::full_lab::FULL => Err("no sweep has run yet".into()),
        "sweep-csv" => match app.panel().job.as_ref() {
            Some(job) => download_text(&job_file(&job.setup, "sweep", "csv"), "text/csv", &job.csv()),
            None => Err("no sweep has run yet".into()),
        },
        "sweep-json" => match app.panel().job.as_ref() {
            Some(job) => {
                download_text(&job_file(&job.setup, "sweep", "json"), "application/json", &pretty(&job.results_json()))
            }
            None => Err("no sweep has run yet".into()),
        },
        "search-json" => match app.panel().search.as_ref() {
            Some(s) => {
                let doc = crate::session::kv_search::results_json(s);
                download_text(&job_file(&s.setup, "kv-search", "json"), "application/json", &pretty(&doc))
            }
            None => Err("no search has run yet".into()),
        },
        _ => Err(format!("unknown export {what}")),
    }
}

/// A sweep's or a search's file name, after the setup it ran on (which may differ from the one
/// on screen since).
fn job_file(setup: &serde_json::Value, what: &str, ext: &str) -> String {
    // Read as every preset is (`preset_dto_from_value`): no second deserializer in the bundle.
    let stem = crate::formats::preset::preset_dto_from_value(setup).map_or_else(
        |_| "kvlab".to_string(),
        |preset| crate::session::title::file_stem(&crate::session::url_state::LabState::new(preset)),
    );
    format!("{stem}-{what}.{ext}")
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Every run's report at the time shown with the setup that made it (`kvlab/report@1`,
/// docs/REPORT.md): the report's fields, or `reports` (contiguous, paged) in compare mode.
pub fn report_json(app: &App) -> String {
    let lab = app.lab();
    let reports: Vec<_> = lab.runs.iter().map(|r| r.report()).collect();
    let title = crate::session::title::describe(&lab.state);
    let at_s = lab.t_us as f64 / 1e6;
    pretty(&crate::formats::report::exported_report(&lab.state.preset, &title, at_s, &reports))
}

pub fn csv(app: &App) -> String {
    let lab = app.lab();
    let runs: Vec<(&str, &[crate::engine::StepPoint])> = lab.runs.iter().map(|r| (r.label, r.series())).collect();
    series_csv(&runs)
}

/// Draws `parts` (title, canvas) stacked or side by side on one white canvas → PNG data URL.
fn composite(parts: &[(String, HtmlCanvasElement)], side_by_side: bool) -> Result<String, String> {
    let doc = dom::document();
    let out: HtmlCanvasElement = doc.create_element("canvas").map_err(js_err)?.dyn_into().map_err(|_| "no canvas")?;
    let dpr = dom::device_pixel_ratio();
    let pad = (16.0 * dpr).round();
    let title_h = (26.0 * dpr).round();
    let sizes: Vec<(f64, f64)> = parts.iter().map(|(_, c)| (f64::from(c.width()), f64::from(c.height()))).collect();
    let (w, h) = if side_by_side {
        (
            sizes.iter().map(|s| s.0 + pad).sum::<f64>() + pad,
            sizes.iter().map(|s| s.1).fold(0.0, f64::max) + title_h + 2.0 * pad,
        )
    } else {
        (
            sizes.iter().map(|s| s.0).fold(0.0, f64::max) + 2.0 * pad,
            sizes.iter().map(|s| s.1 + title_h + pad).sum::<f64>() + pad,
        )
    };
    out.set_width(w as u32);
    out.set_height(h as u32);
    let ctx: CanvasRenderingContext2d =
        out.get_context("2d").map_err(js_err)?.ok_or("no 2d context")?.dyn_into().map_err(|_| "no 2d context")?;
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, w, h);
    ctx.set_fill_style_str("#1e232e");
    ctx.set_font(&format!("600 {}px system-ui, sans-serif", (13.0 * dpr).round()));
    let (mut x, mut y) = (pad, pad);
    for ((title, canvas), (cw, ch)) in parts.iter().zip(&sizes) {
        let _ = ctx.fill_text(title, x, y + title_h * 0.7);
        ctx.draw_image_with_html_canvas_element(canvas, x, y + title_h).map_err(js_err)?;
        if side_by_side {
            x += cw + pad;
        } else {
            y += ch + title_h + pad;
        }
    }
    out.to_data_url_with_type("image/png").map_err(js_err)
}

pub fn map_png(app: &App) -> Result<String, String> {
    let lab = app.lab();
    let view = app.view.borrow();
    let t = lab.t_us as f64 / 1e6;
    let parts: Vec<(String, HtmlCanvasElement)> = lab
        .panels()
        .iter()
        .zip(&view.maps)
        .map(|(p, m)| (format!("{} · t = {t:.1} s", p.title()), m.canvas.clone()))
        .collect();
    composite(&parts, parts.len() > 1)
}

pub fn chart_png(app: &App) -> Result<String, String> {
    let view = app.view.borrow();
    composite(
        &[
            ("KV memory: allocated vs holding tokens".to_string(), view.kv_chart.clone()),
            ("Scheduler queues".to_string(), view.queue_chart.clone()),
        ],
        false,
    )
}

pub fn download_url(name: &str, url: &str) -> Result<(), String> {
    let a: HtmlAnchorElement =
        dom::document().create_element("a").map_err(js_err)?.dyn_into().map_err(|_| "no anchor")?;
    a.set_href(url);
    a.set_download(name);
    let _ = a.style().set_property("display", "none");
    let body = dom::document().body().ok_or("no body")?;
    body.append_child(&a).map_err(js_err)?;
    a.click();
    a.remove();
    Ok(())
}

pub fn download_text(name: &str, mime: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts).map_err(js_err)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(js_err)?;
    let r = download_url(name, &url);
    let _ = web_sys::Url::revoke_object_url(&url);
    r
}

/// Copies `text` to the clipboard and says so on the button (`done`, then back to its label);
/// if the browser refuses, `text` appears in a message (`what` says what it is) to copy by hand.
pub fn copy_text(messages: &Messages, text: &str, button_id: &str, done: &'static str, what: &'static str) {
    let clipboard = dom::window().navigator().clipboard();
    let promise = clipboard.write_text(text);
    let id = button_id.to_string();
    let ok = Closure::<dyn FnMut(JsValue)>::new(move |_: JsValue| {
        if let Some(btn) = dom::by_id::<web_sys::HtmlElement>(&id) {
            let label = btn.text_content().unwrap_or_default();
            if label == done {
                return;
            }
            btn.set_text_content(Some(done));
            let b = btn.clone();
            let reset = Closure::once_into_js(move || b.set_text_content(Some(&label)));
            let _ = dom::window().set_timeout_with_callback_and_timeout_and_arguments_0(reset.unchecked_ref(), 2000);
        }
    });
    let copy = text.to_string();
    let messages = messages.clone();
    let fail = Closure::<dyn FnMut(JsValue)>::new(move |_: JsValue| {
        messages.error("share", &format!("Copy {what}: {copy}"));
    });
    let _ = promise.then2(&ok, &fail);
    ok.forget();
    fail.forget();
}

/// An `<iframe>` snippet that embeds the lab as it is now (`?embed=1` plus the state in the
/// fragment), sized for a docs page (docs/EMBED.md).
pub fn embed_snippet(share_url: &str) -> String {
    let (base, fragment) = share_url.split_once('#').unwrap_or((share_url, ""));
    let (path, query) = base.split_once('?').unwrap_or((base, ""));
    let keep: Vec<&str> = query.split('&').filter(|p| !p.is_empty() && !p.starts_with("embed=")).collect();
    let query = std::iter::once("embed=1").chain(keep).collect::<Vec<_>>().join("&");
    let src = format!("{path}?{query}#{fragment}");
    format!(
        "<iframe src=\"{}\" title=\"kvlab: where the KV cache's GPU memory goes\" width=\"800\" height=\"500\" \
         style=\"border: 0; max-width: 100%;\" loading=\"lazy\"></iframe>",
        src.replace('&', "&amp;").replace('"', "&quot;")
    )
}
