//! The one dispatcher, natively: every command's JSON form (what a host page posts), refusals and
//! where they belong (beside the control of the path, under the search's fields, in the Sweep
//! panel, or on the page), undo and redo, mission play (paused at the start, stars only for runs
//! played to the end, never for a drag while the time shown is the end), loading by id and by
//! document, and the linked file a state remembers.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{mission_session, session};
use kvlab::session::command::{ChangeFrom, Command, DocKind, MissionAction, Place, Row};
use kvlab::session::dispatch::Session;
use kvlab::session::kv_search::SearchField;
use kvlab::session::lab::Lab;
use kvlab::session::missions;
use kvlab::session::presets;
use kvlab::session::url_state::{LabState, PageOptions};
use serde_json::json;

fn set(path: &str, value: serde_json::Value) -> Command {
    Command::Set { path: path.into(), value }
}

#[test]
fn every_command_reads_from_the_json_a_host_posts() {
    let cases = [
        (json!({"type": "play"}), Command::Play),
        (json!({"type": "seek", "t_s": 12.5}), Command::Seek { t_s: 12.5 }),
        (json!({"type": "set", "path": "allocator.block_size", "value": 32}), set("allocator.block_size", json!(32))),
        (json!({"type": "load", "preset": "bursty"}), Command::Load { preset: json!("bursty") }),
        (json!({"type": "compare", "on": true}), Command::Compare { on: true }),
        (json!({"type": "add_row", "row": "burst"}), Command::AddRow { row: Row::Burst }),
        (json!({"type": "mission", "action": "hint"}), Command::Mission { action: MissionAction::Hint }),
        (
            json!({"type": "kv_search", "target": "2000"}),
            Command::KvSearch { target: "2000".into(), range: String::new(), step: String::new() },
        ),
        (json!({"type": "undo"}), Command::Undo),
    ];
    for (msg, cmd) in cases {
        assert_eq!(serde_json::from_value::<Command>(msg.clone()).unwrap(), cmd, "{msg}");
        let back: Command = serde_json::from_value(serde_json::to_value(&cmd).unwrap()).unwrap();
        assert_eq!(back, cmd);
    }
    let e = serde_json::from_value::<Command>(json!({"type": "seek", "t": 3})).unwrap_err().to_string();
    assert!(e.contains("unknown field `t`"), "{e}");
    let e = serde_json::from_value::<Command>(json!({"type": "fly"})).unwrap_err().to_string();
    assert!(e.contains("unknown variant `fly`"), "{e}");
}

#[test]
fn a_refused_edit_belongs_beside_its_control_and_changes_nothing() {
    let mut s = session("paged-default");
    s.apply(Command::Seek { t_s: 10.0 }, 0.0).unwrap();
    let before = serde_json::to_string(&s.lab().runs[0].report()).unwrap();
    let r = s.apply(set("scheduler.max_num_seqs", json!(0)), 0.0).unwrap_err();
    assert_eq!(r.place, Place::Control("scheduler.max_num_seqs".into()));
    assert_eq!(r.from, ChangeFrom::Control);
    assert!(r.message.starts_with("scheduler.max_num_seqs:"), "{}", r.message);
    assert_eq!(serde_json::to_string(&s.lab().runs[0].report()).unwrap(), before);
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(256));
    assert!(!s.history().can_undo(), "a refusal is no undo step");
    // A number written as text is the number; a fraction in a whole-number field names the field.
    s.apply(set("scheduler.max_num_seqs", json!("64")), 0.0).unwrap();
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(64));
    let r = s.apply(set("scheduler.max_num_seqs", json!(16.5)), 0.0).unwrap_err();
    assert_eq!(r.message, "scheduler.max_num_seqs: 16.5 is not a whole number; enter one like 17");
    assert_eq!(
        r.text(),
        "scheduler.max_num_seqs: 16.5 is not a whole number; enter one like 17. The lab keeps its previous setup."
    );
}

