//! Layering: every `crate::…`, `super::…` and child-module path in `src/` is read, resolved to
//! the file it names, and checked against the layer order ARCHITECTURE.md writes down once
//! (its "Layers" block). A module may use its own top-level module and the layers below it, never
//! one above or beside it; and no circle may run through the files of `src/`, whatever their
//! layers (a parent's `mod.rs` re-exporting its children counts too).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{repo_path, rust_files};
use std::collections::{BTreeMap, BTreeSet};

/// One source file: its module path (`["engine", "alloc", "paged"]`), and its code without
/// comments.
struct Source {
    rel: String,
    module: Vec<String>,
    code: String,
}

fn sources() -> Vec<Source> {
    let root = repo_path("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .filter(|p| !p.ends_with("main.rs"))
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let code = strip_comments(&std::fs::read_to_string(&p).unwrap());
            Source { rel: format!("src/{rel}"), module, code }
        })
        .collect()
}

/// Drops `//` comments (doc comments included); string literals that contain `//` keep the rest
/// of their line, which only ever hides a path, never invents one.
fn strip_comments(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts at `start` in `code` (`crate::a::{b, c::d}` gives `a::b` and `a::c::d`).
fn paths_after(code: &str, start: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(start) {
        let at = from + i;
        from = at + start.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        expand(&code[from..], Vec::new(), &mut out);
    }
    out
}

/// Reads one path (and its `{…}` group) at the start of `rest`, appending full paths to `out`.
fn expand(rest: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    let mut i = 0;
    let b = rest.as_bytes();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i += expand(&rest[i..], path.clone(), out);
                while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
            }
        }
        let seg: String = rest[i..].chars().take_while(|&c| is_ident(c)).collect();
        i += seg.len();
        if !seg.is_empty() {
            path.push(seg);
        }
        if rest[i..].starts_with("::") {
            i += 2;
        } else {
            if !path.is_empty() {
                out.push(path);
            }
            return i;
        }
    }
}

/// The file a module path names: the longest prefix that is a file of `src/`.
fn resolve(files: &BTreeMap<Vec<String>, String>, path: &[String]) -> Option<String> {
    (0..=path.len()).rev().find_map(|n| files.get(&path[..n]).cloned())
}

/// (importing file, imported file, path as written) for every reference in `src/`.
fn references(sources: &[Source]) -> Vec<(String, String, String)> {
    let files: BTreeMap<Vec<String>, String> = sources.iter().map(|s| (s.module.clone(), s.rel.clone())).collect();
    let mut out = Vec::new();
    for s in sources {
        let here = &s.module;
        let mut found: Vec<(Vec<String>, String)> = Vec::new();
        for p in paths_after(&s.code, "crate::") {
            found.push((p.clone(), format!("crate::{}", p.join("::"))));
        }
        for p in paths_after(&s.code, "super::") {
            let mut base = here.clone();
            let mut rest = p.as_slice();
            base.pop(); // `super` of a file's module (inline `mod tests` blocks use only `super::*`)
            while rest.first().is_some_and(|x| x == "super") {
                base.pop();
                rest = &rest[1..];
            }
            found.push(([base, rest.to_vec()].concat(), format!("super::{}", p.join("::"))));
        }
        // Children declared here (`mod x;`) and used as `x::…`.
        for child in sources.iter().filter(|c| c.module.len() == here.len() + 1 && c.module.starts_with(here)) {
            let name = child.module.last().unwrap();
            if !paths_after(&s.code, &format!("{name}::")).is_empty() {
                found.push((child.module.clone(), format!("{name}::…")));
            }
        }
        for (path, written) in found {
            if let Some(target) = resolve(&files, &path) {
                if target != s.rel && target != "src/lib.rs" {
                    out.push((s.rel.clone(), target, written));
                }
            }
        }
    }
    out
}

