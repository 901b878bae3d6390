//! `PresetDto` ⇄ engine types: the DTO of `kvlab/preset@1` converted into a validated
//! `SimConfig` (unknown model and GPU ids, trace CSV and calibration names are checked here), and
//! the engine's defaults written as DTOs.

use super::calibration::shipped_calibration;
use super::hf_config::{read_hf_config, Overrides};
use super::json::from_value_with_path;
use super::model_catalogue::resolve_model_id;
#[cfg(feature = "panels")]
use super::preset::RouterDto;
use super::preset::{
    AllocatorDto, ArrivalDto, ClassDto, DistDto, GpuObjectDto, ModelObjectDto, PresetDto, SchedulerDto, TraceArrivalDto,
};
use super::trace::{read_trace, Trace, TraceError, TraceFormat, TraceOptions};
use crate::engine::batch_defaults::{batch_limits, BatchSetup};
use crate::engine::config::{AllocatorConfig, ConfigError, EngineVersion, GpuMemoryConfig, SchedulerConfig, SimConfig};
use crate::engine::model::{gpu_preset, GpuSpec, ModelSpec, GPU_IDS};
#[cfg(feature = "kv-offload")]
use crate::engine::offload::KvOffloadConfig;
use crate::engine::startup_checks::{AttentionBackend, ATTENTION_BACKENDS};
use crate::engine::workload::{Arrival, Burst, LengthDist, UserClass, WorkloadConfig};

impl From<&SchedulerConfig> for SchedulerDto {
    fn from(s: &SchedulerConfig) -> SchedulerDto {
        SchedulerDto {
            engine: s.engine.into(),
            max_num_seqs: Some(s.max_num_seqs),
            max_num_batched_tokens: Some(s.max_num_batched_tokens),
            preemption: s.preemption.into(),
            swap_space_gib: s.swap_space_gib,
            max_model_len: s.max_model_len,
            chunked_prefill: s.chunked_prefill,
            watermark: s.watermark,
        }
    }
}

impl SchedulerDto {
    /// The scheduler on `gpu`: the batch limits left out take vLLM's defaults there.
    fn to_config(&self, gpu: &GpuSpec) -> SchedulerConfig {
        let engine = EngineVersion::from(self.engine);
        let setup =
            BatchSetup { engine, gpu, max_model_len: self.max_model_len, chunked_prefill: self.chunked_prefill };
        let (max_num_batched_tokens, max_num_seqs) =
            batch_limits(setup, self.max_num_batched_tokens, self.max_num_seqs);
        SchedulerConfig {
            engine,
            max_num_seqs,
            max_num_batched_tokens,
            preemption: self.preemption.into(),
            swap_space_gib: self.swap_space_gib,
            max_model_len: self.max_model_len,
            chunked_prefill: self.chunked_prefill,
            watermark: self.watermark,
        }
    }
}

impl From<&UserClass> for ClassDto {
    fn from(c: &UserClass) -> ClassDto {
        ClassDto {
            name: c.name.clone(),
            weight: c.weight,
            prompt_tokens: c.prompt_tokens.into(),
            output_tokens: c.output_tokens.into(),
            max_tokens: c.max_tokens,
            n: c.n,
            shared_prefix_tokens: c.shared_prefix_tokens,
            #[cfg(feature = "panels")]
            tenants: c.tenants,
        }
    }
}

/// Class `i` of the preset, its lengths checked for one form each.
fn user_class(i: usize, c: &ClassDto) -> Result<UserClass, ConfigError> {
    let field = |name: &str| format!("workload.classes[{i}].{name}");
    Ok(UserClass {
        name: c.name.clone(),
        weight: c.weight,
        prompt_tokens: length_dist(&c.prompt_tokens, &field("prompt_tokens"))?,
        output_tokens: length_dist(&c.output_tokens, &field("output_tokens"))?,
        max_tokens: c.max_tokens,
        n: c.n,
        shared_prefix_tokens: c.shared_prefix_tokens,
        #[cfg(feature = "panels")]
        tenants: c.tenants,
        #[cfg(not(feature = "panels"))]
        tenants: 1,
    })
}

