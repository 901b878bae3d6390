//! `kvlab run` (`kvlab check` lives in check.rs).

use std::path::{Path, PathBuf};

use clap::Args;

use super::trace_flags::TraceFlags;
use crate::engine::metrics::OffloadReport;
use crate::engine::numbers::show_number;
use crate::engine::offload::{KvOffloadConfig, OffloadPolicy};
use crate::engine::plan::group_thousands;
use crate::engine::{Report, SimConfig};
use crate::formats::preset::{parse_preset_dto, ArrivalDto};
use crate::formats::report::report_json;
use crate::render::series_csv;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Preset JSON file (schema kvlab/preset@1).
    pub preset: PathBuf,
    /// Print the report JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Print the result as `vllm bench serve` prints it (its Serving Benchmark Result block).
    #[arg(long, conflicts_with = "json")]
    pub benchmark: bool,
    /// Override the preset's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub trace: TraceFlags,
    /// Also write the per-step series as CSV.
    #[arg(long, value_name = "CSV")]
    pub series: Option<PathBuf>,
    /// Step-time constants from a calibration file (kvlab/calibration@1, see docs/CALIBRATION.md).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// The clock: `roofline` (the lab's), or `kernels` (steps priced from the GPU's measured
    /// kernels, `assets/kernels/`, where they cover the GPU and the model; docs/FIDELITY.md).
    #[arg(long, value_enum, default_value_t = super::validate::ClockChoice::Roofline)]
    pub clock: super::validate::ClockChoice,
    /// Replace the preset's model by one read from a Hugging Face config.json (docs/MODELS.md).
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
    /// A host-memory KV tier of this many GiB over the replica, as vLLM's --kv-offloading-size
    /// (the preset's `kv_offload`; 0: none; docs/OFFLOAD.md).
    #[arg(long, value_name = "GIB", allow_negative_numbers = true)]
    pub kv_offload_gib: Option<f64>,
    #[command(flatten)]
    pub fleet: super::fleet::FleetFlags,
}

/// `--kv-offload-gib`: a host tier of `gib` GiB (0: none) in place of the preset's `kv_offload`,
/// checked as the preset's would be; the error names the flag.
pub fn set_kv_offload(config: &mut SimConfig, gib: f64) -> Result<(), String> {
    config.kv_offload = (gib != 0.0).then_some(KvOffloadConfig { cpu_gib: gib, policy: OffloadPolicy::Lru });
    config.validate_fields().map_err(|e| {
        if e.field.starts_with("kv_offload") {
            format!("--kv-offload-gib {}: {}", show_number(gib), e.message)
        } else {
            e.to_string()
        }
    })
}

/// The text of a file the command line names; the error names the file.
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Reads and validates a preset file.
pub fn load_config(path: &Path) -> Result<SimConfig, String> {
    load_config_with_trace(path, &TraceFlags::default()).map(|(config, _)| config)
}

/// Reads and validates a preset file, its arrivals replaced by the trace the flags name; with the
/// line that says what the trace held (`trace: mooncake, 2,000 requests over 669.0 s (…)`).
pub fn load_config_with_trace(path: &Path, flags: &TraceFlags) -> Result<(SimConfig, Option<String>), String> {
    load_config_with_model(path, flags, None)
}

/// A preset's `"model": {"hf_config": …, "name": …}` for the config.json at `path`
/// (`--model-config`; the name from the file's, as `kvlab plan` takes it).
pub fn model_config_value(path: &Path) -> Result<serde_json::Value, String> {
    let config: serde_json::Value =
        serde_json::from_str(&read(path)?).map_err(|e| format!("--model-config {}: not JSON ({e})", path.display()))?;
    Ok(match super::plan::config_file_id(path) {
        Some(name) => serde_json::json!({ "hf_config": config, "name": name }),
        None => serde_json::json!({ "hf_config": config }),
    })
}

