//! A config.json's `quantization_config`, and vLLM's `--quantization`, as the widths the
//! engine prices weights at (`engine::model_arch::Quantization`): FP8 (with DeepSeek-V3's block
//! scales), compressed-tensors (w8a8, FP8, w4a16 by `config_groups`' weights), GPTQ and AWQ
//! (`bits`, `group_size`), and gpt-oss's MXFP4 experts. Errors name the key.

use serde_json::{Map, Value};

use crate::engine::config::ConfigError;
use crate::engine::model_arch::Quantization;

/// The methods kvlab prices, as vLLM's `--quantization` spells them.
pub const QUANTIZATIONS: &[&str] =
    &["fp8", "fbgemm_fp8", "compressed-tensors", "gptq", "gptq_marlin", "awq", "awq_marlin", "mxfp4"];

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::new(key, message)
}

fn number(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<u32>, ConfigError> {
    match map.get(key).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&n| (1..=1 << 20).contains(&n))
            .map(|n| Some(n as u32))
            .ok_or_else(|| err(format!("{at}{key}"), format!("{v} is not a positive whole number"))),
    }
}

/// The same method under its two names (vLLM runs a GPTQ checkpoint with `gptq_marlin`).
fn same_method(a: &str, b: &str) -> bool {
    let base = |m: &str| m.trim_end_matches("_marlin").to_string();
    base(a) == base(b)
}

/// The quantization of the top-level config object `top`, or of the override `given`.
pub fn read_quantization(top: &Map<String, Value>, given: Option<&str>) -> Result<Option<Quantization>, ConfigError> {
    let at = "quantization_config.";
    let qc = match top.get("quantization_config").filter(|v| !v.is_null()) {
        None => None,
        Some(v) => Some(v.as_object().ok_or_else(|| err("quantization_config", "is not an object"))?),
    };
    let in_file =
        match qc {
            None => None,
            Some(q) => Some(q.get("quant_method").and_then(Value::as_str).ok_or_else(|| {
                err(format!("{at}quant_method"), "missing; config.json names the method, e.g. \"fp8\"")
            })?),
        };
    if let (Some(g), Some(f)) = (given, in_file) {
        if !same_method(g, f) {
            return Err(err(
                "quantization",
                format!("\"{g}\" does not match the checkpoint's quantization_config.quant_method \"{f}\"; leave it out or give \"{f}\""),
            ));
        }
    }
    let Some(method) = given.or(in_file) else { return Ok(None) };
    let empty = Map::new();
    let q = qc.unwrap_or(&empty);
    let field = if given.is_some() { "quantization".to_string() } else { format!("{at}quant_method") };
    Ok(Some(match method {
        "fp8" | "fbgemm_fp8" => {
            let block = match q.get("weight_block_size").and_then(Value::as_array) {
                Some(b) => b.iter().filter_map(Value::as_u64).product::<u64>() as u32,
                None => 0,
            };
            Quantization::Fp8 { scale_block: block }
        }
        "gptq" | "gptq_marlin" | "awq" | "awq_marlin" => Quantization::IntGrouped {
            bits: number(q, "bits", at)?.or(number(q, "w_bit", at)?).unwrap_or(4),
            group_size: number(q, "group_size", at)?.or(number(q, "q_group_size", at)?).unwrap_or(128),
        },
        "mxfp4" => Quantization::Mxfp4,
        "compressed-tensors" => compressed_tensors(qc.ok_or_else(|| {
            err(
                "quantization_config",
                "missing; compressed-tensors reads its widths from the checkpoint's quantization_config",
            )
        })?)?,
        other => {
            return Err(err(
                field,
                format!("\"{other}\" is not a method kvlab prices; use one of {}", QUANTIZATIONS.join(", ")),
            ))
        }
    }))
}

/// compressed-tensors: the first config group's `weights` (`num_bits`, `type`, `group_size`).
fn compressed_tensors(q: &Map<String, Value>) -> Result<Quantization, ConfigError> {
    let at = "quantization_config.config_groups";
    let groups = q
        .get("config_groups")
        .and_then(Value::as_object)
        .ok_or_else(|| err(at, "missing; compressed-tensors lists its schemes there"))?;
    let (name, group) = groups.iter().next().ok_or_else(|| err(at, "is empty"))?;
    let at = format!("{at}.{name}.weights.");
    let w = group.get("weights").and_then(Value::as_object).ok_or_else(|| err(at.trim_end_matches('.'), "missing"))?;
    let bits = number(w, "num_bits", &at)?.ok_or_else(|| err(format!("{at}num_bits"), "missing"))?;
    let float = w.get("type").and_then(Value::as_str) == Some("float");
    Ok(match bits {
        8 if float => Quantization::Fp8 { scale_block: 0 },
        8 => Quantization::Int8,
        4 => Quantization::IntGrouped { bits: 4, group_size: number(w, "group_size", &at)?.unwrap_or(128) },
        n => return Err(err(format!("{at}num_bits"), format!("{n} bits is not a width kvlab prices; 4 or 8"))),
    })
}
