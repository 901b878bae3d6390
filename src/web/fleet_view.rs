//! A fleet on the page (the full lab's: `replicas` above 1, docs/ROUTING.md): each replica's
//! memory map side by side, small multiples in rows, each titled with what the router sent it
//! and its prefix hits; the replica the last arrival went to framed; and a line under the maps
//! saying the router's policy (its rule on hover), how many requests each replica got and where
//! the last one went.
//!
//! The page is served with two map panels (a run, and the second run of Compare); the full lab
//! adds the rest as copies of the second, without its host band (a fleet's host tiers are
//! summed up in the metrics).

use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};

use super::dom;
use crate::session::lab::Lab;

/// Most maps the page draws at once: a fleet's replicas (`session::run::MAX_PAGE_REPLICAS`).
pub const MAX_PANELS: usize = crate::session::run::MAX_PAGE_REPLICAS as usize;

/// Copies the second map panel into panels 2 to `MAX_PANELS` − 1 (hidden until a fleet shows).
pub fn add_panels(maps_box: &HtmlElement) -> Result<(), String> {
    let template: HtmlElement = dom::need("map-panel-1")?;
    for i in 2..MAX_PANELS {
        let node = template.clone_node_with_deep(true).map_err(|_| "map-panel-1: could not copy it".to_string())?;
        let panel: Element = node.dyn_into().map_err(|_| "map-panel-1: not an element".to_string())?;
        panel.set_id(&format!("map-panel-{i}"));
        for (selector, id) in [
            (".run-kind", format!("map-title-{i}")),
            ("figcaption .run-sub", format!("map-sub-{i}")),
            ("canvas.map", format!("map-{i}")),
        ] {
            if let Ok(Some(el)) = panel.query_selector(selector) {
                el.set_id(&id);
            }
        }
        if let Ok(Some(canvas)) = panel.query_selector("canvas.map") {
            let label = format!("Physical KV memory map of replica {}", i + 1);
            let _ = canvas.set_attribute("aria-label", &label);
        }
        if let Ok(Some(band)) = panel.query_selector(".host-band") {
            band.remove();
        }
        let _ = panel.set_attribute("hidden", "");
        maps_box.append_child(&panel).map_err(|_| "maps: could not add a replica's map".to_string())?;
    }
    Ok(())
}

/// Lays the maps out for `lab`'s runs: a fleet's in a grid (returns its rows), with the last
/// routed replica framed and the router's line shown; anything else as before (1 row).
pub fn show(lab: &Lab, maps_box: &HtmlElement, panels: &[HtmlElement]) -> f64 {
    let fleet = lab.runs.first().and_then(|r| r.fleet().map(|f| (r, f)));
    dom::toggle_class(maps_box, "fleet", fleet.is_some());
    let note = dom::by_id::<HtmlElement>("router-note");
    let Some((run, f)) = fleet else {
        if let Some(n) = &note {
            dom::set_hidden(n, true);
        }
        for p in panels {
            dom::toggle_class(p, "routed", false);
        }
        return 1.0;
    };
    let n = f.fleet().replicas().len();
    let cols = match n {
        0..=4 => 2,
        5..=9 => 3,
        _ => 4,
    };
    let cols_attr = cols.to_string();
    if maps_box.get_attribute("data-cols").as_deref() != Some(cols_attr.as_str()) {
        let _ = maps_box.set_attribute("data-cols", &cols_attr);
    }
    let routed = f.last_route().map(|(_, r)| r.replica as usize);
    for (i, p) in panels.iter().enumerate() {
        dom::toggle_class(p, "routed", routed == Some(i));
    }
    if let Some(el) = &note {
        let text = f.router_note(&run.class_names);
        if el.text_content().as_deref() != Some(text.as_str()) {
            dom::set_text(el, &text);
            el.set_title(&crate::engine::fleet::rule(&f.fleet().config().router));
        }
        dom::set_hidden(el, false);
    }
    n.div_ceil(cols) as f64
}
