//! End-to-end tests (dist/ in headless Chromium) of traces in the page: a trace file dropped on
//! the lab (the drop zone shows while dragging) or opened in the Load dialog is read with a
//! progress bar and replayed, and the page says how many requests it read; a malformed trace
//! shows its line in view and changes nothing; a lab holding a trace from a file writes no
//! multi-megabyte link. A big trace (600,000 requests, written by the test) runs in the
//! long-run Web Worker: its progress bar shows, Cancel leaves the lab as it was, the page
//! answers a click while the worker runs, and a finished run shows its figures, its chart over
//! the whole span and a 60 s window to replay in the lab. The presets fitted from public traces
//! run in the page as natively, and mission 10 (code traffic) scores 0 stars broken, 0 with more
//! memory and 3 with chunked prefill.
//!
//! `KVLAB_DAY_TRACE=path` (an Azure-format day from `scripts/day-trace.py`) adds the timing of a
//! whole day in the worker, measured in the page (`day_in_the_worker`, ignored by default).
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use std::path::PathBuf;
use std::time::Duration;

use common_e2e::{browser, js, open, require_dist, save_screenshot, serve, wait_for};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

/// A trace in kvlab's own CSV, `rows` requests at `rate` a second, deterministic.
fn kvlab_csv(rows: usize, rate: f64) -> String {
    let mut out = String::from("arrival_s,prompt_tokens,output_tokens\n");
    for i in 0..rows {
        let p = 32 + (i * 7919) % 1200;
        let o = 4 + (i * 104_729) % 200;
        out.push_str(&format!("{:.6},{p},{o}\n", i as f64 / rate));
    }
    out
}

/// Azure's `TIMESTAMP,ContextTokens,GeneratedTokens` (one day's timestamps) as kvlab CSV.
fn azure_to_kvlab(text: &str) -> String {
    let secs = |ts: &str| -> f64 {
        let clock = ts.split(' ').nth(1).unwrap_or("0:0:0");
        let clock = clock.split('+').next().unwrap();
        let mut parts = clock.split(':').map(|p| p.parse::<f64>().unwrap());
        let (h, m, s) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        h * 3600.0 + m * 60.0 + s
    };
    let mut rows: Vec<(f64, &str, &str)> = Vec::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() == 3 {
            rows.push((secs(cols[0]), cols[1], cols[2]));
        }
    }
    let t0 = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let mut out = String::from("arrival_s,prompt_tokens,output_tokens\n");
    for (t, p, o) in rows {
        out.push_str(&format!("{:.6},{p},{o}\n", t - t0));
    }
    out
}

/// The big trace's requests: a few seconds of work in the worker, so a click lands while it runs.
const BIG: usize = 600_000;

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvlab-e2e-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Drops a file named `name` holding `text` on the lab, as a drag from the desktop does.
async fn drop_file(c: &Client, name: &str, text: &str) {
    let script = "const dt = new DataTransfer(); dt.items.add(new File([arguments[1]], arguments[0])); \
        const ev = (k) => new DragEvent(k, { dataTransfer: dt, bubbles: true, cancelable: true }); \
        document.getElementById('maps').dispatchEvent(ev('dragenter')); \
        document.getElementById('maps').dispatchEvent(ev('drop')); return null";
    c.execute(script, vec![json!(name), json!(text)]).await.expect("drop a file");
}

/// Opens `path` with the Load dialog's "Open a file…".
async fn open_in_dialog(c: &Client, path: &std::path::Path) {
    common_e2e::open_load_dialog(c).await;
    let input = c.find(Locator::Id("load-file")).await.unwrap();
    input.send_keys(&path.display().to_string()).await.expect("choose the file");
}

async fn text_of(c: &Client, id: &str) -> String {
    let v = js(c, &format!("const e = document.getElementById('{id}'); return e.hidden ? '' : e.textContent")).await;
    v.as_str().unwrap_or_default().to_string()
}

async fn state(c: &Client) -> Value {
    js(c, "return JSON.stringify(kvlab.state())").await
}

