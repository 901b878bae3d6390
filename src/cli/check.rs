//! `kvlab check`: presets, missions (whose broken setup must earn no star and whose fix three)
//! and the mission index, told apart by `formats::sniff`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::mission::{load_mission, score_text};
use super::run::{load_config, read};
use crate::formats::mission::parse_mission_index;
use crate::formats::paths::check_preset_json_shape;
use crate::formats::sniff::{sniff, Document};
use crate::missions::check::check_mission as run_mission_check;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Preset, mission or mission index JSON file to validate (told apart by "schema").
    pub file: PathBuf,
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
            let config = load_config(&args.file)?;
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
    let c = run_mission_check(&m).map_err(at)?;
    print!("broken setup: {}", score_text(&c.broken));
    print!("fix {}: {}", m.fix(), score_text(&c.fixed));
    if let Some(problem) = c.problem() {
        return Err(fail(problem));
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
