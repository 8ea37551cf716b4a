//! The modules of `src/` import each other in one direction only: no two files, and no two
//! top-level modules (folders and root files), use each other through `crate::` or `super::`
//! paths. A module's declaration of its children (`mod x;`, `x::...` inside the parent) is not an
//! import and is not counted; test modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path below the crate root (`gpu::scheduler::worker` is `["gpu", "scheduler",
/// "worker"]`; the root is empty).
type ModPath = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The paths starting with `crate::` or `super::` in `text` (comments and the test module left
/// out), each cut into its segments.
fn paths(text: &str) -> Vec<Vec<String>> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < line.len() {
            let rest = &line[i..];
            let starts = rest.starts_with("crate::") || rest.starts_with("super::");
            let boundary =
                i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if starts && boundary {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                let segs = rest[..end]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                found.push(segs);
                i += end.max(1);
            } else {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    found
}

/// Where `segs`, written in module `from` (a folder's `mod.rs` when `is_dir`), points: the longest
/// prefix that is a module of the crate.
fn target(modules: &BTreeSet<ModPath>, from: &ModPath, is_dir: bool, segs: &[String]) -> ModPath {
    let mut base: ModPath = Vec::new();
    let mut rest = segs;
    if rest.first().is_some_and(|s| s == "super") {
        // `super` from `a/b.rs` is `a`; from `a/b/mod.rs` (module `a::b`) it is `a` as well.
        base = from.clone();
        let _ = is_dir;
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
    } else {
        rest = &rest[1..];
    }
    let mut full = base;
    full.extend(rest.iter().cloned());
    while !full.is_empty() && !modules.contains(&full) {
        full.pop();
    }
    full
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("/")
    }
}

#[test]
fn no_two_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &files {
        let from = module_of(&src, file);
        let is_dir = file
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let text = std::fs::read_to_string(file).expect("read");
        for segs in paths(&text) {
            let to = target(&modules, &from, is_dir, &segs);
            if to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 50,
        "the scan found too few imports to mean anything"
    );

    let mut file_pairs = Vec::new();
    for (a, targets) in &edges {
        for b in targets {
            if name(a) < name(b) && edges.get(b).is_some_and(|t| t.contains(a)) {
                file_pairs.push(format!("{} <-> {}", name(a), name(b)));
            }
        }
    }
    assert!(
        file_pairs.is_empty(),
        "files importing each other: {file_pairs:?}"
    );

    // Top-level modules: a folder and everything in it is one node; no cycle of any length.
    let top = |m: &ModPath| m.first().cloned().unwrap_or_else(|| "lib".into());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, targets) in &edges {
        for b in targets {
            let (ta, tb) = (top(a), top(b));
            if ta != tb && ta != "lib" && tb != "lib" {
                graph.entry(ta).or_default().insert(tb);
            }
        }
    }
    for start in graph.keys() {
        // Is `start` reachable from its own successors?
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(m) = stack.pop() {
            assert!(
                m != start,
                "top-level module {start} imports itself through a cycle: {graph:?}"
            );
            if seen.insert(m) {
                stack.extend(graph.get(m).into_iter().flatten());
            }
        }
    }
}
