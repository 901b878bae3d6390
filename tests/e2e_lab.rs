//! End-to-end tests of the browser lab: the release bundle in dist/ (built by
//! scripts/test-web.sh) served from 127.0.0.1 by a tiny server in this test, driven in headless
//! Chromium through chromedriver (started here on a free port) with fantoccini.
//! The story of the reference article: the contiguous default wastes memory, the same traffic
//! on paged blocks fills ≥ 97% of what it allocates; a broken preset leaves the lab as it was.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use std::path::Path;
use std::time::Duration;

use common_e2e::{
    browser, csp_violations, js, map_coverage, native_report, numbers_as_floats, open, report, require_dist,
    require_test_hooks_dist, save_screenshot, serve, set_viewport, wait_for, LAB_CSP,
};
use fantoccini::Locator;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contiguous_to_paged_lifts_utilisation_and_errors_keep_the_lab() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;

    // The default setup is the contiguous one, run to the end.
    let state: Value = js(c, "return kvlab.state()").await;
    assert_eq!(state["preset"]["id"], "contiguous-default");
    js(c, "kvlab.runToEnd(); return null").await;
    let contiguous = report(c).await;
    assert_eq!(contiguous["allocator"], "contiguous");
    // The run ends with the step that crosses 60 s.
    assert!(contiguous["sim_time_s"].as_f64().is_some_and(|t| (60.0..60.5).contains(&t)), "{contiguous}");
    let util_contiguous = contiguous["kv"]["utilization_mean"].as_f64().unwrap();
    assert!(util_contiguous < 0.6, "contiguous should waste memory: {util_contiguous}");
    assert_eq!(contiguous, native_report("contiguous-default"), "wasm and native runs differ");
    assert!(map_coverage(c, "map-0").await > 0.3, "the contiguous map is blank");
    let legend = "return [...document.querySelectorAll('.legend li')].filter(li => getComputedStyle(li).display !== 'none').map(li => li.innerText.trim()).join('|')";
    let shown = js(c, legend).await;
    assert!(
        shown.as_str().unwrap().contains("slab start") && !shown.as_str().unwrap().contains("shared block"),
        "{shown}"
    );
    // The article's words, where the map shows them: the dark-red reserved tail and the holes.
    let words = shown.as_str().unwrap();
    assert!(words.contains("reservation waste") && words.contains("external fragmentation"), "{words}");
    assert!(!words.contains("internal fragmentation"), "{words}");

    // Switch to paged with the allocator control, as a learner would.
    c.find(Locator::Css(".segmented label:nth-child(2)")).await.unwrap().click().await.unwrap();
    js(c, "kvlab.runToEnd(); return null").await;
    let paged = report(c).await;
    assert_eq!(paged["allocator"], "paged");
    let util_paged = paged["kv"]["utilization_mean"].as_f64().unwrap();
    assert!(util_paged >= 0.97, "paged utilisation {util_paged} < 0.97");
    assert_eq!(paged["requests"]["arrived"], contiguous["requests"]["arrived"], "same traffic");
    assert!(map_coverage(c, "map-0").await > 0.3, "the paged map is blank");
    let shown = js(c, legend).await;
    assert!(
        !shown.as_str().unwrap().contains("slab start") && !shown.as_str().unwrap().contains("copy-on-write"),
        "vLLM v1 never copies a block, so the legend lists no copy-on-write: {shown}"
    );
    let words = shown.as_str().unwrap();
    assert!(words.contains("internal fragmentation") && !words.contains("reservation waste"), "{words}");
    assert!(!words.contains("sliding window"), "no window in this model: {words}");
    let metrics = c.find(Locator::Id("metrics-table")).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("kv_cache_usage_perc") && metrics.contains("num_preemptions"), "{metrics}");
    let startup = c.find(Locator::Id("startup-line")).await.unwrap().text().await.unwrap();
    assert!(startup.starts_with("GPU KV cache size: 81,920 tokens"), "{startup}");
    assert!(startup.contains("null block") && startup.contains("81,904 tokens requests can use"), "{startup}");

    // Off-page runs agree with the native engine too.
    let json =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/presets/parallel-sampling.json"))
            .unwrap();
    let off_page = js(c, &format!("return kvlab.simulatePreset({})", serde_json::to_string(&json).unwrap())).await;
    assert_eq!(numbers_as_floats(off_page), native_report("parallel-sampling"));

    // A broken preset through the API: an error naming the field, the lab unchanged.
    let thrown = js(
        c,
        r#"try { kvlab.loadPreset('{"schema":"kvlab/preset@1","scheduler":{"max_num_seqs":0}}'); return null; } catch (e) { return String(e.message); }"#,
    )
    .await;
    assert!(thrown.as_str().unwrap_or("").contains("scheduler.max_num_seqs"), "{thrown}");
    let msg = c.find(Locator::Css("#messages .msg")).await.expect("a message on the page");
    assert!(msg.is_displayed().await.unwrap(), "the message is not visible");
    assert!(msg.text().await.unwrap().contains("scheduler.max_num_seqs"));
    assert_eq!(report(c).await, paged, "a rejected preset changed the lab");
    // The same as an object: read as its JSON, refused by the same field; a value with no JSON
    // (a function) is refused by name; the lab runs on.
    let thrown = js(
        c,
        r#"try { kvlab.loadPreset({ schema: "kvlab/preset@1", scheduler: { max_num_seqs: 0 } }); return null; } catch (e) { return String(e.message); }"#,
    )
    .await;
    assert!(thrown.as_str().unwrap_or("").contains("scheduler.max_num_seqs"), "{thrown}");
    let thrown = js(c, "try { kvlab.loadPreset(() => 1); return null; } catch (e) { return String(e.message); }").await;
    assert!(thrown.as_str().unwrap_or("").starts_with("preset: "), "{thrown}");
    assert_eq!(report(c).await, paged, "a rejected preset changed the lab");

    // Broken JSON through the page's JSON editor.
    c.find(Locator::Css("#json-editor summary")).await.unwrap().click().await.unwrap();
    let ta = c.find(Locator::Id("preset-json")).await.unwrap();
    ta.clear().await.unwrap();
    ta.send_keys("{ \"schema\": \"kvlab/preset@1\", ").await.unwrap();
    c.find(Locator::Css("[data-action=apply-json]")).await.unwrap().click().await.unwrap();
    // The reason is under the editor, and the typed text stays in it.
    let under = c.find(Locator::Id("preset-json-error")).await.expect("the reason under the editor");
    assert!(under.text().await.unwrap().contains("not valid JSON"), "{}", under.text().await.unwrap());
    assert_eq!(ta.prop("value").await.unwrap().as_deref(), Some("{ \"schema\": \"kvlab/preset@1\", "));
    assert_eq!(report(c).await, paged, "broken JSON changed the lab");

    // A bad value typed into a control: the control keeps it, marked, with the reason beside it.
    let seqs = c.find(Locator::Css("[data-path='scheduler.max_num_seqs']")).await.unwrap();
    seqs.send_keys("\u{E009}a\u{E000}0\n").await.unwrap(); // Ctrl+A, then type 0 and Enter
    assert_eq!(seqs.prop("value").await.unwrap().as_deref(), Some("0"), "the control snapped back");
    assert_eq!(seqs.attr("aria-invalid").await.unwrap().as_deref(), Some("true"));
    let reason = js(c, "return document.getElementById(document.querySelector(\"[data-path='scheduler.max_num_seqs']\").getAttribute('aria-describedby')).textContent").await;
    assert!(reason.as_str().unwrap().contains("scheduler.max_num_seqs"), "{reason}");
    assert_eq!(report(c).await, paged);

    // The map answers the keyboard: focus it, move the cursor, the inspector describes a cell.
    c.find(Locator::Id("map-0")).await.unwrap().send_keys("\u{E014}").await.unwrap(); // ArrowRight
                                                                                      // The inspector is redrawn on the next animation frame, not inside the key handler.
    wait_for(
        c,
        "document.getElementById('inspector').innerText.includes('Block 0')",
        "the inspector to describe block 0",
    )
    .await;

    js(c, "kvlab.runTo(30); return null").await;
    save_screenshot(c, "e2e-lab-paged.png").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_reproduce_the_lab_and_bad_links_are_reported() {
    let base = serve(require_dist()).await;
    let b = browser(1280, 720).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;

    // Compare mode at 30 s with a changed knob, then the link, in embed mode.
    js(c, "kvlab.setCompare(true); kvlab.setField('scheduler.max_num_seqs', '128'); kvlab.runTo(30); return null")
        .await;
    let state = js(c, "return kvlab.state()").await;
    let reports = js(c, "return kvlab.reports()").await;
    let link = js(c, "return kvlab.shareUrl()").await.as_str().unwrap().to_string();
    assert!(link.contains("#lab="), "{link}");
    let embed = link.replacen("?autoplay=0", "?autoplay=0&embed=1", 1);
    open(c, &embed).await;
    assert_eq!(js(c, "return kvlab.state()").await, state, "the link did not reproduce the state");
    assert_eq!(js(c, "return kvlab.reports()").await, reports, "the link did not reproduce the runs");
    assert!(
        c.find(Locator::Id("map-panel-1")).await.unwrap().is_displayed().await.unwrap(),
        "compare mode shows two maps"
    );
    assert!(
        !c.find(Locator::Id("controls")).await.unwrap().is_displayed().await.unwrap(),
        "embed mode hides the settings"
    );
    assert!(map_coverage(c, "map-1").await > 0.2, "the paged map of compare mode is blank");
    // In an 800 × 500 iframe everything fits: the metric tiles end above the bottom edge.
    set_viewport(c, 800, 500).await;
    wait_for(c, "window.innerHeight === 500", "the 800 × 500 viewport").await;
    wait_for(
        c,
        "(() => { const t = document.querySelector('#metrics-table tbody').getBoundingClientRect(); \
          return document.documentElement.scrollHeight <= innerHeight && t.bottom <= innerHeight - 4; })()",
        "the compare embed to fit its iframe",
    )
    .await;
    save_screenshot(c, "e2e-embed-compare.png").await;

    // Playback runs on its own; Space pauses it; exports work.
    open(c, &format!("{base}?autoplay=0")).await;
    js(c, "kvlab.setSpeed(10); kvlab.play(); return null").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let t = js(c, "return kvlab.now()").await.as_f64().unwrap();
    assert!(t > 0.5, "playback did not advance: {t} s");
    c.find(Locator::Css("body")).await.unwrap().send_keys(" ").await.unwrap();
    assert_eq!(js(c, "return kvlab.isPlaying()").await, json!(false), "Space did not pause");
    let csv = js(c, "return kvlab.seriesCsv()").await;
    assert!(csv.as_str().unwrap().starts_with("allocator,t_s,allocated_tokens,live_tokens"), "{csv}");
    let png = js(c, "return kvlab.mapPng()").await;
    assert!(png.as_str().unwrap().starts_with("data:image/png;base64,"));
    let png = js(c, "return kvlab.chartPng()").await;
    assert!(png.as_str().unwrap().len() > 5_000, "the chart PNG is empty");

    // A damaged link: a message, and the lab runs the default.
    open(c, &format!("{base}?autoplay=0&preset=bursty#lab=bm90IGpzb24")).await;
    let errors = js(c, "return kvlab.errors()").await;
    assert!(errors.to_string().contains("lab state"), "{errors}");
    let s: Value = js(c, "return kvlab.state()").await;
    assert_eq!(s["preset"]["id"], "bursty");
    js(c, "kvlab.runTo(5); return null").await;
    assert_eq!(report(c).await["sim_time_s"].as_f64().map(|t| t >= 5.0), Some(true));

    // An unknown preset id: a message naming the known ones.
    open(c, &format!("{base}?autoplay=0&preset=nope")).await;
    assert!(js(c, "return kvlab.errors()").await.to_string().contains("contiguous-default"));
    // The release bundle has no test hooks.
    assert_eq!(js(c, "return typeof kvlab.testPanic + typeof kvlab.benchFrames").await, json!("undefinedundefined"));
    b.close().await;
}

