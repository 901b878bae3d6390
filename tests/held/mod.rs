//! What the page shows while controls hold values the lab refused (`session::pending`), checked
//! against itself: shared by `session_pending.rs` and the random edits of `session_fuzz.rs`.
#![allow(dead_code)]

use kvlab::engine::model::{GPU_IDS, MODEL_IDS};
use kvlab::session::control_edit::value_for;
use kvlab::session::dispatch::Session;
use kvlab::session::pending::{screen_of, value_words};

/// The ids of `ids` that `text` names as whole words.
fn named<'a>(text: &str, ids: &[&'a str]) -> Vec<&'a str> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .map(|w| w.trim_matches('.'))
        .collect();
    ids.iter().copied().filter(|id| words.contains(id)).collect()
}

/// What the page shows agrees with itself: the figures are the running setup's, the page says
/// which setup runs exactly when a control holds a value (naming the running value and the held
/// one), each held control has at most one refusal, judged against the setup on screen (the
/// GPU and model it names are the screen's), and a held value always has a reason.
pub fn assert_honest(s: &Session) {
    let lab = s.lab();
    let running = &lab.state;
    if lab.refusal.is_none() {
        let shown: Vec<_> = lab.runs.iter().map(|r| r.preset.clone()).collect();
        assert_eq!(shown, running.runs(), "the figures shown are the running setup's");
    }
    let p = s.pending();
    let note = s.running_note();
    assert_eq!(note.is_some(), !p.is_empty(), "the note says which setup runs exactly when a value is held");
    for h in p.edits() {
        let note = note.as_deref().unwrap();
        let held = format!("your choice {} is not applied", value_words(&h.path, &h.value));
        assert!(note.contains(&held), "{note:?} lacks {held:?}");
        if let Some(v) = value_for(running, &h.path) {
            let now = format!("Running with {}", value_words(&h.path, &v));
            assert!(note.contains(&now), "{note:?} lacks {now:?}");
        }
    }
    let mut paths: Vec<&str> = p.refusals().iter().map(|(p, _)| p.as_str()).collect();
    paths.sort_unstable();
    let n = paths.len();
    paths.dedup();
    assert_eq!(paths.len(), n, "one refusal per control: {:?}", p.refusals());
    let screen = s.screen();
    let (_, unreadable) = screen_of(running, p.edits());
    let readable = p.edits().len() - unreadable.len();
    let judged = lab.check(&screen);
    let setup = p.refusals().len() - unreadable.len();
    assert!(p.refusals().len() >= unreadable.len(), "each unreadable value has its own refusal: {:?}", p.refusals());
    assert_eq!(setup > 0, readable > 0 && judged.is_err(), "the screen setup's refusal: {:?}", p.refusals());
    assert!(setup <= readable, "at most one refusal per held value: {:?}", p.refusals());
    assert!(readable == 0 || judged.is_err(), "a screen setup that runs is running, not held");
    let gpu = value_for(&screen, "gpu").and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    let model = value_for(&screen, "model").and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    for (path, why) in p.refusals() {
        assert!(p.held(path).is_some(), "a refusal sits at a held control: {path}");
        for g in named(why, GPU_IDS) {
            assert_eq!(g, gpu, "{why:?} names another GPU than the screen's {gpu}");
        }
        for m in named(why, MODEL_IDS) {
            assert_eq!(m, model, "{why:?} names another model than the screen's {model}");
        }
    }
}
