//! `kvlab sweep`: one knob of a preset over up to 32 values, both allocators side by side, as a
//! table, CSV or JSON; and `--min-kv-for-ttft-p95-ms`, the smallest KV memory that meets a TTFT
//! p95 target. The points come from formats/sweep.rs and run in the engine (engine/sweep.rs,
//! on every core); this file reads flags and prints (docs/SWEEP.md).

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use super::run::read;
use crate::engine::config::ConfigError;
use crate::engine::sweep::{check_horizon_s, run_all, SweepMetrics};
use crate::formats::preset::parse_preset_dto;
use crate::formats::sweep::{
    default_kv_range, kv_grid, parse_kv_range, plan, with_kv_memory, Knob, ALLOCATORS, CLI_KV_NAMES, KV_STEP_GIB,
};
use crate::formats::sweep_results::{sweep_csv, sweep_json, value_text, SweepPoint};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Preset JSON file (schema kvlab/preset@1).
    pub preset: PathBuf,
    /// The preset path to sweep: scheduler.max_num_seqs, allocator.block_size, kv_memory_gib,
    /// workload.arrival.rate_per_s, scheduler.max_num_batched_tokens, …
    #[arg(long, value_name = "PATH", required_unless_present_any = ["min_kv_for_ttft_p95_ms", "min_replicas_for_ttft_p95_ms"])]
    pub knob: Option<String>,
    /// The values to try, comma-separated (at most 32).
    #[arg(long, value_name = "A,B,C", conflicts_with = "range", required_unless_present_any = ["range", "min_kv_for_ttft_p95_ms", "min_replicas_for_ttft_p95_ms"])]
    pub values: Option<String>,
    /// N evenly spaced values from LO to HI (at most 32).
    #[arg(long, value_name = "LO:HI:N")]
    pub range: Option<String>,
    /// Print CSV (one row per point and allocator) instead of the table.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Instead of a sweep: the smallest kv_memory_gib whose run has TTFT p95 at or below this
    /// many milliseconds (bisection; the preset's own allocator).
    #[arg(long, value_name = "MS", conflicts_with_all = ["knob", "values", "range", "csv"])]
    pub min_kv_for_ttft_p95_ms: Option<f64>,
    /// Instead of a sweep: the fewest replicas behind the preset's router whose fleet has TTFT p95
    /// at or below this many milliseconds, with the KV search's steady-state rule (docs/ROUTING.md).
    #[arg(long, value_name = "MS", conflicts_with_all = ["knob", "values", "range", "csv", "min_kv_for_ttft_p95_ms"])]
    pub min_replicas_for_ttft_p95_ms: Option<f64>,
    /// The replica counts that search looks in.
    #[arg(long, value_name = "LO:HI", default_value = "1:64", requires = "min_replicas_for_ttft_p95_ms")]
    pub replicas_range: String,
    /// The KV memory the search looks in, GiB (default: one step up to the most KV the GPUs hold beside the weights).
    #[arg(long, value_name = "LO:HI", requires = "min_kv_for_ttft_p95_ms")]
    pub kv_range: Option<String>,
    /// The search's resolution, GiB.
    #[arg(long, value_name = "GIB", default_value_t = KV_STEP_GIB, requires = "min_kv_for_ttft_p95_ms")]
    pub kv_step_gib: f64,
    /// Replace the preset's model by one read from a Hugging Face config.json (docs/MODELS.md).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// Every point with a host-memory KV tier of this many GiB (the preset's `kv_offload`; 0:
    /// none; docs/OFFLOAD.md). Sweep its size with `--knob kv_offload.cpu_gib`.
    #[arg(long, value_name = "GIB", allow_negative_numbers = true)]
    pub kv_offload_gib: Option<f64>,
    /// Every point a fleet: `--replicas`, `--router`, `--router-weights`, `--prefix-index` over
    /// the preset's (docs/ROUTING.md; the replica search sets the count itself).
    #[command(flatten)]
    pub fleet: super::fleet::FleetFlags,
}

