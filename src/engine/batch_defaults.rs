//! vLLM's defaults for the two batch limits a setup may leave out, `max_num_batched_tokens` (the
//! step's token budget) and `max_num_seqs`, as vLLM fills them in for the GPU it runs on.
//!
//! v1 (vLLM 0.33, `EngineArgs.get_batch_defaults` and
//! `_set_default_max_num_seqs_and_batched_tokens_args`, `vllm serve`'s usage context): 16,384
//! tokens and 1,024 sequences on GPUs of 160 GiB or more (B200, B300), 8,192 and 1,024 on GPUs
//! of 70 GiB or more other than A100s (H100, H200), 2,048 and 256 on the rest. Without chunked
//! prefill the budget is at least `max_model_len` (a whole prompt must fit in one step); it is
//! never above `max_num_seqs × max_model_len`, and a defaulted `max_num_seqs` never above the
//! budget.
//!
//! v0 (vLLM 0.5/0.6's `SchedulerConfig`, one step per schedule): 256 sequences; a budget of 512
//! tokens with chunked prefill, else `max(max_model_len, 2048)`.

use super::config::EngineVersion;
use super::gpus::GpuSpec;

/// What `vllm serve` starts from on `gpu` before the model's length is known: (tokens, seqs).
pub fn serve_batch_defaults(gpu: &GpuSpec) -> (u32, u32) {
    // vLLM tells the A100 by its device name: its larger budgets lowered throughput there.
    let a100 = gpu.id.starts_with("a100") || gpu.name.to_ascii_lowercase().contains("a100");
    if gpu.total_memory_gib >= 160.0 {
        (16384, 1024)
    } else if gpu.total_memory_gib >= 70.0 && !a100 {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

/// The setup a run's batch limits are resolved for.
#[derive(Clone, Copy, Debug)]
pub struct BatchSetup<'a> {
    pub engine: EngineVersion,
    pub gpu: &'a GpuSpec,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
}

/// `(max_num_batched_tokens, max_num_seqs)`: the ones given, the others as vLLM defaults them.
pub fn batch_limits(setup: BatchSetup<'_>, tokens: Option<u32>, seqs: Option<u32>) -> (u32, u32) {
    let len = setup.max_model_len;
    match setup.engine {
        EngineVersion::V1 => {
            let (default_tokens, default_seqs) = serve_batch_defaults(setup.gpu);
            let tokens = tokens.unwrap_or_else(|| {
                let t = if setup.chunked_prefill { default_tokens } else { default_tokens.max(len) };
                t.min(seqs.unwrap_or(default_seqs).saturating_mul(len))
            });
            (tokens, seqs.unwrap_or(default_seqs.min(tokens)))
        }
        EngineVersion::V0 => {
            let tokens = tokens.unwrap_or(if setup.chunked_prefill { 512 } else { len.max(2048) });
            (tokens, seqs.unwrap_or(256))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gpus::gpu_preset;

    fn limits(engine: EngineVersion, gpu: &str, len: u32, chunked: bool) -> (u32, u32) {
        let gpu = gpu_preset(gpu).expect("a catalogue GPU");
        batch_limits(BatchSetup { engine, gpu: &gpu, max_model_len: len, chunked_prefill: chunked }, None, None)
    }

    #[test]
    fn vllm_serve_defaults_by_gpu() {
        assert_eq!(limits(EngineVersion::V1, "h100-sxm", 32768, true), (8192, 1024));
        assert_eq!(limits(EngineVersion::V1, "h200", 32768, true), (8192, 1024));
        assert_eq!(limits(EngineVersion::V1, "b200", 32768, true), (16384, 1024));
        assert_eq!(limits(EngineVersion::V1, "a100-80gb", 32768, true), (2048, 256));
        assert_eq!(limits(EngineVersion::V1, "l4", 32768, true), (2048, 256));
    }

    #[test]
    fn without_chunked_prefill_a_whole_prompt_fits_and_short_models_cap_the_budget() {
        assert_eq!(limits(EngineVersion::V1, "h100-sxm", 32768, false), (32768, 1024));
        assert_eq!(limits(EngineVersion::V1, "a100-80gb", 4096, false), (4096, 256));
        // A defaulted max_num_seqs never above the budget, the budget never above seqs × length.
        let gpu = gpu_preset("h100-sxm").expect("a catalogue GPU");
        let setup = BatchSetup { engine: EngineVersion::V1, gpu: &gpu, max_model_len: 4, chunked_prefill: true };
        assert_eq!(batch_limits(setup, None, Some(2)), (8, 2));
        assert_eq!(batch_limits(setup, Some(100), None), (100, 100));
        assert_eq!(batch_limits(setup, Some(64), Some(16)), (64, 16), "what is set stays");
    }

    #[test]
    fn vllm_v0_defaults() {
        assert_eq!(limits(EngineVersion::V0, "h100-sxm", 2048, false), (2048, 256));
        assert_eq!(limits(EngineVersion::V0, "a100-80gb", 1024, false), (2048, 256));
        assert_eq!(limits(EngineVersion::V0, "h100-sxm", 32768, false), (32768, 256));
        assert_eq!(limits(EngineVersion::V0, "h100-sxm", 32768, true), (512, 256));
    }
}
