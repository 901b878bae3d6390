//! Values the lab refused, held in their controls (`session::pending`), natively: for every
//! control with a refusal the report shown is the running setup's, the page says which setup
//! runs, the refusal shown is judged against the setup on screen (naming its GPU and model), and
//! Undo or Escape put the running value back; the Sweep panel refuses to run while a value is
//! held, and clears the results a refused run would otherwise sit over.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{mission_session, session};
use kvlab::session::command::{Command, Place};
use kvlab::session::control_edit::value_for;
use kvlab::session::dispatch::Session;
use serde_json::{json, Value};

mod held;

use held::assert_honest;

fn set(path: &str, value: Value) -> Command {
    Command::Set { path: path.into(), value }
}

fn report(s: &Session) -> String {
    serde_json::to_string(&s.lab().runs[0].report()).unwrap()
}

/// Drives a refused value of `path` and checks the page: held, the figures unchanged, the note
/// naming both values; Escape (discard) puts the running value back.
fn refused_is_held(mut s: Session, path: &str, value: Value, reason: &str) -> Session {
    s.apply(Command::Seek { t_s: 5.0 }, 0.0).unwrap();
    let before = report(&s);
    let running = value_for(&s.lab().state, path).unwrap();
    let r = s.apply(set(path, value.clone()), 0.0).unwrap_err();
    assert_eq!(r.place, Place::Control(path.into()));
    assert!(r.message.contains(reason), "{path}: {}", r.message);
    assert_eq!(s.pending().held(path), Some(&value), "the control keeps {value}");
    assert!(s.pending().refusal(path).is_some_and(|w| w.contains(reason)), "{:?}", s.pending().refusals());
    assert_eq!(report(&s), before, "the run shown is the one before");
    assert_eq!(value_for(&s.lab().state, path).unwrap(), running, "the lab runs the accepted value");
    assert_honest(&s);
    // Play runs the running setup, and says so.
    s.apply(Command::Step, 0.0).unwrap();
    assert!(s.running_note().is_some());
    assert_honest(&s);
    s.apply(Command::Discard { path: Some(path.into()) }, 0.0).unwrap();
    assert!(s.pending().is_empty() && s.running_note().is_none(), "Escape lets go of it");
    assert_honest(&s);
    s
}

#[test]
fn swap_in_mission_3_is_held_with_advice_the_mission_allows() {
    let mut s = mission_session("m3-preemption-storm");
    let r = s.apply(set("scheduler.preemption", json!("swap")), 0.0).unwrap_err();
    assert!(r.message.contains("use \"recompute\""), "{}", r.message);
    assert!(!r.message.contains("to \"v0\""), "advice the mission forbids: {}", r.message);
    assert!(r.message.contains("mission 3 keeps scheduler.engine at \"v1\""), "{}", r.message);
    assert_eq!(s.running_note().unwrap(), "Running with recompute — your choice swap is not applied.");
    assert_honest(&s);
    // Play runs recompute; the report says so.
    s.apply(Command::Play, 0.0).unwrap();
    s.tick(1000.0, 50.0, &|| 0.0);
    assert_eq!(s.lab().runs[0].config.scheduler.preemption, kvlab::engine::PreemptionMode::Recompute);
    assert_honest(&s);
    // Another knob applies alone; swap stays held.
    s.apply(set("scheduler.max_num_seqs", json!(200)), 0.0).unwrap();
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(200));
    assert!(s.pending().held("scheduler.preemption").is_some());
    assert_honest(&s);
    // Undo first returns the held control to the running value, then undoes the setup.
    s.apply(Command::Undo, 0.0).unwrap();
    assert!(s.pending().is_empty());
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(200), "Undo took the held value first");
    s.apply(Command::Undo, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(256));
    refused_is_held(mission_session("m3-preemption-storm"), "scheduler.preemption", json!("swap"), "no swap");
}

