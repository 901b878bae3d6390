//! The shipped presets fitted from public traces (`formats::trace_fit`, `kvlab fit`,
//! scripts/trace-presets.sh): each one's workload is exactly what the fit gives on its window of
//! the real sample in `../shared/traces/`, the script regenerates the shipped files byte for
//! byte, mission 10 plays the shipped code traffic, and a fitted preset runs like a replay of
//! the rows it was fitted to on what the fit does not set (memory held, throughput, cache hits).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::process::Command;

use common::{preset_dto, repo_path};
use kvlab::engine::{Report, Simulation};
use kvlab::formats::mission::read_mission_dto;
use kvlab::formats::preset::{ArrivalDto, PresetDto, TraceArrivalDto};
use kvlab::formats::trace_fit::{fit_workload, FitOptions};

/// One fitted preset: its id, the sample, the reader's options and the fit's interval and class
/// name: scripts/trace-presets.sh's flags, here as the preset's trace arrival.
struct Recipe {
    id: &'static str,
    trace: &'static str,
    start_s: Option<f64>,
    speed: Option<f64>,
    sample_one_in: Option<u32>,
    bin_s: f64,
    class: &'static str,
}

const RECIPES: [Recipe; 3] = [
    Recipe {
        id: "azure-conversation",
        trace: "azure_llm_2023_conv.head2000.csv",
        start_s: Some(60.0),
        speed: Some(2.0),
        sample_one_in: None,
        bin_s: 10.0,
        class: "conversation",
    },
    Recipe {
        id: "azure-code",
        trace: "azure_llm_2023_code.head2000.csv",
        start_s: Some(180.0),
        speed: None,
        sample_one_in: None,
        bin_s: 1.0,
        class: "code",
    },
    Recipe {
        id: "mooncake-conversation",
        trace: "mooncake_fast25_conversation.head2000.jsonl",
        start_s: None,
        speed: None,
        sample_one_in: Some(4),
        bin_s: 10.0,
        class: "conversation",
    },
];

fn sample_path(name: &str) -> std::path::PathBuf {
    repo_path(&format!("../shared/traces/{name}"))
}

/// The preset with its arrivals replaced by the recipe's window of the real trace.
fn replay_of(r: &Recipe, dto: &PresetDto) -> PresetDto {
    let text = std::fs::read_to_string(sample_path(r.trace)).unwrap();
    let mut replay = dto.clone();
    replay.workload.arrival = ArrivalDto::Trace(TraceArrivalDto {
        text: Some(text),
        max_tokens: dto.workload.classes[0].max_tokens,
        start_s: r.start_s,
        speed: r.speed,
        sample_one_in: r.sample_one_in,
        ..TraceArrivalDto::default()
    });
    replay
}

fn run(dto: &PresetDto) -> Report {
    Simulation::new(dto.to_config().unwrap()).unwrap().run_to_end()
}

#[test]
fn each_shipped_trace_preset_is_the_fit_of_its_window() {
    for r in &RECIPES {
        let shipped = preset_dto(r.id);
        let ArrivalDto::Trace(arrival) = replay_of(r, &shipped).workload.arrival else { unreachable!() };
        let trace = arrival.read().unwrap();
        let opts = FitOptions {
            duration_s: shipped.duration_s,
            bin_s: r.bin_s,
            max_tokens: shipped.workload.classes[0].max_tokens,
            class_name: r.class.into(),
        };
        let fit = fit_workload(&trace, &opts).unwrap();
        assert_eq!(fit.workload, shipped.workload, "{}: the shipped workload is not the fit of its window", r.id);
    }
}

#[test]
fn the_script_writes_the_shipped_files() {
    let out = std::env::temp_dir().join(format!("kvlab-trace-presets-{}", std::process::id()));
    let status = Command::new("bash")
        .arg(repo_path("scripts/trace-presets.sh"))
        .arg(&out)
        .env("KVLAB", env!("CARGO_BIN_EXE_kvlab"))
        .env("KVLAB_TRACES", repo_path("../shared/traces"))
        .status()
        .expect("bash runs");
    assert!(status.success());
    for r in &RECIPES {
        let written = std::fs::read_to_string(out.join(format!("{}.json", r.id))).unwrap();
        let shipped = std::fs::read_to_string(repo_path(&format!("assets/presets/{}.json", r.id))).unwrap();
        assert_eq!(written.trim_end(), shipped.trim_end(), "{}: run scripts/trace-presets.sh and commit", r.id);
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn mission_10_plays_the_shipped_code_traffic() {
    let text = std::fs::read_to_string(repo_path("assets/missions/m10-code-traffic.json")).unwrap();
    let mission = read_mission_dto(&text).unwrap();
    let code = preset_dto("azure-code");
    assert_eq!(mission.preset.workload, code.workload);
    assert_eq!(mission.preset.scheduler, code.scheduler, "the broken setup is the shipped preset's server");
}

/// One figure of a report.
type Figure = fn(&Report) -> f64;

/// Mean of a report figure over five seeds of the fitted preset.
fn fitted_mean(dto: &PresetDto, figure: impl Fn(&Report) -> f64) -> f64 {
    let mut sum = 0.0;
    for seed in 1..=5 {
        let mut d = dto.clone();
        d.seed = seed;
        sum += figure(&run(&d));
    }
    sum / 5.0
}

#[test]
fn fitted_traffic_holds_the_memory_and_throughput_of_the_real_window() {
    // The fit sets rates per interval and the lengths' mean and p99; what the server then holds
    // and produces is not fitted, and must come out near the replay of the rows themselves.
    for r in &RECIPES {
        let fitted = preset_dto(r.id);
        let real = run(&replay_of(r, &fitted));
        let checks: [(&str, Figure, f64); 2] = [
            ("kv.allocated_fraction_mean", |x| x.kv.allocated_fraction_mean, 0.20),
            // Prefill attention costs the square of a prompt's length, so lengths drawn from a
            // log-normal of the window's mean and p99 need not cost what the real rows cost:
            // Mooncake's 128k-token tail comes out 19% faster.
            ("output_tokens_per_s", |x| x.output_tokens_per_s, 0.20),
        ];
        for (name, figure, tolerance) in checks {
            let (want, got) = (figure(&real), fitted_mean(&fitted, figure));
            let error = (got - want).abs() / want;
            eprintln!("{}: {name} fitted {got:.4} (mean of 5 seeds), real {want:.4}", r.id);
            assert!(error <= tolerance, "{}: {name} fitted {got:.4}, real {want:.4} ({:.0}% off)", r.id, error * 100.0);
        }
    }
}

#[test]
fn the_fitted_mooncake_window_hits_the_prefix_cache_as_the_real_one_does() {
    let r = &RECIPES[2];
    let fitted = preset_dto(r.id);
    let real = run(&replay_of(r, &fitted)).prefix_cache_hit_rate;
    let got = fitted_mean(&fitted, |x| x.prefix_cache_hit_rate);
    eprintln!("mooncake-conversation: prefix_cache_hit_rate fitted {got:.4} (mean of 5 seeds), real {real:.4}");
    assert!(real > 0.02, "the window shares prefixes ({real})");
    assert!((got - real).abs() <= 0.01, "fitted hit rate {got:.4}, real {real:.4}");
}
