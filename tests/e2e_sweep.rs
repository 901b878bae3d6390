//! End-to-end tests (dist/ in headless Chromium) of the lab's Sweep panel: a sweep run from the
//! panel's own controls gives, number for number, what the native `formats::sweep` plan and
//! `engine::sweep` runs give for the same preset, knob and values (what `kvlab sweep --json`
//! prints); a bad value is refused with the field named while the lab keeps running; a mission
//! offers only the knobs it leaves free. The panel's smallest-KV search gives, for each allocator,
//! the answer of `kvlab sweep --min-kv-for-ttft-p95-ms` (the real binary, on that allocator's
//! preset); it can be cancelled, a bad target is refused under its field, and a mission that locks
//! `kv_memory_gib` turns it off.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{
    browser, js, numbers_as_floats, open, repo_path, require_dist, save_screenshot, serve, wait_for, wait_full,
};
use fantoccini::{Client, Locator};
use kvlab::engine::sweep::{run_one, SweepMetrics};
use kvlab::formats::sweep::{allocator_variants, plan, Knob, ALLOCATORS};
use serde_json::{json, Value};

/// Sets the panel's fields and presses Run.
async fn run_sweep(c: &Client, knob: &str, values: &str) {
    js(
        c,
        &format!(
            "document.getElementById('sweep-knob').value = {}; document.getElementById('sweep-values').value = {}; return null",
            json!(knob),
            json!(values)
        ),
    )
    .await;
    c.find(Locator::Id("sweep-run")).await.unwrap().click().await.unwrap();
}

