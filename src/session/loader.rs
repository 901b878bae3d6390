//! Reading what instructors write: a preset (`kvlab/preset@1`) or a mission (`kvlab/mission@1`),
//! told apart by `schema`, or what operators bring: a model's Hugging Face `config.json`, which
//! replaces the model of the setup on screen. Errors name the field ("goals[1].metric: …"). A mission also goes
//! through the mission check of `kvlab check` (`missions::check`): it is played either way,
//! and the verdict says plainly when it is not a valid mission.

use serde_json::Value;

use crate::formats::hf_config::{read_hf_config, Overrides};
use crate::formats::preset::{parse_preset_dto, PresetDto, MAX_PRESET_BYTES};
use crate::formats::sniff::{sniff, sniff_text, Document as Schema};
use crate::missions::check::check_mission;
use crate::missions::mission::{parse_mission, Mission};

/// The mission check's verdict on a loaded mission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The broken setup earns 0 stars and the fix 3.
    pub valid: bool,
    pub text: String,
}

/// A document an instructor loads.
pub enum Document {
    Preset(Box<PresetDto>),
    Mission(Box<Mission>),
    /// A config.json, as the preset's `model` takes it: `{"hf_config": …}` (named by its
    /// `_name_or_path`, else its architecture).
    ModelConfig(Box<Value>),
}

/// Whether `text` says it is a mission (by its `schema`).
pub fn is_mission(text: &str) -> bool {
    sniff_text(text) == Some(Schema::Mission)
}

/// Reads a preset, a mission or a config.json; errors name the field.
pub fn parse_document(text: &str) -> Result<Document, String> {
    check_size(text)?;
    let json: Option<Value> = serde_json::from_str(text).ok();
    if let Some(config) = json.filter(|v| sniff(v) == Schema::ModelConfig) {
        read_hf_config(&config, Overrides::default()).map_err(|e| {
            let at = if e.field.is_empty() { String::new() } else { format!("{}: ", e.field) };
            format!("config.json: {at}{}", e.message)
        })?;
        return Ok(Document::ModelConfig(Box::new(serde_json::json!({ "hf_config": config }))));
    }
    if is_mission(text) {
        parse_mission(text).map(|m| Document::Mission(Box::new(m))).map_err(|e| e.to_string())
    } else {
        parse_preset_document(text).map(|dto| Document::Preset(Box::new(dto)))
    }
}

/// Reads a preset that runs; errors name the field.
pub fn parse_preset_document(text: &str) -> Result<PresetDto, String> {
    check_size(text)?;
    let dto = parse_preset_dto(text).map_err(|e| e.to_string())?;
    dto.to_config().map_err(|e| e.to_string())?;
    Ok(dto)
}

/// Whether a document (its JSON value) is one only the full lab reads (a mission or a
/// config.json: see `Command::needs_panels`).
pub fn needs_panels(document: &Value) -> bool {
    matches!(sniff(document), Schema::Mission | Schema::ModelConfig)
}

fn check_size(text: &str) -> Result<(), String> {
    if text.len() > MAX_PRESET_BYTES {
        return Err(format!("the document is {} bytes; the limit is {MAX_PRESET_BYTES} bytes", text.len()));
    }
    Ok(())
}

/// The 1-based line an error is about: serde's "line N", else the first line holding the key of
/// the field the error names ("scheduler.max_num_seqs: …" → the line of `"max_num_seqs"`).
pub fn fault_line(why: &str, text: &str) -> Option<usize> {
    if let Some(rest) = why.split("line ").nth(1) {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse::<usize>() {
            return Some(n);
        }
    }
    let field = why.split(": ").next()?;
    let key = field.rsplit('.').next()?.split('[').next()?;
    if key.is_empty() || key.contains(' ') {
        return None;
    }
    let quoted = format!("\"{key}\"");
    text.lines().position(|l| l.contains(&quoted)).map(|i| i + 1)
}

/// `why` with the line it is about, for a document of several lines whose error names a field
/// but no line: "scheduler.max_num_seqs: … (line 17)", so the author finds it in their file.
pub fn with_line(why: &str, text: &str) -> String {
    if why.contains("line ") || text.lines().nth(1).is_none() {
        return why.to_string();
    }
    match fault_line(why, text) {
        Some(n) => format!("{} (line {n})", why.trim_end_matches('.')),
        None => why.to_string(),
    }
}

/// `kvlab check`'s mission check on `m`.
pub fn verdict(m: &Mission) -> Verdict {
    match check_mission(m) {
        Ok(c) => Verdict { valid: c.problem().is_none(), text: c.verdict() },
        Err(e) => Verdict { valid: false, text: format!("Not a valid mission: {e}.") },
    }
}

/// A short digest of a linked file's text (FNV-1a, 64 bits, hex): a link's state remembers it
/// to tell whether the file changed since (not a security measure).
pub fn digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
