//! Preset JSON (`kvlab/preset@1`) at the edge: serde DTOs that mirror the file instructors write,
//! converted into a validated `SimConfig`. Every error names the field by its path
//! (`workload.classes[0].output_tokens.p99`) and says what would be accepted.

use serde::{Deserialize, Serialize};

use super::json::from_value_with_path;
use super::paths::check_preset_json_shape;
use super::sniff::{sniff, Document, PRESET_SCHEMA};
use super::trace::{Replica, TraceFormat};
use crate::engine::alloc::Fit;
use crate::engine::config::{
    ConfigError, EngineVersion, PreemptionMode, Reserve, SchedulerConfig, SimConfig, DEFAULT_BLOCK_SIZE,
};
#[cfg(feature = "panels")]
use crate::engine::fleet::{PrefixIndex, RouterConfig, RouterPolicy, ScorerWeights};
use crate::engine::model::KvDtype;
#[cfg(feature = "kv-offload")]
use crate::engine::offload::OffloadPolicy;
use crate::engine::workload::{Arrival, UserClass};
/// Largest preset text accepted (a trace CSV inlined in a preset included).
pub const MAX_PRESET_BYTES: usize = 64 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetDto {
    pub schema: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    #[serde(default = "default_model")]
    pub model: serde_json::Value,
    #[serde(default)]
    pub kv_dtype: KvDtypeDto,
    /// A GPU id, or an object of its figures (`GpuObjectDto`).
    #[serde(default = "default_gpu")]
    pub gpu: GpuDto,
    /// KV memory of the replica, GiB; absent with `gpu_memory_utilization` (then derived), and
    /// 10 when neither is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_memory_gib: Option<f64>,
    /// vLLM's `--gpu-memory-utilization`: derive the KV memory from the GPU instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    /// GiB of each GPU other processes (another vLLM instance) already hold at startup.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gpu_memory_in_use_gib: f64,
    /// vLLM's `--tensor-parallel-size`: GPUs per replica.
    #[serde(default = "default_tp", skip_serializing_if = "is_one")]
    pub tensor_parallel_size: u32,
    /// vLLM's `--attention-backend` (`flash-attn`, `flashinfer`, `triton`, `flex-attention`,
    /// `rocm-aiter-fa`, `cpu`); absent = vLLM's own choice, FlashAttention on these GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_backend: Option<String>,
    #[serde(default)]
    pub allocator: AllocatorDto,
    #[serde(default)]
    pub scheduler: SchedulerDto,
    #[serde(default)]
    pub workload: WorkloadDto,
    /// A shipped step-time calibration by name (`assets/calibration/<name>.json`); absent = the
    /// default roofline constants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<String>,
    /// What prices a step: the roofline (fitted constants, every GPU), or `kernels`, vLLM's
    /// kernels measured on the GPU (`formats::kernel_tables::KERNEL_GPUS`). The page's first
    /// module reads no such field: it hands such a preset to the full one, which fetches the
    /// GPU's tables.
    #[cfg(feature = "kernel-clock")]
    #[serde(default, skip_serializing_if = "ClockDto::is_roofline")]
    pub clock: ClockDto,
    /// The run goes on past `duration_s` until every request that arrived has finished.
    #[serde(default, skip_serializing_if = "is_false")]
    pub until_all_finished: bool,
    /// vLLM's `--enforce-eager`: no CUDA graphs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enforce_eager: bool,
    /// A host-memory KV tier (vLLM's `--kv-offloading-size`); absent: none. The page's first
    /// module reads no such field: it hands such a preset to the full one.
    #[cfg(feature = "kv-offload")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_offload: Option<KvOffloadDto>,
    /// Copies of the setup behind a router (docs/ROUTING.md); left out, 1. The page's first
    /// module reads neither this nor `router`: it hands such a preset to the full one.
    #[cfg(feature = "panels")]
    #[serde(default = "default_replicas", skip_serializing_if = "is_one_replica")]
    pub replicas: u32,
    /// How requests are spread over the replicas; left out, round robin.
    #[cfg(feature = "panels")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterDto>,
}

