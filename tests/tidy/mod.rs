//! Tidy tests for the rules ARCHITECTURE.md states, in rust-analyzer's manner: each reads the
//! sources as text and fails with one line per file that breaks a rule. `tests/layers.rs` holds
//! the dependency rule; its helpers (`files`, `code`, `root`) are shared here.
//!
//! Where a rule is broken today by code that is not this change's to move, the test carries an
//! explicit allow-list of those files. An allow-list may only shrink: an entry that no longer
//! breaks the rule fails the test too, so it is taken out when the code is fixed.
//!
//! Test code is left out everywhere: files of tests (`#[cfg(test)] mod x;`, `#[path = "…"]`) and
//! `#[cfg(test)]` modules. Comments are left out by [`lexer`], which knows string, raw string
//! and char literals, so a `//` inside `"https://…"` hides nothing.
//!
//! Every rule is a function of the sources, so that each has a test that plants a violation
//! in a small made-up tree and sees the rule fail:
//!
//! | file | rules |
//! |---|---|
//! | `mod.rs` | external crates in their modules, stdout only in `cli::output`, no threads in `cli/`, the code map, function length, Docker Hub's names |
//! | [`lexer`] | comments stripped, string and char literals kept |
//! | [`confined`] | stderr and exits, atomic writes, digests, the HTTP client and its one send function |
//! | [`errors`] | `Result<_, String>`: how many, and none returned by a public function |
//! | [`maps`] | every module map names each of its files and no other |
//! | [`hygiene`] | no run output tracked; CI checks the work tree after the suite |

mod confined;
mod errors;
mod hygiene;
pub(crate) mod lexer;
mod maps;

use super::layers::{files, root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file of `src/`: its path relative to `src/` (with `/`), and its lines, those of test
/// modules blanked.
struct Source {
    rel: String,
    lines: Vec<String>,
}

impl Source {
    /// The non-test text, comments left out.
    fn code(&self) -> String {
        lexer::strip_comments(&self.lines.join("\n"))
    }
}

impl Source {
    /// A made-up source, for a test that plants a violation.
    fn planted(rel: &str, text: &str) -> Source {
        Source {
            rel: rel.to_string(),
            lines: blank_test_modules(text),
        }
    }
}

/// Every non-test `.rs` file of `src/`.
fn sources() -> Vec<Source> {
    sources_in(&root().join("src"))
}

/// Every non-test `.rs` file under `src`.
fn sources_in(src: &Path) -> Vec<Source> {
    let mut all = Vec::new();
    files(src, &mut all);
    all.sort();
    let mut test_files = BTreeSet::new();
    let mut texts = BTreeMap::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap();
        test_files.extend(test_module_files(f, &text, false));
        texts.insert(f.clone(), text);
    }
    // Every module a file of tests declares is test code too.
    let mut todo: Vec<PathBuf> = test_files.iter().cloned().collect();
    while let Some(f) = todo.pop() {
        if let Some(text) = texts.get(&f) {
            for m in test_module_files(&f, text, true) {
                if test_files.insert(m.clone()) {
                    todo.push(m);
                }
            }
        }
    }
    texts
        .into_iter()
        .filter(|(f, _)| !test_files.contains(f))
        .map(|(f, text)| Source {
            rel: f
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/"),
            lines: blank_test_modules(&text),
        })
        .collect()
}

/// The files `f` declares as `#[cfg(test)] mod x;` (with or without `#[path = "…"]`); with
/// `every`, each file it declares (`f` is itself test code).
fn test_module_files(f: &Path, text: &str, every: bool) -> Vec<PathBuf> {
    let name = f.file_name().unwrap().to_string_lossy();
    let dir = if ["mod.rs", "lib.rs", "main.rs"].contains(&name.as_ref()) {
        f.parent().unwrap().to_path_buf()
    } else {
        f.with_extension("")
    };
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let start = if *l == "#[cfg(test)]" {
            i + 1
        } else if every && (l.starts_with("#[path = ") || l.starts_with("mod ")) {
            i
        } else {
            continue;
        };
        if every && i > 0 && lines[i - 1].starts_with("#[path = ") {
            continue; // read with its #[path]
        }
        let mut path = None;
        for next in &lines[start..] {
            if let Some(p) = next
                .strip_prefix("#[path = \"")
                .and_then(|p| p.strip_suffix("\"]"))
            {
                path = Some(f.parent().unwrap().join(p));
            } else if next.starts_with("#[") {
                continue;
            } else {
                if let Some(m) = next.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                    out.push(path.take().unwrap_or_else(|| {
                        let as_file = dir.join(format!("{m}.rs"));
                        if as_file.is_file() {
                            as_file
                        } else {
                            dir.join(m).join("mod.rs")
                        }
                    }));
                }
                break;
            }
        }
    }
    out
}