#[test]
fn a_model_that_does_not_fit_is_refused_at_the_model_control_naming_the_tensor_parallelism() {
    let mut s = session("paged-default");
    let r = s.apply(set("model", json!("llama-3-70b")), 0.0).unwrap_err();
    assert_eq!(r.place, Place::Control("model".into()));
    assert!(r.message.contains("tensor_parallel_size"), "{}", r.message);
    assert_eq!(s.lab().state.preset.model, json!("llama-3-8b"), "the lab keeps the 8B");
    // From the GPU, too: the same model is refused, not swapped for another.
    s.apply(set("kv_memory.kind", json!("gpu")), 0.0).unwrap();
    let r = s.apply(set("model", json!("llama-3-70b")), 0.0).unwrap_err();
    assert_eq!(r.place, Place::Control("model".into()));
    assert!(r.message.contains("tensor_parallel_size"), "{}", r.message);
}

#[test]
fn undo_and_redo_walk_the_setups_and_a_drag_is_one_step() {
    let mut s = session("paged-default");
    assert!(s.apply(Command::Undo, 0.0).unwrap_err().message.contains("nothing to undo"));
    for v in [100, 120, 140] {
        s.apply(set("scheduler.max_num_seqs", json!(v)), 0.0).unwrap();
    }
    s.apply(Command::Compare { on: true }, 0.0).unwrap();
    s.apply(Command::Seek { t_s: 30.0 }, 0.0).unwrap();
    s.apply(Command::Undo, 0.0).unwrap();
    assert!(!s.lab().state.compare);
    assert_eq!(s.lab().t_us, 30_000_000, "undo keeps the time shown");
    s.apply(Command::Undo, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(256), "the drag 100 → 140 is one step");
    assert!(!s.history().can_undo());
    s.apply(Command::Redo, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.scheduler.max_num_seqs, Some(140));
    s.apply(Command::Redo, 0.0).unwrap();
    assert!(s.lab().state.compare);
    assert!(s.apply(Command::Redo, 0.0).unwrap_err().message.contains("nothing to redo"));
    // A new change after an undo drops what could have been redone.
    s.apply(Command::Undo, 0.0).unwrap();
    s.apply(set("seed", json!(7)), 0.0).unwrap();
    assert!(!s.history().can_redo());
    // Hidden series are not setups.
    s.apply(Command::Series { name: "waiting".into(), show: false }, 0.0).unwrap();
    s.apply(Command::Undo, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.seed, presets::dto("paged-default").unwrap().seed);
    assert_eq!(s.lab().state.hidden, ["waiting"]);
}

#[test]
fn missions_start_paused_and_the_final_score_on_screen_is_the_score_kept() {
    let mut s = session("paged-default");
    s.apply(Command::Play, 0.0).unwrap();
    let applied = s.apply(Command::StartMission { id: "m1-paging".into() }, 0.0).unwrap();
    assert!(applied.setup && applied.earned.is_none());
    assert!(!s.lab().playing, "a mission waits for Play while the learner reads");
    assert_eq!(s.lab().t_us, 0);
    // The broken setup, played to the end: 0 stars, kept once.
    assert_eq!(s.apply(Command::SeekEnd, 0.0).unwrap().earned, Some(("m1-paging".into(), 0)));
    assert_eq!(s.apply(Command::SeekEnd, 0.0).unwrap().earned, None, "kept once");
    // The fix chosen while the time shown is the end runs to the end at once: the final score
    // the panel shows is kept with the change itself, once.
    let fixed = s.apply(set("allocator.kind", json!("paged")), 0.0).unwrap();
    assert!(s.lab().is_at_end());
    assert_eq!(s.lab().mission_status().map(|m| (m.at_end, m.score.stars)), Some((true, 3)));
    assert_eq!(fixed.earned, Some(("m1-paging".into(), 3)), "the score on screen is kept");
    assert_eq!(s.apply(Command::SeekEnd, 0.0).unwrap().earned, None, "kept once");
    // Undone at the end, the broken setup's score is on screen again, and kept again (the star
    // record never decreases, so the best stays 3).
    assert_eq!(s.apply(Command::Undo, 0.0).unwrap().earned, Some(("m1-paging".into(), 0)));
    s.apply(Command::Redo, 0.0).unwrap();
    // The shown solution plays and earns nothing; a restart is paused at 0.
    s.apply(Command::Mission { action: MissionAction::Solution }, 0.0).unwrap();
    assert!(s.lab().playing, "the solution is shown playing");
    assert_eq!(s.apply(Command::SeekEnd, 0.0).unwrap().earned, None);
    s.apply(Command::Mission { action: MissionAction::Restart }, 0.0).unwrap();
    assert!(!s.lab().playing && s.lab().t_us == 0);
    // With reduced motion, the solution waits for Play too.
    let mut calm = Session::new(
        Lab::new(
            {
                let m = missions::shipped("m1-paging").unwrap();
                let mut st = LabState::new(m.preset().clone());
                st.mission = Some(missions::reference(&m));
                st
            },
            PageOptions { reduced_motion: true, ..PageOptions::default() },
        )
        .unwrap(),
    );
    calm.apply(Command::Mission { action: MissionAction::Solution }, 0.0).unwrap();
    assert!(!calm.lab().playing);
}

