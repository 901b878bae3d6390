//! End-to-end tests (dist/ in headless Chromium) of how the page behaves for keyboard,
//! screen-reader and phone users: the Export menu (arrow keys, Escape, a click elsewhere), the
//! inspector as a live region only while paused, canvases as images, the favicon, mission knob
//! chips that jump to their setting, a mission on a phone (knobs under the goals, settings
//! in the page's own scroll, no nested scroll area), with its screenshot, the settings one link
//! away on a wide screen with the map still in view; and no mission showing
//! an explanation, a hint or its fix before it is earned or asked for.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{browser, js, open, require_dist, save_screenshot, serve, set_viewport, wait_for};
use fantoccini::{Client, Locator};
use serde_json::json;

async fn active_id(c: &Client) -> serde_json::Value {
    js(c, "const a = document.activeElement; return a.id || a.dataset.export || a.dataset.path || a.tagName").await
}

/// The elements between the settings form and the body that scroll on their own (by id or class).
async fn scroll_areas_around_settings(c: &Client) -> serde_json::Value {
    js(
        c,
        "let e = document.getElementById('controls'); const out = []; \
        for (; e && e !== document.body; e = e.parentElement) { const s = getComputedStyle(e); \
        if (/(auto|scroll)/.test(s.overflowY) && e.scrollHeight > e.clientHeight) out.push(e.id || e.className); } return out",
    )
    .await
}

