//! The first step for a newcomer: two sentences above the map (what the map shows; press Play,
//! then tick Compare), in the free lab only (not in a mission, which has its story, nor in an
//! embed). "Got it" dismisses it for good in this browser (localStorage); it also goes once the
//! reader has pressed Play. From it, "Show me around" starts the four-step tour
//! (`session::tour`): a popover beside each step's element, which is outlined; Next, Back,
//! "Skip the tour" or Escape; once finished or skipped it is remembered (localStorage) and the
//! first step is not shown again.

use std::cell::Cell;
use std::rc::Rc;

use web_sys::{Element, Event, HtmlElement, KeyboardEvent};

use crate::session::lab::Lab;
use crate::session::tour::{Tour, SHOWN_AT_S};

use super::dom;
use super::storage::LocalStarStore;

/// The localStorage key that remembers the first step was dismissed.
pub const DONE_KEY: &str = "kvlab.first-step.v1";

/// The localStorage key that remembers the tour was finished or skipped.
pub const TOUR_KEY: &str = "kvlab.tour.v1";

fn done() -> bool {
    LocalStarStore::open().ok().and_then(|s| s.get(DONE_KEY).ok().flatten()).is_some()
}

fn dismiss() {
    if let Ok(store) = LocalStarStore::open() {
        let _ = store.set(DONE_KEY, "1");
    }
    if let Some(el) = dom::by_id::<HtmlElement>("first-step") {
        dom::set_hidden(&el, true);
    }
}

/// Shows the first step when it is due, and wires its buttons and the tour's. `show_run_at`
/// brings the lab to a time in seconds (through the lab's one dispatcher) when it is earlier.
pub fn wire(lab: &Lab, show_run_at: impl Fn(f64) -> Option<f64> + 'static, back_to: impl Fn(f64) + 'static) {
    let Some(el) = dom::by_id::<HtmlElement>("first-step") else { return };
    let due = !done() && !lab.options.embed && lab.state.mission.is_none() && !lab.playing;
    dom::set_hidden(&el, !due);
    show_duration(lab);
    if let Some(b) = dom::by_id::<HtmlElement>("first-step-close") {
        dom::listen::<Event>(&b, "click", |_| dismiss());
    }
    wire_tour(show_run_at, back_to);
}

/// The tour's buttons and keys; the tour's state is shared by their listeners.
/// The tour shows the run at [`SHOWN_AT_S`]; when it ends, `back_to` returns the lab to the time
/// it moved it from (so Play after the tour still starts where the learner was).
fn wire_tour(show_run_at: impl Fn(f64) -> Option<f64> + 'static, back_to: impl Fn(f64) + 'static) {
    let tour = Rc::new(Cell::new(Tour::Finished));
    let moved_from = Rc::new(Cell::new(None::<f64>));
    if let Some(b) = dom::by_id::<HtmlElement>("tour-start") {
        let moved_from = moved_from.clone();
        dom::listen::<Event>(&b, "click", move |_| moved_from.set(show_run_at(SHOWN_AT_S)));
    }
    let back_to: Rc<dyn Fn()> = Rc::new(move || {
        if let Some(t) = moved_from.take() {
            back_to(t);
        }
    });
    let on = |id: &str, step: fn(Tour) -> Tour| {
        let (tour, back_to) = (tour.clone(), back_to.clone());
        if let Some(b) = dom::by_id::<HtmlElement>(id) {
            dom::listen::<Event>(&b, "click", move |_| show_tour(&tour, step(tour.get()), &*back_to));
        }
    };
    on("tour-start", |_| Tour::start());
    on("tour-next", Tour::next);
    on("tour-back", Tour::back);
    on("tour-skip", Tour::skip);
    if let Some(pop) = dom::by_id::<HtmlElement>("tour") {
        dom::listen::<KeyboardEvent>(&pop, "keydown", move |e: KeyboardEvent| {
            if e.key() == "Escape" {
                show_tour(&tour, tour.get().skip(), &*back_to);
            }
        });
    }
}

