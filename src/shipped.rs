//! The data kvlab ships, compiled in: every `include_str!` of the crate is here, so the page and
//! the CLI read the same presets, missions and calibrations, offline. This module holds text
//! and looks it up by name; the formats that understand the text parse it (`formats::preset`,
//! `formats::calibration`, `missions::shipped`).

/// (id, preset JSON) of every shipped preset, in the order the lab's picker lists them.
/// `contiguous-default` comes first and is what a bare page opens with.
pub const PRESETS: &[(&str, &str)] = &[
    ("contiguous-default", include_str!("../assets/presets/contiguous-default.json")),
    ("paged-default", include_str!("../assets/presets/paged-default.json")),
    ("contiguous-max-model-len", include_str!("../assets/presets/contiguous-max-model-len.json")),
    ("fp8-kv", include_str!("../assets/presets/fp8-kv.json")),
    ("bursty", include_str!("../assets/presets/bursty.json")),
    ("parallel-sampling", include_str!("../assets/presets/parallel-sampling.json")),
    ("prefix-caching", include_str!("../assets/presets/prefix-caching.json")),
    ("long-report-2gb", include_str!("../assets/presets/long-report-2gb.json")),
    ("long-report-chunked-512", include_str!("../assets/presets/long-report-chunked-512.json")),
    ("h200-scale", include_str!("../assets/presets/h200-scale.json")),
    ("bench-concurrency", include_str!("../assets/presets/bench-concurrency.json")),
    ("azure-conversation", include_str!("../assets/presets/azure-conversation.json")),
    ("azure-code", include_str!("../assets/presets/azure-code.json")),
    ("mooncake-conversation", include_str!("../assets/presets/mooncake-conversation.json")),
    ("gpt-oss-window", include_str!("../assets/presets/gpt-oss-window.json")),
];

/// The model catalogue (`kvlab/models@1`): Hugging Face ids with the config.json keys kvlab
/// reads, each with its source (`formats::model_catalogue`).
pub const MODEL_CATALOGUE: &str = include_str!("../assets/models/catalogue.json");

/// The preset a bare page opens with.
pub const DEFAULT_PRESET_ID: &str = "contiguous-default";

/// The missions hub's list (`kvlab/missions-index@1`), in order.
pub const MISSION_INDEX: &str = include_str!("../assets/missions/index.json");

/// (file name in the index, mission JSON) of every shipped mission.
pub const MISSIONS: &[(&str, &str)] = &[
    ("m1-paging.json", include_str!("../assets/missions/m1-paging.json")),
    ("m2-block-size.json", include_str!("../assets/missions/m2-block-size.json")),
    ("m3-preemption-storm.json", include_str!("../assets/missions/m3-preemption-storm.json")),
    ("m4-burst-budget.json", include_str!("../assets/missions/m4-burst-budget.json")),
    ("m5-prefix-cache.json", include_str!("../assets/missions/m5-prefix-cache.json")),
    ("m6-fp8-kv.json", include_str!("../assets/missions/m6-fp8-kv.json")),
    ("m7-shared-gpu.json", include_str!("../assets/missions/m7-shared-gpu.json")),
    ("m8-max-model-len.json", include_str!("../assets/missions/m8-max-model-len.json")),
    ("m9-block-size-backend.json", include_str!("../assets/missions/m9-block-size-backend.json")),
    ("m10-code-traffic.json", include_str!("../assets/missions/m10-code-traffic.json")),
    ("m11-sliding-window.json", include_str!("../assets/missions/m11-sliding-window.json")),
    ("m12-host-tier.json", include_str!("../assets/missions/m12-host-tier.json")),
    ("m13-routing.json", include_str!("../assets/missions/m13-routing.json")),
];

/// (name, file text) of every shipped step-time calibration, in the order the lab lists them.
#[cfg(not(target_arch = "wasm32"))]
pub const CALIBRATIONS: &[(&str, &str)] = &[
    ("cuda-nvidia-h200", include_str!("../assets/calibration/cuda-nvidia-h200.json")),
    ("host-xeon-2core", include_str!("../assets/calibration/host-xeon-2core.json")),
];
/// The page's calibrations: the same files without their raw `measurements` (per-step samples
/// nothing in the page reads; `build.rs` writes these copies), which keeps them out of the
/// bundle.
#[cfg(target_arch = "wasm32")]
pub const CALIBRATIONS: &[(&str, &str)] = &[
    ("cuda-nvidia-h200", include_str!(concat!(env!("OUT_DIR"), "/calibration/cuda-nvidia-h200.json"))),
    ("host-xeon-2core", include_str!(concat!(env!("OUT_DIR"), "/calibration/host-xeon-2core.json"))),
];

/// The real vLLM runs `kvlab validate` replays (native only: the page shows their summary, which
/// `engine::clock` keeps).
#[cfg(not(target_arch = "wasm32"))]
pub const VALIDATION_RUNS: &str = include_str!("../assets/validation/vllm-runs.json");
/// Published benchmark figures, each with its source and how to replay it: runs gathered one by
/// one, NVIDIA AIConfigurator's silicon measurements of vLLM closed loops
/// (`scripts/validation-aiconfigurator.py`), and Lambda's vLLM 0.5/0.6 benchmark results with
/// their per-request lengths (`scripts/validation-lambdalabs.py`).
#[cfg(not(target_arch = "wasm32"))]
pub const PUBLISHED_RUNS: &[&str] = &[
    include_str!("../assets/validation/published-runs.json"),
    include_str!("../assets/validation/aiconfigurator-runs.json"),
    include_str!("../assets/validation/lambdalabs-runs.json"),
];

/// The text stored under `name` in one of the tables above.
pub fn lookup(table: &'static [(&'static str, &'static str)], name: &str) -> Option<&'static str> {
    table.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The names of one of the tables above, in order.
pub fn names(table: &'static [(&'static str, &'static str)]) -> Vec<&'static str> {
    table.iter().map(|(n, _)| *n).collect()
}

/// The kernel table file of a GPU (`assets/kernels/<gpu>.json`, `formats::kernel_tables`), in
/// native builds with the kernel clock: the page fetches the one a run needs (`session::kernel_clock`).
#[cfg(all(feature = "kernel-clock", not(target_arch = "wasm32")))]
pub fn kernel_tables(gpu_id: &str) -> Option<&'static str> {
    Some(match gpu_id {
        "h100-sxm" => include_str!("../assets/kernels/h100-sxm.json"),
        "h200" => include_str!("../assets/kernels/h200.json"),
        "b200" => include_str!("../assets/kernels/b200.json"),
        "l40s" => include_str!("../assets/kernels/l40s.json"),
        "a100-80gb" => include_str!("../assets/kernels/a100-80gb.json"),
        _ => return None,
    })
}
