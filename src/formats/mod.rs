//! File formats at the edge: JSON in and out of the pure engine. Every document kvlab reads is
//! told apart here ([`sniff`]) and read into a serde DTO whose errors name the field; nothing
//! below this layer knows JSON.
//!
//! - [`sniff`]: every `schema` id and which kind a document is
//! - [`json`]: JSON text → DTO with the failing field's path
//! - [`paths`]: preset paths (`workload.classes[0].n`): their kinds, parsing, coverage, get/set,
//!   merging and diffing; the one implementation missions, the CLI and the page share
//! - [`preset`]: the DTOs of `kvlab/preset@1` and parsing (defaults from `SimConfig::default`);
//!   [`preset_config`]: DTO ⇄ engine types, `PresetDto::to_config`
//! - [`calibration`]: `kvlab/calibration@1` files and the shipped calibrations
//! - [`mission`]: `kvlab/mission@1` and the mission index
//! - [`report`]: the report as JSON (docs/REPORT.md) and the run digest
//! - [`sweep`]: a sweep's knob (a preset path), its values and the configurations of both
//!   allocators at every point; the KV grid of the smallest-KV search
//! - [`trace`]: production request traces by format (Azure, BurstGPT, Mooncake, Qwen-Bailian,
//!   vLLM timed, Vidur, SplitwiseSim, BLIS, kvlab) into trace rows, with windows and sampling
//! - [`trace_fit`]: a trace's traffic fitted as a preset workload (rates per interval, log-normal
//!   lengths, shared-prefix classes from hash ids), for `kvlab fit` and the shipped trace presets
//! - [`validation`]: the real vLLM runs `kvlab validate` replays (their lists, per-request
//!   files and published figures) as configurations beside what they measured
//! - [`cross_validation`]: `kvlab validate --cross`, every run predicted with constants fitted
//!   without it (leave-one-out), per run, per GPU and per figure family
//! - [`step_trace`]: step-indexed trace CSV and the replay JSON `kvlab replay` and the vLLM
//!   reference harness both write (docs/VLLM_PARITY.md)

pub mod calibration;
pub mod cross_validation;
pub mod hf_config;
pub mod hf_quant;
pub mod json;
pub mod kernel_tables;
pub mod mission;
pub mod model_catalogue;
pub mod paths;
pub mod preset;
pub mod preset_config;
pub mod report;
pub mod sniff;
pub mod step_trace;
pub mod sweep;
pub mod sweep_results;
pub mod trace;
pub mod trace_fit;
pub mod validation;