#[test]
fn seventy_b_on_one_h100_is_held_while_the_8b_runs_from_the_gpu() {
    let mut s = refused_is_held(session("paged-default"), "model", json!("llama-3-70b"), "tensor_parallel_size");
    s.apply(set("model", json!("llama-3-70b")), 0.0).unwrap_err();
    // KV memory from the GPU: fine for the 8B that runs, so it applies; the 70B stays held and
    // its refusal is judged again, from the GPU.
    s.apply(set("kv_memory.kind", json!("gpu")), 0.0).unwrap();
    assert!(s.lab().state.preset.gpu_memory_utilization.is_some());
    assert_eq!(s.lab().state.preset.model, json!("llama-3-8b"));
    let note = s.running_note().unwrap();
    assert_eq!(note, "Running with llama-3-8b — your choice llama-3-70b is not applied.");
    assert!(s.pending().refusal("model").is_some_and(|w| w.contains("tensor_parallel_size")));
    assert_honest(&s);
    // Four GPUs: the screen setup runs, every held value with it.
    s.apply(set("tensor_parallel_size", json!(4)), 0.0).unwrap();
    assert!(s.pending().is_empty());
    assert_eq!(s.lab().state.preset.model, json!("llama-3-70b"));
    assert_honest(&s);
}

#[test]
fn an_l4_and_1000_gib_give_one_refusal_naming_the_l4() {
    let mut s = refused_is_held(session("paged-default"), "gpu", json!("l4"), "l4");
    s.apply(set("gpu", json!("l4")), 0.0).unwrap_err();
    let r = s.apply(set("kv_memory_gib", json!("1000")), 0.0).unwrap_err();
    assert!(!r.message.contains("h100"), "judged against the H100 that runs: {}", r.message);
    assert_eq!(s.pending().refusals().len(), 1, "{:?}", s.pending().refusals());
    assert!(s.pending().refusals()[0].1.contains("l4"), "{:?}", s.pending().refusals());
    assert_eq!(s.screen().preset.kv_memory_gib, Some(1000.0), "the slider and its box show 1000");
    assert_honest(&s);
    // A size that fits the L4: everything on screen runs.
    s.apply(set("kv_memory_gib", json!("2")), 0.0).unwrap();
    assert!(s.pending().is_empty(), "{:?}", s.pending().refusals());
    assert_eq!(value_for(&s.lab().state, "gpu"), Some(json!("l4")));
    assert_honest(&s);
}

#[test]
fn kv_gib_block_size_and_tensor_parallelism_are_held_when_refused() {
    refused_is_held(session("paged-default"), "kv_memory_gib", json!("1000"), "GiB");
    refused_is_held(session("paged-default"), "allocator.block_size", json!("0"), "block_size");
    refused_is_held(session("paged-default"), "tensor_parallel_size", json!("3"), "tensor_parallel_size");
    // Text that is not a number has its own refusal, beside another held value's.
    let mut s = session("paged-default");
    s.apply(set("allocator.block_size", json!("0")), 0.0).unwrap_err();
    s.apply(set("scheduler.max_num_seqs", json!("many")), 0.0).unwrap_err();
    assert_eq!(s.pending().refusals().len(), 2, "{:?}", s.pending().refusals());
    assert_honest(&s);
    s.apply(Command::Undo, 0.0).unwrap();
    s.apply(Command::Undo, 0.0).unwrap();
    assert!(s.pending().is_empty());
    assert!(s.apply(Command::Undo, 0.0).is_err(), "nothing left to undo");
}

#[test]
fn a_new_setup_lets_go_of_held_values_and_a_host_leaves_none() {
    let mut s = session("paged-default");
    s.apply(set("gpu", json!("l4")), 0.0).unwrap_err();
    s.apply(Command::Load { preset: json!("bursty") }, 0.0).unwrap();
    assert!(s.pending().is_empty());
    let r = s.apply_with(set("gpu", json!("l4")), 0.0, false).unwrap_err();
    assert!(r.message.contains("l4"), "{}", r.message);
    assert!(s.pending().is_empty(), "a host page's refused set holds nothing on screen");
    assert_honest(&s);
}