/// The native sweep, in the shape of `kvlab.sweepResults().points`.
fn native_points(preset_id: &str, knob: &str, values: &str) -> Value {
    let text = std::fs::read_to_string(repo_path(&format!("assets/presets/{preset_id}.json"))).unwrap();
    let preset: Value = serde_json::from_str(&text).unwrap();
    let knob = Knob::parse(knob).unwrap();
    let points = plan(&preset, &knob, &knob.values(values).unwrap()).unwrap();
    let outcome = |c: &Result<kvlab::engine::config::SimConfig, kvlab::engine::config::ConfigError>| match c {
        Ok(config) => serde_json::to_value(SweepMetrics::of(&run_one(config).unwrap())).unwrap(),
        Err(e) => json!({ "error": e.to_string() }),
    };
    let rows: Vec<Value> = points
        .iter()
        .map(|p| json!({ "value": p.value, "contiguous": outcome(&p.configs[0]), "paged": outcome(&p.configs[1]) }))
        .collect();
    numbers_as_floats(Value::Array(rows))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_in_the_page_equals_the_native_sweep_and_bad_values_are_refused() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;

    run_sweep(c, "allocator.block_size", "8,16,32").await;
    wait_for(c, "kvlab.sweepResults() && kvlab.sweepResults().finished", "the sweep to finish").await;
    let got = js(c, "return kvlab.sweepResults()").await;
    assert_eq!(got["knob"], json!("allocator.block_size"));
    assert_eq!(
        numbers_as_floats(got["points"].clone()),
        native_points("paged-default", "allocator.block_size", "8,16,32")
    );
    let progress = js(c, "return document.getElementById('sweep-progress').textContent").await;
    let progress = progress.as_str().unwrap();
    assert!(progress.starts_with("3 of 3 points"), "{progress}");
    assert!(progress.contains("each over 60 s of traffic"), "the sweep names its horizon: {progress}");
    assert_eq!(got["setup"]["id"], json!("paged-default"), "the sweep names its setup");
    assert!(progress.contains("contiguous stays as the preset has it"), "{progress}");
    assert_eq!(js(c, "return document.getElementById('sweep-chart').hidden").await, json!(false));

    // A bad value: refused in the panel's own line (where "3 of 3 points" was, so it cannot
    // pass for a success), naming the field; the finished sweep's points go (they were another
    // sweep's, not under this refusal) and the lab stays.
    run_sweep(c, "allocator.block_size", "8,abc").await;
    let line = js(
        c,
        "const p = document.getElementById('sweep-progress'); return [p.textContent, p.classList.contains('error')]",
    )
    .await;
    let text = line[0].as_str().unwrap();
    assert!(
        text.starts_with("Sweep not run") && text.contains("abc") && text.contains("allocator.block_size"),
        "{line}"
    );
    assert_eq!(line[1], json!(true), "{line}");
    assert!(!js(c, "return kvlab.errors().join(' ')").await.as_str().unwrap().contains("Sweep not run"));
    assert_eq!(js(c, "return kvlab.sweepResults()").await, Value::Null, "no old sweep under the refusal");
    assert_eq!(js(c, "return document.querySelectorAll('#sweep-table tbody tr').length").await, json!(0));
    js(c, "kvlab.runTo(5); return null").await;
    let report = js(c, "return kvlab.report()").await;
    assert!(report["requests"]["finished"].as_f64().unwrap() > 0.0, "the lab keeps running: {report}");

    // A 16-point block-size sweep (the figure in docs/PERFORMANCE.md is its progress line),
    // charted as TTFT p95, for the screenshot.
    run_sweep(c, "allocator.block_size", "1:16:16").await;
    wait_for(c, "kvlab.sweepResults()?.finished && kvlab.sweepResults().total === 16", "the 16-point sweep").await;
    js(c, "const m = document.getElementById('sweep-metric'); m.value = 'kv_utilization'; m.dispatchEvent(new Event('change')); document.getElementById('sweep').scrollIntoView(); return null").await;
    let line = js(c, "return document.getElementById('sweep-progress').textContent").await;
    eprintln!("16-point sweep: {line}");
    save_screenshot(c, "sweep-1400x900.png").await;

    // Run, then Cancel before the first frame: the sweep stops with no point run, and says so.
    js(c, "document.getElementById('sweep-values').value = '1:32:32'; document.getElementById('sweep-run').click(); document.getElementById('sweep-cancel').click(); return null").await;
    let got = js(c, "return kvlab.sweepResults()").await;
    assert_eq!(
        (got["cancelled"].clone(), got["total"].clone(), got["finished"].clone()),
        (json!(true), json!(32), json!(false))
    );
    wait_for(
        c,
        "document.getElementById('sweep-progress').textContent.startsWith('Cancelled after 0 of 32 points')",
        "the cancelled line",
    )
    .await;
    assert_eq!(js(c, "return document.getElementById('sweep-cancel').hidden").await, json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_offers_only_its_free_knobs_to_sweep() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?mission=m1-paging&autoplay=0")).await;
    let enabled =
        js(c, "return [...document.querySelectorAll('#sweep-knob option')].filter(o => !o.disabled).map(o => o.value)")
            .await;
    let knobs = js(c, "return kvlab.state().mission ? true : false").await;
    assert_eq!(knobs, json!(true));
    let all = js(c, "return [...document.querySelectorAll('#sweep-knob option')].map(o => o.value)").await;
    assert!(enabled.as_array().unwrap().len() < all.as_array().unwrap().len(), "{enabled} of {all}");
    // A locked knob is refused by name even when asked for directly.
    let locked = all.as_array().unwrap().iter().find(|k| !enabled.as_array().unwrap().contains(k)).unwrap().clone();
    run_sweep(c, locked.as_str().unwrap(), "1,2").await;
    let line = js(c, "return document.getElementById('sweep-progress').textContent").await;
    assert!(line.as_str().unwrap().contains("is locked in mission"), "{line}");
    b.close().await;
}

/// A preset replaying a trace has no request rate: the knob is not offered (and a selected rate
/// gives way to a knob that applies), so no sweep fails on every point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_preset_is_not_offered_a_request_rate_sweep() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    // A contiguous preset starts on a knob that moves its own run, not the paged block size.
    open(c, &format!("{base}?preset=contiguous-default&autoplay=0")).await;
    assert_eq!(js(c, "return document.getElementById('sweep-knob').value").await, json!("kv_memory_gib"));
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    // A trace preset is the full lab's (docs/LAB.md, "Two modules"): load it first, so that the
    // knob picked below is still on the page when the trace comes.
    js(c, "return kvlabFull().then(() => null)").await;
    let rate = "document.querySelector('#sweep-knob option[value=\"workload.arrival.rate_per_s\"]')";
    assert_eq!(js(c, &format!("return {rate}.disabled")).await, json!(false), "a Poisson preset sweeps its rate");
    js(
        c,
        "const k = document.getElementById('sweep-knob'); k.value = 'workload.arrival.rate_per_s'; \
           k.dispatchEvent(new Event('change', {bubbles: true})); return null",
    )
    .await;
    let mut preset = js(c, "return kvlab.state().preset").await;
    preset["workload"]["arrival"] =
        json!({"kind": "trace", "csv": "arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,100,10\n"});
    js(c, &format!("kvlab.loadPreset({}); return null", json!(preset.to_string()))).await;
    assert_eq!(js(c, "return kvlab.state().preset.workload.arrival.kind").await, json!("trace"));
    assert_eq!(js(c, &format!("return {rate}.disabled")).await, json!(true), "the rate is not offered on a trace");
    let chosen = js(c, "return document.getElementById('sweep-knob').value").await;
    assert_ne!(chosen, json!("workload.arrival.rate_per_s"), "the selected rate gave way");
    b.close().await;
}

