//! A button that opens a menu of buttons (the header's Export menu), keyboard- and
//! pointer-friendly as a menu button should be: the button toggles it; ArrowDown / ArrowUp on
//! the button open it on the first / last item; inside, the arrows, Home and End move between
//! items; Escape closes it and gives focus back to the button; Tab, a click elsewhere or
//! focus leaving it close it.

use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlElement, KeyboardEvent, Node};

use super::dom;

/// The menu's items, in order.
fn items(menu: &HtmlElement) -> Vec<HtmlElement> {
    let Ok(list) = menu.query_selector_all("[role=menuitem]") else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)?.dyn_into::<HtmlElement>().ok()).collect()
}

/// Opens (`Some(true)`), closes (`Some(false)`) or toggles (`None`) the menu.
fn set_open(btn: &HtmlElement, menu: &HtmlElement, open: Option<bool>) -> bool {
    let show = open.unwrap_or(menu.hidden());
    menu.set_hidden(!show);
    let _ = btn.set_attribute("aria-expanded", if show { "true" } else { "false" });
    show
}

/// Focuses item `i` of the menu (negative counts from the end), wrapping around.
fn focus_item(menu: &HtmlElement, i: i32) {
    let list = items(menu);
    if list.is_empty() {
        return;
    }
    let n = list.len() as i32;
    let _ = list[i.rem_euclid(n) as usize].focus();
}

/// The index of the focused item, if one is.
fn focused(menu: &HtmlElement) -> Option<i32> {
    let active = dom::document().active_element()?;
    items(menu).iter().position(|it| it.unchecked_ref::<Element>() == &active).map(|i| i as i32)
}

/// Wires the menu button `btn_id` and its menu `menu_id` (an item's own click handler runs
/// first; the menu then closes and the button has the focus again).
pub fn wire(btn_id: &str, menu_id: &str) {
    let (Some(btn), Some(menu)) = (dom::by_id::<HtmlElement>(btn_id), dom::by_id::<HtmlElement>(menu_id)) else {
        return;
    };
    let (b, m) = (btn.clone(), menu.clone());
    dom::listen::<Event>(&btn, "click", move |_| {
        set_open(&b, &m, None);
    });
    let (b, m) = (btn.clone(), menu.clone());
    dom::listen::<KeyboardEvent>(&btn, "keydown", move |e: KeyboardEvent| {
        let first = match e.key().as_str() {
            "ArrowDown" => 0,
            "ArrowUp" => -1,
            _ => return,
        };
        e.prevent_default();
        set_open(&b, &m, Some(true));
        focus_item(&m, first);
    });
    wire_menu_keys(&btn, &menu);
    let (b, m) = (btn.clone(), menu.clone());
    dom::listen::<KeyboardEvent>(&dom::document(), "keydown", move |e: KeyboardEvent| {
        if e.key() == "Escape" && !m.hidden() {
            set_open(&b, &m, Some(false));
        }
    });
    let (b, m) = (btn.clone(), menu.clone());
    dom::listen::<Event>(&dom::document(), "pointerdown", move |e: Event| {
        let inside = e
            .target()
            .and_then(|t| t.dyn_into::<Node>().ok())
            .is_some_and(|n| m.contains(Some(&n)) || b.contains(Some(&n)));
        if !inside && !m.hidden() {
            set_open(&b, &m, Some(false));
        }
    });
    let (b, m) = (btn, menu.clone());
    dom::listen::<Event>(&menu, "click", move |e: Event| {
        let picked = e
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .and_then(|t| t.closest("[role=menuitem]").ok().flatten());
        if picked.is_some() {
            set_open(&b, &m, Some(false));
            let _ = b.focus();
        }
    });
}

/// Keys inside the open menu: arrows, Home and End move between items; Escape closes it and
/// gives the button the focus; Tab closes it and lets the focus move on.
fn wire_menu_keys(btn: &HtmlElement, menu: &HtmlElement) {
    let (b, m) = (btn.clone(), menu.clone());
    dom::listen::<KeyboardEvent>(menu, "keydown", move |e: KeyboardEvent| {
        let at = focused(&m).unwrap_or(-1);
        match e.key().as_str() {
            "ArrowDown" => focus_item(&m, at + 1),
            "ArrowUp" => focus_item(&m, if at < 0 { -1 } else { at - 1 }),
            "Home" => focus_item(&m, 0),
            "End" => focus_item(&m, -1),
            "Escape" => {
                set_open(&b, &m, Some(false));
                let _ = b.focus();
            }
            "Tab" => {
                set_open(&b, &m, Some(false));
                return;
            }
            _ => return,
        }
        e.prevent_default();
    });
}
