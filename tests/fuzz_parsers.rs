#![cfg(not(target_arch = "wasm32"))]
//! The preset parser, the mission parser, knob patches and the scorer never panic, whatever
//! they are fed: arbitrary text, arbitrary JSON, and shipped presets and missions with random
//! fields replaced, deleted, added, scaled or turned into strings. Every error names a field or
//! says what is wrong with the document as a whole. A failure prints the input (proptest shrinks
//! it); `PROPTEST_CASES=5000 cargo test --test fuzz_parsers` searches harder.

use std::path::Path;
use std::sync::OnceLock;

use kvlab::engine::config::ConfigError;
use kvlab::engine::{Report, Simulation};
use kvlab::formats::mission::{parse_mission_index, MAX_STARS};
use kvlab::formats::preset::{parse_preset, parse_preset_dto};
use kvlab::missions::mission::{parse_mission, score, start, Mission};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Names and values the files use, so random JSON often looks almost right.
const WORDS: &[&str] = &[
    "schema",
    "kvlab/preset@1",
    "kvlab/mission@1",
    "kvlab/missions-index@1",
    "id",
    "title",
    "seed",
    "duration_s",
    "model",
    "llama-3-8b",
    "kv_dtype",
    "fp16",
    "fp8",
    "gpu",
    "h100-sxm",
    "kv_memory_gib",
    "allocator",
    "kind",
    "contiguous",
    "paged",
    "reserve",
    "max_model_len",
    "fit",
    "best_fit",
    "block_size",
    "prefix_caching",
    "scheduler",
    "max_num_seqs",
    "preemption",
    "swap",
    "workload",
    "arrival",
    "poisson",
    "trace",
    "rate_per_s",
    "bursts",
    "csv",
    "classes",
    "prompt_tokens",
    "output_tokens",
    "mean",
    "p99",
    "max_tokens",
    "n",
    "shared_prefix_tokens",
    "number",
    "story",
    "task",
    "preset",
    "knobs",
    "goals",
    "metric",
    "comparison",
    ">=",
    "<=",
    "==",
    "value",
    "stars",
    "label",
    "explain",
    "hints",
    "fix",
    "kv.utilization_mean",
    "config.kv_memory_gib",
    "config.allocator.block_size",
    "missions",
    "file",
];

fn repo_text(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn json_files(dir: &str) -> Vec<Value> {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut names: Vec<String> = std::fs::read_dir(&full)
        .expect("directory exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names.iter().map(|n| serde_json::from_str(&repo_text(&format!("{dir}/{n}"))).expect("shipped JSON")).collect()
}

/// Shipped presets, missions (with the example) and the index, as JSON values.
fn corpus() -> &'static [Value] {
    static CORPUS: OnceLock<Vec<Value>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut all = json_files("assets/presets");
        all.extend(json_files("assets/missions"));
        all.extend(json_files("assets/missions/examples"));
        all
    })
}

fn missions() -> &'static [Mission] {
    static MISSIONS: OnceLock<Vec<Mission>> = OnceLock::new();
    MISSIONS.get_or_init(|| {
        corpus()
            .iter()
            .filter(|v| v["schema"] == "kvlab/mission@1")
            .map(|v| parse_mission(&v.to_string()).expect("shipped missions are valid"))
            .collect()
    })
}

/// A real report from a short run, to mutate.
fn base_report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let mut config = parse_preset(&repo_text("assets/presets/paged-default.json")).expect("valid");
        config.duration_s = 3.0;
        Simulation::new(config).expect("valid").run_to_end()
    })
}

/// The error property: a field path, a message about the document as a whole, or serde's
/// message naming the field (a missing field, or an unknown one with an empty name).
fn well_formed(e: &ConfigError) -> bool {
    !e.field.is_empty()
        || e.message.starts_with("not valid JSON")
        || e.message.contains("is a JSON object")
        || e.message.starts_with("missing field `")
        || e.message.starts_with("unknown field `")
        || (e.message.starts_with("the ") && e.message.contains("bytes; the limit is"))
}

fn check_all_parsers(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = parse_preset(text) {
        prop_assert!(well_formed(&e), "preset error without a field: {e:?}");
    }
    if let Err(e) = parse_preset_dto(text) {
        prop_assert!(well_formed(&e), "preset DTO error without a field: {e:?}");
    }
    match parse_mission(text) {
        Err(e) => prop_assert!(well_formed(&e), "mission error without a field: {e:?}"),
        Ok(m) => {
            prop_assert!(m.locked_changes(m.fix_preset()).is_empty());
            let s = score(&m, m.preset(), base_report());
            prop_assert!(s.stars <= MAX_STARS);
        }
    }
    if let Err(e) = parse_mission_index(text) {
        prop_assert!(well_formed(&e), "index error without a field: {e:?}");
    }
    Ok(())
}

fn arb_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        prop::sample::select(vec![0.0, -1.0, 1.0, 0.5, 16.0, 256.0, 4096.0, 1e9, 1e-9, 1e300, -1e300])
            .prop_map(|f| json!(f)),
    ]
}

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![3 => prop::sample::select(WORDS).prop_map(str::to_string), 1 => "[a-z_.\\[\\]0-9]{0,10}"]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number(),
        prop::sample::select(WORDS).prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Replace(Value),
    Delete,
    AddField(String, Value),
    Scale(f64),
    Stringify,
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => arb_json().prop_map(Mutation::Replace),
        2 => Just(Mutation::Delete),
        1 => (arb_key(), arb_json()).prop_map(|(k, v)| Mutation::AddField(k, v)),
        3 => prop::sample::select(vec![0.0, -1.0, 0.5, 2.0, 10.0, 1e6, 1e-6]).prop_map(Mutation::Scale),
        1 => Just(Mutation::Stringify),
    ]
}

