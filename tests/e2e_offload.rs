//! End-to-end test of the host-memory KV tier on the page (`kv_offload`, docs/OFFLOAD.md) in the
//! built page (dist/, headless Chromium): a preset with a tier, given to the first view, is
//! handed to the full lab, which runs it as the native engine does (the report bit for bit) and
//! draws the tier's band under the map; hovering a chunk describes it in the inspector and
//! frames its request; a preset without a tier hides the band. The settings form's host-tier
//! field, typed into in the first view, hands the page over too, and earns mission 12's three
//! stars. Screenshots land in target/screenshots/.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{
    browser, js, map_coverage, numbers_as_floats, open, report, require_dist, save_screenshot, serve, wait_for,
    wait_full,
};
use serde_json::{json, Value};

/// Twelve tenants, each with a 4,000-token system prompt, on a 4 GiB pool that cannot keep
/// them all: the host tier keeps every tenant's prefix.
const PRESET: &str = include_str!("../docs/examples/host-tier.json");

fn native_report() -> Value {
    let config = kvlab::formats::preset::parse_preset(PRESET).expect("the example preset is valid");
    let mut sim = kvlab::engine::Simulation::new(config).expect("valid config");
    numbers_as_floats(serde_json::to_value(sim.run_to_end()).expect("a report"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tier_preset_runs_in_the_full_lab_with_its_band_under_the_map_linked_to_the_inspector() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 1000).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=prefix-caching")).await;
    assert_eq!(js(c, "return kvlab.module()").await, json!("first-view"));
    assert_eq!(js(c, "return document.getElementById('host-band-0').hidden").await, json!(true));

    // The first view hands the preset to the full lab, which loads it.
    js(c, &format!("kvlab.loadPreset({}); return null", json!(PRESET))).await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.kv_offload?.cpu_gib === 24", "the host-tier preset in the full lab").await;
    js(c, "kvlab.runTo(40); return null").await;
    wait_for(c, "!document.getElementById('host-band-0').hidden", "the host band").await;
    let coverage = map_coverage(c, "host-0").await;
    assert!(coverage > 0.05, "the band draws the tier's chunks ({coverage:.3} of its pixels)");
    let caption = js(c, "return document.getElementById('host-sub-0').textContent").await;
    assert!(caption.as_str().is_some_and(|t| t.contains("held")), "{caption}");

    // The first chunk id is the first one stored: hovering it describes it and its request.
    js(
        c,
        "const m = document.getElementById('host-0'); const r = m.getBoundingClientRect(); \
         m.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + 1, clientY: r.top + 1, bubbles: true })); return null",
    )
    .await;
    wait_for(
        c,
        "document.getElementById('inspector').textContent.includes('Host chunk')",
        "the inspector on a host chunk",
    )
    .await;
    let text = js(c, "return document.getElementById('inspector').textContent").await;
    let text = text.as_str().unwrap_or_default();
    assert!(text.contains("KV offload") && text.contains("request #"), "{text}");
    save_screenshot(c, "offload-host-band.png").await;

    // The full lab's run is the native engine's, host tier and all.
    js(c, "kvlab.runToEnd(); return null").await;
    let got = report(c).await;
    assert_eq!(got, native_report());
    let hits = got["offload"]["offload_hits"].as_f64().unwrap_or(0.0);
    assert!(hits > 0.0, "the tier is hit: {}", got["offload"]);

    // A preset without a tier hides the band.
    js(c, "kvlab.loadPresetId('prefix-caching'); kvlab.runTo(5); return null").await;
    wait_for(c, "document.getElementById('host-band-0').hidden", "the band hidden without a tier").await;
    b.close().await;
}

/// Types `gib` into the settings form's host-tier field, as a reader does (the form applies a
/// field on change).
async fn type_host_tier(c: &fantoccini::Client, gib: &str) {
    let script = format!(
        "const i = document.querySelector(\"[data-path='kv_offload.cpu_gib']\"); i.value = '{gib}'; \
         i.dispatchEvent(new Event('change', {{ bubbles: true }})); return null"
    );
    js(c, &script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_host_tier_field_hands_the_first_view_over_and_earns_mission_twelves_stars() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 1000).await;
    let c = &b.client;
    // In the first view the field shows 0 (no tier); a size hands the page to the full lab.
    open(c, &format!("{base}?autoplay=0&preset=prefix-caching")).await;
    let field = "return document.querySelector(\"[data-path='kv_offload.cpu_gib']\").value";
    assert_eq!(js(c, field).await, json!("0"));
    type_host_tier(c, "32").await;
    wait_full(c).await;
    wait_for(c, "kvlab.state().preset.kv_offload?.cpu_gib === 32", "the host tier set in the full lab").await;
    assert_eq!(js(c, field).await, json!("32"));
    // 0 takes the tier out again.
    type_host_tier(c, "0").await;
    wait_for(c, "kvlab.state().preset.kv_offload === undefined", "no host tier").await;

    // Mission 12: the broken setup earns nothing, a tier the GPU pool's size nothing either,
    // the hint's 16 GiB three stars.
    open(c, &format!("{base}?mission=m12-host-tier&autoplay=0")).await;
    wait_full(c).await;
    for (gib, stars) in [("", 0), ("4", 0), ("16", 3)] {
        if !gib.is_empty() {
            type_host_tier(c, gib).await;
        }
        js(c, "kvlab.runToEnd(); return null").await;
        wait_for(c, "kvlab.missionScore().final === true", "the mission's run to end").await;
        let score = js(c, "return kvlab.missionScore()").await;
        assert_eq!(score["stars"], json!(stars), "host tier {gib:?}: {score}");
    }
    save_screenshot(c, "offload-mission-12-three-stars.png").await;
    b.close().await;
}
