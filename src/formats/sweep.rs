//! Sweep plans: a preset, one knob named by its preset path (paths.rs parses and sets it), and
//! the values to try, turned into engine configurations — for each point one run with the
//! contiguous allocator and one with the paged allocator, side by side. Running them is the
//! engine's (`engine::sweep`); printing them is the shell's. The grid of the smallest-KV search
//! (`kv_memory_gib` from LO to HI in steps) is built here too. Errors name the flag or the path
//! and the way out.

use serde_json::Value;

use super::paths::{display_path, get_path, parse_path, preset_path_kind, set_path, PathKind, Seg};
use super::preset::preset_dto_from_value;
use crate::engine::config::{ConfigError, SimConfig};
use crate::engine::sweep::MAX_SWEEP_POINTS;

/// The two allocators a sweep runs side by side, in output order.
pub const ALLOCATORS: [&str; 2] = ["contiguous", "paged"];

/// A knob: a preset path holding a number, a text or true/false.
#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    segs: Vec<Seg>,
    kind: PathKind,
}

impl Knob {
    /// Reads `--knob PATH` (`scheduler.max_num_seqs`, `workload.classes[0].n`).
    pub fn parse(path: &str) -> Result<Knob, ConfigError> {
        let bad = |msg: String| ConfigError::new("--knob", msg);
        let segs = parse_path(path).ok_or_else(|| {
            bad(format!(
                "\"{path}\" is not a preset path; write one like scheduler.max_num_seqs or workload.classes[0].n"
            ))
        })?;
        if segs.contains(&Seg::Any) {
            return Err(bad(format!("{path}: name one item instead of [*], e.g. workload.classes[0].n")));
        }
        let kind = preset_path_kind(path)
            .ok_or_else(|| bad(format!("no preset has the path {path}; docs/SCHEMA.md lists them")))?;
        if path == "allocator.kind" {
            return Err(bad("a sweep runs both allocators side by side already; sweep another knob".into()));
        }
        match kind {
            PathKind::Number | PathKind::Bool | PathKind::Text => Ok(Knob { segs, kind }),
            _ => Err(bad(format!(
                "{path} holds an object or a list; sweep a field inside it that holds a number, a text or true/false"
            ))),
        }
    }

    /// The path as written in presets.
    pub fn path(&self) -> String {
        display_path(&self.segs)
    }

    /// The allocator a knob under `allocator.` (or the host tier's, which only the paged pool
    /// has) belongs to; None for every other knob.
    fn allocator(&self) -> Option<&'static str> {
        match self.path().as_str() {
            "allocator.block_size" | "allocator.prefix_caching" | "kv_offload.cpu_gib" => Some("paged"),
            "allocator.reserve" | "allocator.fit" => Some("contiguous"),
            _ => None,
        }
    }

    /// Whether the knob changes the run of `allocator` (an allocator's own setting leaves the
    /// other allocator's runs as the preset has them).
    pub fn applies_to(&self, allocator: &str) -> bool {
        self.allocator().is_none_or(|a| a == allocator)
    }

    /// Whether the run of allocator `a` (an index of [`ALLOCATORS`]) at point `i` repeats point
    /// 0's: an allocator the knob leaves alone has one configuration for every point, so its
    /// first run stands for all of them.
    pub fn repeats_first(&self, i: usize, a: usize) -> bool {
        i > 0 && !self.applies_to(ALLOCATORS[a])
    }

    /// Reads `--values A,B,C` as this knob's JSON values.
    pub fn values(&self, text: &str) -> Result<Vec<Value>, ConfigError> {
        let items: Vec<&str> = text.split(',').map(str::trim).collect();
        check_count("--values", items.len())?;
        items.iter().map(|item| self.value(item)).collect()
    }

    fn value(&self, item: &str) -> Result<Value, ConfigError> {
        let bad = |what: &str| ConfigError::new("--values", format!("\"{item}\" is not {what} for {}", self.path()));
        match self.kind {
            PathKind::Number => match serde_json::from_str::<Value>(item) {
                Ok(v @ Value::Number(_)) => Ok(v),
                _ => Err(bad("a number")),
            },
            PathKind::Bool => match item {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(bad("true or false")),
            },
            _ if item.is_empty() => Err(bad("a text")),
            _ => Ok(Value::String(item.to_string())),
        }
    }

    /// Reads `--range LO:HI:N`: N evenly spaced numbers from LO to HI; whole numbers when LO, HI
    /// and the step between points are whole (`4:64:16` gives 4, 8, … 64), else decimals.
    pub fn range(&self, text: &str) -> Result<Vec<Value>, ConfigError> {
        let bad = |msg: String| ConfigError::new("--range", msg);
        if self.kind != PathKind::Number {
            return Err(bad(format!("{} is not a number; list its values with --values", self.path())));
        }
        let parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let [lo, hi, n] = parts[..] else {
            return Err(bad(format!("\"{text}\" is not LO:HI:N; write e.g. --range 4:64:16")));
        };
        let num = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
        let (Some(a), Some(b)) = (num(lo), num(hi)) else {
            return Err(bad(format!("\"{text}\": LO and HI must be numbers, e.g. --range 4:64:16")));
        };
        let n: usize = n.parse().map_err(|_| bad(format!("\"{n}\" is not a whole number of points")))?;
        check_count("--range", n)?;
        if n == 1 && a != b {
            return Err(bad("one point needs LO = HI; use N ≥ 2 to go from LO to HI".into()));
        }
        let whole = match (lo.parse::<i64>(), hi.parse::<i64>()) {
            (Ok(l), Ok(h)) => n == 1 || (h - l) % (n as i64 - 1) == 0,
            _ => false,
        };
        let at = |i: usize| if n == 1 { a } else { a + (b - a) * i as f64 / (n - 1) as f64 };
        Ok((0..n).map(|i| if whole { Value::from(at(i).round() as i64) } else { Value::from(at(i)) }).collect())
    }
}