/// The layer order written in ARCHITECTURE.md's "Layers" block: `layer N  module module`.
fn layers() -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(repo_path("ARCHITECTURE.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("layer") {
            continue;
        }
        let n: u32 = words.next().and_then(|w| w.parse().ok()).expect("`layer N module…`");
        for m in words {
            out.insert(m.to_string(), n);
        }
    }
    assert!(out.len() >= 6, "ARCHITECTURE.md lists the layers as `layer N module…` lines: {out:?}");
    out
}

fn top_module(file: &str) -> String {
    let rest = file.trim_start_matches("src/");
    rest.split('/').next().unwrap().trim_end_matches(".rs").to_string()
}

/// Imports that point up (or sideways into another module of the same layer).
fn violations(refs: &[(String, String, String)], layers: &BTreeMap<String, u32>) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, to, written) in refs {
        let (a, b) = (top_module(from), top_module(to));
        if a == b {
            continue;
        }
        let rank = |m: &str| *layers.get(m).unwrap_or_else(|| panic!("src/{m} is in no layer of ARCHITECTURE.md"));
        if rank(&b) >= rank(&a) {
            bad.push(format!(
                "{from} uses {written} ({to}): layer {} ({a}) may not use layer {} ({b})",
                rank(&a),
                rank(&b)
            ));
        }
    }
    bad
}

/// Circles through the files, each as `a → b → … → a` (one per back edge a depth-first walk
/// meets, so every strongly connected tangle shows up at least once).
fn find_circles(refs: &[(String, String, String)]) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b, _) in refs {
        graph.entry(a).or_default().insert(b);
    }
    fn visit<'a>(
        n: &'a str,
        g: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        out: &mut Vec<String>,
    ) {
        state.insert(n, 1);
        stack.push(n);
        for &m in g.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(1) => {
                    let i = stack.iter().position(|&x| x == m).unwrap();
                    out.push(format!("{} → {m}", stack[i..].join(" → ")));
                }
                Some(_) => {}
                None => visit(m, g, state, stack, out),
            }
        }
        stack.pop();
        state.insert(n, 2);
    }
    let mut state = BTreeMap::new();
    let mut out = Vec::new();
    for &n in graph.keys() {
        if !state.contains_key(n) {
            visit(n, &graph, &mut state, &mut Vec::new(), &mut out);
        }
    }
    out
}

#[test]
fn every_module_uses_only_its_own_layer_and_those_below() {
    let sources = sources();
    let layers = layers();
    for s in &sources {
        if !s.module.is_empty() {
            let m = &s.module[0];
            assert!(layers.contains_key(m), "{} is in no layer: add src/{m} to ARCHITECTURE.md's layers", s.rel);
        }
    }
    let refs = references(&sources);
    assert!(refs.len() > 100, "the reader found only {} references; is it still reading src/?", refs.len());
    let bad = violations(&refs, &layers);
    assert!(bad.is_empty(), "imports against the layer order of ARCHITECTURE.md:\n{}", bad.join("\n"));
}

#[test]
fn no_circle_runs_through_the_files_of_src() {
    let circles = find_circles(&references(&sources()));
    assert!(circles.is_empty(), "import circles among the files of src/:\n{}", circles.join("\n"));
}

#[test]
fn the_reader_sees_groups_super_and_children() {
    let mut out = Vec::new();
    expand("a::{b, c::{d, e}, f}::g;", Vec::new(), &mut out);
    let joined: Vec<String> = out.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["a::b", "a::c::d", "a::c::e", "a::f"]);
    let refs = references(&sources());
    let has = |a: &str, b: &str| refs.iter().any(|(x, y, _)| x == a && y == b);
    assert!(has("src/engine/sim.rs", "src/engine/scheduler/mod.rs"), "super:: paths resolve");
    assert!(has("src/formats/preset.rs", "src/engine/config.rs"), "crate:: paths resolve");
    assert!(has("src/engine/alloc/mod.rs", "src/engine/alloc/paged.rs"), "child modules resolve");
}