/// A panic is reported on the page instead of freezing it. Only the bundle built with the
/// `test-hooks` feature (scripts/test-web.sh) can panic on demand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_reported_on_the_page() {
    let base = serve(require_test_hooks_dist()).await;
    let b = browser(1280, 720).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;
    js(c, "try { kvlab.testPanic(); } catch (e) {} return null").await;
    let panic = c.find(Locator::Id("panic")).await.unwrap();
    assert!(panic.is_displayed().await.unwrap(), "the panic report is not visible");
    assert!(panic.text().await.unwrap().contains("internal error"));
    b.close().await;
}

/// The CSP check of every test can fail: a page with an inline script and an inline style, in
/// the page and in a frame, is caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_csp_check_catches_inline_script_and_style() {
    let dir = std::env::temp_dir().join(format!("kvlab-csp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{LAB_CSP}\">");
    std::fs::write(
        dir.join("index.html"),
        format!("<!doctype html>{head}<script>1</script><iframe src=\"f.html\"></iframe>"),
    )
    .unwrap();
    std::fs::write(dir.join("f.html"), format!("<!doctype html>{head}<p style=\"color: red\">frame</p>")).unwrap();
    let base = serve(dir).await;
    let b = browser(800, 600).await;
    let c = &b.client;
    c.goto(&base).await.unwrap();
    wait_for(c, "document.querySelector('iframe').contentDocument.readyState === 'complete'", "the frame").await;
    let v = csp_violations(c).await;
    assert!(v.iter().any(|m| m.contains("inline script")), "{v:?}");
    assert!(v.iter().any(|m| m.contains("f.html") && m.contains("inline style")), "{v:?}");
    assert!(csp_violations(c).await.is_empty(), "each violation is reported once");
    b.close().await;
}

