//! The CUDA block pool (`gpu` feature): one device allocation holding one layer's KV blocks,
//! written by a kernel and gathered by kernels (`kernels.cu`) that NVRTC compiles at run time to
//! a cubin for the device's architecture (`nvrtc.rs`; PTX only as a fallback). The paged kernel
//! is shaped like vLLM's paged-attention kernel: each warp takes one block at a time, looks its
//! physical block up once and reads the block's run with 16-byte loads; the contiguous kernel
//! reads the same bytes from a contiguous copy with the same grid. Every timed read starts with
//! a cold L2 (a flush buffer is overwritten first, which also hides the launch from the timer)
//! and is timed with CUDA events, so `GatherResult::device_ns` is device time.
//!
//! The driver and NVRTC are loaded at run time (cudarc's dynamic loading): a build with the
//! feature runs anywhere and reports "no CUDA driver found" where there is none.

#[cfg(feature = "gpu")]
mod device;
mod info;
pub mod nvrtc;
#[cfg(feature = "gpu")]
mod pool;
#[cfg(feature = "gpu")]
mod timer;

pub use info::{DeviceBandwidths, DeviceInfo};

use crate::calibrate::backend::{BlockPoolBackend, PoolGeometry};

/// The message for a build without the feature.
pub const NOT_BUILT: &str =
    "this kvlab was built without `--features gpu`, so it cannot open a CUDA device; rebuild with `cargo build --release --features gpu` (or run scripts/calibrate-gpu.sh)";

/// The datasheet memory bandwidth of a GPU, by the name its driver reports (GB/s).
pub fn spec_bandwidth_gb_s(device_name: &str) -> Option<(f64, String)> {
    let n = device_name.to_ascii_uppercase();
    let (gb_s, what) = if n.contains("H200") {
        (4800.0, "H200 (HBM3e)")
    } else if n.contains("H100") && n.contains("PCIE") {
        (2000.0, "H100 PCIe")
    } else if n.contains("H100") && n.contains("NVL") {
        (3900.0, "H100 NVL")
    } else if n.contains("H100") || n.contains("H800") {
        (3350.0, "H100 SXM")
    } else if n.contains("GH200") {
        (4000.0, "GH200")
    } else if n.contains("B200") {
        (8000.0, "B200")
    } else if n.contains("A100") && n.contains("80GB") && n.contains("PCIE") {
        (1935.0, "A100 80GB PCIe")
    } else if n.contains("A100") && n.contains("80GB") {
        (2039.0, "A100 80GB SXM")
    } else if n.contains("A100") {
        (1555.0, "A100 40GB")
    } else if n.contains("L40S") || n.contains("L40") {
        (864.0, "L40S")
    } else if n.contains("L4") {
        (300.0, "L4")
    } else if n.contains("A10G") || n.contains("A10") {
        (600.0, "A10")
    } else if n.contains("4090") {
        (1008.0, "RTX 4090")
    } else {
        return None;
    };
    Some((gb_s, format!("datasheet bandwidth of the {what}: {gb_s} GB/s")))
}

/// The lab's GPU preset (`engine::model::GPU_IDS`) for a device name, when there is one.
pub fn lab_gpu_id(device_name: &str) -> Option<&'static str> {
    let n = device_name.to_ascii_uppercase();
    if n.contains("H200") && !n.contains("GH200") {
        Some("h200")
    } else if n.contains("H100") && !n.contains("PCIE") && !n.contains("NVL") {
        Some("h100-sxm")
    } else if n.contains("A100") && n.contains("80GB") && !n.contains("PCIE") {
        Some("a100-80gb")
    } else if n.split_whitespace().any(|w| w == "L4") {
        Some("l4")
    } else {
        None
    }
}

/// An opened CUDA device on which pools can be made.
pub struct CudaDevice {
    #[cfg(feature = "gpu")]
    inner: device::Device,
    #[cfg(not(feature = "gpu"))]
    _never: std::convert::Infallible,
}

impl CudaDevice {
    /// Opens device `ordinal`: fails cleanly without the feature, without a driver, without a
    /// device or without NVRTC, and names every error when the kernels cannot be loaded.
    pub fn open(ordinal: usize) -> Result<CudaDevice, String> {
        #[cfg(feature = "gpu")]
        {
            device::Device::open(ordinal).map(|inner| CudaDevice { inner })
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = ordinal;
            Err(NOT_BUILT.to_string())
        }
    }

    pub fn info(&self) -> DeviceInfo {
        #[cfg(feature = "gpu")]
        {
            self.inner.info.clone()
        }
        #[cfg(not(feature = "gpu"))]
        match self._never {}
    }

    /// Keeps the device busy streaming memory for at least `ms` milliseconds of device time, so
    /// that clocks have ramped up before anything is timed; returns the device time spent.
    pub fn warm_up(&mut self, ms: f64) -> Result<f64, String> {
        #[cfg(feature = "gpu")]
        {
            self.inner.warm_up(ms)
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = ms;
            match self._never {}
        }
    }

    /// Times a device-to-device copy and the streaming read kernel over `bytes` (medians of 5).
    pub fn bandwidths(&mut self, bytes: u64) -> Result<DeviceBandwidths, String> {
        #[cfg(feature = "gpu")]
        {
            self.inner.bandwidths(bytes)
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = bytes;
            match self._never {}
        }
    }

    /// A pool of `geometry` on this device (block_size and plane_bytes powers of two, planes of at
    /// least 16 bytes).
    pub fn pool(&self, geometry: PoolGeometry) -> Result<Box<dyn BlockPoolBackend>, String> {
        #[cfg(feature = "gpu")]
        {
            Ok(Box::new(self.inner.pool(geometry)?))
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = geometry;
            match self._never {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_map_to_the_labs_gpus() {
        assert_eq!(lab_gpu_id("NVIDIA H200"), Some("h200"));
        assert_eq!(lab_gpu_id("NVIDIA H100 80GB HBM3"), Some("h100-sxm"));
        assert_eq!(lab_gpu_id("NVIDIA H100 PCIe"), None);
        assert_eq!(lab_gpu_id("NVIDIA GH200 480GB"), None);
        assert_eq!(lab_gpu_id("NVIDIA A100-SXM4-80GB"), Some("a100-80gb"));
        assert_eq!(lab_gpu_id("NVIDIA L4"), Some("l4"));
        assert_eq!(lab_gpu_id("NVIDIA L40S"), None);
        assert_eq!(spec_bandwidth_gb_s("NVIDIA H200").map(|s| s.0), Some(4800.0));
    }
}