fn check_count(flag: &str, n: usize) -> Result<(), ConfigError> {
    if n == 0 || n > MAX_SWEEP_POINTS {
        return Err(ConfigError::new(flag, format!("{n} points; a sweep takes 1 to {MAX_SWEEP_POINTS}")));
    }
    Ok(())
}

/// The preset once per allocator, in [`ALLOCATORS`] order: the preset's own allocator settings
/// where it uses that allocator, the defaults (docs/SCHEMA.md) for the other; the contiguous
/// allocator without the host tier (`kv_offload`), which only the paged pool keeps.
pub fn allocator_variants(preset: &Value) -> [Value; 2] {
    ALLOCATORS.map(|kind| {
        let mut v = preset.clone();
        let own = preset.get("allocator").is_some_and(|a| a.get("kind").and_then(Value::as_str) == Some(kind));
        if let Some(map) = v.as_object_mut() {
            if !own {
                map.insert("allocator".into(), serde_json::json!({ "kind": kind }));
            }
            if kind == "contiguous" {
                map.remove("kv_offload");
            }
        }
        v
    })
}

/// A preset JSON value as an engine configuration, errors naming the field.
pub fn config_of(preset: &Value) -> Result<SimConfig, ConfigError> {
    preset_dto_from_value(preset)?.to_config()
}

/// One point of a sweep: the knob's value and the configuration of each allocator (or why the
/// engine refuses it), in [`ALLOCATORS`] order.
#[derive(Clone, Debug)]
pub struct PlannedPoint {
    pub value: Value,
    pub configs: [Result<SimConfig, ConfigError>; 2],
}

/// The configurations of every point. The preset must be valid as it is (its error is returned
/// as is); a point the engine refuses keeps its error in place of a configuration.
/// A knob the preset has no place for (`workload.arrival.rate_per_s` on a trace's arrivals) is
/// refused as a whole, naming the fields that object does have, rather than failing every point.
pub fn plan(preset: &Value, knob: &Knob, values: &[Value]) -> Result<Vec<PlannedPoint>, ConfigError> {
    config_of(preset)?;
    let variants = allocator_variants(preset);
    if let Some(first) = values.first() {
        has_a_place(&variants, knob, first)?;
    }
    let points = values
        .iter()
        .map(|value| PlannedPoint {
            value: value.clone(),
            configs: [0, 1].map(|a| {
                let mut v = variants[a].clone();
                if knob.applies_to(ALLOCATORS[a]) {
                    set_path(&mut v, &knob.segs, value.clone())
                        .map_err(|why| ConfigError::new(knob.path(), format!("cannot be set ({why})")))?;
                }
                config_of(&v)
            }),
        })
        .collect();
    Ok(points)
}

