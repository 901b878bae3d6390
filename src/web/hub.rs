//! The missions hub (`?hub=1`, reached from `hub.html`): every mission of
//! assets/missions/index.json with its number, title, task and the stars earned in this browser,
//! a link into each, the total, and resetting the stars (after a confirmation). Mission text is
//! set as text, never as HTML.

use web_sys::{Element, Event, HtmlElement};

use super::storage::{self, Stars, STARS_KEY};
use crate::formats::mission::MAX_STARS;

use super::dom;
use super::messages::Messages;
use crate::session::missions;

/// One row of the hub: what the index and the mission file say.
pub struct HubEntry {
    pub id: String,
    pub number: u32,
    pub title: String,
    pub task: String,
}

/// The shipped missions in hub order (a mission file that fails to parse still gets its row,
/// from the index).
pub fn entries() -> Result<Vec<HubEntry>, String> {
    let index = missions::index()?;
    Ok(index
        .missions
        .into_iter()
        .map(|e| {
            let task = missions::shipped(&e.id).map(|m| m.task().to_string()).unwrap_or_default();
            HubEntry { id: e.id, number: e.number, title: e.title, task }
        })
        .collect())
}

/// Stars earned over the shipped missions, and the most there are.
pub fn totals(keeper: &Stars) -> (u32, u32) {
    let ids = missions::ids();
    let earned = keeper.with(|k| ids.iter().map(|id| u32::from(k.stars(id))).sum());
    (earned, ids.len() as u32 * u32::from(MAX_STARS))
}

/// Builds the hub into `#hub` and marks it ready; the hub owns `messages` from then on.
pub fn boot(messages: &Messages) -> Result<(), String> {
    let keeper = Stars::open();
    let hub: HtmlElement = dom::need("hub")?;
    // One messages box for the whole page: it moves into the hub.
    if let (Some(msgs), Some(slot)) = (dom::by_id::<Element>("messages"), dom::by_id::<Element>("hub-messages")) {
        let _ = slot.append_child(&msgs);
    }
    let list: Element = dom::need("hub-list")?;
    render(&list, &keeper)?;
    wire_reset(&list, &keeper, messages);
    keeper.show_notices(messages);
    let _ = hub.set_attribute("data-ready", "true");
    if let Ok(ev) = Event::new("kvlab-hub-ready") {
        let _ = dom::window().dispatch_event(&ev);
    }
    Ok(())
}

/// (Re)draws the mission cards and the total.
pub fn render(list: &Element, keeper: &Stars) -> Result<(), String> {
    dom::clear(list);
    let last = storage::last_setups();
    for e in entries()? {
        let stars = keeper.with(|k| k.stars(&e.id));
        let played = keeper.with(|k| k.record().contains(&e.id));
        let li = dom::append(list, dom::el("li", "card", None));
        let _ = li.set_attribute("data-id", &e.id);
        let _ = li.set_attribute("data-stars", &stars.to_string());
        let a = dom::append(&li, dom::el("a", "card-link", None));
        // "Continue" takes the learner back to the setup they last chose; "Play" and "Replay"
        // open the mission's broken start.
        let back = last.get(&e.id).filter(|_| stars < MAX_STARS);
        let _ = a.set_attribute("href", &format!("./?mission={}{}", e.id, back.unwrap_or("")));
        dom::append(&a, dom::el("span", "card-num", Some(&e.number.to_string())));
        let main = dom::append(&a, dom::el("span", "card-main", None));
        dom::append(&main, dom::el("span", "card-title", Some(&e.title)));
        dom::append(&main, dom::el("span", "card-task", Some(&e.task)));
        let side = dom::append(&a, dom::el("span", "card-side", None));
        let st = dom::append(&side, dom::el("span", "stars", None));
        dom::fill_stars(&st, stars, MAX_STARS);
        let cta = match (played || back.is_some(), stars) {
            (_, s) if s >= MAX_STARS => "Replay",
            (false, _) => "Play",
            _ => "Continue",
        };
        dom::append(&side, dom::el("span", "card-cta", Some(&format!("{cta} →"))));
    }
    render_custom(keeper);
    let (earned, max) = totals(keeper);
    if let Some(total) = dom::by_id::<Element>("hub-total") {
        dom::set_text(&total, &format!("{earned} of {max} stars"));
    }
    if let Some(bar) = dom::by_id::<HtmlElement>("hub-progress") {
        let pct = if max > 0 { 100.0 * f64::from(earned) / f64::from(max) } else { 0.0 };
        let _ = bar.style().set_property("width", &format!("{pct:.1}%"));
    }
    if let Some(where_) = dom::by_id::<Element>("hub-storage") {
        let text = if keeper.with(|k| k.persistent()) {
            format!("Stars are saved in this browser only (localStorage, key {STARS_KEY}); they never decrease.")
        } else {
            "Stars are kept for this visit only (this browser's storage cannot be used).".to_string()
        };
        dom::set_text(&where_, &text);
    }
    Ok(())
}

