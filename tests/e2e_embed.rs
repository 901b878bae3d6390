//! End-to-end tests of the embedded lab (`?embed=1`) in the built page (dist/, headless
//! Chromium through chromedriver): it fits the frames docs pages give it (no scrolling either
//! way, the map at least 40% of the height, the transport visible, compare mode stacked when
//! narrow, the inspector over the chart rather than pushing it), the dark theme, and hash
//! navigation. Screenshots land in target/screenshots/.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{browser, browser_with, js, open, require_dist, save_screenshot, serve, set_viewport, wait_for};
use fantoccini::Client;
use serde_json::json;
use serde_json::Value;

/// The frame sizes a docs page gives the lab, and the widest it must not scroll sideways at.
const SIZES: [(u32, u32); 3] = [(360, 640), (600, 400), (800, 500)];

/// Everything that tells whether the embed fits its frame, measured in the page.
const MEASURE: &str = r#"
const se = document.scrollingElement, vh = innerHeight, vw = innerWidth;
const box = (sel) => { const e = document.querySelector(sel); if (!e) return null;
  const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, h: r.height, w: r.width }; };
const wide = [...document.querySelectorAll('#kvlab *')].filter(e => e.getClientRects().length > 0)
  .map(e => [e, e.getBoundingClientRect()]).filter(([e, r]) => r.right > vw + 0.5 || r.left < -0.5)
  .slice(0, 5).map(([e, r]) => `${e.tagName}#${e.id}.${e.className}: ${r.left.toFixed(1)}–${r.right.toFixed(1)}`);
return { vw, vh, scroll_w: se.scrollWidth, client_w: se.clientWidth, scroll_h: se.scrollHeight, client_h: se.clientHeight,
  map_panel: box('#map-panel-0'), map_wrap: box('#map-panel-0 .map-wrap'), map_canvas: box('#map-0'),
  map_panel_1: box('#map-panel-1'), transport: box('.transport'), play: box('#play-btn'), scrub: box('#scrubber'),
  open_full: box('#open-full'), chart: box('#chart-kv'), inspector: box('#inspector'), legend: box('#map-legend'), wide };
"#;

/// What a mission embed hides: boxes that scroll inside the frame, text of the mission panel
/// outside the frame or cut by its own box, and the chart's plot height (the canvas less the
/// 15 px top margin and the 22 px time-label band of src/web/chart.rs's `draw_kv`).
const MISSION_FIT: &str = r#"
const vh = innerHeight, vw = innerWidth;
const shown = [...document.querySelectorAll('#kvlab *')].filter(e => e.getClientRects().length > 0);
const scrolls = shown.filter(e => { const s = getComputedStyle(e);
  return /(auto|scroll)/.test(s.overflowY + s.overflowX) && (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1); })
  .map(e => `${e.tagName}#${e.id}.${e.className}`);