/// The lines of `text`, those of each inline `#[cfg(test)] mod x { … }` made empty (rustfmt's
/// layout: the module ends at the first `}` line at its own indentation).
fn blank_test_modules(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim().starts_with("#[") {
                j += 1;
            }
            let is_mod = lines.get(j).is_some_and(|l| {
                let t = l.trim();
                (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.ends_with('{')
            });
            if is_mod {
                let indent = indentation(&lines[j]);
                let end = (j + 1..lines.len())
                    .find(|&k| lines[k] == format!("{}}}", " ".repeat(indent)))
                    .unwrap_or(lines.len() - 1);
                for l in &mut lines[i..=end] {
                    l.clear();
                }
                i = end;
            }
        }
        i += 1;
    }
    lines
}

fn indentation(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// True when `code` names `name` as a path's first segment (`name::…`, `use name;`), not as
/// the tail of a longer name or path.
fn names_crate(code: &str, name: &str) -> bool {
    let mut rest = code;
    while let Some(i) = rest.find(name) {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + name.len()..];
        let starts = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
        if starts && (after.starts_with("::") || after.starts_with(';')) {
            return true;
        }
        rest = after;
    }
    false
}

/// Checks a rule over every source: `breaks` says why a file breaks it (or `None`). Files in
/// `allowed` may break it, and must: a listed file that keeps the rule is a stale entry.
fn check(rule: &str, allowed: &[&str], breaks: impl Fn(&Source) -> Option<String>) {
    if let Err(e) = check_sources(rule, allowed, &sources(), breaks) {
        panic!("{e}");
    }
}

/// [`check`] over the given sources: the rule and one line per file that breaks it.
fn check_sources(
    rule: &str,
    allowed: &[&str],
    sources: &[Source],
    breaks: impl Fn(&Source) -> Option<String>,
) -> Result<(), String> {
    let mut broken = Vec::new();
    let mut excused = BTreeSet::new();
    for s in sources {
        if let Some(why) = breaks(s) {
            if allowed.contains(&s.rel.as_str()) {
                excused.insert(s.rel.clone());
            } else {
                broken.push(format!("src/{}: {why}", s.rel));
            }
        }
    }
    for a in allowed {
        if !excused.contains(*a) {
            broken.push(format!(
                "src/{a} is allowed to break {rule:?} but does not: take it off the allow-list"
            ));
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(format!("{rule}:\n{}", broken.join("\n")))
    }
}

/// Asserts that `rule` fails on the planted sources and says `says`.
fn fails_on(result: Result<(), String>, says: &str) {
    match result {
        Ok(()) => panic!("the rule let a planted violation through"),
        Err(e) => assert!(e.contains(says), "expected {says:?} in:\n{e}"),
    }
}

fn under(rel: &str, places: &[&str]) -> bool {
    places
        .iter()
        .any(|p| rel == *p || (p.ends_with('/') && rel.starts_with(p)))
}

/// Each external crate, the names it goes by, the places of `src/` that may name it (a
/// directory ends in `/`), and today's known exceptions.
struct CrateRule {
    names: &'static [&'static str],
    places: &'static [&'static str],
    exceptions: &'static [&'static str],
}

const CRATE_RULES: &[CrateRule] = &[
    CrateRule {
        names: &["rusqlite"],
        places: &["store/", "sqlite.rs"],
        exceptions: &[
            // Reading opm's legacy SQLite index, row by row.
            "catalog/legacy/mod.rs",
            "catalog/legacy/rows.rs",
            "catalog/legacy/schema.rs",
            // SQLite's allocator methods, set once at start-up (mimalloc).
            "memory.rs",
        ],
    },
    CrateRule {
        names: &["tonic", "tonic_health", "tonic_reflection"],
        // lib.rs: the generated protobuf modules (`tonic::include_proto!`).
        places: &["server/", "lib.rs"],
        exceptions: &[
            // The health probe's gRPC client.
            "probe.rs",
        ],
    },
    CrateRule {
        names: &["clap", "clap_complete", "clap_mangen"],
        places: &["cli/"],
        exceptions: &[],
    },
    CrateRule {
        names: &["indicatif"],
        places: &["cli/"],
        exceptions: &[],
    },
    CrateRule {
        names: &["ureq"],
        // The transport: every request to a registry goes through it.
        places: &["registry/"],
        exceptions: &[],
    },
];

