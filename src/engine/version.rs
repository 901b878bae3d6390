//! `EngineVersion`: which generation of vLLM's scheduler the paged engine follows, and the
//! defaults that differ between them. Its own module so the allocator and the configuration can
//! both name it without importing each other.

/// Which vLLM scheduler the paged engine follows.
///
/// `V1` is the scheduler vLLM runs today (0.6+ default, the only one since 0.10): mixed prefill and
/// decode steps, admission only when the whole known sequence fits, recompute-only preemption,
/// parallel samples as independent child requests sharing prompt blocks through the prefix cache.
/// `V0` is the 2023 scheduler the PagedAttention paper and the early articles describe: a 1%
/// watermark, sequence groups whose samples share blocks with copy-on-write, and swap to CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EngineVersion {
    #[default]
    V1,
    V0,
}

impl EngineVersion {
    /// vLLM's default watermark for this scheduler: 0.0 in v1, 0.01 in v0.
    pub fn default_watermark(self) -> f64 {
        match self {
            EngineVersion::V1 => 0.0,
            EngineVersion::V0 => 0.01,
        }
    }

    /// vLLM's default for automatic prefix caching: on in v1, off in v0.
    pub fn default_prefix_caching(self) -> bool {
        self == EngineVersion::V1
    }

    pub fn name(self) -> &'static str {
        match self {
            EngineVersion::V1 => "v1",
            EngineVersion::V0 => "v0",
        }
    }
}
