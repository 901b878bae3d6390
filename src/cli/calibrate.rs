//! `kvlab calibrate`: measure the step-time model's constants on a real block pool (host memory
//! or, with `--features gpu`, a CUDA device) and write a `kvlab/calibration@1` file.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::calibrate::cuda::{spec_bandwidth_gb_s, CudaDevice};
use crate::calibrate::host::HostPool;
use crate::calibrate::{
    calibrate as run_calibration, host_device_name, today_utc, CalibrateOptions, Nominal, DEFAULT_BLOCK_SIZES,
};
use crate::engine::backend::BlockPoolBackend;
use crate::engine::model::{model_preset, KvDtype};
use crate::engine::workload::{Arrival, LengthDist, UserClass, WorkloadConfig};
use crate::engine::{AllocatorConfig, SchedulerConfig, SimConfig};

use super::run::load_config;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Device {
    /// A real pool in this machine's RAM (works everywhere).
    Host,
    /// A pool on CUDA device 0 (needs a build with --features gpu and an NVIDIA driver).
    Cuda,
}

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Where the block pool lives.
    #[arg(long, value_enum, default_value = "host")]
    pub device: Device,
    /// Preset whose traffic is replayed (default: a small built-in chat preset on 2 GiB).
    #[arg(long, value_name = "FILE")]
    pub preset: Option<PathBuf>,
    /// Output file (default: assets/calibration/NAME.json).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Calibration name, shown in reports (default: host or cuda-<gpu>).
    #[arg(long)]
    pub name: Option<String>,
    /// Date recorded in the file, YYYY-MM-DD (default: today, UTC).
    #[arg(long)]
    pub date: Option<String>,
    /// Simulated seconds of traffic to replay (default: 8 on host, the preset's on cuda).
    #[arg(long, value_name = "S")]
    pub duration_s: Option<f64>,
    /// Block sizes to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BLOCK_SIZES.to_vec())]
    pub block_sizes: Vec<u32>,
    /// Measured steps per block size (default: 16 on host, 32 on cuda).
    #[arg(long)]
    pub samples: Option<usize>,
    /// Timed (paged, contiguous) read pairs per measured step (default: 7).
    #[arg(long)]
    pub reps: Option<usize>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    /// Print the summary only; do not write a file.
    #[arg(long)]
    pub dry_run: bool,
}

/// The built-in host preset: Llama-3-8B FP16 on 2 GiB of KV (a 64 MiB one-layer pool), chat
/// traffic that ramps from idle to a few dozen running sequences within the replayed seconds.
pub fn host_default_config() -> SimConfig {
    SimConfig {
        id: "calibration-chat-2gib".into(),
        title: "Calibration traffic: chat on 2 GiB".into(),
        seed: 7,
        duration_s: 8.0,
        model: model_preset("llama-3-8b").expect("model preset"),
        kv_dtype: KvDtype::Fp16,
        kv_memory_gib: 2.0,
        allocator: AllocatorConfig::Paged { block_size: 16, prefix_caching: false },
        scheduler: SchedulerConfig { max_model_len: 4096, ..SchedulerConfig::default() },
        workload: WorkloadConfig {
            arrival: Arrival::Poisson { rate_per_s: 12.0, bursts: Vec::new() },
            classes: vec![UserClass {
                name: "chat".into(),
                weight: 1.0,
                prompt_tokens: LengthDist { mean: 500.0, p99: 1500.0 },
                output_tokens: LengthDist { mean: 150.0, p99: 600.0 },
                max_tokens: 1024,
                n: 1,
                shared_prefix_tokens: 0,
            }],
        },
        ..SimConfig::default()
    }
}

fn valid_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

pub fn calibrate(args: &CalibrateArgs) -> Result<(), String> {
    let config = match &args.preset {
        Some(p) => load_config(p, None)?,
        None => host_default_config(),
    };
    let date = args.date.clone().unwrap_or_else(today_utc);
    if !valid_date(&date) {
        return Err(format!("--date {date}: use YYYY-MM-DD"));
    }
    if args.block_sizes.iter().any(|b| !(1..=256).contains(b)) {
        return Err(format!("--block-sizes {:?}: each must be from 1 to 256", args.block_sizes));
    }
    if let Some(d) = args.duration_s {
        if !(d.is_finite() && (1.0..=600.0).contains(&d)) {
            return Err(format!("--duration-s {d}: use a number of seconds from 1 to 600"));
        }
    }
    let host = args.device == Device::Host;
    // The CUDA device is opened first: without a driver (or without the feature) nothing runs.
    let cuda = if host { None } else { Some(CudaDevice::open(args.gpu)?) };
    let (device, nominal, default_name) = match &cuda {
        None => (host_device_name(), Nominal::MeasuredPoolRead, "host".to_string()),
        Some(d) => {
            let name = d.name();
            let nominal = spec_bandwidth_gb_s(&name)
                .map_or(Nominal::MeasuredPoolRead, |(gb_s, source)| Nominal::Spec { gb_s, source });
            (format!("cuda: {name}"), nominal, format!("cuda-{}", slug(&name)))
        }
    };
    let name = args.name.clone().unwrap_or(default_name);
    if name.trim().is_empty() || name.contains(['/', '\\']) {
        return Err(format!("--name {name:?}: use a non-empty name without slashes"));
    }
    let opts = CalibrateOptions {
        duration_s: args.duration_s.or(if host && args.preset.is_some() { Some(8.0) } else { None }),
        block_sizes: args.block_sizes.clone(),
        samples: args.samples.unwrap_or(if host { 16 } else { 32 }),
        reps: args.reps.unwrap_or(7),
        name: name.clone(),
        date,
        device,
        nominal,
        config,
    };
    let mut make_pool = |g| -> Result<Box<dyn BlockPoolBackend>, String> {
        match &cuda {
            None => Ok(Box::new(HostPool::new(g)?)),
            Some(d) => d.pool(g),
        }
    };
    let run = run_calibration(&opts, &mut make_pool, &mut |line| eprintln!("{line}"))?;
    print!("{}", run.summary);
    if args.dry_run {
        return Ok(());
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("assets/calibration/{name}.json")));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&run.calibration).expect("calibration serializes") + "\n";
    std::fs::write(&out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(())
}