/// A length as the engine draws it: a fixed length is a log-normal whose p99 is its mean (no
/// spread: every draw is that length, and it takes the same random numbers as any other
/// length, so the draws after it do not move).
fn length_dist(d: &DistDto, field: &str) -> Result<LengthDist, ConfigError> {
    match (d.fixed, d.mean, d.p99) {
        (Some(0), ..) => Err(ConfigError::new(format!("{field}.fixed"), "must be at least 1 token")),
        (Some(n), None, None) => Ok(LengthDist { mean: f64::from(n), p99: f64::from(n) }),
        (Some(_), ..) => Err(ConfigError::new(
            field,
            "give either { \"fixed\": N } (every request N tokens) or { \"mean\", \"p99\" } (a log-normal), not both",
        )),
        (None, Some(mean), Some(p99)) => Ok(LengthDist { mean, p99 }),
        (None, Some(_), None) => Err(ConfigError::new(
            format!("{field}.p99"),
            "missing: give the 99th percentile with the mean (equal to it, or { \"fixed\": N }, for one length)",
        )),
        (None, None, Some(_)) => {
            Err(ConfigError::new(format!("{field}.mean"), "missing: give the mean with the 99th percentile"))
        }
        (None, None, None) => Err(ConfigError::new(
            field,
            "give { \"mean\", \"p99\" } (a log-normal) or { \"fixed\": N } (every request N tokens)",
        )),
    }
}

impl From<LengthDist> for DistDto {
    fn from(d: LengthDist) -> Self {
        DistDto::log_normal(d.mean, d.p99)
    }
}

impl ArrivalDto {
    fn to_arrival(&self) -> Result<Arrival, ConfigError> {
        Ok(match self {
            ArrivalDto::Poisson { rate_per_s, bursts } => Arrival::Poisson {
                rate_per_s: *rate_per_s,
                bursts: bursts
                    .iter()
                    .map(|b| Burst { start_s: b.start_s, end_s: b.end_s, rate_per_s: b.rate_per_s })
                    .collect(),
            },
            ArrivalDto::Concurrency { max_concurrency, num_requests, client_round_trip_ms } => {
                let ms = *client_round_trip_ms;
                if !(ms.is_finite() && (0.0..=60_000.0).contains(&ms)) {
                    return Err(ConfigError::new(
                        "workload.arrival.client_round_trip_ms",
                        format!("{ms} is out of range; use 0 to 60000 ms"),
                    ));
                }
                Arrival::Concurrency {
                    max_concurrency: *max_concurrency,
                    num_requests: *num_requests,
                    round_trip_us: libm::round(ms * 1e3) as u64,
                }
            }
            ArrivalDto::Trace(t) => {
                let trace = t.read()?;
                Arrival::Trace {
                    rows: trace.rows.into(),
                    max_tokens: t.max_tokens,
                    hash_block_tokens: trace.hash_block_tokens,
                }
            }
        })
    }
}

impl TraceArrivalDto {
    /// The reader's options this arrival gives (the older `csv` field reads kvlab's CSV unless a
    /// `format` says otherwise).
    pub fn options(&self) -> TraceOptions {
        let d = TraceOptions::default();
        let format = self.format.unwrap_or(if self.csv.is_some() { TraceFormat::Kvlab } else { TraceFormat::Auto });
        TraceOptions {
            format,
            start_s: self.start_s.unwrap_or(d.start_s),
            end_s: self.end_s,
            speed: self.speed.unwrap_or(d.speed),
            sample_one_in: self.sample_one_in.unwrap_or(d.sample_one_in),
            replica: self.replica,
            drop_failed: self.drop_failed.unwrap_or(d.drop_failed),
            seconds_per_unit: self.seconds_per_unit.unwrap_or(d.seconds_per_unit),
            hash_block_tokens: self.hash_block_tokens.unwrap_or(d.hash_block_tokens),
        }
    }

