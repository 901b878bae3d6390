//! Loading what instructors write: a preset (`kvlab/preset@1`) or a mission
//! (`kvlab/mission@1`), told apart by `schema`, from the "Load…" dialog (pasted text or a file)
//! or from the link (`?preset_url=` / `?mission_url=`: a path on this site or a `data:` URL).
//! A document that does not validate leaves a message naming the field, and the lab keeps what
//! it was showing. A mission also goes through the mission check of `kvlab check`
//! (`missions::check`): it is played either way, and the verdict says plainly when it is not a
//! valid mission.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, HtmlDialogElement, HtmlElement, HtmlInputElement, HtmlTextAreaElement};

use crate::formats::preset::{parse_preset_dto, PresetDto, MAX_PRESET_BYTES};
use crate::formats::sniff::{sniff_text, Document as Schema};
use crate::missions::check::check_mission;
use crate::missions::mission::{parse_mission, Mission};

use super::app::{App, ChangeFrom};
use super::dom;
use super::messages::Messages;
use super::url_state::{LabState, MissionRef};

/// A document an instructor loads.
pub enum Document {
    Preset(Box<PresetDto>),
    Mission(Box<Mission>),
}

/// Reads a preset or a mission; errors name the field ("goals[1].metric: …").
pub fn parse_document(text: &str) -> Result<Document, String> {
    if text.len() > MAX_PRESET_BYTES {
        return Err(format!("the document is {} bytes; the limit is {MAX_PRESET_BYTES} bytes", text.len()));
    }
    if sniff_text(text) == Some(Schema::Mission) {
        parse_mission(text).map(|m| Document::Mission(Box::new(m))).map_err(|e| e.to_string())
    } else {
        let dto = parse_preset_dto(text).map_err(|e| e.to_string())?;
        dto.to_config().map_err(|e| e.to_string())?;
        Ok(Document::Preset(Box::new(dto)))
    }
}

/// Loads preset JSON (from the API, the JSON editor or a file), keeping compare mode and the
/// mission being played (whose locks then apply).
pub fn load_preset_text(app: &App, text: &str) -> Result<(), String> {
    app.change(ChangeFrom::Preset, false, |s| {
        let dto = parse_preset_dto(text).map_err(|e| e.to_string())?;
        let mut next = LabState::new(dto);
        next.compare = s.compare;
        next.hidden = s.hidden.clone();
        next.mission = s.mission.clone().map(|r| MissionRef { solution: false, ..r });
        Ok(next)
    })
}

/// The mission check's verdict on a loaded mission.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The broken setup earns 0 stars and the fix 3.
    pub valid: bool,
    pub text: String,
}

/// Runs `kvlab check`'s mission check on `m` and shows the verdict on the page (kind
/// "mission-check", until the next load): a mission that fails is always reported; one that
/// passes only when `announce_pass` (the instructor loaded it; a learner following a link needs
/// no news that all is well).
pub fn check_and_report(m: &Mission, announce_pass: bool, messages: &Messages) -> Verdict {
    let verdict = match check_mission(m) {
        Ok(c) => Verdict { valid: c.problem().is_none(), text: c.verdict() },
        Err(e) => Verdict { valid: false, text: format!("Not a valid mission: {e}.") },
    };
    if !verdict.valid {
        messages.notice("mission-check", &verdict.text);
    } else if announce_pass {
        messages.ok("mission-check", &verdict.text);
    }
    verdict
}