/// A custom mission on the hub: its name as the played list keeps it (the id alone when only
/// the star record knows it) and its stars.
pub struct CustomEntry {
    pub id: String,
    /// 0 when unknown.
    pub number: u32,
    pub title: String,
    pub stars: u8,
    /// The link that plays it again (`missions::played::valid_replay`), when one is known.
    pub replay: Option<String>,
}

/// The custom missions played in this browser: the played list's names, then any other mission
/// id the star record holds, each with its stars (they count in no total: the total is over the
/// shipped missions).
pub fn custom_entries(keeper: &Stars) -> Vec<CustomEntry> {
    let shipped = missions::ids();
    let stars_of = |id: &str| keeper.with(|k| k.stars(id));
    let mut out: Vec<CustomEntry> = storage::played()
        .missions()
        .iter()
        .filter(|m| !shipped.contains(&m.id))
        .map(|m| CustomEntry {
            id: m.id.clone(),
            number: m.number,
            title: m.title.clone(),
            stars: stars_of(&m.id),
            replay: m.replay.clone(),
        })
        .collect();
    let others: Vec<(String, u8)> = keeper.with(|k| {
        k.record().iter().map(|(id, s)| (id.to_string(), s)).filter(|(id, _)| !shipped.contains(id)).collect()
    });
    for (id, stars) in others {
        if !out.iter().any(|e| e.id == id) {
            out.push(CustomEntry { title: id.clone(), id, number: 0, stars, replay: None });
        }
    }
    out
}

fn render_custom(keeper: &Stars) {
    let (Some(section), Some(list)) =
        (dom::by_id::<HtmlElement>("hub-custom"), dom::by_id::<Element>("hub-custom-list"))
    else {
        return;
    };
    dom::clear(&list);
    let entries = custom_entries(keeper);
    dom::set_hidden(&section, entries.is_empty());
    for CustomEntry { id, number, title, stars, replay } in entries {
        let li = dom::append(&list, dom::el("li", "card custom", None));
        let _ = li.set_attribute("data-id", &id);
        let _ = li.set_attribute("data-stars", &stars.to_string());
        let row = match &replay {
            Some(link) => {
                let a = dom::append(&li, dom::el("a", "card-link", None));
                let _ = a.set_attribute("href", &format!("./{link}"));
                a
            }
            None => dom::append(&li, dom::el("div", "card-link", None)),
        };
        let num = if number > 0 { number.to_string() } else { "·".to_string() };
        dom::append(&row, dom::el("span", "card-num", Some(&num)));
        let main = dom::append(&row, dom::el("span", "card-main", None));
        dom::append(&main, dom::el("span", "card-title", Some(&title)));
        dom::append(
            &main,
            dom::el(
                "span",
                "card-task",
                Some(&match replay {
                    Some(_) => format!("id {id} · play it again"),
                    None => format!("id {id} · open its file with Load… to play again"),
                }),
            ),
        );
        let side = dom::append(&row, dom::el("span", "card-side", None));
        let st = dom::append(&side, dom::el("span", "stars", None));
        dom::fill_stars(&st, stars, MAX_STARS);
    }
}

fn wire_reset(list: &Element, keeper: &Stars, messages: &Messages) {
    let confirm = dom::by_id::<HtmlElement>("reset-confirm");
    let show = move |on: bool| {
        if let Some(c) = dom::by_id::<HtmlElement>("reset-confirm") {
            dom::set_hidden(&c, !on);
        }
        if let Some(b) = dom::by_id::<HtmlElement>("reset-stars") {
            dom::set_hidden(&b, on);
            if !on {
                let _ = b.focus();
            }
        }
        if on {
            if let Some(no) = dom::by_id::<HtmlElement>("reset-no") {
                let _ = no.focus();
            }
        }
    };
    if confirm.is_none() {
        return;
    }
    if let Some(b) = dom::by_id::<HtmlElement>("reset-stars") {
        dom::listen::<Event>(&b, "click", move |_| show(true));
    }
    if let Some(b) = dom::by_id::<HtmlElement>("reset-no") {
        dom::listen::<Event>(&b, "click", move |_| show(false));
    }
    if let Some(b) = dom::by_id::<HtmlElement>("reset-yes") {
        let list = list.clone();
        let keeper = keeper.clone();
        let messages = messages.clone();
        dom::listen::<Event>(&b, "click", move |_| {
            keeper.with(|k| k.reset());
            messages.clear_all();
            keeper.show_notices(&messages);
            let _ = render(&list, &keeper);
            show(false);
            if let Some(s) = dom::by_id::<Element>("hub-status") {
                dom::set_text(&s, "Every star was reset.");
            }
        });
    }
}
