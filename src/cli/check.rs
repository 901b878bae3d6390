//! `kvlab check` (presets, missions and the mission index, told apart by their `schema`) and
//! `kvlab mission` (score a mission's broken setup, its fix, or a patch of your own).

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::run::{load_config, summary};
use crate::formats::mission::parse_mission_index;
use crate::formats::paths::check_preset_json_shape;
use crate::formats::sniff::{sniff, Document};
use crate::missions::mission::{parse_mission, Mission, Score};

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Preset, mission or mission index JSON file to validate (told apart by "schema").
    pub file: PathBuf,
}

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
    /// Print {"preset", "report", "score"} as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn load_mission(path: &Path) -> Result<Mission, String> {
    parse_mission(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn check(args: &CheckArgs) -> Result<(), String> {
    let text = read(&args.file)?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON ({e})", args.file.display()))?;
    match sniff(&value) {
        Document::Mission => check_mission(&args.file),
        Document::MissionIndex => check_index(&args.file, &text),
        _ => {
            check_preset_json_shape(&value).map_err(|e| format!("{}: {e}", args.file.display()))?;
            let config = load_config(&args.file, None)?;
            println!(
                "{}: ok ({} on {}, {} GiB of KV, {} tokens)",
                args.file.display(),
                config.model.id,
                config.gpu.id,
                config.kv_memory_gib,
                config.capacity_tokens()
            );
            Ok(())
        }
    }
}

/// Validates a mission, runs its broken setup and its fix, and insists on 0 and 3 stars.
fn check_mission(path: &Path) -> Result<(), String> {
    let m = load_mission(path)?;
    let at = |e: crate::engine::ConfigError| format!("{}: {e}", path.display());
    let fail = |m: String| format!("{}: {m}", path.display());
    println!(
        "{}: ok, mission {} \"{}\" ({} knobs, {} goals, {} hints)",
        path.display(),
        m.number(),
        m.title(),
        m.knobs().len(),
        m.goals().len(),
        m.hints().len()
    );
    let (_, broken) = m.run(m.preset()).map_err(at)?;
    print!("broken setup: {}", score_text(&broken));
    let (_, fixed) = m.run(m.fix_preset()).map_err(at)?;
    print!("fix {}: {}", m.fix(), score_text(&fixed));
    if broken.stars != 0 {
        return Err(fail(format!(
            "the broken setup already earns {} star(s); tighten the goals of star 1 so that it earns none",
            broken.stars
        )));
    }
    if fixed.stars != 3 {
        return Err(fail(format!(
            "the fix earns {} star(s), not 3; fix the \"fix\" or the goals it misses",
            fixed.stars
        )));
    }
    Ok(())
}

fn check_index(path: &Path, text: &str) -> Result<(), String> {
    let index = parse_mission_index(text).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for (i, entry) in index.missions.iter().enumerate() {
        let file = dir.join(&entry.file);
        let m = load_mission(&file)?;
        let same = m.id() == entry.id && m.number() == entry.number && m.title() == entry.title;
        if !same {
            return Err(format!(
                "{}: missions[{i}] says {} #{} \"{}\" but {} is {} #{} \"{}\"",
                path.display(),
                entry.id,
                entry.number,
                entry.title,
                file.display(),
                m.id(),
                m.number(),
                m.title()
            ));
        }
    }
    println!("{}: ok ({} missions)", path.display(), index.missions.len());
    Ok(())
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// "2 of 3 stars" and one line per goal.
pub fn score_text(s: &Score) -> String {
    let mut out = format!("{} of {} stars\n", s.stars, s.max_stars);
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
        print!("{}", summary(&report));
        print!("{}", score_text(&score));
    }
    Ok(())
}
