//! The step-time model against real vLLM runs (`kvlab validate`): every replayed figure's error
//! may not grow past the committed expectation (tests/golden/clock_fidelity.json, plus one
//! percentage point of slack), so a change that worsens fidelity fails; the constants in
//! `assets/clock/constants.json` are what `kvlab validate --fit` gives on the runs marked "fit"; and
//! the run counts the page quotes (`clock::measured_runs`) are today's (their held-out errors:
//! tests/clock_cross.rs).
//! Regenerate the expectations on purpose with `KVLAB_BLESS=1 cargo test --test clock_fidelity`.
//! Reads the real runs from `../shared/validation/` (CI has it).

mod common;

use std::collections::BTreeMap;

use kvlab::engine::clock::constants::kernel_host_for;
use kvlab::engine::clock::{clock_for, measured_gpus, measured_runs, ClockSource};
use kvlab::engine::clock_fit::{fit, loss};
use kvlab::engine::EngineVersion;
use kvlab::formats::kernel_tables::with_kernels;
use kvlab::formats::validation::{all_cases, fit_cases, per_gpu, replay_all, CaseResult, Role};
use kvlab::shipped::{PUBLISHED_RUNS, VALIDATION_RUNS};

const EXPECTATIONS: &str = "tests/golden/clock_fidelity.json";
/// Percentage points a figure's error may grow before the test fails.
const SLACK_PP: f64 = 1.0;

