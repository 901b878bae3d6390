//! kvlab: a lab for how LLM servers spend GPU memory on the KV cache.
//!
//! [`engine`] is the pure, deterministic simulation (contiguous and paged allocators, the
//! scheduler, the step-time model, metrics). The native CLI lives in [`cli`]; the browser lab
//! (wasm32 only) in `web`.

pub mod engine;

#[cfg(not(target_arch = "wasm32"))]
pub mod calibrate;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;

pub mod render;

#[cfg(target_arch = "wasm32")]
pub mod web;
