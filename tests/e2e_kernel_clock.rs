//! End-to-end test of the kernel clock on the page (`clock: "kernels"`, built page in dist/,
//! headless Chromium): the settings form's Step clock, chosen in the first view, hands the page
//! to the full lab, which fetches the GPU's kernel tables (`kernels/<gpu>.json`), says that the
//! figures are the roofline's until they arrive, and then runs on them exactly as the native
//! engine does (the report bit for bit). Where the file cannot be fetched, the lab keeps running
//! on the roofline and says why. Screenshots land in target/screenshots/.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{
    browser, js, numbers_as_floats, open, report, require_dist, save_screenshot, serve, serve_slowly, wait_for,
    wait_full,
};
use serde_json::{json, Value};

/// The native engine's report of the shipped preset `id` with `clock: "kernels"`.
fn native_kernel_report(id: &str) -> Value {
    let mut dto = kvlab::session::presets::dto(id).expect("a shipped preset");
    dto.clock = kvlab::formats::preset::ClockDto::Kernels;
    let config = dto.to_config().expect("runs on the kernel clock");
    assert!(config.runs_on_kernels());
    let mut sim = kvlab::engine::Simulation::new(config).expect("valid config");
    numbers_as_floats(serde_json::to_value(sim.run_to_end()).expect("a report"))
}

/// Chooses `clock` in the settings form, as a reader does (the form applies a field on change).
async fn choose_clock(c: &fantoccini::Client, clock: &str) {
    let script = format!(
        "const s = document.querySelector(\"[data-path='clock']\"); s.value = '{clock}'; \
         s.dispatchEvent(new Event('change', {{ bubbles: true }})); return null"
    );
    js(c, &script).await;
}

/// A trace too big for the page's main thread (50,000 requests), which runs in the long-run
/// worker: 60,000 short requests over 300 s.
fn big_trace() -> String {
    let mut csv = String::from("arrival_s,prompt_tokens,output_tokens\n");
    for i in 0..60_000 {
        csv += &format!("{:.3},{},{}\n", i as f64 / 200.0, 200 + i % 300, 10 + i % 20);
    }
    csv
}