#[test]
fn a_locked_knob_is_refused_beside_its_control_with_the_free_knobs() {
    let mut s = mission_session("m1-paging");
    let r = s.apply(set("seed", json!(9)), 0.0).unwrap_err();
    assert_eq!(r.place, Place::Control("seed".into()));
    assert!(r.message.starts_with("seed: this mission keeps seed as it is; you may change allocator"), "{}", r.message);
    let r = s.apply(Command::Mission { action: MissionAction::Exit }, 0.0);
    assert!(r.is_ok());
    let r = s.apply(Command::Mission { action: MissionAction::Hint }, 0.0).unwrap_err();
    assert!(r.message.contains("no mission is being played"), "{}", r.message);
}

#[test]
fn presets_load_by_id_or_document_and_documents_by_kind() {
    let mut s = session("paged-default");
    s.apply(Command::Compare { on: true }, 0.0).unwrap();
    s.apply(Command::Load { preset: json!("bursty") }, 0.0).unwrap();
    assert_eq!(s.lab().state.preset, presets::dto("bursty").unwrap());
    assert!(s.lab().state.compare, "compare mode is kept");
    let r = s.apply(Command::Load { preset: json!("no-such-preset") }, 0.0).unwrap_err();
    assert_eq!(r.from, ChangeFrom::Preset);
    assert!(r.message.contains("unknown preset \"no-such-preset\"") && r.message.contains("paged-default"));
    assert!(r.text().starts_with("Preset not loaded: "), "{}", r.text());
    let doc = json!({"schema": "kvlab/preset@1", "id": "mine", "kv_memory_gib": 8});
    s.apply(Command::Load { preset: doc.clone() }, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.id, "mine");
    s.apply(Command::Load { preset: json!(doc.to_string()) }, 0.0).unwrap();
    let r =
        s.apply(Command::Load { preset: json!("{\"schema\": \"kvlab/preset@1\", \"seed\": -1}") }, 0.0).unwrap_err();
    assert!(r.message.starts_with("seed:"), "{}", r.message);
    // A document of the wrong kind for a link parameter says which parameter to use.
    let r = s
        .apply(Command::LoadDocument { text: doc.to_string(), expect: Some(DocKind::Mission), source: None }, 0.0)
        .unwrap_err();
    assert_eq!(r.from, ChangeFrom::Mission);
    assert_eq!(r.message, "this is a preset, not a mission; use preset_url");
    // A mission document starts the mission and comes with the mission check's verdict.
    let text = include_str!("../assets/missions/examples/first-mission.json");
    let applied = s.apply(Command::LoadDocument { text: text.into(), expect: None, source: None }, 0.0).unwrap();
    assert!(applied.verdict.is_some_and(|v| v.valid));
    assert!(s.lab().state.mission.as_ref().is_some_and(|m| m.custom.is_some()));
}

#[test]
fn a_state_remembers_the_linked_file_it_came_from_until_a_new_setup() {
    let mut s = session("paged-default");
    let text = json!({"schema": "kvlab/preset@1", "id": "linked"}).to_string();
    let cmd =
        Command::LoadDocument { text: text.clone(), expect: Some(DocKind::Preset), source: Some("p.json".into()) };
    s.apply(cmd, 0.0).unwrap();
    let linked = s.lab().state.source.clone().expect("the state remembers its file");
    assert_eq!(linked.url, "p.json");
    assert_eq!(linked.digest, kvlab::session::loader::digest(&text));
    assert_ne!(linked.digest, kvlab::session::loader::digest(&text.replace("linked", "changed")));
    // It travels in the link, and an edit keeps it (the edits are of that file's setup).
    s.apply(set("seed", json!(3)), 0.0).unwrap();
    let back = LabState::from_fragment(&s.lab().snapshot().to_fragment()).unwrap().unwrap();
    assert_eq!(back.source, Some(linked));
    s.apply(Command::Load { preset: json!("bursty") }, 0.0).unwrap();
    assert_eq!(s.lab().state.source, None);
}