/// Sets the search's target field and presses Find.
async fn run_search(c: &Client, target: &str) {
    js(c, &format!("document.getElementById('sweep-search-target').value = {}; return null", json!(target))).await;
    c.find(Locator::Id("sweep-search-run")).await.unwrap().click().await.unwrap();
}

/// `kvlab sweep --min-kv-for-ttft-p95-ms MS [ARGS] --json` (the built binary) on each allocator's
/// preset as a sweep makes it, in [`ALLOCATORS`] order: the preset itself for its own allocator.
/// Each is the answer's JSON, or the command's error when it fails (a target not met).
fn cli_results(preset_id: &str, target: &str, args: &[&str]) -> Vec<Result<Value, String>> {
    let text = std::fs::read_to_string(repo_path(&format!("assets/presets/{preset_id}.json"))).unwrap();
    let preset: Value = serde_json::from_str(&text).unwrap();
    // One folder per call: the tests of this file run in parallel and each removes its own.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kvlab-e2e-kv-search-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let answers = allocator_variants(&preset)
        .iter()
        .zip(ALLOCATORS)
        .map(|(variant, allocator)| {
            let file = dir.join(format!("{preset_id}-{allocator}.json"));
            std::fs::write(&file, serde_json::to_string(variant).unwrap()).unwrap();
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvlab"))
                .args(["sweep", file.to_str().unwrap(), "--min-kv-for-ttft-p95-ms", target, "--json"])
                .args(args)
                .output()
                .expect("kvlab runs");
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["allocator"], json!(allocator));
            Ok(v)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    answers
}

/// [`cli_results`] where every allocator meets the target.
fn cli_answers(preset_id: &str, target: &str, args: &[&str]) -> Vec<Value> {
    let results = cli_results(preset_id, target, args);
    results.into_iter().zip(ALLOCATORS).map(|(r, allocator)| r.unwrap_or_else(|e| panic!("{allocator}: {e}"))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kv_search_in_the_page_answers_as_the_cli_does_and_can_be_cancelled() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    assert_eq!(js(c, "return kvlab.kvSearchResults()").await, Value::Null);

    run_search(c, "2000").await;
    wait_for(c, "kvlab.kvSearchResults()?.finished", "the search to finish").await;
    let got = numbers_as_floats(js(c, "return kvlab.kvSearchResults()").await);
    assert_eq!(got["target_ttft_p95_ms"], json!(2000.0));
    for (cli, allocator) in cli_answers("paged-default", "2000", &[]).iter().zip(ALLOCATORS) {
        let page = &got[allocator];
        assert_eq!(page["status"], json!("met"), "{allocator}: {page}");
        for key in ["kv_memory_gib", "ttft_p95_ms", "misses_at_gib", "runs"] {
            assert_eq!(page[key].as_f64(), cli[key].as_f64(), "{allocator} {key}: page {page}, CLI {cli}");
        }
        assert_eq!(page["misses_because"], cli["misses_because"], "{allocator}: why the point below misses");
        assert!(
            page["misses_because"].as_str().is_some_and(|w| w.contains("TTFT p95") || w.contains("at its limit")),
            "{page}"
        );
        assert_eq!(got["grid"], numbers_as_floats(cli["grid"].clone()), "{allocator}");
    }
    // docs/SWEEP.md's example: paged-default meets 2 s and keeps up over 180 s from 10 GiB.
    assert_eq!(got["paged"]["kv_memory_gib"], json!(10.0));
    assert_eq!(got["checked_over_s"], json!(180.0));
    let text = |id: &str| format!("return document.getElementById('{id}').textContent");
    let paged = js(c, &text("sweep-search-paged")).await;
    assert!(
        paged
            .as_str()
            .unwrap()
            .starts_with("paged: 10 GiB meets TTFT p95 ≤ 2,000 ms and keeps up over 180 s of traffic (p95 "),
        "{paged}"
    );
    let line = js(c, &text("sweep-search-progress")).await;
    assert!(line.as_str().unwrap().contains("runs in"), "{line}");
    assert_eq!(js(c, "return document.getElementById('sweep-search-cancel').hidden").await, json!(true));
    js(c, "kvlab.runTo(30); document.getElementById('sweep-search-title').scrollIntoView(); return null").await;
    save_screenshot(c, "sweep-search-1400x900.png").await;

    // Bad targets: refused under the field, naming it and the fix; the last answer goes (it was
    // another target's) and the lab stays.
    for bad in ["", "-5", "0", "abc"] {
        run_search(c, bad).await;
        let error = js(c, &text("sweep-search-error")).await;
        let error = error.as_str().unwrap();
        assert!(error.contains("TTFT p95 target") && error.contains("milliseconds above 0"), "{bad:?}: {error}");
        assert_eq!(js(c, "return document.getElementById('sweep-search-error').hidden").await, json!(false));
        assert_eq!(js(c, "return kvlab.kvSearchResults()").await, Value::Null, "{bad:?}");
        let shown = "return ['contiguous', 'paged'].map(a => document.getElementById('sweep-search-' + a).hidden)";
        assert_eq!(js(c, shown).await, json!([true, true]), "{bad:?}: an old answer under \"Search not run\"");
    }
    save_screenshot(c, "sweep-search-refused-1400x900.png").await;
    js(c, "kvlab.runTo(5); return null").await;
    let report = js(c, "return kvlab.report()").await;
    assert!(report["requests"]["finished"].as_f64().unwrap() > 0.0, "the lab keeps running: {report}");

    // A target nothing meets: both allocators say so, each after one run at the top of the grid.
    run_search(c, "1").await;
    wait_for(c, "kvlab.kvSearchResults()?.finished", "the unmet search").await;
    wait_for(c, "document.getElementById('sweep-search-error').hidden", "the target's error to go").await;
    let unmet = js(c, "return kvlab.kvSearchResults()").await;
    assert_eq!((unmet["paged"]["status"].clone(), unmet["runs"].clone()), (json!("not_met"), json!(2)));
    let paged = js(c, &text("sweep-search-paged")).await;
    assert!(paged.as_str().unwrap().starts_with("paged: not met even at 63 GiB (TTFT p95 "), "{paged}");
    save_screenshot(c, "sweep-search-unmet-1400x900.png").await;

    // Find, then Cancel before the first frame: nothing run, and the panel says so.
    js(c, "document.getElementById('sweep-search-target').value = '2000'; document.getElementById('sweep-search-run').click(); document.getElementById('sweep-search-cancel').click(); return null").await;
    let cancelled = js(c, "return kvlab.kvSearchResults()").await;
    assert_eq!(
        (cancelled["cancelled"].clone(), cancelled["finished"].clone(), cancelled["runs"].clone()),
        (json!(true), json!(false), json!(0))
    );
    assert_eq!(cancelled["paged"]["status"], json!("cancelled"));
    wait_for(
        c,
        "document.getElementById('sweep-search-progress').textContent.startsWith('Cancelled after 0 runs')",
        "the cancelled line",
    )
    .await;
    assert_eq!(js(c, "return document.getElementById('sweep-search-cancel').hidden").await, json!(true));

    // A search started during a sweep waits for it, then gives the same answer.
    run_sweep(c, "allocator.block_size", "8,16").await;
    run_search(c, "2000").await;
    wait_for(c, "kvlab.sweepResults()?.finished && kvlab.kvSearchResults()?.finished", "the sweep, then the search")
        .await;
    assert_eq!(numbers_as_floats(js(c, "return kvlab.kvSearchResults()").await)["paged"], got["paged"]);
}

/// Sets the search's three fields and presses Find.
async fn run_search_in(c: &Client, target: &str, range: &str, step: &str) {
    let set = |id: &str, v: &str| format!("document.getElementById('{id}').value = {};", json!(v));
    let fields = [("sweep-search-target", target), ("sweep-search-range", range), ("sweep-search-step", step)];
    let script: String = fields.iter().map(|(id, v)| set(id, v)).collect();
    js(c, &format!("{script} return null")).await;
    c.find(Locator::Id("sweep-search-run")).await.unwrap().click().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kv_search_takes_a_range_and_a_step_as_the_cli_does() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;

    run_search_in(c, "2000", "4:12", "0.5").await;
    wait_for(c, "kvlab.kvSearchResults()?.finished", "the search to finish").await;
    let got = numbers_as_floats(js(c, "return kvlab.kvSearchResults()").await);
    assert_eq!(got["grid"], json!({ "lo_gib": 4.0, "hi_gib": 12.0, "step_gib": 0.5 }));
    let cli = cli_results("paged-default", "2000", &["--kv-range", "4:12", "--kv-step-gib", "0.5"]);
    for (cli, allocator) in cli.iter().zip(ALLOCATORS) {
        let page = &got[allocator];
        match cli {
            Ok(cli) => {
                for key in ["kv_memory_gib", "ttft_p95_ms", "misses_at_gib", "runs"] {
                    assert_eq!(page[key].as_f64(), cli[key].as_f64(), "{allocator} {key}: page {page}, CLI {cli}");
                }
                assert_eq!(got["grid"], numbers_as_floats(cli["grid"].clone()), "{allocator}");
            }
            // Contiguous slabs on 12 GiB or less miss 2 s: both say so.
            Err(e) => {
                assert_eq!(page["status"], json!("not_met"), "{allocator}: page {page}, CLI {e}");
                assert!(e.contains("even 12 GiB misses 2000 ms"), "{allocator}: {e}");
            }
        }
    }
    assert_eq!(got["contiguous"]["status"], json!("not_met"), "{}", got["contiguous"]);
    assert_eq!(got["paged"]["kv_memory_gib"], json!(10.0), "a 0.5 GiB step lands on docs/SWEEP.md's 10 GiB");

    // A bad range or step: refused naming the field, which alone is marked invalid; the other
    // fields stay, and the last answer goes (it was another grid's).
    let invalid = "return ['sweep-search-target', 'sweep-search-range', 'sweep-search-step'].map(id => document.getElementById(id).getAttribute('aria-invalid'))";
    let text = |id: &str| format!("return document.getElementById('{id}').textContent");
    for (range, step, field, words) in [
        ("4-12", "0.5", 1, "KV range (GiB): \"4-12\" is not LO:HI in GiB; write e.g. 1:80"),
        ("4:x", "", 1, "KV range (GiB): \"4:x\" is not LO:HI in GiB"),
        ("12:4", "", 1, "KV range (GiB): 12:4: give LO:HI in GiB with 0 < LO ≤ HI"),
        ("4:12", "0", 2, "Step (GiB): 0: give a step above 0"),
        ("", "fine", 2, "Step (GiB): \"fine\" is not a size; give GiB above 0, e.g. 0.25"),
    ] {
        run_search_in(c, "2000", range, step).await;
        let error = js(c, &text("sweep-search-error")).await;
        assert!(error.as_str().unwrap().contains(words), "{range:?} {step:?}: {error}");
        let mut marks = json!([null, null, null]);
        marks[field] = json!("true");
        assert_eq!(js(c, invalid).await, marks, "{range:?} {step:?}");
        assert_eq!(js(c, "return kvlab.kvSearchResults()").await, Value::Null, "{range:?} {step:?}");
    }
    js(c, "document.getElementById('sweep-search-title').scrollIntoView(); return null").await;
    save_screenshot(c, "sweep-search-range-refused-1400x900.png").await;

    // Emptied again: the defaults, one step up to the 63 GiB of KV an H100 holds beside
    // Llama-3-8B's weights, in 0.25 GiB steps.
    run_search_in(c, "2000", "", "").await;
    wait_for(c, "kvlab.kvSearchResults()?.finished", "the default search").await;
    let defaults = numbers_as_floats(js(c, "return kvlab.kvSearchResults()").await);
    assert_eq!(defaults["grid"], json!({ "lo_gib": 0.25, "hi_gib": 63.0, "step_gib": 0.25 }));
    assert_eq!(defaults["paged"]["kv_memory_gib"], json!(10.0));
    assert_eq!(js(c, invalid).await, json!([null, null, null]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_that_locks_the_kv_memory_turns_the_search_off() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    let search_off = "return [document.getElementById('sweep-search-run').disabled, !document.getElementById('sweep-search-locked').hidden]";
    // m1 leaves kv_memory_gib free; m2 (block size) locks it.
    open(c, &format!("{base}?mission=m1-paging&autoplay=0")).await;
    assert_eq!(js(c, search_off).await, json!([false, false]));
    open(c, &format!("{base}?mission=m2-block-size&autoplay=0")).await;
    assert_eq!(js(c, search_off).await, json!([true, true]));
    let fields_off = "return ['sweep-search-target', 'sweep-search-range', 'sweep-search-step'].map(id => document.getElementById(id).disabled)";
    assert_eq!(js(c, fields_off).await, json!([true, true, true]));
    js(c, "document.getElementById('sweep-search-run').click(); return null").await;
    assert_eq!(js(c, "return kvlab.kvSearchResults()").await, Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_sweeps_the_replicas_behind_a_router_as_the_cli_does() {
    // docs/ROUTING.md: each point a fleet behind round robin (the preset names no router).
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=bursty&autoplay=0")).await;
    // The knob is the full lab's (its module runs fleets): a first sweep brings it in.
    run_sweep(c, "kv_memory_gib", "10").await;
    wait_full(c).await;
    wait_for(c, "kvlab.sweepResults() && kvlab.sweepResults().finished", "the first sweep").await;
    let offered = "return [...document.querySelectorAll('#sweep-knob option')].map(o => o.value)";
    assert!(js(c, offered).await.as_array().unwrap().contains(&json!("replicas")));
    run_sweep(c, "replicas", "1,2,4").await;
    wait_for(c, "kvlab.sweepResults() && kvlab.sweepResults().finished", "the replica sweep to finish").await;
    let got = js(c, "return kvlab.sweepResults()").await;
    assert_eq!(got["knob"], json!("replicas"));
    assert_eq!(numbers_as_floats(got["points"].clone()), native_points("bursty", "replicas", "1,2,4"));
    // More replicas, less waiting: the fleet's TTFT p95 falls from one replica to four.
    let p95 = |i: usize| got["points"][i]["paged"]["ttft_p95_ms"].as_f64().unwrap();
    assert!(p95(2) < p95(0), "{got}");
    js(c, "const m = document.getElementById('sweep-metric'); m.value = 'ttft_p95_ms'; m.dispatchEvent(new Event('change')); document.getElementById('sweep').scrollIntoView(); return null").await;
    save_screenshot(c, "sweep-replicas-1400x900.png").await;
}
