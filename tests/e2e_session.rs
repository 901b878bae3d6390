//! End-to-end tests (dist/ in headless Chromium) of the page around its one dispatcher: a
//! refused setting stays in its control, marked, with the reason beside it and in view; the JSON
//! editor keeps refused text and points at the line; Undo and Redo; the lab opens paused with
//! its first step; the page's listeners, `window.kvlab` and a host page's `postMessage` reach the
//! same state by the same commands; a refused host command leaves nothing on the reader's screen;
//! and a linked preset file is read again on every load; the newcomer's tour; a refused value
//! held in its control never looks applied (the transport says which setup runs).
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{browser, js, open, require_dist, save_screenshot, serve, wait_for};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

/// Sets the control of `path` to `value` as a learner does (its value, then `change`).
async fn set_control(c: &Client, path: &str, value: &str) {
    let script = format!(
        "const el = document.querySelector('#controls [data-path=\"{path}\"]:not([type=range])'); \
         el.scrollIntoView({{block: 'center'}}); el.value = {}; \
         el.dispatchEvent(new Event('change', {{bubbles: true}})); return null",
        json!(value)
    );
    js(c, &script).await;
}

/// The control of `path`: its value, whether it is marked invalid, its reason's text, and
/// whether the reason lies inside the viewport.
async fn control_state(c: &Client, path: &str) -> Value {
    let script = format!(
        "const el = document.querySelector('#controls [data-path=\"{path}\"]:not([type=range])'); \
         const id = el.getAttribute('aria-describedby'); const note = id && document.getElementById(id); \
         const r = note && note.getBoundingClientRect(); \
         return {{ value: el.value, invalid: el.getAttribute('aria-invalid'), reason: note ? note.textContent : null, \
                   in_view: !!r && r.top >= 0 && r.bottom <= innerHeight && r.height > 0, \
                   near: !!r && Math.abs(r.top - el.getBoundingClientRect().bottom) < 60 }}"
    );
    js(c, &script).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_setting_stays_in_its_control_with_the_reason_beside_it_in_view() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    // Mission 3: vLLM v1 has no swap; the lab refuses it and says why, where the learner looks.
    open(c, &format!("{base}?mission=m3-preemption-storm")).await;
    set_control(c, "scheduler.preemption", "swap").await;
    let s = control_state(c, "scheduler.preemption").await;
    assert_eq!(s["value"], "swap", "the select snapped back: {s}");
    assert_eq!(s["invalid"], "true", "{s}");
    assert!(s["reason"].as_str().unwrap().contains("preemption"), "{s}");
    assert!(s["in_view"].as_bool().unwrap() && s["near"].as_bool().unwrap(), "the reason is off-screen: {s}");
    assert_eq!(js(c, "return kvlab.state().preset.scheduler.preemption").await, "recompute", "the lab kept its setup");
    assert_eq!(js(c, "return kvlab.errors()").await, json!([]), "no page-level message for a control's refusal");
    save_screenshot(c, "e2e-refusal-beside-control.png").await;
    // Another change elsewhere keeps the mark; changing the control again clears it.
    set_control(c, "scheduler.max_num_seqs", "200").await;
    assert_eq!(control_state(c, "scheduler.preemption").await["invalid"], "true");
    set_control(c, "scheduler.preemption", "recompute").await;
    let s = control_state(c, "scheduler.preemption").await;
    assert_eq!((s["invalid"].clone(), s["reason"].clone()), (Value::Null, Value::Null), "{s}");

    // The free lab: block size 0, typed; 16.5 where a whole number belongs.
    open(c, &format!("{base}?preset=paged-default")).await;
    set_control(c, "allocator.block_size", "0").await;
    let s = control_state(c, "allocator.block_size").await;
    assert_eq!((s["value"].as_str(), s["invalid"].as_str()), (Some("0"), Some("true")), "{s}");
    assert!(s["reason"].as_str().unwrap().contains("block_size"), "{s}");
    assert!(s["in_view"].as_bool().unwrap(), "{s}");
    set_control(c, "scheduler.max_num_seqs", "16.5").await;
    let s = control_state(c, "scheduler.max_num_seqs").await;
    assert!(s["reason"].as_str().unwrap().contains("16.5 is not a whole number; enter one like 17"), "{s}");
    // A model too big for one H100: refused at the model, naming the tensor parallelism.
    set_control(c, "model", "llama-3-70b").await;
    let s = control_state(c, "model").await;
    assert_eq!(s["value"], "llama-3-70b", "{s}");
    assert!(s["reason"].as_str().unwrap().contains("tensor_parallel_size 2 or more"), "{s}");
    save_screenshot(c, "e2e-refusal-model-tp.png").await;
    // The catalogue's Hugging Face ids are in the picker and run from their config.json numbers,
    // which the full lab reads: choosing one hands the page over (docs/LAB.md, "Two modules").
    // One too big for the GPU is refused at the model the same way.
    set_control(c, "model", "meta-llama/Llama-3.1-8B-Instruct").await;
    common_e2e::wait_full(c).await;
    wait_for(c, "kvlab.state().preset.model === 'meta-llama/Llama-3.1-8B-Instruct'", "the catalogue's model").await;
    let s = control_state(c, "model").await;
    assert_eq!((s["value"].as_str(), s["invalid"].as_str()), (Some("meta-llama/Llama-3.1-8B-Instruct"), None), "{s}");
    assert_eq!(
        js(c, "return kvlab.report().kv_bytes_per_token").await,
        json!(131072),
        "32 layers × 8 KV heads × 128 × 2 × 2 bytes"
    );
    // A fixed prompt length shows in both class fields and edits as a length, not refused.
    set_control(c, "model", "llama-3-8b").await;
    let mut preset = js(c, "return kvlab.state().preset").await;
    preset["workload"]["classes"][0]["prompt_tokens"] = json!({"fixed": 512});
    js(c, &format!("kvlab.loadPreset({}); return null", json!(preset.to_string()))).await;
    assert_eq!(control_state(c, "workload.classes[0].prompt_tokens.p99").await["value"], "512");
    set_control(c, "workload.classes[0].prompt_tokens.mean", "1024").await;
    let s = control_state(c, "workload.classes[0].prompt_tokens.mean").await;
    assert_eq!((s["value"].as_str(), s["invalid"].as_str()), (Some("1024"), None), "{s}");
    assert_eq!(js(c, "return kvlab.state().preset.workload.classes[0].prompt_tokens").await, json!({"fixed": 1024}));
    set_control(c, "model", "meta-llama/Llama-3.1-70B-Instruct").await;
    let s = control_state(c, "model").await;
    assert_eq!(s["invalid"], "true", "{s}");
    assert!(s["reason"].as_str().unwrap().contains("tensor_parallel_size"), "{s}");
    b.close().await;
}

