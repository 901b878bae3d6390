//! The browser lab (wasm32 only): one page that draws the engine's simulation. Thin on
//! purpose: it holds no simulation logic, only calls the engine, and keeps the learner's
//! setup as a `PresetDto` inside a [`url_state::LabState`].
//!
//! - [`handle`]: `window.kvlab`, the one `#[wasm_bindgen]` handle, and the page's boot
//! - [`app`]: the lab + view + animation-frame loop shared by handlers
//! - [`lab`]: runs, time and playback (no DOM)
//! - [`view`], [`map`], [`chart`], [`metrics`]: drawing (the map's pixels come from
//!   `crate::render`, which native tests check too)
//! - [`controls`], [`events`]: the settings form and every listener; [`control_edit`]: how a
//!   control's path reads and edits the lab state (no DOM)
//! - [`url_state`]: the state in the URL; [`presets`]: the shipped presets
//! - [`missions`], [`mission_view`], [`knobs`]: mission mode (the shipped missions, the panel,
//!   knob chips that jump to their control);
//!   [`hub`]: the missions page; [`storage`]: stars in localStorage (the engine's `StarStore`)
//! - [`loader`]: presets and missions from a file, pasted JSON or the link; [`file_drop`]: a
//!   file dropped on the lab or opened in the dialog, read with a progress bar;
//!   [`trace_file`]: a file that is a trace made into a preset (no DOM)
//! - [`day_run`]: long runs in a Web Worker (progress, Cancel, results); [`worker`]: the
//!   worker's side (`www/worker.js` drives its `DayRun`)
//! - [`host`]: `postMessage` events and commands between an embedded lab and its host page
//! - [`fleet_view`]: a fleet's replicas as small multiples, the router's line (the full lab only)
//! - [`host_tier`]: the host-memory KV tier's band under each map and its inspector text (the
//!   full lab only)
//! - [`menu`]: the Export menu button (keyboard, Escape, a click elsewhere)
//! - [`js`]: values handed to JavaScript as plain objects (serde_json and `JSON.parse`)
//! - [`messages`]: the page's messages (bad input, notices), state `App` or the hub owns;
//!   [`errors`]: the panic report; [`export`]
//! - `test_hooks` and `bench` (feature `test-hooks` only, never in the release bundle): the
//!   handle's `testPanic`, `benchFrames`, `benchSimulate` and `readyMs`
//! - [`theme`]: light or dark, as the stylesheet decided, for the canvases
//! - [`title`]: the preset's title in the header and the preset picker
//! - [`sweep`], [`kv_search`] (no DOM) and [`sweep_view`]: the Sweep panel's sweep, its
//!   smallest-KV search, and the panel

pub mod app;
#[cfg(feature = "test-hooks")]
pub mod bench;
pub mod chart;
pub mod controls;
pub mod day_run;
pub mod dom;
pub mod errors;
pub mod events;
pub mod export;
pub mod file_drop;
#[cfg(feature = "panels")]
pub mod fleet_view;
pub mod full_lab;
pub mod handle;
pub mod host;
pub mod host_tier;
pub mod hub;
pub mod js;
pub mod json_editor;
#[cfg(feature = "kernel-clock")]
pub mod kernel_clock;
pub mod knobs;
pub mod loader;
pub mod map;
pub mod menu;
pub mod messages;
pub mod metrics;
pub mod mission_view;
pub mod onboarding;
pub mod storage;
pub mod sweep_view;
#[cfg(feature = "test-hooks")]
pub mod test_hooks;
pub mod theme;
pub mod title;
pub mod view;
#[cfg(feature = "panels")]
pub mod worker;

pub use handle::LabHandle;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Runs when the module loads: installs the panic hook and builds the lab if the page has one.
#[wasm_bindgen(start)]
pub fn start() {
    // In the long-run worker (www/worker.js) there is no page to build, nor one to show a
    // panic on: the console gets it, and the worker's error event tells the page.
    if js_sys::global().dyn_into::<web_sys::Window>().is_err() {
        console_error_panic_hook::set_once();
        return;
    }
    errors::install_panic_hook();
    let messages = messages::Messages::open();
    if let Err(e) = handle::boot(&messages) {
        messages.error("boot", &format!("The lab could not start: {e}"));
        web_sys::console::error_1(&e.into());
    }
}