/// Drops the big trace on the lab, as a drag from the desktop does, and waits for the worker's
/// results; returns the Trace panel's status line.
async fn run_big_trace_in_the_worker(c: &fantoccini::Client) -> String {
    let script = "const dt = new DataTransfer(); dt.items.add(new File([arguments[0]], 'big.csv')); \
        const ev = (k) => new DragEvent(k, { dataTransfer: dt, bubbles: true, cancelable: true }); \
        document.getElementById('maps').dispatchEvent(ev('dragenter')); \
        document.getElementById('maps').dispatchEvent(ev('drop')); return null";
    c.execute(script, vec![json!(big_trace())]).await.expect("drop a file");
    for _ in 0..1200 {
        if js(c, "return !document.getElementById('run-results').hidden").await == json!(true) {
            return js(c, "return document.getElementById('trace-status').textContent").await.as_str().unwrap().into();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the worker's run did not finish");
}

const NOTICE: &str = "document.querySelector(\"#messages [data-kind='clock']\")";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_clock_fetches_the_gpus_kernel_tables_says_so_meanwhile_and_then_runs_on_them() {
    // A slow network: the H100's tables take two seconds to arrive.
    let base = serve_slowly(require_dist(), "kernels/h100-sxm.json", std::time::Duration::from_secs(2)).await;
    let b = browser(1400, 1000).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    let field = "return document.querySelector(\"[data-path='clock']\").value";
    assert_eq!(js(c, field).await, json!("roofline"));
    let roofline_line = js(c, "return kvlab.report().clock.line").await;

    choose_clock(c, "kernels").await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.clock === 'kernels'", "the clock set in the full lab").await;
    // Until the tables arrive, the figures are the roofline's, and the page says so.
    wait_for(c, NOTICE, "the notice while the tables are fetched").await;
    let said = js(c, &format!("return {NOTICE}.textContent")).await;
    assert!(said.as_str().is_some_and(|t| t.contains("Fetching the NVIDIA H100") && t.contains("roofline")), "{said}");
    assert_eq!(js(c, "return kvlab.report().clock.line").await, roofline_line);
    save_screenshot(c, "kernel-clock-fetching.png").await;

    // Then the run is built again on the tables; the notice goes.
    wait_for(c, "kvlab.report().clock.line.startsWith('step times from')", "the run on the kernel tables").await;
    wait_for(c, &format!("!{NOTICE}"), "the notice gone").await;
    assert_eq!(js(c, field).await, json!("kernels"));
    js(c, "kvlab.runTo(30); return null").await;
    let row = "[...document.querySelectorAll('#metrics-table tr')].find(r => r.textContent.includes('step times'))";
    let cell = js(c, &format!("const r = {row}; r.scrollIntoView({{block: 'center'}}); return r.textContent")).await;
    assert!(cell.as_str().is_some_and(|t| t.contains("real runs") && t.contains("held-out")), "{cell}");
    save_screenshot(c, "kernel-clock-running.png").await;
    js(c, "document.querySelector(\"[data-path='clock']\").scrollIntoView({block: 'center'}); return null").await;
    save_screenshot(c, "kernel-clock-setting.png").await;
    js(c, "kvlab.runToEnd(); return null").await;
    assert_eq!(report(c).await, native_kernel_report("paged-default"));

    // A GPU without tables is refused beside the GPU control, which keeps the choice; the run
    // on the tables goes on.
    js(
        c,
        "const s = document.querySelector(\"#controls [data-path='gpu']\"); s.value = 'h100-pcie'; \
         s.dispatchEvent(new Event('change', { bubbles: true })); return null",
    )
    .await;
    let held = js(
        c,
        "const el = document.querySelector(\"#controls [data-path='gpu']\"); const id = el.getAttribute('aria-describedby'); \
         const note = id && document.getElementById(id); el.scrollIntoView({block: 'center'}); \
         return { value: el.value, invalid: el.getAttribute('aria-invalid'), reason: note ? note.textContent : null }",
    )
    .await;
    assert_eq!(held["value"], json!("h100-pcie"), "{held}");
    assert_eq!(held["invalid"], json!("true"), "{held}");
    let reason = held["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("no measured kernel tables for the h100-pcie") && reason.contains("roofline"), "{held}");
    assert_eq!(js(c, "return kvlab.state().preset.gpu").await, json!("h100-sxm"));
    save_screenshot(c, "kernel-clock-gpu-refused.png").await;
    js(c, "document.getElementById('discard-btn').click(); return null").await;
    wait_for(
        c,
        "!document.querySelector(\"#controls [data-path='gpu']\").getAttribute('aria-invalid')",
        "the held GPU put back",
    )
    .await;

    // The long-run worker fetches the tables for itself and runs on them: nothing to say.
    let status = run_big_trace_in_the_worker(c).await;
    assert!(status.contains("60,000 requests") && !status.contains("roofline"), "{status}");

    // Back to the roofline: no fetch, no notice.
    choose_clock(c, "roofline").await;
    wait_for(c, "kvlab.state().preset.clock === undefined", "the roofline again").await;
    assert_eq!(js(c, "return kvlab.report().clock.line").await, roofline_line);
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_kernel_tables_the_lab_keeps_the_roofline_and_says_why() {
    // dist/ without its kernels/ folder, as a server missing it serves it.
    let root = common_e2e::dist_without("no-kernels", |_| false);
    let base = serve(root.clone()).await;
    let b = browser(1400, 1000).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    let roofline = report(c).await;
    choose_clock(c, "kernels").await;
    wait_full(c).await;
    wait_for(c, &format!("{NOTICE} && {NOTICE}.textContent.includes('could not be loaded')"), "the failure").await;
    let said = js(c, &format!("return {NOTICE}.textContent")).await;
    let said = said.as_str().unwrap_or_default();
    assert!(said.contains("kernels/h100-sxm.json") && said.contains("404"), "names the file and why: {said}");
    save_screenshot(c, "kernel-clock-fetch-failed.png").await;
    // The lab still runs, on the roofline.
    js(c, "kvlab.runToEnd(); return null").await;
    let got = report(c).await;
    assert_eq!(got["clock"], roofline["clock"]);
    assert_eq!(js(c, "return kvlab.state().preset.clock").await, json!("kernels"), "the choice is kept");
    // So does the long-run worker, whose fetch fails too.
    let status = run_big_trace_in_the_worker(c).await;
    assert!(status.contains("could not be loaded") && status.contains("roofline"), "{status}");
    b.close().await;
    let _ = std::fs::remove_dir_all(&root);
}