/// Refuses `knob` when an allocator's variant it applies to has no field for it once set to
/// `probe` (serde's "unknown field": a request rate on a trace's arrivals), naming the fields
/// that object has. Only the document's shape is read, not the configuration.
fn has_a_place(variants: &[Value], knob: &Knob, probe: &Value) -> Result<(), ConfigError> {
    for (variant, _) in variants.iter().zip(ALLOCATORS).filter(|(_, a)| knob.applies_to(a)) {
        let mut v = variant.clone();
        if set_path(&mut v, &knob.segs, probe.clone()).is_ok() {
            if let Err(e) = preset_dto_from_value(&v) {
                if e.message.starts_with("unknown field") {
                    return Err(ConfigError::new(
                        knob.path(),
                        format!("does not apply to this preset ({}: {}); sweep a field it has", e.field, e.message),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether `preset` has a place for `knob`: a request rate has none on a trace's arrivals. The
/// page offers only the knobs that apply; [`plan`] refuses the others.
pub fn knob_applies(preset: &Value, knob: &Knob) -> bool {
    let probe = match knob.kind {
        PathKind::Text => Value::from("v1"),
        PathKind::Bool => Value::from(true),
        _ => Value::from(1),
    };
    has_a_place(&allocator_variants(preset), knob, &probe).is_ok()
}

/// The smallest-KV search's default resolution, GiB.
pub const KV_STEP_GIB: f64 = 0.25;

/// The KV memory the smallest-KV search looks in unless told otherwise, (LO, HI) in GiB: one
/// step up to the most KV the preset's GPUs hold beside its weights (`engine::gpu_fit::max_kv_gib`).
pub fn default_kv_range(config: &SimConfig, step: f64) -> (f64, f64) {
    let top = (crate::engine::gpu_fit::max_kv_gib(config) / step).floor() * step;
    (step, top.max(step))
}

/// How the smallest-KV search's range and step are named where they were written (the CLI's
/// flags, the page's fields), so an error names what the user typed.
#[derive(Clone, Copy, Debug)]
pub struct KvRangeNames {
    pub range: &'static str,
    pub step: &'static str,
    /// A range written as that place takes it, for the error's example.
    pub example: &'static str,
}

/// The CLI's names: `--kv-range LO:HI` and `--kv-step-gib GIB`.
pub const CLI_KV_NAMES: KvRangeNames =
    KvRangeNames { range: "--kv-range", step: "--kv-step-gib", example: "--kv-range 1:80" };

/// Reads a KV range, `LO:HI` in GiB (both numbers; the grid checks their order).
pub fn parse_kv_range(text: &str, names: &KvRangeNames) -> Result<(f64, f64), ConfigError> {
    let num = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    match text.split(':').map(num).collect::<Vec<_>>()[..] {
        [Some(lo), Some(hi)] => Ok((lo, hi)),
        _ => Err(ConfigError::new(
            names.range,
            format!("\"{}\" is not LO:HI in GiB; write e.g. {}", text.trim(), names.example),
        )),
    }
}

/// The KV memory grid of the smallest-KV search: LO, LO + STEP, … up to HI (HI included when
/// the steps land on it), at most 100,000 points; errors name the range or the step.
pub fn kv_grid(lo: f64, hi: f64, step: f64, names: &KvRangeNames) -> Result<Vec<f64>, ConfigError> {
    let bad_step = || ConfigError::new(names.step, format!("{step}: give a step above 0 and at most 100,000 steps"));
    // The step first: the default range starts one step up, so a bad step spoils it too.
    if !(step.is_finite() && step > 0.0) {
        return Err(bad_step());
    }
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && hi >= lo) {
        return Err(ConfigError::new(names.range, format!("{lo}:{hi}: give LO:HI in GiB with 0 < LO ≤ HI")));
    }
    if (hi - lo) / step > 100_000.0 {
        return Err(bad_step());
    }
    let n = ((hi - lo) / step + 1e-9).floor() as usize + 1;
    Ok((0..n).map(|i| lo + step * i as f64).collect())
}

/// Whether the smallest-KV search can set the preset's `kv_memory_gib`: not when the preset
/// derives its KV memory from the GPU (the error names the field and the way out).
pub fn check_kv_searchable(preset: &Value) -> Result<(), ConfigError> {
    if get_path(preset, &[Seg::Key("gpu_memory_utilization".into())]).is_some() {
        return Err(ConfigError::new(
            "gpu_memory_utilization",
            "this preset derives its KV memory from the GPU; the KV search sets kv_memory_gib, so remove gpu_memory_utilization from the preset",
        ));
    }
    Ok(())
}

/// The preset with `kv_memory_gib` set; a preset that derives its KV memory from the GPU is
/// refused, naming the flag.
pub fn with_kv_memory(preset: &Value, gib: f64) -> Result<SimConfig, ConfigError> {
    check_kv_searchable(preset)?;
    let mut v = preset.clone();
    set_path(&mut v, &[Seg::Key("kv_memory_gib".into())], Value::from(gib))
        .map_err(|why| ConfigError::new("kv_memory_gib", format!("cannot be set ({why})")))?;
    config_of(&v)
}
