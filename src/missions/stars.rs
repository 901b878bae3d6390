//! Stars a learner earned, kept between visits. This module owns the seam and the rules; the page
//! supplies the storage (egui's `Storage`, ruffle's `StorageBackend`):
//!
//! - [`StarStore`] loads and saves the raw text of one record (the page: `window.localStorage`,
//!   see `web::storage`; tests and browsers without storage: [`MemoryStarStore`]).
//! - The record is versioned JSON: `{ "schema": "kvlab/stars@1", "stars": { "<mission id>": 0..3 } }`.
//! - [`parse_record`] never fails: bad JSON, another schema, values that are not whole numbers
//!   from 0 to 3, ids that are not mission ids and oversized text become [`Problem`]s, and every
//!   valid entry is kept.
//! - [`StarKeeper`] applies the rules: stars never decrease (a save re-reads the store and keeps
//!   the best of both), a stored value that had problems is copied to the store's backup
//!   before anything replaces it (and is never replaced when that copy fails), a store that
//!   fails is swapped for memory (the learner is told), and [`StarKeeper::reset`] is the only way
//!   stars go down.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::formats::mission::MAX_STARS;
use crate::formats::sniff::STARS_SCHEMA;

/// Stored text longer than this is not read (a record of every mission is a few KiB).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Most entries a record keeps.
pub const MAX_ENTRIES: usize = 1000;

/// Why a store could not load or save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    pub kind: StoreErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// No storage at all, or it refuses access (disabled, sandboxed, private mode).
    Unavailable,
    /// The storage is full (quota exceeded).
    Full,
}

impl StoreError {
    pub fn unavailable(message: impl Into<String>) -> StoreError {
        StoreError { kind: StoreErrorKind::Unavailable, message: message.into() }
    }
    pub fn full(message: impl Into<String>) -> StoreError {
        StoreError { kind: StoreErrorKind::Full, message: message.into() }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Where the record's raw text lives. Implementations only move text; every rule is here.
pub trait StarStore {
    /// The stored record, None when nothing is stored.
    fn load(&self) -> Result<Option<String>, StoreError>;
    fn save(&mut self, text: &str) -> Result<(), StoreError>;
    /// The kept copy of a value that could not be read whole.
    fn load_backup(&self) -> Result<Option<String>, StoreError>;
    fn save_backup(&mut self, text: &str) -> Result<(), StoreError>;
    /// Whether what is saved outlives the page (false for memory).
    fn persistent(&self) -> bool;
}

/// A store in memory: for tests, and for browsers whose storage is unavailable. `fail` makes
/// every call fail with that error (to test the fallbacks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStarStore {
    pub record: Option<String>,
    pub backup: Option<String>,
    pub fail: Option<StoreError>,
}

impl MemoryStarStore {
    pub fn with_record(text: &str) -> MemoryStarStore {
        MemoryStarStore { record: Some(text.to_string()), ..MemoryStarStore::default() }
    }

    fn check(&self) -> Result<(), StoreError> {
        self.fail.clone().map_or(Ok(()), Err)
    }
}

impl StarStore for MemoryStarStore {
    fn load(&self) -> Result<Option<String>, StoreError> {
        self.check()?;
        Ok(self.record.clone())
    }
    fn save(&mut self, text: &str) -> Result<(), StoreError> {
        self.check()?;
        self.record = Some(text.to_string());
        Ok(())
    }
    fn load_backup(&self) -> Result<Option<String>, StoreError> {
        self.check()?;
        Ok(self.backup.clone())
    }
    fn save_backup(&mut self, text: &str) -> Result<(), StoreError> {
        self.check()?;
        self.backup = Some(text.to_string());
        Ok(())
    }
    fn persistent(&self) -> bool {
        false
    }
}

/// Best stars per mission id (ids sorted, so the JSON is stable).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StarRecord {
    stars: BTreeMap<String, u8>,
}

impl StarRecord {
    pub fn new() -> StarRecord {
        StarRecord::default()
    }

    /// Stars earned on mission `id` (0 when never played).
    pub fn get(&self, id: &str) -> u8 {
        self.stars.get(id).copied().unwrap_or(0)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.stars.contains_key(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, u8)> {
        self.stars.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.stars.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stars.is_empty()
    }

    /// Stars over every mission.
    pub fn total(&self) -> u32 {
        self.stars.values().map(|&s| u32::from(s)).sum()
    }

    /// Records `stars` for `id`, keeping the better of old and new (clamped to [`MAX_STARS`]).
    /// Returns whether the record changed. Ids that are not mission ids are ignored.
    pub fn merge_stars(&mut self, id: &str, stars: u8) -> bool {
        if !valid_mission_id(id) || (!self.stars.contains_key(id) && self.stars.len() >= MAX_ENTRIES) {
            return false;
        }
        let stars = stars.min(MAX_STARS);
        match self.stars.get_mut(id) {
            Some(old) if *old >= stars => false,
            Some(old) => {
                *old = stars;
                true
            }
            None => {
                self.stars.insert(id.to_string(), stars);
                true
            }
        }
    }

    /// Keeps the better entry of both records for every id. Returns whether self changed.
    pub fn merge(&mut self, other: &StarRecord) -> bool {
        let mut changed = false;
        for (id, s) in other.iter() {
            changed |= self.merge_stars(id, s);
        }
        changed
    }

    /// The record as stored: `{"schema":"kvlab/stars@1","stars":{…}}`.
    pub fn to_json(&self) -> String {
        let stars: Map<String, Value> = self.stars.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        let mut root = Map::new();
        root.insert("schema".into(), Value::from(STARS_SCHEMA));
        root.insert("stars".into(), Value::Object(stars));
        Value::Object(root).to_string()
    }
}

/// The rule mission files follow for ids: 1 to 64 lowercase letters, digits and dashes, not
/// starting with a dash.
pub fn valid_mission_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
}

