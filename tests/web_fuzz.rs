//! Fuzzing the real `window.localStorage` under the stars keys: random values never break the
//! stars (damage is reported, the keeper keeps working). Damaged links and query strings are
//! fuzzed natively (tests/session_fuzz.rs).
#![cfg(target_arch = "wasm32")]

use kvlab::web::storage::{notices, open_keeper, STARS_BACKUP_KEY, STARS_KEY};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod fuzz_gen;

use fuzz_gen::Draw;

/// Cases per test.
const CASES: u64 = 2_000;

/// `text` with 1–4 random edits: a byte replaced, inserted or removed (kept valid UTF-8 by
/// editing ASCII positions with ASCII bytes, or, sometimes, by inserting any character).
fn mutate(d: &mut Draw, text: &str) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + d.below(4) {
        let at = d.below(s.len() as u64 + 1) as usize;
        let c = match d.below(6) {
            0 => char::from_u32(d.below(0x11_0000) as u32).unwrap_or('\u{fffd}'),
            1 => ['"', '{', '}', '[', ']', ',', ':', '-', '.', 'e', '0', '9'][d.below(12) as usize],
            _ => (b' ' + d.below(95) as u8) as char,
        };
        match d.below(3) {
            0 if at < s.len() => s[at] = c,
            1 if at < s.len() => {
                s.remove(at);
            }
            _ => s.insert(at, c),
        }
    }
    s.into_iter().collect()
}

/// `text` with 1–3 of its digits changed to other digits (JSON stays JSON).
#[allow(dead_code)]
fn change_digits(d: &mut Draw, text: &str) -> String {
    let mut s: Vec<char> = text.chars().collect();
    let digits: Vec<usize> = (0..s.len()).filter(|&i| s[i].is_ascii_digit()).collect();
    for _ in 0..1 + d.below(3) {
        if let Some(&at) = digits.get(d.below(digits.len() as u64) as usize) {
            s[at] = (b'0' + d.below(10) as u8) as char;
        }
    }
    s.into_iter().collect()
}

#[wasm_bindgen_test]
fn random_local_storage_values_never_break_the_stars() {
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    let valid = r#"{"schema":"kvlab/stars@1","stars":{"m1-paging":3,"m2-block-size":1}}"#;
    let mut d = Draw(0x6b76_6c61_6200_0303);
    for i in 0..CASES / 4 {
        storage.clear().unwrap();
        let value = if i % 3 == 0 { mutate(&mut d, "{}") } else { mutate(&mut d, valid) };
        storage.set_item(STARS_KEY, &value).unwrap();
        if i % 5 == 0 {
            storage.set_item(STARS_BACKUP_KEY, &mutate(&mut d, valid)).unwrap();
        }
        let mut k = open_keeper();
        let _ = notices(&k);
        let before = k.stars("m1-paging");
        assert!(before <= 3);
        k.earn("m6-fp8-kv", 2);
        assert_eq!(k.stars("m6-fp8-kv"), 2, "the keeper works whatever was stored: {value:?}");
        // What it wrote reads back whole.
        let again = open_keeper();
        assert_eq!(again.stars("m6-fp8-kv"), 2, "{value:?}");
        assert!(again.stars("m1-paging") >= before);
    }
    storage.clear().unwrap();
}