/// The transport's line, the metrics' note and the held control's mark, as the reader sees them.
async fn held_state(c: &Client, path: &str) -> Value {
    let script = format!(
        "const shown = (id) => {{ const e = document.getElementById(id); return e.getClientRects().length > 0 ? e.textContent : null; }}; \
         const el = document.querySelector('#controls [data-path=\"{path}\"]:not([type=range])'); \
         const id = el.getAttribute('aria-describedby'); const note = id && document.getElementById(id); \
         return {{ note: shown('running-note-text'), metrics: shown('metrics-held'), value: el.value, \
                   invalid: el.getAttribute('aria-invalid'), reason: note ? note.textContent : null, \
                   startup: document.getElementById('startup-line').textContent, \
                   running: kvlab.state().preset }}"
    );
    js(c, &script).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_value_is_held_and_the_transport_says_which_setup_runs() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    // Mission 3, swap: held, the advice within the mission's locks, the transport saying what runs.
    open(c, &format!("{base}?mission=m3-preemption-storm")).await;
    set_control(c, "scheduler.preemption", "swap").await;
    let s = held_state(c, "scheduler.preemption").await;
    assert_eq!(s["note"], "Running with recompute — your choice swap is not applied.", "{s}");
    assert!(s["metrics"].as_str().is_some_and(|t| t.contains("running setup")), "{s}");
    assert_eq!((s["value"].as_str(), s["invalid"].as_str()), (Some("swap"), Some("true")), "{s}");
    let reason = s["reason"].as_str().unwrap();
    assert!(reason.starts_with("Not applied: ") && reason.contains("use \"recompute\""), "{s}");
    assert!(reason.contains("mission 3 keeps scheduler.engine") && !reason.contains("to \"v0\""), "{s}");
    // Scrolled to the settings, the taller transport bar (it says which setup runs) leaves the
    // stuck map's title in view.
    let overlap = js(
        c,
        "document.getElementById('controls').scrollIntoView(); \
         const bar = document.querySelector('.transport').getBoundingClientRect(); \
         const title = document.getElementById('map-title-0').getBoundingClientRect(); \
         return { bar: bar.bottom, title: title.top, scrolled: scrollY }",
    )
    .await;
    assert!(overlap["scrolled"].as_f64().unwrap() > 0.0, "{overlap}");
    assert!(
        overlap["title"].as_f64().unwrap() >= overlap["bar"].as_f64().unwrap(),
        "the bar covers the map's title: {overlap}"
    );
    js(c, "window.scrollTo(0, 0); return null").await;
    save_screenshot(c, "e2e-pending-swap-mission-3.png").await;
    // Play runs recompute, and the line stays.
    js(c, "kvlab.runTo(20); return null").await;
    assert_eq!(js(c, "return kvlab.state().preset.scheduler.preemption").await, "recompute");
    assert!(held_state(c, "scheduler.preemption").await["note"].is_string());
    // Escape in the control puts the running value back.
    let sel = c.find(Locator::Css("#controls select[data-path='scheduler.preemption']")).await.unwrap();
    sel.send_keys("\u{E00C}").await.unwrap();
    let s = held_state(c, "scheduler.preemption").await;
    assert_eq!(
        (s["note"].clone(), s["value"].as_str(), s["invalid"].clone()),
        (Value::Null, Some("recompute"), Value::Null),
        "{s}"
    );

    // llama-3-70b on one H100, then KV memory from the GPU: the 8B runs from the GPU, and the
    // page says so under a Model box that reads llama-3-70b.
    open(c, &format!("{base}?preset=paged-default")).await;
    set_control(c, "model", "llama-3-70b").await;
    set_control(c, "kv_memory.kind", "gpu").await;
    let s = held_state(c, "model").await;
    assert_eq!(s["value"], "llama-3-70b", "{s}");
    assert_eq!(s["running"]["model"], "llama-3-8b", "{s}");
    assert!(s["running"]["gpu_memory_utilization"].is_number(), "the GPU's share applied alone: {s}");
    assert_eq!(s["note"], "Running with llama-3-8b — your choice llama-3-70b is not applied.", "{s}");
    assert!(s["reason"].as_str().unwrap().contains("tensor_parallel_size"), "{s}");
    save_screenshot(c, "e2e-pending-70b-on-one-h100.png").await;
    // Undo takes the held value first; Keep the running values lets go of any left.
    js(c, "document.getElementById('undo-btn').scrollIntoView({block: 'center'}); return null").await;
    c.find(Locator::Id("undo-btn")).await.unwrap().click().await.unwrap();
    let s = held_state(c, "model").await;
    assert_eq!((s["note"].clone(), s["value"].as_str()), (Value::Null, Some("llama-3-8b")), "{s}");
    assert!(s["running"]["gpu_memory_utilization"].is_number(), "{s}");
    set_control(c, "scheduler.max_num_seqs", "0").await;
    assert!(held_state(c, "scheduler.max_num_seqs").await["note"].is_string());
    c.find(Locator::Id("discard-btn")).await.unwrap().click().await.unwrap();
    let s = held_state(c, "scheduler.max_num_seqs").await;
    assert_eq!((s["note"].clone(), s["value"].as_str()), (Value::Null, Some("256")), "{s}");
    assert_eq!(js(c, "return kvlab.errors()").await, json!([]));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_editor_keeps_refused_text_and_points_at_the_line() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default")).await;
    let typed = "{\n  \"schema\": \"kvlab/preset@1\",\n  \"scheduler\": {\n    \"max_num_seqs\": 0\n  }\n}";
    common_e2e::apply_in_json_editor(c, typed).await;
    let v = js(
        c,
        "const ta = document.getElementById('preset-json'); const e = document.getElementById('preset-json-error'); \
         const r = e && e.getBoundingClientRect(); \
         return { text: ta.value, invalid: ta.getAttribute('aria-invalid'), error: e && e.textContent, \
                  selected: ta.value.slice(ta.selectionStart, ta.selectionEnd), in_view: !!r && r.top >= 0 && r.bottom <= innerHeight }",
    )
    .await;
    assert_eq!(v["text"], typed, "the typed text was thrown away");
    assert_eq!(v["invalid"], "true");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("line 4") && error.contains("scheduler.max_num_seqs"), "{v}");
    assert_eq!(v["selected"], "    \"max_num_seqs\": 0", "{v}");
    assert!(v["in_view"].as_bool().unwrap(), "{v}");
    save_screenshot(c, "e2e-json-editor-refusal.png").await;
    // A later edit of a control keeps the text; fixing it and loading clears the mark.
    set_control(c, "seed", "3").await;
    assert_eq!(js(c, "return document.getElementById('preset-json').value").await, typed);
    js(
        c,
        &format!(
            "const ta = document.getElementById('preset-json'); ta.value = {}; \
             document.querySelector('[data-action=apply-json]').click(); return null",
            json!(typed.replace("\"max_num_seqs\": 0", "\"max_num_seqs\": 12"))
        ),
    )
    .await;
    assert_eq!(js(c, "return kvlab.state().preset.scheduler.max_num_seqs").await, 12);
    assert_eq!(js(c, "return document.getElementById('preset-json-error')").await, Value::Null);
    // A long preset whose faulty line lies below the editor's box: the editor scrolls to it.
    let long = js(c, "return JSON.stringify(kvlab.state().preset, null, 2)").await;
    let long = long.as_str().unwrap().replace("\"max_num_seqs\": 12", "\"max_num_seqs\": 0");
    let long = format!("{}{}", "\n".repeat(60), long);
    js(
        c,
        &format!(
            "const ta = document.getElementById('preset-json'); ta.value = {}; ta.scrollTop = 0; \
             document.querySelector('[data-action=apply-json]').click(); return null",
            json!(long)
        ),
    )
    .await;
    let seen = js(
        c,
        "const ta = document.getElementById('preset-json'); const lines = ta.value.split('\\n'); \
         const line = ta.value.slice(0, ta.selectionStart).split('\\n').length; \
         const y = (line - 1) * ta.scrollHeight / lines.length - ta.scrollTop; \
         return { line, y, h: ta.clientHeight, selected: ta.value.slice(ta.selectionStart, ta.selectionEnd) }",
    )
    .await;
    assert!(seen["selected"].as_str().unwrap().contains("\"max_num_seqs\": 0"), "{seen}");
    let (y, h) = (seen["y"].as_f64().unwrap(), seen["h"].as_f64().unwrap());
    assert!(y >= 0.0 && y < h, "the faulty line is scrolled out of view: {seen}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_and_redo_walk_the_setups_from_buttons_and_keys() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default")).await;
    let disabled = |id: &'static str| async move {
        js(c, &format!("return document.getElementById('{id}').disabled")).await == json!(true)
    };
    assert!(disabled("undo-btn").await && disabled("redo-btn").await);
    set_control(c, "scheduler.max_num_seqs", "64").await;
    c.find(Locator::Id("compare-toggle")).await.unwrap().click().await.unwrap();
    assert!(!disabled("undo-btn").await);
    js(c, "document.getElementById('undo-btn').scrollIntoView({block: 'center'}); return null").await;
    c.find(Locator::Id("undo-btn")).await.unwrap().click().await.unwrap();
    assert_eq!(js(c, "return kvlab.state().compare").await, false);
    // Ctrl+Z on the page (not in a field) undoes the edit; the field shows the old value.
    js(c, "document.activeElement.blur(); document.dispatchEvent(new KeyboardEvent('keydown', {key: 'z', ctrlKey: true, bubbles: true})); return null").await;
    assert_eq!(js(c, "return kvlab.state().preset.scheduler.max_num_seqs").await, 256);
    assert_eq!(control_state(c, "scheduler.max_num_seqs").await["value"], "256");
    assert!(disabled("undo-btn").await && !disabled("redo-btn").await);
    js(c, "document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Z', ctrlKey: true, shiftKey: true, bubbles: true})); return null").await;
    assert_eq!(js(c, "return kvlab.state().preset.scheduler.max_num_seqs").await, 64);
    b.close().await;
}