const cut = [...document.querySelectorAll('#mission *')].filter(e => e.getClientRects().length > 0
    && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .filter(e => { const r = e.getBoundingClientRect();
    return r.bottom > vh + 0.5 || r.right > vw + 0.5 || e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1; })
  .map(e => `${e.tagName}.${e.className} "${e.textContent.trim().slice(0, 30)}"`);
const plot = document.getElementById('chart-kv').getBoundingClientRect().height - 37;
return { scrolls, cut, plot };
"#;

async fn measure(c: &Client) -> Value {
    js(c, MEASURE).await
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64().unwrap_or_else(|| panic!("{path:?} missing in {v}"))
}

/// Asserts the embed fits a `w` × `h` frame (no scrolling, the drawn map ≥ 40% of the height,
/// the transport inside the frame).
fn assert_fits(m: &Value, what: &str) {
    let (vw, vh) = (f(m, &["vw"]), f(m, &["vh"]));
    assert!(f(m, &["scroll_w"]) <= f(m, &["client_w"]), "{what}: scrolls sideways: {m}");
    assert!(f(m, &["scroll_h"]) <= f(m, &["client_h"]), "{what}: scrolls down: {m}");
    assert!(m["wide"].as_array().unwrap().is_empty(), "{what}: elements past the frame's edges: {}", m["wide"]);
    let map_h = f(m, &["map_panel", "h"]);
    assert!(map_h >= 0.4 * vh, "{what}: the map panel is {map_h} px of {vh} px: {m}");
    // The drawn map itself (the canvas, which fills its box) takes 40% of the frame too.
    let drawn = f(m, &["map_canvas", "h"]);
    assert!(drawn >= 0.4 * vh, "{what}: the drawn map is {drawn} px of {vh} px: {m}");
    assert!(
        f(m, &["map_canvas", "w"]) >= f(m, &["map_wrap", "w"]) - 1.0,
        "{what}: the map leaves its box's width: {m}"
    );
    for part in ["play", "scrub", "open_full", "chart"] {
        let (top, bottom, right) = (f(m, &[part, "top"]), f(m, &[part, "bottom"]), f(m, &[part, "right"]));
        assert!(top >= 0.0 && bottom <= vh && right <= vw, "{what}: {part} is not inside the frame: {m}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embed_fits_every_frame_without_scrolling() {
    let base = serve(require_dist()).await;
    let b = browser(800, 600).await;
    let c = &b.client;
    for theme in ["light", "dark"] {
        for (w, h) in SIZES {
            set_viewport(c, w, h).await;
            open(c, &format!("{base}?embed=1&autoplay=0&theme={theme}")).await;
            js(c, "kvlab.runTo(30); return null").await;
            wait_for(c, &format!("innerWidth === {w} && innerHeight === {h}"), "the frame size").await;
            let m = measure(c).await;
            println!("{theme} {w}×{h}: {m}");
            assert_fits(&m, &format!("{theme} {w}×{h}"));
            // The legend stays (one line in short frames), and no metric tile shown cuts its label.
            let legible = js(
                c,
                "const body = document.querySelector('.metrics-table tbody').getBoundingClientRect();
                 const cut = [...document.querySelectorAll('.metrics-table tr.key th')]
                   .filter(e => e.getClientRects().length > 0 && e.getBoundingClientRect().top < body.bottom && e.scrollWidth > e.clientWidth + 1)
                   .map(e => e.textContent.trim());
                 return { legend: getComputedStyle(document.querySelector('.legend')).display !== 'none', cut }",
            )
            .await;
            assert_eq!(legible, json!({ "legend": true, "cut": [] }), "{theme} {w}×{h}");
            save_screenshot(c, &format!("e2e-embed-{theme}-{w}x{h}.png")).await;
        }
    }
    // A mission in an embed, in every documented frame: the page does not scroll, nothing
    // scrolls inside it (the goals are one line each, the story and buttons stay in the full
    // lab), no text of the panel is cut by the frame, the chart keeps 80 px (a plot of 40 px
    // or more) and the map what is left (at least 15% of the frame).
    // Missions 1 and 2 have the longest tasks and goal labels and four goal cards.
    for (mission, (w, h)) in ["m3-preemption-storm", "m1-paging", "m2-block-size"]
        .into_iter()
        .flat_map(|m| SIZES.into_iter().map(move |s| (m, s)))
    {
        set_viewport(c, w, h).await;
        open(c, &format!("{base}?embed=1&autoplay=0&mission={mission}")).await;
        js(c, "kvlab.runToEnd(); return null").await;
        wait_for(c, &format!("innerWidth === {w} && innerHeight === {h}"), "the frame size").await;
        let m = measure(c).await;
        let inner = js(c, MISSION_FIT).await;
        println!("{mission} {w}×{h}: {inner} {m}");
        save_screenshot(c, &format!("e2e-embed-{mission}-{w}x{h}.png")).await;
        assert!(f(&m, &["scroll_w"]) <= f(&m, &["client_w"]) && f(&m, &["scroll_h"]) <= f(&m, &["client_h"]), "{m}");
        assert_eq!(inner["scrolls"], json!([]), "mission {w}×{h}: a box scrolls inside the frame");
        assert_eq!(inner["cut"], json!([]), "mission {w}×{h}: text cut by the frame or its box");
        assert!(f(&m, &["chart", "h"]) >= 80.0, "mission {w}×{h}: the chart is squeezed: {m}");
        assert!(f(&inner, &["plot"]) >= 40.0, "mission {w}×{h}: the plot is squeezed: {inner}");
        // The drawn map, not only its figure, has 15% of the frame, and it ends above the legend.
        let drawn = f(&m, &["map_canvas", "h"]);
        assert!(drawn >= 0.15 * f64::from(h), "{mission} {w}×{h}: the map is squeezed to {drawn} px: {m}");
        let (map_bottom, legend_top) = (f(&m, &["map_canvas", "bottom"]), f(&m, &["legend", "top"]));
        assert!(map_bottom <= legend_top + 0.5, "{mission} {w}×{h}: the map covers the legend: {m}");
        assert!(f(&m, &["legend", "h"]) >= 10.0, "{mission} {w}×{h}: no legend: {m}");
    }
    // Narrower than any documented size: still no sideways scrolling.
    set_viewport(c, 320, 560).await;
    open(c, &format!("{base}?embed=1&autoplay=0")).await;
    let m = measure(c).await;
    assert!(f(&m, &["scroll_w"]) <= f(&m, &["client_w"]), "320 px: scrolls sideways: {m}");
    assert!(m["wide"].as_array().unwrap().is_empty(), "320 px: {}", m["wide"]);
    b.close().await;
}

/// The relative luminance-like brightness (0–255) of a CSS `rgb(…)` colour.
fn brightness(css: &str) -> f64 {
    let nums: Vec<f64> = css
        .trim_start_matches("rgba(")
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    assert!(nums.len() >= 3, "not a colour: {css}");
    0.2126 * nums[0] + 0.7152 * nums[1] + 0.0722 * nums[2]
}

/// The page's background, the map canvas's gap colour and whether `auto` would be dark.
const COLOURS: &str = r#"
const c = document.getElementById('map-0'); const d = c.getContext('2d').getImageData(c.width - 1, c.height - 1, 1, 1).data;
return { body: getComputedStyle(document.body).backgroundColor, panel: getComputedStyle(document.querySelector('.stage')).backgroundColor,
  ink: getComputedStyle(document.body).color, map_corner: `rgb(${d[0]}, ${d[1]}, ${d[2]})`,
  scheme: getComputedStyle(document.documentElement).colorScheme, system_dark: matchMedia('(prefers-color-scheme: dark)').matches };
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn theme_dark_and_auto_follow_the_link_and_the_system() {
    let base = serve(require_dist()).await;
    // A light system: ?theme=dark makes the whole lab dark, map included.
    let b = browser(1200, 800).await;
    let c = &b.client;
    for embed in ["", "&embed=1"] {
        open(c, &format!("{base}?autoplay=0&theme=dark{embed}")).await;
        js(c, "kvlab.runTo(20); return null").await;
        let v = js(c, COLOURS).await;
        println!("dark{embed}: {v}");
        assert_eq!(v["system_dark"], Value::Bool(false), "this browser's system is light");
        assert!(brightness(v["body"].as_str().unwrap()) < 40.0, "dark{embed}: the page is not dark: {v}");
        assert!(brightness(v["ink"].as_str().unwrap()) > 180.0, "dark{embed}: text is not light: {v}");
        assert!(brightness(v["map_corner"].as_str().unwrap()) < 60.0, "dark{embed}: the map is not dark: {v}");
        assert_eq!(v["scheme"], "dark");
    }
    save_screenshot(c, "e2e-embed-dark-1200x800.png").await;
    open(c, &format!("{base}?autoplay=0")).await;
    let v = js(c, COLOURS).await;
    assert!(brightness(v["body"].as_str().unwrap()) > 200.0, "auto on a light system is light: {v}");
    b.close().await;

    // A dark system: auto (the default) is dark, ?theme=light stays light.
    let b = browser_with(1200, 800, &["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&embed=1")).await;
    let v = js(c, COLOURS).await;
    println!("auto on a dark system: {v}");
    assert_eq!(v["system_dark"], Value::Bool(true), "the browser did not take a dark system: {v}");
    assert!(brightness(v["body"].as_str().unwrap()) < 40.0, "auto on a dark system is dark: {v}");
    open(c, &format!("{base}?autoplay=0&embed=1&theme=light")).await;
    let v = js(c, COLOURS).await;
    assert!(brightness(v["body"].as_str().unwrap()) > 200.0, "theme=light wins over the system: {v}");
    assert!(brightness(v["map_corner"].as_str().unwrap()) > 200.0, "the light map: {v}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_fragment_updates_the_lab_without_a_reload() {
    let base = serve(require_dist()).await;
    let b = browser(1200, 800).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;
    js(c, "kvlab.setCompare(true); kvlab.setField('allocator.block_size', '32'); kvlab.runTo(12); return null").await;
    let wanted = js(c, "return kvlab.state()").await;
    let wanted_text = js(c, "return JSON.stringify(kvlab.state())").await;
    let link = js(c, "return kvlab.shareUrl()").await.as_str().unwrap().to_string();
    let fragment = &link[link.find('#').unwrap()..];

    open(c, &format!("{base}?autoplay=0")).await;
    js(c, "window.sameDocument = true; return null").await;
    assert_ne!(js(c, "return kvlab.state()").await, wanted);
    js(c, &format!("location.hash = {}; return null", serde_json::to_string(fragment).unwrap())).await;
    wait_for(c, &format!("JSON.stringify(kvlab.state()) === {wanted_text}"), "the lab to take the new fragment").await;
    assert_eq!(js(c, "return window.sameDocument === true").await, Value::Bool(true), "the page reloaded");
    assert_eq!(js(c, "return kvlab.now()").await.as_f64(), Some(12.0));
    assert!(js(c, "return !document.getElementById('map-panel-1').hidden").await.as_bool().unwrap());

    // A damaged fragment: a message, and the lab keeps what it shows.
    js(c, "location.hash = '#lab=bm90IGpzb24'; return null").await;
    wait_for(c, "kvlab.errors().join(' ').includes('lab state')", "the message about the damaged link").await;
    assert_eq!(js(c, "return kvlab.state()").await, wanted);
    b.close().await;
}

/// The lab's events as the example host page received them.
async fn host_events(c: &Client) -> Vec<Value> {
    js(c, "return JSON.stringify(window.kvlabEvents || [])")
        .await
        .as_str()
        .map(|s| serde_json::from_str::<Vec<Value>>(s).unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_page_on_another_origin_drives_the_lab_with_post_message() {
    let dist = require_dist();
    let lab = serve(dist.clone()).await;
    let host = serve(dist).await;
    assert_ne!(lab, host, "two origins");
    let b = browser(1000, 900).await;
    let c = &b.client;

    // The example host page (www/embed-example.html) embeds the lab from the other origin.
    c.goto(&format!("{host}embed-example.html?lab={lab}")).await.unwrap();
    wait_for(c, "(window.kvlabEvents || []).some(e => e.type === 'ready')", "the lab's ready event").await;
    wait_for(c, "window.kvlabEvents.some(e => e.type === 'resize')", "a resize event").await;
    let events = host_events(c).await;
    let ready = events.iter().find(|e| e["type"] == "ready").unwrap();
    assert_eq!(ready["state"]["preset"]["id"], "contiguous-default");
    assert_eq!(ready["playing"], Value::Bool(false));
    // The frame follows the lab's height.
    let resize = events.iter().rev().find(|e| e["type"] == "resize").unwrap();
    let frame_h = js(c, "return document.getElementById('lab').getBoundingClientRect().height").await;
    let want = resize["height"].as_f64().unwrap().max(320.0);
    assert!((frame_h.as_f64().unwrap() - want).abs() <= 3.0, "frame {frame_h} px, lab asked {resize}");

    // Commands from the host: paged blocks of one token at 30 s, read back from state events.
    js(
        c,
        "sendToLab({type: 'set', path: 'allocator.kind', value: 'paged'}); \
         sendToLab({type: 'set', path: 'allocator.block_size', value: 1}); \
         sendToLab({type: 'seek', t_s: 30}); return null",
    )
    .await;
    wait_for(
        c,
        "window.kvlabEvents.some(e => e.type === 'state' && e.t_s === 30 && e.state.preset.allocator.block_size === 1)",
        "a state event at 30 s with blocks of one token",
    )
    .await;
    let last = host_events(c).await.into_iter().rev().find(|e| e["type"] == "state").unwrap();
    assert_eq!(last["state"]["preset"]["allocator"]["kind"], "paged");
    assert_eq!(last["playing"], Value::Bool(false));

    // A bad command is answered with an error naming it; the lab keeps its state.
    js(c, "sendToLab({type: 'set', path: 'scheduler.max_num_seqs', value: 0}); return null").await;
    wait_for(c, "window.kvlabEvents.some(e => e.type === 'error')", "an error event").await;
    let error = host_events(c).await.into_iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["command"], "set");
    assert!(error["message"].as_str().unwrap().contains("scheduler.max_num_seqs"), "{error}");

    // Every command gets a reply: one that changes nothing gets the state it left, a sweep (the
    // full lab's Sweep panel) an error that says where sweeps run.
    let before = host_events(c).await.len();
    js(c, "sendToLab({type: 'speed', speed: 2}); return null").await;
    wait_for(
        c,
        &format!("window.kvlabEvents.slice({before}).some(e => e.type === 'state')"),
        "a state event answering a speed command",
    )
    .await;
    js(c, "sendToLab({type: 'sweep', knob: 'allocator.block_size', values: '8,16'}); return null").await;
    wait_for(
        c,
        "window.kvlabEvents.some(e => e.type === 'error' && e.command === 'sweep')",
        "an error answering sweep",
    )
    .await;
    let sweep = host_events(c).await.into_iter().find(|e| e["type"] == "error" && e["command"] == "sweep").unwrap();
    assert!(sweep["message"].as_str().unwrap().contains("full lab"), "{sweep}");

    // Compare mode, a shipped preset, then play to the end: `finished` with the report.
    js(
        c,
        "sendToLab({type: 'load', preset: 'parallel-sampling'}); sendToLab({type: 'compare', on: true}); return null",
    )
    .await;
    wait_for(
        c,
        "window.kvlabEvents.some(e => e.type === 'state' && e.state.compare && e.state.preset.id === 'parallel-sampling')",
        "compare mode on parallel sampling",
    )
    .await;
    js(c, "sendToLab({type: 'seek', t_s: 59.5}); sendToLab({type: 'play'}); return null").await;
    wait_for(c, "window.kvlabEvents.some(e => e.type === 'finished')", "the finished event").await;
    let finished = host_events(c).await.into_iter().find(|e| e["type"] == "finished").unwrap();
    // The run ends with the step that crosses 60 s.
    let end = finished["report"]["sim_time_s"].as_f64().unwrap();
    assert!((60.0..60.5).contains(&end), "{finished}");
    save_screenshot(c, "e2e-embed-host-page.png").await;

    // A page of an origin the lab does not list gets no events, and its commands are not
    // answered; a frame of the same lab that lists the page, loaded after it, is the control.
    let unlisted = format!("{lab}?embed=1&autoplay=0");
    let listed = format!("{lab}?embed=1&autoplay=0&origins={}", host.trim_end_matches('/'));
    // A page of the host's origin that may frame other sites (the lab's own pages may not: its
    // Content-Security-Policy keeps frames to its origin).
    c.goto(&format!("{host}embed-example.html")).await.unwrap();
    wait_for(c, "document.readyState === 'complete' && document.body", "the host's page").await;
    js(
        c,
        &format!(
            "window.got = {{ unlisted: [], listed: [] }}; \
             const mk = (id, src) => {{ const f = document.createElement('iframe'); f.id = id; f.src = src; document.body.appendChild(f); return f; }}; \
             const u = mk('unlisted', {}); const l = mk('listed', {}); \
             addEventListener('message', e => {{ if (e.source === u.contentWindow) got.unlisted.push(e.data); \
               if (e.source === l.contentWindow) got.listed.push(e.data); }}); return null",
            serde_json::to_string(&unlisted).unwrap(),
            serde_json::to_string(&listed).unwrap()
        ),
    )
    .await;
    wait_for(c, "got.listed.some(e => e.type === 'ready')", "the listed frame's ready event").await;
    js(
        c,
        "for (const id of ['unlisted', 'listed']) document.getElementById(id).contentWindow.postMessage({kvlab: 1, type: 'seek', t_s: 7}, '*'); return null",
    )
    .await;
    wait_for(c, "got.listed.some(e => e.type === 'state' && e.t_s === 7)", "the listed frame's answer").await;
    assert_eq!(js(c, "return got.unlisted.length").await, Value::from(0), "an unlisted origin heard the lab");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_mode_stacks_when_narrow_and_the_inspector_moves_nothing() {
    let base = serve(require_dist()).await;
    let b = browser(800, 600).await;
    let c = &b.client;
    let panels = "(() => { const a = document.getElementById('map-panel-0').getBoundingClientRect(), \
                  b = document.getElementById('map-panel-1').getBoundingClientRect(); \
                  return { stacked: b.top >= a.bottom - 1, side_by_side: Math.abs(b.top - a.top) < 1 && b.left >= a.right - 1, \
                  a_h: a.height, b_h: b.height }; })()";
    for (w, h, stacked) in [(360, 640, true), (800, 500, false)] {
        set_viewport(c, w, h).await;
        open(c, &format!("{base}?embed=1&autoplay=0&compare=1&t=30")).await;
        wait_for(c, &format!("innerWidth === {w} && innerHeight === {h}"), "the frame size").await;
        assert_eq!(js(c, "return kvlab.now()").await.as_f64(), Some(30.0), "?t=30");
        let m = measure(c).await;
        let p = js(c, &format!("return {panels}")).await;
        println!("compare {w}×{h}: {p} {m}");
        assert!(f(&m, &["scroll_w"]) <= f(&m, &["client_w"]) && f(&m, &["scroll_h"]) <= f(&m, &["client_h"]), "{m}");
        assert_eq!(p["stacked"].as_bool(), Some(stacked), "compare {w}×{h}: {p}");
        assert_eq!(p["side_by_side"].as_bool(), Some(!stacked), "compare {w}×{h}: {p}");
        let maps_h = if stacked { f(&p, &["a_h"]) + f(&p, &["b_h"]) } else { f(&p, &["a_h"]) };
        assert!(maps_h >= 0.4 * f64::from(h), "compare {w}×{h}: the maps take {maps_h} px: {p}");
        save_screenshot(c, &format!("e2e-embed-compare-{w}x{h}.png")).await;
    }

    // Hovering a cell opens the inspector over the chart: nothing below the map moves.
    for url in [format!("{base}?embed=1&autoplay=0&t=30"), format!("{base}?autoplay=0&t=30")] {
        set_viewport(c, 800, 500).await;
        open(c, &url).await;
        let before = js(c, "return document.getElementById('chart-kv').getBoundingClientRect().top").await;
        js(
            c,
            "const m = document.getElementById('map-0'), r = m.getBoundingClientRect(); \
             m.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + r.width / 2, clientY: r.top + r.height / 3, bubbles: true })); return null",
        )
        .await;
        wait_for(c, "document.querySelector('#inspector .insp-main')", "the inspector to describe a cell").await;
        let after = js(c, "return document.getElementById('chart-kv').getBoundingClientRect().top").await;
        assert_eq!(before, after, "{url}: the chart moved when the inspector opened");
        let shown = js(c, "return getComputedStyle(document.getElementById('inspector')).display !== 'none'").await;
        assert_eq!(shown, Value::Bool(true), "{url}: the inspector is hidden");
        save_screenshot(c, &format!("e2e-embed-inspector-{}.png", if url.contains("embed") { "embed" } else { "lab" }))
            .await;
        // The pointer moving anywhere else lets the cell go, even where the map fired no
        // `mouseleave` (a map hidden or moved under a still pointer).
        js(c, "document.body.dispatchEvent(new MouseEvent('mousemove', { bubbles: true })); return null").await;
        wait_for(c, "document.querySelector('#inspector .insp-hint')", "the inspector to let the cell go").await;
    }
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panels_leave_parts_out_and_the_map_takes_their_room() {
    let base = serve(require_dist()).await;
    let b = browser(800, 600).await;
    let c = &b.client;
    set_viewport(c, 600, 400).await;
    open(c, &format!("{base}?embed=1&autoplay=0&t=30")).await;
    let full = measure(c).await;
    open(c, &format!("{base}?embed=1&autoplay=0&t=30&panels=transport")).await;
    let shown = "return ['.transport', '.legend', '#chart-kv', '.metrics'].map(s => getComputedStyle(document.querySelector(s)).display !== 'none')";
    assert_eq!(js(c, shown).await, serde_json::json!([true, false, false, false]));
    let m = measure(c).await;
    assert!(f(&m, &["scroll_h"]) <= f(&m, &["client_h"]), "{m}");
    assert!(f(&m, &["map_panel", "h"]) > f(&full, &["map_panel", "h"]) + 100.0, "the map did not grow: {m} vs {full}");
    b.close().await;
}