#[test]
fn sweep_and_search_refusals_stay_in_their_panel() {
    let mut s = session("paged-default");
    s.apply(Command::Sweep { knob: "scheduler.max_num_seqs".into(), values: "64,128".into() }, 0.0).unwrap();
    while s.step_jobs(1e9, &|| 0.0) {}
    assert!(s.panel().job.as_ref().is_some_and(|j| j.finished()));
    let r = s.apply(Command::Sweep { knob: "kv_memory_gib".into(), values: "4, 8, 16 GiB".into() }, 0.0).unwrap_err();
    assert_eq!(r.place, Place::Sweep);
    assert_eq!(s.panel().sweep_error.as_deref(), Some(r.text().as_str()));
    assert!(r.text().starts_with("Sweep not run: "), "{}", r.text());
    assert!(s.panel().job.is_none(), "the last sweep is not left under the refusal");
    s.apply(Command::Sweep { knob: "scheduler.max_num_seqs".into(), values: "64".into() }, 0.0).unwrap();
    assert_eq!(s.panel().sweep_error, None);
    let r = s.apply(Command::KvSearch { target: "soon".into(), range: String::new(), step: String::new() }, 0.0);
    let r = r.unwrap_err();
    assert_eq!(r.place, Place::Search(Some(SearchField::Target)));
    assert!(s.panel().search_error.as_ref().is_some_and(|e| e.message.starts_with("Search not run: ")));
}

#[test]
fn time_commands_check_their_numbers() {
    let mut s = session("paged-default");
    let r = s.apply(Command::Seek { t_s: f64::NAN }, 0.0).unwrap_err();
    assert_eq!(r.message, "seek: t_s must be a number of seconds from 0");
    s.apply(Command::Seek { t_s: 1e9 }, 0.0).unwrap();
    assert_eq!(s.lab().t_us, s.lab().duration_us(), "clamped to the run");
    s.apply(Command::Speed { speed: -1.0 }, 0.0).unwrap();
    assert_eq!(s.lab().speed, 0.0, "not a speed: as fast as the engine goes");
    let r = s.apply(Command::SetState { state: json!("{\"v\": 9}") }, 0.0).unwrap_err();
    assert_eq!((r.from, r.place.clone()), (ChangeFrom::Link, Place::Page));
    assert!(r.text().starts_with("Link not applied: "), "{}", r.text());
}

/// A model's config.json in the Load dialog replaces the model of the setup on screen (one undo
/// step) and runs from its numbers; a config.json missing a key is refused naming the key, the
/// setup kept; the link carries the model; a preset parser told a config.json says what it is.
#[test]
fn a_config_json_loaded_replaces_the_model_and_a_broken_one_names_its_key() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/validation/model-configs/Qwen__Qwen2.5-7B-Instruct.config.json"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("skipped: {path} is not here (../shared/validation)");
        return;
    };
    let load = |text: &str| Command::LoadDocument { text: text.into(), expect: None, source: None };
    let mut s = session("paged-default");
    let block_size = s.lab().state.preset.allocator.clone();
    s.apply(load(&text), 0.0).unwrap();
    let state = &s.lab().state;
    assert!(state.preset.model["hf_config"]["architectures"][0] == "Qwen2ForCausalLM", "{}", state.preset.model);
    assert_eq!(state.preset.allocator, block_size, "the rest of the setup stays");
    // Qwen2.5-7B: 28 layers × 4 KV heads × 128 × K and V × 2 bytes.
    let report = s.lab().runs[0].report();
    assert_eq!(report.kv_bytes_per_token, 28 * 4 * 128 * 2 * 2);
    // The link carries the model read from the file.
    let back = LabState::from_fragment(&state.to_fragment()).unwrap().expect("a state in the link");
    assert_eq!(back.preset.model, state.preset.model);
    s.apply(Command::Undo, 0.0).unwrap();
    assert_eq!(s.lab().state.preset.model, json!("llama-3-8b"), "one undo step brings the old model back");

    let mut broken: serde_json::Value = serde_json::from_str(&text).unwrap();
    broken.as_object_mut().unwrap().remove("num_hidden_layers");
    let before = s.lab().state.clone();
    let r = s.apply(load(&broken.to_string()), 0.0).unwrap_err();
    assert!(r.message.starts_with("config.json: num_hidden_layers"), "{}", r.message);
    assert_eq!(s.lab().state, before, "a refused config.json changes nothing");

    let e = kvlab::formats::preset::parse_preset(&text).unwrap_err().to_string();
    assert!(e.contains("config.json, not a preset") && e.contains("hf_config"), "{e}");
}

