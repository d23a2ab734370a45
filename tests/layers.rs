//! The dependency rule, enforced (rust-analyzer's tidy tests are the model): ARCHITECTURE.md's
//! `layers` block lists, for every top-level module of `src/`, the modules it may use. This
//! test reads every source file, collects the `crate::…` paths it names (in `use` lines and in
//! code, comments left out), and fails on a module not in the table or a use the table does not
//! allow. It also fails on an import circle between two files of one module (each naming the
//! other), the kind that made `store/package_index.rs` and `store/query.rs` hard to read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `module: allowed, allowed, …` lines of the fenced block tagged `layers`.
fn table() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("ARCHITECTURE.md has a ```layers block");
    let mut t = BTreeMap::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (m, allowed) = line.split_once(':').expect("module: allowed, ...");
        let allowed = allowed
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != "-")
            .map(String::from)
            .collect();
        assert!(
            t.insert(m.trim().to_string(), allowed).is_none(),
            "{m} twice"
        );
    }
    t
}

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
pub(crate) fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text without comments (line, block and doc comments), by the tidy tests' lexer; string
/// contents are kept, which is harmless: no string here spells `crate::`.
pub(crate) fn code(text: &str) -> String {
    super::tidy::lexer::strip_comments(text)
}

/// The `crate::` paths a text names, as lists of segments: `crate::a::b::C` and each path of
/// `use crate::{a::b, c}`.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if after.starts_with('{') {
            let end = after.find('}').unwrap_or(after.len());
            for item in after[1..end].split(',') {
                let segs = segments(item.trim());
                if !segs.is_empty() {
                    out.push(segs);
                }
            }
        } else {
            out.push(segments(after));
        }
        rest = after;
    }
    out
}

fn segments(s: &str) -> Vec<String> {
    let mut segs = Vec::new();
    let mut rest = s;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        segs.push(rest[..end].to_string());
        match rest[end..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    segs
}

/// The top-level module of a file under src/ (`store` for src/store/query.rs).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn every_use_is_allowed_by_the_layers_table() {
    let table = table();
    let src = root().join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut broken = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let m = module_of(rel);
        if m == "lib" || m == "main" {
            continue;
        }
        let Some(allowed) = table.get(&m) else {
            broken.push(format!(
                "src/{}: module {m:?} is not in the table",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for p in crate_paths(&code(&text)) {
            let used = &p[0];
            if used != &m && !allowed.contains(used) && table.contains_key(used) {
                broken.push(format!(
                    "src/{}: {m} uses crate::{} ({m} may use: {})",
                    rel.display(),
                    p.join("::"),
                    allowed.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    // A module listed that no longer exists is a stale rule.
    for m in table.keys() {
        let exists = src.join(format!("{m}.rs")).is_file() || src.join(m).is_dir();
        let generated = ["api", "served_api", "upgrades_api"].contains(&m.as_str());
        if !exists && !generated {
            broken.push(format!(
                "the table lists {m:?}, which is not a module of src/"
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The file a `crate::` path names, if it is a module file: the longest prefix of its segments
/// that is `src/a/b.rs` or `src/a/b/mod.rs`.
fn file_of(src: &Path, segs: &[String]) -> Option<PathBuf> {
    (1..=segs.len()).rev().find_map(|n| {
        let base = segs[..n].iter().collect::<PathBuf>();
        let as_file = src.join(&base).with_extension("rs");
        let as_dir = src.join(&base).join("mod.rs");
        [as_file, as_dir].into_iter().find(|p| p.is_file())
    })
}

/// The module path of a file: `[store, query]` for src/store/query.rs, `[store]` for
/// src/store/mod.rs.
fn module_path(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap().with_extension("");
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|l| l == "mod") {
        segs.pop();
    }
    segs
}

/// `super::x` paths of a file, made absolute (as segments after `crate::`).
fn super_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let parent = &here[..here.len().saturating_sub(1)];
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let before_ok =
            i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        let after = &rest[i + "super::".len()..];
        if before_ok && !after.starts_with("super::") {
            let tail = if after.starts_with('{') {
                let end = after.find('}').unwrap_or(after.len());
                after[1..end]
                    .split(',')
                    .map(|x| segments(x.trim()))
                    .collect()
            } else {
                vec![segments(after)]
            };
            for t in tail.into_iter().filter(|t| !t.is_empty()) {
                let mut full = parent.to_vec();
                full.extend(t);
                out.push(full);
            }
        }
        rest = after;
    }
    out
}

#[test]
fn no_two_files_import_each_other() {
    let src = root().join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut edges: BTreeSet<(PathBuf, PathBuf)> = BTreeSet::new();
    for f in &all {
        let text = code(&std::fs::read_to_string(f).unwrap());
        let here = module_path(&src, f);
        let mut paths = crate_paths(&text);
        paths.extend(super_paths(&text, &here));
        for p in paths {
            if let Some(to) = file_of(&src, &p) {
                if &to != f {
                    edges.insert((f.clone(), to));
                }
            }
        }
    }
    let circles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        // A module's mod.rs and its own files are one unit (the parent re-exports).
        .filter(|(a, b)| {
            let parent = |x: &Path, y: &Path| {
                x.file_name().is_some_and(|n| n == "mod.rs") && y.starts_with(x.parent().unwrap())
            };
            !parent(a, b) && !parent(b, a)
        })
        .map(|(a, b)| {
            format!(
                "{} <-> {}",
                a.strip_prefix(&src).unwrap().display(),
                b.strip_prefix(&src).unwrap().display()
            )
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
