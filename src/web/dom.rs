//! Small DOM helpers the lab's modules share: finding elements by id, setting text only when
//! it changes, toggling classes and attributes, attaching event listeners that live as long as
//! the page, and [`Node`], the one builder every module makes elements with (text nodes only;
//! the lab never writes HTML strings).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, Element, HtmlElement, Window};

pub fn window() -> Window {
    web_sys::window().expect("the lab runs in a browser window")
}

pub fn document() -> Document {
    window().document().expect("the window has a document")
}

/// The element with this id, cast to `T`; None when it is missing or of another type.
pub fn by_id<T: JsCast>(id: &str) -> Option<T> {
    document().get_element_by_id(id)?.dyn_into::<T>().ok()
}

/// Like [`by_id`], for elements the page cannot work without.
pub fn need<T: JsCast>(id: &str) -> Result<T, String> {
    by_id(id).ok_or_else(|| format!("the page has no element #{id} of the expected type"))
}

/// Sets the text of an element when it differs (no layout work for unchanged values).
pub fn set_text(el: &Element, text: &str) {
    if el.text_content().as_deref() != Some(text) {
        el.set_text_content(Some(text));
    }
}

pub fn set_hidden(el: &HtmlElement, hidden: bool) {
    if el.hidden() != hidden {
        el.set_hidden(hidden);
    }
}

pub fn toggle_class(el: &Element, class: &str, on: bool) {
    let _ = el.class_list().toggle_with_force(class, on);
}

thread_local! {
    static STOPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this module handed the page to another (`full_lab.rs`): its listeners and animation
/// frames then do nothing (the page they were attached to is gone).
pub fn stopped() -> bool {
    STOPPED.with(std::cell::Cell::get)
}

/// Stops this module's listeners and animation frames for good.
pub fn stop() {
    STOPPED.with(|s| s.set(true));
}

/// Attaches `f` to `target` for `event`; the closure is leaked on purpose (it lives as long
/// as the page does).
pub fn listen<E: JsCast + wasm_bindgen::convert::FromWasmAbi + 'static>(
    target: &web_sys::EventTarget,
    event: &str,
    mut f: impl FnMut(E) + 'static,
) {
    // Once the page is handed to the full module, this module's listeners do nothing.
    let closure = Closure::<dyn FnMut(E)>::new(move |e: E| {
        if !stopped() {
            f(e)
        }
    });
    let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
    closure.forget();
}

/// Milliseconds from the page's high-resolution clock (presentation and benchmarks only).
pub fn now_ms() -> f64 {
    window().performance().map_or(0.0, |p| p.now())
}

/// Device pixels per CSS pixel, clamped to a sane range.
pub fn device_pixel_ratio() -> f64 {
    window().device_pixel_ratio().clamp(1.0, 3.0)
}

/// Whether the learner asked the system for reduced motion.
pub fn prefers_reduced_motion() -> bool {
    window().match_media("(prefers-reduced-motion: reduce)").ok().flatten().is_some_and(|m| m.matches())
}

/// A new element with a class and (optionally) text. Text is always set as text, never parsed
/// as HTML: preset and mission strings come from files anyone can write.
pub fn el(tag: &str, class: &str, text: Option<&str>) -> Element {
    let e = document().create_element(tag).expect("the document creates elements");
    if !class.is_empty() {
        e.set_class_name(class);
    }
    if let Some(t) = text {
        e.set_text_content(Some(t));
    }
    e
}

/// Appends `child` to `parent` and returns the child.
pub fn append(parent: &Element, child: Element) -> Element {
    let _ = parent.append_child(&child);
    child
}

/// Removes every child of `el`.
pub fn clear(el: &Element) {
    while let Some(c) = el.first_child() {
        let _ = el.remove_child(&c);
    }
}