async fn menu_open(c: &Client) -> bool {
    js(c, "return !document.getElementById('export-menu').hidden").await == json!(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_menu_works_from_the_keyboard_and_closes_on_escape_or_a_click_elsewhere() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;
    let btn = c.find(Locator::Id("export-btn")).await.unwrap();
    btn.click().await.unwrap();
    assert!(menu_open(c).await);
    assert_eq!(btn.attr("aria-expanded").await.unwrap().as_deref(), Some("true"));
    c.find(Locator::Css("body")).await.unwrap().send_keys("\u{E00C}").await.unwrap(); // Escape
    assert!(!menu_open(c).await, "Escape closes the menu");
    assert_eq!(btn.attr("aria-expanded").await.unwrap().as_deref(), Some("false"));

    // ArrowDown on the button opens it on the first item; the arrows move through it and wrap.
    btn.send_keys("\u{E015}").await.unwrap(); // ArrowDown
    assert!(menu_open(c).await);
    assert_eq!(active_id(c).await, "map");
    let send = |k: &'static str| async move {
        js(c, "return null").await;
        c.active_element().await.unwrap().send_keys(k).await.unwrap();
    };
    send("\u{E015}").await;
    assert_eq!(active_id(c).await, "chart");
    send("\u{E015}").await;
    assert_eq!(active_id(c).await, "csv");
    send("\u{E015}").await;
    assert_eq!(active_id(c).await, "report");
    send("\u{E015}").await;
    assert_eq!(active_id(c).await, "map", "ArrowDown wraps to the first item");
    send("\u{E013}").await; // ArrowUp
    assert_eq!(active_id(c).await, "report");
    send("\u{E00C}").await;
    assert!(!menu_open(c).await);
    assert_eq!(active_id(c).await, "export-btn", "Escape gives the focus back to the button");

    // A click elsewhere closes it.
    btn.click().await.unwrap();
    assert!(menu_open(c).await);
    c.find(Locator::Css(".foot")).await.unwrap().click().await.unwrap();
    assert!(!menu_open(c).await, "a click elsewhere closes the menu");
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screen_readers_get_images_and_a_quiet_inspector_and_the_page_has_a_favicon() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    let roles = js(c, "return ['map-0', 'map-1', 'chart-kv', 'chart-queues'].map(id => document.getElementById(id).getAttribute('role'))").await;
    assert_eq!(roles, json!(["img", "img", "img", "img"]));
    let labelled = js(c, "return [...document.querySelectorAll('canvas.map, canvas.chart')].every(c => c.getAttribute('aria-label').length > 20)").await;
    assert_eq!(labelled, true);
    let live = "return document.getElementById('inspector').getAttribute('aria-live')";
    assert_eq!(js(c, live).await, "polite", "paused: the inspector speaks when the learner moves");
    // Playing: a pinned cell's description changes every frame, so it is not a live region.
    js(c, "kvlab.runTo(10); return null").await;
    let canvas = c.find(Locator::Id("map-0")).await.unwrap();
    canvas.click().await.unwrap();
    js(c, "kvlab.setSpeed(1); kvlab.play(); return null").await;
    wait_for(c, "document.getElementById('inspector').getAttribute('aria-live') === 'off'", "a quiet inspector").await;
    js(c, "kvlab.pause(); return null").await;
    wait_for(c, "document.getElementById('inspector').getAttribute('aria-live') === 'polite'", "a live inspector")
        .await;

    // The favicon is a file the bundle serves.
    let href = js(c, "return document.querySelector('link[rel=icon]').href").await;
    let svg = js(c, &format!("return fetch({href}).then(r => r.ok ? r.text() : 'status ' + r.status)")).await;
    assert!(svg.as_str().unwrap().contains("<svg"), "{svg}");
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_phone_a_missions_knobs_sit_under_its_goals_and_jump_to_their_setting() {
    let base = serve(require_dist()).await;
    let b = browser(390, 844).await;
    let c = &b.client;
    set_viewport(c, 390, 844).await;
    open(c, &format!("{base}?autoplay=0&mission=m2-block-size")).await;
    // The knobs come right after the goals.
    let gap = js(
        c,
        "const g = document.getElementById('mission-goals').getBoundingClientRect(); \
        const k = document.querySelector('#mission .knobs').getBoundingClientRect(); return k.top - g.bottom",
    )
    .await;
    let gap = gap.as_f64().unwrap();
    assert!((0.0..=24.0).contains(&gap), "the knobs are {gap} px under the goals");
    // No scroll area inside the page holds the settings: the page scrolls, nothing else does.
    assert_eq!(scroll_areas_around_settings(c).await, json!([]), "settings inside a nested scroll area");
    let wide = js(
        c,
        "return [...document.querySelectorAll('#kvlab *')].filter(e => e.getClientRects().length > 0) \
        .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5).slice(0, 6) \
        .map(e => `${e.tagName}#${e.id}.${e.className}: ${e.getBoundingClientRect().right.toFixed(0)}`)",
    )
    .await;
    assert_eq!(wide, json!([]), "elements past the phone's right edge");
    assert_eq!(js(c, "return document.documentElement.scrollWidth <= innerWidth").await, true, "scrolls sideways");

    // A knob chip jumps to its setting: focused and in view.
    let chip = c.find(Locator::Css("#mission-knobs .knob[data-knob='allocator.block_size']")).await.unwrap();
    chip.click().await.unwrap();
    assert_eq!(active_id(c).await, "allocator.block_size");
    let rect =
        js(c, "const r = document.activeElement.getBoundingClientRect(); return [r.top, r.bottom, innerHeight]").await;
    let (top, bottom, vh) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap(), rect[2].as_f64().unwrap());
    assert!(top >= 0.0 && bottom <= vh + 1.0, "the block-size field is not in view: {rect}");

    // Mid-run, for the screenshot (docs/screenshots/mission-phone-390x844.png).
    js(c, "kvlab.runTo(25); window.scrollTo(0, 0); return null").await;
    wait_for(c, "document.getElementById('mission-status').textContent.length > 0", "the status").await;
    save_screenshot(c, "mission-phone-390x844-top.png").await;
    js(c, "document.getElementById('mission-goals').scrollIntoView(); return null").await;
    save_screenshot(c, "mission-phone-390x844.png").await;
    b.client.clone().close().await.unwrap();
}

/// On a wide screen the settings are in the page's own scroll too (no scroll area inside the
/// page), the first view says they exist ("Settings ↓" in the transport bar), the link brings
/// them into view, and the map stays in view while the page scrolls down to them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_wide_screen_the_settings_are_one_link_away_in_the_pages_own_scroll() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    set_viewport(c, 1400, 900).await;
    open(c, &format!("{base}?autoplay=0")).await;
    assert_eq!(scroll_areas_around_settings(c).await, json!([]), "settings inside a nested scroll area");
    let link = js(
        c,
        "const r = document.getElementById('settings-link').getBoundingClientRect(); \
        return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight",
    )
    .await;
    assert_eq!(link, true, "the Settings link is in the first view");
    c.find(Locator::Id("settings-link")).await.unwrap().click().await.unwrap();
    wait_for(
        c,
        "(() => { const r = document.querySelector('#controls h2').getBoundingClientRect(); \
        return r.top >= 0 && r.bottom <= innerHeight; })()",
        "the settings to come into view",
    )
    .await;
    let map = js(
        c,
        "const r = document.getElementById('map-0').getBoundingClientRect(); \
        return [r.top, r.bottom, innerHeight]",
    )
    .await;
    let (top, bottom) = (map[0].as_f64().unwrap(), map[1].as_f64().unwrap());
    assert!(top >= 0.0 && bottom <= map[2].as_f64().unwrap(), "the map left the view: {map}");
    save_screenshot(c, "settings-wide-1400x900.png").await;
    b.client.clone().close().await.unwrap();
}