/// A linked file (`?preset_url=`) refused names the file, and a field error in a document of
/// several lines (the Load dialog's file or paste) names its line.
#[test]
fn a_refused_document_names_its_file_and_its_line() {
    use kvlab::session::command::DocKind;
    let mut s = session("paged-default");
    let mut preset: serde_json::Value =
        serde_json::from_str(include_str!("../assets/presets/paged-default.json")).unwrap();
    preset["scheduler"]["max_num_seqs"] = json!("lots");
    let text = serde_json::to_string_pretty(&preset).unwrap();
    let line = text.lines().position(|l| l.contains("\"max_num_seqs\"")).unwrap() + 1;
    let load = |source: Option<&str>| Command::LoadDocument {
        text: text.clone(),
        expect: Some(DocKind::Preset),
        source: source.map(str::to_string),
    };
    let r = s.apply(load(Some("presets/mine.json")), 0.0).unwrap_err();
    assert!(r.message.starts_with("presets/mine.json: scheduler.max_num_seqs"), "{}", r.message);
    let r = s.apply(load(None), 0.0).unwrap_err();
    assert!(r.message.starts_with("scheduler.max_num_seqs: "), "{}", r.message);
    assert!(r.message.ends_with(&format!(" (line {line})")), "{}", r.message);
    assert!(r.message.contains("a whole number from 1 to 4,096"), "{}", r.message);
    assert_eq!(s.lab().state.preset, presets::dto("paged-default").unwrap(), "the lab keeps its setup");
}