/// Something wrong in a stored record: the entry (mission id) it concerns, if any, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub entry: Option<String>,
    pub message: String,
}

impl Problem {
    fn whole(message: impl Into<String>) -> Problem {
        Problem { entry: None, message: message.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.entry {
            Some(id) => write!(f, "stars[{}]: {}", Value::from(shorten(id, 40)), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What [`parse_record`] read: every valid entry, and what was wrong.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub record: StarRecord,
    pub problems: Vec<Problem>,
}

fn shorten(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max_chars).collect::<String>())
    }
}

fn describe(v: &Value) -> String {
    shorten(&v.to_string(), 24)
}

/// Reads one entry's value: a whole number from 0 to 3 (`3.0` counts as 3).
fn star_value(v: &Value) -> Result<u8, String> {
    let Value::Number(n) = v else {
        return Err(format!("{} is not a number of stars; stars are whole numbers from 0 to {MAX_STARS}", describe(v)));
    };
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(format!("{} is not a whole number of stars (0 to {MAX_STARS})", describe(v)));
    }
    if !(0.0..=f64::from(MAX_STARS)).contains(&f) {
        return Err(format!("{} is out of range; a mission has 0 to {MAX_STARS} stars", describe(v)));
    }
    Ok(f as u8)
}

/// Reads a stored record defensively. Never fails and never panics: whatever cannot be used is a
/// [`Problem`], and every entry that can be used is kept, whatever happens to its siblings.
pub fn parse_record(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let root = match record_object(text) {
        Ok(root) => root,
        Err(message) => {
            out.problems.push(Problem::whole(message));
            return out;
        }
    };
    check_record_fields(&root, &mut out.problems);
    let stars = match root.get("stars") {
        Some(Value::Object(m)) => m,
        Some(other) => {
            out.problems
                .push(Problem::whole(format!("\"stars\" is {}, not an object of mission ids", describe(other))));
            return out;
        }
        None => {
            out.problems.push(Problem::whole("the record has no \"stars\" object"));
            return out;
        }
    };
    for (id, v) in stars {
        let entry = || Some(id.clone());
        if !valid_mission_id(id) {
            out.problems.push(Problem {
                entry: entry(),
                message: "not a mission id (1 to 64 lowercase letters, digits and dashes); left out".into(),
            });
            continue;
        }
        match star_value(v) {
            Ok(s) => {
                if out.record.len() >= MAX_ENTRIES {
                    out.problems
                        .push(Problem::whole(format!("more than {MAX_ENTRIES} missions; the rest were left out")));
                    break;
                }
                out.record.merge_stars(id, s);
            }
            Err(message) => out.problems.push(Problem { entry: entry(), message: format!("{message}; left out") }),
        }
    }
    out
}

/// The stored value as a JSON object, or why it is not one (too large, not JSON, not an object).
fn record_object(text: &str) -> Result<serde_json::Map<String, Value>, String> {
    if text.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "the stored value is {} bytes, far more than a stars record ({MAX_RECORD_BYTES} at most); it was not read",
            text.len()
        ));
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(value) => Err(format!(
            "the stored value is {}, not a stars record {{\"schema\": \"{STARS_SCHEMA}\", \"stars\": {{…}}}}",
            describe(&value)
        )),
        Err(e) => Err(format!("the stored value is not valid JSON ({e})")),
    }
}

/// A missing or foreign schema and unknown fields are noted; the entries are still read.
fn check_record_fields(root: &serde_json::Map<String, Value>, problems: &mut Vec<Problem>) {
    match root.get("schema") {
        Some(Value::String(s)) if s == STARS_SCHEMA => {}
        Some(other) => problems.push(Problem::whole(format!(
            "the record's schema is {}, not \"{STARS_SCHEMA}\"; the entries that look like stars were read",
            describe(other)
        ))),
        None => problems.push(Problem::whole(format!(
            "the record has no schema (\"{STARS_SCHEMA}\"); the entries that look like stars were read"
        ))),
    }
    for key in root.keys().filter(|k| *k != "schema" && *k != "stars") {
        problems.push(Problem::whole(format!(
            "the record has an unknown field {}; it was left out",
            Value::from(shorten(key, 40))
        )));
    }
}

