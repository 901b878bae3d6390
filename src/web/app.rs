//! The running page: the lab's [`Session`], its view, and the animation-frame loop, shared by
//! the event handlers, the JS handle and the host API through one `Rc<App>`. Every change goes
//! through [`App::dispatch`], which hands a [`Command`] to the session and follows what it says:
//! an applied command redraws, updates the form and the URL, and keeps the stars a mission run
//! earned (never decreasing, through [`super::storage`]); a refused one is shown where the eye is
//! (beside the control, which keeps what the user chose; under the Sweep panel's fields; or as a
//! page message), except for a host page, which gets an `error` event instead (host.rs).

use std::cell::{Cell, Ref, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::session::command::{Applied, ChangeFrom, Command, MissionAction, Place, Refused};
use crate::session::dispatch::Session;
use crate::session::lab::Lab;
use crate::session::sweep::SweepPanel;

use super::controls;
use super::dom;
use super::errors;
use super::full_lab::{self, Handover};
use super::messages::Messages;
use super::storage::{self, Stars};
use super::sweep_view;
use super::view::View;

type FrameCallback = Closure<dyn FnMut(f64)>;

pub struct App {
    session: RefCell<Session>,
    pub view: RefCell<View>,
    frame: RefCell<Option<FrameCallback>>,
    frame_pending: Cell<bool>,
    /// `performance.now()` when the lab became interactive.
    pub ready_ms: Cell<f64>,
    /// Called after every change, once the address bar follows it (the host page's `state`
    /// events: `host.rs`).
    pub on_change: RefCell<Option<ChangeHook>>,
    /// The stars kept in this browser (localStorage, or memory when it cannot be used).
    pub stars: Stars,
    /// The messages shown in `#messages` (messages.rs).
    pub messages: Messages,
    /// Page elements outside the form holding text the lab refused (the JSON editor: key →
    /// why), until changed again or a whole new setup loads. The form's controls hold refused
    /// values in the session (`session::pending`).
    invalid: RefCell<BTreeMap<String, String>>,
    /// The `Rc` this app lives in, for what outlives a call (the kernel tables' fetch).
    #[cfg(feature = "kernel-clock")]
    me: RefCell<std::rc::Weak<App>>,
}

/// See [`App::on_change`].
pub type ChangeHook = Box<dyn Fn(&App)>;

/// Who sent a command: the page's own controls and keys, the JS handle (`window.kvlab`), or a
/// host page (`postMessage`), which hears of a refusal by an `error` event and leaves nothing
/// on the reader's screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Page,
    /// A page element that shows its own refusal beside itself (the JSON editor, the dialog).
    Inline,
    Handle,
    Host,
}

/// How long one frame may spend simulating at "max" speed.
const MAX_SPEED_BUDGET_MS: f64 = 12.0;

impl App {
    pub fn new(session: Session, view: View, stars: Stars, messages: Messages) -> Rc<App> {
        let app = Rc::new(App {
            #[cfg(feature = "kernel-clock")]
            me: RefCell::default(),
            session: RefCell::new(session),
            view: RefCell::new(view),
            frame: RefCell::new(None),
            frame_pending: Cell::new(false),
            ready_ms: Cell::new(0.0),
            on_change: RefCell::new(None),
            stars,
            messages,
            invalid: RefCell::new(BTreeMap::new()),
        });
        let weak = Rc::downgrade(&app);
        #[cfg(feature = "kernel-clock")]
        app.me.replace(weak.clone());
        *app.frame.borrow_mut() = Some(Closure::new(move |ts: f64| {
            if let Some(app) = weak.upgrade() {
                app.on_frame(ts);
            }
        }));
        app
    }