/// Compare mode's metrics table fits its panel at 1,400 px with the largest numbers the shipped
/// presets reach (h200-scale at its end: five-digit queues, six-digit latencies): nothing hidden
/// behind a horizontal scroll, the paged column whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compare_table_fits_its_panel_with_h200_scale_numbers() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    for preset in ["h200-scale", "long-report-2gb", "contiguous-default"] {
        open(c, &format!("{base}?autoplay=0&preset={preset}&compare=1")).await;
        js(c, "kvlab.runToEnd(); return null").await;
        let fit = js(
            c,
            "const w = document.querySelector('.metrics .table-wrap'), t = document.getElementById('metrics-table');
             const right = w.getBoundingClientRect().right;
             const over = [...t.querySelectorAll('td, th')].filter(e => e.getBoundingClientRect().right > right + 0.5)
               .map(e => e.textContent.trim().slice(0, 24));
             return { scroll: w.scrollWidth - w.clientWidth, over }",
        )
        .await;
        assert_eq!(fit, json!({ "scroll": 0, "over": [] }), "{preset}: the compare table overflows its panel");
    }
    // Side by side at 1400 px, neither map's title is cut, and the maps start level.
    let titles = js(
        c,
        "const cut = [...document.querySelectorAll('.run-kind')].filter(e => e.getClientRects().length > 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent);
         const [a, b] = ['map-0', 'map-1'].map(id => document.getElementById(id).getBoundingClientRect().top);
         return { cut, level: Math.abs(a - b) < 1 }",
    )
    .await;
    assert_eq!(titles, json!({ "cut": [], "level": true }), "compare mode's map titles");
    save_screenshot(c, "e2e-compare-table-1400.png").await;
    b.close().await;
}
