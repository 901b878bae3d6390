//! `kvlab validate`: replays every real vLLM run of `assets/validation/` with the same GPU,
//! model, flags, arrivals and token counts, and prints each figure's error (docs/FIDELITY.md).
//! `--fit` fits each GPU's clock constants to the runs marked "fit" and prints them as
//! `engine/clock/constants.rs` writes them.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::engine::clock::clock_for;
use crate::engine::clock::constants::kernel_host_for;
use crate::engine::clock_fit::fit;
use crate::engine::fidelity::{median_abs_error_pct, FigureError};
use crate::engine::EngineVersion;
use crate::formats::cross_validation::{keep_up_flips, leave_one_out, summarize, CrossSummary, KEEP_UP_TTFT_MS};
use crate::formats::kernel_tables::with_kernels;
use crate::formats::validation::{all_cases, fit_cases, per_gpu, replay_all, CaseResult, Skipped};
use crate::shipped::{PUBLISHED_RUNS, VALIDATION_RUNS};

use super::clock_constants::{self, Update};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// The folder of real measurements (`vllm-runs/…` below it).
    #[arg(long, value_name = "DIR", default_value = "../shared/validation")]
    pub data: PathBuf,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Fit each GPU's constants to its "fit" runs and print them (`--clock kernels`: the host
    /// costs per GPU and engine generation, on the "fit" and "fit_host" runs).
    #[arg(long, conflicts_with = "json")]
    pub fit: bool,
    /// Leave-one-out: predict every run with constants fitted without it (fit runs: on the
    /// other fit runs of its GPU; held-out runs: on every fit run), and print the errors per
    /// run, per GPU and per figure family.
    #[arg(long, conflicts_with = "fit")]
    pub cross: bool,
    /// The clock to replay on: `roofline` (the lab's default), or `kernels` (steps priced from
    /// the GPU's measured kernels, `assets/kernels/`, where they cover the GPU and the model).
    #[arg(long, value_enum, default_value_t = ClockChoice::Roofline)]
    pub clock: ClockChoice,
    /// With --fit, write the fitted constants into FILE (assets/clock/constants.json, which the
    /// clock is built from); with --cross, each GPU's held-out error. The rest of FILE is kept.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
}

/// Which clock `kvlab validate` replays on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockChoice {
    Roofline,
    Kernels,
}

/// Every case, read from `data`, replayed with the clock's constants; and the runs left out.
pub fn validate_all(data: &Path, clock: ClockChoice) -> Result<(Vec<CaseResult>, Vec<Skipped>), String> {
    let read = |rel: &str| {
        let path = data.join(rel);
        std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e} (--data names the folder)", path.display()))
    };
    let (mut cases, skipped) = all_cases(VALIDATION_RUNS, PUBLISHED_RUNS, &read)?;
    if clock == ClockChoice::Kernels {
        for c in &mut cases {
            c.config = with_kernels(std::mem::take(&mut c.config));
        }
    }
    Ok((replay_all(cases), skipped))
}

