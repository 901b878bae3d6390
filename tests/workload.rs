//! Synthetic traffic on its own (`engine::workload`): the log-normal fitted to a mean and a p99,
//! the piecewise rate schedule of bursts, Poisson arrivals that follow it, weighted classes,
//! lengths clamped to what the model allows, and CSV trace parsing and replay.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::workload::{
    generate, rate_schedule, Arrival, Burst, LengthDist, RateSegment, TraceRow, UserClass, WorkloadConfig,
};
use kvlab::formats::trace::parse_trace_csv;

const Z99: f64 = 2.326_347_874_040_841;

fn class(name: &str, weight: f64, prompt: (f64, f64), output: (f64, f64), n: u32) -> UserClass {
    UserClass {
        name: name.into(),
        weight,
        prompt_tokens: LengthDist { mean: prompt.0, p99: prompt.1 },
        output_tokens: LengthDist { mean: output.0, p99: output.1 },
        max_tokens: 2048,
        n,
        shared_prefix_tokens: 0,
        tenants: 1,
    }
}

fn poisson(rate_per_s: f64, bursts: Vec<Burst>, classes: Vec<UserClass>) -> WorkloadConfig {
    WorkloadConfig { arrival: Arrival::Poisson { rate_per_s, bursts }, classes }
}

#[test]
fn the_lognormal_fit_reproduces_the_mean_and_the_p99() {
    for (mean, p99) in [(1100.0, 2600.0), (250.0, 1150.0), (10.0, 10.0), (600.0, 1800.0)] {
        let (mu, sigma) = LengthDist { mean, p99 }.lognormal_params().unwrap();
        let fitted_mean = (mu + sigma * sigma / 2.0).exp();
        let fitted_p99 = (mu + Z99 * sigma).exp();
        assert!((fitted_mean - mean).abs() < 1e-6 * mean, "mean {mean}: fitted {fitted_mean}");
        assert!((fitted_p99 - p99).abs() < 1e-6 * p99, "p99 {p99}: fitted {fitted_p99}");
    }
}

#[test]
fn impossible_length_distributions_say_why() {
    let err = |mean, p99| LengthDist { mean, p99 }.lognormal_params().unwrap_err();
    assert!(err(0.5, 10.0).contains("at least 1 token"));
    assert!(err(f64::NAN, 10.0).contains("at least 1 token"));
    assert!(err(100.0, 50.0).contains("must be at least the mean"));
    assert!(err(100.0, 1e9).contains("too far above the mean"));
}

#[test]
fn bursts_cut_the_rate_schedule_and_the_later_burst_wins() {
    let bursts = [
        Burst { start_s: 2.0, end_s: 4.0, rate_per_s: 20.0 },
        Burst { start_s: 3.0, end_s: 5.0, rate_per_s: 50.0 },
        Burst { start_s: 8.0, end_s: 12.0, rate_per_s: 90.0 },
    ];
    let s = rate_schedule(5.0, &bursts, 10_000_000);
    let seg = |start_s: u64, rate_per_s: f64| RateSegment { start_us: start_s * 1_000_000, rate_per_s };
    assert_eq!(s, [seg(0, 5.0), seg(2, 20.0), seg(3, 50.0), seg(4, 50.0), seg(5, 5.0), seg(8, 90.0)]);
    assert_eq!(rate_schedule(5.0, &[], 1_000_000), [seg(0, 5.0)]);
}

