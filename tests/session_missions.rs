//! Mission mode, natively: the embedded missions are exactly those of
//! assets/missions/index.json, mission state round-trips through the URL (shipped by id, custom
//! carried whole, hints and the solution flag), knobs lock what they do not cover, the lab scores
//! the learner's run (broken 0, fix 3), and instructors' documents are checked. (What needs the
//! browser, its URL parser and the panel's words, is tests/web_missions.rs.)
#![cfg(not(target_arch = "wasm32"))]

use kvlab::formats::mission::parse_mission_index;
use kvlab::formats::preset::AllocatorDto;
use kvlab::session::control_edit::control_unlocked;
use kvlab::session::lab::Lab;
use kvlab::session::loader::{parse_document, Document};
use kvlab::session::missions::{self, reference, resolve};
use kvlab::session::url_state::{LabState, MissionRef, PageOptions};

const EXAMPLE: &str = include_str!("../assets/missions/examples/first-mission.json");

fn mission_state(id: &str) -> LabState {
    let m = missions::shipped(id).unwrap();
    let mut s = LabState::new(m.preset().clone());
    s.mission = Some(reference(&m));
    s
}

#[test]
fn the_embedded_missions_are_the_index() {
    let index = parse_mission_index(include_str!("../assets/missions/index.json")).unwrap();
    assert_eq!(missions::ids(), index.missions.iter().map(|m| m.id.clone()).collect::<Vec<_>>());
    assert_eq!(kvlab::shipped::MISSIONS.len(), index.missions.len());
    for e in &index.missions {
        let m = missions::shipped(&e.id).unwrap_or_else(|err| panic!("{}: {err}", e.id));
        assert_eq!((m.id(), m.number(), m.title()), (e.id.as_str(), e.number, e.title.as_str()));
        assert_eq!(reference(&m), MissionRef::shipped(&e.id), "a shipped mission is referred to by id");
    }
    assert!(missions::shipped("m9-nope").unwrap_err().contains("m1-paging"));
}

#[test]
fn mission_state_round_trips_through_the_url() {
    let mut s = mission_state("m2-block-size");
    s.t_s = Some(42.0);
    if let Some(r) = &mut s.mission {
        r.hints = 2;
    }
    let back = LabState::from_fragment(&s.to_fragment()).unwrap().unwrap();
    assert_eq!(back, s);
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["mission"], serde_json::json!({ "id": "m2-block-size", "hints": 2 }));

    // A custom mission travels whole, so the link reproduces it.
    let Document::Mission(custom) = parse_document(EXAMPLE).unwrap() else { panic!("a mission") };
    let mut c = LabState::new(custom.preset().clone());
    c.mission = Some(reference(&custom));
    assert!(c.mission.as_ref().unwrap().custom.is_some());
    let back = LabState::from_fragment(&c.to_fragment()).unwrap().unwrap();
    assert_eq!(back, c);
    assert_eq!(resolve(back.mission.as_ref().unwrap()).unwrap().title(), "Reserve for the request, not for the model");

    // Damaged mission parts are named.
    let mut bad: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    bad["mission"]["id"] = "Not An Id".into();
    let e = LabState::from_json(&bad.to_string()).unwrap_err();
    assert_eq!(e.field, "mission.id");
    bad["mission"] = serde_json::json!({ "id": "m1-paging", "stars": 3 });
    assert!(LabState::from_json(&bad.to_string()).unwrap_err().to_string().contains("stars"));

    let o = PageOptions::from_pairs([
        ("mission", "m3-preemption-storm"),
        ("hub", "1"),
        ("mission_url", "x.json"),
        ("preset_url", ""),
    ]);
    assert_eq!(o.mission.as_deref(), Some("m3-preemption-storm"));
    assert!(o.hub);
    assert_eq!(o.mission_url.as_deref(), Some("x.json"));
    assert_eq!(o.preset_url, None);
}

