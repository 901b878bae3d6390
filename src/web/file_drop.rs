//! Files into the lab: one dropped anywhere on the page (a drop zone shows while a file is
//! dragged over it) or opened in the Load dialog is read with a progress bar (FileReader
//! progress events). A kvlab document (a preset or a mission) loads as the dialog loads it;
//! anything else is a trace (`trace_file.rs`): the lab replays it when it is small enough for
//! the main thread, the long-run worker (`day_run.rs`) runs it otherwise. Errors show where
//! the eye is, in the dialog or in the Trace panel under the drop, and change nothing.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, File, HtmlDialogElement, HtmlElement, ProgressEvent};

use crate::session::command::Command;

use super::app::{App, Input};
use super::day_run;
use super::dom;
use crate::session::trace_file::{self, MAIN_THREAD_MAX_REQUESTS};

/// Where a file came in, which decides where its progress and errors show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Dialog,
    Drop,
}

impl Place {
    fn progress_ids(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Place::Dialog => ("load-progress", "load-progress-bar", "load-progress-label"),
            Place::Drop => ("file-progress", "file-progress-bar", "file-progress-label"),
        }
    }
}

fn show(id: &str, on: bool) {
    if let Some(e) = dom::by_id::<HtmlElement>(id) {
        dom::set_hidden(&e, !on);
    }
}

fn show_progress(place: Place, loaded: f64, total: f64, name: &str) {
    let (row, bar, label) = place.progress_ids();
    show(row, true);
    if let Some(b) = dom::by_id::<web_sys::HtmlProgressElement>(bar) {
        b.set_value(if total > 0.0 { loaded / total } else { 0.0 });
    }
    if let Some(l) = dom::by_id::<HtmlElement>(label) {
        let mb = |b: f64| b / 1e6;
        dom::set_text(&l, &format!("Reading {name}: {:.1} of {:.1} MB", mb(loaded), mb(total)));
    }
}

/// Reads `file` as text with a progress bar at `place`, then hands the text to `done`.
pub fn read_file(file: &File, place: Place, done: impl FnOnce(String) + 'static) {
    let Ok(reader) = web_sys::FileReader::new() else { return };
    let name = file.name();
    let total = file.size();
    show_progress(place, 0.0, total, &name);
    let n2 = name.clone();
    let on_progress = Closure::<dyn FnMut(ProgressEvent)>::new(move |e: ProgressEvent| {
        show_progress(place, e.loaded(), if e.length_computable() { e.total() } else { total }, &n2);
    });
    reader.set_onprogress(Some(on_progress.as_ref().unchecked_ref()));
    on_progress.forget();
    let r2 = reader.clone();
    let onload = Closure::once_into_js(move || {
        show(place.progress_ids().0, false);
        if let Some(text) = r2.result().ok().and_then(|v| v.as_string()) {
            done(text);
        }
    });
    reader.set_onload(Some(onload.unchecked_ref()));
    let n3 = name.clone();
    let onerror = Closure::once_into_js(move || {
        show(place.progress_ids().0, false);
        show_error(place, &format!("{n3} could not be read"));
    });
    reader.set_onerror(Some(onerror.unchecked_ref()));
    let _ = reader.read_as_text(file);
}

/// Shows `e` at `place`, saying that nothing changed.
fn show_error(place: Place, e: &str) {
    let text = format!("{e}. Nothing in the lab changed.");
    match place {
        Place::Dialog => {
            if let Some(b) = dom::by_id::<HtmlElement>("load-error") {
                dom::set_text(&b, &text);
                dom::set_hidden(&b, false);
            }
        }
        Place::Drop => day_run::status("", Some(&text)),
    }
}

fn close_dialog() {
    if let Some(d) = dom::by_id::<HtmlDialogElement>("load-dialog") {
        d.close();
    }
}

/// Loads the trace `text` (the file `name`): into the lab when it is small, into the worker
/// when it is not; errors show at `place`.
pub fn load_trace(app: &Rc<App>, name: &str, text: String, place: Place) {
    if !super::full_lab::FULL {
        // The trace readers are the full module's (full_lab.rs): it loads the file there.
        close_dialog();
        super::full_lab::hand_over(super::full_lab::Handover::Trace { name, text: &text });
        return;
    }
    let current = app.lab().state.preset.clone();
    if trace_file::line_count(&text) > MAIN_THREAD_MAX_REQUESTS {
        close_dialog();
        day_run::start(app, current, text, name);
        return;
    }
    let load = match trace_file::trace_preset(&current, &text) {
        Ok(l) => l,
        Err(e) => return show_error(place, &format!("{name}: {e}")),
    };
    let summary = load.summary();
    let preset = serde_json::to_value(&load.preset).unwrap_or_default();
    match app.dispatch(Command::Load { preset }, Input::Inline) {
        Ok(_) => {
            day_run::cancel(None);
            close_dialog();
            day_run::status(&format!("{summary}, from {name}. The lab replays it: press Play."), None);
        }
        Err(e) => show_error(place, &format!("{name}: {e}")),
    }
}

/// Loads a kvlab document's text (the loader's `load_document`, handed in by the boot so that
/// this module and the loader do not import each other).
pub type LoadDocument = fn(&App, &str) -> Result<(), String>;

/// A dropped file: a document loads as the dialog loads it, anything else as a trace.
fn load_dropped(app: &Rc<App>, file: File, load_document: LoadDocument) {
    let app = app.clone();
    let name = file.name();
    read_file(&file, Place::Drop, move |text| {
        if trace_file::is_document(&text) {
            match load_document(&app, &text) {
                Ok(_) => day_run::status(&format!("Loaded {name}."), None),
                Err(e) => {
                    show_error(Place::Drop, &format!("{name}: {e}"));
                    // The first module's reader may not name the wrong field (formats::json):
                    // the full module reads the file again and shows its refusal.
                    let cmd = Command::LoadDocument { text, expect: None, source: None };
                    if super::full_lab::rereads(&cmd) {
                        super::full_lab::hand_over(super::full_lab::Handover::Command(&cmd));
                    }
                }
            }
        } else {
            load_trace(&app, &name, text, Place::Drop);
        }
    });
}

fn has_files(e: &DragEvent) -> bool {
    e.data_transfer().is_some_and(|dt| dt.types().iter().any(|t| t.as_string().as_deref() == Some("Files")))
}

/// The drop zone over the whole lab.
pub fn wire(app: &Rc<App>, load_document: LoadDocument) {
    let doc = dom::document();
    let zone_on = |on: bool| show("drop-zone", on);
    for ev in ["dragenter", "dragover"] {
        dom::listen::<DragEvent>(&doc, ev, move |e: DragEvent| {
            if has_files(&e) {
                e.prevent_default();
                zone_on(true);
            }
        });
    }
    dom::listen::<DragEvent>(&doc, "dragleave", move |e: DragEvent| {
        // Leaving the window (no element to go to), not moving between elements.
        if e.related_target().is_none() {
            zone_on(false);
        }
    });
    let a = app.clone();
    dom::listen::<DragEvent>(&doc, "drop", move |e: DragEvent| {
        zone_on(false);
        let Some(file) = e.data_transfer().and_then(|dt| dt.files()).and_then(|f| f.get(0)) else { return };
        e.prevent_default();
        load_dropped(&a, file, load_document);
    });
}