/// `load_config_with_trace`, with the model replaced by `{"hf_config": …}` read from
/// `model_config` when given (errors name that file and the key).
pub fn load_config_with_model(
    path: &Path,
    flags: &TraceFlags,
    model_config: Option<&Path>,
) -> Result<(SimConfig, Option<String>), String> {
    let text = read(path)?;
    let mut dto = parse_preset_dto(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(m) = model_config {
        dto.model = model_config_value(m)?;
    }
    let mut source = String::new();
    if let Some(t) = &flags.trace {
        let max_tokens = dto.workload.classes.first().map_or(2048, |c| c.max_tokens);
        dto.workload.arrival = ArrivalDto::Trace(flags.arrival(read(t)?, max_tokens)?);
        source = t.display().to_string();
    }
    let (config, line) = dto.to_config_with_trace().map_err(|e| {
        // A trace's own errors are about the trace file, not the preset.
        let about_trace = flags.trace.is_some() && e.field == "workload.arrival.text";
        if about_trace {
            format!("{source}: {}", e.message)
        } else if let (Some(m), Some(key)) = (model_config, e.field.strip_prefix("model.hf_config.")) {
            format!("--model-config {}: {key}: {}", m.display(), e.message)
        } else {
            format!("{}: {e}", path.display())
        }
    })?;
    Ok((config, line.map(|l| format!("trace: {l}"))))
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let (mut config, trace_line) = load_config_with_model(&args.preset, &args.trace, args.model_config.as_deref())?;
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    if let Some(gib) = args.kv_offload_gib {
        set_kv_offload(&mut config, gib)?;
    }
    args.fleet.apply(&mut config)?;
    if let Some(path) = &args.calibration {
        let text = read(path)?;
        let c =
            crate::formats::calibration::parse_calibration(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        config.calibration = Some(c.step_time());
    }
    if args.clock == super::validate::ClockChoice::Kernels {
        if crate::shipped::kernel_tables(&config.gpu.id).is_none() {
            return Err(format!(
                "--clock kernels: no kernel tables for the {} (they cover {}); leave --clock out for the roofline",
                config.gpu.id,
                crate::formats::kernel_tables::KERNEL_GPUS.join(", ")
            ));
        }
        config = crate::formats::kernel_tables::with_kernels(config);
        if !config.runs_on_kernels() {
            return Err(format!(
                "--clock kernels: the kernel tables cannot price {} (a model known by its sizes alone with no twin in the catalogue, latent attention, or weight-only integer kernels, or a calibration file named); leave --clock out for the roofline",
                config.model.id
            ));
        }
    }
    let calibration_line = config.calibration.as_ref().map(|c| c.describe(&config.gpu.id));
    // With a host tier, the summary says what it saved against the same run without it.
    let without_tier = (config.kv_offload.is_some() && !args.json && !args.benchmark)
        .then(|| SimConfig { kv_offload: None, ..config.clone() });
    let (report, series) = super::fleet::run_to_end(config).map_err(|e| format!("{}: {e}", args.preset.display()))?;
    if let Some(path) = &args.series {
        let named: Vec<(&str, &[crate::engine::StepPoint])> =
            series.iter().map(|(name, points)| (name.as_str(), points.as_slice())).collect();
        std::fs::write(path, series_csv(&named)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        println!("{}", report_json(&report));
    } else if args.benchmark {
        print!("{}", super::benchmark::benchmark_block(&report));
    } else {
        if let Some(line) = &trace_line {
            println!("{line}");
        }
        print!("{}", summary(&report));
        if let Some(c) = without_tier {
            let without = super::fleet::run_to_end(c).map_err(|e| format!("{}: {e}", args.preset.display()))?.0;
            print!("{}", tier_saved_line(&report, &without));
        }
        if let Some(line) = calibration_line {
            println!("  {line}");
        }
    }
    Ok(())
}

pub fn summary(r: &Report) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let mut s = String::new();
    s += &format!(
        "preset {} ({} allocator), {:.0} s simulated in {} steps\n",
        r.preset, r.allocator, r.sim_time_s, r.steps
    );
    s += &memory_lines(r);
    s += &format!("KV bytes per token: {} (engine: vLLM {})\n", r.kv_bytes_per_token, r.engine);
    if let Some(note) = &r.block_size_note {
        s += &format!("note: {note}\n");
    }
    s += &format!(
        "requests: {} arrived, {} finished, {} running, {} waiting, {} swapped, {} rejected at the end\n",
        r.requests.arrived,
        r.requests.finished,
        r.requests.running_at_end,
        r.requests.waiting_at_end,
        r.requests.swapped_at_end,
        r.requests.rejected
    );
    s += &format!(
        "KV memory: {} of allocated memory holds tokens; allocated {} and live {} of capacity (time-weighted means)\n",
        pct(r.kv.utilization_mean),
        pct(r.kv.allocated_fraction_mean),
        pct(r.kv.live_fraction_mean)
    );
    s += &format!("num_requests_running: mean {:.1}, max {}\n", r.running_mean, r.running_max);
    s += &format!(
        "head-of-line blocked steps: {} ({} with enough total free memory)\n",
        r.hol_blocked_steps, r.hol_blocked_with_free_memory_steps
    );
    s += &format!("num_preemptions: {} ({} by swap)\n", r.preemptions, r.swap_preemptions);
    s += &format!(
        "copy-on-write copies: {}; prefix_cache_hit_rate: {} ({} of {} prompt tokens)\n",
        r.cow_copies,
        pct(r.prefix_cache_hit_rate),
        crate::engine::plan::group_thousands(r.prefix_cache_hits),
        crate::engine::plan::group_thousands(r.prefix_cache_queries)
    );
    if let Some(o) = &r.offload {
        s += &offload_line(r, o);
    }
    if let Some(f) = &r.fleet {
        s += &super::fleet::fleet_lines(f);
    }
    s += &format!(
        "TTFT p50 {:.0} ms, p95 {:.0} ms; TPOT p50 {:.1} ms, p95 {:.1} ms; {:.0} output tokens/s\n",
        r.latency_ms.ttft_p50,
        r.latency_ms.ttft_p95,
        r.latency_ms.tpot_p50,
        r.latency_ms.tpot_p95,
        r.output_tokens_per_s
    );
    s += &format!("clock: {}\n", r.clock.line);
    if let Some(c) = &r.calibration {
        s += &format!("step-time calibration: {c}\n");
    }
    for rej in r.rejections.iter().take(5) {
        s += &format!("rejected request {}: {}\n", rej.request, rej.reason);
    }
    s
}

/// The host tier: its size, the prompt tokens found there beside the GPU's (one denominator),
/// and what crossed the host link.
fn offload_line(r: &Report, o: &OffloadReport) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
    format!(
        "host tier: {} GiB ({} blocks, {} held at the end); prompt tokens found: GPU {}, host {}, both {} (host {} of what the GPU lacked); {} loads, {} loaded, {} stored, {} stores refused; host link {} GB/s each way\n",
        show_number(o.cpu_gib),
        group_thousands(u64::from(o.capacity_blocks)),
        group_thousands(u64::from(o.resident_blocks)),
        pct(r.prefix_cache_hit_rate),
        pct(o.offload_hit_rate),
        pct(o.combined_hit_rate),
        pct(o.external_hit_rate),
        group_thousands(o.loads),
        gb(o.loaded_bytes),
        gb(o.stored_bytes),
        group_thousands(o.store_refusals),
        show_number(o.link_gb_s)
    )
}

/// What the host tier changed: the same run without it (its prompt tokens found, its TTFT), and
/// the TTFT the tier's hits saved.
fn tier_saved_line(with: &Report, without: &Report) -> String {
    let (a, b) = (&with.latency_ms, &without.latency_ms);
    format!(
        "without the host tier: prompt tokens found {:.1}%, TTFT p50 {:.0} ms, p95 {:.0} ms, mean {:.0} ms; the tier's hits saved TTFT p50 {:.0} ms, p95 {:.0} ms, mean {:.0} ms\n",
        without.prefix_cache_hit_rate * 100.0,
        b.ttft_p50,
        b.ttft_p95,
        b.ttft_mean,
        b.ttft_p50 - a.ttft_p50,
        b.ttft_p95 - a.ttft_p95,
        b.ttft_mean - a.ttft_mean
    )
}

/// Where the KV memory comes from: vLLM's startup lines and the per-GPU split for a preset that
/// starts from a GPU, else the capacity line.
fn memory_lines(r: &Report) -> String {
    let Some(g) = &r.gpu_memory else {
        return format!("{}\n", r.capacity_line);
    };
    // vLLM's own lines, then the split it does not print.
    let mut s: String = g.startup_lines.iter().map(|line| format!("{line}\n")).collect();
    s += &format!(
        "each of the replica's {} GPUs: weights {} + peak activation {} + CUDA graphs {} + non-torch {} + KV {} GiB of {} requested; {} KV heads; KV of the replica {} GiB\n",
        g.tensor_parallel_size,
        g.weights_gib_per_gpu,
        g.peak_activation_gib_per_gpu,
        g.cuda_graph_gib_per_gpu,
        g.non_torch_gib_per_gpu,
        g.kv_gib_per_gpu,
        g.requested_gib_per_gpu,
        g.kv_heads_per_gpu,
        g.kv_gib_per_replica
    );
    s
}
