//! The clock: how long a scheduler step takes, in simulated microseconds. One contract,
//! `StepClock` (the time of a step's work, the floor an empty step takes, the paged-read overhead
//! it charges, what the report says of it), enum-dispatched as `Scheduler` is so that
//! `Simulation` stays `Clone`; the simulation knows nothing else of it.
//!
//! - `Roofline` (`roofline.rs`): datasheet figures, efficiencies fitted per GPU (`constants.rs`)
//!   and, where a preset names one, a measured calibration (`calibration.rs`).
//! - `KernelClock` (`kernels/`): GPU kernel times measured with vLLM's kernels, read from tables
//!   the layers above hand in (`SimConfig::kernels`), with the host's share fitted per GPU.
//! - `Ticks` (`ticks.rs`): a fixed cost per step and per token, for replays counted in steps and
//!   tests checked by hand.
//!
//! `work.rs` is what every clock prices: a step's decodes and prefill chunks, kept apart.

pub mod calibration;
pub mod constants;
pub mod kernels;
pub mod roofline;
pub mod ticks;
pub mod work;

pub use calibration::{default_paged_overhead, OverheadPoint, StepTimeCalibration, DEFAULT_FIXED_STEP_US};
pub use constants::{
    clock_for, kernel_measured_runs, measured_gpus, measured_runs, sibling_of, ClockConstants, ClockSource,
};
pub use kernels::{KernelClock, KernelTables};
pub use roofline::{CudaGraphs, ModelShape, Roofline, RooflineInput};
pub use ticks::Ticks;
pub use work::StepWork;

use super::metrics::ClockReport;

/// A step-time model.
#[derive(Clone, Debug, PartialEq)]
pub enum StepClock {
    Roofline(Roofline),
    #[cfg(feature = "kernel-clock")]
    Kernels(Box<KernelClock>),
    Ticks(Ticks),
}

impl StepClock {
    /// Every step lasts one tick (1 µs), whatever it does (`kvlab replay`).
    pub fn one_tick_per_step() -> Self {
        StepClock::fixed_and_per_token(1.0, 0.0)
    }

    /// A fixed cost per step plus a cost per scheduled token, µs.
    pub fn fixed_and_per_token(fixed_step_us: f64, us_per_token: f64) -> Self {
        StepClock::Ticks(Ticks { fixed_step_us, us_per_token })
    }

    /// The duration of a step doing `work`, in whole microseconds (at least 1).
    pub fn step_us(&self, work: &StepWork) -> u64 {
        match self {
            StepClock::Roofline(r) => r.step_us(work),
            #[cfg(feature = "kernel-clock")]
            StepClock::Kernels(k) => k.step_us(work),
            StepClock::Ticks(t) => t.step_us(work),
        }
    }

    /// The shortest step: one with no work (the engine's idle wait and its bound on steps).
    pub fn floor_us(&self) -> u64 {
        self.step_us(&StepWork::default()).max(1)
    }

    /// The overhead paged KV reads pay against contiguous memory (0 for contiguous, and for a
    /// clock that does not read memory).
    pub fn paged_overhead(&self) -> f64 {
        match self {
            StepClock::Roofline(r) => r.paged_overhead(),
            // The kernels were measured on vLLM's paged KV.
            #[cfg(feature = "kernel-clock")]
            StepClock::Kernels(_) => 0.0,
            StepClock::Ticks(_) => 0.0,
        }
    }

    /// What the report says of the clock on `gpu_name`.
    pub fn report(&self, gpu_name: &str) -> ClockReport {
        match self {
            StepClock::Roofline(r) => r.source().report(gpu_name),
            #[cfg(feature = "kernel-clock")]
            StepClock::Kernels(k) => {
                let checked = constants::kernel_measured_runs(&k.tables().gpu);
                let mut line = format!("step times from {}", k.tables().describe());
                if let Some((runs, err)) = checked {
                    line += &format!(
                        ", checked against {runs} real vLLM run{} on the {gpu_name} (median error {err:.1}%, each run predicted without it)",
                        if runs == 1 { "" } else { "s" }
                    );
                }
                ClockReport {
                    measured_runs: checked.map_or(0, |(runs, _)| runs),
                    median_abs_error_pct: checked.map(|(_, err)| err),
                    extrapolated_from: None,
                    line,
                }
            }
            StepClock::Ticks(t) => ClockReport {
                measured_runs: 0,
                median_abs_error_pct: None,
                extrapolated_from: None,
                line: t.describe(),
            },
        }
    }
}
