//! Whether a setup whose KV memory is given in GiB (`kv_memory_gib`, not derived from
//! `gpu_memory_utilization`) can exist: on each GPU of the replica the weights (split by tensor
//! parallelism), that GPU's share of the KV cache, the profiling pass's peak activation and the
//! non-torch memory must fit in the GPU's memory. The terms are `memory_budget`'s, so the two
//! ways of giving the KV memory agree on what fits: a setup the GPU cannot hold is refused with
//! the arithmetic and the fix (a larger tensor-parallel size, or the most KV that fits).

use super::config::{ConfigError, SimConfig};
use super::memory_budget::{
    non_torch_gib, peak_activation_bytes, splits_kv_heads, switched_nvlink, ActivationShape, MemoryBudget,
    TENSOR_PARALLEL_SIZES,
};
use super::model::{ModelSpec, GIB};
use super::numbers::show_number;

/// One GPU's memory in a GiB-mode setup, GiB.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuFit {
    pub gpu_total_gib: f64,
    pub weights_gib: f64,
    pub kv_gib: f64,
    pub activation_gib: f64,
    pub non_torch_gib: f64,
}

impl GpuFit {
    /// What one GPU of `config`'s replica holds at `tensor_parallel_size` GPUs.
    pub fn of(config: &SimConfig, tensor_parallel_size: u32) -> GpuFit {
        let tp = tensor_parallel_size.max(1);
        let m = &config.model;
        let gib = |bytes: f64| bytes / GIB as f64;
        let activation = ActivationShape::of(m).map_or(0, |shape| {
            peak_activation_bytes(&shape, tp, config.scheduler.max_num_batched_tokens, config.scheduler.max_num_seqs)
        });
        GpuFit {
            gpu_total_gib: config.gpu.total_memory_gib,
            weights_gib: gib(m.arch.as_ref().map_or(m.weight_bytes() / f64::from(tp), |a| a.loaded_bytes_per_gpu(tp))),
            // Every GPU holds the same share of the replica's KV (its heads, or a replicated copy).
            kv_gib: config.kv_memory_gib / f64::from(tp),
            activation_gib: gib(activation as f64),
            non_torch_gib: non_torch_gib(tp, switched_nvlink(&config.gpu.interconnect)),
        }
    }

    pub fn needed_gib(&self) -> f64 {
        self.weights_gib + self.kv_gib + self.activation_gib + self.non_torch_gib
    }

    /// GiB of the GPU left for KV after weights, activation and non-torch memory.
    pub fn room_for_kv_gib(&self) -> f64 {
        self.gpu_total_gib - self.weights_gib - self.activation_gib - self.non_torch_gib
    }
}

/// The most KV memory (GiB, the replica's) that `config`'s GPUs hold beside its weights,
/// activation and non-torch memory at its tensor-parallel size (0 when the weights do not fit).
pub fn max_kv_gib(config: &SimConfig) -> f64 {
    let tp = config.tensor_parallel_size;
    let room = GpuFit::of(config, tp).room_for_kv_gib().max(0.0);
    (room * f64::from(tp.max(1)) * 100.0).floor() / 100.0
}

/// From the GPU up: weights that alone exceed the free memory of each GPU are refused at the
/// model, naming the tensor-parallel size whose split fits (vLLM itself would run out of memory
/// loading them, before any word about the KV cache; weights that load but leave no room under
/// `gpu_memory_utilization` get vLLM's own "No available memory for the cache blocks").
///
/// `starts_at(t)` says whether the setup starts at tensor-parallel size `t` (its weights load and
/// vLLM finds room for one `max_model_len` request); the fix names the smallest larger such size,
/// or a larger GPU.
pub fn check_weights_fit(
    model: &ModelSpec,
    gpu: &str,
    budget: &MemoryBudget,
    starts_at: &dyn Fn(u32) -> bool,
) -> Result<(), String> {
    let free = budget.free_at_startup_bytes as f64;
    if budget.weights_bytes as f64 <= free {
        return Ok(());
    }
    let tp = budget.tensor_parallel_size.max(1);
    let fitting_tp = TENSOR_PARALLEL_SIZES
        .into_iter()
        .filter(|&t| t > tp && splits_kv_heads(model.kv_heads, t))
        .find(|&t| starts_at(t));
    let fix = match fitting_tp {
        Some(t) => format!("use tensor_parallel_size {t} or more"),
        None => format!("no tensor_parallel_size up to 8 leaves room for the KV cache on {gpu}s; use a larger GPU"),
    };
    let n = |bytes: f64| show_number((bytes / GIB as f64 * 10.0).round() / 10.0);
    let gpus = if tp == 1 { format!("one {gpu}") } else { format!("each of {tp} {gpu}s") };
    Err(format!(
        "{} needs {} GiB of weights on {gpus}, more than its {} GiB free (vLLM would run out of memory loading them); {fix}",
        model.id,
        n(budget.weights_bytes as f64),
        n(free),
    ))
}

/// Refuses a GiB-mode setup that does not fit its GPUs, naming the fix.
pub fn check_fits_gpu(config: &SimConfig) -> Result<(), ConfigError> {
    if config.gpu_memory.is_some() {
        return Ok(()); // derived from the GPU: `memory_budget` already sizes it
    }
    let tp = config.tensor_parallel_size;
    let fit = GpuFit::of(config, tp);
    if fit.needed_gib() <= fit.gpu_total_gib {
        return Ok(());
    }
    let n = |x: f64| show_number((x * 10.0).round() / 10.0);
    let (model, gpu) = (&config.model.id, &config.gpu.id);
    let gpus = if tp == 1 { format!("one {gpu}") } else { format!("each of {tp} {gpu}s") };
    // The smallest tensor-parallel size at which this KV memory fits, if any.
    let fitting_tp = TENSOR_PARALLEL_SIZES
        .into_iter()
        .filter(|&t| t > tp && splits_kv_heads(config.model.kv_heads, t))
        .find(|&t| GpuFit::of(config, t).needed_gib() <= fit.gpu_total_gib);
    let use_tp = fitting_tp.map_or(String::new(), |t| format!("use tensor_parallel_size {t} or more, or "));
    if fit.room_for_kv_gib() <= 0.0 {
        let fix = match fitting_tp {
            Some(t) => format!("use tensor_parallel_size {t} or more"),
            None => "use a larger GPU".into(),
        };
        return Err(ConfigError::new(
            "model",
            format!(
                "{model} needs {} GiB of weights on {gpus}, which has {} GiB (with {} GiB of activations and {} GiB of other memory); {fix}",
                n(fit.weights_gib),
                n(fit.gpu_total_gib),
                n(fit.activation_gib),
                n(fit.non_torch_gib)
            ),
        ));
    }
    let max_kv = max_kv_gib(config);
    Err(ConfigError::new(
        "kv_memory_gib",
        format!(
            "{} GiB of KV does not fit {gpus}: {} GiB of weights + {} GiB of KV + {} GiB of activations + {} GiB of other memory = {} GiB, more than its {} GiB; {use_tp}lower kv_memory_gib to {} or less",
            show_number(config.kv_memory_gib),
            n(fit.weights_gib),
            n(fit.kv_gib),
            n(fit.activation_gib),
            n(fit.non_torch_gib),
            n(fit.needed_gib()),
            n(fit.gpu_total_gib),
            show_number(max_kv)
        ),
    ))
}
