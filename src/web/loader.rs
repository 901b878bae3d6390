//! Loading what instructors write, in the page: the "Load…" dialog (pasted text or a file) and
//! the link's `?preset_url=` / `?mission_url=` (a path on this site or a `data:` URL). Reading
//! and checking a document is the session's (`session::loader`); this module fetches, decodes
//! and shows. A linked file is fetched on every load of the page: the lab state a link carries
//! (`#lab=`) is kept only while the file is still the one it was made from (its digest); a file
//! that changed is loaded anew, and a file that cannot be fetched leaves the link's last good
//! copy on screen, with a message saying which it is.

use std::rc::Rc;

use web_sys::{Event, HtmlDialogElement, HtmlElement, HtmlInputElement, HtmlTextAreaElement};

use crate::session::command::{Command, DocKind};
use crate::session::loader::digest;
use crate::session::url_state::LinkedFile;

use super::app::{App, Input};
use super::dom;

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

/// Loads the document at `url` (the link's `preset_url` or `mission_url`): a `data:` URL
/// decoded here, a path on this site fetched. `linked` is the file the link's state was made
/// from, when the link carries one.
pub fn load_from_url(app: &Rc<App>, expect: DocKind, url: &str, linked: Option<LinkedFile>) {
    let param = format!("{}_url", expect.name());
    let messages = app.messages.clone();
    let kept = linked.is_some();
    let fail = move |e: String| {
        let rest =
            if kept { "The lab shows the last good copy this link holds" } else { "The lab keeps its previous setup" };
        messages.error(expect.name(), &format!("Link not applied: {param}: {e}. {rest}."))
    };
    let href = dom::window().location().href().unwrap_or_default();
    if let Some(p) = url_problem(url, &href) {
        fail(p);
        return;
    }
    if url.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:")) {
        match data_url_text(url) {
            Ok(text) => load_linked(app, &text, expect, url, linked.as_ref()),
            Err(e) => fail(e),
        }
        return;
    }
    let resolved = web_sys::Url::new_with_base(url, &href).map(|u| u.href()).unwrap_or_else(|_| url.to_string());
    fetch_and_load(app, &resolved, url.to_string(), expect, linked, fail);
}

/// Loads a linked document's text, unless the link's state was made from this very text (its
/// edits and time are kept then); a success clears the message about an earlier link.
fn load_linked(app: &App, text: &str, expect: DocKind, url: &str, linked: Option<&LinkedFile>) {
    let current = linked.filter(|l| l.url == url && l.digest == digest(text)).is_some();
    if current {
        app.messages.clear("link");
        return;
    }
    let cmd = Command::LoadDocument { text: text.into(), expect: Some(expect), source: Some(url.into()) };
    if app.dispatch(cmd, Input::Page).is_ok() {
        app.messages.clear("link");
        if linked.is_some() {
            let what = expect.name();
            app.messages.notice(
                "link-file",
                &format!("The {what} at {url} changed since this link was made: the lab shows its new version."),
            );
        }
    }
}

/// Fetches `resolved` (`shown` in messages) and loads its text as a document of kind `expect`;
/// `fail` reports what went wrong.
fn fetch_and_load(
    app: &Rc<App>,
    resolved: &str,
    shown: String,
    expect: DocKind,
    linked: Option<LinkedFile>,
    fail: impl Fn(String) + 'static,
) {
    let app = app.clone();
    // Never the browser's cached copy: the point is to see the file as it is now.
    let init = web_sys::RequestInit::new();
    init.set_cache(web_sys::RequestCache::NoCache);
    dom::fetch_text(
        resolved,
        &shown.clone(),
        &init,
        move |text| load_linked(&app, &text, expect, &shown, linked.as_ref()),
        fail,
    );
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
    if !super::full_lab::FULL {
        // The dialog reads missions, config.json files and traces: the full module opens it
        // (full_lab.rs), so whatever is typed there is typed into the module that reads it.
        if let Some(btn) = dom::by_id::<HtmlElement>("load-btn") {
            dom::listen::<Event>(&btn, "click", move |_| {
                super::full_lab::hand_over(super::full_lab::Handover::Click { id: "load-btn" });
            });
        }
        return;
    }
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
        move |text: String| match app
            .dispatch(Command::LoadDocument { text, expect: None, source: None }, Input::Inline)
        {
            Ok(applied) => {
                show_error(None);
                match applied.verdict.filter(|v| !v.valid) {
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
            if crate::session::trace_file::is_document(&text) {
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
