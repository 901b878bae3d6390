//! Preset JSON (`kvlab/preset@1`) at the edge: serde DTOs that mirror the file instructors write,
//! converted into a validated `SimConfig`. Every error names the field by its path
//! (`workload.classes[0].output_tokens.p99`) and says what would be accepted.

use serde::{Deserialize, Serialize};

use super::alloc::Fit;
use super::calibrations::shipped_calibration;
use super::config::{AllocatorConfig, ConfigError, PreemptionMode, Reserve, SchedulerConfig, SimConfig};
use super::model::{gpu_preset, model_preset, KvDtype, ModelSpec, GPU_IDS, MODEL_IDS};
use super::workload::{parse_trace_csv, Arrival, Burst, LengthDist, UserClass, WorkloadConfig};

pub const PRESET_SCHEMA: &str = "kvlab/preset@1";
/// Largest preset text accepted (a trace CSV inlined in a preset included).
pub const MAX_PRESET_BYTES: usize = 4 << 20;

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
    #[serde(default = "default_gpu")]
    pub gpu: String,
    #[serde(default = "default_kv_memory")]
    pub kv_memory_gib: f64,
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
}

fn default_seed() -> u64 {
    1
}
fn default_duration() -> f64 {
    60.0
}
fn default_model() -> serde_json::Value {
    serde_json::Value::String("llama-3-8b".into())
}
fn default_gpu() -> String {
    "h100-sxm".into()
}
fn default_kv_memory() -> f64 {
    10.0
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtypeDto {
    #[default]
    Fp16,
    Fp8,
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
        #[serde(default)]
        prefix_caching: bool,
    },
}

