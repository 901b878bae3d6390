//! End-to-end tests (dist/ in headless Chromium) of a fleet in the lab (docs/ROUTING.md): a
//! preset with `replicas` loads into the full lab and runs as its replicas behind the router,
//! each replica's memory map drawn side by side and titled with what it was sent, the replica
//! the last arrival went to framed and the router's line under the maps; its report is the one
//! `kvlab run` gives; a replica's cell is inspected on its own map; Compare and a fleet too
//! large to draw are refused under `replicas` while the lab keeps its run.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{
    browser, js, map_coverage, numbers_as_floats, open, repo_path, require_dist, save_screenshot, serve, wait_for,
    wait_full,
};
use serde_json::json;

/// Opens the lab on `bursty` and loads `docs/examples/fleet-prefix.json` through the JS handle,
/// which hands the page to the full lab; returns the preset's text.
async fn load_fleet(c: &fantoccini::Client, base: &str) -> String {
    open(c, &format!("{base}?preset=bursty&autoplay=0")).await;
    let text = std::fs::read_to_string(repo_path("docs/examples/fleet-prefix.json")).unwrap();
    js(c, &format!("kvlab.loadPreset({}); return null", json!(text))).await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.id === 'fleet-prefix'", "the fleet preset").await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_preset_runs_as_its_replicas_maps_side_by_side_with_the_routers_choices() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    let text = load_fleet(c, &base).await;
    js(c, "kvlab.runTo(40); return null").await;
    wait_for(c, "document.getElementById('maps').classList.contains('fleet')", "the fleet's maps").await;
    let shown = js(
        c,
        "return [...document.querySelectorAll('#maps .map-panel')].filter(p => !p.hidden).map(p => p.querySelector('.run-kind').textContent)",
    )
    .await;
    let titles: Vec<&str> = shown.as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    for (i, t) in titles.iter().enumerate() {
        assert!(t.starts_with(&format!("Replica {} · ", i + 1)) && t.contains("prefix hits"), "{t}");
    }
    for i in 0..4 {
        assert!(map_coverage(c, &format!("map-{i}")).await > 0.2, "replica {i}'s map is drawn");
    }
    let note = js(c, "const n = document.getElementById('router-note'); return n.hidden ? '' : n.textContent").await;
    let note = note.as_str().unwrap();
    assert!(
        note.starts_with("Router: prefix_aware. Requests sent so far: ") && note.contains("went to replica"),
        "{note}"
    );
    let rule = js(c, "return document.getElementById('router-note').title").await;
    assert!(rule.as_str().unwrap().starts_with("llm-d's scorers: queue × 2"), "{rule}");
    assert_eq!(js(c, "return document.querySelectorAll('#maps .map-panel.routed').length").await, json!(1));
    // The report is the fleet's, as the native engine gives it at the same time.
    let report = numbers_as_floats(js(c, "return kvlab.report()").await);
    assert_eq!(report["fleet"]["replicas"], json!(4.0));
    let mut fleet = kvlab::engine::fleet::Fleet::new(kvlab::formats::preset::parse_preset(&text).unwrap()).unwrap();
    fleet.run_until(40_000_000);
    assert_eq!(report, numbers_as_floats(serde_json::to_value(fleet.report()).unwrap()));
    // A cell of the third replica's map is described there.
    js(
        c,
        "const m = document.getElementById('map-2'); const r = m.getBoundingClientRect(); \
         m.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + 2, clientY: r.top + 2, bubbles: true })); return null",
    )
    .await;
    wait_for(
        c,
        "document.querySelector('#inspector .insp-run') && document.querySelector('#inspector .insp-run').textContent.startsWith('Replica 3')",
        "the inspector on replica 3",
    )
    .await;
    save_screenshot(c, "fleet-prefix-1400x900.png").await;

    // Compare sets one replica's allocators side by side: refused under `replicas`, the fleet kept.
    c.find(fantoccini::Locator::Id("compare-toggle")).await.unwrap().click().await.unwrap();
    wait_for(c, "document.body.innerText.includes('compare sets one replica')", "Compare's refusal on the page").await;
    assert_eq!(js(c, "return kvlab.state().compare").await, json!(false));
    assert_eq!(js(c, "return document.getElementById('compare-toggle').checked").await, json!(false));
    save_screenshot(c, "fleet-compare-refused-1400x900.png").await;
    let mut big: serde_json::Value = serde_json::from_str(&text).unwrap();
    big["replicas"] = json!(20);
    let refused = js(
        c,
        &format!(
            "try {{ kvlab.loadPreset({}); return '' }} catch (e) {{ return String(e.message || e) }}",
            json!(big.to_string())
        ),
    )
    .await;
    assert!(refused.as_str().unwrap().starts_with("replicas: the page draws up to 16 replicas"), "{refused}");
    assert_eq!(js(c, "return kvlab.state().preset.id").await, json!("fleet-prefix"), "the lab keeps its run");
}

