//! A fleet in the lab (session::run, session::fleet_run): a preset with `replicas` above 1 runs
//! as its replicas behind the router, one map each, moved through time as one run is (going
//! back restores a snapshot and replays to the same bits), its chart the replicas merged and
//! its report the fleet's; the page's limits and Compare refuse what it cannot draw.

mod common;

use common::repo_path;
use kvlab::engine::fleet::Fleet;
use kvlab::formats::preset::parse_preset_dto;
use kvlab::formats::report::report_json;
use kvlab::session::lab::Lab;
use kvlab::session::url_state::{LabState, PageOptions};

fn fleet_state(duration_s: f64) -> LabState {
    let text = std::fs::read_to_string(repo_path("docs/examples/fleet-prefix.json")).unwrap();
    let mut preset = parse_preset_dto(&text).unwrap();
    preset.duration_s = duration_s;
    LabState::new(preset)
}

#[test]
fn a_fleet_preset_runs_as_its_replicas_one_map_each() {
    let mut lab = Lab::new(fleet_state(20.0), PageOptions::default()).unwrap();
    assert_eq!(lab.runs.len(), 1);
    let panels = lab.panels();
    assert_eq!(panels.len(), 4, "one map a replica");
    assert_eq!(panels.iter().map(|p| p.replica).collect::<Vec<_>>(), [Some(0), Some(1), Some(2), Some(3)]);
    drop(panels);
    lab.seek(10_000_000);
    let titles: Vec<String> = lab.panels().iter().map(|p| p.title()).collect();
    assert!(titles[0].starts_with("Replica 1 · ") && titles[0].contains("prefix hits"), "{titles:?}");
    let run = &lab.runs[0];
    let fleet = run.fleet().expect("a fleet run");
    let note = fleet.router_note(&run.class_names);
    assert!(note.starts_with("Router: prefix_aware. Requests sent so far: "), "{note}");
    assert!(note.contains("went to replica"), "{note}");
    // The chart is the fleet's: the replicas' pools together, live within allocated.
    assert_eq!(run.capacity_tokens(), 4 * run.panels()[0].kv().capacity_tokens());
    let series = run.chart_series();
    assert!(series.len() > 100);
    assert!(series.iter().all(|p| p.live_tokens <= p.allocated_tokens && p.allocated_tokens <= run.capacity_tokens()));
    // Its report is the fleet's, as `kvlab run` gives it.
    lab.seek(lab.end_limit_us());
    assert!(lab.is_at_end());
    let mut alone = Fleet::new(lab.runs[0].config.clone()).unwrap();
    assert_eq!(report_json(&lab.runs[0].report()), report_json(&alone.run_to_end()));
    assert_eq!(lab.runs[0].report().fleet.unwrap().replicas, 4);
}

#[test]
fn going_back_in_a_fleet_replays_to_the_same_bits() {
    let mut lab = Lab::new(fleet_state(30.0), PageOptions::default()).unwrap();
    lab.seek(25_000_000);
    let at_25 = report_json(&lab.runs[0].report());
    let chart_25 = lab.runs[0].chart_series().to_vec();
    lab.seek(7_300_000);
    let at_7 = report_json(&lab.runs[0].report());
    lab.seek(25_000_000);
    assert_eq!(report_json(&lab.runs[0].report()), at_25);
    assert_eq!(lab.runs[0].chart_series(), chart_25.as_slice());
    // Straight to 7.3 s from a fresh lab: the same fleet as the one that went back there.
    let mut fresh = Lab::new(fleet_state(30.0), PageOptions::default()).unwrap();
    fresh.seek(7_300_000);
    assert_eq!(report_json(&fresh.runs[0].report()), at_7);
    fresh.runs[0].fleet().unwrap().fleet().check_invariants().unwrap();
}

