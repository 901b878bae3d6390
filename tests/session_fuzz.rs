//! Fuzzing what a browser hands the lab, natively (the session layer needs no browser): damaged
//! `#lab=` links (bytes changed in the encoded text and in the JSON inside it) and random query
//! strings. None may panic; a damaged link is refused with a message or read as a valid state
//! that the lab accepts or refuses; every query option read is one the page can use. Random
//! sequences of edits, undos and discards: what the page shows never contradicts itself (one
//! refusal per cause, judged against the setup on screen: `held::assert_honest`).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use kvlab::session::lab::Lab;
use kvlab::session::presets;
use kvlab::session::url_state::{base64url_decode, base64url_encode, LabState, PageOptions, QUERY_KEYS};

mod fuzz_gen;
mod held;

use common::session;
use fuzz_gen::Draw;
use kvlab::session::command::Command;
use serde_json::{json, Value};

/// Cases per test.
const CASES: u64 = 2_000;

#[test]
fn damaged_links_are_refused_or_read_never_a_panic() {
    let ids = presets::ids();
    let mut d = Draw(0x6b76_6c61_6200_0301);
    let (mut refused, mut read, mut applied) = (0, 0, 0);
    for i in 0..CASES {
        let state = LabState::new(presets::dto(ids[d.below(ids.len() as u64) as usize]).unwrap());
        let fragment = state.to_fragment();
        let (key, encoded) = fragment.split_at(fragment.find('=').unwrap() + 1);
        let json = String::from_utf8(base64url_decode(encoded).unwrap()).unwrap();
        let damaged = match i % 3 {
            // Damage the JSON inside, then encode it again: reaches the JSON and preset parsers.
            0 => format!("{key}{}", base64url_encode(d.mutate(&json).as_bytes())),
            // Change digits only: still JSON, other numbers (reaches validation and the lab).
            1 => format!("{key}{}", base64url_encode(d.change_digits(&json).as_bytes())),
            _ => format!("{key}{}", d.mutate(encoded)),
        };
        match LabState::from_fragment(&damaged) {
            Err(e) => {
                assert!(!e.is_empty(), "a refusal says why");
                refused += 1;
            }
            Ok(None) => refused += 1,
            Ok(Some(s)) => {
                read += 1;
                // Every tenth one goes all the way into a lab (which simulates it).
                if read % 10 == 0 && Lab::new(s, PageOptions::default()).is_ok() {
                    applied += 1;
                }
            }
        }
    }
    assert!(
        refused > CASES / 4 && read > CASES / 10 && applied > 0,
        "refused {refused}, read {read}, applied {applied}"
    );
}

#[test]
fn random_query_strings_give_options_the_page_can_use() {
    let mut d = Draw(0x6b76_6c61_6200_0302);
    let keys: Vec<&str> = QUERY_KEYS.iter().copied().chain(["x", ""]).collect();
    let values = ["1", "0", "no", "paged-default", "m1-paging", "12.5", "-3", "NaN", "inf", ""];
    let (mut with_time, mut known_preset) = (0, 0);
    for _ in 0..CASES {
        let pairs: Vec<(String, String)> = (0..d.below(6))
            .map(|_| {
                let k = keys[d.below(keys.len() as u64) as usize].to_string();
                let v = values[d.below(values.len() as u64) as usize];
                (k, if d.below(3) == 0 { d.mutate(v) } else { v.to_string() })
            })
            .collect();
        let o = PageOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        // A time is a time, or absent: never a negative, infinite or NaN start.
        if let Some(t) = o.t_s {
            assert!(t.is_finite() && t >= 0.0, "t = {t} from {pairs:?}");
            with_time += 1;
        }
        // Empty texts are absent; a preset id is a shipped preset or an error naming the ids.
        for text in [&o.preset, &o.mission, &o.preset_url, &o.mission_url].into_iter().flatten() {
            assert!(!text.is_empty(), "{pairs:?}");
        }
        if let Some(id) = &o.preset {
            match presets::dto(id) {
                Ok(_) => known_preset += 1,
                Err(e) => assert!(e.contains("paged-default"), "{e}"),
            }
        }
        assert!(o.origins.iter().all(|x| !x.is_empty() && !x.ends_with('/')), "{:?}", o.origins);
        // A key given twice: the later value counts.
        if let Some((_, v)) = pairs.iter().rev().find(|(k, _)| k == "embed") {
            assert_eq!(o.embed, !matches!(v.as_str(), "0" | "false" | "no" | "off"), "{pairs:?}");
        }
    }
    assert!(with_time > 0 && known_preset > 0, "times {with_time}, shipped presets {known_preset}");
}

#[test]
fn random_edits_never_show_two_refusals_that_contradict() {
    let edits: Vec<(&str, Vec<Value>)> = vec![
        ("gpu", vec![json!("l4"), json!("h100-sxm"), json!("a100-40gb"), json!("a10g")]),
        ("model", vec![json!("llama-3-8b"), json!("llama-3-70b"), json!("mistral-7b"), json!("opt-13b")]),
        ("kv_memory_gib", vec![json!("1000"), json!("2"), json!("10"), json!("abc"), json!("0"), json!("60")]),
        ("kv_memory.kind", vec![json!("gpu"), json!("gib")]),
        ("tensor_parallel_size", vec![json!(1), json!(2), json!(3), json!(4), json!(8)]),
        ("allocator.block_size", vec![json!("0"), json!("16"), json!("300"), json!("32")]),
        ("allocator.kind", vec![json!("contiguous"), json!("paged")]),
        ("scheduler.preemption", vec![json!("swap"), json!("recompute")]),
        ("scheduler.engine", vec![json!("v0"), json!("v1")]),
        ("scheduler.max_num_seqs", vec![json!("many"), json!("64"), json!("0")]),
    ];
    let starts = ["paged-default", "contiguous-default", "m3-preemption-storm"];
    let mut d = Draw(0x6b76_6c61_6200_0303);
    let (mut held, mut most) = (0, 0);
    for case in 0..40 {
        let start = starts[case % starts.len()];
        let mut s = if start.starts_with('m') {
            let mut s = session("paged-default");
            s.apply(Command::StartMission { id: start.into() }, 0.0).unwrap();
            s
        } else {
            session(start)
        };
        let mut trail = Vec::new();
        for _ in 0..8 {
            let cmd = match d.below(10) {
                0 => Command::Undo,
                1 => Command::Discard { path: s.pending().edits().first().map(|h| h.path.clone()) },
                2 => Command::Compare { on: d.chance(50) },
                _ => {
                    let (path, values) = &edits[d.below(edits.len() as u64) as usize];
                    let value = values[d.below(values.len() as u64) as usize].clone();
                    Command::Set { path: path.to_string(), value }
                }
            };
            trail.push(format!("{cmd:?}"));
            let _ = s.apply(cmd, 0.0);
            let n = s.pending().edits().len();
            held += usize::from(n > 0);
            most = most.max(n);
            let honest = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| held::assert_honest(&s)));
            assert!(honest.is_ok(), "case {case} from {start}: after {trail:#?}");
        }
    }
    assert!(held > 40 && most >= 2, "values held {held} times, at most {most} at once");
}
