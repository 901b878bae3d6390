//! `kvlab mission`: score a mission's broken setup, its documented fix, or a knob patch of your
//! own, as text or as JSON.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::run::{read, summary};
use crate::missions::mission::{parse_mission, Mission, Score};

#[derive(Args, Debug)]
pub struct MissionArgs {
    /// Mission JSON file (schema kvlab/mission@1).
    pub mission: PathBuf,
    /// A knob patch to apply: a partial preset such as {"kv_memory_gib": 4}.
    #[arg(long, value_name = "PATCH.json", conflicts_with = "fix")]
    pub patch: Option<PathBuf>,
    /// Score the mission's documented fix instead of its broken setup.
    #[arg(long)]
    pub fix: bool,
    /// Print {"preset", "report", "score"} as JSON instead of text ("report" is null when vLLM
    /// refuses to start the setup; "score.startup_refusal" says why).
    #[arg(long)]
    pub json: bool,
}

pub fn load_mission(path: &Path) -> Result<Mission, String> {
    parse_mission(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// "2 of 3 stars", vLLM's refusal when the server did not start, and one line per goal.
pub fn score_text(s: &Score) -> String {
    let mut out = format!("{} of {} stars\n", s.stars, s.max_stars);
    if let Some(words) = &s.startup_refusal {
        out += &format!("  0 stars: the server did not start: {words}\n");
    }
    for g in &s.goals {
        let actual = g.actual.map_or("none".to_string(), fmt_num);
        out += &format!(
            "  [{}] star {}: {} ({} = {actual}, goal {} {})\n",
            if g.met { "met" } else { "   " },
            g.stars,
            g.label,
            g.metric,
            g.comparison.symbol(),
            fmt_num(g.value)
        );
    }
    if !s.locked_changes.is_empty() {
        out += &format!("  0 stars: changed paths that are not knobs: {}\n", s.locked_changes.join(", "));
    }
    out
}

pub fn mission(args: &MissionArgs) -> Result<(), String> {
    let m = load_mission(&args.mission)?;
    let preset = match (&args.patch, args.fix) {
        (Some(p), _) => {
            let text = read(p)?;
            let patch: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON ({e})", p.display()))?;
            m.apply_patch(&patch).map_err(|e| format!("{}: {e}", p.display()))?
        }
        (None, true) => m.fix_preset().clone(),
        (None, false) => m.preset().clone(),
    };
    let (report, score) = m.run(&preset).map_err(|e| format!("{}: {e}", args.mission.display()))?;
    if args.json {
        let out = serde_json::json!({ "preset": preset, "report": report, "score": score });
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON values serialize"));
    } else {
        println!("mission {}: {}", m.number(), m.title());
        if let Some(report) = &report {
            print!("{}", summary(report));
        }
        print!("{}", score_text(&score));
    }
    Ok(())
}
