//! The running page: the lab, its view, and the animation-frame loop, shared by the event
//! handlers and the JS handle through one `Rc<App>`. All state changes go through
//! [`App::change`] (validate, apply or report, then redraw and update the URL), all time
//! changes through [`App::set_time`]. In mission mode a run that reaches its end is scored and
//! its stars are kept (never decreasing) through [`super::storage`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::missions::mission::Mission;

use super::controls;
use super::dom;
use super::errors;
use super::kv_search::{Refusal, SearchFields};
use super::lab::Lab;
use super::messages::Messages;
use super::missions;
use super::storage::{self, Stars};
use super::sweep::SweepPanel;
use super::sweep_view::{self, SweepAction};
use super::url_state::LabState;
use super::view::View;

type FrameCallback = Closure<dyn FnMut(f64)>;

pub struct App {
    pub lab: RefCell<Lab>,
    pub view: RefCell<View>,
    frame: RefCell<Option<FrameCallback>>,
    frame_pending: Cell<bool>,
    /// `performance.now()` when the lab became interactive.
    pub ready_ms: Cell<f64>,
    /// The mission setup whose final score was last kept (so it is kept once).
    recorded: RefCell<Option<String>>,
    /// Called after every change, once the address bar follows it (the host page's `state`
    /// events: `host.rs`).
    pub on_change: RefCell<Option<ChangeHook>>,
    /// The stars kept in this browser (localStorage, or memory when it cannot be used).
    pub stars: Stars,
    /// The messages shown in `#messages` (messages.rs).
    pub messages: Messages,
    /// The Sweep panel's job and chosen metric (sweep.rs), stepped in [`App::on_frame`].
    pub sweep: RefCell<SweepPanel>,
}

/// See [`App::on_change`].
pub type ChangeHook = Box<dyn Fn(&App)>;

/// Where a proposed change comes from: it names the page message a refusal leaves (and an
/// accepted change clears), and how that message starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFrom {
    /// A control of the form, a key, the JS handle's setters, a host page's command.
    Control,
    /// A preset (picker, JSON editor, file, `loadPreset`).
    Preset,
    /// A mission (start, hint, solution, restart, exit).
    Mission,
    /// A link (`#lab=` fragment, `setState`).
    Link,
}

impl ChangeFrom {
    /// The kind of the page message (messages.rs) this source leaves.
    pub fn message_kind(self) -> &'static str {
        match self {
            ChangeFrom::Control => "control",
            ChangeFrom::Preset => "preset",
            ChangeFrom::Mission => "mission",
            ChangeFrom::Link => "link",
        }
    }

    fn refusal_prefix(self) -> &'static str {
        match self {
            ChangeFrom::Control => "",
            ChangeFrom::Preset => "Preset not loaded: ",
            ChangeFrom::Mission => "Mission not loaded: ",
            ChangeFrom::Link => "Link not applied: ",
        }
    }
}

/// The mission panel's buttons (and `showSolution()`, `revealHint()`, `restartMission()`,
/// `exitMission()` on the handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissionAction {
    /// One more hint.
    Hint,
    /// The documented fix, from 0 s; its stars are not kept.
    Solution,
    /// The broken setup again, from 0 s.
    Restart,
    /// Back to the free lab, keeping the setup.
    Exit,
}

/// How long one frame may spend simulating at "max" speed.
const MAX_SPEED_BUDGET_MS: f64 = 12.0;

