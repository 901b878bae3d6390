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

#[wasm_bindgen_test]
fn random_local_storage_values_never_break_the_stars() {
    let storage = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    let valid = r#"{"schema":"kvlab/stars@1","stars":{"m1-paging":3,"m2-block-size":1}}"#;
    let mut d = Draw(0x6b76_6c61_6200_0303);
    for i in 0..CASES / 4 {
        storage.clear().unwrap();
        let value = if i % 3 == 0 { d.mutate("{}") } else { d.mutate(valid) };
        storage.set_item(STARS_KEY, &value).unwrap();
        if i % 5 == 0 {
            storage.set_item(STARS_BACKUP_KEY, &d.mutate(valid)).unwrap();
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