/// Why `s` breaks a crate rule, if it does.
fn names_a_crate_outside(r: &CrateRule, s: &Source) -> Option<String> {
    if under(&s.rel, r.places) {
        return None;
    }
    let code = s.code();
    let named: Vec<&str> = r
        .names
        .iter()
        .copied()
        .filter(|n| names_crate(&code, n))
        .collect();
    (!named.is_empty())
        .then(|| format!("names {} outside {}", named.join(", "), r.places.join(", ")))
}

/// The words of `words` that `code` uses, not as the tail of a longer name.
fn uses<'a>(code: &str, words: &[&'a str]) -> Vec<&'a str> {
    words
        .iter()
        .copied()
        .filter(|w| {
            code.match_indices(w)
                .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
        .collect()
}

#[test]
fn external_crates_stay_in_their_modules() {
    for r in CRATE_RULES {
        let rule = format!("{} only in {}", r.names[0], r.places.join(", "));
        check(&rule, r.exceptions, |s| names_a_crate_outside(r, s));
    }
}

#[test]
fn the_crate_rule_fails_on_a_planted_use() {
    let ureq = CRATE_RULES.iter().find(|r| r.names == ["ureq"]).unwrap();
    let planted = [
        Source::planted("registry/send.rs", "use ureq::Agent;\n"),
        Source::planted("mirror/run.rs", "fn f() { let a = ureq::Agent::new(); }\n"),
    ];
    fails_on(
        check_sources("ureq", &[], &planted, |s| names_a_crate_outside(ureq, s)),
        "src/mirror/run.rs: names ureq outside registry/",
    );
}

const STDOUT_WRITERS: &[&str] = &["println!", "print!", "io::stdout"];

fn writes_to_stdout(s: &Source) -> Option<String> {
    if s.rel == "cli/output.rs" {
        return None;
    }
    let found = uses(&s.code(), STDOUT_WRITERS);
    (!found.is_empty()).then(|| format!("uses {}", found.join(", ")))
}

#[test]
fn nothing_writes_to_stdout_outside_cli_output() {
    check(
        "nothing writes to stdout outside cli::output",
        &[],
        writes_to_stdout,
    );
}

#[test]
fn the_stdout_rule_fails_on_a_planted_println() {
    let planted = [
        Source::planted("cli/output.rs", "fn f() { println!(\"ok\"); }\n"),
        Source::planted(
            "store/list.rs",
            "fn f() { println!(\"x\"); } // a comment\n",
        ),
        Source::planted(
            "store/mod.rs",
            "// println!(\"in a comment\")\nconst S: &str = \"//\";\n",
        ),
    ];
    let result = check_sources("stdout", &[], &planted, writes_to_stdout);
    fails_on(result.clone(), "src/store/list.rs: uses println!");
    assert!(!result.unwrap_err().contains("store/mod.rs"));
}

#[test]
fn nothing_in_cli_spawns_a_thread_or_a_task() {
    const SPAWNS: &[&str] = &[
        "thread::spawn",
        "thread::scope",
        "thread::Builder",
        "tokio::spawn",
        "task::spawn",
        "spawn_blocking",
        "spawn_local",
        "JoinSet",
    ];
    check("nothing in cli/ spawns a thread or a task", &[], |s| {
        if !s.rel.starts_with("cli/") {
            return None;
        }
        let code = s.code();
        let found: Vec<&str> = SPAWNS
            .iter()
            .copied()
            .filter(|w| code.contains(w))
            .collect();
        (!found.is_empty()).then(|| format!("uses {}", found.join(", ")))
    });
}

#[test]
fn every_module_has_a_row_in_the_code_map() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let map = doc
        .split("## Code map")
        .nth(1)
        .and_then(|m| m.split("\n## ").next())
        .expect("ARCHITECTURE.md has a code map");
    // The first cell of each row: `a`, `b`, `c`.
    let mut rows = BTreeSet::new();
    for line in map.lines().filter(|l| l.starts_with("| `")) {
        let cell = line.split('|').nth(1).unwrap();
        for name in cell.split(',') {
            rows.insert(name.trim().trim_matches('`').to_string());
        }
    }
    let src = root().join("src");
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let module = (p.is_dir()
            && (p.join("mod.rs").is_file() || src.join(format!("{name}.rs")).is_file()))
            || (p.extension().is_some_and(|x| x == "rs") && name != "lib" && name != "main");
        if module && !rows.contains(&name) {
            missing.push(format!(
                "src/{name}: module {name:?} has no row in ARCHITECTURE.md's code map"
            ));
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The longest a function of `src/` may be, in physical lines from its `fn` line to its closing
/// brace.
const MAX_FN_LINES: usize = 150;

/// The functions of a source longer than [`MAX_FN_LINES`]: name, first line, length.
fn long_functions(lines: &[String]) -> Vec<(String, usize, usize)> {
    functions(lines)
        .into_iter()
        .filter(|(_, _, len)| *len > MAX_FN_LINES)
        .collect()
}

/// The functions of a source with a body: name, first line (1-based), length in lines. A
/// function ends at the first line that is its `fn` line's indentation and `}` (rustfmt's
/// layout); one whose signature ends in `;` has no body; a one-line function is left out.
fn functions(lines: &[String]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        let Some(name) = fn_name(l) else { continue };
        let indent = indentation(l);
        let close = format!("{}}}", " ".repeat(indent));
        let mut end = None;
        for (k, line) in lines.iter().enumerate().skip(n) {
            let t = line.trim_end();
            if (k == n || indentation(line) == indent) && t.ends_with(';') && !t.ends_with("};") {
                break; // a declaration
            }
            if k == n && t.ends_with('}') {
                break; // a one-line function
            }
            if k > n && *line == close {
                end = Some(k);
                break;
            }
        }
        if let Some(end) = end {
            out.push((name, n + 1, end - n + 1));
        }
    }
    out
}

/// The name of the function a line begins, if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut t = line.trim_start();
    if t.starts_with("pub(") {
        t = &t[t.find(')')? + 1..];
        t = t.trim_start();
    }
    for q in ["pub ", "const ", "async ", "unsafe ", "extern \"C\" "] {
        t = t.strip_prefix(q).unwrap_or(t);
    }
    let rest = t.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    (end > 0).then(|| rest[..end].to_string())
}