impl App {
    pub fn new(lab: Lab, view: View, stars: Stars, messages: Messages) -> Rc<App> {
        let app = Rc::new(App {
            lab: RefCell::new(lab),
            view: RefCell::new(view),
            frame: RefCell::new(None),
            frame_pending: Cell::new(false),
            ready_ms: Cell::new(0.0),
            recorded: RefCell::new(None),
            on_change: RefCell::new(None),
            stars,
            messages,
            sweep: RefCell::new(SweepPanel::default()),
        });
        let weak = Rc::downgrade(&app);
        *app.frame.borrow_mut() = Some(Closure::new(move |ts: f64| {
            if let Some(app) = weak.upgrade() {
                app.on_frame(ts);
            }
        }));
        app
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
        if errors::panicked() {
            return;
        }
        let was_playing = self.lab.borrow().playing;
        let playing = {
            let mut lab = self.lab.borrow_mut();
            lab.tick(ts, MAX_SPEED_BUDGET_MS, &dom::now_ms);
            lab.playing
        };
        self.keep_mission_stars();
        let sweeping = self.step_sweep();
        self.draw();
        if playing || sweeping {
            self.request_frame();
        } else if was_playing {
            // Playback just ended: the link now carries the final time.
            self.update_url();
        }
    }

    /// Draws the current state now. Drawing changes nothing but the page's pixels and text:
    /// what a change of time or setup implies (a mission's stars kept) happens in that change.
    pub fn draw(&self) {
        let lab = self.lab.borrow();
        let mut view = self.view.borrow_mut();
        view.render(&lab);
        sweep_view::render(&self.sweep.borrow(), view.dark);
    }

    /// Runs the sweep's next runs within one frame's budget, or else the smallest-KV search's
    /// (one job a frame: a search started during a sweep waits for it); true while runs remain.
    fn step_sweep(&self) -> bool {
        let mut panel = self.sweep.borrow_mut();
        let panel = &mut *panel;
        if let Some(job) = panel.job.as_mut().filter(|j| j.running()) {
            if job.step(MAX_SPEED_BUDGET_MS, &dom::now_ms) {
                return true;
            }
            panel.took_ms = Some(dom::now_ms() - panel.started_ms);
            return panel.search.as_ref().is_some_and(|s| s.running());
        }
        let Some(search) = panel.search.as_mut().filter(|s| s.running()) else { return false };
        let more = search.step(MAX_SPEED_BUDGET_MS, &dom::now_ms);
        if !more {
            panel.search_took_ms = Some(dom::now_ms() - panel.search_started_ms);
        }
        more
    }

    /// The Sweep panel's actions. A refused sweep leaves a page message naming the field and
    /// keeps the previous sweep and the lab as they were.
    pub fn sweep_action(&self, action: SweepAction) -> Result<(), String> {
        match action {
            SweepAction::Run { knob, values } => {
                let job = {
                    let lab = self.lab.borrow();
                    serde_json::to_value(&lab.state.preset)
                        .map_err(|e| e.to_string())
                        .and_then(|preset| sweep_view::start(&preset, lab.mission.as_ref(), &knob, &values))
                };
                match job {
                    Ok(job) => {
                        self.messages.clear(sweep_view::MESSAGE_KIND);
                        let mut panel = self.sweep.borrow_mut();
                        panel.job = Some(job);
                        panel.started_ms = dom::now_ms();
                        panel.took_ms = None;
                    }
                    Err(e) => {
                        self.messages.error(sweep_view::MESSAGE_KIND, &format!("Sweep not run: {e}."));
                        return Err(e);
                    }
                }
            }
            SweepAction::Cancel => {
                if let Some(job) = self.sweep.borrow_mut().job.as_mut().filter(|j| j.running()) {
                    job.cancelled = true;
                }
            }
            SweepAction::Metric(m) => self.sweep.borrow_mut().metric = m,
            SweepAction::Search(fields) => self.start_search(&fields)?,
            SweepAction::CancelSearch => {
                if let Some(search) = self.sweep.borrow_mut().search.as_mut().filter(|s| s.running()) {
                    search.cancelled = true;
                }
            }
        }
        self.request_frame();
        Ok(())
    }

