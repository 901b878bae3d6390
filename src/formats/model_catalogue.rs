//! The shipped model catalogue (`assets/models/catalogue.json`, `kvlab/models@1`): Hugging Face
//! ids (`meta-llama/Llama-3.1-8B-Instruct`) with the config.json keys kvlab reads, each entry
//! with its source, read by `hf_config.rs` into a model. A model id resolves to the lab's five
//! presets first (unchanged), then to the catalogue (case aside, as the Hub's ids).
//!
//! The page's first module (built without the `panels` feature) carries the catalogue's ids
//! alone (`build.rs` lists them): its model menu offers them, and choosing one, or a preset or
//! link that names one, hands the page to the full module (`Command::needs_panels`), which reads
//! the models. The config.json reader and the catalogue are 12 KB of the first load
//! (docs/PERFORMANCE.md).

use serde::Deserialize;

#[cfg(feature = "panels")]
use super::hf_config::{read_hf_config, Overrides};
use crate::engine::config::ConfigError;
use crate::engine::model::{model_preset, ModelSpec, MODEL_IDS};
use crate::shipped::MODEL_CATALOGUE;

#[derive(Deserialize)]
struct Catalogue {
    models: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: String,
    #[allow(dead_code)] // read by people and the catalogue's test, not by the lab
    source: String,
    hf_config: serde_json::Value,
}

fn entries() -> Vec<Entry> {
    let c: Catalogue = serde_json::from_str(MODEL_CATALOGUE).expect("the shipped catalogue is valid JSON");
    c.models
}

/// The catalogue's ids, in its order.
#[cfg(feature = "panels")]
pub fn catalogue_ids() -> Vec<String> {
    entries().into_iter().map(|e| e.id).collect()
}

/// The catalogue's ids, in its order, as `build.rs` listed them for the first module.
#[cfg(not(feature = "panels"))]
pub fn catalogue_ids() -> Vec<String> {
    include_str!(concat!(env!("OUT_DIR"), "/catalogue-ids.txt")).lines().map(str::to_string).collect()
}

/// The source the catalogue gives for `id`.
pub fn catalogue_source(id: &str) -> Option<String> {
    entries().into_iter().find(|e| e.id.eq_ignore_ascii_case(id)).map(|e| e.source)
}

/// The config.json keys the catalogue keeps for `id` (a preset takes them as `"model":
/// {"hf_config": …}` with a dtype or quantization of its own).
pub fn catalogue_hf_config(id: &str) -> Option<serde_json::Value> {
    entries().into_iter().find(|e| e.id.eq_ignore_ascii_case(id)).map(|e| e.hf_config)
}

/// The catalogue's model `id`, read from its config keys.
#[cfg(feature = "panels")]
pub fn catalogue_model(id: &str) -> Option<Result<ModelSpec, ConfigError>> {
    let e = entries().into_iter().find(|e| e.id.eq_ignore_ascii_case(id))?;
    Some(read_hf_config(&e.hf_config, Overrides::default()).map(|a| ModelSpec::from_arch(e.id, a)))
}

/// The first module reads no catalogue model: it hands them to the full one (see the module doc).
#[cfg(not(feature = "panels"))]
pub fn catalogue_model(id: &str) -> Option<Result<ModelSpec, ConfigError>> {
    catalogue_ids().iter().any(|c| c.eq_ignore_ascii_case(id)).then(|| {
        Err(ConfigError::new(
            "model",
            format!("{id} is read from its config.json by the full lab, which is not loaded"),
        ))
    })
}

/// A model id: one of the lab's presets, or a catalogue entry; the error lists both.
pub fn resolve_model_id(id: &str) -> Result<ModelSpec, String> {
    if let Some(m) = model_preset(id) {
        return Ok(m);
    }
    match catalogue_model(id) {
        Some(m) => m.map_err(|e| format!("the catalogue's {id}: {e}")),
        None => Err(format!(
            "unknown model \"{id}\"; use one of {}, a Hugging Face id of the catalogue ({})",
            MODEL_IDS.join(", "),
            catalogue_ids().join(", ")
        )),
    }
}
