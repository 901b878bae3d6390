//! The one object JavaScript sees: `window.kvlab`, a [`LabHandle`] over the running page
//! (egui's `WebHandle` style). Every method that changes the lab builds one
//! `session::command::Command` and hands it to `App::dispatch` (`command()` takes any command
//! as its JSON object). Engine types cross as plain JavaScript objects (js.rs):
//! `report()` is the report of docs/REPORT.md, `missionScore()` the mission score. Also the page's boot: read the
//! URL, build the lab (or the missions hub), wire the events. The measurement and test methods
//! are in test_hooks.rs, compiled only with the `test-hooks` feature.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::engine::Simulation;
use crate::shipped;

use crate::session::command::{Command, DocKind, MissionAction};
use crate::session::dispatch::Session;
use crate::session::lab::Lab;
use crate::session::missions;
use crate::session::presets;
use crate::session::sweep::SweepJob;
use crate::session::url_state::{LabState, PageOptions, QUERY_KEYS};

use super::app::{App, Input};
use super::dom;
use super::events;
use super::export;
use super::js;
use super::messages::Messages;
use super::storage::Stars;
use super::view::View;
use super::{controls, map};

/// The lab as JavaScript drives it (`window.kvlab`). Methods that change the lab validate
/// first: on bad input they show the message on the page, keep the previous state, and throw
/// an `Error` with the same message.
#[wasm_bindgen]
pub struct LabHandle {
    pub(super) app: Rc<App>,
}

fn to_js(e: String) -> JsError {
    JsError::new(&e)
}

impl LabHandle {
    /// Hands `cmd` to the app; a refusal is shown on the page and thrown.
    fn send(&self, cmd: Command) -> Result<(), JsError> {
        self.app.dispatch(cmd, Input::Handle).map(drop).map_err(to_js)
    }
}

/// `value` as a plain JavaScript object (js.rs).
fn object<T: serde::Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    js::to_js(value).map_err(to_js)
}

#[wasm_bindgen]
impl LabHandle {
    /// Replaces the lab's preset with `preset` (`kvlab/preset@1`, its text or the object);
    /// time goes back to 0.
    #[wasm_bindgen(js_name = loadPreset)]
    pub fn load_preset(&self, preset: JsValue) -> Result<(), JsError> {
        // Text comes through as a JSON string, an object as itself: `Command::Load` reads both.
        let preset = js::from_js::<serde_json::Value>(preset).map_err(|e| JsError::new(&format!("preset: {e}")))?;
        self.send(Command::Load { preset })
    }

    /// Loads a shipped preset by id (see `presetIds()`).
    #[wasm_bindgen(js_name = loadPresetId)]
    pub fn load_preset_id(&self, id: &str) -> Result<(), JsError> {
        self.send(Command::Load { preset: id.into() })
    }

    #[wasm_bindgen(js_name = presetIds)]
    pub fn preset_ids(&self) -> Vec<String> {
        presets::ids().into_iter().map(String::from).collect()
    }

    /// Simulates up to `seconds` of simulated time (from 0 when that is earlier) and pauses.
    #[wasm_bindgen(js_name = runTo)]
    pub fn run_to(&self, seconds: f64) -> Result<(), JsError> {
        self.send(Command::Seek { t_s: seconds })?;
        self.app.draw();
        Ok(())
    }

    /// Simulates to the end of the run and pauses.
    #[wasm_bindgen(js_name = runToEnd)]
    pub fn run_to_end(&self) -> Result<(), JsError> {
        self.send(Command::SeekEnd)?;
        self.app.draw();
        Ok(())
    }

    /// The report (an object, the contract of docs/REPORT.md) of the first run at the time
    /// shown; `null` when there is no run.
    pub fn report(&self) -> Result<JsValue, JsError> {
        let lab = self.app.lab();
        object(&lab.runs.first().map(|r| r.report()))
    }

    /// Every run's report, an array (two in compare mode: contiguous, paged).
    pub fn reports(&self) -> Result<JsValue, JsError> {
        let lab = self.app.lab();
        let reports: Vec<_> = lab.runs.iter().map(|r| r.report()).collect();
        object(&reports)
    }

    /// The Sweep panel's points so far, as `kvlab sweep --json` gives them: `{knob, points:
    /// [{value, contiguous, paged}], total, finished, cancelled}`; `null` before any sweep and
    /// after a refused one.
    #[wasm_bindgen(js_name = sweepResults)]
    pub fn sweep_results(&self) -> Result<JsValue, JsError> {
        if !super::full_lab::FULL {
            return Ok(JsValue::NULL); // sweeps run in the full module
        }
        let panel = self.app.panel();
        object(&panel.job.as_ref().map(SweepJob::results_json))
    }

