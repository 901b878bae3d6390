//! Stars against the real `window.localStorage` of headless Chromium: corrupt values, another
//! schema version and huge values are reported without losing a valid star and are copied to the
//! backup key before a well-formed record replaces them; a storage that is unavailable or full
//! leaves the stars in memory with a notice.
#![cfg(target_arch = "wasm32")]

use kvlab::missions::stars::{parse_record, MemoryReason};
use kvlab::web::storage::{notices, open_keeper, LocalStarStore, STARS_BACKUP_KEY, STARS_KEY};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn storage() -> web_sys::Storage {
    web_sys::window().unwrap().local_storage().unwrap().unwrap()
}

fn fresh(value: Option<&str>) {
    let s = storage();
    s.clear().unwrap();
    if let Some(v) = value {
        s.set_item(STARS_KEY, v).unwrap();
    }
}

fn get(key: &str) -> Option<String> {
    storage().get_item(key).unwrap()
}

fn run_js(code: &str) -> JsValue {
    js_sys::Function::new_no_args(code).call0(&JsValue::NULL).unwrap()
}

#[wasm_bindgen_test]
fn stars_survive_a_reload_and_never_decrease() {
    fresh(None);
    let mut k = open_keeper();
    assert!(k.persistent());
    k.earn("m1-paging", 2);
    k.earn("m1-paging", 1);
    let again = open_keeper();
    assert_eq!(again.stars("m1-paging"), 2);
    assert_eq!(get(STARS_KEY).as_deref(), Some(r#"{"schema":"kvlab/stars@1","stars":{"m1-paging":2}}"#));
    assert!(notices(&again).is_empty());
}

#[wasm_bindgen_test]
fn a_corrupt_value_is_reported_and_valid_stars_are_kept() {
    let raw = r#"{"schema":"kvlab/stars@1","stars":{"m1-paging":3,"m2-block-size":"x","m3-preemption-storm":99}}"#;
    fresh(Some(raw));
    let mut k = open_keeper();
    assert_eq!(k.stars("m1-paging"), 3);
    assert_eq!(k.problems().len(), 2);
    let n = notices(&k);
    assert!(n[0].1.contains("stars[\"m2-block-size\"]") && n[0].1.contains(STARS_BACKUP_KEY), "{n:?}");
    assert_eq!(get(STARS_KEY).as_deref(), Some(raw), "reading never writes");
    k.earn("m4-burst-budget", 1);
    assert_eq!(get(STARS_BACKUP_KEY).as_deref(), Some(raw));
    let saved = parse_record(&get(STARS_KEY).unwrap());
    assert!(saved.problems.is_empty());
    assert_eq!(saved.record.get("m1-paging"), 3);
    assert_eq!(saved.record.get("m4-burst-budget"), 1);
    assert!(!saved.record.contains("m3-preemption-storm"));
}

#[wasm_bindgen_test]
fn another_version_or_garbage_is_backed_up_before_it_is_replaced() {
    let v2 = r#"{"schema":"kvlab/stars@2","stars":{"m1-paging":2},"streak":4}"#;
    fresh(Some(v2));
    let mut k = open_keeper();
    assert_eq!(k.stars("m1-paging"), 2);
    assert!(k.problems().iter().any(|p| p.message.contains("kvlab/stars@2")));
    k.earn("m2-block-size", 3);
    assert_eq!(get(STARS_BACKUP_KEY).as_deref(), Some(v2));
    assert_eq!(parse_record(&get(STARS_KEY).unwrap()).record.total(), 5);

    fresh(Some("\u{0}\u{ffff} not json"));
    let mut k = open_keeper();
    assert!(k.record().is_empty());
    k.earn("m1-paging", 1);
    assert_eq!(get(STARS_BACKUP_KEY).as_deref(), Some("\u{0}\u{ffff} not json"));
}

#[wasm_bindgen_test]
fn a_huge_value_is_not_read_but_kept() {
    let huge = format!(r#"{{"schema":"kvlab/stars@1","stars":{{"m1-paging":3}},"pad":"{}"}}"#, "x".repeat(300_000));
    fresh(Some(&huge));
    let mut k = open_keeper();
    assert!(k.record().is_empty());
    assert!(k.problems()[0].message.contains("bytes"));
    k.earn("m2-block-size", 2);
    assert_eq!(get(STARS_BACKUP_KEY).map(|b| b.len()), Some(huge.len()), "the huge value was kept aside");
    assert_eq!(open_keeper().stars("m2-block-size"), 2);
}

#[wasm_bindgen_test]
fn unavailable_storage_falls_back_to_memory() {
    fresh(None);
    run_js(
        "window.__ls = Object.getOwnPropertyDescriptor(window, 'localStorage') || \
           Object.getOwnPropertyDescriptor(Window.prototype, 'localStorage'); \
         Object.defineProperty(window, 'localStorage', { configurable: true, \
           get() { throw new DOMException('The operation is insecure.', 'SecurityError'); } });",
    );
    let opened = LocalStarStore::open().is_err();
    let mut k = open_keeper();
    let earned = k.earn("m1-paging", 3);
    run_js("Object.defineProperty(window, 'localStorage', window.__ls); delete window.__ls;");
    assert!(opened, "localStorage should have been unavailable");
    assert!(!k.persistent());
    assert!(
        matches!(k.memory_reason(), Some(MemoryReason::Unavailable(e)) if e.message.contains("SecurityError")),
        "{:?}",
        k.memory_reason()
    );
    assert!(earned);
    assert_eq!(k.stars("m1-paging"), 3);
    let n = notices(&k);
    assert!(n.iter().any(|(kind, t)| *kind == "stars-memory" && t.contains("kept for this visit only")), "{n:?}");
    assert_eq!(get(STARS_KEY), None, "nothing reached the real storage");
}

#[wasm_bindgen_test]
fn a_full_storage_keeps_the_stars_in_memory() {
    fresh(None);
    let mut k = open_keeper();
    k.earn("m1-paging", 2);
    // Fill the origin's quota with another key, then earn.
    let chunk = "x".repeat(1 << 20);
    let s = storage();
    let mut filled = 0;
    while filled < 64 && s.set_item(&format!("kvlab.test.fill{filled}"), &chunk).is_ok() {
        filled += 1;
    }
    assert!(filled < 64, "the storage never filled up");
    // Use up what is left, in ever smaller pieces.
    let (mut n, mut i) = (1 << 19, 0);
    while n > 0 {
        if s.set_item(&format!("kvlab.test.rest{i}"), &"y".repeat(n)).is_ok() {
            i += 1;
        } else {
            n /= 2;
        }
    }
    let improved = k.earn("m2-block-size", 3);
    assert!(improved);
    assert!(
        matches!(k.memory_reason(), Some(MemoryReason::SaveFailed(e)) if e.kind == kvlab::missions::stars::StoreErrorKind::Full),
        "{:?}",
        k.memory_reason()
    );
    assert_eq!((k.stars("m1-paging"), k.stars("m2-block-size")), (2, 3));
    s.clear().unwrap();
}