/// Waits up to `secs` for `condition`.
async fn wait_long(c: &Client, condition: &str, what: &str, secs: u64) {
    for _ in 0..secs * 10 {
        if js(c, &format!("return !!({condition})")).await == json!(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body = js(c, "return document.body.innerText.slice(0, 800)").await;
    panic!("timed out waiting for {what}; page says: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_file_loads_by_drop_and_by_the_dialog() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;

    // The drop zone shows while a file is dragged over the lab.
    c.execute(
        "const dt = new DataTransfer(); dt.items.add(new File(['x'], 'x.csv')); \
         document.getElementById('maps').dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true, cancelable: true })); return null",
        vec![],
    )
    .await
    .unwrap();
    assert_eq!(js(c, "return document.getElementById('drop-zone').hidden").await, json!(false));
    save_screenshot(c, "trace-drop-1400x900.png").await;

    let azure = std::fs::read_to_string(common_e2e::repo_path("../shared/traces/azure_llm_2023_code.head2000.csv"))
        .expect("../shared/traces/azure_llm_2023_code.head2000.csv");
    let trace = azure_to_kvlab(&azure);
    drop_file(c, "azure-code.csv", &trace).await;
    wait_for(c, "document.getElementById('trace-status').textContent.includes('requests')", "the trace to load").await;
    assert_eq!(js(c, "return document.getElementById('drop-zone').hidden").await, json!(true));
    let status = text_of(c, "trace-status").await;
    assert!(status.contains("2,000 requests"), "{status}");
    let s = js(c, "return kvlab.state().preset").await;
    assert_eq!(s["workload"]["arrival"]["kind"], json!("trace"));
    let span = trace.lines().skip(1).map(|l| l.split(',').next().unwrap().parse::<f64>().unwrap()).fold(0.0, f64::max);
    assert_eq!(s["duration_s"].as_f64().unwrap(), span.floor() + 1.0);
    // The first step names the run's length, not a fixed minute.
    let first = js(c, "return document.getElementById('first-step-duration').textContent").await;
    assert_eq!(first, json!(format!("{} s", span.floor() + 1.0)), "the first step's length");
    // The whole trace replays: every request arrives by the end.
    js(c, "kvlab.runToEnd(); return null").await;
    assert_eq!(js(c, "return kvlab.report().requests.arrived").await, json!(2000));
    // No multi-megabyte link: the address bar holds no state and Copy link is off, saying why.
    assert_eq!(js(c, "return location.hash.includes('lab=')").await, json!(false));
    assert_eq!(js(c, "return document.getElementById('share-btn').disabled").await, json!(true));
    let why = js(c, "return document.getElementById('share-btn').title").await;
    assert!(why.as_str().unwrap().contains("too big for a link"), "{why}");
    save_screenshot(c, "trace-loaded-1400x900.png").await;

    // The same through the Load dialog's file input; a preset afterwards turns links back on.
    let small = kvlab_csv(300, 5.0);
    open_in_dialog(c, &temp_file("small.csv", &small)).await;
    wait_for(c, "document.getElementById('trace-status').textContent.includes('300 requests')", "the dialog's trace")
        .await;
    assert_eq!(js(c, "return document.getElementById('load-dialog').open").await, json!(false));
    assert_eq!(js(c, "return kvlab.state().preset.duration_s").await.as_f64(), Some(60.0));
    js(c, "kvlab.loadPresetId('paged-default'); return null").await;
    assert_eq!(js(c, "return document.getElementById('share-btn').disabled").await, json!(false));
    assert_eq!(js(c, "return location.hash.includes('lab=')").await, json!(true));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_trace_shows_its_line_and_changes_nothing() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    let before = state(c).await;
    let mut bad = kvlab_csv(30, 2.0);
    bad = bad
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 16 { "7.5,abc,20".to_string() } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");

    drop_file(c, "bad.csv", &bad).await;
    wait_for(c, "!document.getElementById('trace-error').hidden", "the error by the drop").await;
    let e = text_of(c, "trace-error").await;
    assert!(e.contains("bad.csv") && e.contains("line 17") && e.contains("Nothing in the lab changed"), "{e}");
    assert_eq!(state(c).await, before);
    let in_view = js(c, "const r = document.getElementById('trace-error').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight").await;
    assert_eq!(in_view, json!(true), "the error is in view");
    save_screenshot(c, "trace-error-1400x900.png").await;

    // In the dialog, the error shows in the dialog, which stays open.
    open_in_dialog(c, &temp_file("bad.csv", &bad)).await;
    wait_for(c, "!document.getElementById('load-error').hidden", "the dialog's error").await;
    let e = text_of(c, "load-error").await;
    assert!(e.contains("line 17"), "{e}");
    assert_eq!(js(c, "return document.getElementById('load-dialog').open").await, json!(true));
    assert_eq!(state(c).await, before);
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_trace_runs_in_the_worker_with_progress_cancel_and_results() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    let before = state(c).await;
    let big = kvlab_csv(BIG, 11.6);
    let in_window = big
        .lines()
        .skip(1)
        .filter(|l| (1000.0..1060.0).contains(&l.split(',').next().unwrap().parse::<f64>().unwrap()))
        .count();
    let path = temp_file("big.csv", &big);

    // Cancel: the worker stops, the lab is as it was.
    open_in_dialog(c, &path).await;
    wait_for(c, "!document.getElementById('run-progress').hidden", "the run's progress bar").await;
    c.find(Locator::Id("run-cancel")).await.unwrap().click().await.unwrap();
    assert_eq!(js(c, "return document.getElementById('run-progress').hidden").await, json!(true));
    assert!(text_of(c, "trace-status").await.contains("Cancelled"));
    assert_eq!(state(c).await, before);

    // Again, to the end; the page answers a click on another control meanwhile.
    open_in_dialog(c, &path).await;
    wait_long(c, "document.getElementById('run-progress-bar').value > 0", "progress from the worker", 60).await;
    save_screenshot(c, "day-run-progress-1400x900.png").await;
    c.find(Locator::Id("compare-toggle")).await.unwrap().click().await.unwrap();
    let (compare, running) = {
        let v = js(c, "return [kvlab.state().compare, !document.getElementById('run-progress').hidden]").await;
        (v[0].clone(), v[1].clone())
    };
    assert_eq!(compare, json!(true), "the click was handled while the worker ran");
    assert_eq!(running, json!(true), "the worker was still running at the click");
    wait_long(c, "!document.getElementById('run-results').hidden", "the run's results", 300).await;
    let status = text_of(c, "trace-status").await;
    assert!(status.contains("600,000 requests"), "{status}");
    let figures = text_of(c, "run-figures").await;
    assert!(figures.contains("Requests arrived") && figures.contains("600,000"), "{figures}");
    let wall = js(c, "return +document.getElementById('run-figures').dataset.wallMs").await;
    eprintln!("{BIG} requests in the worker: {wall} ms ({status})");
    // The chart is drawn over the whole span.
    let inked = js(c, "const k = document.getElementById('run-chart'); const d = k.getContext('2d').getImageData(0, 0, k.width, k.height).data; let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] !== d[i+1] || d[i+1] !== d[i+2]) n++; return n").await;
    assert!(inked.as_f64().unwrap() > 1000.0, "the chart has colour: {inked}");
    c.execute("document.getElementById('trace-panel').scrollIntoView(); return null", vec![]).await.unwrap();
    save_screenshot(c, "day-run-done-1400x900.png").await;

    // Replay a 60 s window in the lab.
    js(c, "document.getElementById('run-window-start').value = '1000'; return null").await;
    c.find(Locator::Id("run-window")).await.unwrap().click().await.unwrap();
    wait_for(c, "document.getElementById('trace-status').textContent.includes('replays 1000')", "the window").await;
    let p = js(c, "return kvlab.state().preset").await;
    assert_eq!(p["duration_s"].as_f64(), Some(60.0));
    js(c, "kvlab.runToEnd(); return null").await;
    assert_eq!(js(c, "return kvlab.report().requests.arrived").await, json!(in_window));
    b.close().await;
}

/// A whole day (`KVLAB_DAY_TRACE`, Azure format from scripts/day-trace.py) in the worker, on
/// `KVLAB_DAY_PRESET` (default `paged-default`), with prefix caching if `KVLAB_DAY_PREFIX_CACHING`
/// is set; a screenshot of its progress on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs KVLAB_DAY_TRACE and a few minutes"]
async fn day_in_the_worker() {
    let day = std::env::var("KVLAB_DAY_TRACE").expect("KVLAB_DAY_TRACE=path to scripts/day-trace.py's output");
    let preset = std::env::var("KVLAB_DAY_PRESET").unwrap_or_else(|_| "paged-default".into());
    let text = std::fs::read_to_string(&day).unwrap();
    let path = if text.starts_with("TIMESTAMP") { temp_file("day.csv", &azure_to_kvlab(&text)) } else { day.into() };
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset={preset}&autoplay=0")).await;
    if std::env::var_os("KVLAB_DAY_PREFIX_CACHING").is_some() {
        js(c, "kvlab.setField('allocator.prefix_caching', 'true'); return null").await;
    }
    open_in_dialog(c, &path).await;
    wait_long(c, "!document.getElementById('run-progress').hidden", "the worker's progress", 60).await;
    wait_long(c, "document.getElementById('run-progress-bar').value > 0.2", "a fifth of the day", 600).await;
    save_screenshot(c, "day-run-progress-1400x900.png").await;
    wait_long(
        c,
        "!document.getElementById('run-results').hidden || !document.getElementById('trace-error').hidden",
        "the day",
        600,
    )
    .await;
    let status = text_of(c, "trace-status").await;
    let err = text_of(c, "trace-error").await;
    let wall = js(c, "return +document.getElementById('run-figures').dataset.wallMs").await;
    eprintln!("day in the worker: {wall} ms; {status} {err}");
    save_screenshot(c, "day-run-day-1400x900.png").await;
    assert!(err.is_empty(), "{err}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fitted_presets_and_the_code_traffic_mission_play_in_the_page() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    // A preset fitted from a public trace runs in the page as it does natively.
    for id in ["azure-conversation", "azure-code", "mooncake-conversation"] {
        open(c, &format!("{base}?preset={id}&autoplay=0")).await;
        js(c, "kvlab.runToEnd(); return null").await;
        assert_eq!(common_e2e::report(c).await, common_e2e::native_report(id), "{id}");
        // The KV slider ends where the GPU is full: about 63 GiB beside Llama-3-8B on an H100.
        let max = js(c, "return document.querySelector(\"input[type=range][data-path='kv_memory_gib']\").max").await;
        assert_eq!(max, json!("63"), "{id}");
    }
    save_screenshot(c, "preset-mooncake-conversation-1400x900.png").await;

    // Mission 10: more memory does not help code traffic; chunked prefill does.
    open(c, &format!("{base}?mission=m10-code-traffic&autoplay=0")).await;
    js(c, "kvlab.runToEnd(); return null").await;
    wait_for(c, "kvlab.missionScore().final === true", "the broken run's score").await;
    assert_eq!(js(c, "return kvlab.missionScore().stars").await, json!(0));
    save_screenshot(c, "mission-10-broken-1400x900.png").await;
    js(c, "kvlab.setField('kv_memory_gib', '20'); kvlab.runToEnd(); return null").await;
    wait_for(c, "kvlab.missionScore().final === true", "the 20 GiB run's score").await;
    assert_eq!(js(c, "return kvlab.missionScore().stars").await, json!(0), "20 GiB earns nothing");
    js(
        c,
        "kvlab.setField('kv_memory_gib', '10'); kvlab.setField('scheduler.chunked_prefill', 'true'); \
         kvlab.setField('scheduler.max_num_batched_tokens', '1024'); kvlab.runToEnd(); return null",
    )
    .await;
    wait_for(c, "kvlab.missionScore().final === true", "the fixed run's score").await;
    assert_eq!(js(c, "return kvlab.missionScore().stars").await, json!(3), "{}", js(c, "return kvlab.errors()").await);
    save_screenshot(c, "mission-10-fixed-1400x900.png").await;
    b.close().await;
}