    /// The Sweep panel's smallest-KV search: `{target_ttft_p95_ms, grid: {lo_gib, hi_gib,
    /// step_gib}, contiguous, paged, runs, max_runs, finished, cancelled}`, each allocator's answer
    /// an object with a `status` (`searching`, `cancelled`, `met` with `kv_memory_gib`,
    /// `ttft_p95_ms`, `unfinished` and `misses_at_gib`, `not_met`, `refused`) and its `runs`;
    /// `null` before any search and after a refused one.
    #[wasm_bindgen(js_name = kvSearchResults)]
    pub fn kv_search_results(&self) -> Result<JsValue, JsError> {
        if !super::full_lab::FULL {
            return Ok(JsValue::NULL); // searches run in the full module
        }
        let panel = self.app.panel();
        object(&panel.search.as_ref().map(crate::session::kv_search::results_json))
    }

    /// The whole lab state, an object (what the link carries).
    pub fn state(&self) -> Result<JsValue, JsError> {
        object(&self.app.lab().snapshot())
    }

    /// Replaces the whole lab state: an object as `state()` returns it, or its JSON text.
    #[wasm_bindgen(js_name = setState)]
    pub fn set_state(&self, state: JsValue) -> Result<(), JsError> {
        let json = match state.as_string() {
            Some(text) => text,
            None => js_sys::JSON::stringify(&state).ok().and_then(|s| s.as_string()).unwrap_or_default(),
        };
        self.send(Command::SetState { state: json.into() })
    }

    /// The link that reproduces the lab as it is now.
    #[wasm_bindgen(js_name = shareUrl)]
    pub fn share_url(&self) -> String {
        self.app.share_url()
    }

    /// The `<iframe>` snippet the "Embed" button copies: the lab as it is now, embedded.
    #[wasm_bindgen(js_name = embedSnippet)]
    pub fn embed_snippet(&self) -> String {
        super::export::embed_snippet(&self.app.share_url())
    }

    #[wasm_bindgen(js_name = setCompare)]
    pub fn set_compare(&self, on: bool) -> Result<(), JsError> {
        self.send(Command::Compare { on })
    }

    /// Switches the allocator in use: "contiguous" or "paged" (the other's settings are kept).
    #[wasm_bindgen(js_name = setAllocator)]
    pub fn set_allocator(&self, kind: &str) -> Result<(), JsError> {
        let value = kind.into();
        self.send(Command::Set { path: crate::session::control_edit::ALLOCATOR_KIND_PATH.into(), value })
    }

    /// Sets one preset field by its path, as the settings form does (`scheduler.max_num_seqs`).
    #[wasm_bindgen(js_name = setField)]
    pub fn set_field(&self, path: &str, json_value: &str) -> Result<(), JsError> {
        let value: serde_json::Value = serde_json::from_str(json_value)
            .map_err(|e| JsError::new(&format!("{path}: the value is not JSON ({e}); write 64, \"swap\" or true")))?;
        self.send(Command::Set { path: path.into(), value })
    }

    pub fn play(&self) -> Result<(), JsError> {
        self.send(Command::Play)
    }

    pub fn pause(&self) -> Result<(), JsError> {
        self.send(Command::Pause)
    }

    pub fn step(&self) -> Result<(), JsError> {
        self.send(Command::Step)?;
        self.app.draw();
        Ok(())
    }

    pub fn reset(&self) -> Result<(), JsError> {
        self.send(Command::Seek { t_s: 0.0 })
    }

    /// Undoes the last change of the setup (what Ctrl+Z and the Undo button do).
    pub fn undo(&self) -> Result<(), JsError> {
        self.send(Command::Undo)
    }

    pub fn redo(&self) -> Result<(), JsError> {
        self.send(Command::Redo)
    }

    /// Any command, as its JSON object (`{type: "set", path: "scheduler.max_num_seqs", value:
    /// 64}`: docs/EMBED.md lists them), as a host page posts it.
    pub fn command(&self, command: JsValue) -> Result<(), JsError> {
        // Read as a JSON value first, then as a command: one deserializer of `Command` (the
        // host API's, from `serde_json::Value`) serves both, which keeps the bundle smaller.
        let cmd: Command = js::from_js::<serde_json::Value>(command)
            .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
            .map_err(|e| JsError::new(&format!("not a command: {e}")))?;
        self.send(cmd)
    }

