#![cfg(not(target_arch = "wasm32"))]
//! Stars kept between visits (`kvlab::missions::stars`): the stored record is read defensively
//! (every valid entry survives whatever its siblings hold), stars never decrease, a value that
//! could not be read whole is copied aside before it is replaced, a failing store falls back to
//! memory, and only an explicit reset forgets stars.

use kvlab::formats::sniff::STARS_SCHEMA;
use kvlab::missions::stars::{
    parse_record, MemoryReason, MemoryStarStore, StarKeeper, StarRecord, StarStore, StoreError,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn record(pairs: &[(&str, u8)]) -> StarRecord {
    let mut r = StarRecord::new();
    for (id, s) in pairs {
        r.merge_stars(id, *s);
    }
    r
}

fn stored(stars: Value) -> String {
    json!({ "schema": STARS_SCHEMA, "stars": stars }).to_string()
}

/// A store shared with the test, so the test can look inside after the keeper wrote.
#[derive(Clone, Default)]
struct Shared(std::rc::Rc<std::cell::RefCell<MemoryStarStore>>);

impl StarStore for Shared {
    fn load(&self) -> Result<Option<String>, StoreError> {
        self.0.borrow().load()
    }
    fn save(&mut self, text: &str) -> Result<(), StoreError> {
        self.0.borrow_mut().save(text)
    }
    fn load_backup(&self) -> Result<Option<String>, StoreError> {
        self.0.borrow().load_backup()
    }
    fn save_backup(&mut self, text: &str) -> Result<(), StoreError> {
        self.0.borrow_mut().save_backup(text)
    }
    fn persistent(&self) -> bool {
        true
    }
}

impl Shared {
    fn with(text: Option<&str>) -> Shared {
        let s = Shared::default();
        s.0.borrow_mut().record = text.map(String::from);
        s
    }
    fn record(&self) -> Option<String> {
        self.0.borrow().record.clone()
    }
    fn backup(&self) -> Option<String> {
        self.0.borrow().backup.clone()
    }
}

#[test]
fn a_well_formed_record_reads_back_exactly() {
    let r = record(&[("m1-paging", 3), ("m2-block-size", 1), ("m3-preemption-storm", 0)]);
    let parsed = parse_record(&r.to_json());
    assert_eq!(parsed.problems, []);
    assert_eq!(parsed.record, r);
    assert_eq!(r.total(), 4);
    let v: Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(
        v,
        json!({ "schema": "kvlab/stars@1", "stars": { "m1-paging": 3, "m2-block-size": 1, "m3-preemption-storm": 0 } })
    );
}

#[test]
fn bad_entries_are_reported_and_their_siblings_kept() {
    let text = stored(json!({
        "m1-paging": 3,
        "m2-block-size": "three",
        "m3-preemption-storm": 2.5,
        "m4-burst-budget": 7,
        "m5-prefix-cache": -1,
        "m6-fp8-kv": 1e300,
        "Not An Id": 2,
        "": 1,
        "example-reserve-less": 2.0,
        "x": null,
        "y": [3],
    }));
    let parsed = parse_record(&text);
    assert_eq!(parsed.record, record(&[("m1-paging", 3), ("example-reserve-less", 2)]));
    let problems: Vec<String> = parsed.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 9, "{problems:#?}");
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(has("stars[\"m2-block-size\"]: \"three\" is not a number of stars"), "{problems:#?}");
    assert!(has("stars[\"m3-preemption-storm\"]: 2.5 is not a whole number"), "{problems:#?}");
    assert!(has("stars[\"m4-burst-budget\"]: 7 is out of range"), "{problems:#?}");
    assert!(has("stars[\"m5-prefix-cache\"]: -1 is out of range"), "{problems:#?}");
    assert!(has("stars[\"m6-fp8-kv\"]: 1e+300 is out of range"), "{problems:#?}");
    assert!(has("stars[\"Not An Id\"]: not a mission id"), "{problems:#?}");
}

