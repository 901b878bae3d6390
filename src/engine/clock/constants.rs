//! The step-time model's constants per GPU, and where each GPU's come from: fitted to real vLLM
//! runs on that GPU (`kvlab validate --fit --write`, docs/FIDELITY.md), or carried over from a
//! measured GPU of the same family when no run on it has been published. The fitted figures are
//! data, `assets/clock/constants.json`, which `build.rs` turns into the tables read here.
//!
//! The constants are efficiencies against the GPU catalogue's datasheet figures plus the costs a
//! vLLM step pays outside the GPU's arithmetic (the scheduler, input preparation and sampling,
//! per step and per scheduled sequence). `roofline::Roofline` combines them with the model's
//! shape; nothing here knows a model.

use crate::engine::version::EngineVersion;

/// What a GPU's step times rest on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockConstants {
    /// Share of the datasheet memory bandwidth that weight and KV reads reach.
    pub bandwidth_efficiency: f64,
    /// Share of the dense tensor peak that the linear layers' matrix products reach on large
    /// batches (it ramps up with the step's tokens: `gemm_ramp_tokens`).
    pub gemm_efficiency: f64,
    /// Tokens at which the matrix products reach half of `gemm_efficiency`'s throughput.
    pub gemm_ramp_tokens: f64,
    /// Share of the dense tensor peak that prefill attention reaches (FlashAttention).
    pub attention_efficiency: f64,
    /// Fixed cost of a step outside the GPU's arithmetic (scheduling, launches, the output
    /// round trip), µs.
    pub fixed_step_us: f64,
    /// Cost per scheduled sequence (input preparation, sampling, output processing), µs.
    pub per_seq_us: f64,
    /// Cost per prefill chunk scheduled, on top of its sequence's: vLLM's v0 engine builds each
    /// prompt's inputs in Python before its step runs, µs. The kernel clock's host costs only
    /// (the roofline's constants are the v1 engine's, which has none).
    pub per_prefill_us: f64,
    /// Kernel launches one decoder layer costs when it runs without CUDA graphs (enforce_eager,
    /// or batches above the largest captured size), µs.
    pub eager_launch_us_per_layer: f64,
}

/// How much a GPU's clock has been checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClockSource {
    /// Fitted to (or checked on) real vLLM runs on this GPU: how many, and the median absolute
    /// error over their latency and throughput figures, each run predicted without it (`kvlab
    /// validate --cross`), percent.
    Measured { runs: u32, median_abs_error_pct: f64 },
    /// No constants of its own (no run to fit them on), but real runs on this GPU predicted with
    /// the sibling's constants: how many, and their median absolute error, percent.
    Borrowed { from: &'static str, runs: u32, median_abs_error_pct: f64 },
    /// No published run on this GPU: the constants of a measured GPU of the same family.
    Extrapolated { from: &'static str },
}

/// The measured constants, as `build.rs` reads them from `assets/clock/constants.json`: the
/// roofline's per GPU, the kernel clock's host costs, and each GPU's held-out error.
mod data {
    include!(concat!(env!("OUT_DIR"), "/clock_constants.rs"));
}

/// The constants of a GPU the clock has runs for. Fitted by `kvlab validate --fit --write
/// assets/clock/constants.json` on the runs docs/FIDELITY.md marks "fit" (the held-out ones are
/// never fitted on; the file says what each GPU's were); see there for the errors these give.
fn measured(gpu_id: &str) -> Option<ClockConstants> {
    let [bw, gemm, fixed, per_seq] = data::roofline(gpu_id)?;
    Some(ClockConstants {
        bandwidth_efficiency: bw,
        gemm_efficiency: gemm,
        gemm_ramp_tokens: GEMM_RAMP_TOKENS,
        attention_efficiency: ATTENTION_EFFICIENCY,
        fixed_step_us: fixed,
        per_seq_us: per_seq,
        per_prefill_us: 0.0,
        eager_launch_us_per_layer: EAGER_LAUNCH_US_PER_LAYER,
    })
}

/// Priors no published run pins down (the fit leaves them): FlashAttention-2/3 reach 35–50% of
/// peak on long prefills; a decoder layer launches about a dozen kernels of ~4 µs each; GEMMs
/// reach half their large-batch throughput around 64 tokens.
const ATTENTION_EFFICIENCY: f64 = 0.4;
const EAGER_LAUNCH_US_PER_LAYER: f64 = 40.0;
const GEMM_RAMP_TOKENS: f64 = 64.0;

/// The host's share of a step under the kernel clock, whose kernels carry the GPU's own time:
/// the fixed cost of a step outside the GPU (scheduling, input preparation, the output round
/// trip), the cost per scheduled sequence and, on vLLM's v0 engine, per prompt, fitted by `kvlab
/// validate --fit --clock kernels` per GPU and engine generation. The roofline's other constants
/// stay the GPU's (a model the kernels cannot price runs on them).
///
/// The v1 engine's (vLLM 0.8 on) are fitted on the vLLM blog's batch-1 decodes and, on the H100
/// and the H200, one sweep of closed loops (Llama-3.1-70B in FP8 at TP 4, 1,024 tokens in and
/// out, 4 to 64 clients; `scripts/validation-aiconfigurator.py`'s `role_of`). The v0 engine's (vLLM 0.5/0.6,
/// Lambda's runs) are fitted on each GPU's 8B model at TP 1, 10 to 320 prompts at once: its
/// Python scheduler and input preparation cost milliseconds a prompt. Every other run checks
/// them (docs/FIDELITY.md). They are the host machine's as much as the GPU's: a GPU without runs
/// of the generation takes its sibling's (the H100 machines'), else the v1 prior.
pub fn kernel_host_for(gpu_id: &str, engine: EngineVersion) -> ClockConstants {
    let fitted = |gpu: &str| data::kernel_host(gpu, engine.name());
    let [fixed_step_us, per_seq_us, per_prefill_us] =
        fitted(gpu_id).or_else(|| fitted(sibling_of(gpu_id))).unwrap_or(match engine {
            EngineVersion::V1 => V1_HOST_PRIOR,
            EngineVersion::V0 => fitted("h100-sxm").unwrap_or(V1_HOST_PRIOR),
        });
    ClockConstants { fixed_step_us, per_seq_us, per_prefill_us, ..clock_for(gpu_id).0 }
}

/// The v1 engine's host costs where no run fits them (µs a step, a sequence, a prompt), and
/// where every leave-one-out fit of them starts (`formats::cross_validation`).
pub const V1_HOST_PRIOR: [f64; 3] = [250.0, 4.0, 0.0];

/// The measured GPU whose constants a GPU without runs takes: the same architecture where one
/// is measured, else the nearest in memory bandwidth class.
pub fn sibling_of(gpu_id: &str) -> &'static str {
    match gpu_id {
        // Hopper and its derivatives.
        "h100-pcie" | "h100-nvl" | "h200" | "h20" | "gh200" => "h100-sxm",
        // Ada Lovelace and Ampere's workstation/inference parts (GDDR, PCIe).
        "l4" | "l40s" | "a10g" => "rtx-4090",
        // Blackwell workstation parts.
        "rtx-5090" => "rtx-pro-6000",
        // Data-centre Ampere and CDNA3 (HBM, NVLink / Infinity Fabric), and custom GPUs.
        _ => "h100-sxm",
    }
}

