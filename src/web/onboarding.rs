//! The first step for a newcomer: two sentences above the map (what the map shows; press Play,
//! then tick Compare), in the free lab only (not in a mission, which has its story, nor in an
//! embed). "Got it" dismisses it for good in this browser (localStorage); it also goes once the
//! reader has pressed Play.

use web_sys::{Event, HtmlElement};

use crate::session::lab::Lab;

use super::dom;
use super::storage::LocalStarStore;

/// The localStorage key that remembers the first step was dismissed.
pub const DONE_KEY: &str = "kvlab.first-step.v1";

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

/// Shows the first step when it is due, and wires its button.
pub fn wire(lab: &Lab) {
    let Some(el) = dom::by_id::<HtmlElement>("first-step") else { return };
    let due = !done() && !lab.options.embed && lab.state.mission.is_none() && !lab.playing;
    dom::set_hidden(&el, !due);
    if let Some(b) = dom::by_id::<HtmlElement>("first-step-close") {
        dom::listen::<Event>(&b, "click", |_| dismiss());
    }
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
}
