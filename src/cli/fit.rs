//! `kvlab fit PRESET --trace FILE`: the preset with its workload fitted to the trace's first
//! `duration_s` seconds (`formats::trace_fit`), printed as preset JSON; the trace flags choose the
//! window, speed, sample and replica as they do for `kvlab run`.

use std::path::PathBuf;

use clap::Args;

use super::run::read;
use super::trace_flags::TraceFlags;
use crate::formats::preset::{parse_preset_dto, PresetDto};
use crate::formats::trace_fit::{fit_workload, FitOptions};

#[derive(Args, Debug)]
pub struct FitArgs {
    /// The preset whose model, GPU, allocator and scheduler the fitted workload runs on.
    pub preset: PathBuf,
    #[command(flatten)]
    pub trace: TraceFlags,
    /// Seconds per interval of the fitted rate schedule.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub bin_s: f64,
    /// The fitted class's name.
    #[arg(long, value_name = "NAME", default_value = "trace")]
    pub class_name: String,
    /// The new preset's id (default: the preset's).
    #[arg(long)]
    pub id: Option<String>,
    /// The new preset's title (default: the preset's).
    #[arg(long)]
    pub title: Option<String>,
}

pub fn fit(args: &FitArgs) -> Result<(), String> {
    let (dto, line) = fitted_preset(args)?;
    eprintln!("{line}");
    println!("{}", serde_json::to_string_pretty(&dto).expect("a preset serializes"));
    Ok(())
}

/// The fitted preset, and the line that says what was fitted.
pub fn fitted_preset(args: &FitArgs) -> Result<(PresetDto, String), String> {
    let path = args.trace.trace.as_ref().ok_or("--trace FILE: name the trace to fit")?;
    let mut dto = parse_preset_dto(&read(&args.preset)?).map_err(|e| format!("{}: {e}", args.preset.display()))?;
    let max_tokens = dto.workload.classes.first().map_or(2048, |c| c.max_tokens);
    let trace = args
        .trace
        .arrival(read(path)?, max_tokens)?
        .read()
        .map_err(|e| format!("{}: {}", path.display(), e.message))?;
    let opts =
        FitOptions { duration_s: dto.duration_s, bin_s: args.bin_s, max_tokens, class_name: args.class_name.clone() };
    let fit = fit_workload(&trace, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
    let share =
        fit.shared_token_share.map_or(String::new(), |s| format!("; {:.1}% of prompt tokens shared", s * 100.0));
    let line = format!(
        "fitted the first {} s ({} requests) of {}, in {} s intervals{share}",
        dto.duration_s,
        fit.requests,
        trace.describe(),
        args.bin_s
    );
    dto.workload = fit.workload;
    if let Some(id) = &args.id {
        dto.id = id.clone();
    }
    if let Some(title) = &args.title {
        dto.title = title.clone();
    }
    dto.to_config().map_err(|e| format!("the fitted preset is refused: {e}"))?;
    Ok((dto, line))
}