    /// The trace this arrival names, read; errors name `workload.arrival.text` (or `.csv`) with
    /// the line and column, or the option's path.
    pub fn read(&self) -> Result<Trace, ConfigError> {
        if !cfg!(feature = "panels") {
            // The page's first module has no trace readers (`Command::needs_panels` sends a
            // preset with a trace to the full one).
            return Err(ConfigError::new("workload.arrival", "a trace is read by the full lab"));
        }
        let (field, text) = match (&self.csv, &self.text) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new("workload.arrival.text", "give the trace as text or as csv, not both"))
            }
            (Some(csv), None) => ("workload.arrival.csv", csv),
            (None, Some(text)) => ("workload.arrival.text", text),
            (None, None) => {
                return Err(ConfigError::new("workload.arrival.text", "give the trace's text (or csv for kvlab's CSV)"))
            }
        };
        read_trace(text, &self.options()).map_err(|e| match e {
            TraceError::Text(m) => ConfigError::new(field, m),
            TraceError::Option(o) => ConfigError::new(format!("workload.arrival.{}", o.option), o.message),
        })
    }
}

impl PresetDto {
    /// `to_config`, and when the arrivals are a trace, the line that says what was read
    /// (`Trace::describe`).
    pub fn to_config_with_trace(&self) -> Result<(SimConfig, Option<String>), ConfigError> {
        let line = match &self.workload.arrival {
            ArrivalDto::Trace(t) => Some(t.read()?.describe()),
            ArrivalDto::Poisson { .. } | ArrivalDto::Concurrency { .. } => None,
        };
        Ok((self.to_config()?, line))
    }
}

fn parse_model(v: &serde_json::Value) -> Result<ModelSpec, ConfigError> {
    match v {
        serde_json::Value::String(id) => resolve_model_id(id).map_err(|m| {
            ConfigError::new(
                "model",
                format!("{m}, an object {{layers, kv_heads, head_dim, params_b}} or {{\"hf_config\": <config.json>}}"),
            )
        }),
        serde_json::Value::Object(map) if map.contains_key("hf_config") => parse_hf_model(map),
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
                arch: None,
            })
        }
        _ => Err(ConfigError::new(
            "model",
            "use a model id string, an object {layers, kv_heads, head_dim, params_b} or {\"hf_config\": <config.json>}",
        )),
    }
}

/// `"gpu"`: an id of the catalogue, or an object of a GPU's figures; errors name the field.
fn parse_gpu(v: &serde_json::Value) -> Result<GpuSpec, ConfigError> {
    let fields = "{name, memory_gib, total_memory_gib, mem_bandwidth_gb_s, peak_tflops, fp8_tflops, pcie_gb_s, interconnect_gb_s}";
    let g: GpuObjectDto = match v {
        serde_json::Value::String(id) => {
            return gpu_preset(id).ok_or_else(|| {
                ConfigError::new(
                    "gpu",
                    format!("unknown GPU \"{id}\"; use one of {} or an object {fields}", GPU_IDS.join(", ")),
                )
            })
        }
        serde_json::Value::Object(_) => from_value_with_path(v).map_err(|e| {
            // serde names a missing field in its message only: put it in the path.
            let missing = e.message.strip_prefix("missing field `").and_then(|m| m.split('`').next());
            match missing {
                Some(f) => ConfigError::new(
                    format!("gpu.{f}"),
                    "missing; a custom GPU needs memory_gib, mem_bandwidth_gb_s and peak_tflops".to_string(),
                ),
                None if e.field.is_empty() => ConfigError::new("gpu", e.message),
                None => ConfigError::new(format!("gpu.{}", e.field), e.message),
            }
        })?,
        _ => return Err(ConfigError::new("gpu", format!("use a GPU id string or an object {fields}"))),
    };
    let range = |field: &str, x: f64, lo: f64, hi: f64| {
        if x.is_finite() && (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(ConfigError::new(
                format!("gpu.{field}"),
                format!("{x} is out of range; use a number from {lo} to {hi}"),
            ))
        }
    };
    let memory_gib = range("memory_gib", g.memory_gib, 1.0, 4096.0)?;
    let total = range("total_memory_gib", g.total_memory_gib.unwrap_or(memory_gib * 0.99), 1.0, memory_gib)?;
    let pcie = range("pcie_gb_s", g.pcie_gb_s, 0.1, 10_000.0)?;
    Ok(GpuSpec {
        id: if g.name.is_empty() { "custom".into() } else { g.name.clone() },
        name: if g.name.is_empty() { "custom GPU".into() } else { g.name },
        memory_gib,
        total_memory_gib: total,
        mem_bandwidth_gb_s: range("mem_bandwidth_gb_s", g.mem_bandwidth_gb_s, 1.0, 100_000.0)?,
        peak_tflops: range("peak_tflops", g.peak_tflops, 0.1, 100_000.0)?,
        fp8_tflops: range("fp8_tflops", g.fp8_tflops, 0.0, 100_000.0)?,
        pcie_gb_s: pcie,
        interconnect_gb_s: range("interconnect_gb_s", g.interconnect_gb_s.unwrap_or(pcie), 0.1, 100_000.0)?,
        interconnect: if g.interconnect_gb_s.is_some() { "custom".into() } else { "PCIe".into() },
    })
}