/// Loads a preset (the free lab, keeping compare mode) or a mission (mission mode, after the
/// mission check, whose verdict is returned).
/// `expect` ("preset" or "mission") refuses the other kind, for the link parameters.
pub fn load_document(app: &App, text: &str, expect: Option<&str>) -> Result<Option<Verdict>, String> {
    let kind_of = |t: &str| if sniff_text(t) == Some(Schema::Mission) { "mission" } else { "preset" };
    let kind = expect.unwrap_or_else(|| kind_of(text));
    app.messages.clear("mission-check");
    if let Some(want) = expect {
        if kind_of(text) != want {
            let e = format!("this is a {}, not a {want}; use {}_url", kind_of(text), kind_of(text));
            let msg = format!("{} not loaded: {e}. The lab keeps its previous setup.", capitalized(want));
            app.messages.error(want, &msg);
            return Err(e);
        }
    }
    match parse_document(text) {
        Ok(Document::Mission(m)) => {
            app.start_mission(&m)?;
            Ok(Some(check_and_report(&m, expect.is_none(), &app.messages)))
        }
        Ok(Document::Preset(dto)) => app
            .change(ChangeFrom::Preset, false, |s| {
                let mut next = LabState::new(*dto);
                next.compare = s.compare;
                next.hidden = s.hidden.clone();
                Ok(next)
            })
            .map(|()| None),
        Err(e) => {
            let from = if kind == "mission" { ChangeFrom::Mission } else { ChangeFrom::Preset };
            app.change(from, false, |_| Err(e)).map(|()| None)
        }
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// Why `url` may not be loaded (None when it may): only this site's paths and `data:` URLs.
pub fn url_problem(url: &str, page_href: &str) -> Option<String> {
    let Ok(u) = web_sys::Url::new_with_base(url, page_href) else {
        return Some(format!("\"{url}\" is not a URL or a path"));
    };
    if u.protocol() == "data:" {
        return None;
    }
    let page = web_sys::Url::new(page_href).ok()?;
    if u.origin() != page.origin() {
        return Some(format!(
            "\"{url}\" is on another site; use a path on this site (e.g. missions/mine.json) or a data: URL"
        ));
    }
    None
}

/// The text a `data:` URL carries, decoded here rather than fetched: the page's
/// Content-Security-Policy (`connect-src 'self'`) does not let `fetch()` read `data:` URLs.
pub fn data_url_text(url: &str) -> Result<String, String> {
    let parsed = data_url::DataUrl::process(url)
        .map_err(|_| "the data: URL is malformed: write data:application/json,<the JSON, URL-encoded>".to_string())?;
    let (bytes, _) = parsed
        .decode_to_vec()
        .map_err(|_| "the data: URL's base64 is invalid; check that it was copied whole".to_string())?;
    String::from_utf8(bytes).map_err(|_| "the data: URL does not hold UTF-8 text (JSON)".to_string())
}

/// Loads the document at `url` (the `param` of the link, `preset_url` or `mission_url`): a
/// `data:` URL decoded here, a path on this site fetched.
pub fn load_from_url(app: &Rc<App>, param: &'static str, url: &str) {
    let expect = if param == "mission_url" { "mission" } else { "preset" };
    let messages = app.messages.clone();
    let fail = move |e: String| {
        messages.error(expect, &format!("Link not applied: {param}: {e}. The lab keeps its previous setup."))
    };
    let href = dom::window().location().href().unwrap_or_default();
    if let Some(p) = url_problem(url, &href) {
        fail(p);
        return;
    }
    if url.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:")) {
        match data_url_text(url) {
            Ok(text) => load_linked(app, &text, expect),
            Err(e) => fail(e),
        }
        return;
    }
    let resolved = web_sys::Url::new_with_base(url, &href).map(|u| u.href()).unwrap_or_else(|_| url.to_string());
    fetch_and_load(app, &resolved, format!("\"{url}\""), expect, fail);
}

/// Loads a linked document's text; a success clears the message about an earlier link.
fn load_linked(app: &App, text: &str, expect: &str) {
    if load_document(app, text, Some(expect)).is_ok() {
        app.messages.clear("link");
    }
}

/// Fetches `resolved` (shown in messages as `shown`) and loads its text as a document of kind
/// `expect`; `fail` reports what went wrong.
fn fetch_and_load(app: &Rc<App>, resolved: &str, shown: String, expect: &'static str, fail: impl Fn(String) + 'static) {
    let fail = Rc::new(fail);
    let app = app.clone();
    let shown2 = shown.clone();
    let fail2 = fail.clone();
    let on_response = Closure::<dyn FnMut(JsValue)>::once(move |resp: JsValue| {
        let Ok(resp) = resp.dyn_into::<web_sys::Response>() else {
            fail(format!("fetching {shown} gave no response"));
            return;
        };
        if !resp.ok() {
            fail(format!("{shown} answered {} {}", resp.status(), resp.status_text()));
            return;
        }
        let Ok(text) = resp.text() else {
            fail(format!("{shown} could not be read as text"));
            return;
        };
        let on_text = Closure::<dyn FnMut(JsValue)>::once(move |t: JsValue| {
            load_linked(&app, &t.as_string().unwrap_or_default(), expect);
        });
        let _ = text.then(&on_text);
        on_text.forget();
    });
    let on_error = Closure::<dyn FnMut(JsValue)>::once(move |e: JsValue| {
        let why =
            e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| "network error".into());
        fail2(format!("could not fetch {shown2} ({why})"));
    });
    let _ = dom::window().fetch_with_str(resolved).then2(&on_response, &on_error);
    // Each runs at most once; they live as long as the page.
    on_response.forget();
    on_error.forget();
}

