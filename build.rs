//! Build script: what the browser bundle carries in place of whole shipped files.
//! - Copies of the shipped calibrations (`assets/calibration/`), each without its
//!   `measurements`, the raw per-step samples that nothing in the page reads (they are two
//!   thirds of the files). `src/shipped.rs` includes these copies in the wasm32 build and the
//!   whole files natively; `tests/web_state.rs` checks that the copies parse to the same
//!   calibration less its samples.
//! - The model catalogue's ids, one a line (`catalogue-ids.txt`): the page's first module lists
//!   them in its model menu without the catalogue itself, whose models only the full module
//!   reads (`formats::model_catalogue`).

use std::fs;
use std::path::Path;

/// How `kvlab calibrate` writes the key (pretty JSON, `Calibration`'s last field).
const MEASUREMENTS_KEY: &str = ",\n  \"measurements\":";

fn main() {
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    calibration_copies(&Path::new(&out_dir).join("calibration"));
    catalogue_ids(&Path::new(&out_dir).join("catalogue-ids.txt"));
}

fn catalogue_ids(out: &Path) {
    const CATALOGUE: &str = "assets/models/catalogue.json";
    println!("cargo:rerun-if-changed={CATALOGUE}");
    let text = fs::read_to_string(CATALOGUE).expect("reads the model catalogue");
    let catalogue: serde_json::Value = serde_json::from_str(&text).expect("the catalogue is JSON");
    let models = catalogue["models"].as_array().expect("the catalogue lists models");
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().expect("each model has an id")).collect();
    fs::write(out, ids.join("\n")).expect("writes the catalogue's ids");
}

fn calibration_copies(out: &Path) {
    fs::create_dir_all(out).expect("creates OUT_DIR/calibration");
    println!("cargo:rerun-if-changed=assets/calibration");
    let mut entries: Vec<_> = fs::read_dir("assets/calibration").expect("assets/calibration").flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).expect("reads a shipped calibration");
        // `measurements` is the last key of the object, so the file ends at the key's comma.
        let kept = match text.find(MEASUREMENTS_KEY) {
            Some(i) => format!("{}\n}}\n", &text[..i]),
            None => text,
        };
        fs::write(out.join(entry.file_name()), kept).expect("writes the copy");
    }
}