/// No mission gives its answer away: before a hint is asked for, no star earned and no solution
/// shown, the page's visible text (`innerText`, which leaves out closed explanations and hidden
/// parts) holds none of the goals' explanations, the hints or the fix, at the start and after
/// the broken run's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_explanation_hint_or_solution_shows_before_it_is_earned_or_asked_for() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    let index = kvlab::missions::shipped::index().unwrap();
    for entry in &index.missions {
        let m = kvlab::missions::shipped::mission(&entry.id).unwrap();
        let fix = serde_json::to_string(m.fix()).unwrap();
        let secrets: Vec<&str> = m
            .goals()
            .iter()
            .map(|g| g.explain.as_str())
            .chain(m.hints().iter().map(String::as_str))
            .chain([fix.as_str()])
            .collect();
        open(c, &format!("{base}?autoplay=0&mission={}", entry.id)).await;
        js(c, "localStorage.clear(); return null").await;
        open(c, &format!("{base}?autoplay=0&mission={}", entry.id)).await;
        for moment in ["start", "end"] {
            if moment == "end" {
                js(c, "kvlab.runToEnd(); return null").await;
                wait_for(c, "kvlab.missionScore().final === true", "the end").await;
            }
            let page = js(c, "return document.body.innerText").await.as_str().unwrap().to_string();
            for secret in &secrets {
                assert!(!page.contains(secret), "{} at the {moment}: shows \"{secret}\"", entry.id);
            }
        }
    }
    b.client.clone().close().await.unwrap();
}

/// Every visible piece of text on the page, with its colour's contrast against the background it
/// is drawn on (the first opaque background up the tree), as WCAG 2.1 computes it. Text of 24 px
/// or more (18.66 px bold) counts as large and needs 3:1; the rest 4.5:1.
const LOW_CONTRAST: &str = r#"
const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => [r, g, b].map(v => v / 255).map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
  .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
const bg = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
  if (c.length === 3 || c[3] === 1) return c.slice(0, 3); } return [255, 255, 255]; };
const out = [];
for (const el of document.querySelectorAll('body *')) {
  const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  const r = el.getBoundingClientRect();
  if (!own || r.width === 0 || r.height === 0) continue;
  const s = getComputedStyle(el);
  if (s.visibility !== 'visible' || el.closest('[hidden], [aria-hidden=true], :disabled, .disabled')) continue;
  if (Number(s.opacity) < 1) continue;
  const fg = rgb(s.color), back = bg(el);
  const [a, b] = [lum(fg.slice(0, 3)), lum(back)].sort((x, y) => y - x);
  const ratio = (a + 0.05) / (b + 0.05);
  const size = parseFloat(s.fontSize), bold = Number(s.fontWeight) >= 700;
  const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
  if (ratio < need) out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}:1`);
}
return out;"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_visible_text_meets_wcag_contrast_in_both_themes() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    for theme in ["light", "dark"] {
        for page in ["preset=paged-default&compare=1", "mission=m3-preemption-storm"] {
            open(c, &format!("{base}?autoplay=0&theme={theme}&{page}")).await;
            js(c, "kvlab.runTo(20); return null").await;
            let low = js(c, LOW_CONTRAST).await;
            assert_eq!(low, json!([]), "{theme} theme, ?{page}: text below WCAG AA contrast");
        }
        c.goto(&format!("{base}?hub=1&theme={theme}")).await.unwrap();
        wait_for(c, "document.getElementById('hub').dataset.ready === 'true'", "the hub").await;
        assert_eq!(js(c, LOW_CONTRAST).await, json!([]), "{theme} theme, the hub: text below WCAG AA contrast");
    }
    b.client.clone().close().await.unwrap();
}