/// Why the stars live in memory only (the page says so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryReason {
    /// The store could not be used at all.
    Unavailable(StoreError),
    /// Saving failed (full, or refused).
    SaveFailed(StoreError),
    /// The stored value could not be read and could not be kept aside, so it is left untouched.
    CannotBackUp(StoreError),
}

impl fmt::Display for MemoryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryReason::Unavailable(e) => write!(f, "this browser does not let the lab store anything ({e})"),
            MemoryReason::SaveFailed(e) if e.kind == StoreErrorKind::Full => {
                write!(f, "this browser's storage is full ({e})")
            }
            MemoryReason::SaveFailed(e) => write!(f, "saving failed ({e})"),
            MemoryReason::CannotBackUp(e) => write!(
                f,
                "the stored stars could not be read and could not be copied aside ({e}), so they are left as they are"
            ),
        }
    }
}

/// The learner's stars over a [`StarStore`], with the rules of this module.
pub struct StarKeeper {
    store: Box<dyn StarStore>,
    record: StarRecord,
    problems: Vec<Problem>,
    memory: Option<MemoryReason>,
    backed_up: bool,
}

impl StarKeeper {
    /// Opens the record in `store`. A store that cannot load is replaced by memory.
    pub fn open(store: Box<dyn StarStore>) -> StarKeeper {
        let mut k =
            StarKeeper { store, record: StarRecord::new(), problems: Vec::new(), memory: None, backed_up: false };
        match k.store.load() {
            Ok(Some(text)) => {
                let parsed = parse_record(&text);
                k.record = parsed.record;
                k.problems = parsed.problems;
            }
            Ok(None) => {}
            Err(e) => k.fall_back(MemoryReason::Unavailable(e)),
        }
        k
    }

    /// Stars in memory only, because the platform's storage could not be opened.
    pub fn memory_only(reason: StoreError) -> StarKeeper {
        let mut k = StarKeeper::open(Box::new(MemoryStarStore::default()));
        k.memory = Some(MemoryReason::Unavailable(reason));
        k
    }

    fn fall_back(&mut self, reason: MemoryReason) {
        self.store = Box::new(MemoryStarStore { record: Some(self.record.to_json()), ..MemoryStarStore::default() });
        self.memory = Some(reason);
    }

    pub fn record(&self) -> &StarRecord {
        &self.record
    }

    pub fn stars(&self, id: &str) -> u8 {
        self.record.get(id)
    }

    /// What was wrong with the stored value when it was last read.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Why stars are kept for this visit only (None while they are saved).
    pub fn memory_reason(&self) -> Option<&MemoryReason> {
        self.memory.as_ref()
    }

    /// Whether stars outlive the page.
    pub fn persistent(&self) -> bool {
        self.memory.is_none() && self.store.persistent()
    }

    /// Whether an unreadable stored value was copied to the store's backup.
    pub fn backed_up(&self) -> bool {
        self.backed_up
    }

    /// Records `stars` for mission `id`; stars never decrease. Re-reads the store first (another
    /// tab may have saved), keeps the best of both, copies a stored value that had problems
    /// aside, then writes a well-formed record. Returns whether the best for `id` went up (or
    /// was recorded for the first time).
    pub fn earn(&mut self, id: &str, stars: u8) -> bool {
        let before = self.record.get(id);
        let had = self.record.contains(id);
        let mut next = self.record.clone();
        next.merge_stars(id, stars);
        let improved = next.get(id) > before || (!had && next.contains(id));
        self.write(next);
        improved
    }

    /// Forgets every star (the learner asked, after confirming).
    pub fn reset(&mut self) {
        self.record = StarRecord::new();
        self.problems.clear();
        if let Err(e) = self.store.save(&self.record.to_json()) {
            self.fall_back(MemoryReason::SaveFailed(e));
        }
    }

    fn write(&mut self, mut next: StarRecord) {
        let stored = match self.store.load() {
            Ok(s) => s,
            Err(e) => {
                self.record = next;
                self.fall_back(MemoryReason::Unavailable(e));
                return;
            }
        };
        let parsed = stored.as_deref().map(parse_record).unwrap_or_default();
        next.merge(&parsed.record);
        if !parsed.problems.is_empty() {
            self.problems.clone_from(&parsed.problems);
        }
        if parsed.record == next && parsed.problems.is_empty() && stored.is_some() {
            self.record = next;
            return; // nothing new to write
        }
        if let (Some(raw), false) = (&stored, parsed.problems.is_empty()) {
            if let Err(e) = self.store.save_backup(raw) {
                self.record = next;
                self.fall_back(MemoryReason::CannotBackUp(e));
                return;
            }
            self.backed_up = true;
        }
        self.record = next;
        if let Err(e) = self.store.save(&self.record.to_json()) {
            self.fall_back(MemoryReason::SaveFailed(e));
        }
    }
}