/// `"model": {"hf_config": {…}, "dtype": "…", "quantization": "…", "name": "…"}`: a model read
/// from its config.json (`hf_config.rs`), with vLLM's `--dtype` and `--quantization`.
fn parse_hf_model(map: &serde_json::Map<String, serde_json::Value>) -> Result<ModelSpec, ConfigError> {
    // The first module hands such a preset to the full one (`Command::needs_panels`).
    if !cfg!(feature = "panels") {
        return Err(ConfigError::new("model.hf_config", "a config.json is read by the full lab, which is not loaded"));
    }
    const KEYS: [&str; 4] = ["hf_config", "dtype", "quantization", "name"];
    if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(ConfigError::new(
            format!("model.{k}"),
            "unknown field; use hf_config, dtype, quantization or name",
        ));
    }
    let text = |key: &str| -> Result<Option<&str>, ConfigError> {
        match map.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(ConfigError::new(format!("model.{key}"), format!("{v} is not a string"))),
        }
    };
    let overrides = Overrides { dtype: text("dtype")?, quantization: text("quantization")? };
    let config = &map["hf_config"];
    let arch = read_hf_config(config, overrides).map_err(|e| {
        let field = match e.field.as_str() {
            "dtype" | "quantization" => format!("model.{}", e.field),
            "" => "model.hf_config".to_string(),
            f => format!("model.hf_config.{f}"),
        };
        ConfigError::new(field, e.message)
    })?;
    let name = text("name")?
        .or(config.get("_name_or_path").and_then(serde_json::Value::as_str))
        .unwrap_or(&arch.architecture)
        .to_string();
    Ok(ModelSpec::from_arch(name, arch))
}

impl PresetDto {
    /// `(max_num_batched_tokens, max_num_seqs)` as the run will take them: the preset's, or
    /// vLLM's defaults on its GPU (None while the GPU is not a valid one).
    pub fn batch_limits(&self) -> Option<(u32, u32)> {
        let s = self.scheduler.to_config(&parse_gpu(&self.gpu.0).ok()?);
        Some((s.max_num_batched_tokens, s.max_num_seqs))
    }

