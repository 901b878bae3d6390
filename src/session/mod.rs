//! The lab's state machine, apart from any page: what the learner set up, the runs simulating
//! it, time and playback, the state in a link, control edits, sweeps and the smallest-KV search,
//! mission play and scoring, and the shipped presets. It compiles natively and to wasm32; the
//! page (`web`) holds only the DOM, canvases and storage around it, and native tests drive it
//! in milliseconds.
//!
//! - [`command`]: every change a user, the JS handle or a host page can make, as one
//!   serde-tagged [`command::Command`], and [`command::Session`], the one dispatcher that
//!   validates, applies or refuses it, keeps undo history, and says what the page must redraw
//! - [`lab`]: time and playback; [`run`]: one run (one replica, or a fleet: [`fleet_run`]); [`url_state`]: the state in the URL
//! - [`control_edit`]: how a control's path reads and edits the lab state
//! - [`pending`]: values the lab refused, held in their controls and never taken for the run;
//!   [`advice`]: a refusal's fixes within a mission's locks
//! - [`sweep`], [`kv_search`]: the Sweep panel's sweep and smallest-KV search, stepped a
//!   frame's budget at a time
//! - [`missions`], [`presets`]: the shipped missions and presets by id
//! - [`trace_file`]: a file that is a trace made into a preset
//! - [`kernel_clock`]: a run on measured kernels, whose tables the page fetches
//! - [`tour`]: the newcomer's four-step tour of the page

pub mod advice;
pub mod command;
pub mod control_edit;
pub mod dispatch;
#[cfg(feature = "fleet")]
pub mod fleet_run;
pub mod history;
pub mod kernel_clock;
pub mod kv_search;
pub mod lab;
pub mod loader;
pub mod missions;
pub mod pending;
pub mod presets;
pub mod run;
pub mod sweep;
pub mod title;
pub mod tour;
pub mod trace_file;
pub mod url_state;