/// The constants the clock uses on `gpu_id`, and where they come from.
pub fn clock_for(gpu_id: &str) -> (ClockConstants, ClockSource) {
    if let Some(c) = measured(gpu_id) {
        let (runs, err) = measured_runs(gpu_id);
        return (c, ClockSource::Measured { runs, median_abs_error_pct: err });
    }
    let from = sibling_of(gpu_id);
    let source = match measured_runs(gpu_id) {
        (0, _) => ClockSource::Extrapolated { from },
        (runs, median_abs_error_pct) => ClockSource::Borrowed { from, runs, median_abs_error_pct },
    };
    (measured(from).expect("a sibling is measured"), source)
}

/// Runs `kvlab validate` replays on each GPU and their held-out median absolute error (percent,
/// over every figure, each run predicted with constants fitted without it: `kvlab validate
/// --cross`; on a GPU without constants of its own, with its sibling's), as docs/FIDELITY.md
/// lists them; `tests/clock_cross.rs` checks these against a fresh leave-one-out.
pub fn measured_runs(gpu_id: &str) -> (u32, f64) {
    data::held_out_roofline(gpu_id).unwrap_or((0, 0.0))
}

/// Runs on each GPU the kernel clock prices and its held-out median absolute error (percent,
/// over every figure, each run predicted with host costs fitted without it: `kvlab validate
/// --cross --clock kernels`), as docs/FIDELITY.md lists them; `tests/clock_cross.rs` checks these
/// against a fresh leave-one-out. None on a GPU with kernel tables but no real run (the L40S).
pub fn kernel_measured_runs(gpu_id: &str) -> Option<(u32, f64)> {
    data::held_out_kernels(gpu_id)
}

/// The GPUs that have measured constants.
pub fn measured_gpus() -> impl Iterator<Item = &'static str> {
    data::ROOFLINE_GPUS.iter().copied()
}

impl ClockSource {
    /// The line the page shows beside the latencies.
    pub fn describe(&self, gpu_name: &str) -> String {
        match *self {
            ClockSource::Measured { runs, median_abs_error_pct } => format!(
                "step times checked against {runs} real vLLM run{} on the {gpu_name} (median error {median_abs_error_pct:.1}%, each run predicted without it)",
                if runs == 1 { "" } else { "s" }
            ),
            ClockSource::Borrowed { from, runs, median_abs_error_pct } => format!(
                "step times on the {}'s constants, checked against {runs} real vLLM run{} on the {gpu_name} (median error {median_abs_error_pct:.1}%, each run predicted without it)",
                gpu_name_of(from),
                if runs == 1 { "" } else { "s" }
            ),
            ClockSource::Extrapolated { from } => {
                format!("no measured run on the {gpu_name}: step times extrapolated from the {}", gpu_name_of(from))
            }
        }
    }
}

impl ClockSource {
    /// The report's account of it.
    pub fn report(&self, gpu_name: &str) -> crate::engine::metrics::ClockReport {
        let line = self.describe(gpu_name);
        match *self {
            ClockSource::Measured { runs, median_abs_error_pct } => crate::engine::metrics::ClockReport {
                measured_runs: runs,
                median_abs_error_pct: Some(median_abs_error_pct),
                extrapolated_from: None,
                line,
            },
            ClockSource::Borrowed { from, runs, median_abs_error_pct } => crate::engine::metrics::ClockReport {
                measured_runs: runs,
                median_abs_error_pct: Some(median_abs_error_pct),
                extrapolated_from: Some(gpu_name_of(from)),
                line,
            },
            ClockSource::Extrapolated { from } => crate::engine::metrics::ClockReport {
                measured_runs: 0,
                median_abs_error_pct: None,
                extrapolated_from: Some(gpu_name_of(from)),
                line,
            },
        }
    }
}

/// A GPU's name as the catalogue writes it (its id if it has none).
fn gpu_name_of(id: &str) -> String {
    crate::engine::gpus::gpu_preset(id).map_or_else(|| id.to_string(), |g| g.name)
}
