//! Fuzzing what a browser hands the lab, natively (the session layer needs no browser): damaged
//! `#lab=` links (bytes changed in the encoded text and in the JSON inside it) and random query
//! strings. None may panic; a damaged link is refused with a message or read as a valid state
//! that the lab accepts or refuses; every query option read is one the page can use.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::session::lab::Lab;
use kvlab::session::presets;
use kvlab::session::url_state::{base64url_decode, base64url_encode, LabState, PageOptions, QUERY_KEYS};

mod fuzz_gen;

use fuzz_gen::Draw;

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
