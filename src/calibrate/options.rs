//! What a calibration run is asked to do (`CalibrateOptions`: the preset, block sizes, samples,
//! the nominal bandwidth's source) and what it returns (`CalibrationRun`).

use crate::calibrate::fit::BlockSizeFigures;
use crate::engine::SimConfig;
use crate::formats::calibration::Calibration;

/// The block sizes a calibration measures by default.
pub const DEFAULT_BLOCK_SIZES: &[u32] = &[1, 8, 16, 32, 64, 128, 256];

/// Where the "nominal" bandwidth that `bandwidth_efficiency` divides by comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Nominal {
    /// Stream the whole pool once in address order (a plain sum); best of several reads.
    MeasuredPoolRead,
    /// The device's datasheet figure.
    Spec { gb_s: f64, source: String },
}

#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// The preset whose traffic is replayed (its allocator is switched to paged blocks).
    pub config: SimConfig,
    pub block_sizes: Vec<u32>,
    /// Simulated seconds of the trace (None: the preset's duration).
    pub duration_s: Option<f64>,
    /// Measured steps per block size, spread evenly over simulated time.
    pub samples: usize,
    /// Timed (paged, contiguous) pairs per measured step, after one untimed warm-up pair.
    pub reps: usize,
    pub name: String,
    pub date: String,
    pub device: String,
    /// The lab's GPU preset for the measured device (`h200`, …), recorded in the file.
    pub gpu: Option<String>,
    pub nominal: Nominal,
    /// Device facts and reference bandwidths measured in the same run, for the file and verdict.
    pub device_report: Option<serde_json::Value>,
    /// A device-to-device copy's bandwidth in the same run (GB/s, read + write), for the verdict.
    pub copy_gb_s: Option<f64>,
}

/// The result: the file's contents plus a human summary.
#[derive(Clone, Debug)]
pub struct CalibrationRun {
    pub calibration: Calibration,
    pub figures: Vec<BlockSizeFigures>,
    pub summary: String,
}