    /// Simulated seconds per real second; 0 runs as fast as the engine goes.
    #[wasm_bindgen(js_name = setSpeed)]
    pub fn set_speed(&self, speed: f64) -> Result<(), JsError> {
        self.send(Command::Speed { speed })
    }

    #[wasm_bindgen(js_name = isPlaying)]
    pub fn is_playing(&self) -> bool {
        self.app.lab().playing
    }

    /// The simulated time shown, in seconds.
    pub fn now(&self) -> f64 {
        self.app.lab().t_us as f64 / 1e6
    }

    /// The series of every run as CSV.
    #[wasm_bindgen(js_name = seriesCsv)]
    pub fn series_csv(&self) -> String {
        export::csv(&self.app)
    }

    /// The memory map(s) as a PNG data URL.
    #[wasm_bindgen(js_name = mapPng)]
    pub fn map_png(&self) -> Result<String, JsError> {
        self.app.draw();
        export::map_png(&self.app).map_err(to_js)
    }

    /// The charts as a PNG data URL.
    #[wasm_bindgen(js_name = chartPng)]
    pub fn chart_png(&self) -> Result<String, JsError> {
        self.app.draw();
        export::chart_png(&self.app).map_err(to_js)
    }

    /// The messages shown on the page (bad input), oldest first.
    pub fn errors(&self) -> Vec<String> {
        self.app.messages.texts()
    }

    /// Simulates `preset_json` from 0 to its end without touching the page: the report object.
    #[wasm_bindgen(js_name = simulatePreset)]
    pub fn simulate_preset(&self, preset_json: &str) -> Result<JsValue, JsError> {
        let config = crate::formats::preset::parse_preset(preset_json).map_err(|e| JsError::new(&e.to_string()))?;
        let mut sim = Simulation::new(config).map_err(|e| JsError::new(&e.to_string()))?;
        object(&sim.run_to_end())
    }

    /// Loads a preset or a mission (told apart by `schema`), as the "Load…" dialog does: a preset
    /// leaves mission mode, a mission starts it.
    pub fn load(&self, json: &str) -> Result<(), JsError> {
        self.send(Command::LoadDocument { text: json.into(), expect: None, source: None })
    }

    /// Starts a mission from its JSON (`kvlab/mission@1`).
    #[wasm_bindgen(js_name = loadMission)]
    pub fn load_mission(&self, json: &str) -> Result<(), JsError> {
        self.send(Command::LoadDocument { text: json.into(), expect: Some(DocKind::Mission), source: None })
    }

    /// Starts a shipped mission by id (see `missionIds()`).
    #[wasm_bindgen(js_name = loadMissionId)]
    pub fn load_mission_id(&self, id: &str) -> Result<(), JsError> {
        self.send(Command::StartMission { id: id.into() })
    }

    /// Shipped mission ids, in hub order.
    #[wasm_bindgen(js_name = missionIds)]
    pub fn mission_ids(&self) -> Vec<String> {
        missions::ids()
    }

    /// The mission's score of the run at the time shown, an object: the engine's `Score` plus
    /// `mission`, `final` (the run reached its end), `solution` and `best` (kept stars); `null`
    /// outside mission mode.
    #[wasm_bindgen(js_name = missionScore)]
    pub fn mission_score(&self) -> Result<JsValue, JsError> {
        let lab = self.app.lab();
        let (Some(status), Some(r)) = (lab.mission_status(), lab.state.mission.as_ref()) else {
            return Ok(JsValue::NULL);
        };
        let mut v = serde_json::to_value(&status.score).unwrap_or_default();
        v["mission"] = r.id.clone().into();
        v["final"] = status.at_end.into();
        v["solution"] = r.solution.into();
        v["best"] = self.app.stars.with(|k| k.stars(&r.id)).into();
        object(&v)
    }

    /// The mission panel's buttons: `showSolution()`, `revealHint()`, `restartMission()`,
    /// `exitMission()`.
    #[wasm_bindgen(js_name = showSolution)]
    pub fn show_solution(&self) -> Result<(), JsError> {
        self.send(Command::Mission { action: MissionAction::Solution })
    }

    #[wasm_bindgen(js_name = revealHint)]
    pub fn reveal_hint(&self) -> Result<(), JsError> {
        self.send(Command::Mission { action: MissionAction::Hint })
    }

