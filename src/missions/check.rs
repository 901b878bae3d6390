//! The mission check that `kvlab check` and the lab's Load dialog both run: a mission is valid
//! when its broken setup earns no star and its documented fix earns all three. Both shells
//! report [`MissionCheck::problem`] in the same words.

use crate::engine::config::ConfigError;
use crate::formats::mission::MAX_STARS;

use super::mission::{Mission, Score};

/// The scores of a mission's broken setup and of its fix.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionCheck {
    pub broken: Score,
    pub fixed: Score,
}

/// Runs the mission's broken setup and its fix to the end and scores both.
pub fn check_mission(m: &Mission) -> Result<MissionCheck, ConfigError> {
    let (_, broken) = m.run(m.preset())?;
    let (_, fixed) = m.run(m.fix_preset())?;
    Ok(MissionCheck { broken, fixed })
}

impl MissionCheck {
    /// Why the mission is not valid, in plain words with the way out; None when it is.
    pub fn problem(&self) -> Option<String> {
        if self.broken.stars != 0 {
            return Some(format!(
                "the broken setup already earns {} star(s); tighten the goals of star 1 so that it earns none",
                self.broken.stars
            ));
        }
        if self.fixed.stars != MAX_STARS {
            return Some(format!(
                "the fix earns {} star(s), not {MAX_STARS}; fix the \"fix\" or the goals it misses",
                self.fixed.stars
            ));
        }
        None
    }

    /// One sentence for the page: the check passed, or why the mission is not valid.
    pub fn verdict(&self) -> String {
        match self.problem() {
            None => format!(
                "Mission check passed: the broken setup earns 0 stars and the documented fix earns {MAX_STARS}."
            ),
            Some(p) => {
                format!("Not a valid mission: {p}. It can still be played, but its stars do not show that a fix works.")
            }
        }
    }
}
