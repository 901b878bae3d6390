//! A measured calibration's step-time constants (`kvlab/calibration@1`, read by
//! `formats::calibration`): the bandwidth efficiency, the fixed step cost and the paged-read
//! overhead by block size that replace the roofline's own where a preset names one.

use serde::{Deserialize, Serialize};

use crate::engine::model::gpu_preset;

/// The fixed step cost a calibration file states when its measurement (a gather of KV blocks)
/// cannot see one, µs.
pub const DEFAULT_FIXED_STEP_US: f64 = 300.0;
/// Default paged overhead = BASE + PER_BLOCK / block_size: 0.20 at 16, 1.42 at 1, 0.125 at 256.
pub const DEFAULT_PAGED_OVERHEAD_BASE: f64 = 0.12;
pub const DEFAULT_PAGED_OVERHEAD_PER_BLOCK: f64 = 1.3;

/// Measured step-time constants that replace the defaults (read from a `kvlab/calibration@1`
/// file by `formats::calibration`).
#[derive(Clone, Debug, PartialEq)]
pub struct StepTimeCalibration {
    /// The calibration's name, as reports show it.
    pub name: String,
    /// The device and the date it was measured on (for people; the model does not read them).
    pub device: String,
    pub date: String,
    /// Effective fraction of the GPU's nominal bandwidth that KV and weight reads reach.
    pub bandwidth_efficiency: f64,
    /// Fixed cost of one step (launches, scheduling), microseconds.
    pub fixed_step_us: f64,
    /// The lab's GPU preset of the measured device, when it has one: memory is read at that
    /// GPU's bandwidth × `bandwidth_efficiency`.
    pub gpu: Option<String>,
    /// Paged-read overhead relative to contiguous, by block size (sorted by block size).
    pub paged_overhead: Vec<OverheadPoint>,
}

/// Paged-read overhead measured at one block size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverheadPoint {
    pub block_size: u32,
    pub overhead: f64,
}

impl StepTimeCalibration {
    /// One line for people: the name, where and when it was measured and, when it was measured on
    /// another GPU than the preset's, that its bandwidth comes with it.
    pub fn describe(&self, preset_gpu: &str) -> String {
        let mut s = format!("{}, measured on {} ({})", self.name, self.device, self.date);
        if let Some((g, spec)) =
            self.gpu.as_deref().filter(|g| *g != preset_gpu).and_then(|g| Some((g, gpu_preset(g)?)))
        {
            s += &format!(
                "; memory reads use the {g}'s {:.0} GB/s × {:.3}, not the {preset_gpu}'s bandwidth",
                spec.mem_bandwidth_gb_s, self.bandwidth_efficiency
            );
        }
        s
    }

    /// Overhead at `block_size`, interpolated on log2(block size) between measured points.
    pub fn overhead_at(&self, block_size: u32) -> f64 {
        let pts = &self.paged_overhead;
        let x = libm::log2(f64::from(block_size.max(1)));
        match pts.iter().position(|p| p.block_size >= block_size) {
            Some(0) => pts[0].overhead,
            Some(i) => {
                let (a, b) = (pts[i - 1], pts[i]);
                let (xa, xb) = (libm::log2(f64::from(a.block_size)), libm::log2(f64::from(b.block_size)));
                a.overhead + (b.overhead - a.overhead) * (x - xa) / (xb - xa)
            }
            None => pts.last().map_or(0.0, |p| p.overhead),
        }
    }
}

/// The paged-read overhead against contiguous memory where no calibration measured it.
pub fn default_paged_overhead(block_size: u32) -> f64 {
    DEFAULT_PAGED_OVERHEAD_BASE + DEFAULT_PAGED_OVERHEAD_PER_BLOCK / f64::from(block_size.max(1))
}