#[test]
fn sweeps_and_searches_wait_for_held_values_and_refused_runs_clear_old_results() {
    let mut s = session("paged-default");
    s.apply(Command::Sweep { knob: "scheduler.max_num_seqs".into(), values: "64,128".into() }, 0.0).unwrap();
    while s.step_jobs(1e9, &|| 0.0) {}
    // Refused sweep values: the old sweep is not left under "Sweep not run".
    let r = s.apply(Command::Sweep { knob: "kv_memory_gib".into(), values: "4, x".into() }, 0.0).unwrap_err();
    assert_eq!(r.place, Place::Sweep);
    assert!(s.panel().job.is_none(), "the last sweep is cleared under the refusal");
    assert_honest(&s);
    // A search, then a refused target: its answer goes too.
    let search = |t: &str| Command::KvSearch { target: t.into(), range: "2:4".into(), step: "1".into() };
    s.apply(search("100000"), 0.0).unwrap();
    while s.step_jobs(1e9, &|| 0.0) {}
    assert!(s.panel().search.is_some());
    s.apply(search("abc"), 0.0).unwrap_err();
    assert!(s.panel().search.is_none(), "no answer under \"Search not run\"");
    // A held value: neither runs, and the refusal names the held control.
    s.apply(set("gpu", json!("l4")), 0.0).unwrap_err();
    let r = s.apply(Command::Sweep { knob: "scheduler.max_num_seqs".into(), values: "64".into() }, 0.0).unwrap_err();
    assert!(r.message.contains("gpu holds l4, which is not applied"), "{}", r.message);
    let r = s.apply(search("2000"), 0.0).unwrap_err();
    assert!(r.message.contains("gpu holds l4"), "{}", r.message);
    assert_honest(&s);
}

#[test]
fn two_causes_give_two_reasons_each_at_its_control() {
    let mut s = session("paged-default");
    s.apply(set("allocator.block_size", json!("0")), 0.0).unwrap_err();
    let r = s.apply(set("model", json!("llama-3-70b")), 0.0).unwrap_err();
    assert!(r.message.contains("tensor_parallel_size 2 or more"), "{}", r.message);
    assert!(s.pending().refusal("allocator.block_size").is_some_and(|w| w.contains("block_size")));
    assert_eq!(s.pending().refusals().len(), 2, "{:?}", s.pending().refusals());
    assert_honest(&s);
}

#[test]
fn the_metrics_say_why_the_queue_waits() {
    // Contiguous slabs at 40 s: the head's slab fits in no hole, though memory is free.
    let mut s = session("contiguous-default");
    s.apply(Command::Seek { t_s: 40.0 }, 0.0).unwrap();
    let note = s.lab().runs[0].queue_note().expect("a queue waits at 40 s");
    assert!(note.contains("larger than any hole") && note.contains("requests behind it wait"), "{note}");
    assert!(note.contains("external fragmentation"), "the hole too small is named: {note}");
    // Paged blocks on the same traffic admit it: nothing to explain.
    s.apply(set("allocator.kind", json!("paged")), 0.0).unwrap();
    assert_eq!(s.lab().runs[0].queue_note(), None);
}

/// A value held behind another refusal names itself in its reason: 1000 GiB typed while a 70B
/// model and an L4 are held says 1000 as well as why the setup on screen cannot run.
#[test]
fn a_value_held_behind_another_refusal_names_itself() {
    let mut s = session("paged-default");
    s.apply(set("model", json!("llama-3-70b")), 0.0).unwrap_err();
    s.apply(set("gpu", json!("l4")), 0.0).unwrap_err();
    let r = s.apply(set("kv_memory_gib", json!("1000")), 0.0).unwrap_err();
    assert!(r.message.starts_with("kv_memory_gib: 1000 is held, not applied, while"), "{}", r.message);
    assert!(r.message.contains("llama-3-70b") && r.message.contains("l4"), "{}", r.message);
    assert_honest(&s);
}
