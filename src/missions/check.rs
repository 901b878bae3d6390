//! The mission check that `kvlab check` and the lab's Load dialog both run: a mission is valid
//! when its broken setup earns no star and its documented fix earns all three. Both shells
//! report [`MissionCheck::problem`] in the same words.

use crate::engine::config::ConfigError;
use crate::formats::mission::MAX_STARS;

use crate::engine::numbers::show_number;

use super::mission::{GoalResult, Mission, Score};

/// The scores of a mission's broken setup and of its fix.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionCheck {
    pub broken: Score,
    pub fixed: Score,
}

/// A goal and how the run stands against it: `“label” (latency_ms.tpot_p95 = 31.2, goal <= 25)`.
fn goal_words(g: &GoalResult) -> String {
    let actual = g.actual.map_or_else(|| "absent".to_string(), |a| show_number((a * 1000.0).round() / 1000.0));
    format!("“{}” ({} = {actual}, goal {} {})", g.label, g.metric, g.comparison.symbol(), show_number(g.value))
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
            let met: Vec<String> = self.broken.goals.iter().filter(|g| g.stars == 1 && g.met).map(goal_words).collect();
            return Some(format!(
                "the broken setup already earns {} star(s); tighten the goals of star 1 so that it earns none (it meets {})",
                self.broken.stars,
                met.join(" and ")
            ));
        }
        if self.fixed.stars != MAX_STARS {
            let tier = self.fixed.stars + 1;
            let missed: Vec<String> =
                self.fixed.goals.iter().filter(|g| g.stars == tier && !g.met).map(goal_words).collect();
            return Some(format!(
                "the fix earns {} star(s), not {MAX_STARS}; fix the \"fix\" or the goals it misses (star {tier}: {})",
                self.fixed.stars,
                missed.join("; ")
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