/// `router`: the policy, and the figures of its source it uses (each defaulted to the source's).
#[cfg(feature = "panels")]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterDto {
    pub policy: RouterPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<ScorerWeights>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_index: Option<PrefixIndex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_weight: Option<f64>,
}

#[cfg(feature = "panels")]
impl RouterDto {
    pub fn to_config(&self) -> RouterConfig {
        let d = RouterConfig::default();
        RouterConfig {
            policy: self.policy,
            weights: self.weights.unwrap_or(d.weights),
            prefix_index: self.prefix_index.unwrap_or(d.prefix_index),
            overlap_weight: self.overlap_weight.unwrap_or(d.overlap_weight),
        }
    }
}

#[cfg(feature = "panels")]
fn default_replicas() -> u32 {
    SimConfig::default().replicas
}
#[cfg(feature = "panels")]
fn is_one_replica(r: &u32) -> bool {
    *r == 1
}

/// `kv_offload`: the host tier's size over the replica, GiB (vLLM's `--kv-offloading-size`),
/// and its eviction policy.
#[cfg(feature = "kv-offload")]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvOffloadDto {
    pub cpu_gib: f64,
    #[serde(default)]
    pub policy: OffloadPolicy,
}

// Defaults come from `SimConfig::default()`, the one source of the lab's defaults.
fn default_seed() -> u64 {
    SimConfig::default().seed
}
fn default_duration() -> f64 {
    SimConfig::default().duration_s
}
fn default_model() -> serde_json::Value {
    serde_json::Value::String(SimConfig::default().model.id)
}
fn default_gpu() -> GpuDto {
    GpuDto::from(SimConfig::default().gpu.id.as_str())
}

/// `gpu`: an id (`"h100-sxm"`) or an object of a GPU's figures, read by `preset_config.rs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GpuDto(pub serde_json::Value);

impl From<&str> for GpuDto {
    fn from(id: &str) -> Self {
        GpuDto(serde_json::Value::from(id))
    }
}

impl std::fmt::Display for GpuDto {
    /// The id, or a custom GPU's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            serde_json::Value::String(id) => f.write_str(id),
            v => f.write_str(v.get("name").and_then(serde_json::Value::as_str).unwrap_or("custom GPU")),
        }
    }
}

/// A GPU the catalogue lacks, by its figures (`"gpu": {"memory_gib": 48, …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuObjectDto {
    #[serde(default)]
    pub name: String,
    /// Memory as sold, GiB.
    pub memory_gib: f64,
    /// Memory as the driver reports it (default: 99% of `memory_gib`, as on the logged cards).
    #[serde(default)]
    pub total_memory_gib: Option<f64>,
    pub mem_bandwidth_gb_s: f64,
    /// Dense BF16 tensor TFLOPs.
    pub peak_tflops: f64,
    #[serde(default)]
    pub fp8_tflops: f64,
    #[serde(default = "default_pcie")]
    pub pcie_gb_s: f64,
    /// GPU-to-GPU GB/s per direction (default: the PCIe link).
    #[serde(default)]
    pub interconnect_gb_s: Option<f64>,
}

fn default_pcie() -> f64 {
    25.0
}
fn default_tp() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
fn is_false(v: &bool) -> bool {
    !*v
}

/// One JSON spelling per engine enum: `enum_pair!(Dto <-> Engine { A, B })` declares the DTO's
/// variants once and converts both ways.
macro_rules! enum_pair {
    ($dto:ident <-> $engine:ident { $($v:ident),+ }) => {
        impl From<$dto> for $engine {
            fn from(d: $dto) -> $engine {
                match d { $($dto::$v => $engine::$v),+ }
            }
        }
        impl From<$engine> for $dto {
            fn from(e: $engine) -> $dto {
                match e { $($engine::$v => $dto::$v),+ }
            }
        }
    };
}

enum_pair!(KvDtypeDto <-> KvDtype { Fp16, Fp8, Fp32 });
enum_pair!(ReserveDto <-> Reserve { PromptPlusMaxTokens, MaxModelLen });
enum_pair!(FitDto <-> Fit { FirstFit, BestFit });
enum_pair!(PreemptionDto <-> PreemptionMode { Recompute, Swap });
enum_pair!(EngineDto <-> EngineVersion { V1, V0 });

