//! The step-time model: a roofline per scheduler step. Decode streams the weights once plus every
//! scheduled sequence's KV at the GPU's effective bandwidth; paged attention reads pay a
//! block-size-dependent overhead (the PagedAttention paper measured 20–26% at the kernel level);
//! prefill is bound by compute; swaps cross the host link. A measured `StepTimeCalibration` replaces the defaults.

use serde::{Deserialize, Serialize};

use super::model::{gpu_preset, GpuSpec, ModelSpec};

/// Paged-attention overhead at block size 16 that the defaults aim for (the paper's 20–26%).
pub const DEFAULT_BANDWIDTH_EFFICIENCY: f64 = 0.8;
pub const DEFAULT_COMPUTE_EFFICIENCY: f64 = 0.5;
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

/// Work one scheduler step does.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepWork {
    pub prefill_tokens: u64,
    pub decode_tokens: u64,
    /// Context tokens attention reads (each scheduled sequence's whole context).
    pub kv_read_tokens: u64,
    pub swap_blocks: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StepTimeModel {
    /// Every weight, routed experts included.
    weight_bytes: f64,
    /// The routed experts' bytes (a mixture of experts reads only those its tokens route to:
    /// each of a step's T tokens picks a share s of them, so `1 − (1 − s)^T` of them on average).
    expert_bytes: f64,
    expert_share_per_token: f64,
    flops_per_token: f64,
    bandwidth_bytes_per_s: f64,
    flops_per_s: f64,
    pcie_bytes_per_s: f64,
    fixed_step_us: f64,
    kv_bytes_per_token: f64,
    /// Multiplier on KV reads (1 + overhead) for the configured allocator.
    kv_read_factor: f64,
    swap_block_bytes: f64,
    /// Tensor parallelism: all-reduce latency per step (two per layer), and per scheduled token.
    allreduce_fixed_us: f64,
    allreduce_us_per_token: f64,
}

/// Latency of one small NCCL all-reduce between GPUs of a node, µs.
pub const ALLREDUCE_LATENCY_US: f64 = 8.0;

impl StepTimeModel {
    pub fn new(
        model: &ModelSpec,
        gpu: &GpuSpec,
        kv_bytes_per_token: u64,
        paged_block_size: Option<u32>,
        calibration: Option<&StepTimeCalibration>,
    ) -> Self {
        let (bw_eff, fixed) = calibration.map_or((DEFAULT_BANDWIDTH_EFFICIENCY, DEFAULT_FIXED_STEP_US), |c| {
            (c.bandwidth_efficiency, c.fixed_step_us)
        });
        let overhead = paged_block_size.map_or(0.0, |bs| match calibration {
            Some(c) => c.overhead_at(bs),
            None => default_paged_overhead(bs),
        });
        // A calibration measured on a known GPU brings that GPU's bandwidth with it.
        let measured_gpu = calibration.and_then(|c| c.gpu.as_deref()).and_then(gpu_preset);
        let nominal_gb_s = measured_gpu.map_or(gpu.mem_bandwidth_gb_s, |g| g.mem_bandwidth_gb_s);
        StepTimeModel {
            weight_bytes: model.weight_bytes(),
            expert_bytes: model.routed_experts().0,
            expert_share_per_token: model.routed_experts().1,
            flops_per_token: model.flops_per_token(),
            bandwidth_bytes_per_s: nominal_gb_s * 1e9 * bw_eff,
            flops_per_s: tensor_tflops(model, gpu) * 1e12 * DEFAULT_COMPUTE_EFFICIENCY,
            pcie_bytes_per_s: gpu.pcie_gb_s * 1e9,
            fixed_step_us: fixed,
            kv_bytes_per_token: kv_bytes_per_token as f64,
            kv_read_factor: 1.0 + overhead,
            swap_block_bytes: kv_bytes_per_token as f64 * f64::from(paged_block_size.unwrap_or(1)),
            allreduce_fixed_us: 0.0,
            allreduce_us_per_token: 0.0,
        }
    }