/// Sets the settings form's control at `path` to `value`, as a reader does (the form applies a
/// field on change).
async fn set_control(c: &fantoccini::Client, path: &str, value: &str) {
    let script = format!(
        "const i = document.querySelector(\"#controls [data-path='{path}']:not([type=range])\"); i.value = '{value}'; \
         i.dispatchEvent(new Event('change', {{ bubbles: true }})); return null"
    );
    js(c, &script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_replicas_and_router_hand_over_and_earn_mission_thirteens_stars() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 1000).await;
    let c = &b.client;
    // In the first view the fields show one replica behind round robin; more replicas hand the
    // page to the full lab, which runs the fleet.
    open(c, &format!("{base}?autoplay=0&preset=prefix-caching")).await;
    let value = |path: &str| format!("return document.querySelector(\"#controls [data-path='{path}']\").value");
    assert_eq!(js(c, &value("replicas")).await, json!("1"));
    assert_eq!(js(c, &value("router.policy")).await, json!("round_robin"));
    set_control(c, "replicas", "2").await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.replicas === 2", "two replicas in the full lab").await;
    set_control(c, "router.policy", "kv_aware").await;
    wait_for(c, "kvlab.state().preset.router?.policy === 'kv_aware'", "the router set").await;
    js(c, "kvlab.runTo(10); return null").await;
    assert_eq!(js(c, "return kvlab.report().fleet.policy").await, json!("kv_aware"));

    // Mission 13: round robin earns nothing, prefix-aware routing picked in the settings three
    // stars, kept in the browser for the hub.
    open(c, &format!("{base}?mission=m13-routing&autoplay=0")).await;
    wait_full(c).await;
    for (policy, stars) in [("", 0), ("prefix_aware", 3)] {
        if !policy.is_empty() {
            set_control(c, "router.policy", policy).await;
            wait_for(c, &format!("kvlab.state().preset.router?.policy === '{policy}'"), "the router set").await;
        }
        js(c, "kvlab.runToEnd(); return null").await;
        wait_for(c, "kvlab.missionScore().final === true", "the mission's run to end").await;
        let score = js(c, "return kvlab.missionScore()").await;
        assert_eq!(score["stars"], json!(stars), "router {policy:?}: {score}");
    }
    let kept = js(c, "return localStorage.getItem('kvlab.stars.v1') || ''").await;
    assert!(kept.as_str().unwrap().contains("m13-routing"), "{kept}");
    save_screenshot(c, "fleet-mission-13-three-stars.png").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_fleet_draws_every_replica_within_its_frame() {
    let base = serve(require_dist()).await;
    let b = browser(900, 520).await;
    let c = &b.client;
    load_fleet(c, &base).await;
    wait_for(c, "location.hash.length > 10", "the fleet's link").await;
    let hash = js(c, "return location.hash").await;
    // The link in an embed: the full lab (its module runs fleets), the four maps in the frame.
    open(c, &format!("{base}?embed=1&autoplay=0{}", hash.as_str().unwrap())).await;
    wait_full(c).await;
    js(c, "kvlab.runTo(30); return null").await;
    wait_for(c, "document.getElementById('maps').classList.contains('fleet')", "the fleet's maps").await;
    let boxes = js(
        c,
        "return [...document.querySelectorAll('#maps .map-panel')].filter(p => !p.hidden).map(p => { \
           const r = p.querySelector('canvas.map').getBoundingClientRect(); return [r.width, r.height, r.bottom]; })",
    )
    .await;
    let boxes = boxes.as_array().unwrap();
    assert_eq!(boxes.len(), 4, "{boxes:?}");
    let viewport = js(c, "return window.innerHeight").await.as_f64().unwrap();
    for b in boxes {
        let (w, h, bottom) = (b[0].as_f64().unwrap(), b[1].as_f64().unwrap(), b[2].as_f64().unwrap());
        assert!(w >= 150.0 && h >= 60.0, "a replica's map is squeezed: {w} × {h}");
        assert!(bottom <= viewport + 1.0, "a replica's map is below the frame: {bottom} > {viewport}");
    }
    save_screenshot(c, "fleet-embed-900x520.png").await;
}