pub fn sweep(args: &SweepArgs) -> Result<(), String> {
    let text = read(&args.preset)?;
    let file = |e: ConfigError| format!("{}: {e}", args.preset.display());
    parse_preset_dto(&text).map_err(file)?;
    let mut preset: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", args.preset.display()))?;
    if let Some(gib) = args.kv_offload_gib {
        match preset.as_object_mut() {
            Some(o) if gib == 0.0 => drop(o.remove("kv_offload")),
            Some(o) => drop(o.insert("kv_offload".into(), serde_json::json!({ "cpu_gib": gib }))),
            None => {}
        }
        let text = preset.to_string();
        parse_preset_dto(&text).and_then(|d| d.to_config().map(drop)).map_err(|e| {
            if e.field.starts_with("kv_offload") {
                format!("--kv-offload-gib {gib}: {}", e.message)
            } else {
                file(e)
            }
        })?;
    }
    if let Some(m) = &args.model_config {
        preset["model"] = super::run::model_config_value(m)?;
    }
    if args.fleet.replicas.is_some() && args.min_replicas_for_ttft_p95_ms.is_some() {
        return Err("--replicas: the replica search picks the count itself; give --replicas-range LO:HI".into());
    }
    let config = crate::formats::preset::parse_preset(&preset.to_string()).map_err(file)?;
    args.fleet.patch_preset(&mut preset, &config)?;
    if let Some(target) = args.min_kv_for_ttft_p95_ms {
        return min_kv(args, &preset, target);
    }
    if let Some(target) = args.min_replicas_for_ttft_p95_ms {
        return super::fleet::min_replicas(&args.preset, &preset, target, &args.replicas_range, args.json);
    }
    let knob = Knob::parse(args.knob.as_deref().unwrap_or_default()).map_err(|e| e.to_string())?;
    let values = match (&args.values, &args.range) {
        (Some(v), _) => knob.values(v),
        (None, Some(r)) => knob.range(r),
        (None, None) => Err(ConfigError::new("--values", "give --values A,B,C or --range LO:HI:N")),
    }
    .map_err(|e| e.to_string())?;
    let points = plan(&preset, &knob, &values).map_err(file)?;
    // An allocator the knob leaves alone is run once, at point 0 (`Knob::repeats_first`).
    let k = &knob;
    let configs: Vec<_> = points
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.configs.iter().enumerate().filter(move |&(a, _)| !k.repeats_first(i, a)))
        .filter_map(|(_, c)| c.as_ref().ok().cloned())
        .collect();
    let mut reports = run_all(&configs).into_iter();
    let mut rows: Vec<[Result<SweepMetrics, String>; 2]> = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let row = std::array::from_fn(|a| {
            if knob.repeats_first(i, a) {
                return rows[0][a].clone();
            }
            match &p.configs[a] {
                Ok(_) => match reports.next().expect("one report per configuration") {
                    Ok(r) => Ok(SweepMetrics::of(&r)),
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            }
        });
        rows.push(row);
    }
    let values: Vec<String> = points.iter().map(|p| value_text(&p.value)).collect();
    let results: Vec<SweepPoint> = points.iter().zip(&rows).map(|(p, r)| (&p.value, [&r[0], &r[1]])).collect();
    if args.json {
        let doc = sweep_json(&knob.path(), &results);
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON of plain values"));
    } else if args.csv {
        print!("{}", sweep_csv(&results));
    } else {
        print!("{}", sweep_table(&knob, &values, &rows));
    }
    Ok(())
}

fn sweep_table(knob: &Knob, values: &[String], rows: &[[Result<SweepMetrics, String>; 2]]) -> String {
    let mut out = format!(
        "{:<12} {:<10} {:>8} {:>12} {:>12} {:>11} {:>10} {:>10}\n",
        knob.path(),
        "allocator",
        "KV util",
        "TTFT p95 ms",
        "TPOT p95 ms",
        "preemptions",
        "tokens/s",
        "unfinished"
    );
    for (v, r) in values.iter().zip(rows) {
        for (a, m) in ALLOCATORS.iter().zip(r) {
            let mark = if knob.applies_to(a) { "" } else { " (as the preset)" };
            out.push_str(&match m {
                Ok(m) => format!(
                    "{v:<12} {a:<10} {:>7.1}% {:>12.1} {:>12.1} {:>11} {:>10.1} {:>10}{mark}\n",
                    m.kv_utilization * 100.0,
                    m.ttft_p95_ms,
                    m.tpot_p95_ms,
                    m.preemptions,
                    m.output_tokens_per_s,
                    m.unfinished
                ),
                Err(e) => format!("{v:<12} {a:<10} refused: {e}\n"),
            });
        }
    }
    out
}

fn min_kv(args: &SweepArgs, preset: &Value, target: f64) -> Result<(), String> {
    if !(target.is_finite() && target > 0.0) {
        return Err(format!("--min-kv-for-ttft-p95-ms: {target} is not a time; give milliseconds above 0"));
    }
    let config = crate::formats::sweep::config_of(preset).map_err(|e| format!("{}: {e}", args.preset.display()))?;
    let step = args.kv_step_gib;
    let (lo, hi) = match &args.kv_range {
        Some(r) => parse_kv_range(r, &CLI_KV_NAMES).map_err(|e| e.to_string())?,
        None => default_kv_range(&config, step),
    };
    let grid = kv_grid(lo, hi, step, &CLI_KV_NAMES).map_err(|e| e.to_string())?;
    let found = super::search::smallest_meeting_ttft_p95(
        grid.len(),
        |i| with_kv_memory(preset, grid[i]),
        target,
        &args.preset,
        |why| {
            format!(
            "--min-kv-for-ttft-p95-ms: even {} GiB misses {target} ms ({why}); raise the top of --kv-range or the target, or lower the traffic",
            grid[grid.len() - 1]
        )
        },
    )?;
    let gib = grid[found.index];
    let below = found.below.as_ref().map(|(i, why)| (grid[*i], why.as_str()));
    let checked_over_s = check_horizon_s(&config);
    if args.json {
        let v = json!({
            "target_ttft_p95_ms": target,
            "allocator": found.report.allocator,
            "kv_memory_gib": gib,
            "ttft_p95_ms": found.report.latency_ms.ttft_p95,
            "misses_at_gib": below.map(|b| b.0),
            "misses_because": below.map(|b| b.1),
            "runs": found.runs,
            "checked_over_s": checked_over_s,
            "grid": { "lo_gib": lo, "hi_gib": grid[grid.len() - 1], "step_gib": step },
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    println!(
        "smallest kv_memory_gib with TTFT p95 ≤ {target} ms ({}): {gib} GiB (TTFT p95 {} ms over {} s of traffic, \
         the queue steady)",
        found.report.allocator,
        found.report.latency_ms.ttft_p95,
        crate::engine::numbers::show_number(checked_over_s)
    );
    match below {
        Some((b, why)) => {
            println!(
                "  {b} GiB misses it ({why}); {} runs, bisection over {lo}…{hi} GiB in {step} GiB steps",
                found.runs
            )
        }
        None => println!("  the bottom of the range already meets it; lower --kv-range's LO to look further"),
    }
    Ok(())
}
