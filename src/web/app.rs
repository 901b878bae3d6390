//! The running page: the lab, its view, and the animation-frame loop, shared by the event
//! handlers and the JS handle through one `Rc<App>`. All state changes go through
//! [`App::change`] (validate, apply or report, then redraw and update the URL), all time
//! changes through [`App::set_time`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::controls;
use super::dom;
use super::errors;
use super::lab::Lab;
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
}

/// How long one frame may spend simulating at "max" speed.
const MAX_SPEED_BUDGET_MS: f64 = 12.0;

impl App {
    pub fn new(lab: Lab, view: View) -> Rc<App> {
        let app = Rc::new(App {
            lab: RefCell::new(lab),
            view: RefCell::new(view),
            frame: RefCell::new(None),
            frame_pending: Cell::new(false),
            ready_ms: Cell::new(0.0),
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
        self.draw();
        if playing {
            self.request_frame();
        } else if was_playing {
            // Playback just ended: the link now carries the final time.
            self.update_url();
        }
    }

    /// Draws the current state now.
    pub fn draw(&self) {
        let lab = self.lab.borrow();
        self.view.borrow_mut().render(&lab);
    }

    /// Proposes a new state computed from the current one. Valid: taken, the form and URL
    /// follow. Invalid: the message appears under `kind` and everything stays as it was.
    pub fn change(&self, kind: &str, keep_time: bool, f: impl FnOnce(&LabState) -> Result<LabState, String>) -> Result<(), String> {
        let proposed = f(&self.lab.borrow().state);
        let result = proposed.and_then(|s| self.lab.borrow_mut().apply(s, keep_time));
        match &result {
            Ok(()) => {
                errors::clear_error(kind);
                self.after_change();
            }
            Err(e) => {
                let prefix = match kind {
                    "preset" => "Preset not loaded: ",
                    "link" => "Link not applied: ",
                    _ => "",
                };
                errors::show_error(kind, &format!("{prefix}{e}. The lab keeps its previous setup."));
                controls::sync(&self.lab.borrow().state);
            }
        }
        result
    }

    fn after_change(&self) {
        controls::sync(&self.lab.borrow().state);
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
        self.update_url();
        self.request_frame();
    }

    pub fn with_lab<R>(&self, f: impl FnOnce(&mut Lab) -> R) -> R {
        let r = f(&mut self.lab.borrow_mut());
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

    /// The link that reproduces what is on screen.
    pub fn share_url(&self) -> String {
        let loc = dom::window().location();
        let base = format!(
            "{}{}{}",
            loc.origin().unwrap_or_default(),
            loc.pathname().unwrap_or_default(),
            loc.search().unwrap_or_default()
        );
        format!("{base}#{}", self.lab.borrow().snapshot().to_fragment())
    }

    /// Keeps the address bar in step with the state (no history entry per change).
    pub fn update_url(&self) {
        let fragment = self.lab.borrow().snapshot().to_fragment();
        let loc = dom::window().location();
        let url = format!(
            "{}{}#{fragment}",
            loc.pathname().unwrap_or_default(),
            loc.search().unwrap_or_default()
        );
        if let Ok(history) = dom::window().history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
        }
        if let Some(a) = dom::by_id::<web_sys::HtmlAnchorElement>("open-full") {
            a.set_href(&format!("{}#{fragment}", loc.pathname().unwrap_or_default()));
        }
    }
}
