//! Tidy: the engine stays pure (no web, JSON, files, storage, wall clock, OS randomness, threads or
//! hash-order), every source file opens with a `//!` doc and stays a readable size, and
//! ARCHITECTURE.md names only paths that exist. The layer order is `layering.rs`'s.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{repo_path, rust_files};

#[test]
fn the_engine_knows_nothing_of_the_web_json_files_the_clock_or_os_randomness() {
    let forbidden = [
        "web_sys",
        "js_sys",
        "wasm_bindgen",
        "std::time",
        "Instant",
        "SystemTime",
        "thread_rng",
        "rand::rng(",
        "from_os_rng",
        "getrandom",
        "std::thread",
        "HashMap",
        "HashSet",
        "unsafe ",
        "serde_json",
        "include_str!",
        "std::fs",
        "std::io",
        "localStorage",
    ];
    let mut files = Vec::new();
    rust_files(&repo_path("src/engine"), &mut files);
    assert!(files.len() > 10);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in forbidden {
            assert!(!text.contains(word), "{} mentions `{word}`: the engine must stay pure", f.display());
        }
    }
}

#[test]
fn every_source_file_opens_with_a_module_doc_and_stays_readable() {
    let mut files = Vec::new();
    rust_files(&repo_path("src"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.trim_start().starts_with("//!"), "{} has no //! module doc", f.display());
        let lines = text.lines().count();
        assert!(lines <= 800, "{} has {lines} lines; split it (≤ 800)", f.display());
    }
}

#[test]
fn architecture_md_names_only_paths_that_exist() {
    let text = std::fs::read_to_string(repo_path("ARCHITECTURE.md")).expect("ARCHITECTURE.md exists");
    let mut checked = 0;
    for word in text.split(|c: char| c.is_whitespace() || "`()[],*".contains(c)) {
        let word = word.trim_end_matches(['.', ':', ';']);
        let looks_like_path = ["src/", "tests/", "assets/", "www/", "benches/", "scripts/", "docs/", ".ci/"]
            .iter()
            .any(|p| word.starts_with(p));
        if looks_like_path && !word.contains('*') && !word.contains('<') {
            assert!(repo_path(word).exists(), "ARCHITECTURE.md names {word}, which does not exist");
            checked += 1;
        }
    }
    assert!(checked > 10, "ARCHITECTURE.md should map the code ({checked} paths)");
}