#[test]
fn poisson_arrivals_follow_the_rate_and_stay_inside_the_run() {
    let w = poisson(
        10.0,
        vec![Burst { start_s: 50.0, end_s: 60.0, rate_per_s: 100.0 }],
        vec![class("chat", 1.0, (100.0, 300.0), (50.0, 150.0), 1)],
    );
    let reqs = generate(&w, 60_000_000, 3, 8192);
    let before = reqs.iter().filter(|r| r.arrival_us < 50_000_000).count() as f64;
    let during = reqs.iter().filter(|r| r.arrival_us >= 50_000_000).count() as f64;
    assert!((400.0..600.0).contains(&before), "~500 arrivals at 10/s for 50 s, got {before}");
    assert!((850.0..1150.0).contains(&during), "~1000 arrivals at 100/s for 10 s, got {during}");
    assert!(reqs.windows(2).all(|p| p[0].arrival_us <= p[1].arrival_us));
    assert!(reqs.iter().all(|r| r.arrival_us < 60_000_000));
    assert!(reqs.iter().enumerate().all(|(i, r)| r.id == i as u32), "ids count arrivals");
}

#[test]
fn classes_are_picked_by_weight_and_lengths_respect_the_model() {
    let w = poisson(
        50.0,
        Vec::new(),
        vec![
            class("short", 3.0, (100.0, 300.0), (50.0, 150.0), 1),
            class("long", 1.0, (3000.0, 7000.0), (900.0, 4000.0), 2),
        ],
    );
    let reqs = generate(&w, 60_000_000, 11, 4096);
    let long = reqs.iter().filter(|r| r.class == 1).count() as f64 / reqs.len() as f64;
    assert!((0.2..0.3).contains(&long), "weight 1 of 4 draws about a quarter, got {long}");
    for r in &reqs {
        assert!(r.prompt_tokens >= 1 && r.prompt_tokens < 4096, "prompt {} within max_model_len", r.prompt_tokens);
        assert_eq!(r.n(), if r.class == 1 { 2 } else { 1 });
        for &o in &r.output_tokens {
            assert!(o >= 1 && o <= r.max_tokens.min(4096 - r.prompt_tokens), "output {o} capped");
        }
    }
}

#[test]
fn the_same_seed_draws_the_same_requests() {
    let w = poisson(8.0, Vec::new(), vec![class("chat", 1.0, (1100.0, 2600.0), (250.0, 1150.0), 1)]);
    assert_eq!(generate(&w, 10_000_000, 5, 8192), generate(&w, 10_000_000, 5, 8192));
    assert_ne!(generate(&w, 10_000_000, 5, 8192), generate(&w, 10_000_000, 6, 8192));
}

#[test]
fn trace_csv_rows_parse_sort_and_name_their_line() {
    let rows = parse_trace_csv("arrival_s,prompt_tokens,output_tokens,n\n# a comment\n\n2.5, 100, 20\n0.5,300,40,3\n")
        .unwrap();
    let row = TraceRow::new;
    assert_eq!(rows, [row(0.5, 300, 40, 3), row(2.5, 100, 20, 1)]);
    let err = |text: &str| parse_trace_csv(text).unwrap_err();
    assert_eq!(err("1,2"), "line 1: expected arrival_s,prompt_tokens,output_tokens[,n]");
    assert!(err("0,10,10\n-1,10,10").starts_with("line 2: arrival_s"));
    assert!(err("0,0,10").contains("prompt_tokens must be a whole number from 1 to 1000000"));
    assert!(err("0,10,10,17").contains("n must be a whole number from 1 to 16"));
}

#[test]
fn a_trace_replays_its_rows_clamped_to_the_model() {
    let rows = parse_trace_csv("0,100,20\n1,9000,5000,2\n99,10,10").unwrap();
    let w = WorkloadConfig {
        arrival: Arrival::Trace { rows: rows.into(), max_tokens: 1000, hash_block_tokens: 16 },
        classes: Vec::new(),
    };
    let reqs = generate(&w, 60_000_000, 1, 4096);
    assert_eq!(reqs.len(), 2, "the row after the run's end is left out");
    assert_eq!((reqs[0].arrival_us, reqs[0].prompt_tokens, reqs[0].output_tokens.clone()), (0, 100, vec![20]));
    assert_eq!(reqs[1].prompt_tokens, 4095, "a prompt is clamped below max_model_len");
    assert_eq!(reqs[1].output_tokens, [1, 1], "outputs are clamped to what is left (n = 2)");
}
