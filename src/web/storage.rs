//! The page's star storage: `window.localStorage` behind the [`StarStore`] seam of `missions::stars`.
//! The rules (read defensively, never decrease, back up before replacing, fall back to memory)
//! are `missions::stars`'s [`StarKeeper`]; this module only moves text and says what happened:
//!
//! - no storage (the property throws, is null, or reading throws) → stars in memory, and a notice;
//! - saving fails (quota exceeded, refused) → the keeper moves to memory, and a notice;
//! - a stored value with problems → a notice naming them; valid stars are kept, and the raw value
//!   is copied under `kvlab.stars.v1.backup` before a well-formed record replaces it.
//!
//! It also keeps the names of the custom missions played (`kvlab.played.v1`, `missions::played`).

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};

use super::messages::Messages;
use crate::missions::last_setup::LastSetups;
use crate::missions::played::PlayedList;
use crate::missions::stars::{MemoryReason, StarKeeper, StarStore, StoreError};

/// The localStorage key of the stars record.
pub const STARS_KEY: &str = "kvlab.stars.v1";
/// Where a stored value that could not be read whole is kept before it is replaced.
pub const STARS_BACKUP_KEY: &str = "kvlab.stars.v1.backup";

/// `window.localStorage`.
pub struct LocalStarStore {
    storage: web_sys::Storage,
}

fn js_error_text(e: &JsValue) -> String {
    if let Some(ex) = e.dyn_ref::<web_sys::DomException>() {
        return format!("{}: {}", ex.name(), ex.message());
    }
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| "unknown error".into())
}

fn store_error(e: &JsValue) -> StoreError {
    let text = js_error_text(e);
    let quota =
        e.dyn_ref::<web_sys::DomException>().is_some_and(|ex| ex.name() == "QuotaExceededError" || ex.code() == 22);
    if quota {
        StoreError::full(text)
    } else {
        StoreError::unavailable(text)
    }
}

impl LocalStarStore {
    /// The window's localStorage; an error when the browser has none or refuses it.
    pub fn open() -> Result<LocalStarStore, StoreError> {
        let window = web_sys::window().ok_or_else(|| StoreError::unavailable("no window"))?;
        match window.local_storage() {
            Ok(Some(storage)) => Ok(LocalStarStore { storage }),
            Ok(None) => Err(StoreError::unavailable("localStorage is not available")),
            Err(e) => Err(store_error(&e)),
        }
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.storage.get_item(key).map_err(|e| store_error(&e))
    }

    pub fn set(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.storage.set_item(key, value).map_err(|e| store_error(&e))
    }
}

impl StarStore for LocalStarStore {
    fn load(&self) -> Result<Option<String>, StoreError> {
        self.get(STARS_KEY)
    }
    fn save(&mut self, text: &str) -> Result<(), StoreError> {
        self.set(STARS_KEY, text)
    }
    fn load_backup(&self) -> Result<Option<String>, StoreError> {
        self.get(STARS_BACKUP_KEY)
    }
    fn save_backup(&mut self, text: &str) -> Result<(), StoreError> {
        self.set(STARS_BACKUP_KEY, text)
    }
    fn persistent(&self) -> bool {
        true
    }
}

/// A keeper over localStorage, or over memory when the page cannot use localStorage.
pub fn open_keeper() -> StarKeeper {
    match LocalStarStore::open() {
        Ok(store) => StarKeeper::open(Box::new(store)),
        Err(e) => StarKeeper::memory_only(e),
    }
}

/// The page's stars: one keeper, opened at boot and owned by whoever the page hands it to (the
/// lab's `App`, or the hub); clones share it.
#[derive(Clone)]
pub struct Stars(Rc<RefCell<StarKeeper>>);

impl Stars {
    /// Opens the keeper over localStorage (or memory, see [`open_keeper`]).
    pub fn open() -> Stars {
        Stars(Rc::new(RefCell::new(open_keeper())))
    }

    /// Runs `f` on the keeper.
    pub fn with<R>(&self, f: impl FnOnce(&mut StarKeeper) -> R) -> R {
        f(&mut self.0.borrow_mut())
    }

    /// Shows the notices about stars in `messages` (replacing earlier ones).
    pub fn show_notices(&self, messages: &Messages) {
        messages.clear("stars");
        messages.clear("stars-memory");
        for (kind, text) in self.with(|k| notices(k)) {
            messages.notice(kind, &text);
        }
    }
}

/// What the learner should know about their stars: (message kind, sentence) pairs, empty when
/// all is well.
pub fn notices(k: &StarKeeper) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if !k.problems().is_empty() {
        let list: Vec<String> = k.problems().iter().take(4).map(ToString::to_string).collect();
        let more = k.problems().len().saturating_sub(4);
        let kept = match k.record().len() {
            0 => "No saved stars could be read.".to_string(),
            1 => "The 1 mission with readable stars is kept.".to_string(),
            n => format!("The {n} missions with readable stars are kept."),
        };
        let backup = if k.backed_up() {
            format!(" The stored value was copied to {STARS_BACKUP_KEY} before it was replaced.")
        } else {
            format!(" The stored value stays as it is until you earn a star; it is then copied to {STARS_BACKUP_KEY} first.")
        };
        out.push((
            "stars",
            format!(
                "Some saved stars could not be read ({STARS_KEY}): {}{}. {kept}{backup}",
                list.join("; "),
                if more > 0 { format!("; and {more} more") } else { String::new() }
            ),
        ));
    }
    if let Some(reason) = k.memory_reason() {
        let tail = match reason {
            MemoryReason::CannotBackUp(_) => " Reset the stars on the missions page to start a fresh record.",
            _ => "",
        };
        out.push(("stars-memory", format!("Stars are kept for this visit only: {reason}.{tail}")));
    }
    out
}
/// The localStorage key of the custom missions played (`missions::played`).
pub const PLAYED_KEY: &str = "kvlab.played.v1";

/// The custom missions played in this browser (empty when storage is unavailable or the stored
/// value cannot be read; the list is only names, the stars stay in the star record).
pub fn played() -> PlayedList {
    let text = LocalStarStore::open().ok().and_then(|s| s.get(PLAYED_KEY).ok().flatten());
    text.map(|t| PlayedList::parse(&t)).unwrap_or_default()
}

/// Puts a custom mission first in the played list, with the link that replays it (a failed
/// save only loses the name: its stars are kept by the star record either way).
pub fn remember_played(id: &str, number: u32, title: &str, replay: Option<&str>) {
    let Ok(store) = LocalStarStore::open() else { return };
    let mut list = played();
    if list.add(id, number, title, replay) {
        let _ = store.set(PLAYED_KEY, &list.to_json());
    }
}

/// The localStorage key of each mission's last setup (`missions::last_setup`).
pub const LAST_SETUPS_KEY: &str = "kvlab.last-setups.v1";

/// Each mission's last setup (empty when storage is unavailable or unreadable).
pub fn last_setups() -> LastSetups {
    let text = LocalStarStore::open().ok().and_then(|s| s.get(LAST_SETUPS_KEY).ok().flatten());
    text.map(|t| LastSetups::parse(&t)).unwrap_or_default()
}

/// Remembers `link` (`#lab=…`) as mission `id`'s last setup (a failed save only loses the
/// hub's way back to it).
pub fn remember_last_setup(id: &str, link: &str) {
    let Ok(store) = LocalStarStore::open() else { return };
    let mut setups = last_setups();
    if setups.set(id, link) {
        let _ = store.set(LAST_SETUPS_KEY, &setups.to_json());
    }
}