/// Shows `text` in the dialog's paragraph `id` (hidden when None).
fn show_in_dialog(id: &str, text: Option<&str>) {
    if let Some(b) = dom::by_id::<HtmlElement>(id) {
        dom::set_text(&b, text.unwrap_or(""));
        dom::set_hidden(&b, text.is_none());
    }
}

/// The "Load…" dialog: paste or open a preset or mission.
pub fn wire_dialog(app: &Rc<App>) {
    let Some(dialog) = dom::by_id::<HtmlDialogElement>("load-dialog") else { return };
    let show_error = |text: Option<&str>| show_in_dialog("load-error", text);
    if let Some(btn) = dom::by_id::<HtmlElement>("load-btn") {
        let d = dialog.clone();
        let se = show_error;
        dom::listen::<Event>(&btn, "click", move |_| {
            se(None);
            show_in_dialog("load-verdict", None);
            let _ = d.show_modal();
            if let Some(ta) = dom::by_id::<HtmlElement>("load-text") {
                let _ = ta.focus();
            }
        });
    }
    if let Some(btn) = dom::by_id::<HtmlElement>("load-cancel") {
        let d = dialog.clone();
        dom::listen::<Event>(&btn, "click", move |_| d.close());
    }
    let apply = {
        let app = app.clone();
        let d = dialog.clone();
        move |text: String| match load_document(&app, &text, None) {
            Ok(verdict) => {
                show_error(None);
                match verdict.filter(|v| !v.valid) {
                    // Loaded and playable, but the dialog stays open to say why it is not valid.
                    Some(v) => show_in_dialog("load-verdict", Some(&v.text)),
                    None => d.close(),
                }
            }
            Err(e) => {
                show_in_dialog("load-verdict", None);
                show_error(Some(&e));
            }
        }
    };
    if let Some(btn) = dom::by_id::<HtmlElement>("load-apply") {
        let apply = apply.clone();
        dom::listen::<Event>(&btn, "click", move |_| {
            if let Some(ta) = dom::by_id::<HtmlTextAreaElement>("load-text") {
                apply(ta.value());
            }
        });
    }
    wire_dialog_file(app, apply);
}

/// The dialog's "Open a file…": a preset or mission goes into the text box and is loaded; a
/// trace (any other text) is loaded by `file_drop`, with the dialog's progress bar.
fn wire_dialog_file(app: &Rc<App>, apply: impl Fn(String) + Clone + 'static) {
    let Some(input) = dom::by_id::<HtmlInputElement>("load-file") else { return };
    let app = app.clone();
    dom::listen::<Event>(&input.clone(), "change", move |_| {
        let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
        show_in_dialog("load-error", None);
        show_in_dialog("load-verdict", None);
        let (apply, app, name) = (apply.clone(), app.clone(), file.name());
        super::file_drop::read_file(&file, super::file_drop::Place::Dialog, move |text| {
            if super::trace_file::is_document(&text) {
                if let Some(ta) = dom::by_id::<HtmlTextAreaElement>("load-text") {
                    ta.set_value(&text);
                }
                apply(text);
            } else {
                super::file_drop::load_trace(&app, &name, text, super::file_drop::Place::Dialog);
            }
        });
        input.set_value("");
    });
}