    #[wasm_bindgen(js_name = restartMission)]
    pub fn restart_mission(&self) -> Result<(), JsError> {
        self.send(Command::Mission { action: MissionAction::Restart })
    }

    #[wasm_bindgen(js_name = exitMission)]
    pub fn exit_mission(&self) -> Result<(), JsError> {
        self.send(Command::Mission { action: MissionAction::Exit })
    }

    /// The stars kept in this browser, an object: `{"m1-paging": 3, …}`.
    pub fn stars(&self) -> Result<JsValue, JsError> {
        let record: std::collections::BTreeMap<String, u8> =
            self.app.stars.with(|k| k.record().iter().map(|(id, s)| (id.to_string(), s)).collect());
        object(&record)
    }

    /// Loads a trace file's text as the Load dialog does (`name` for its messages): replayed in
    /// the lab when small enough, in the long-run worker otherwise.
    #[cfg(feature = "panels")]
    #[wasm_bindgen(js_name = loadTrace)]
    pub fn load_trace(&self, name: &str, text: String) {
        super::file_drop::load_trace(&self.app, name, text, super::file_drop::Place::Drop);
    }

    /// Which module runs the page: `"full"`, or `"first-view"` (www/boot.js loads the full one
    /// when something needs it: docs/LAB.md, "Two modules").
    pub fn module(&self) -> String {
        if super::full_lab::FULL { "full" } else { "first-view" }.to_string()
    }

    /// Shipped step-time calibrations (the selector's choices besides the default model).
    pub fn calibrations(&self) -> Vec<String> {
        shipped::names(shipped::CALIBRATIONS).into_iter().map(String::from).collect()
    }
}