    /// The same model on `tp` GPUs of one replica, timed per GPU: each streams `1/tp` of the
    /// weights and of the KV (its heads) and does `1/tp` of the FLOPs, and every layer adds two
    /// all-reduces of the step's activations (`tokens × hidden × 2` bytes, ring: `2 (tp − 1) / tp`
    /// of it over each GPU's link) plus their latency. `tp = 1` changes nothing.
    pub fn with_tensor_parallel(mut self, tp: u32, layers: u32, hidden_size: f64, interconnect_gb_s: f64) -> Self {
        if tp <= 1 {
            return self;
        }
        let n = f64::from(tp);
        self.weight_bytes /= n;
        self.expert_bytes /= n;
        self.flops_per_token /= n;
        self.kv_bytes_per_token /= n;
        self.swap_block_bytes /= n;
        let allreduces = 2.0 * f64::from(layers);
        self.allreduce_fixed_us = allreduces * ALLREDUCE_LATENCY_US;
        let bytes_per_token = hidden_size * 2.0 * 2.0 * (n - 1.0) / n;
        self.allreduce_us_per_token = allreduces * bytes_per_token / (interconnect_gb_s * 1e9) * 1e6;
        self
    }

    /// A clock that counts steps, not time: every step lasts one tick (1 µs), whatever it does.
    /// `kvlab replay` runs on it so that step `s` of the engine is step `s` of vLLM.
    pub fn one_tick_per_step() -> Self {
        StepTimeModel::fixed_and_per_token(1.0, 0.0)
    }

    /// A clock of a fixed cost per step plus a cost per scheduled token, µs (no memory reads,
    /// no swaps): a run short enough to check its latencies by hand.
    pub fn fixed_and_per_token(fixed_step_us: f64, us_per_token: f64) -> Self {
        StepTimeModel {
            weight_bytes: 0.0,
            expert_bytes: 0.0,
            expert_share_per_token: 0.0,
            flops_per_token: us_per_token,
            bandwidth_bytes_per_s: 1.0,
            flops_per_s: 1e6,
            pcie_bytes_per_s: 1.0,
            fixed_step_us,
            kv_bytes_per_token: 0.0,
            kv_read_factor: 1.0,
            swap_block_bytes: 0.0,
            allreduce_fixed_us: 0.0,
            allreduce_us_per_token: 0.0,
        }
    }

    /// The paged overhead this model applies (0 for contiguous).
    pub fn paged_overhead(&self) -> f64 {
        self.kv_read_factor - 1.0
    }

    /// Duration of one step in whole microseconds (at least 1).
    pub fn step_us(&self, w: &StepWork) -> u64 {
        let mem_bytes = self.weights_read(w) + w.kv_read_tokens as f64 * self.kv_bytes_per_token * self.kv_read_factor;
        let mem_s = mem_bytes / self.bandwidth_bytes_per_s;
        let compute_s = (w.prefill_tokens + w.decode_tokens) as f64 * self.flops_per_token / self.flops_per_s;
        let swap_s = w.swap_blocks as f64 * self.swap_block_bytes / self.pcie_bytes_per_s;
        let tokens = (w.prefill_tokens + w.decode_tokens) as f64;
        let allreduce_us =
            if tokens > 0.0 { self.allreduce_fixed_us + tokens * self.allreduce_us_per_token } else { 0.0 };
        let us = self.fixed_step_us + (mem_s.max(compute_s) + swap_s) * 1e6 + allreduce_us;
        (libm::round(us) as u64).max(1)
    }
}

/// The GPU's dense tensor TFLOPs for the model: FP8 (or INT8) where an 8-bit checkpoint runs its
/// products in 8 bits and the GPU has such tensor cores, else 16-bit.
fn tensor_tflops(model: &ModelSpec, gpu: &GpuSpec) -> f64 {
    let eight_bit = model.arch.as_ref().is_some_and(|a| a.computes_in_8_bits());
    if eight_bit && gpu.fp8_tflops > 0.0 {
        gpu.fp8_tflops
    } else {
        gpu.peak_tflops
    }
}

impl StepTimeModel {
    /// Weight bytes a step streams: all of a dense model; of a mixture of experts, the shared
    /// weights and the experts its tokens route to (uniform routing). A dense model's is exactly
    /// `weight_bytes`, so its steps do not change.
    fn weights_read(&self, w: &StepWork) -> f64 {
        if self.expert_bytes <= 0.0 {
            return self.weight_bytes;
        }
        let tokens = (w.prefill_tokens + w.decode_tokens) as f64;
        let touched = 1.0 - libm::pow(1.0 - self.expert_share_per_token, tokens);
        self.weight_bytes - self.expert_bytes + self.expert_bytes * touched
    }
}

pub fn default_paged_overhead(block_size: u32) -> f64 {
    DEFAULT_PAGED_OVERHEAD_BASE + DEFAULT_PAGED_OVERHEAD_PER_BLOCK / f64::from(block_size.max(1))
}