#[test]
fn whole_values_that_are_not_records_are_reported() {
    for (text, needle) in [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2, 3]", "not a stars record"),
        ("3", "not a stars record"),
        ("null", "not a stars record"),
        (r#"{"schema": "kvlab/stars@1"}"#, "no \"stars\" object"),
        (r#"{"schema": "kvlab/stars@1", "stars": [3]}"#, "not an object of mission ids"),
    ] {
        let parsed = parse_record(text);
        assert!(parsed.record.is_empty(), "{text}");
        assert!(parsed.problems.iter().any(|p| p.message.contains(needle)), "{text}: {:?}", parsed.problems);
    }
}

#[test]
fn another_schema_or_version_is_reported_but_its_stars_are_read() {
    let text = json!({ "schema": "kvlab/stars@2", "stars": { "m1-paging": 2 }, "badges": [] }).to_string();
    let parsed = parse_record(&text);
    assert_eq!(parsed.record, record(&[("m1-paging", 2)]));
    let problems: Vec<String> = parsed.problems.iter().map(ToString::to_string).collect();
    assert!(problems.iter().any(|p| p.contains("schema is \"kvlab/stars@2\"")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("unknown field \"badges\"")), "{problems:?}");
    let no_schema = parse_record(&json!({ "stars": { "m1-paging": 1 } }).to_string());
    assert_eq!(no_schema.record, record(&[("m1-paging", 1)]));
    assert!(no_schema.problems[0].message.contains("no schema"));
}

#[test]
fn huge_values_are_not_read() {
    let huge = format!("{{\"schema\": \"kvlab/stars@1\", \"stars\": {{}}, \"pad\": \"{}\"}}", "x".repeat(200_000));
    let parsed = parse_record(&huge);
    assert!(parsed.record.is_empty());
    assert!(parsed.problems[0].message.contains("bytes"), "{:?}", parsed.problems);
    let big_number = stored(json!({ "m1-paging": 3 })).replace("3}", "340282366920938463463374607431768211456}");
    let parsed = parse_record(&big_number);
    assert!(parsed.record.is_empty());
    assert!(parsed.problems[0].message.contains("out of range"), "{:?}", parsed.problems);
}

#[test]
fn stars_never_decrease() {
    let mut r = record(&[("m1-paging", 2)]);
    assert!(!r.merge_stars("m1-paging", 1));
    assert!(!r.merge_stars("m1-paging", 2));
    assert_eq!(r.get("m1-paging"), 2);
    assert!(r.merge_stars("m1-paging", 3));
    assert!(!r.merge_stars("m1-paging", 200), "clamped to 3, which it has");
    assert_eq!(r.get("m1-paging"), 3);
    assert!(!r.merge_stars("Bad Id", 3));
    let mut a = record(&[("m1-paging", 1), ("m2-block-size", 3)]);
    assert!(a.merge(&record(&[("m1-paging", 2), ("m2-block-size", 0), ("m3-preemption-storm", 1)])));
    assert_eq!(a, record(&[("m1-paging", 2), ("m2-block-size", 3), ("m3-preemption-storm", 1)]));
}

#[test]
fn earning_saves_a_well_formed_record_and_keeps_the_best() {
    let store = Shared::with(None);
    let mut k = StarKeeper::open(Box::new(store.clone()));
    assert!(k.persistent());
    assert!(k.earn("m1-paging", 0), "a first attempt is recorded");
    assert!(k.earn("m1-paging", 2));
    assert!(!k.earn("m1-paging", 1), "fewer stars never replace more");
    assert_eq!(parse_record(&store.record().unwrap()).record, record(&[("m1-paging", 2)]));
    // Another tab saved meanwhile: both are kept.
    store.0.borrow_mut().record = Some(record(&[("m1-paging", 1), ("m2-block-size", 3)]).to_json());
    k.earn("m3-preemption-storm", 1);
    let saved = parse_record(&store.record().unwrap());
    assert_eq!(saved.record, record(&[("m1-paging", 2), ("m2-block-size", 3), ("m3-preemption-storm", 1)]));
    assert_eq!(k.record(), &saved.record);
    assert_eq!(store.backup(), None, "nothing was unreadable");
}

#[test]
fn a_corrupt_sibling_never_costs_a_star_and_the_raw_value_is_kept_aside() {
    let raw = stored(json!({ "m1-paging": 3, "m2-block-size": "lots" }));
    let store = Shared::with(Some(&raw));
    let mut k = StarKeeper::open(Box::new(store.clone()));
    assert_eq!(k.stars("m1-paging"), 3);
    assert_eq!(k.problems().len(), 1);
    assert_eq!(store.record().as_deref(), Some(raw.as_str()), "opening writes nothing");
    k.earn("m3-preemption-storm", 2);
    assert!(k.backed_up());
    assert_eq!(store.backup().as_deref(), Some(raw.as_str()));
    assert_eq!(parse_record(&store.record().unwrap()).record, record(&[("m1-paging", 3), ("m3-preemption-storm", 2)]));
}

#[test]
fn an_unreadable_value_is_backed_up_before_it_is_replaced() {
    let store = Shared::with(Some("{\"schema\": \"kvlab/stars@1\", \"stars\": {\"m1-paging\": 3"));
    let mut k = StarKeeper::open(Box::new(store.clone()));
    assert!(k.record().is_empty());
    assert!(k.problems()[0].message.contains("not valid JSON"));
    k.earn("m2-block-size", 1);
    assert!(store.backup().unwrap().starts_with("{\"schema\""));
    assert_eq!(parse_record(&store.record().unwrap()).record, record(&[("m2-block-size", 1)]));
}

/// A store whose backup slot refuses writes: the unreadable value must stay where it is.
struct NoBackup(Shared);

impl StarStore for NoBackup {
    fn load(&self) -> Result<Option<String>, StoreError> {
        self.0.load()
    }
    fn save(&mut self, text: &str) -> Result<(), StoreError> {
        self.0.save(text)
    }
    fn load_backup(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    fn save_backup(&mut self, _: &str) -> Result<(), StoreError> {
        Err(StoreError::full("QuotaExceededError"))
    }
    fn persistent(&self) -> bool {
        true
    }
}

#[test]
fn a_value_that_cannot_be_backed_up_is_never_overwritten() {
    let raw = "garbage that is not JSON";
    let inner = Shared::with(Some(raw));
    let mut k = StarKeeper::open(Box::new(NoBackup(inner.clone())));
    k.earn("m1-paging", 3);
    assert_eq!(inner.record().as_deref(), Some(raw), "the stored value was replaced without a copy");
    assert!(matches!(k.memory_reason(), Some(MemoryReason::CannotBackUp(_))));
    assert!(!k.persistent());
    assert_eq!(k.stars("m1-paging"), 3, "the star is kept for this visit");
    // The explicit reset is the way out.
    k.reset();
    assert!(k.record().is_empty());
}

#[test]
fn failing_stores_fall_back_to_memory() {
    let unavailable = MemoryStarStore { fail: Some(StoreError::unavailable("SecurityError")), ..Default::default() };
    let mut k = StarKeeper::open(Box::new(unavailable));
    assert!(matches!(k.memory_reason(), Some(MemoryReason::Unavailable(_))));
    assert!(k.earn("m1-paging", 2));
    assert_eq!(k.stars("m1-paging"), 2);
    assert!(k.memory_reason().unwrap().to_string().contains("SecurityError"));

    // Full on save: the record moves to memory and nothing is lost.
    let store = Shared::with(Some(&record(&[("m1-paging", 1)]).to_json()));
    let mut k = StarKeeper::open(Box::new(store.clone()));
    store.0.borrow_mut().fail = None;
    k.earn("m2-block-size", 3);
    store.0.borrow_mut().fail = Some(StoreError::full("QuotaExceededError"));
    k.earn("m3-preemption-storm", 2);
    assert!(matches!(k.memory_reason(), Some(MemoryReason::Unavailable(_)) | Some(MemoryReason::SaveFailed(_))));
    assert_eq!(k.record(), &record(&[("m1-paging", 1), ("m2-block-size", 3), ("m3-preemption-storm", 2)]));
    k.earn("m4-burst-budget", 1);
    assert_eq!(k.stars("m4-burst-budget"), 1);

    let k = StarKeeper::memory_only(StoreError::unavailable("no localStorage"));
    assert!(!k.persistent());
    assert!(k.memory_reason().unwrap().to_string().contains("no localStorage"));
}

#[test]
fn reset_is_explicit_and_writes_an_empty_record() {
    let store = Shared::with(Some(&record(&[("m1-paging", 3)]).to_json()));
    let mut k = StarKeeper::open(Box::new(store.clone()));
    k.reset();
    assert!(k.record().is_empty());
    assert_eq!(store.record(), Some(StarRecord::new().to_json()));
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        (0u8..6).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z0-9-]{0,8}|.{0,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn no_input_string_panics(text in ".{0,300}") {
        let parsed = parse_record(&text);
        prop_assert!(parsed.record.iter().all(|(id, s)| s <= 3 && !id.is_empty()));
        let mut k = StarKeeper::open(Box::new(MemoryStarStore::with_record(&text)));
        k.earn("m1-paging", 2);
        prop_assert!(k.stars("m1-paging") >= 2);
    }

    #[test]
    fn no_json_value_panics(v in arb_value()) {
        let parsed = parse_record(&v.to_string());
        prop_assert!(parsed.record.len() <= 5);
    }

    /// Valid stars are never lost because of a corrupt sibling entry.
    #[test]
    fn valid_stars_survive_corrupt_siblings(
        valid in prop::collection::btree_map("m[0-9]{1,2}-[a-z]{1,8}", 0u8..=3, 1..6),
        junk in prop::collection::btree_map("x[a-z]{0,5}|[A-Z ]{1,5}|", arb_value(), 0..5),
        earned in 0u8..=3,
    ) {
        let mut stars = serde_json::Map::new();
        for (k, v) in &junk {
            stars.insert(k.clone(), v.clone());
        }
        for (k, v) in &valid {
            stars.insert(k.clone(), Value::from(*v));
        }
        let raw = json!({ "schema": STARS_SCHEMA, "stars": Value::Object(stars) }).to_string();
        let parsed = parse_record(&raw);
        for (id, s) in &valid {
            prop_assert_eq!(parsed.record.get(id), *s);
        }
        let store = Shared::with(Some(&raw));
        let mut k = StarKeeper::open(Box::new(store.clone()));
        k.earn("z-new", earned);
        let saved = parse_record(&store.record().unwrap());
        prop_assert!(saved.problems.is_empty(), "the written record is well-formed: {:?}", saved.problems);
        for (id, s) in &valid {
            prop_assert_eq!(saved.record.get(id), *s, "{} lost a star", id);
        }
        if !parsed.problems.is_empty() {
            prop_assert_eq!(store.backup(), Some(raw));
        }
    }
}

/// Each mission's last setup, for the hub's "Continue": only the lab's own `#lab=` links of
/// valid missions are kept, bounded, and a damaged record keeps its valid entries.
#[test]
fn the_last_setups_record_is_bounded_and_read_defensively() {
    use kvlab::missions::last_setup::{LastSetups, MAX_LINK_CHARS, MAX_SETUPS};
    let mut s = LastSetups::default();
    assert!(s.set("m2-block-size", "#lab=eyJ2IjoxfQ"));
    assert!(!s.set("m2-block-size", "#lab=eyJ2IjoxfQ"), "the same link changes nothing");
    assert!(!s.set("m3", "javascript:alert(1)") && !s.set("m3", "#lab=<b>") && !s.set("", "#lab=abc"));
    assert!(!s.set("m3", &format!("#lab={}", "a".repeat(MAX_LINK_CHARS))), "too long");
    let again = LastSetups::parse(&s.to_json());
    assert_eq!(again.get("m2-block-size"), Some("#lab=eyJ2IjoxfQ"));
    for text in ["", "null", "[]", "{\"schema\":\"other\"}", "{\"schema\":\"kvlab/last-setups@1\",\"setups\":7}"] {
        assert_eq!(LastSetups::parse(text), LastSetups::default(), "{text}");
    }
    let mixed = r##"{"schema":"kvlab/last-setups@1","setups":{"m1-paging":"#lab=abc","bad id!":"#lab=abc","m2":42,"m3":"http://x"}}"##;
    let kept = LastSetups::parse(mixed);
    assert_eq!((kept.get("m1-paging"), kept.get("m2"), kept.get("m3")), (Some("#lab=abc"), None, None));
    let mut full = LastSetups::default();
    for i in 0..MAX_SETUPS {
        assert!(full.set(&format!("m{i}"), "#lab=abc"));
    }
    assert!(!full.set("one-more", "#lab=abc") && full.set("m0", "#lab=abd"), "full: only known missions change");
}
