//! The page's messages (src/web/messages.rs) in headless Chromium: a message replaces the one of
//! its kind, kinds clear one by one or as the input refusals, the × button dismisses through the
//! model, and the box shows exactly the model (element for element, text as text).
#![cfg(target_arch = "wasm32")]

use kvlab::web::messages::{view, Level, Message, MessageList, Messages, INPUT_KINDS};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement};

wasm_bindgen_test_configure!(run_in_browser);

/// A fresh box in the test page, and messages shown in it.
fn fresh() -> (Element, Messages) {
    let doc = web_sys::window().unwrap().document().unwrap();
    let box_ = doc.create_element("div").unwrap();
    box_.set_class_name("messages");
    doc.body().unwrap().append_child(&box_).unwrap();
    let messages = Messages::in_box(Some(box_.clone()));
    (box_, messages)
}

fn kinds(list: &MessageList) -> Vec<&str> {
    list.messages().iter().map(|m| m.kind.as_str()).collect()
}

/// The box holds one element per message, in order, each as `view` builds it: class by level,
/// `data-kind`, `role`, the text as text, and a dismiss button.
fn assert_box_shows(box_: &Element, list: &MessageList) {
    let wanted = view(list);
    let children = box_.children();
    assert_eq!(children.length() as usize, list.messages().len(), "one element per message");
    for (i, (m, w)) in list.messages().iter().zip(&wanted).enumerate() {
        let el = children.item(i as u32).unwrap();
        assert!(el.is_equal_node(Some(&**w)), "element {i} is what view() builds for {m:?}");
        assert_eq!(el.get_attribute("data-kind").as_deref(), Some(m.kind.as_str()));
        assert_eq!(el.class_name(), format!("msg {}", m.level.class()));
        let role = if m.level == Level::Error { "alert" } else { "status" };
        assert_eq!(el.get_attribute("role").as_deref(), Some(role));
        let text = el.query_selector(".msg-text").unwrap().unwrap();
        assert_eq!(text.text_content().as_deref(), Some(m.text.as_str()));
        assert_eq!(text.child_element_count(), 0, "text nodes only");
        assert!(el.query_selector("button.msg-close").unwrap().is_some());
    }
}

#[wasm_bindgen_test]
fn a_message_replaces_the_one_of_its_kind_and_comes_last() {
    let (box_, m) = fresh();
    m.error("link", "Link not applied: first.");
    m.notice("stars", "Stars are kept for this visit only.");
    m.error("link", "Link not applied: second.");
    let list = m.list();
    assert_eq!(kinds(&list), ["stars", "link"]);
    assert_eq!(m.texts(), ["Stars are kept for this visit only.", "Link not applied: second."]);
    assert_eq!(
        list.messages()[1],
        Message { kind: "link".into(), text: "Link not applied: second.".into(), level: Level::Error }
    );
    assert_box_shows(&box_, &list);
    m.ok("link", "Mission check passed.");
    assert_eq!(m.list().messages()[1].level, Level::Ok, "the level follows the newest message");
    assert_box_shows(&box_, &m.list());
}

#[wasm_bindgen_test]
fn kinds_clear_one_by_one_or_all() {
    let (box_, m) = fresh();
    m.error("preset", "Preset not loaded: a.");
    m.error("export", "Export failed: b.");
    m.notice("mission-check", "Not a valid mission: c.");
    m.clear("export");
    assert_eq!(kinds(&m.list()), ["preset", "mission-check"]);
    m.clear("export");
    assert_eq!(kinds(&m.list()), ["preset", "mission-check"], "clearing an absent kind changes nothing");
    assert_box_shows(&box_, &m.list());
    m.clear_all();
    assert!(m.list().messages().is_empty());
    assert_eq!(box_.child_element_count(), 0);
}

#[wasm_bindgen_test]
fn a_setup_that_loads_clears_only_the_input_refusals() {
    let (box_, m) = fresh();
    m.notice("stars", "Some saved stars could not be read.");
    for kind in INPUT_KINDS {
        m.error(kind, &format!("{kind} refused."));
    }
    m.error("export", "Export failed: x.");
    m.ok("mission-check", "The mission check passed.");
    m.clear_input();
    assert_eq!(kinds(&m.list()), ["stars", "export", "mission-check"]);
    assert_box_shows(&box_, &m.list());
}

#[wasm_bindgen_test]
fn the_dismiss_button_removes_the_message_from_the_model() {
    let (box_, m) = fresh();
    m.error("control", "scheduler.max_num_seqs must be at least 1.");
    m.notice("stars-memory", "Stars are kept for this visit only.");
    let kept = box_.query_selector(".msg[data-kind=\"stars-memory\"]").unwrap().unwrap();
    let close = box_.query_selector(".msg[data-kind=\"control\"] .msg-close").unwrap().unwrap();
    close.dyn_into::<HtmlElement>().unwrap().click();
    assert_eq!(kinds(&m.list()), ["stars-memory"]);
    assert_box_shows(&box_, &m.list());
    let still = box_.first_element_child().unwrap();
    assert!(still.is_same_node(Some(&kept)), "an unchanged message keeps its element");
    let clone = m.clone();
    clone.dismiss("stars-memory");
    assert!(m.texts().is_empty(), "clones share one list");
    assert_eq!(box_.child_element_count(), 0);
}

#[wasm_bindgen_test]
fn the_box_shows_the_model_even_after_the_page_wrote_into_it() {
    let (box_, m) = fresh();
    m.error("preset", "Preset not loaded: <b>not markup</b>.");
    box_.append_child(&web_sys::window().unwrap().document().unwrap().create_element("p").unwrap()).unwrap();
    m.notice("stars", "A notice.");
    assert_box_shows(&box_, &m.list());
    assert_eq!(m.texts()[0], "Preset not loaded: <b>not markup</b>.");
}

#[wasm_bindgen_test]
fn without_a_box_the_model_still_holds_the_messages() {
    let m = Messages::in_box(None);
    m.error("boot", "The lab could not start: x");
    assert_eq!(m.texts(), ["The lab could not start: x"]);
}