/// Shows `next`: its step's popover beside its element, or, once the tour is over, nothing (and
/// remembers that it is over).
fn show_tour(tour: &Cell<Tour>, next: Tour, on_end: &dyn Fn()) {
    tour.set(next);
    let Some(pop) = dom::by_id::<HtmlElement>("tour") else { return };
    if let Ok(Some(old)) = dom::document().query_selector(".tour-target") {
        dom::toggle_class(&old, "tour-target", false);
    }
    let Some(step) = next.step() else {
        dom::set_hidden(&pop, true);
        if let (Some(value), Ok(store)) = (next.remembered_as(), LocalStarStore::open()) {
            let _ = store.set(TOUR_KEY, value);
        }
        dismiss();
        on_end();
        return;
    };
    if let Some(first) = dom::by_id::<HtmlElement>("first-step") {
        dom::set_hidden(&first, true);
    }
    for (id, text) in [
        ("tour-count", next.counter().unwrap_or_default().as_str()),
        ("tour-title", step.title),
        ("tour-text", step.text),
    ] {
        if let Some(el) = dom::by_id::<Element>(id) {
            dom::set_text(&el, text);
        }
    }
    if let Some(back) = dom::by_id::<HtmlElement>("tour-back") {
        dom::set_hidden(&back, next == Tour::start());
    }
    let next_button = dom::by_id::<HtmlElement>("tour-next");
    if let Some(b) = &next_button {
        dom::set_text(b, if next.on_last_step() { "Done" } else { "Next" });
    }
    dom::set_hidden(&pop, false);
    if let Some(target) = dom::by_id::<HtmlElement>(step.target) {
        dom::toggle_class(&target, "tour-target", true);
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Center);
        target.scroll_into_view_with_scroll_into_view_options(&options);
        place_beside(&pop, &target);
    }
    if let Some(b) = next_button {
        let _ = b.focus();
    }
}

/// Puts the popover under its element when there is room in the view, else above it, else over
/// the element's top edge; never past the view's left or right edge.
fn place_beside(pop: &HtmlElement, target: &HtmlElement) {
    let w = dom::window();
    let num = |v: Result<wasm_bindgen::JsValue, _>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let (view_w, view_h) = (num(w.inner_width()), num(w.inner_height()));
    let (scroll_x, scroll_y) = (w.scroll_x().unwrap_or(0.0), w.scroll_y().unwrap_or(0.0));
    let r = target.get_bounding_client_rect();
    let (pop_w, pop_h) = (f64::from(pop.offset_width()), f64::from(pop.offset_height()));
    const GAP: f64 = 10.0;
    let top = if r.bottom() + GAP + pop_h <= view_h {
        r.bottom() + GAP
    } else if r.top() - GAP - pop_h >= 0.0 {
        r.top() - GAP - pop_h
    } else {
        r.top().max(0.0) + GAP
    };
    let left = r.left().min(view_w - pop_w - 12.0).max(12.0);
    let style = pop.style();
    let _ = style.set_property("top", &format!("{}px", (top + scroll_y).round()));
    let _ = style.set_property("left", &format!("{}px", (left + scroll_x).round()));
}

/// Called after each command: the first Play, or a mission started, ends the first step.
pub fn follow(lab: &Lab) {
    let Some(el) = dom::by_id::<HtmlElement>("first-step") else { return };
    if el.hidden() {
        return;
    }
    if lab.playing {
        dismiss();
    } else if lab.state.mission.is_some() {
        dom::set_hidden(&el, true);
    }
    show_duration(lab);
}

/// The first step's "watch N s of traffic": the run's length, not a fixed minute.
fn show_duration(lab: &Lab) {
    if let Some(span) = dom::by_id::<HtmlElement>("first-step-duration") {
        dom::set_text(&span, &crate::session::title::seconds_text(lab.duration_us()));
    }
}