fn default_block_size() -> u32 {
    16
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerDto {
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub preemption: PreemptionDto,
    pub swap_space_gib: f64,
    pub max_model_len: u32,
    pub chunked_prefill: bool,
    pub watermark: f64,
}

impl Default for SchedulerDto {
    fn default() -> Self {
        let s = SchedulerConfig::default();
        SchedulerDto {
            max_num_seqs: s.max_num_seqs,
            max_num_batched_tokens: s.max_num_batched_tokens,
            preemption: PreemptionDto::Recompute,
            swap_space_gib: s.swap_space_gib,
            max_model_len: s.max_model_len,
            chunked_prefill: s.chunked_prefill,
            watermark: s.watermark,
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
    Trace {
        csv: String,
        #[serde(default = "default_max_tokens")]
        max_tokens: u32,
    },
}

impl Default for ArrivalDto {
    fn default() -> Self {
        ArrivalDto::Poisson { rate_per_s: 8.0, bursts: Vec::new() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstDto {
    pub start_s: f64,
    pub end_s: f64,
    pub rate_per_s: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistDto {
    pub mean: f64,
    pub p99: f64,
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
}

fn default_class_name() -> String {
    "chat".into()
}
fn default_weight() -> f64 {
    1.0
}
fn default_max_tokens() -> u32 {
    2048
}
fn default_n() -> u32 {
    1
}

impl Default for ClassDto {
    fn default() -> Self {
        ClassDto {
            name: default_class_name(),
            weight: 1.0,
            prompt_tokens: DistDto { mean: 1100.0, p99: 2600.0 },
            output_tokens: DistDto { mean: 250.0, p99: 1150.0 },
            max_tokens: 2048,
            n: 1,
            shared_prefix_tokens: 0,
        }
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
    let Some(map) = value.as_object() else {
        return Err(ConfigError::new("", format!("a preset is a JSON object {{\"schema\": \"{PRESET_SCHEMA}\", …}}")));
    };
    match map.get("schema") {
        None => {
            return Err(ConfigError::new(
                "schema",
                format!("missing; every preset starts with \"schema\": \"{PRESET_SCHEMA}\""),
            ))
        }
        Some(serde_json::Value::String(s)) if s == super::mission::MISSION_SCHEMA => return Err(ConfigError::new(
            "schema",
            "this file is a mission, not a preset; run it with `kvlab mission FILE` or open it as a mission in the lab",
        )),
        _ => {}
    }
    super::mission::check_preset_json_shape(value)?;
    let dto: PresetDto = from_value_with_path(value)?;
    if dto.schema != PRESET_SCHEMA {
        return Err(ConfigError::new(
            "schema",
            format!("\"{}\" is not a preset schema this lab reads; use \"{PRESET_SCHEMA}\"", dto.schema),
        ));
    }
    Ok(dto)
}

/// serde_json with the failing field's path in the error. The text is parsed into a JSON value
/// first and every DTO is read from a value, so each DTO's deserializer exists once in the wasm
/// bundle (not once per input type).
pub fn from_json_with_path<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ConfigError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ConfigError::new("", format!("not valid JSON ({e})")))?;
    from_value_with_path(&value)
}

/// Reads a DTO from a parsed JSON value, naming the failing field's path.
pub fn from_value_with_path<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ConfigError::new(if path == "." { String::new() } else { path }, e.into_inner().to_string())
    })
}

fn parse_model(v: &serde_json::Value) -> Result<ModelSpec, ConfigError> {
    match v {
        serde_json::Value::String(id) => model_preset(id).ok_or_else(|| {
            ConfigError::new(
                "model",
                format!(
                    "unknown model \"{id}\"; use one of {} or an object {{layers, kv_heads, head_dim, params_b}}",
                    MODEL_IDS.join(", ")
                ),
            )
        }),
        serde_json::Value::Object(_) => {
            let m: ModelObjectDto = from_value_with_path(v).map_err(|e| {
                let field = if e.field.is_empty() { "model".to_string() } else { format!("model.{}", e.field) };
                ConfigError::new(field, e.message)
            })?;
            Ok(ModelSpec {
                id: if m.name.is_empty() { "custom".into() } else { m.name },
                layers: m.layers,
                kv_heads: m.kv_heads,
                head_dim: m.head_dim,
                params_b: m.params_b,
            })
        }
        _ => {
            Err(ConfigError::new("model", "use a model id string or an object {layers, kv_heads, head_dim, params_b}"))
        }
    }
}

impl PresetDto {
    pub fn to_config(&self) -> Result<SimConfig, ConfigError> {
        let gpu = gpu_preset(&self.gpu).ok_or_else(|| {
            ConfigError::new("gpu", format!("unknown GPU \"{}\"; use one of {}", self.gpu, GPU_IDS.join(", ")))
        })?;
        let allocator = match self.allocator {
            AllocatorDto::Contiguous { reserve, fit } => AllocatorConfig::Contiguous {
                reserve: match reserve {
                    ReserveDto::PromptPlusMaxTokens => Reserve::PromptPlusMaxTokens,
                    ReserveDto::MaxModelLen => Reserve::MaxModelLen,
                },
                fit: match fit {
                    FitDto::FirstFit => Fit::FirstFit,
                    FitDto::BestFit => Fit::BestFit,
                },
            },
            AllocatorDto::Paged { block_size, prefix_caching } => AllocatorConfig::Paged { block_size, prefix_caching },
        };
        let s = &self.scheduler;
        let arrival = match &self.workload.arrival {
            ArrivalDto::Poisson { rate_per_s, bursts } => Arrival::Poisson {
                rate_per_s: *rate_per_s,
                bursts: bursts
                    .iter()
                    .map(|b| Burst { start_s: b.start_s, end_s: b.end_s, rate_per_s: b.rate_per_s })
                    .collect(),
            },
            ArrivalDto::Trace { csv, max_tokens } => Arrival::Trace {
                rows: parse_trace_csv(csv).map_err(|e| ConfigError::new("workload.arrival.csv", e))?,
                max_tokens: *max_tokens,
            },
        };
        let classes = self
            .workload
            .classes
            .iter()
            .map(|c| UserClass {
                name: c.name.clone(),
                weight: c.weight,
                prompt_tokens: LengthDist { mean: c.prompt_tokens.mean, p99: c.prompt_tokens.p99 },
                output_tokens: LengthDist { mean: c.output_tokens.mean, p99: c.output_tokens.p99 },
                max_tokens: c.max_tokens,
                n: c.n,
                shared_prefix_tokens: c.shared_prefix_tokens,
            })
            .collect();
        let config = SimConfig {
            id: if self.id.is_empty() { "custom".into() } else { self.id.clone() },
            title: self.title.clone(),
            seed: self.seed,
            duration_s: self.duration_s,
            model: parse_model(&self.model)?,
            kv_dtype: match self.kv_dtype {
                KvDtypeDto::Fp16 => KvDtype::Fp16,
                KvDtypeDto::Fp8 => KvDtype::Fp8,
            },
            gpu,
            kv_memory_gib: self.kv_memory_gib,
            allocator,
            scheduler: SchedulerConfig {
                max_num_seqs: s.max_num_seqs,
                max_num_batched_tokens: s.max_num_batched_tokens,
                preemption: match s.preemption {
                    PreemptionDto::Recompute => PreemptionMode::Recompute,
                    PreemptionDto::Swap => PreemptionMode::Swap,
                },
                swap_space_gib: s.swap_space_gib,
                max_model_len: s.max_model_len,
                chunked_prefill: s.chunked_prefill,
                watermark: s.watermark,
            },
            workload: WorkloadConfig { arrival, classes },
            calibration: self.calibration.as_deref().map(shipped_calibration).transpose()?,
        };
        config.validate()?;
        Ok(config)
    }
}