pub fn validate(args: &ValidateArgs) -> Result<(), String> {
    if args.write.is_some() && !args.fit && !args.cross {
        return Err("--write: give --fit (to write the fitted constants) or --cross (the held-out errors)".into());
    }
    let (results, skipped) = validate_all(&args.data, args.clock)?;
    if args.fit {
        return print_fit(&results, args.clock, args.write.as_deref());
    }
    if args.cross {
        return print_cross(&results, args.json, args.clock, args.write.as_deref());
    }
    if args.json {
        let cases: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.case.id, "run": r.case.run, "role": r.case.role.name(), "gpu": r.case.gpu,
                    "source": r.case.source,
                    "figures": r.errors.iter().map(|e| serde_json::json!({
                        "figure": e.figure.key(), "real": e.real, "simulated": e.simulated,
                        "error_pct": round2(e.error_pct()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let skipped: Vec<_> = skipped.iter().map(|s| serde_json::json!({"id": s.id, "reason": s.reason})).collect();
        let doc = serde_json::json!({"cases": cases, "not_replayed": skipped, "summary": summary_json(&results)});
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }
    for r in &results {
        println!("{} ({}, {}; {})", r.case.id, r.case.gpu, r.case.role.name(), r.case.source);
        println!("  {:<18} {:>12} {:>12} {:>9}", "figure", "vLLM", "kvlab", "error");
        for e in &r.errors {
            println!("  {:<18} {:>12.2} {:>12.2} {:>+8.1}%", e.figure.name(), e.real, e.simulated, e.error_pct());
        }
    }
    println!();
    for (fitted, name) in [(true, "fit on"), (false, "held out")] {
        let errs: Vec<FigureError> = results
            .iter()
            .filter(|r| r.case.role.fits(r.case.config.runs_on_kernels()) == fitted)
            .flat_map(|r| r.errors.iter().cloned())
            .collect();
        println!(
            "median |error| over the figures of the runs {name}: {:.1}% ({} figures)",
            median_abs_error_pct(&errs),
            errs.len()
        );
    }
    for (gpu, (runs, err)) in per_gpu(&results) {
        println!("{gpu}: {runs} run(s), median |error| {err:.1}%");
    }
    for s in &skipped {
        println!("not replayed: {}: {}", s.id, s.reason);
    }
    Ok(())
}

/// `--cross`: the leave-one-out table (docs/FIDELITY.md's headline).
fn print_cross(results: &[CaseResult], json: bool, clock: ClockChoice, write: Option<&Path>) -> Result<(), String> {
    let cross = leave_one_out(results);
    let (all, per_gpu) = summarize(&cross);
    if let Some(path) = write {
        let kernels = clock == ClockChoice::Kernels;
        // The kernel clock's figure is quoted where the GPU has kernel tables.
        let updates: Vec<Update> = per_gpu
            .iter()
            .filter(|(g, _)| !kernels || crate::shipped::kernel_tables(g).is_some())
            .map(|(gpu, s)| Update::HeldOut {
                kernels,
                gpu,
                runs: s.runs,
                median_abs_error_pct: (s.median_abs_error_pct * 10.0).round() / 10.0,
            })
            .collect();
        clock_constants::write(path, &updates)?;
    }
    let held_out = CrossSummary::of(cross.iter().filter(|c| c.held_out));
    if json {
        let summary = |s: &CrossSummary| {
            serde_json::json!({
                "runs": s.runs, "figures": s.figures, "median_abs_error_pct": round2(s.median_abs_error_pct),
                "per_family": s.per_family.iter().map(|(k, v)| (k.to_string(), serde_json::json!(round2(*v))))
                    .collect::<serde_json::Map<_, _>>(),
            })
        };
        let cases: Vec<serde_json::Value> = cross
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.result.case.id, "run": c.result.case.run, "role": c.result.case.role.name(),
                    "gpu": c.result.case.gpu, "constants_from": c.constants_from,
                    "figures": c.errors.iter().map(|e| serde_json::json!({
                        "figure": e.figure.key(), "real": e.real, "simulated": e.simulated,
                        "held_out_error_pct": round2(e.error_pct()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let gpus: serde_json::Map<String, serde_json::Value> =
            per_gpu.iter().map(|(g, s)| (g.clone(), summary(s))).collect();
        let flips: Vec<serde_json::Value> = keep_up_flips(&cross)
            .iter()
            .map(|f| serde_json::json!({"id": f.id, "real_ttft_ms": f.real_ms, "predicted_ttft_ms": round2(f.predicted_ms)}))
            .collect();
        let doc = serde_json::json!({
            "cases": cases, "all": summary(&all), "held_out": summary(&held_out), "per_gpu": gpus,
            "keep_up_ttft_ms": KEEP_UP_TTFT_MS, "keep_up_flips": flips,
        });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }
    for c in &cross {
        let r = &c.result.case;
        println!("{} ({}, {}; predicted from {})", r.id, r.gpu, r.role.name(), c.constants_from);
        for e in &c.errors {
            println!("  {:<18} {:>12.2} {:>12.2} {:>+8.1}%", e.figure.name(), e.real, e.simulated, e.error_pct());
        }
    }
    println!();
    let line = |name: &str, s: &CrossSummary| {
        let fams: Vec<String> = s.per_family.iter().map(|(k, v)| format!("{k} {v:.1}%")).collect();
        println!(
            "{name}: {} run(s), {} figures, median |error| {:.1}% ({})",
            s.runs,
            s.figures,
            s.median_abs_error_pct,
            fams.join(", ")
        );
    };
    line("leave-one-out, every run", &all);
    line("leave-one-out, held-out runs", &held_out);
    for (gpu, s) in &per_gpu {
        line(gpu, s);
    }
    let flips = keep_up_flips(&cross);
    let cannot = flips.iter().filter(|f| f.says_cannot_keep_up()).count();
    println!(
        "keep-up verdicts (TTFT under {KEEP_UP_TTFT_MS:.0} ms) the prediction flips: {} ({cannot} where vLLM kept up, {} where it did not)",
        flips.len(),
        flips.len() - cannot
    );
    for f in &flips {
        println!("  {}: vLLM {:.0} ms, kvlab {:.0} ms", f.id, f.real_ms, f.predicted_ms);
    }
    Ok(())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn summary_json(results: &[CaseResult]) -> serde_json::Value {
    let gpus: serde_json::Map<String, serde_json::Value> = per_gpu(results)
        .into_iter()
        .map(|(g, (runs, err))| (g, serde_json::json!({"runs": runs, "median_abs_error_pct": round2(err)})))
        .collect();
    serde_json::Value::Object(gpus)
}

/// Fits every GPU and engine generation that has "fit" runs, from the constants in force, and
/// prints them: the roofline's (fitted on v1 runs: its constants are the v1 engine's), or the
/// kernel clock's host costs.
fn print_fit(results: &[CaseResult], clock: ClockChoice, write: Option<&Path>) -> Result<(), String> {
    let mut updates = Vec::new();
    let mut groups: Vec<(&str, EngineVersion)> = results
        .iter()
        // On the kernel clock, the runs it prices (the others stay on the roofline's constants).
        .filter(|r| r.case.role.fits(clock == ClockChoice::Kernels))
        .filter(|r| clock == ClockChoice::Roofline || r.case.config.runs_on_kernels())
        .map(|r| (r.case.gpu.as_str(), r.case.config.scheduler.engine))
        .filter(|&(_, engine)| clock == ClockChoice::Kernels || engine == EngineVersion::V1)
        .collect();
    groups.sort_unstable_by_key(|&(gpu, engine)| (gpu, engine == EngineVersion::V0));
    groups.dedup();
    for (gpu, engine) in groups {
        let cases = fit_cases(results, gpu, engine);
        let start = match clock {
            // A measured GPU's, or its sibling's.
            ClockChoice::Roofline => clock_for(gpu).0,
            ClockChoice::Kernels => kernel_host_for(gpu, engine),
        };
        let (k, loss) = fit(&cases, start);
        let line = match clock {
            ClockChoice::Roofline => format!(
                "{gpu}: bandwidth efficiency {:?}, GEMM efficiency {:?}, {:.0} µs a step, {:.1} µs a sequence;",
                k.bandwidth_efficiency, k.gemm_efficiency, k.fixed_step_us, k.per_seq_us
            ),
            ClockChoice::Kernels => format!(
                "{gpu}, vLLM {}: {:.0} µs a step, {:.1} µs a sequence, {:.0} µs a prompt;",
                engine.name(),
                k.fixed_step_us,
                k.per_seq_us,
                k.per_prefill_us
            ),
        };
        println!("{line} fitted on {} case(s), rms log error {:.3}", cases.len(), loss.sqrt());
        updates.push(match clock {
            ClockChoice::Roofline => Update::Roofline(gpu, k),
            ClockChoice::Kernels => Update::KernelHost(gpu, engine, k),
        });
    }
    if let Some(path) = write {
        clock_constants::write(path, &updates)?;
        println!("written to {}", path.display());
    }
    Ok(())
}