#[test]
fn the_first_view_applies_every_command_but_sweeps_missions_and_their_documents() {
    // What the page's first module hands to the full one (web::full_lab): the Sweep panel's
    // runs, missions, and documents only the full lab reads; everything else it applies itself.
    let preset = presets::json("bursty").unwrap().to_string();
    let mission = include_str!("../assets/missions/m1-paging.json").to_string();
    let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}"#.to_string();
    let doc = |text: &String, expect| Command::LoadDocument { text: text.clone(), expect, source: None };
    let mut state = session("paged-default").lab().state.clone();
    let plain = serde_json::to_value(&state).unwrap();
    state.mission = Some(kvlab::session::url_state::MissionRef::shipped("m1-paging"));
    let playing = serde_json::to_value(&state).unwrap();
    // A preset whose arrivals are a trace, and a link replaying one.
    let mut traced: serde_json::Value = serde_json::from_str(&preset).unwrap();
    traced["workload"]["arrival"] =
        json!({"kind": "trace", "csv": "arrival_s,prompt_tokens,output_tokens\n0,100,10\n"});
    let mut replaying = plain.clone();
    replaying["preset"] = traced.clone();
    // A preset whose model the catalogue reads from its config.json, and a link to one.
    let mut catalogued: serde_json::Value = serde_json::from_str(&preset).unwrap();
    catalogued["model"] = json!("Qwen/Qwen3-14B");
    let mut hf_config = catalogued.clone();
    hf_config["model"] = json!({ "hf_config": serde_json::from_str::<serde_json::Value>(&config).unwrap() });
    let mut catalogue_link = plain.clone();
    catalogue_link["preset"] = catalogued.clone();
    // A preset with a host-memory KV tier, which only the full module runs.
    let mut offloaded: serde_json::Value = serde_json::from_str(&preset).unwrap();
    offloaded["kv_offload"] = json!({ "cpu_gib": 64 });
    let mut no_tier = offloaded.clone();
    no_tier["kv_offload"] = serde_json::Value::Null;
    // A fleet and a class of tenants, which only the full module reads.
    let mut fleet: serde_json::Value = serde_json::from_str(&preset).unwrap();
    fleet["replicas"] = json!(4);
    fleet["router"] = json!({ "policy": "prefix_aware" });
    let mut tenants: serde_json::Value = serde_json::from_str(&preset).unwrap();
    tenants["workload"]["classes"][0]["tenants"] = json!(8);
    // A preset on the kernel clock, whose tables only the full module fetches.
    let mut on_kernels: serde_json::Value = serde_json::from_str(&preset).unwrap();
    on_kernels["clock"] = json!("kernels");
    for (cmd, full) in [
        (Command::Play, false),
        (Command::Seek { t_s: 3.0 }, false),
        (set("kv_memory_gib", json!(12)), false),
        (Command::Compare { on: true }, false),
        (Command::Load { preset: json!("bursty") }, false),
        (doc(&preset, None), false),
        (doc(&preset, Some(DocKind::Preset)), false),
        (Command::SetState { state: plain.clone() }, false),
        (Command::SetState { state: plain.to_string().into() }, false),
        (Command::Undo, false),
        (doc(&mission, None), true),
        (doc(&preset, Some(DocKind::Mission)), true),
        (doc(&config, None), true),
        (Command::SetState { state: playing.clone() }, true),
        (Command::SetState { state: playing.to_string().into() }, true),
        (Command::StartMission { id: "m1-paging".into() }, true),
        (Command::Mission { action: MissionAction::Hint }, true),
        (Command::Sweep { knob: "kv_memory_gib".into(), values: "4,8".into() }, true),
        (Command::CancelSweep, true),
        (Command::SweepMetric { metric: "ttft_p95_ms".into() }, true),
        (Command::KvSearch { target: "2000".into(), range: String::new(), step: String::new() }, true),
        (Command::CancelKvSearch, true),
        (Command::Load { preset: traced.clone() }, true),
        (Command::Load { preset: traced.to_string().into() }, true),
        (doc(&traced.to_string(), None), true),
        (Command::SetState { state: replaying.clone() }, true),
        (set("model", json!("llama-3-70b")), false),
        (set("model", json!({ "layers": 32, "kv_heads": 8, "head_dim": 128, "params_b": 8 })), false),
        (set("model", json!("Qwen/Qwen3-14B")), true),
        (Command::Load { preset: json!("gpt-oss-window") }, true),
        (Command::Load { preset: catalogued.clone() }, true),
        (doc(&hf_config.to_string(), None), true),
        (Command::SetState { state: catalogue_link.clone() }, true),
        (Command::Load { preset: offloaded.clone() }, true),
        (doc(&offloaded.to_string(), None), true),
        (Command::Load { preset: no_tier.clone() }, false),
        (set("kv_offload.cpu_gib", json!(16)), true),
        (set("kv_offload.cpu_gib", json!("16")), true),
        (set("kv_offload.cpu_gib", json!(0)), true),
        (Command::Load { preset: fleet.clone() }, true),
        (doc(&fleet.to_string(), None), true),
        (Command::Load { preset: tenants.clone() }, true),
        (set("replicas", json!(4)), true),
        (set("router.policy", json!("kv_aware")), true),
        (set("workload.classes[0].tenants", json!(8)), true),
        (Command::Load { preset: on_kernels.clone() }, true),
        (doc(&on_kernels.to_string(), None), true),
        (set("clock", json!("kernels")), true),
    ] {
        assert_eq!(cmd.needs_panels(), full, "{cmd:?}");
        // A refused document goes to the full module, whose reader names the wrong field.
        let document = matches!(cmd, Command::LoadDocument { .. } | Command::SetState { .. })
            || matches!(&cmd, Command::Load { preset } if !preset.is_string() || preset.as_str().is_some_and(|p| p.starts_with('{')));
        assert_eq!(cmd.reads_a_document(), document, "{cmd:?}");
        // Every document above reads, or names the field it is wrong in.
        assert!(!cmd.misreads_without_a_field(), "{cmd:?}");
        // What the first module hands over reads back as the same command in the full one.
        let handed = cmd.handover_json();
        if full {
            assert_eq!(handed, serde_json::to_value(&cmd).unwrap(), "{cmd:?}");
            assert_eq!(Command::try_from(handed).unwrap(), cmd);
        }
    }
    // A document that reads into no field at all (not an object) is one the full lab reads
    // again; text that is not JSON is refused as it is.
    assert!(Command::Load { preset: json!([1, 2]) }.misreads_without_a_field());
    assert!(!doc(&"{ not json".to_string(), None).misreads_without_a_field());
    assert!(!Command::Load { preset: json!("bursty") }.misreads_without_a_field());
}