#[test]
fn no_function_is_longer_than_150_lines() {
    check(
        &format!("no function is longer than {MAX_FN_LINES} lines"),
        &[],
        |s| {
            let long = long_functions(&s.lines);
            (!long.is_empty()).then(|| {
                long.iter()
                    .map(|(name, line, len)| format!("fn {name} (line {line}) is {len} lines"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
        },
    );
}

#[test]
fn the_function_length_rule_counts_as_it_says() {
    let body = |n: usize| {
        let mut l = vec![
            "    /// doc".to_string(),
            "    pub(crate) fn f(".to_string(),
            "        a: u8,".to_string(),
            "    ) -> u8 {".to_string(),
        ];
        l.extend((0..n).map(|_| String::new()));
        l.push("    }".to_string());
        l
    };
    // fn line, two signature lines, the body's blank lines, the closing brace.
    assert!(long_functions(&body(MAX_FN_LINES - 4)).is_empty());
    assert_eq!(
        long_functions(&body(MAX_FN_LINES - 3)),
        vec![("f".to_string(), 2, MAX_FN_LINES + 1)]
    );
    let decl = ["    fn g(&self) -> u8;".to_string(), "}".to_string()];
    assert!(long_functions(&decl).is_empty());
}

const DOCKER_HUB_NAMES: &[&str] = &["\"docker.io\"", "index.docker.io", "registry-1.docker.io"];

fn spells_docker_hub(s: &Source) -> Option<String> {
    if s.rel == "imageref.rs" {
        return None;
    }
    let code = s.code();
    let found: Vec<&str> = DOCKER_HUB_NAMES
        .iter()
        .copied()
        .filter(|n| code.contains(n))
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "spells {} (use imageref::normalize_docker_hub and its constants)",
            found.join(", ")
        )
    })
}

#[test]
fn docker_hub_is_normalized_in_one_place() {
    check(
        "Docker Hub's names are written only in imageref.rs",
        &[],
        spells_docker_hub,
    );
}

#[test]
fn the_docker_hub_rule_sees_a_url_past_its_slashes() {
    // Cut at the first `//`, this line used to read `const HUB: &str = "https:`.
    let planted = [Source::planted(
        "image/auth.rs",
        "const HUB: &str = \"https://registry-1.docker.io\";\n",
    )];
    fails_on(
        check_sources("hub", &[], &planted, spells_docker_hub),
        "src/image/auth.rs: spells registry-1.docker.io",
    );
}