    /// Starts the smallest-KV search on the lab's preset. A refused target is shown under the
    /// field (naming it and the fix) and the previous search and the lab stay as they were.
    fn start_search(&self, fields: &SearchFields) -> Result<(), String> {
        let job = {
            let lab = self.lab.borrow();
            serde_json::to_value(&lab.state.preset)
                .map_err(|e| Refusal::general(e.to_string()))
                .and_then(|preset| sweep_view::start_search(&preset, lab.mission.as_ref(), fields))
        };
        let mut panel = self.sweep.borrow_mut();
        match job {
            Ok(job) => {
                panel.search = Some(job);
                panel.search_started_ms = dom::now_ms();
                panel.search_took_ms = None;
                panel.search_error = None;
                Ok(())
            }
            Err(e) => {
                let message = e.message.clone();
                panel.search_error = Some(Refusal { message: format!("Search not run: {message}."), ..e });
                drop(panel);
                self.draw();
                Err(message)
            }
        }
    }

    /// Proposes a new state computed from the current one. Valid: taken, the form and URL
    /// follow. Invalid: the message appears under `kind` and everything stays as it was.
    pub fn change(
        &self,
        from: ChangeFrom,
        keep_time: bool,
        f: impl FnOnce(&LabState) -> Result<LabState, String>,
    ) -> Result<(), String> {
        let proposed = f(&self.lab.borrow().state);
        let result = proposed.and_then(|s| self.lab.borrow_mut().apply(s, keep_time));
        match &result {
            Ok(()) => {
                self.messages.clear(from.message_kind());
                if from != ChangeFrom::Control {
                    // A new setup replaces the old one: no earlier refusal is about it.
                    self.messages.clear_input();
                    let mut lab = self.lab.borrow_mut();
                    lab.loaded = lab.state.preset.clone();
                }
                self.after_change();
            }
            Err(e) => {
                let text = format!("{}{e}. The lab keeps its previous setup.", from.refusal_prefix());
                self.messages.error(from.message_kind(), &text);
                self.sync_controls();
            }
        }
        result
    }

    /// Puts the state (and the mission's locks, from the mission the lab already parsed) into
    /// the settings form.
    pub fn sync_controls(&self) {
        let lab = self.lab.borrow();
        let kv_max = lab.runs.first().map(|r| crate::engine::gpu_fit::max_kv_gib(&r.config));
        controls::sync(&lab.state, lab.mission.as_ref(), &lab.loaded, kv_max);
        sweep_view::lock(lab.mission.as_ref());
    }

    fn after_change(&self) {
        self.sync_controls();
        self.keep_mission_stars();
        self.view.borrow_mut().invalidate();
        self.update_url();
        self.request_frame();
    }

    /// Moves to time `t_us` and pauses.
    pub fn set_time(&self, t_us: u64) {
        {
            let mut lab = self.lab.borrow_mut();
            lab.pause();
            lab.seek(t_us);
        }
        self.keep_mission_stars();
        self.update_url();
        self.request_frame();
    }

    pub fn with_lab<R>(&self, f: impl FnOnce(&mut Lab) -> R) -> R {
        let r = f(&mut self.lab.borrow_mut());
        self.keep_mission_stars();
        self.request_frame();
        r
    }

    pub fn toggle_play(&self) {
        let playing = self.with_lab(|lab| {
            if lab.playing {
                lab.pause();
            } else {
                lab.play();
            }
            lab.playing
        });
        if !playing {
            self.update_url();
        }
    }