#[test]
fn stepping_a_fleet_moves_to_its_next_event() {
    let mut lab = Lab::new(fleet_state(10.0), PageOptions::default()).unwrap();
    let mut last = 0;
    for _ in 0..50 {
        lab.step();
        assert!(lab.t_us > last, "a step moved from {last} µs to {}", lab.t_us);
        last = lab.t_us;
        lab.runs[0].fleet().unwrap().fleet().check_invariants().unwrap();
    }
    assert!(lab.runs[0].report().requests.arrived > 0);
}

#[test]
fn the_lab_refuses_a_fleet_it_cannot_draw_or_compare_naming_replicas() {
    let mut lab =
        Lab::new(LabState::new(kvlab::session::presets::dto("paged-default").unwrap()), PageOptions::default())
            .unwrap();
    let mut big = fleet_state(20.0);
    big.preset.replicas = 17;
    let err = lab.apply(big, false).unwrap_err();
    assert!(err.starts_with("replicas: the page draws up to 16"), "{err}");
    let mut compared = fleet_state(20.0);
    compared.compare = true;
    let err = lab.apply(compared.clone(), false).unwrap_err();
    assert!(err.starts_with("replicas: compare sets one replica's two allocators"), "{err}");
    assert!(lab.check(&compared).is_err());
    assert_eq!(lab.state.preset.id, "paged-default", "the lab keeps its run");
    assert!(lab.check(&fleet_state(20.0)).is_ok());
}

#[test]
fn the_settings_turn_one_replica_into_a_fleet_and_pick_its_router() {
    use kvlab::session::command::Command;
    use kvlab::session::control_edit::value_for;
    let mut s = common::session("paged-default");
    assert_eq!(value_for(&s.lab().state, "replicas"), Some(serde_json::json!(1)));
    assert_eq!(value_for(&s.lab().state, "router.policy"), Some(serde_json::json!("round_robin")));
    let set = |path: &str, value: serde_json::Value| Command::Set { path: path.into(), value };
    s.apply(set("replicas", serde_json::json!(3)), 0.0).unwrap();
    s.apply(set("router.policy", serde_json::json!("least_loaded")), 0.0).unwrap();
    assert_eq!(s.lab().panels().len(), 3);
    assert_eq!(value_for(&s.lab().state, "router.policy"), Some(serde_json::json!("least_loaded")));
    s.apply(Command::Seek { t_s: 5.0 }, 0.0).unwrap();
    let report = s.lab().runs[0].report();
    assert_eq!(report.fleet.as_ref().unwrap().policy, "least_loaded");
    assert!(s.apply(set("router.policy", serde_json::json!("nearest")), 0.0).is_err());
    assert!(s.apply(set("replicas", serde_json::json!(0)), 0.0).is_err());
    assert_eq!(s.lab().panels().len(), 3, "a refused edit leaves the fleet");
}

#[test]
fn a_fleets_snapshots_stay_within_their_budget_and_still_replay_to_the_same_bits() {
    use kvlab::session::fleet_run::FleetRun;
    let text = std::fs::read_to_string(repo_path("docs/examples/fleet-prefix.json")).unwrap();
    let config = kvlab::formats::preset::parse_preset(&text).unwrap();
    let whole = FleetRun::new(config.clone()).unwrap();
    let mut tight = FleetRun::with_budget(config.clone(), 6 << 20).unwrap();
    let mut roomy = whole;
    for t in [20_000_000, 60_000_000, 110_000_000] {
        tight.seek(t);
        roomy.seek(t);
        let (n, bytes) = tight.snapshots();
        assert!(n >= 1 && bytes <= 6 << 20, "{n} snapshots, {bytes} B at {t} µs");
    }
    assert!(roomy.snapshots().0 > tight.snapshots().0, "the budget thins the snapshots");
    for t in [95_000_000, 7_000_000, 50_000_000] {
        tight.seek(t);
        roomy.seek(t);
        assert_eq!(report_json(&tight.fleet().report()), report_json(&roomy.fleet().report()), "at {t} µs");
        assert_eq!(tight.series(), roomy.series());
    }
}
