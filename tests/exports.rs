//! What the lab exports names its whole setup: a report exported after the model, the GPU and
//! the tensor parallelism were changed carries that setup and re-imports as the same run (the
//! Load dialog and `kvlab run` take the file), file names say the setup, and sweeps and searches
//! carry the setup they ran on and how long each run went.

mod common;

use common::session;
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset_dto;
use kvlab::formats::report::{digest, exported_report};
use kvlab::formats::sniff::{sniff, Document};
use kvlab::session::command::Command;
use kvlab::session::kv_search::results_json;
use kvlab::session::title::{describe, file_stem};
use serde_json::{json, Value};

fn set(path: &str, value: Value) -> Command {
    Command::Set { path: path.into(), value }
}

#[test]
fn an_exported_report_names_its_setup_and_reimports_as_the_same_run() {
    let mut s = session("paged-default");
    for (path, value) in [
        ("tensor_parallel_size", json!(4)),
        ("model", json!("llama-3-70b")),
        ("gpu", json!("h200")),
        ("kv_memory_gib", json!(24)),
        ("seed", json!(5)),
    ] {
        s.apply(set(path, value.clone()), 0.0).unwrap_or_else(|e| panic!("{path} = {value}: {e:?}"));
    }
    s.apply(Command::SeekEnd, 0.0).unwrap();
    let lab = s.lab();
    let run = &lab.runs[0];
    let report = run.report();
    let (title, at_s) = (describe(&lab.state), lab.t_us as f64 / 1e6);
    let text =
        serde_json::to_string_pretty(&exported_report(&lab.state.preset, &title, at_s, std::slice::from_ref(&report)))
            .unwrap();

    // The file says what ran: the schema, the setup's words, and the whole preset.
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(sniff(&doc), Document::Report);
    assert_eq!(doc["title"], "Paged · 16-token blocks · 24 GiB KV · llama-3-70b on h200 × 4");
    let setup = &doc["setup"];
    assert_eq!(
        (&setup["model"], &setup["gpu"], &setup["tensor_parallel_size"], &setup["kv_memory_gib"], &setup["seed"]),
        (&json!("llama-3-70b"), &json!("h200"), &json!(4), &json!(24.0), &json!(5)),
        "{setup}"
    );
    assert!(setup["scheduler"].is_object() && setup["workload"].is_object() && setup["allocator"].is_object());
    // The report's own fields are still the contract's (docs/REPORT.md), top level.
    assert_eq!(doc["kv"], serde_json::to_value(&report).unwrap()["kv"]);
    assert_eq!(file_stem(&lab.state), "kvlab-paged-16-token-blocks-24-gib-kv-llama-3-70b-on-h200-x-4");

    // Re-imported (as the Load dialog and `kvlab run` read it), the setup gives the same run.
    let again = parse_preset_dto(&text).expect("a report re-imports as its setup");
    assert_eq!(again, lab.state.preset);
    let mut sim = Simulation::new(again.to_config().unwrap()).unwrap();
    sim.run_until(lab.t_us);
    assert_eq!(serde_json::to_value(sim.report()).unwrap(), serde_json::to_value(&report).unwrap());
    assert_eq!(digest(&sim), digest(&run.panels()[0]), "the same run, bit for bit");

    // A report whose setup is damaged names the field inside it.
    let mut broken = doc.clone();
    broken["setup"]["scheduler"]["max_num_seqs"] = json!("lots");
    let e = parse_preset_dto(&broken.to_string()).unwrap_err();
    assert!(e.field.starts_with("setup.scheduler.max_num_seqs"), "{e}");
}

#[test]
fn compare_mode_exports_both_reports_with_one_setup() {
    let mut s = session("paged-default");
    s.apply(Command::Compare { on: true }, 0.0).unwrap();
    s.apply(Command::SeekEnd, 0.0).unwrap();
    let lab = s.lab();
    let reports: Vec<_> = lab.runs.iter().map(|r| r.report()).collect();
    let doc = exported_report(&lab.state.preset, &describe(&lab.state), 60.0, &reports);
    assert_eq!(doc["reports"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        (&doc["reports"][0]["allocator"], &doc["reports"][1]["allocator"]),
        (&json!("contiguous"), &json!("paged"))
    );
    assert!(file_stem(&lab.state).starts_with("kvlab-contiguous-vs-paged-"), "{}", file_stem(&lab.state));
    assert_eq!(parse_preset_dto(&doc.to_string()).unwrap(), lab.state.preset);
}

#[test]
fn sweeps_and_searches_carry_their_setup_and_horizon() {
    let mut s = session("paged-default");
    s.apply(set("model", json!("llama-3-8b")), 0.0).unwrap();
    s.apply(set("kv_memory_gib", json!(12)), 0.0).unwrap();
    let preset = serde_json::to_value(&s.lab().state.preset).unwrap();
    s.apply(Command::Sweep { knob: "scheduler.max_num_seqs".into(), values: "64,128".into() }, 0.0).unwrap();
    while s.step_jobs(1e9, &|| 0.0) {}
    let sweep = s.panel().job.as_ref().unwrap().results_json();
    assert_eq!((&sweep["setup"], &sweep["run_s"]), (&preset, &json!(60.0)));
    // The setup changes after the sweep ran: the sweep keeps the one it ran on.
    s.apply(set("kv_memory_gib", json!(14)), 0.0).unwrap();
    assert_eq!(s.panel().job.as_ref().unwrap().results_json()["setup"], preset);

    let preset = serde_json::to_value(&s.lab().state.preset).unwrap();
    s.apply(Command::KvSearch { target: "2000".into(), range: "4:16".into(), step: "4".into() }, 0.0).unwrap();
    let search = results_json(s.panel().search.as_ref().unwrap());
    assert_eq!(search["setup"], preset);
    assert_eq!(search["checked_over_s"], 180.0, "{search}");
}