    /// The query to keep in links: the page's, less the mission parameters once no mission is
    /// played (the fragment carries the state either way).
    fn search(&self) -> String {
        let search = dom::window().location().search().unwrap_or_default();
        if self.lab.borrow().state.mission.is_some() {
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
        let lab = self.lab.borrow();
        if super::trace_file::link_problem(&lab.state.preset).is_some() {
            return base; // the setup cannot travel in a link (update_url says why)
        }
        format!("{base}#{}", lab.snapshot().to_fragment())
    }

    /// Keeps the address bar in step with the state (no history entry per change).
    pub fn update_url(&self) {
        let problem = super::trace_file::link_problem(&self.lab.borrow().state.preset);
        link_buttons(problem.as_deref());
        let fragment = match &problem {
            // A trace from a file stays out of the address bar: no multi-megabyte fragment.
            Some(p) => {
                self.messages.notice("share", p);
                String::new()
            }
            None => {
                self.messages.clear("share");
                self.lab.borrow().snapshot().to_fragment()
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

    /// At the end of a mission run (not the shown solution), keeps its stars once. Called by
    /// every action that moves time or changes the setup, never by drawing.
    fn keep_mission_stars(&self) {
        let (id, stars, key) = {
            let lab = self.lab.borrow();
            let Some(r) = lab.state.mission.as_ref().filter(|r| !r.solution) else { return };
            if !lab.is_at_end() {
                return;
            }
            let key = format!("{}|{}", r.id, serde_json::to_string(&lab.state.preset).unwrap_or_default());
            if self.recorded.borrow().as_deref() == Some(key.as_str()) {
                return;
            }
            let Some(status) = lab.mission_status() else { return };
            (r.id.clone(), status.score.stars, key)
        };
        *self.recorded.borrow_mut() = Some(key);
        self.stars.with(|k| k.earn(&id, stars));
        self.stars.show_notices(&self.messages);
        self.update_hub_link();
        if let Some(v) = &mut self.view.borrow_mut().mission {
            v.invalidate();
        }
    }

    /// Starts `m` from its broken setup (time 0).
    pub fn start_mission(&self, m: &Mission) -> Result<(), String> {
        let r = missions::reference(m);
        let r_custom = r.custom.is_some();
        let result = self.change(ChangeFrom::Mission, false, |s| {
            let mut next = LabState::new(m.preset().clone());
            next.hidden = s.hidden.clone();
            next.mission = Some(r);
            Ok(next)
        });
        if result.is_ok() && r_custom {
            storage::remember_played(m.id(), m.number(), m.title());
        }
        if result.is_ok() && self.may_autoplay() {
            self.with_lab(|lab| lab.play());
        }
        result
    }

    /// Whether a new setup may start playing by itself (not with `autoplay=0`, reduced motion or
    /// while benchmarking).
    fn may_autoplay(&self) -> bool {
        let lab = self.lab.borrow();
        lab.options.autoplay != Some(false) && !lab.options.bench && !dom::prefers_reduced_motion()
    }

    /// The mission panel's buttons.
    pub fn mission_action(&self, action: MissionAction) -> Result<(), String> {
        let Some(m) = self.lab.borrow().mission.clone() else {
            return Err("no mission is being played; open one from the missions page".into());
        };
        let edit = |f: &dyn Fn(&mut LabState)| {
            let mut next = self.lab.borrow().state.clone();
            f(&mut next);
            next
        };
        let result = match action {
            MissionAction::Hint => {
                let next = edit(&|n| {
                    if let Some(r) = &mut n.mission {
                        r.hints = (r.hints + 1).min(m.hints().len() as u32);
                    }
                });
                self.change(ChangeFrom::Mission, true, |_| Ok(next))
            }
            MissionAction::Solution | MissionAction::Restart => {
                let solution = action == MissionAction::Solution;
                let next = edit(&|n| {
                    n.preset = if solution { m.fix_preset().clone() } else { m.preset().clone() };
                    n.compare = false;
                    n.t_s = None;
                    if let Some(r) = &mut n.mission {
                        r.solution = solution;
                    }
                });
                let r = self.change(ChangeFrom::Mission, false, |_| Ok(next));
                if r.is_ok() && self.may_autoplay() {
                    self.with_lab(|lab| lab.play());
                }
                r
            }
            MissionAction::Exit => {
                let next = edit(&|n| n.mission = None);
                self.change(ChangeFrom::Mission, true, |_| Ok(next))
            }
        };
        if action == MissionAction::Solution && result.is_ok() {
            if let Some(b) = dom::by_id::<web_sys::HtmlElement>("mission-solution") {
                b.scroll_into_view_with_bool(false);
            }
        }
        result
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
