//! `kvlab validate --cross`: every real run predicted with clock constants fitted without it
//! (leave-one-out, `formats::cross_validation`), on the roofline and on the kernel clock (`--clock
//! kernels`). The held-out error, overall and per GPU, may not grow past the committed one
//! (tests/golden/clock_cross.json, tests/golden/clock_cross_kernels.json) by more than a
//! percentage point, so a change that predicts real runs worse fails; every replayed run is
//! predicted, on at least five GPUs. Regenerate on purpose with
//! `KVLAB_BLESS=1 cargo test --test clock_cross`.
//! Reads the real runs from `../shared/validation/` (CI has it).

mod common;

use std::collections::BTreeMap;

use kvlab::engine::clock::{kernel_measured_runs, measured_runs};
use kvlab::formats::cross_validation::{keep_up_flips, leave_one_out, summarize, CrossSummary};
use kvlab::formats::kernel_tables::with_kernels;
use kvlab::formats::validation::{all_cases, replay_all};
use kvlab::shipped::{PUBLISHED_RUNS, VALIDATION_RUNS};

/// Percentage points a median may grow before the test fails.
const SLACK_PP: f64 = 1.0;

#[test]
fn the_held_out_error_of_every_run_predicted_without_it_does_not_grow() {
    held_out_error_does_not_grow(false, "tests/golden/clock_cross.json");
}

#[test]
fn on_the_kernel_clock_the_held_out_error_does_not_grow() {
    held_out_error_does_not_grow(true, "tests/golden/clock_cross_kernels.json");
}

fn held_out_error_does_not_grow(kernels: bool, expectations: &str) {
    let data = common::repo_path("../shared/validation");
    assert!(data.is_dir(), "{} is missing: the real vLLM runs live there (CI has ../shared)", data.display());
    let read = |rel: &str| std::fs::read_to_string(data.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let (mut cases, _) = all_cases(VALIDATION_RUNS, PUBLISHED_RUNS, &read).expect("the validation lists read");
    if kernels {
        for c in &mut cases {
            c.config = with_kernels(std::mem::take(&mut c.config));
        }
        assert!(cases.iter().filter(|c| c.config.runs_on_kernels()).count() > 250, "most runs price from kernels");
    }
    let results = replay_all(cases);
    let cross = leave_one_out(&results);
    assert_eq!(cross.len(), results.len(), "every case is predicted");
    for c in &cross {
        assert!(!c.errors.is_empty(), "{}: no figure compared", c.result.case.id);
        // A fit run trains the fits of its GPU and engine generation, and is never predicted by
        // one of them.
        if !c.held_out {
            assert!(
                !c.constants_from.starts_with("every fit run"),
                "{}: predicted from a fit that saw it",
                c.result.case.id
            );
        }
    }
    let (all, per_gpu) = summarize(&cross);
    if !kernels {
        // The page quotes each GPU's held-out error beside the latencies, on constants of its
        // own or a sibling's.
        for (gpu, s) in &per_gpu {
            assert_eq!(
                measured_runs(gpu),
                (s.runs, round1(s.median_abs_error_pct)),
                "{gpu}: assets/clock/constants.json's held_out.roofline is not today's; run kvlab validate --cross --write assets/clock/constants.json"
            );
        }
    } else {
        // `kvlab run --clock kernels` quotes it for the GPUs with kernel tables.
        for (gpu, s) in per_gpu.iter().filter(|(g, _)| kvlab::shipped::kernel_tables(g).is_some()) {
            assert_eq!(
                kernel_measured_runs(gpu),
                Some((s.runs, round1(s.median_abs_error_pct))),
                "{gpu}: assets/clock/constants.json's held_out.kernels is not today's; run kvlab validate --cross --clock kernels --write assets/clock/constants.json"
            );
        }
    }
    assert!(per_gpu.len() >= 5, "runs on {} GPUs: {:?}", per_gpu.len(), per_gpu.keys());
    let held_out = CrossSummary::of(cross.iter().filter(|c| c.held_out));
    let mut actual: BTreeMap<String, f64> =
        per_gpu.iter().map(|(g, s)| (g.clone(), round1(s.median_abs_error_pct))).collect();
    actual.insert("all".into(), round1(all.median_abs_error_pct));
    actual.insert("held_out".into(), round1(held_out.median_abs_error_pct));
    // Keep-up verdicts the prediction gets wrong (vLLM's TTFT under a second, kvlab's not, or the
    // reverse): their count may not grow at all.
    let flips = keep_up_flips(&cross).len() as f64;
    let path = common::repo_path(expectations);
    if std::env::var_os("KVLAB_BLESS").is_some() {
        actual.insert("keep_up_flips".into(), flips);
        std::fs::write(&path, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).expect("expectations file; create it with KVLAB_BLESS=1");
    let mut expected: BTreeMap<String, f64> = serde_json::from_str(&text).unwrap();
    let pinned_flips = expected.remove("keep_up_flips").expect("keep_up_flips is pinned");
    assert!(
        flips <= pinned_flips,
        "{flips} keep-up verdicts flip (was {pinned_flips}): `kvlab validate --cross` lists them"
    );
    let worse: Vec<String> = actual
        .iter()
        .filter_map(|(k, &now)| match expected.get(k) {
            Some(&was) if now <= was + SLACK_PP => None,
            Some(&was) => Some(format!("{k}: {now:.1}% (was {was:.1}%)")),
            None => Some(format!("{k}: {now:.1}%, not pinned")),
        })
        .collect();
    assert!(
        worse.is_empty(),
        "the leave-one-out error got worse:\n{}\nIf intended, regenerate with KVLAB_BLESS=1 cargo test --test clock_cross and update docs/FIDELITY.md",
        worse.join("\n")
    );
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
