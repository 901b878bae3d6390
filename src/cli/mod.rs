//! The native command line: `kvlab run`, `kvlab plan`, `kvlab check`, `kvlab mission`,
//! `kvlab calibrate`, `kvlab replay`, `kvlab sweep`, `kvlab fit` and `kvlab validate`, over the same engine the browser lab runs. Bad input exits non-zero with a message naming the field.

mod benchmark;
mod calibrate;
mod check;
mod clock_constants;
mod fit;
mod fleet;
mod mission;
mod plan;
mod plan_gpu;
mod plan_model;
mod replay;
mod run;
mod search;
mod sweep;
mod trace_flags;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "kvlab",
    version,
    about = "Simulate, plan and check how an LLM server spends GPU memory on the KV cache"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate a preset and print a summary (or the report JSON with --json).
    Run(run::RunArgs),
    /// Capacity planning: KV bytes per token, tokens that fit, concurrency per policy.
    Plan(plan::PlanArgs),
    /// Validate a preset, a mission (and run its broken setup and fix) or the mission index.
    Check(check::CheckArgs),
    /// Score a mission's broken setup, its fix (--fix) or a knob patch (--patch).
    Mission(mission::MissionArgs),
    /// Measure the step-time model's constants on a real block pool (host memory or CUDA).
    Calibrate(calibrate::CalibrateArgs),
    /// Replay a step-indexed trace on vLLM's step clock, with the vLLM reference harness's flags
    /// and JSON, so the two can be compared step for step.
    Replay(replay::ReplayArgs),
    /// Sweep one knob of a preset over up to 32 values, both allocators side by side; or find the
    /// smallest KV memory that meets a TTFT p95 target (--min-kv-for-ttft-p95-ms).
    Sweep(sweep::SweepArgs),
    /// Fit a preset's workload to a request trace (rates per interval, length distributions,
    /// shared prefixes from hash ids) and print the preset.
    Fit(fit::FitArgs),
    /// Replay real vLLM runs (assets/validation/) and print the step-time model's error on each
    /// latency and throughput figure; --fit fits each GPU's clock constants.
    Validate(validate::ValidateArgs),
}

/// Parses `std::env::args` and runs the command; every error becomes a message and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = std::panic::catch_unwind(|| match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Plan(args) if args.gpu_budget.gpu.is_some() => plan_gpu::plan_from_gpu(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Check(args) => check::check(&args),
        Command::Mission(args) => mission::mission(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::Replay(args) => replay::replay(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Fit(args) => fit::fit(&args),
        Command::Validate(args) => validate::validate(&args),
    });
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
        Err(_) => {
            eprintln!("error: kvlab hit an internal error (a bug); please report the command that caused it");
            ExitCode::from(70)
        }
    }
}
