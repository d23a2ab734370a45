//! Module maps: `src/lib.rs` and each directory's `mod.rs` open with a `//!` map of the
//! module. A map names each file and subdirectory of its directory (as `` `x` ``,
//! `` [`x`] ``, `` `x.rs` `` or a path beginning `` `x:: ``), test files aside, and names no
//! file that does not exist: the first cell of each table row, the link that begins each
//! bullet, every `` `x.rs` `` it spells, and in lib.rs every module link.

use super::{fails_on, sources, Source};
use std::collections::BTreeSet;

/// The leading `//!` lines of a text.
fn header(s: &Source) -> String {
    s.lines
        .iter()
        .map(|l| l.trim_start())
        .take_while(|l| l.starts_with("//!") || l.is_empty() || l.starts_with("#!"))
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of the directory `dir` (`""` for src/, else ending in `/`): its `.rs` files
/// other than mod.rs, lib.rs and main.rs, and its subdirectories that hold a mod.rs.
fn modules_of(dir: &str, rels: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for r in rels {
        let Some(rest) = r.strip_prefix(dir) else {
            continue;
        };
        match rest.split_once('/') {
            None => {
                let m = rest.trim_end_matches(".rs");
                if !["mod", "lib", "main"].contains(&m) {
                    out.insert(m.to_string());
                }
            }
            Some((sub, "mod.rs")) => {
                out.insert(sub.to_string());
            }
            Some(_) => {}
        }
    }
    out
}

/// The names in backticks of a text (`` `x` `` and `` [`x`] `` alike).
fn ticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The names a map claims are modules of its directory.
fn claimed(map: &str, is_lib: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let first_segment = |name: &str| {
        name.split("::")
            .next()
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string()
    };
    for l in map.lines() {
        let l = l.trim_start_matches("//!").trim();
        if let Some(row) = l.strip_prefix('|') {
            let cell = row.split('|').next().unwrap_or_default();
            out.extend(ticked(cell).into_iter().map(first_segment));
        } else if let Some(item) = l.strip_prefix("* [`") {
            out.extend(item.split('`').next().map(first_segment));
        }
        for t in ticked(l) {
            if t.ends_with(".rs") && !t.contains('/') {
                out.insert(first_segment(t));
            }
        }
        if is_lib {
            for link in l.split("[`").skip(1) {
                let name = link.split('`').next().unwrap_or_default();
                if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    out.insert(first_segment(name));
                }
            }
        }
    }
    out.retain(|m| m != "mod" && m != "lib" && m != "main");
    out
}

/// One line per module a map leaves out or names wrongly.
fn map_problems(sources: &[Source]) -> Vec<String> {
    /// lib.rs's generated modules (`tonic::include_proto!`).
    const GENERATED: &[&str] = &["api", "served_api", "upgrades_api"];
    let rels: BTreeSet<&str> = sources.iter().map(|s| s.rel.as_str()).collect();
    let mut problems = Vec::new();
    for s in sources {
        let dir = match s.rel.as_str() {
            "lib.rs" => "",
            r if r.ends_with("/mod.rs") => r.trim_end_matches("mod.rs"),
            _ => continue,
        };
        let map = header(s);
        let modules = modules_of(dir, &rels);
        let names: BTreeSet<&str> = ticked(&map)
            .into_iter()
            .map(|t| t.trim_start_matches('[').trim_end_matches(".rs"))
            .map(|t| t.split("::").next().unwrap_or_default())
            .collect();
        for m in &modules {
            if !names.contains(m.as_str()) && !names.contains(format!("{m}/").as_str()) {
                problems.push(format!("src/{}: the module map does not name {m}", s.rel));
            }
        }
        for c in claimed(&map, s.rel == "lib.rs") {
            if !modules.contains(&c) && !GENERATED.contains(&c.as_str()) {
                problems.push(format!(
                    "src/{}: the module map names {c}, which is not a file of src/{dir}",
                    s.rel
                ));
            }
        }
    }
    problems
}

#[test]
fn every_module_map_names_its_files_and_no_other() {
    let problems = map_problems(&sources());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_map_rule_fails_on_a_planted_omission_and_a_stale_row() {
    let planted = [
        Source::planted(
            "lib.rs",
            "//! * [`store`]: the store; [`model::Catalog`] the data.\n//! * [`gone`]: removed.\npub mod store;\n",
        ),
        Source::planted("model.rs", "//! Data.\n"),
        Source::planted(
            "store/mod.rs",
            "//! | file | owns |\n//! |---|---|\n//! | `mod.rs` | opening |\n//! | [`list`] | rows |\n//! | `old.rs` | nothing |\n",
        ),
        Source::planted("store/list.rs", "//! Rows.\n"),
        Source::planted("store/build.rs", "//! Writing.\n"),
        Source::planted("store/query/mod.rs", "//! Queries: [`answers`].\n"),
        Source::planted("store/query/answers.rs", "\n"),
    ];
    let problems = map_problems(&planted);
    let expected = [
        "src/lib.rs: the module map names gone, which is not a file of src/",
        "src/store/mod.rs: the module map does not name build",
        "src/store/mod.rs: the module map does not name query",
        "src/store/mod.rs: the module map names old, which is not a file of src/store/",
    ];
    assert_eq!(problems, expected);
    fails_on(Err(problems.join("\n")), "does not name build");
}
