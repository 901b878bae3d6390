//! End-to-end tests of the page's two modules (docs/LAB.md, "Two modules") in the built page
//! (dist/, headless Chromium): a bare page and an embed fetch only the first view's module and
//! run the lab as the native engine does; the reader's intent fetches the full module ahead; the
//! first thing only the full lab does (here the Sweep panel's Run) starts it and keeps the lab
//! where it was; a URL that needs the full
//! lab fetches it alone; and when the full module cannot be fetched, the first view keeps running
//! and says what failed. Screenshots land in target/screenshots/.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{
    browser, js, native_report, open, report, require_dist, save_screenshot, serve, serve_slowly, wait_for, wait_full,
};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

/// The wasm files the page has fetched, by name.
async fn fetched_wasm(c: &Client) -> Value {
    js(
        c,
        "return performance.getEntriesByType('resource').map(e => e.name.split('/').pop()).filter(n => n.endsWith('.wasm')).sort()",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_view_and_the_embed_fetch_only_the_first_module_and_the_sweep_brings_the_rest() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    for url in [format!("{base}?autoplay=0"), format!("{base}?embed=1&autoplay=0")] {
        open(c, &url).await;
        assert_eq!(fetched_wasm(c).await, json!(["kvlab_bg.wasm"]), "{url}");
        assert_eq!(
            js(c, "return [document.documentElement.dataset.module, kvlab.module()]").await,
            json!(["first-view", "first-view"])
        );
        // The first view's engine is the engine: the default preset's report, bit for bit.
        js(c, "kvlab.runToEnd(); return null").await;
        assert_eq!(report(c).await, native_report("contiguous-default"), "{url}");
    }

    // Settings, compare mode and playback stay in the first view.
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    js(c, "kvlab.setField('kv_memory_gib', '12'); kvlab.setCompare(true); kvlab.runTo(20); return null").await;
    assert_eq!(js(c, "return kvlab.module()").await, json!("first-view"));
    let state = js(c, "return kvlab.state()").await;
    assert_eq!(state["preset"]["kv_memory_gib"].as_f64(), Some(12.0));

    // The reader's intent (the focus or the pointer on Run) fetches the full module ahead of
    // the click; the first view keeps the page meanwhile.
    js(c, "document.getElementById('sweep-run').focus(); return null").await;
    wait_for(
        c,
        "performance.getEntriesByType('resource').some(e => e.name.endsWith('kvlab-full_bg.wasm'))",
        "the full module fetched on intent",
    )
    .await;
    assert_eq!(js(c, "return kvlab.module()").await, json!("first-view"));

    // The Sweep panel's Run is the full lab's: it loads, the lab is where it was, the sweep runs.
    js(c, "document.getElementById('sweep-knob').value = 'scheduler.max_num_seqs'; document.getElementById('sweep-values').value = '16,32'; return null").await;
    c.find(Locator::Id("sweep-run")).await.unwrap().click().await.unwrap();
    wait_full(c).await;
    assert_eq!(fetched_wasm(c).await, json!(["kvlab-full_bg.wasm", "kvlab_bg.wasm"]));
    assert_eq!(js(c, "return kvlab.module()").await, json!("full"));
    assert_eq!(js(c, "return kvlab.state()").await, state, "the full lab starts where the first view was");
    assert_eq!(js(c, "return kvlab.now()").await.as_f64(), Some(20.0));
    wait_for(c, "kvlab.sweepResults()?.finished", "the sweep asked for in the first view").await;
    // The panel shows the fields the sweep ran with, as the reader typed them.
    let fields = "return ['sweep-knob', 'sweep-values'].map(id => document.getElementById(id).value)";
    assert_eq!(js(c, fields).await, json!(["scheduler.max_num_seqs", "16,32"]));
    let points = js(c, "return kvlab.sweepResults().points.length").await;
    assert_eq!(points, json!(2), "one point a value");
    assert!(js(c, "return document.getElementById('full-lab-status').hidden").await == json!(true));
    save_screenshot(c, "modules-after-the-sweep.png").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_that_needs_the_full_lab_fetches_only_the_full_module() {
    let base = serve(require_dist()).await;
    let b = browser(1200, 900).await;
    let c = &b.client;
    for url in [format!("{base}?mission=m1-paging&autoplay=0"), format!("{base}?hub=1")] {
        c.goto(&url).await.unwrap();
        wait_full(c).await;
        assert_eq!(fetched_wasm(c).await, json!(["kvlab-full_bg.wasm"]), "{url}");
    }
    // A link whose state plays a mission is one too.
    open(c, &format!("{base}?mission=m1-paging&autoplay=0")).await;
    let link = js(c, "return kvlab.shareUrl()").await.as_str().unwrap().replace("mission=m1-paging&", "");
    assert!(link.contains("#lab="), "{link}");
    c.goto(&link).await.unwrap();
    wait_full(c).await;
    assert_eq!(fetched_wasm(c).await, json!(["kvlab-full_bg.wasm"]), "{link}");
    assert!(js(c, "return kvlab.missionScore()").await.is_object(), "the link plays its mission");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_full_module_the_first_view_keeps_running_and_says_what_failed() {
    // dist/ without the full module, as a server missing a file serves it.
    let root = common_e2e::dist_without("no-full", |name| name == "kvlab-full_bg.wasm");
    let base = serve(root.clone()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;
    c.find(Locator::Id("sweep-run")).await.unwrap().click().await.unwrap();
    wait_for(c, "document.getElementById('full-lab-status').classList.contains('failed')", "the failure").await;
    let said = js(c, "return document.getElementById('full-lab-status').textContent").await;
    let said = said.as_str().unwrap();
    assert!(said.contains("kvlab-full_bg.wasm") && said.contains("404"), "names the file and why: {said}");
    assert!(said.contains("keeps running"), "{said}");
    save_screenshot(c, "modules-full-lab-failed.png").await;
    // The first view still plays, edits and reports.
    assert_eq!(js(c, "return kvlab.module()").await, json!("first-view"));
    js(c, "kvlab.runToEnd(); return null").await;
    assert_eq!(report(c).await, native_report("contiguous-default"));
    js(c, "kvlab.setField('kv_memory_gib', '12'); return null").await;
    assert_eq!(js(c, "return kvlab.state()").await["preset"]["kv_memory_gib"].as_f64(), Some(12.0));
    b.close().await;
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_full_module_loads_the_page_says_so_and_the_first_view_runs() {
    // A slow network: the full module takes three seconds to arrive.
    let base = serve_slowly(require_dist(), "kvlab-full_bg.wasm", std::time::Duration::from_secs(3)).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    js(c, "kvlab.loadMissionId('m1-paging'); return null").await;
    wait_for(c, "!document.getElementById('full-lab-status').hidden", "the loading line").await;
    let said = js(c, "return document.getElementById('full-lab-status').textContent").await;
    assert!(said.as_str().unwrap().starts_with("Loading the rest of the lab"), "{said}");
    assert_eq!(js(c, "return document.documentElement.dataset.module").await, json!("loading-full"));
    save_screenshot(c, "modules-loading-the-full-lab.png").await;
    // Meanwhile the first view plays and edits.
    js(c, "kvlab.runTo(15); kvlab.setField('kv_memory_gib', '12'); return null").await;
    assert_eq!(js(c, "return kvlab.module()").await, json!("first-view"));
    assert_eq!(js(c, "return kvlab.now()").await.as_f64(), Some(15.0));
    // Then the full lab runs the mission asked for, and the line is gone.
    wait_full(c).await;
    assert_eq!(js(c, "return kvlab.missionScore().mission").await, json!("m1-paging"));
    assert_eq!(js(c, "return document.getElementById('full-lab-status').hidden").await, json!(true));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_preset_typed_in_the_first_view_is_loaded_by_the_full_lab_and_its_refusal_keeps_the_text() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    // A trace preset with a bad row: only the full lab reads traces, and it refuses this one.
    let typed = "{\n  \"schema\": \"kvlab/preset@1\",\n  \"workload\": {\"arrival\": {\"kind\": \"trace\", \"csv\": \"arrival_s,prompt_tokens,output_tokens\\n0,100\\n\"}}\n}";
    common_e2e::apply_in_json_editor(c, typed).await;
    wait_full(c).await;
    let v = js(
        c,
        "const e = document.getElementById('preset-json-error'); \
         return { text: document.getElementById('preset-json').value, error: e && e.textContent, open: document.getElementById('json-editor').open }",
    )
    .await;
    assert_eq!(v["text"], typed, "the typed text was kept across the handover: {v}");
    assert_eq!(v["open"], true);
    assert!(v["error"].as_str().is_some_and(|e| e.contains("workload.arrival")), "refused under the editor: {v}");
    // Fixed, it loads in the full lab.
    common_e2e::apply_in_json_editor(c, &typed.replace("0,100\\n", "0,100,10\\n")).await;
    assert_eq!(js(c, "return kvlab.state().preset.workload.arrival.kind").await, json!("trace"));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_first_view_cannot_read_the_full_lab_reads_naming_the_field() {
    // The first module reads documents without serde_path_to_error (formats::json): a document
    // it refuses goes to the full module, which names the field. Typed in the editor, the
    // refusal lands under the text; in a link, at the top of the page.
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    assert_eq!(js(c, "return document.documentElement.dataset.module").await, json!("first-view"));
    let typed = "{\n  \"schema\": \"kvlab/preset@1\",\n  \"scheduler\": {\"max_num_seq\": 4}\n}";
    common_e2e::apply_in_json_editor(c, typed).await;
    wait_full(c).await;
    let v = js(
        c,
        "const e = document.getElementById('preset-json-error'); \
         return { text: document.getElementById('preset-json').value, error: e && e.textContent }",
    )
    .await;
    assert_eq!(v["text"], typed, "the typed text was kept: {v}");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("scheduler.max_num_seq")), "the field is named: {v}");
    save_screenshot(c, "modules-handover-editor-refusal.png").await;
    assert_eq!(js(c, "return kvlab.state().preset.id").await, json!("paged-default"), "nothing changed");

    // A link whose state has a field no preset has.
    let state = js(c, "const s = kvlab.state(); s.preset.scheduler.max_num_seq = 4; return JSON.stringify(s)").await;
    let encoded =
        js(c, &format!("return btoa({}).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '')", state)).await;
    let b2 = browser(1400, 900).await;
    let c2 = &b2.client;
    open(c2, &format!("{base}?autoplay=0#lab={}", encoded.as_str().unwrap())).await;
    wait_full(c2).await;
    wait_for(
        c2,
        "kvlab.errors().some(e => e.includes('scheduler.max_num_seq'))",
        "the link's refusal naming the field",
    )
    .await;
    save_screenshot(c2, "modules-handover-link-refusal.png").await;
    b2.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalogue_model_chosen_in_the_first_view_runs_in_the_full_lab() {
    // The first module lists the catalogue's Hugging Face ids but does not read their
    // config.json (formats::model_catalogue): choosing one hands the lab over.
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    let listed = js(c, "return [...document.querySelectorAll('#ctl-model option')].map(o => o.value)").await;
    assert!(listed.as_array().unwrap().contains(&json!("Qwen/Qwen3-14B")), "{listed}");
    js(
        c,
        "const s = document.getElementById('ctl-model'); s.value = 'Qwen/Qwen3-14B'; \
         s.dispatchEvent(new Event('change', { bubbles: true })); return null",
    )
    .await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.model === 'Qwen/Qwen3-14B'", "the model set in the full lab").await;
    assert_eq!(js(c, "return document.getElementById('ctl-model').value").await, json!("Qwen/Qwen3-14B"));
    assert_eq!(js(c, "return kvlab.errors()").await, json!([]));
    // A shipped preset whose model is the catalogue's loads in the full lab too.
    assert_eq!(
        js(c, "kvlab.command({ type: 'load', preset: 'gpt-oss-window' }); return kvlab.state().preset.id").await,
        json!("gpt-oss-window")
    );
    b.close().await;
}
