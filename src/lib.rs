//! kvlab: a lab for how LLM servers spend GPU memory on the KV cache.
//!
//! The crate is layered; each layer uses only the layers above it in this list (ARCHITECTURE.md
//! states the order and `tests/tidy.rs` enforces it):
//!
//! 1. [`engine`]: the pure, deterministic simulation (no JSON, files, storage, clock or web)
//! 2. [`shipped`]: the presets, missions and calibrations compiled in, as text
//! 3. [`formats`]: the file formats at the edge (presets, missions, calibrations, the report)
//! 4. [`missions`]: patches, scoring, the shipped missions, stars
//! 5. `calibrate` (native: real block pools), [`render`] (pixels and CSV) and [`session`] (the lab's
//!    state machine, page or not)
//! 6. `cli` (native) and `web` (wasm32): the two shells

pub mod engine;
pub mod formats;
pub mod missions;
pub mod shipped;

#[cfg(not(target_arch = "wasm32"))]
pub mod calibrate;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;

pub mod render;
pub mod session;

#[cfg(target_arch = "wasm32")]
pub mod web;