/// Fills `el` with `stars` of `max` stars (★ earned, ☆ not), labelled for screen readers.
pub fn fill_stars(el: &Element, stars: u8, max: u8) {
    let label = format!("{stars} of {max} stars");
    if el.get_attribute("aria-label").as_deref() == Some(label.as_str()) && el.child_element_count() == u32::from(max) {
        return;
    }
    clear(el);
    let _ = el.set_attribute("role", "img");
    let _ = el.set_attribute("aria-label", &label);
    let _ = el.set_attribute("data-stars", &stars.to_string());
    for i in 0..max {
        let on = i < stars;
        append(el, el_star(on));
    }
}

fn el_star(on: bool) -> Element {
    let s = el("span", if on { "star on" } else { "star" }, Some(if on { "★" } else { "☆" }));
    let _ = s.set_attribute("aria-hidden", "true");
    s
}

/// An element under construction, the one way the lab builds DOM: `dom::node("p")
/// .class("insp-main").child(dom::node("strong").text("Request #7")).text(" · running")`.
/// Text goes in as text nodes, never parsed as HTML: preset and mission strings come from
/// files anyone can write.
pub struct Node(Element);

/// A new element `tag` to build on.
pub fn node(tag: &str) -> Node {
    Node(document().create_element(tag).expect("the document creates elements"))
}

impl Node {
    pub fn class(self, class: &str) -> Node {
        if !class.is_empty() {
            self.0.set_class_name(class);
        }
        self
    }

    pub fn attr(self, name: &str, value: &str) -> Node {
        let _ = self.0.set_attribute(name, value);
        self
    }

    /// Appends `text` as a text node (`Element.append` with a string).
    pub fn text(self, text: &str) -> Node {
        if !text.is_empty() {
            let _ = self.0.append_with_str_1(text);
        }
        self
    }

    pub fn child(self, child: Node) -> Node {
        let _ = self.0.append_child(&child.0);
        self
    }

    pub fn children(self, children: impl IntoIterator<Item = Node>) -> Node {
        for c in children {
            let _ = self.0.append_child(&c.0);
        }
        self
    }

    pub fn build(self) -> Element {
        self.0
    }
}

/// Replaces every child of `parent` with `children`.
pub fn replace_children(parent: &Element, children: impl IntoIterator<Item = Node>) {
    clear(parent);
    for c in children {
        let _ = parent.append_child(&c.0);
    }
}

/// Fetches `url` as text under `init`: `ok` gets the text, or `fail` what went wrong, in words
/// that name the file as `shown`.
pub fn fetch_text(
    url: &str,
    shown: &str,
    init: &web_sys::RequestInit,
    ok: impl FnOnce(String) + 'static,
    fail: impl Fn(String) + 'static,
) {
    let fail = std::rc::Rc::new(fail);
    let fail2 = fail.clone();
    let quoted = format!("\"{shown}\"");
    let quoted2 = quoted.clone();
    let on_response = Closure::<dyn FnMut(JsValue)>::once(move |resp: JsValue| {
        let Ok(resp) = resp.dyn_into::<web_sys::Response>() else {
            fail(format!("fetching {quoted} gave no response"));
            return;
        };
        if !resp.ok() {
            fail(format!("{quoted} answered {} {}", resp.status(), resp.status_text()));
            return;
        }
        let Ok(text) = resp.text() else {
            fail(format!("{quoted} could not be read as text"));
            return;
        };
        let on_text = Closure::<dyn FnMut(JsValue)>::once(move |t: JsValue| ok(t.as_string().unwrap_or_default()));
        let _ = text.then(&on_text);
        on_text.forget();
    });
    let on_error = Closure::<dyn FnMut(JsValue)>::once(move |e: JsValue| {
        let why =
            e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| "network error".into());
        fail2(format!("could not fetch {quoted2} ({why})"));
    });
    let _ = window().fetch_with_str_and_init(url, init).then2(&on_response, &on_error);
    // Each runs at most once; they live as long as the page.
    on_response.forget();
    on_error.forget();
}