fn results() -> Vec<CaseResult> {
    let data = common::repo_path("../shared/validation");
    assert!(data.is_dir(), "{} is missing: the real vLLM runs live there (CI has ../shared)", data.display());
    let read = |rel: &str| std::fs::read_to_string(data.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let (cases, skipped) = all_cases(VALIDATION_RUNS, PUBLISHED_RUNS, &read).expect("the validation lists read");
    for s in &skipped {
        assert!(!s.reason.is_empty(), "{} is left out without a reason", s.id);
    }
    replay_all(cases)
}

#[test]
fn no_figure_is_further_from_real_vllm_than_committed() {
    let results = results();
    let actual: BTreeMap<String, BTreeMap<String, f64>> = results
        .iter()
        .map(|r| {
            let figures = r.errors.iter().map(|e| (e.figure.key().to_string(), (e.error_pct() * 10.0).round() / 10.0));
            (r.case.id.clone(), figures.collect())
        })
        .collect();
    let path = common::repo_path(EXPECTATIONS);
    if std::env::var_os("KVLAB_BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&actual).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).expect("expectations file; create it with KVLAB_BLESS=1");
    let expected: BTreeMap<String, BTreeMap<String, f64>> = serde_json::from_str(&text).unwrap();
    let mut worse = Vec::new();
    for (id, figures) in &actual {
        let Some(pinned) = expected.get(id) else {
            worse.push(format!("{id}: not in {EXPECTATIONS}"));
            continue;
        };
        for (figure, err) in figures {
            match pinned.get(figure) {
                Some(e) if err.abs() <= e.abs() + SLACK_PP => {}
                Some(e) => worse.push(format!("{id} {figure}: {err:+.1}% (was {e:+.1}%)")),
                None => worse.push(format!("{id} {figure}: {err:+.1}%, not pinned")),
            }
        }
    }
    for id in expected.keys().filter(|id| !actual.contains_key(*id)) {
        worse.push(format!("{id}: pinned but no longer replayed"));
    }
    assert!(
        worse.is_empty(),
        "fidelity against real vLLM runs got worse:\n{}\nIf intended, regenerate with KVLAB_BLESS=1 cargo test --test clock_fidelity and update docs/FIDELITY.md",
        worse.join("\n")
    );
}

#[test]
fn runs_fitted_on_agree_within_five_percent() {
    // The roofline's fit runs ("fit_host" ones fit only the kernel clock's host costs).
    for r in results().iter().filter(|r| r.case.role == Role::Fit) {
        for e in &r.errors {
            assert!(
                e.error_pct().abs() < 5.0,
                "{} {}: {:+.1}% on a run the clock was fitted to",
                r.case.id,
                e.figure.key(),
                e.error_pct()
            );
        }
    }
}

#[test]
fn the_page_quotes_todays_run_counts_and_errors() {
    let results = results();
    let summary = per_gpu(&results);
    for gpu in measured_gpus() {
        let (runs, _) = summary.get(gpu).copied().unwrap_or_else(|| panic!("no replayed run on {gpu}"));
        // The error the page quotes is the held-out one (tests/clock_cross.rs checks it).
        assert_eq!(measured_runs(gpu).0, runs, "{gpu}: assets/clock/constants.json's held_out.roofline");
        assert!(matches!(clock_for(gpu).1, ClockSource::Measured { .. }));
    }
    // A GPU without constants of its own (the H200, the A100) borrows a sibling's: its runs are
    // held out from the roofline's fits (its constants are the v1 engine's: the A100's fit runs
    // are vLLM v0's, fitted for the kernel clock's host costs only), they say how well the
    // borrowed constants carry over, and the page quotes them.
    for (gpu, (runs, _)) in summary.iter().filter(|(g, _)| !measured_gpus().any(|m| m == g.as_str())) {
        assert!(matches!(clock_for(gpu).1, ClockSource::Borrowed { .. }), "{gpu}");
        assert_eq!(measured_runs(gpu).0, *runs, "{gpu}: assets/clock/constants.json's held_out.roofline");
        assert!(
            fit_cases(&results, gpu, EngineVersion::V1).is_empty(),
            "{gpu} has runs to fit on but no measured constants"
        );
    }
}

#[test]
fn the_constants_are_what_the_fit_gives() {
    let results = results();
    for gpu in measured_gpus() {
        let cases = fit_cases(&results, gpu, EngineVersion::V1);
        assert!(!cases.is_empty(), "{gpu}: no run to fit on");
        let (committed, _) = clock_for(gpu);
        // Fitting again from the committed constants stays there (the fit is deterministic and
        // the committed values are its rounded optimum).
        let (refit, _) = fit(&cases, committed);
        let close = |a: f64, b: f64| (a - b).abs() <= 0.02 * a.abs().max(b.abs()).max(1.0);
        assert!(
            close(refit.bandwidth_efficiency, committed.bandwidth_efficiency)
                && close(refit.gemm_efficiency, committed.gemm_efficiency)
                && close(refit.fixed_step_us, committed.fixed_step_us)
                && close(refit.per_seq_us, committed.per_seq_us),
            "{gpu}: assets/clock/constants.json has {committed:?}, the fit gives {refit:?}; run kvlab validate --fit --write assets/clock/constants.json"
        );
    }
}

/// On the kernel clock, the host costs of each GPU and vLLM engine generation with runs to fit
/// (v1: the blog's batch-1 decodes and the closed-loop sweeps; v0: Lambda's 8B runs) are at the
/// fit's optimum: fitting again from them gains under 1% of the loss (the costs per step and per
/// sequence trade off along a flat valley, so the loss is what is pinned, not each constant's
/// digits). Run `kvlab validate --fit --clock kernels --write assets/clock/constants.json` to refit.
#[test]
fn the_kernel_clocks_host_costs_are_what_the_fit_gives() {
    let mut results = results();
    for r in &mut results {
        r.case.config = with_kernels(std::mem::take(&mut r.case.config));
    }
    let groups = [
        ("h100-sxm", EngineVersion::V1),
        ("h200", EngineVersion::V1),
        ("b200", EngineVersion::V1),
        ("a100-80gb", EngineVersion::V0),
        ("h100-sxm", EngineVersion::V0),
    ];
    for (gpu, engine) in groups {
        let cases = fit_cases(&results, gpu, engine);
        assert!(cases.len() >= 5, "{gpu} {engine:?}: {} runs to fit on", cases.len());
        let committed = kernel_host_for(gpu, engine);
        let at_committed = loss(&cases, &committed);
        let (refit, at_refit) = fit(&cases, committed);
        assert!(
            at_refit >= 0.99 * at_committed,
            "{gpu} {engine:?}: assets/clock/constants.json's host costs {committed:?} give a loss of \
             {at_committed:.4}, the fit {refit:?} {at_refit:.4}; run kvlab validate --fit --clock kernels \
             --write assets/clock/constants.json"
        );
    }
}