    pub fn session(&self) -> Ref<'_, Session> {
        self.session.borrow()
    }

    /// The lab as it is now (read only: changes are commands).
    pub fn lab(&self) -> Ref<'_, Lab> {
        Ref::map(self.session.borrow(), Session::lab)
    }

    pub fn panel(&self) -> Ref<'_, SweepPanel> {
        Ref::map(self.session.borrow(), Session::panel)
    }

    /// Applies `cmd` through the session and follows the outcome (see the module doc). The
    /// error is the refusal's reason, for the handle to throw and the host to post.
    pub fn dispatch(&self, cmd: Command, input: Input) -> Result<Applied, String> {
        // The first view's module: the full one applies it once loaded (full_lab.rs). Without a
        // loader on the page, the session refuses it in its words.
        if !full_lab::FULL && cmd.needs_panels() && full_lab::hand_over(Handover::Command(&cmd)) {
            return Ok(Applied::default());
        }
        // The first module's reader may not name the field a refused document has wrong
        // (formats::json): the full module reads it again and shows its refusal.
        let reread = (!full_lab::FULL && input != Input::Inline && cmd.reads_a_document()).then(|| cmd.clone());
        let from = cmd.from();
        let reset_marks = matches!(cmd, Command::Undo | Command::Redo) || from != ChangeFrom::Control;
        let edited = match &cmd {
            Command::Set { path, .. } => Some(path.clone()),
            _ => None,
        };
        let document = match &cmd {
            Command::LoadDocument { expect, .. } => Some(expect.is_none()),
            _ => None,
        };
        let solution = cmd == Command::Mission { action: MissionAction::Solution };
        let was_playing = self.lab().playing;
        // A refused value stays held in its control when the reader can see that control.
        let hold = matches!(input, Input::Page | Input::Handle) && edited.as_deref().is_some_and(controls::has_control);
        let result = self.session.borrow_mut().apply_with(cmd, dom::now_ms(), hold);
        if document.is_some() {
            self.messages.clear("mission-check");
        }
        match result {
            Ok(applied) => {
                if applied.setup {
                    self.messages.clear(from.message_kind());
                    if from != ChangeFrom::Control {
                        // A new setup replaces the old one: no earlier refusal is about it.
                        self.messages.clear_input();
                    }
                    let mut invalid = self.invalid.borrow_mut();
                    if reset_marks {
                        invalid.clear();
                    } else if let Some(p) = &edited {
                        invalid.remove(p);
                    }
                    drop(invalid);
                    self.sync_controls();
                    self.view.borrow_mut().invalidate();
                }
                self.follow(&applied, document.unwrap_or(false));
                #[cfg(feature = "kernel-clock")]
                self.follow_clock();
                if solution {
                    if let Some(b) = dom::by_id::<web_sys::HtmlElement>("mission-solution") {
                        b.scroll_into_view_with_bool(false);
                    }
                }
                if from != ChangeFrom::Time || was_playing != self.lab().playing || !self.lab().playing {
                    self.update_url();
                }
                super::onboarding::follow(&self.lab());
                self.request_frame();
                Ok(applied)
            }
            Err(refused) => {
                if matches!(input, Input::Page | Input::Handle) {
                    self.show_refusal(&refused, input == Input::Page);
                }
                if let Some(cmd) = reread.filter(full_lab::rereads) {
                    full_lab::hand_over(Handover::Command(&cmd));
                }

                self.request_frame();
                Err(refused.message)
            }
        }
    }

    /// The app, shared (what answers later holds it).
    #[cfg(feature = "kernel-clock")]
    pub fn rc(&self) -> Option<Rc<App>> {
        self.me.borrow().upgrade()
    }

    /// The session, to change it outside a command (a fetched file it waited for); the caller
    /// redraws.
    pub fn session_mut(&self) -> std::cell::RefMut<'_, Session> {
        self.session.borrow_mut()
    }

    /// Keeps the element `key` (a control's path, or the JSON editor's id) holding what the user
    /// wrote, marked with `why`, until it is changed again or a new setup loads.
    pub fn hold(&self, key: &str, why: &str) {
        self.invalid.borrow_mut().insert(key.to_string(), why.to_string());
    }

    /// What an applied command leaves besides the redraw: stars earned, a mission's verdict.
    fn follow(&self, applied: &Applied, announce_pass: bool) {
        if let Some(v) = &applied.verdict {
            if !v.valid {
                self.messages.notice("mission-check", &v.text);
            } else if announce_pass {
                self.messages.ok("mission-check", &v.text);
            }
            let lab = self.lab();
            if let (Some(m), Some(true)) = (&lab.mission, lab.state.mission.as_ref().map(|r| r.custom.is_some())) {
                let replay = crate::session::missions::replay_link(&lab.state);
                storage::remember_played(m.id(), m.number(), m.title(), replay.as_deref());
            }
        }
        if let Some((id, stars)) = &applied.earned {
            self.keep_stars(id, *stars);
        }
    }

    /// A refusal where the eye is: beside its control (which keeps the user's value; brought
    /// into view when the reader changed it, `reveal`), under the Sweep panel's fields, or as a
    /// page message of its source.
    fn show_refusal(&self, r: &Refused, reveal: bool) {
        match &r.place {
            Place::Control(path) if self.session.borrow().pending().held(path).is_some() => {
                self.sync_controls();
                if reveal {
                    controls::reveal(path);
                }
            }
            Place::Search(_) => self.draw(),
            Place::Sweep => self.draw(),
            _ => {
                self.messages.error(r.from.message_kind(), &r.text());
                self.sync_controls();
            }
        }
    }

    /// Asks for one animation frame (at most one is pending).
    pub fn request_frame(&self) {
        if self.frame_pending.get() || errors::panicked() {
            return;
        }
        if let Some(cb) = self.frame.borrow().as_ref() {
            if dom::window().request_animation_frame(cb.as_ref().unchecked_ref()).is_ok() {
                self.frame_pending.set(true);
            }
        }
    }

    fn on_frame(&self, ts: f64) {
        self.frame_pending.set(false);
        if errors::panicked() || dom::stopped() {
            return;
        }
        let was_playing = self.lab().playing;
        let earned = self.session.borrow_mut().tick(ts, MAX_SPEED_BUDGET_MS, &dom::now_ms);
        if let Some((id, stars)) = earned {
            self.keep_stars(&id, stars);
        }
        let sweeping = self.session.borrow_mut().step_jobs(MAX_SPEED_BUDGET_MS, &dom::now_ms);
        self.draw();
        let playing = self.lab().playing;
        if playing || sweeping {
            self.request_frame();
        } else if was_playing {
            // Playback just ended: the link now carries the final time.
            self.update_url();
        }
    }

    /// Draws the current state now. Drawing changes nothing but the page's pixels and text.
    pub fn draw(&self) {
        let session = self.session.borrow();
        let mut view = self.view.borrow_mut();
        view.render(session.lab());
        #[cfg(feature = "panels")]
        sweep_view::render(session.panel(), view.dark);
    }

    /// Puts the state (and the mission's locks, from the mission the lab already parsed) into
    /// the settings form; controls holding a refused value keep it, marked invalid.
    pub fn sync_controls(&self) {
        let session = self.session.borrow();
        let lab = session.lab();
        let kv_max = lab.runs.first().map(|r| crate::engine::gpu_fit::max_kv_gib(&r.config));
        let form = controls::Form {
            kv_max_gib: kv_max,
            invalid: &self.invalid.borrow(),
            pending: session.pending(),
            can_undo: session.can_undo(),
            can_redo: session.history().can_redo(),
        };
        controls::sync(&session.screen(), &lab.state, lab.mission.as_ref(), &lab.loaded, &form);
        controls::running_note(session.running_note().as_deref());
        sweep_view::lock(lab);
    }

    /// The query to keep in links: the page's, less the mission parameters once no mission is
    /// played (the fragment carries the state either way).
    fn search(&self) -> String {
        let search = dom::window().location().search().unwrap_or_default();
        if self.lab().state.mission.is_some() {
            return search;
        }
        let Ok(params) = web_sys::UrlSearchParams::new_with_str(&search) else { return search };
        params.delete("mission");
        params.delete("mission_url");
        let rest = String::from(params.to_string());
        if rest.is_empty() {
            String::new()
        } else {
            format!("?{rest}")
        }
    }

    /// The link that reproduces what is on screen.
    pub fn share_url(&self) -> String {
        let loc = dom::window().location();
        let base =
            format!("{}{}{}", loc.origin().unwrap_or_default(), loc.pathname().unwrap_or_default(), self.search());
        let lab = self.lab();
        if crate::session::trace_file::link_problem(&lab.state.preset).is_some() {
            return base; // the setup cannot travel in a link (update_url says why)
        }
        format!("{base}#{}", lab.snapshot().to_fragment())
    }

    /// Keeps the address bar in step with the state (no history entry per change).
    pub fn update_url(&self) {
        let problem = crate::session::trace_file::link_problem(&self.lab().state.preset);
        link_buttons(problem.as_deref());
        let fragment = match &problem {
            // A trace from a file stays out of the address bar: no multi-megabyte fragment.
            Some(p) => {
                self.messages.notice("share", p);
                String::new()
            }
            None => {
                self.messages.clear("share");
                self.remember_mission_setup();
                self.lab().snapshot().to_fragment()
            }
        };
        let loc = dom::window().location();
        let url = format!("{}{}#{fragment}", loc.pathname().unwrap_or_default(), self.search());
        if let Ok(history) = dom::window().history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
        }
        if let Some(a) = dom::by_id::<web_sys::HtmlAnchorElement>("open-full") {
            a.set_href(&format!("{}#{fragment}", loc.pathname().unwrap_or_default()));
        }
        if let Some(hook) = self.on_change.borrow().as_ref() {
            hook(self);
        }
    }

    /// In a mission, the learner's own setup (from the start of the run), for the hub's
    /// "Continue": not the mission's unchanged start, nor the solution shown.
    fn remember_mission_setup(&self) {
        let lab = self.lab();
        let (Some(m), Some(r)) = (&lab.mission, &lab.state.mission) else { return };
        if r.solution || lab.state.preset == *m.preset() {
            return;
        }
        let mut state = lab.state.clone();
        state.t_s = None;
        storage::remember_last_setup(m.id(), &format!("#{}", state.to_fragment()));
    }

    /// Keeps the stars a mission run earned (the store never lowers them) and says so.
    fn keep_stars(&self, id: &str, stars: u8) {
        self.stars.with(|k| k.earn(id, stars));
        self.stars.show_notices(&self.messages);
        self.update_hub_link();
        if let Some(v) = &mut self.view.borrow_mut().mission {
            v.invalidate();
        }
    }

    /// The header's link to the hub shows the stars earned so far, out of three per mission
    /// of the shipped index (the page holds no count of its own).
    pub fn update_hub_link(&self) {
        let (earned, total) = super::hub::totals(&self.stars);
        if let Some(el) = dom::by_id::<web_sys::Element>("hub-link-stars") {
            dom::set_text(&el, &format!("★ {earned}/{total}"));
        }
    }
}

/// Copy link and Embed, on, or off with the reason as their tooltip.
fn link_buttons(problem: Option<&str>) {
    for id in ["share-btn", "embed-btn"] {
        if let Some(b) = dom::by_id::<web_sys::HtmlButtonElement>(id) {
            b.set_disabled(problem.is_some());
            match problem {
                Some(p) => {
                    let _ = b.set_attribute("title", p);
                }
                None if id == "share-btn" => {
                    let _ = b.remove_attribute("title");
                }
                None => {
                    let _ = b.set_attribute(
                        "title",
                        "Copy an iframe snippet that embeds the lab as it is now (docs/EMBED.md)",
                    );
                }
            }
        }
    }
}
