//! What a CUDA device reports about itself: its name, build of the kernels, and the reference
//! bandwidths measured beside the gathers.

/// Reference bandwidths of the device, measured in the same run as the gathers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceBandwidths {
    /// A device-to-device copy (cuMemcpyDtoD), counting bytes read and written.
    pub copy_gb_s: f64,
    /// The streaming read kernel over the same buffer (16-byte loads, 4 in flight per thread).
    pub stream_read_gb_s: f64,
    /// Bytes each measurement moved (the buffer's size).
    pub bytes: u64,
}

/// What was opened: the device and how its kernels were built.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: u64,
    pub nvrtc_version: (i32, i32),
    /// `sm_90 cubin`, or `compute_90 PTX (JIT)` after a failed cubin load.
    pub kernels: String,
    /// Registers per kernel, from ptxas (cubin builds only).
    pub registers: Vec<(String, u32)>,
}
