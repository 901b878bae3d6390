//! The page's messages: refusals of bad input (a preset, a link, a control value), notices
//! (something the learner should know, not a mistake of theirs) and good news (a check that
//! passed), shown in `#messages`. They are page state held here, never read back from the DOM:
//! [`MessageList`] is the model (at most one message per kind, oldest first), [`Messages`] the
//! cheap clonable handle the lab's `App` (or the hub) owns, which re-renders the box after every
//! change. The box is a pure function of the list ([`view`]); its × buttons dismiss through the
//! handle. The panic report is errors.rs's: a panic hook has no handle.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::{Element, Event};

use super::dom;

/// How a message reads: its class in the box (`msg error`, `msg notice`, `msg ok`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Bad input, refused (`role="alert"`).
    Error,
    /// Something to know, not a mistake (`role="status"`).
    Notice,
    /// A check that passed (`role="status"`).
    Ok,
}

impl Level {
    /// The class after `msg` in the box.
    pub fn class(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Notice => "notice",
            Level::Ok => "ok",
        }
    }
}

/// One message: its kind (`"preset"`, `"link"`, `"stars"`…, the box's `data-kind`), its text
/// and level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub kind: String,
    pub text: String,
    pub level: Level,
}

/// The kinds that refuse input (a preset, a mission, a link, a control value): a setup that
/// loads clears them all.
pub const INPUT_KINDS: [&str; 4] = ["preset", "mission", "link", "control"];

/// The messages on the page, oldest first, at most one per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageList(Vec<Message>);

impl MessageList {
    /// Shows `text` under `kind`: the previous message of that kind goes, the new one comes last.
    pub fn show(&mut self, kind: &str, text: &str, level: Level) {
        self.clear(kind);
        self.0.push(Message { kind: kind.to_string(), text: text.to_string(), level });
    }

    /// Removes the message of `kind` (if any).
    pub fn clear(&mut self, kind: &str) {
        self.0.retain(|m| m.kind != kind);
    }

    /// Removes every message.
    pub fn clear_all(&mut self) {
        self.0.clear();
    }

    /// Removes the refusals of input ([`INPUT_KINDS`]).
    pub fn clear_input(&mut self) {
        self.0.retain(|m| !INPUT_KINDS.contains(&m.kind.as_str()));
    }

    pub fn messages(&self) -> &[Message] {
        &self.0
    }

    /// The texts, oldest first (`kvlab.errors()`).
    pub fn texts(&self) -> Vec<String> {
        self.0.iter().map(|m| m.text.clone()).collect()
    }
}

/// The box's content for `list`: one `div.msg` per message, its text and a × button.
pub fn view(list: &MessageList) -> Vec<Element> {
    list.messages()
        .iter()
        .map(|m| {
            dom::node("div")
                .class(&format!("msg {}", m.level.class()))
                .attr("data-kind", &m.kind)
                .attr("role", if m.level == Level::Error { "alert" } else { "status" })
                .child(dom::node("span").class("msg-text").text(&m.text))
                .child(
                    dom::node("button")
                        .attr("type", "button")
                        .class("msg-close")
                        .attr("aria-label", "Dismiss message")
                        .text("×"),
                )
                .build()
        })
        .collect()
}

/// Makes `box_`'s children equal [`view`]'s `wanted`, keeping the elements that already show a
/// message in place (a screen reader does not hear an unchanged message again, and the focus stays).
fn patch(box_: &Element, wanted: Vec<Element>) {
    let children = box_.children();
    let existing: Vec<Element> = (0..children.length()).filter_map(|i| children.item(i)).collect();
    let mut kept = 0;
    for child in existing {
        if wanted.get(kept).is_some_and(|w| child.is_equal_node(Some(&**w))) {
            kept += 1;
        } else {
            child.remove();
        }
    }
    for w in &wanted[kept..] {
        let _ = box_.append_child(w);
    }
}

/// The page's messages: the list and the box it is shown in; clones share both.
#[derive(Clone)]
pub struct Messages {
    list: Rc<RefCell<MessageList>>,
    box_: Option<Element>,
}

impl Messages {
    /// Messages shown in the page's `#messages` (without one, they go to the console).
    pub fn open() -> Messages {
        Messages::in_box(dom::by_id::<Element>("messages"))
    }

    /// Messages shown in `box_`, whose × buttons dismiss them (one listener on the box).
    pub fn in_box(box_: Option<Element>) -> Messages {
        let messages = Messages { list: Rc::default(), box_ };
        if let Some(b) = &messages.box_ {
            let m = messages.clone();
            dom::listen::<Event>(b, "click", move |e: Event| m.on_click(&e));
        }
        // Whatever the page had in the box goes: it shows the (empty) list.
        messages.render();
        messages
    }

    fn on_click(&self, e: &Event) {
        let Some(target) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
        if target.closest(".msg-close").ok().flatten().is_none() {
            return;
        }
        if let Some(kind) = target.closest(".msg").ok().flatten().and_then(|m| m.get_attribute("data-kind")) {
            self.dismiss(&kind);
        }
    }

    /// Shows a refusal of bad input, replacing the previous message of the same kind.
    pub fn error(&self, kind: &str, text: &str) {
        self.show(kind, text, Level::Error);
    }

    /// Shows a notice, replacing the previous message of the same kind.
    pub fn notice(&self, kind: &str, text: &str) {
        self.show(kind, text, Level::Notice);
    }

    /// Shows good news, replacing the previous message of the same kind.
    pub fn ok(&self, kind: &str, text: &str) {
        self.show(kind, text, Level::Ok);
    }

    /// Shows `text` under `kind` (a page without a box logs it to the console instead).
    pub fn show(&self, kind: &str, text: &str, level: Level) {
        if self.box_.is_none() {
            web_sys::console::error_1(&text.into());
        }
        self.edit(|l| l.show(kind, text, level));
    }

    /// Removes the message of one kind.
    pub fn clear(&self, kind: &str) {
        self.edit(|l| l.clear(kind));
    }

    /// Removes every message.
    pub fn clear_all(&self) {
        self.edit(MessageList::clear_all);
    }

    /// Removes the refusals of input: called when a new setup loads, so no stale "Preset not
    /// loaded" stays above a preset that did load.
    pub fn clear_input(&self) {
        self.edit(MessageList::clear_input);
    }

    /// What the × of the message of `kind` does.
    pub fn dismiss(&self, kind: &str) {
        self.clear(kind);
    }

    /// The list as it is now.
    pub fn list(&self) -> MessageList {
        self.list.borrow().clone()
    }

    /// The texts of the messages, oldest first (`kvlab.errors()`).
    pub fn texts(&self) -> Vec<String> {
        self.list.borrow().texts()
    }

    fn edit(&self, f: impl FnOnce(&mut MessageList)) {
        let before = self.list();
        f(&mut self.list.borrow_mut());
        if *self.list.borrow() != before {
            self.render();
        }
    }

    /// Puts the list into the box.
    fn render(&self) {
        if let Some(b) = &self.box_ {
            patch(b, view(&self.list.borrow()));
        }
    }
}