#[test]
fn the_lab_keeps_locked_knobs_and_scores_the_learners_run() {
    let mut lab = Lab::new(mission_state("m1-paging"), PageOptions::default()).unwrap();
    assert_eq!(lab.mission.as_ref().map(|m| m.id()), Some("m1-paging"));
    // A locked change is refused with the path and the knobs; the lab keeps its state.
    let mut bad = lab.state.clone();
    bad.preset.seed = 9;
    let e = lab.apply(bad, true).unwrap_err();
    assert!(e.starts_with("seed: this mission keeps seed as it is; you may change allocator"), "{e}");
    assert_eq!(lab.state.preset.seed, 1);
    // The broken setup scores 0 at the end.
    lab.seek(lab.duration_us());
    let status = lab.mission_status().unwrap();
    assert!(status.at_end);
    assert_eq!(status.score.stars, 0);
    // The learner's fix, in compare mode too: the scored run is the one in use.
    let mut fix = lab.state.clone();
    fix.switch_allocator(true);
    fix.compare = true;
    lab.apply(fix, true).unwrap();
    assert_eq!(lab.runs.len(), 2);
    assert!(matches!(lab.scored_run().unwrap().preset.allocator, AllocatorDto::Paged { .. }));
    let status = lab.mission_status().unwrap();
    assert_eq!((status.score.stars, status.at_end), (3, true));
    // The solution flag only holds while the setup is the documented fix.
    let mut sol = lab.state.clone();
    let m = lab.mission.clone().unwrap();
    sol.preset = m.fix_preset().clone();
    sol.compare = false;
    sol.mission.as_mut().unwrap().solution = true;
    lab.apply(sol, false).unwrap();
    assert!(lab.state.mission.as_ref().unwrap().solution);
    let mut changed = lab.state.clone();
    changed.preset.kv_memory_gib = Some(12.0);
    lab.apply(changed, true).unwrap();
    assert!(!lab.state.mission.as_ref().unwrap().solution, "a changed setup is the learner's own");
    // Hints are capped; an unknown mission is an error.
    let mut hints = lab.state.clone();
    hints.mission.as_mut().unwrap().hints = 99;
    lab.apply(hints, true).unwrap();
    assert_eq!(lab.state.mission.as_ref().unwrap().hints, 3);
    let mut unknown = lab.state.clone();
    unknown.mission = Some(MissionRef::shipped("m42-nope"));
    assert!(lab.apply(unknown, true).unwrap_err().contains("unknown mission"));
}

#[test]
fn knobs_decide_which_controls_are_free() {
    let k = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(control_unlocked(&k(&["allocator"]), "allocator.kind"));
    assert!(control_unlocked(&k(&["allocator"]), "allocator.fit"));
    assert!(!control_unlocked(&k(&["allocator.block_size"]), "allocator.kind"));
    assert!(control_unlocked(&k(&["allocator.block_size"]), "allocator.block_size"));
    assert!(!control_unlocked(&k(&["allocator.block_size"]), "allocator.prefix_caching"));
    assert!(control_unlocked(&k(&["workload.classes[*].n"]), "workload.classes[2].n"));
    assert!(control_unlocked(&k(&["workload.classes[0].n"]), "workload.classes[0].n"));
    assert!(!control_unlocked(&k(&["workload.classes[0].n"]), "workload.classes[1].n"));
    assert!(control_unlocked(&k(&["kv_memory_gib"]), "kv_memory.kind"));
    assert!(!control_unlocked(&k(&["workload.classes[*].n"]), "workload.classes"));
    assert!(control_unlocked(&k(&["scheduler"]), "scheduler.max_num_seqs"));
    assert!(!control_unlocked(&k(&["scheduler.max_num_seqs"]), "scheduler.preemption"));
    assert!(control_unlocked(&k(&["kv_dtype", "kv_memory_gib"]), "kv_memory_gib"));
    assert!(!control_unlocked(&k(&["kv_memory_gib"]), "seed"));
    assert!(!control_unlocked(&k(&["kv_memory_gib"]), "calibration"));
}

#[test]
fn documents_and_links_are_checked() {
    assert!(matches!(parse_document(r#"{"schema": "kvlab/preset@1", "kv_memory_gib": 8}"#), Ok(Document::Preset(_))));
    assert!(matches!(parse_document(EXAMPLE), Ok(Document::Mission(_))));
    let e = parse_document(r#"{"schema": "kvlab/preset@1", "scheduler": {"max_num_seqs": 0}}"#).err().unwrap();
    assert!(e.starts_with("scheduler.max_num_seqs:"), "{e}");
    let e = parse_document(&EXAMPLE.replace("\"number\": 90", "\"number\": 900")).err().unwrap();
    assert!(e.starts_with("number:"), "{e}");
    assert!(parse_document("{").err().unwrap().contains("not valid JSON"));
}

#[test]
fn a_custom_mission_gets_a_link_that_plays_it_again_from_its_start() {
    use kvlab::session::url_state::LinkedFile;
    let Document::Mission(custom) = parse_document(EXAMPLE).unwrap() else { panic!("a mission") };
    // Played a while, a hint shown, the setup changed: the link starts it over.
    let mut s = LabState::new(custom.fix_preset().clone());
    s.mission = Some(MissionRef { hints: 1, ..reference(&custom) });
    s.t_s = Some(42.0);
    let link = missions::replay_link(&s).expect("a link");
    let start = LabState::from_fragment(link.strip_prefix('#').expect("#lab=")).unwrap().unwrap();
    assert_eq!(&start.preset, custom.preset(), "the broken setup, not the learner's");
    assert_eq!(start.mission, Some(reference(&custom)), "no hint, no solution");
    assert_eq!(start.t_s, None);

    // A mission from a linked file is linked again, so the link follows the file.
    s.source = Some(LinkedFile { url: "missions/my mission.json".into(), digest: "d".into() });
    assert_eq!(missions::replay_link(&s).as_deref(), Some("?mission_url=missions%2Fmy%20mission%2Ejson"));
    // A shipped mission has no replay link of its own: the hub lists it.
    assert_eq!(missions::replay_link(&mission_state("m1-paging")), None);
}