    /// The validated configuration this preset describes; errors name the preset path.
    pub fn to_config(&self) -> Result<SimConfig, ConfigError> {
        let gpu = parse_gpu(&self.gpu.0)?;
        let scheduler = self.scheduler.to_config(&gpu);
        let allocator = match self.allocator {
            AllocatorDto::Contiguous { reserve, fit } => {
                AllocatorConfig::Contiguous { reserve: reserve.into(), fit: fit.into() }
            }
            AllocatorDto::Paged { block_size, prefix_caching } => AllocatorConfig::Paged {
                block_size,
                prefix_caching: prefix_caching
                    .unwrap_or(EngineVersion::from(self.scheduler.engine).default_prefix_caching()),
            },
        };
        let arrival = self.workload.arrival.to_arrival()?;
        let classes =
            self.workload.classes.iter().enumerate().map(|(i, c)| user_class(i, c)).collect::<Result<_, _>>()?;
        let (kv_memory_gib, gpu_memory) = self.kv_memory()?;
        let attention_backend = self.attention_backend()?;
        let mut config = SimConfig {
            id: if self.id.is_empty() { "custom".into() } else { self.id.clone() },
            title: self.title.clone(),
            seed: self.seed,
            duration_s: self.duration_s,
            model: parse_model(&self.model)?,
            kv_dtype: self.kv_dtype.into(),
            gpu,
            kv_memory_gib,
            gpu_memory,
            tensor_parallel_size: self.tensor_parallel_size,
            attention_backend,
            allocator,
            scheduler,
            workload: WorkloadConfig { arrival, classes },
            calibration: self
                .calibration
                .as_deref()
                .map(|n| shipped_calibration(n).map(|c| c.step_time()))
                .transpose()?,
            #[cfg(feature = "kernel-clock")]
            kernels: None,
            until_all_finished: self.until_all_finished,
            enforce_eager: self.enforce_eager,
            #[cfg(feature = "kv-offload")]
            kv_offload: self.kv_offload.as_ref().map(|o| KvOffloadConfig { cpu_gib: o.cpu_gib, policy: o.policy }),
            #[cfg(not(feature = "kv-offload"))]
            kv_offload: None,
            #[cfg(feature = "panels")]
            replicas: self.replicas,
            #[cfg(feature = "panels")]
            router: self.router.as_ref().map(RouterDto::to_config).unwrap_or_default(),
            #[cfg(not(feature = "panels"))]
            replicas: 1,
            #[cfg(not(feature = "panels"))]
            router: Default::default(),
        };
        // A refusal of the derived memory waits until every field is known to be valid: only a
        // well-formed setup is "refused by vLLM".
        let derived = config.derive_kv_memory();
        if let Err(e) = &derived {
            if !e.startup_refusal {
                return Err(e.clone());
            }
        }
        config.validate_fields()?;
        derived?;
        config.validate()?;
        #[cfg(feature = "kernel-clock")]
        if self.clock == super::preset::ClockDto::Kernels {
            return super::kernel_tables::ask_for_kernels(config);
        }
        Ok(config)
    }

    /// `kv_memory_gib` as given, or derived later from the GPU (`gpu_memory_utilization`): never
    /// both, and `gpu_memory_in_use_gib` only with the utilization.
    fn kv_memory(&self) -> Result<(f64, Option<GpuMemoryConfig>), ConfigError> {
        let (kv_memory_gib, gpu_memory) = match (self.kv_memory_gib, self.gpu_memory_utilization) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "gpu_memory_utilization",
                    "give kv_memory_gib or gpu_memory_utilization, not both: with the utilization, the KV memory is what vLLM leaves on the GPU",
                ))
            }
            (Some(kv), None) => (kv, None),
            (None, Some(u)) => (
                0.0,
                Some(GpuMemoryConfig { gpu_memory_utilization: u, gpu_memory_in_use_gib: self.gpu_memory_in_use_gib }),
            ),
            (None, None) => (SimConfig::default().kv_memory_gib, None),
        };
        if gpu_memory.is_none() && self.gpu_memory_in_use_gib != 0.0 {
            return Err(ConfigError::new(
                "gpu_memory_in_use_gib",
                "only counts with gpu_memory_utilization (the KV memory derived from the GPU); remove it or give the utilization",
            ));
        }
        Ok((kv_memory_gib, gpu_memory))
    }

    /// The pinned attention backend, if the preset names one.
    fn attention_backend(&self) -> Result<Option<AttentionBackend>, ConfigError> {
        self.attention_backend
            .as_deref()
            .map(|id| {
                AttentionBackend::from_id(id).ok_or_else(|| {
                    ConfigError::new(
                        "attention_backend",
                        format!(
                            "unknown backend \"{id}\"; use one of {}",
                            ATTENTION_BACKENDS.iter().map(|b| b.id()).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })
            })
            .transpose()
    }
}