/// Reads the page options from `location.search`.
fn page_options() -> PageOptions {
    let search = dom::window().location().search().unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let get = |k: &str| params.as_ref().and_then(|p| p.get(k));
    let pairs: Vec<(String, String)> = QUERY_KEYS.iter().filter_map(|k| get(k).map(|v| (k.to_string(), v))).collect();
    PageOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// The state the URL asks for, with the messages for whatever in it could not be used, and
/// whether it came from the fragment (which wins over the query's starting points).
fn initial_state(options: &PageOptions) -> (LabState, Vec<(String, String)>, bool) {
    let mut problems = Vec::new();
    let default = || LabState::new(presets::dto(presets::DEFAULT_ID).expect("the default preset parses"));
    let mut state = match options.preset.as_deref().map(presets::dto) {
        Some(Ok(dto)) => LabState::new(dto),
        Some(Err(e)) => {
            problems.push(("link".to_string(), format!("Link not applied: {e}. Showing {}.", presets::DEFAULT_ID)));
            default()
        }
        None => default(),
    };
    // `?mission=` starts the full module (www/boot.js): the first view's has no missions.
    #[cfg(feature = "panels")]
    if let Some(id) = options.mission.as_deref() {
        match missions::shipped(id) {
            Ok(m) => {
                state = LabState::new(m.preset().clone());
                state.mission = Some(missions::reference(&m));
            }
            Err(e) => {
                problems.push(("link".to_string(), format!("Link not applied: {e}. Showing {}.", state.preset.id)))
            }
        }
    }
    let hash = dom::window().location().hash().unwrap_or_default();
    let mut from_fragment = false;
    match LabState::from_fragment(&hash) {
        Ok(Some(s)) => {
            state = s;
            from_fragment = true;
        }
        Ok(None) => {}
        Err(e) => problems.push(("link".to_string(), format!("{e}. Showing {} instead.", state.preset.id))),
    }
    if !from_fragment {
        if let Some(on) = options.compare {
            state.compare = on;
        }
        if options.t_s.is_some() {
            state.t_s = options.t_s;
        }
    }
    (state, problems, from_fragment)
}

/// Builds the lab in the page (when the page has one) and publishes `window.kvlab`; the lab
/// (or the hub) owns `messages` from then on.
pub fn boot(messages: &Messages) -> Result<(), String> {
    let options = page_options();
    if options.hub && dom::by_id::<web_sys::Element>("hub").is_some() {
        // The hub is the full module's (www/boot.js starts it for `?hub=1`).
        #[cfg(feature = "panels")]
        return super::hub::boot(messages);
    }
    if dom::by_id::<web_sys::Element>("kvlab").is_none() {
        return Ok(()); // not the lab page (e.g. a test harness)
    }
    let mut options = options;
    options.reduced_motion = dom::prefers_reduced_motion();
    let (state, mut problems, from_fragment) = initial_state(&options);
    let linked = from_fragment.then(|| state.source.clone()).flatten();
    #[cfg(not(feature = "panels"))]
    let _ = (linked, &problems);
    let lab = match Lab::new(state.clone(), options.clone()) {
        Ok(lab) => lab,
        Err(e) => {
            problems.push(("link".to_string(), format!("Link not applied: {e}. Showing {}.", presets::DEFAULT_ID)));
            let fallback = LabState::new(presets::dto(presets::DEFAULT_ID)?);
            Lab::new(fallback, options.clone())?
        }
    };
    // The lab opens paused (the first step tells the reader to press Play); `autoplay=1` plays.
    let autoplay = options.autoplay == Some(true) && !options.reduced_motion && lab.t_us == 0 && !options.bench;
    let stars = Stars::open();
    let view = View::new(stars.clone())?;
    let app = App::new(Session::new(lab), view, stars, messages.clone());
    controls::fill_options(crate::session::lab::SPEEDS, app.lab().speed);
    app.sync_controls();
    map::paint_swatches();
    events::wire(&app);
    super::loader::wire_dialog(&app);
    super::file_drop::wire(&app, |a, text| {
        a.dispatch(Command::LoadDocument { text: text.into(), expect: None, source: None }, Input::Inline).map(drop)
    });
    super::day_run::wire(&app);
    #[cfg(feature = "kernel-clock")]
    app.follow_clock();
    // The first module reads a link without naming a wrong field's path, and no catalogue model
    // (formats::json, formats::model_catalogue): the full module reads such a link again.
    let reread_link = !super::full_lab::FULL && problems.iter().any(|(kind, _)| kind == "link") && {
        let hash = dom::window().location().hash().unwrap_or_default();
        LabState::fragment_json(&hash).ok().flatten().is_some_and(|json| {
            let cmd = Command::SetState { state: json.into() };
            cmd.needs_panels() || cmd.misreads_without_a_field()
        })
    };
    if reread_link {
        super::full_lab::hand_over(super::full_lab::Handover::Link);
    }
    for (kind, text) in problems {
        app.messages.error(&kind, &text);
    }
    app.stars.show_notices(&app.messages);
    app.update_hub_link();
    // A linked file is fetched on every load, so the link never shows a stale copy: the state
    // in the fragment is kept only while the file is the one it was made from.
    // So do `?preset_url=` and `?mission_url=` (documents are the full module's).
    #[cfg(feature = "panels")]
    if let Some(url) = &options.mission_url {
        super::loader::load_from_url(&app, DocKind::Mission, url, linked);
    } else if let Some(url) = &options.preset_url {
        super::loader::load_from_url(&app, DocKind::Preset, url, linked);
    }
    if autoplay {
        let _ = app.dispatch(Command::Play, Input::Page);
    }
    let tour_app = app.clone();
    let back_app = app.clone();
    super::onboarding::wire(
        &app.lab(),
        move |t_s| {
            let was = tour_app.lab().t_us;
            let early = was < crate::session::lab::secs_to_us(t_s);
            if early {
                let _ = tour_app.dispatch(Command::Seek { t_s }, Input::Page);
            }
            early.then_some(was as f64 / 1e6)
        },
        // Back where the tour found the lab, unless the learner moved the time meanwhile.
        move |t_s| {
            let shown = crate::session::lab::secs_to_us(crate::session::tour::SHOWN_AT_S);
            let lab = back_app.lab();
            let untouched = lab.t_us == shown && !lab.playing;
            drop(lab);
            if untouched {
                let _ = back_app.dispatch(Command::Seek { t_s }, Input::Page);
            }
        },
    );
    // A link handed over stays in the address bar for the full module to read.
    if !reread_link {
        app.update_url();
    }
    app.draw();
    app.request_frame();
    let handle = LabHandle { app: app.clone() };
    js_sys::Reflect::set(&dom::window(), &JsValue::from_str("kvlab"), &JsValue::from(handle))
        .map_err(|_| "could not publish window.kvlab".to_string())?;
    app.ready_ms.set(dom::now_ms());
    if let Some(root) = dom::by_id::<web_sys::Element>("kvlab") {
        let _ = root.set_attribute("data-ready", "true");
    }
    if let Ok(ev) = web_sys::Event::new("kvlab-ready") {
        let _ = dom::window().dispatch_event(&ev);
    }
    super::host::wire(&app, &options.origins);
    Ok(())
}