/// Every JSON pointer in `v` (the root included).
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn mutate(v: &mut Value, pick: usize, m: &Mutation) {
    let mut all = Vec::new();
    pointers(v, String::new(), &mut all);
    let at = &all[pick % all.len()];
    if let (Mutation::Delete, Some((parent, key))) = (m, at.rsplit_once('/')) {
        match v.pointer_mut(parent) {
            Some(Value::Object(o)) => {
                o.remove(&key.replace("~1", "/").replace("~0", "~"));
            }
            Some(Value::Array(a)) => {
                if let Ok(i) = key.parse::<usize>() {
                    if i < a.len() {
                        a.remove(i);
                    }
                }
            }
            _ => {}
        }
        return;
    }
    let Some(slot) = v.pointer_mut(at) else { return };
    match m {
        Mutation::Replace(x) => *slot = x.clone(),
        Mutation::Delete => *slot = Value::Null,
        Mutation::AddField(k, x) => {
            if let Value::Object(o) = slot {
                o.insert(k.clone(), x.clone());
            }
        }
        Mutation::Scale(f) => {
            if let Some(n) = slot.as_f64() {
                *slot = serde_json::Number::from_f64(n * f).map_or(Value::Null, Value::Number);
            }
        }
        Mutation::Stringify => *slot = Value::String(slot.to_string()),
    }
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(-0.0), 0.0..1.0_f64, 0.0..100_000.0_f64]
}

/// A report with its figures replaced by anything, NaN and infinities included.
fn arb_report() -> impl Strategy<Value = Report> {
    (prop::collection::vec(arb_f64(), 10), any::<u64>()).prop_map(|(f, n)| {
        let mut r = base_report().clone();
        r.kv.utilization_mean = f[0];
        r.latency_ms.ttft_p95 = f[1];
        r.latency_ms.tpot_p95 = f[2];
        r.prefix_cache_hit_rate = f[3];
        r.output_tokens_per_s = f[4];
        r.paged_overhead = f[5];
        r.running_mean = f[6];
        r.kv.live_fraction_mean = f[7];
        r.latency_ms.ttft_p50 = f[8];
        r.sim_time_s = f[9];
        r.preemptions = n;
        r.cow_copies = n / 3;
        r
    })
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        check_all_parsers(&text)?;
    }

    #[test]
    fn json_like_text_never_panics(text in "[{}\\[\\]\":,0-9a-z_@/ .-]{0,120}") {
        check_all_parsers(&text)?;
    }

    #[test]
    fn arbitrary_json_never_panics(v in arb_json()) {
        check_all_parsers(&v.to_string())?;
    }

    #[test]
    fn mutated_shipped_files_never_panic(
        file in any::<usize>(),
        mutations in prop::collection::vec((any::<usize>(), arb_mutation()), 1..4),
    ) {
        let mut v = corpus()[file % corpus().len()].clone();
        for (pick, m) in &mutations {
            mutate(&mut v, *pick, m);
        }
        check_all_parsers(&v.to_string())?;
        check_all_parsers(&serde_json::to_string_pretty(&v).unwrap())?;
    }

    #[test]
    fn arbitrary_patches_never_panic(which in any::<usize>(), patch in arb_json()) {
        let m = &missions()[which % missions().len()];
        match m.apply_patch(&patch) {
            Ok(preset) => {
                prop_assert!(m.locked_changes(&preset).is_empty());
                // Runnable, or a well-formed setup vLLM refuses to start (scored 0 stars).
                prop_assert!(start(&preset).is_ok());
            }
            Err(e) => prop_assert!(
                !e.field.is_empty() || e.message.contains("is a JSON object") || e.message.starts_with("missing field `"),
                "patch error without a field: {e:?}"
            ),
        }
    }

    #[test]
    fn mutated_patches_of_the_fix_never_panic(
        which in any::<usize>(),
        mutations in prop::collection::vec((any::<usize>(), arb_mutation()), 1..3),
    ) {
        let m = &missions()[which % missions().len()];
        let mut patch = m.fix().clone();
        for (pick, mu) in &mutations {
            mutate(&mut patch, *pick, mu);
        }
        if let Err(e) = m.apply_patch(&patch) {
            prop_assert!(!e.field.is_empty() || e.message.contains("is a JSON object"), "{e:?}");
        }
    }

    #[test]
    fn the_scorer_never_panics_and_follows_the_star_rule(
        which in any::<usize>(),
        report in arb_report(),
        preset_mutations in prop::collection::vec((any::<usize>(), arb_mutation()), 0..3),
    ) {
        let m = &missions()[which % missions().len()];
        let mut pv = serde_json::to_value(m.fix_preset()).unwrap();
        for (pick, mu) in &preset_mutations {
            mutate(&mut pv, *pick, mu);
        }
        // Any preset DTO that deserializes, valid or not, can be scored.
        let preset = parse_preset_dto(&pv.to_string()).unwrap_or_else(|_| m.preset().clone());
        let s = score(m, &preset, &report);
        prop_assert!(s.stars <= MAX_STARS);
        prop_assert_eq!(s.goals.len(), m.scoring_goals().len());
        for g in &s.goals {
            prop_assert!(!(g.met && g.actual.is_none_or(f64::is_nan)), "a goal without a number was met: {g:?}");
        }
        let tier_met = |k: u8| s.goals.iter().filter(|g| g.stars == k).all(|g| g.met);
        let expected = if s.locked_changes.is_empty() {
            (1..=MAX_STARS).take_while(|&k| tier_met(k)).count() as u8
        } else {
            0
        };
        prop_assert_eq!(s.stars, expected);
    }
}
