//! The settings' Preset JSON editor. "Load this JSON" (or a file opened there) sends a `load`
//! command; a refusal keeps the text the user wrote, marks the editor invalid with the reason
//! under it, and selects the line the error is about (the line serde names, or the line of the
//! field it names), so nothing typed is lost and the eye lands on the fault.

use web_sys::{Element, HtmlTextAreaElement};

use crate::session::command::Command;

use super::app::{App, Input};
use super::controls::{EDITOR_ERROR_ID as ERROR_ID, EDITOR_ID};
use super::dom;

/// Loads `text` as the lab's preset; refused, the editor keeps it and says why. In the first
/// view's module, a preset only the full lab reads (its arrivals a trace) is typed again into the
/// full module's editor and loaded there, so a refusal still lands under the text (full_lab.rs).
pub fn apply(app: &App, text: &str) {
    let cmd = Command::Load { preset: text.into() };
    if !super::full_lab::FULL && cmd.needs_panels() {
        super::full_lab::hand_over(super::full_lab::Handover::Editor { text });
        return;
    }
    match app.dispatch(cmd, Input::Inline) {
        Ok(_) => show(None, text),
        Err(why) => {
            // The first module's reader may not name the wrong field (formats::json): the full
            // module loads the text again and shows its refusal under it.
            if super::full_lab::rereads(&Command::Load { preset: text.into() }) {
                super::full_lab::hand_over(super::full_lab::Handover::Editor { text });
            }
            if let Some(ta) = dom::by_id::<HtmlTextAreaElement>(EDITOR_ID) {
                if ta.value() != text {
                    ta.set_value(text); // a file's text, now the editor's
                }
            }
            app.hold(EDITOR_ID, &why);
            show(Some(&why), text);
        }
    }
}

/// Shows `why` under the editor (or clears it) and selects the line it is about.
pub fn show(why: Option<&str>, text: &str) {
    let Some(ta) = dom::by_id::<HtmlTextAreaElement>(EDITOR_ID) else { return };
    let existing = dom::by_id::<Element>(ERROR_ID);
    let Some(why) = why else {
        let _ = ta.remove_attribute("aria-invalid");
        let _ = ta.remove_attribute("aria-describedby");
        if let Some(e) = existing {
            e.remove();
        }
        return;
    };
    let note = existing.unwrap_or_else(|| {
        let p = dom::el("p", "field-error", None);
        let _ = p.set_attribute("id", ERROR_ID);
        let _ = p.set_attribute("role", "alert");
        let _ = ta.after_with_node_1(&p);
        p
    });
    let line = crate::session::loader::fault_line(why, text);
    let at = line.map(|n| format!(" (line {n})")).unwrap_or_default();
    dom::set_text(&note, &format!("Preset not loaded{at}: {why}. Your text is kept; fix it and load again."));
    let _ = ta.set_attribute("aria-invalid", "true");
    let _ = ta.set_attribute("aria-describedby", ERROR_ID);
    if let Some(details) = dom::by_id::<Element>("json-editor") {
        let _ = details.set_attribute("open", "");
    }
    if let Some(n) = line {
        let (start, end) = line_span(text, n);
        let _ = ta.focus();
        let _ = ta.set_selection_range(start as u32, end as u32);
        // Selecting does not scroll a textarea to the selection: put the line a third of the
        // way down the editor's box.
        let lines = text.split('\n').count().max(1) as f64;
        let per_line = f64::from(ta.scroll_height()) / lines;
        let top = per_line * (n as f64 - 1.0) - f64::from(ta.client_height()) / 3.0;
        ta.set_scroll_top(top.max(0.0) as i32);
    }
    super::controls::reveal_both(&ta, &note);
}

/// The character offsets of line `n` (1-based) of `text`, as the textarea counts them (UTF-16).
fn line_span(text: &str, n: usize) -> (usize, usize) {
    let mut start = 0;
    for (i, line) in text.split('\n').enumerate() {
        let len = line.encode_utf16().count();
        if i + 1 == n {
            return (start, start + len);
        }
        start += len + 1;
    }
    (start, start)
}
