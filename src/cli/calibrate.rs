//! `kvlab calibrate`: measure the step-time model's constants on a real block pool (host memory
//! or, with `--features gpu`, a CUDA device) and write a `kvlab/calibration@1` file.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::calibrate::backend::BlockPoolBackend;
use crate::calibrate::cuda::{lab_gpu_id, spec_bandwidth_gb_s, CudaDevice};
use crate::calibrate::host::HostPool;
use crate::calibrate::{
    calibrate as run_calibration, host_device_name, today_utc, CalibrateOptions, Nominal, DEFAULT_BLOCK_SIZES,
};
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
    /// Output file (default: assets/calibration/NAME.json, or NAME.json under --out-dir).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Directory for NAME.json and, after each block size, NAME.partial.json (results so far).
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub out_dir: Option<PathBuf>,
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
                tenants: 1,
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

/// What the device contributes to the file: its description, the nominal bandwidth's source, the
/// default calibration name, the lab's GPU preset, and the reference figures measured on it.
struct DeviceSetup {
    device: String,
    nominal: Nominal,
    default_name: String,
    gpu: Option<String>,
    device_report: Option<serde_json::Value>,
    copy_gb_s: Option<f64>,
}

pub fn calibrate(args: &CalibrateArgs) -> Result<(), String> {
    let config = match &args.preset {
        Some(p) => load_config(p)?,
        None => host_default_config(),
    };
    let date = checked_date(args)?;
    let host = args.device == Device::Host;
    // The CUDA device is opened first: without a driver (or without the feature) nothing runs.
    let mut cuda = if host { None } else { Some(CudaDevice::open(args.gpu)?) };
    let setup = match cuda.as_mut() {
        None => DeviceSetup {
            device: host_device_name(),
            nominal: Nominal::MeasuredPoolRead,
            default_name: "host".to_string(),
            gpu: None,
            device_report: None,
            copy_gb_s: None,
        },
        Some(d) => cuda_setup(d)?,
    };
    let name = args.name.clone().unwrap_or(setup.default_name);
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
        device: setup.device,
        gpu: setup.gpu,
        nominal: setup.nominal,
        device_report: setup.device_report,
        copy_gb_s: setup.copy_gb_s,
        config,
    };
    let out = match (&args.out, &args.out_dir) {
        (Some(f), _) => f.clone(),
        (None, Some(dir)) => dir.join(format!("{name}.json")),
        (None, None) => PathBuf::from(format!("assets/calibration/{name}.json")),
    };
    run_and_write(args, &opts, cuda.as_ref(), &out)
}

/// The date to record (`--date` or today), after checking every numeric flag.
fn checked_date(args: &CalibrateArgs) -> Result<String, String> {
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
    Ok(date)
}

/// Warms the CUDA device up, measures its reference bandwidths and describes it for the file.
fn cuda_setup(d: &mut CudaDevice) -> Result<DeviceSetup, String> {
    let info = d.info();
    eprintln!(
        "device: {} (sm_{}{}, {} SMs, {} MiB L2); NVRTC {}.{}; kernels: {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.l2_bytes >> 20,
        info.nvrtc_version.0,
        info.nvrtc_version.1,
        info.kernels
    );
    let warm_ms = d.warm_up(300.0)?;
    let bw = d.bandwidths(1 << 30)?;
    eprintln!(
        "warm-up {warm_ms:.0} ms; device-to-device copy {:.0} GB/s (read + write), streaming read {:.0} GB/s",
        bw.copy_gb_s, bw.stream_read_gb_s
    );
    let nominal = spec_bandwidth_gb_s(&info.name)
        .map_or(Nominal::MeasuredPoolRead, |(gb_s, source)| Nominal::Spec { gb_s, source });
    let report = serde_json::json!({
        "name": info.name,
        "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
        "multiprocessors": info.multiprocessors,
        "l2_bytes": info.l2_bytes,
        "nvrtc": format!("{}.{}", info.nvrtc_version.0, info.nvrtc_version.1),
        "kernels": info.kernels,
        "registers": info.registers.iter().map(|(k, r)| serde_json::json!({"kernel": k, "registers": r})).collect::<Vec<_>>(),
        "warm_up_ms": (warm_ms * 10.0).round() / 10.0,
        "copy_gb_s": bw.copy_gb_s.round(),
        "copy_rule": "cuMemcpyDtoD of 1 GiB from a cold L2, median of 5 after one warm-up, bytes read + written",
        "stream_read_gb_s": bw.stream_read_gb_s.round(),
        "timing": "CUDA events around the kernel alone; L2 flushed (a buffer of 4× L2, at least 256 MiB, overwritten) before every timed read; 2 ms of streaming before each measured step",
    });
    Ok(DeviceSetup {
        device: format!("cuda: {}", info.name),
        nominal,
        default_name: format!("cuda-{}", slug(&info.name)),
        gpu: lab_gpu_id(&info.name).map(String::from),
        device_report: Some(report),
        copy_gb_s: Some(bw.copy_gb_s),
    })
}

/// Runs the calibration on the host or CUDA pool, keeping NAME.partial.json current after each
/// block size, then prints the summary and writes the file (unless `--dry-run`).
fn run_and_write(
    args: &CalibrateArgs,
    opts: &CalibrateOptions,
    cuda: Option<&CudaDevice>,
    out: &std::path::Path,
) -> Result<(), String> {
    let partial_path = out.with_extension("partial.json");
    let mut make_pool = |g| -> Result<Box<dyn BlockPoolBackend>, String> {
        match cuda {
            None => Ok(Box::new(HostPool::new(g)?)),
            Some(d) => d.pool(g),
        }
    };
    let mut write_partial = |run: &crate::calibrate::CalibrationRun| {
        if !args.dry_run {
            match write_calibration(&partial_path, &run.calibration) {
                Ok(()) => eprintln!("  (results so far in {})", partial_path.display()),
                Err(e) => eprintln!("  warning: {e}"),
            }
        }
    };
    let run = run_calibration(opts, &mut make_pool, &mut |line| eprintln!("{line}"), &mut write_partial)?;
    print!("{}", run.summary);
    if args.dry_run {
        return Ok(());
    }
    write_calibration(out, &run.calibration)?;
    let _ = std::fs::remove_file(&partial_path);
    println!("wrote {}", out.display());
    Ok(())
}

fn write_calibration(path: &std::path::Path, c: &crate::formats::calibration::Calibration) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(c).expect("calibration serializes") + "\n";
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
