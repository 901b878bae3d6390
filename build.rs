//! Build script: the browser bundle's copies of the shipped calibrations (`assets/calibration/`),
//! each without its `measurements`, the raw per-step samples that nothing in the page reads (they
//! are two thirds of the files). `src/shipped.rs` includes these copies in the wasm32 build and
//! the whole files natively; `tests/web_state.rs` checks that the copies parse to the same
//! calibration less its samples.

use std::fs;
use std::path::Path;

/// How `kvlab calibrate` writes the key (pretty JSON, `Calibration`'s last field).
const MEASUREMENTS_KEY: &str = ",\n  \"measurements\":";

fn main() {
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("calibration");
    fs::create_dir_all(&out).expect("creates OUT_DIR/calibration");
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