/// `clock`: what prices a step.
#[cfg(feature = "kernel-clock")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockDto {
    /// The roofline, with each GPU's fitted constants.
    #[default]
    Roofline,
    /// GPU kernel times measured with vLLM's kernels, plus the host's share.
    Kernels,
}

#[cfg(feature = "kernel-clock")]
impl ClockDto {
    fn is_roofline(&self) -> bool {
        *self == ClockDto::Roofline
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtypeDto {
    #[default]
    Fp16,
    Fp8,
    Fp32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelObjectDto {
    #[serde(default)]
    pub name: String,
    pub layers: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub params_b: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReserveDto {
    #[default]
    PromptPlusMaxTokens,
    MaxModelLen,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitDto {
    #[default]
    FirstFit,
    BestFit,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AllocatorDto {
    Contiguous {
        #[serde(default)]
        reserve: ReserveDto,
        #[serde(default)]
        fit: FitDto,
    },
    Paged {
        #[serde(default = "default_block_size")]
        block_size: u32,
        /// Absent = the engine's default (on in v1, off in v0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix_caching: Option<bool>,
    },
}

fn default_block_size() -> u32 {
    DEFAULT_BLOCK_SIZE
}

impl Default for AllocatorDto {
    fn default() -> Self {
        AllocatorDto::Contiguous { reserve: ReserveDto::default(), fit: FitDto::default() }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreemptionDto {
    #[default]
    Recompute,
    Swap,
}

/// `scheduler.engine`: which vLLM scheduler the paged allocator follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineDto {
    #[default]
    V1,
    V0,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerDto {
    pub engine: EngineDto,
    /// Absent = vLLM's default for the GPU and the engine (`engine::batch_defaults`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u32>,
    /// Absent = vLLM's default for the GPU, the engine, chunked prefill and `max_model_len`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_batched_tokens: Option<u32>,
    pub preemption: PreemptionDto,
    pub swap_space_gib: f64,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
    /// Absent = the engine's default (0.0 in v1, 0.01 in v0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark: Option<f64>,
}

impl Default for SchedulerDto {
    /// The engine's defaults, the batch limits left to vLLM's defaults for the GPU.
    fn default() -> Self {
        SchedulerDto {
            max_num_seqs: None,
            max_num_batched_tokens: None,
            ..SchedulerDto::from(&SchedulerConfig::default())
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadDto {
    #[serde(default)]
    pub arrival: ArrivalDto,
    #[serde(default)]
    pub classes: Vec<ClassDto>,
}

impl Default for WorkloadDto {
    fn default() -> Self {
        WorkloadDto { arrival: ArrivalDto::default(), classes: vec![ClassDto::default()] }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ArrivalDto {
    Poisson {
        rate_per_s: f64,
        #[serde(default)]
        bursts: Vec<BurstDto>,
    },
    /// `vllm bench serve --max-concurrency C --num-prompts N` at an infinite request rate: C
    /// clients, each sending its next request when its previous one ends.
    Concurrency {
        max_concurrency: u32,
        num_requests: u32,
        /// From a request's end to its client's next request reaching the engine, ms
        /// (`engine::workload::DEFAULT_CLIENT_ROUND_TRIP_US` when left out).
        #[serde(default = "default_round_trip_ms", skip_serializing_if = "is_default_round_trip_ms")]
        client_round_trip_ms: f64,
    },
    Trace(TraceArrivalDto),
}

fn default_round_trip_ms() -> f64 {
    crate::engine::workload::DEFAULT_CLIENT_ROUND_TRIP_US as f64 / 1e3
}

fn is_default_round_trip_ms(ms: &f64) -> bool {
    *ms == default_round_trip_ms()
}

/// `{"kind": "trace", …}`: a trace's text (`text`, read as `format`; or the older `csv`, read as
/// kvlab's CSV) and the reader's options (`formats::trace::TraceOptions`, docs/TRACES.md). Fields
/// left out are not written back, so older presets serialize as they were.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceArrivalDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TraceFormat>,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_one_in: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<Replica>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_failed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_unit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_block_tokens: Option<u32>,
}

impl Default for ArrivalDto {
    fn default() -> Self {
        match SimConfig::default().workload.arrival {
            Arrival::Poisson { rate_per_s, .. } => ArrivalDto::Poisson { rate_per_s, bursts: Vec::new() },
            Arrival::Trace { .. } | Arrival::Concurrency { .. } => unreachable!("the default workload is Poisson"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstDto {
    pub start_s: f64,
    pub end_s: f64,
    pub rate_per_s: f64,
}

/// A class's prompt or output length: `{ "mean", "p99" }` (a log-normal fitted to them) or
/// `{ "fixed" }` (every request the same length, as `vllm bench serve` sends random prompts of
/// one input and one output length); `formats::preset_config` checks that one form is given.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<u32>,
}

impl DistDto {
    /// A log-normal of this mean and p99.
    pub fn log_normal(mean: f64, p99: f64) -> DistDto {
        DistDto { mean: Some(mean), p99: Some(p99), fixed: None }
    }

    /// The mean length in either form (0 when neither is given).
    pub fn mean_tokens(&self) -> f64 {
        self.fixed.map_or(self.mean.unwrap_or(0.0), f64::from)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassDto {
    #[serde(default = "default_class_name")]
    pub name: String,
    #[serde(default = "default_weight")]
    pub weight: f64,
    pub prompt_tokens: DistDto,
    pub output_tokens: DistDto,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default = "default_n")]
    pub n: u32,
    #[serde(default)]
    pub shared_prefix_tokens: u32,
    /// Tenants, each with a system prompt of its own; left out (1), one for the class. The
    /// page's first module reads no such field: it hands such a preset to the full one.
    #[cfg(feature = "panels")]
    #[serde(default = "default_tenants", skip_serializing_if = "is_one_tenant")]
    pub tenants: u32,
}

#[cfg(feature = "panels")]
fn default_tenants() -> u32 {
    default_class().tenants
}
#[cfg(feature = "panels")]
fn is_one_tenant(t: &u32) -> bool {
    *t == 1
}

fn default_class() -> UserClass {
    SimConfig::default().workload.classes.remove(0)
}
fn default_class_name() -> String {
    default_class().name
}
fn default_weight() -> f64 {
    default_class().weight
}
fn default_max_tokens() -> u32 {
    default_class().max_tokens
}
fn default_n() -> u32 {
    default_class().n
}

impl Default for ClassDto {
    fn default() -> Self {
        ClassDto::from(&default_class())
    }
}

/// Parses and validates a preset. Errors name the field (`scheduler.max_num_seqs`) and the fix.
pub fn parse_preset(json: &str) -> Result<SimConfig, ConfigError> {
    parse_preset_dto(json)?.to_config()
}

/// Parses the JSON into the DTO, naming the path of the first field that does not fit.
pub fn parse_preset_dto(json: &str) -> Result<PresetDto, ConfigError> {
    if json.len() > MAX_PRESET_BYTES {
        return Err(ConfigError::new(
            "",
            format!("the preset is {} bytes; the limit is {} bytes", json.len(), MAX_PRESET_BYTES),
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("not valid JSON ({e})")))?;
    preset_dto_from_value(&value)
}

/// Converts an already parsed JSON value into the DTO: the document must be an object with a
/// `schema`, arrays are refused where objects belong, and errors name the field's path.
pub fn preset_dto_from_value(value: &serde_json::Value) -> Result<PresetDto, ConfigError> {
    match sniff(value) {
        Document::NotAnObject => {
            return Err(ConfigError::new(
                "",
                format!("a preset is a JSON object {{\"schema\": \"{PRESET_SCHEMA}\", …}}"),
            ))
        }
        Document::NoSchema => {
            return Err(ConfigError::new(
                "schema",
                format!("missing; every preset starts with \"schema\": \"{PRESET_SCHEMA}\""),
            ))
        }
        Document::ModelConfig => {
            return Err(ConfigError::new(
                "schema",
                "this is a model's config.json, not a preset; give it as \"model\": {\"hf_config\": …} in a preset, \
                 or open it in the lab's Load dialog (kvlab run, plan and sweep take it as --model-config FILE)",
            ))
        }
        // An exported report carries the whole setup that made it: that preset runs again.
        Document::Report => {
            let setup = value.get("setup").ok_or_else(|| {
                ConfigError::new("setup", "missing; a report exported by the lab carries its setup here")
            })?;
            return preset_dto_from_value(setup).map_err(|e| e.within("setup"));
        }
        Document::Mission => return Err(ConfigError::new(
            "schema",
            "this file is a mission, not a preset; run it with `kvlab mission FILE` or open it as a mission in the lab",
        )),
        _ => {}
    }
    check_preset_json_shape(value)?;
    let dto: PresetDto = from_value_with_path(value)?;
    if dto.schema != PRESET_SCHEMA {
        return Err(ConfigError::new(
            "schema",
            format!("\"{}\" is not a preset schema this lab reads; use \"{PRESET_SCHEMA}\"", dto.schema),
        ));
    }
    Ok(dto)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::*;
    use crate::formats::paths::{pattern, Seg, PRESET_PATHS};

    fn patterns(v: &Value, path: &mut Vec<Seg>, out: &mut BTreeSet<String>) {
        if !path.is_empty() {
            out.insert(pattern(path));
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    path.push(Seg::Key(k.clone()));
                    patterns(x, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    path.push(Seg::Index(i));
                    patterns(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// PRESET_PATHS is exactly the set of paths presets serialize to, across every variant.
    #[test]
    fn preset_paths_match_the_preset_dto() {
        let presets = [
            r#"{"schema": "kvlab/preset@1", "scheduler": {"max_num_seqs": 8, "max_num_batched_tokens": 64},
                "workload": {"arrival": {"kind": "poisson", "rate_per_s": 1,
                "bursts": [{"start_s": 1, "end_s": 2, "rate_per_s": 3}]}, "classes": [{"prompt_tokens":
                {"mean": 9, "p99": 9}, "output_tokens": {"mean": 9, "p99": 9}}]}}"#,
            r#"{"schema": "kvlab/preset@1", "allocator": {"kind": "paged", "prefix_caching": true},
                "kv_memory_gib": 4, "gpu_memory_utilization": 0.9, "gpu_memory_in_use_gib": 1,
                "tensor_parallel_size": 2, "attention_backend": "flash-attn",
                "scheduler": {"watermark": 0.01}, "calibration": "host-xeon-2core",
                "model": {"name": "m", "layers": 1, "kv_heads": 1, "head_dim": 1, "params_b": 1},
                "workload": {"arrival": {"kind": "trace", "csv": ""}, "classes": []}}"#,
            r#"{"schema": "kvlab/preset@1",
                "workload": {"arrival": {"kind": "trace", "format": "vllm-timed", "text": "", "start_s": 1,
                    "end_s": 2, "speed": 2, "sample_one_in": 3, "replica": {"index": 0, "of": 2},
                    "drop_failed": false, "seconds_per_unit": 0.001, "hash_block_tokens": 512}, "classes": []}}"#,
            r#"{"schema": "kvlab/preset@1", "workload": {"arrival": {"kind": "poisson", "rate_per_s": 1},
                "classes": [{"prompt_tokens": {"fixed": 9}, "output_tokens": {"fixed": 9}, "tenants": 4}]},
                "replicas": 4, "router": {"policy": "prefix_aware", "prefix_index": "precise",
                "weights": {"queue": 1, "kv_cache": 1, "prefix": 1}, "overlap_weight": 2}}"#,
            r#"{"schema": "kvlab/preset@1", "until_all_finished": true, "enforce_eager": true,
                "kv_offload": {"cpu_gib": 64, "policy": "lru"}, "clock": "kernels",
                "workload": {"arrival": {"kind": "concurrency", "max_concurrency": 4, "num_requests": 9,
                    "client_round_trip_ms": 0.5},
                "classes": [{"prompt_tokens": {"fixed": 9}, "output_tokens": {"fixed": 9}}]}}"#,
        ];
        let mut found = BTreeSet::new();
        for text in presets {
            let dto = parse_preset_dto(text).expect("valid preset DTO");
            let v = serde_json::to_value(dto).expect("serializes");
            patterns(&v, &mut Vec::new(), &mut found);
        }
        found.remove("schema");
        found.remove("id");
        found.remove("title");
        let listed: BTreeSet<String> = PRESET_PATHS.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(found, listed);
    }
}