/// Where the tour stands: its popover's text, whether it and the outlined element lie in the
/// view, and whether the popover sits beside that element rather than over it.
const TOUR_STATE: &str = r#"
const pop = document.getElementById('tour'), t = document.querySelector('.tour-target');
const inView = r => r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
const p = pop.getBoundingClientRect(), q = t ? t.getBoundingClientRect() : null;
return { shown: !pop.hidden, count: document.getElementById('tour-count').textContent,
  title: document.getElementById('tour-title').textContent, target: t ? t.id : null,
  pop_in_view: inView(p), target_seen: !!q && q.bottom > 0 && q.top < innerHeight,
  beside: !!q && (p.top >= q.bottom || p.bottom <= q.top),
  focus: document.activeElement && document.activeElement.id };"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_can_take_the_four_step_tour_or_skip_it_for_good() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &base).await;
    c.find(Locator::Id("tour-start")).await.unwrap().click().await.unwrap();
    assert_eq!(
        js(c, "return [kvlab.now(), kvlab.isPlaying()]").await,
        json!([20, false]),
        "the tour shows a run in progress"
    );
    let targets = ["map-panel-0", "map-legend", "chart-kv", "compare-label"];
    for (i, target) in targets.iter().enumerate() {
        let s = js(c, TOUR_STATE).await;
        assert_eq!(s["shown"], true, "step {}: {s}", i + 1);
        assert_eq!(s["count"], format!("Step {} of 4", i + 1), "{s}");
        assert_eq!(s["target"], *target, "{s}");
        assert_eq!(
            (s["pop_in_view"].clone(), s["target_seen"].clone()),
            (json!(true), json!(true)),
            "step {}: {s}",
            i + 1
        );
        assert_eq!(s["focus"], "tour-next", "the keyboard stays on the tour: {s}");
        if *target != "map-panel-0" {
            assert_eq!(s["beside"], true, "step {}: the popover covers what it points at: {s}", i + 1);
        }
        assert!(
            js(c, "return !document.getElementById('first-step').hidden").await == json!(false),
            "one guide at a time"
        );
        if i == 1 {
            save_screenshot(c, "e2e-tour-step-2.png").await;
        }
        c.find(Locator::Id("tour-next")).await.unwrap().click().await.unwrap();
    }
    let after = js(c, TOUR_STATE).await;
    assert_eq!((after["shown"].clone(), after["target"].clone()), (json!(false), Value::Null), "{after}");
    assert_eq!(js(c, "return localStorage.getItem('kvlab.tour.v1')").await, "finished");
    assert_eq!(js(c, "return kvlab.now()").await, json!(0), "the tour gives back the time it found");
    open(c, &base).await;
    assert_eq!(
        js(c, "return [document.getElementById('first-step').hidden, document.getElementById('tour').hidden]").await,
        json!([true, true]),
        "not offered again"
    );

    // Skipped with Escape from its second step: remembered as skipped, nothing left outlined.
    js(c, "localStorage.clear(); return null").await;
    open(c, &base).await;
    c.find(Locator::Id("tour-start")).await.unwrap().click().await.unwrap();
    c.find(Locator::Id("tour-next")).await.unwrap().click().await.unwrap();
    js(c, "document.getElementById('tour').dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true})); return null").await;
    let skipped = js(c, TOUR_STATE).await;
    assert_eq!((skipped["shown"].clone(), skipped["target"].clone()), (json!(false), Value::Null), "{skipped}");
    assert_eq!(js(c, "return localStorage.getItem('kvlab.tour.v1')").await, "skipped");
    assert_eq!(js(c, "return kvlab.now()").await, json!(0), "skipped, it gives back the time too");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lab_opens_paused_with_a_first_step_that_can_be_dismissed_for_good() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &base).await;
    assert_eq!(js(c, "return kvlab.isPlaying()").await, false, "the lab opens paused");
    // Before any request has a first token, the latencies say so instead of "0.0 ms".
    let ttft = js(c, "return document.querySelector('tr[data-key=ttft] td').textContent").await;
    assert!(ttft.as_str().unwrap().starts_with('—') && ttft.as_str().unwrap().contains("no first token yet"), "{ttft}");
    let shown = || async { js(c, "return !document.getElementById('first-step').hidden").await == json!(true) };
    assert!(shown().await, "a newcomer sees the first step");
    let text = js(c, "return document.getElementById('first-step').textContent").await;
    assert!(text.as_str().unwrap().contains("Play") && text.as_str().unwrap().contains("Compare"), "{text}");
    save_screenshot(c, "e2e-first-step.png").await;
    c.find(Locator::Id("first-step-close")).await.unwrap().click().await.unwrap();
    assert!(!shown().await);
    open(c, &base).await;
    assert!(!shown().await, "dismissed for good in this browser");
    // `autoplay=1` plays; a mission starts paused.
    open(c, &format!("{base}?autoplay=1")).await;
    assert_eq!(js(c, "return kvlab.isPlaying()").await, true);
    js(c, "kvlab.loadMissionId('m1-paging'); return null").await;
    common_e2e::wait_full(c).await;
    assert_eq!(js(c, "return [kvlab.isPlaying(), kvlab.now()]").await, json!([false, 0]));
    // "Show solution" plays even with autoplay=0.
    open(c, &format!("{base}?autoplay=0&mission=m1-paging")).await;
    c.find(Locator::Id("solution-btn")).await.unwrap().click().await.unwrap();
    assert_eq!(js(c, "return kvlab.isPlaying()").await, true, "the solution is shown playing");
    b.close().await;
}

