//! The native command line: `kvlab run`, `kvlab plan` and `kvlab check`, over the same engine
//! the browser lab runs. Bad input exits non-zero with a message naming the field.

mod plan;
mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "kvlab", version, about = "Simulate, plan and check how an LLM server spends GPU memory on the KV cache")]
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
    /// Validate a preset file without running it.
    Check(run::CheckArgs),
}

/// Parses `std::env::args` and runs the command; every error becomes a message and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = std::panic::catch_unwind(|| match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Check(args) => run::check(&args),
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
