//! Kernel table files (`kvlab/kernels@1`, `assets/kernels/<gpu>.json`, written by
//! `scripts/kernel-tables.py` from NVIDIA AIConfigurator's vLLM kernel database): their reading
//! and validation (errors name the table and the field), the tables shipped with the native
//! build, and a preset's `clock: "kernels"` checked and attached to its configuration. The page
//! does not carry the tables: its full module fetches the one a run needs.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::json::from_json_with_path;
use crate::engine::clock::kernels::{
    MoeDtype, MoeTable, Table, ALL_REDUCE_AXES, CONTEXT_AXES, DECODE_AXES, GEMM_AXES, MOE_AXES,
};
use crate::engine::clock::KernelTables;
use crate::engine::config::ConfigError;

/// The schema a kernel table file names.
pub const KERNELS_SCHEMA: &str = "kvlab/kernels@1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelsDto {
    schema: String,
    gpu: String,
    system: String,
    vllm: String,
    nccl: String,
    #[allow(dead_code)]
    source: serde_json::Value,
    #[allow(dead_code)]
    generated_by: String,
    tables: BTreeMap<String, TableDto>,
    #[serde(default)]
    moe: Vec<MoeDto>,
}

/// One model shape's fused MoE table (`scripts/kernel-tables.py --moe`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoeDto {
    dtype: String,
    hidden: u32,
    inter: u32,
    topk: u32,
    experts: u32,
    /// The vLLM kernel measured and the routing's skew: read by people.
    #[allow(dead_code)]
    kernel: String,
    #[allow(dead_code)]
    distribution: String,
    table: TableDto,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableDto {
    axes: Vec<AxisDto>,
    #[allow(dead_code)]
    filled: u64,
    us: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisDto {
    name: String,
    points: Vec<f64>,
}

/// Parses and checks a kernel table file.
pub fn parse_kernel_tables(json: &str) -> Result<KernelTables, ConfigError> {
    let dto: KernelsDto = from_json_with_path(json)?;
    if dto.schema != KERNELS_SCHEMA {
        return Err(ConfigError::new(
            "schema",
            format!("\"{}\" is not a kernel table file; expected \"{KERNELS_SCHEMA}\"", dto.schema),
        ));
    }
    if crate::engine::model::gpu_preset(&dto.gpu).is_none() {
        return Err(ConfigError::new("gpu", format!("unknown GPU \"{}\"; use a GPU id of the catalogue", dto.gpu)));
    }
    let mut tables = dto.tables;
    let mut take = |name: &str, axes: &[&str]| -> Result<Option<Table>, ConfigError> {
        let Some(t) = tables.remove(name) else { return Ok(None) };
        read_table(t, &format!("tables.{name}"), name, axes).map(Some)
    };
    let required = |t: Option<Table>, name: &str| {
        t.ok_or_else(|| ConfigError::new(format!("tables.{name}"), "missing; every kernel file has this table"))
    };
    let k = KernelTables {
        gemm_bf16: required(take("gemm_bf16", &GEMM_AXES)?, "gemm_bf16")?,
        gemm_fp8: take("gemm_fp8", &GEMM_AXES)?,
        context_bf16kv: required(take("context_bf16kv", &CONTEXT_AXES)?, "context_bf16kv")?,
        context_fp8kv: take("context_fp8kv", &CONTEXT_AXES)?,
        decode_bf16kv: required(take("decode_bf16kv", &DECODE_AXES)?, "decode_bf16kv")?,
        decode_fp8kv: take("decode_fp8kv", &DECODE_AXES)?,
        custom_all_reduce: take("custom_all_reduce", &ALL_REDUCE_AXES)?,
        nccl_all_reduce: take("nccl_all_reduce", &ALL_REDUCE_AXES)?,
        moe: read_moe(dto.moe)?,
        gpu: dto.gpu,
        system: dto.system,
        vllm: dto.vllm,
        nccl: dto.nccl,
    };
    if let Some(name) = tables.keys().next() {
        return Err(ConfigError::new(format!("tables.{name}"), "unknown table; remove it"));
    }
    Ok(k)
}

/// A table with the axes a `kind` table has; errors name `field`.
fn read_table(t: TableDto, field: &str, kind: &str, axes: &[&str]) -> Result<Table, ConfigError> {
    let names: Vec<&str> = t.axes.iter().map(|a| a.name.as_str()).collect();
    if names != axes {
        return Err(ConfigError::new(
            format!("{field}.axes"),
            format!("the axes are {names:?}; a {kind} table has {axes:?}, in that order"),
        ));
    }
    Table::new(t.axes.into_iter().map(|a| a.points).collect(), &t.us).map_err(|e| ConfigError::new(field, e.0))
}

/// The MoE tables, each model shape once.
fn read_moe(moe: Vec<MoeDto>) -> Result<Vec<MoeTable>, ConfigError> {
    let mut out: Vec<MoeTable> = Vec::with_capacity(moe.len());
    for (i, m) in moe.into_iter().enumerate() {
        let field = format!("moe[{i}]");
        let dtype = MoeDtype::from_name(&m.dtype).ok_or_else(|| {
            ConfigError::new(
                format!("{field}.dtype"),
                format!("\"{}\" is not a MoE dtype kvlab prices; use bfloat16, fp8, fp8_block or w4a16_mxfp4", m.dtype),
            )
        })?;
        if out.iter().any(|o| o.shape() == (dtype, m.hidden, m.inter, m.topk, m.experts)) {
            return Err(ConfigError::new(field, "a second table of the same MoE shape; keep one"));
        }
        let table = read_table(m.table, &format!("{field}.table"), "moe", &MOE_AXES)?;
        out.push(MoeTable { dtype, hidden: m.hidden, inter: m.inter, topk: m.topk, experts: m.experts, table });
    }
    Ok(out)
}

/// The GPUs kvlab has kernel tables for (`assets/kernels/<gpu>.json`).
pub const KERNEL_GPUS: [&str; 5] = ["h100-sxm", "h200", "b200", "l40s", "a100-80gb"];

/// The shipped kernel tables of `gpu_id`, when the database covers it (native builds with the
/// kernel clock: the page fetches them). Each GPU's file is read once a process.
#[cfg(all(feature = "kernel-clock", not(target_arch = "wasm32")))]
pub fn shipped_kernel_tables(gpu_id: &str) -> Option<std::sync::Arc<KernelTables>> {
    use std::sync::{Arc, OnceLock};
    static READ: [OnceLock<Arc<KernelTables>>; KERNEL_GPUS.len()] = [const { OnceLock::new() }; KERNEL_GPUS.len()];
    let i = KERNEL_GPUS.iter().position(|g| *g == gpu_id)?;
    let text = crate::shipped::kernel_tables(gpu_id)?;
    let tables = READ[i].get_or_init(|| {
        Arc::new(parse_kernel_tables(text).unwrap_or_else(|e| panic!("assets/kernels/{gpu_id}.json: {e}")))
    });
    Some(Arc::clone(tables))
}

/// Where this build's kernel tables of a GPU stand: native builds carry every covered GPU's; the
/// page's full module has a GPU's once it fetched its file ([`fetched`], [`fetch_failed`]).
#[cfg(feature = "kernel-clock")]
#[derive(Clone)]
pub enum TablesAtHand {
    Ready(std::sync::Arc<KernelTables>),
    /// Not fetched yet.
    Missing,
    /// The fetch or the file failed, in these words.
    Failed(String),
}

/// The kernel tables of `gpu_id` this build has at hand.
#[cfg(feature = "kernel-clock")]
pub fn tables_at_hand(gpu_id: &str) -> TablesAtHand {
    #[cfg(not(target_arch = "wasm32"))]
    return shipped_kernel_tables(gpu_id).map_or(TablesAtHand::Missing, TablesAtHand::Ready);
    #[cfg(target_arch = "wasm32")]
    FETCHED.with(|f| f.borrow().get(gpu_id).cloned().unwrap_or(TablesAtHand::Missing))
}

#[cfg(all(feature = "kernel-clock", target_arch = "wasm32"))]
thread_local! {
    /// The tables the page fetched (`kernels/<gpu>.json`), or why it could not, by GPU id.
    static FETCHED: std::cell::RefCell<BTreeMap<String, TablesAtHand>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

/// The page fetched `kernels/<gpu_id>.json`: its tables are at hand from now on; a file that does
/// not read, or holds another GPU's tables, is a failed fetch, in its error's words.
#[cfg(all(feature = "kernel-clock", target_arch = "wasm32"))]
pub fn fetched(gpu_id: &str, text: &str) {
    let at_hand = match parse_kernel_tables(text) {
        Ok(t) if t.gpu == gpu_id => TablesAtHand::Ready(std::sync::Arc::new(t)),
        Ok(t) => TablesAtHand::Failed(format!("kernels/{gpu_id}.json holds the tables of the {}", t.gpu)),
        Err(e) => TablesAtHand::Failed(format!("kernels/{gpu_id}.json: {e}")),
    };
    FETCHED.with(|f| f.borrow_mut().insert(gpu_id.to_string(), at_hand));
}

/// The page could not fetch `kernels/<gpu_id>.json`, for `why`: its runs stay on the roofline.
#[cfg(all(feature = "kernel-clock", target_arch = "wasm32"))]
pub fn fetch_failed(gpu_id: &str, why: &str) {
    FETCHED.with(|f| f.borrow_mut().insert(gpu_id.to_string(), TablesAtHand::Failed(why.to_string())));
}

/// `config` with its GPU's shipped kernel tables, and a lab model (known by its sizes) with its
/// catalogue twin's architecture, which the tables price (`LAB_MODEL_TWINS`). A configuration
/// they cannot price keeps the roofline (`SimConfig::runs_on_kernels`).
#[cfg(all(feature = "kernel-clock", not(target_arch = "wasm32")))]
pub fn with_kernels(config: crate::engine::SimConfig) -> crate::engine::SimConfig {
    let tables = shipped_kernel_tables(&config.gpu.id);
    with_tables(config, tables)
}

#[cfg(feature = "kernel-clock")]
fn with_tables(
    mut config: crate::engine::SimConfig,
    tables: Option<std::sync::Arc<KernelTables>>,
) -> crate::engine::SimConfig {
    config.kernels = tables;
    if config.model.arch.is_none() {
        config.model.arch = lab_model_twin(&config.model).map(Box::new);
    }
    config
}

/// A preset's `clock: "kernels"`, checked as far as it can be before the GPU's tables are at
/// hand (a GPU with tables, no calibration file, which prices steps its own way) and priced from
/// the tables where they are ([`attach_kernels`]); on the page, until its GPU's file is fetched,
/// the configuration stays on the roofline (`session::kernel_clock` says so).
#[cfg(feature = "kernel-clock")]
pub fn ask_for_kernels(config: crate::engine::SimConfig) -> Result<crate::engine::SimConfig, ConfigError> {
    let gpu = &config.gpu.id;
    if !KERNEL_GPUS.contains(&gpu.as_str()) {
        return Err(ConfigError::new(
            "clock",
            format!(
                "kvlab has no measured kernel tables for the {gpu} (it has them for the {}); set clock to \"roofline\"",
                KERNEL_GPUS.join(", ")
            ),
        ));
    }
    if config.calibration.is_some() {
        return Err(ConfigError::new(
            "clock",
            "a calibration prices steps with its own measured constants; leave calibration out for the kernel tables, or set clock to \"roofline\"",
        ));
    }
    if config.model.arch.is_none() && lab_model_twin(&config.model).is_none() {
        return Err(ConfigError::new(
            "clock",
            format!(
                "the kernel tables price a model by its architecture, and {} is known by its sizes alone with no twin in the catalogue; pick a model of the catalogue, or set clock to \"roofline\"",
                config.model.id
            ),
        ));
    }
    match tables_at_hand(gpu) {
        TablesAtHand::Ready(tables) => attach_kernels(config, tables),
        TablesAtHand::Missing | TablesAtHand::Failed(_) => Ok(config),
    }
}

/// `config` priced from `tables` (its GPU's), or an error naming `clock` where they cannot price
/// its model.
#[cfg(feature = "kernel-clock")]
pub fn attach_kernels(
    config: crate::engine::SimConfig,
    tables: std::sync::Arc<KernelTables>,
) -> Result<crate::engine::SimConfig, ConfigError> {
    let config = with_tables(config, Some(tables));
    if config.runs_on_kernels() {
        return Ok(config);
    }
    Err(ConfigError::new(
        "clock",
        format!(
            "the kernel tables cannot price {} (a model known by its sizes alone with no twin in the catalogue, latent attention, or weight-only integer kernels); set clock to \"roofline\"",
            config.model.id
        ),
    ))
}

/// The lab's models (`engine::model::MODEL_IDS`) with a catalogue entry of the same shapes:
/// Llama-3 8B and 70B are Llama-3.1's layers, heads and vocabulary (3.1 changed the rotary
/// scaling only); Llama-2-7B is the Hub's own. Mistral-7B's (v0.1) sliding window would change its
/// KV cache, and OPT-13B has none: they stay on the roofline.
pub const LAB_MODEL_TWINS: [(&str, &str); 3] = [
    ("llama-3-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama-3-70b", "meta-llama/Llama-3.1-70B-Instruct"),
    ("llama-2-7b", "meta-llama/Llama-2-7b-hf"),
];

/// The architecture of `model`'s catalogue twin, when it has one of the same layers, KV heads,
/// head size and size (within 1%).
#[cfg(feature = "kernel-clock")]
fn lab_model_twin(model: &crate::engine::model::ModelSpec) -> Option<crate::engine::model_arch::ModelArch> {
    let (_, twin) = LAB_MODEL_TWINS.iter().find(|(lab, _)| *lab == model.id)?;
    let spec = super::model_catalogue::catalogue_model(twin)?.ok()?;
    let same = spec.layers == model.layers
        && spec.kv_heads == model.kv_heads
        && spec.head_dim == model.head_dim
        && (spec.params_b / model.params_b - 1.0).abs() < 0.01;
    if same {
        spec.arch.map(|a| *a)
    } else {
        None
    }
}