/// The commands of the three-paths test, as a host page posts them.
const COMMANDS: &str = r#"[
  {"type": "set", "path": "scheduler.max_num_seqs", "value": 64},
  {"type": "compare", "on": true},
  {"type": "set", "path": "allocator.block_size", "value": 32},
  {"type": "add_row", "row": "class"},
  {"type": "series", "name": "waiting", "show": false},
  {"type": "seek", "t_s": 12}
]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_the_handle_and_a_host_page_reach_the_same_state() {
    let dist = require_dist();
    let lab = serve(dist.clone()).await;
    let host = serve(dist).await;
    let b = browser(1400, 900).await;
    let c = &b.client;

    // 1. The JS handle, one command object at a time.
    open(c, &format!("{lab}?autoplay=0")).await;
    js(c, &format!("for (const cmd of {COMMANDS}) kvlab.command(cmd); return null")).await;
    let by_handle = js(c, "return JSON.stringify(kvlab.state())").await;

    // 2. The page's own controls: the fields, the Compare box, Add class, the series box, the scrubber.
    open(c, &format!("{lab}?autoplay=0")).await;
    set_control(c, "scheduler.max_num_seqs", "64").await;
    c.find(Locator::Id("compare-toggle")).await.unwrap().click().await.unwrap();
    set_control(c, "allocator.block_size", "32").await;
    js(c, "document.querySelector('[data-action=add-class]').click(); \
           const w = document.querySelector('[data-series=waiting]'); w.click(); \
           const s = document.getElementById('scrubber'); s.value = 12; s.dispatchEvent(new Event('input', {bubbles: true})); return null").await;
    let by_page = js(c, "return JSON.stringify(kvlab.state())").await;
    assert_eq!(by_page, by_handle, "the page's listeners and the handle disagree");

    // 3. A host page on another origin, by postMessage.
    c.goto(&format!("{host}embed-example.html?lab={lab}")).await.unwrap();
    wait_for(c, "(window.kvlabEvents || []).some(e => e.type === 'ready')", "the lab's ready event").await;
    js(c, &format!("for (const cmd of {COMMANDS}) sendToLab(cmd); sendToLab({{type: 'set', path: 'seed', value: 'many'}}); return null")).await;
    wait_for(c, "window.kvlabEvents.some(e => e.type === 'error')", "the refused command's error event").await;
    wait_for(c, "window.kvlabEvents.some(e => e.type === 'state' && e.t_s === 12)", "the state at 12 s").await;
    c.enter_frame(0).await.unwrap();
    let by_host = js(c, "return JSON.stringify(kvlab.state())").await;
    // The refused command left nothing on the reader's screen.
    assert_eq!(js(c, "return kvlab.errors()").await, json!([]), "a host's refused command left a banner");
    c.enter_parent_frame().await.unwrap();
    let embedded: Value = serde_json::from_str(by_host.as_str().unwrap()).unwrap();
    let handled: Value = serde_json::from_str(by_handle.as_str().unwrap()).unwrap();
    assert_eq!(embedded["preset"], handled["preset"], "the host and the handle disagree");
    assert_eq!(
        (&embedded["compare"], &embedded["hidden"], &embedded["t_s"]),
        (&handled["compare"], &handled["hidden"], &handled["t_s"])
    );
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_preset_file_is_read_again_on_every_load() {
    // A folder of its own, served: the lab's bundle plus a preset file the test rewrites.
    let root = std::env::temp_dir().join(format!("kvlab-linked-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    copy_dir(&require_dist(), &root);
    let write = |seed: u64| {
        let doc =
            json!({"schema": "kvlab/preset@1", "id": "linked", "title": format!("Linked, seed {seed}"), "seed": seed});
        std::fs::write(root.join("linked.json"), doc.to_string()).unwrap();
    };
    write(1);
    let base = serve(root.clone()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset_url=linked.json")).await;
    wait_for(c, "kvlab.state().preset.id === 'linked'", "the linked preset").await;
    // An edit; the address bar now carries the state (and the file's digest).
    js(c, "kvlab.setField('scheduler.max_num_seqs', '64'); return null").await;
    let url = js(c, "return location.href").await.as_str().unwrap().to_string();
    assert!(url.contains("#lab="), "{url}");
    // Unchanged file: the reload keeps the edit. (A page is left first: going to the very URL
    // shown would only follow its fragment, not load the page again.)
    reload(c, &url).await;
    wait_for(c, "kvlab.state().preset.scheduler.max_num_seqs === 64", "the edit kept").await;
    // The file changed: the reload shows the new version and says so.
    write(2);
    reload(c, &url).await;
    wait_for(c, "kvlab.state().preset.seed === 2", "the new version of the file").await;
    let errors = js(c, "return kvlab.errors().join(' | ')").await;
    assert!(errors.as_str().unwrap().contains("changed since this link was made"), "{errors}");
    // The file is gone: the link's last good copy stays, marked as such.
    let url = js(c, "return location.href").await.as_str().unwrap().to_string();
    std::fs::remove_file(root.join("linked.json")).unwrap();
    reload(c, &url).await;
    wait_for(c, "kvlab.errors().join(' ').includes('404')", "the fetch error").await;
    let errors = js(c, "return kvlab.errors().join(' | ')").await;
    assert!(errors.as_str().unwrap().contains("last good copy"), "{errors}");
    assert_eq!(js(c, "return kvlab.state().preset.seed").await, 2);
    b.close().await;
    let _ = std::fs::remove_dir_all(&root);
}

/// Loads the lab at `url` afresh, even when it is the URL shown.
async fn reload(c: &Client, url: &str) {
    c.goto("about:blank").await.unwrap();
    open(c, url).await;
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
