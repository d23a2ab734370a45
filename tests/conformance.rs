//! Upstream conformance: operator-registry's own validation test tables, ported as catalogs on
//! disk and run through the real `opreg validate`.
//!
//! Every case is a directory `tests/conformance/<table>/<case>/` holding
//!
//! * `catalog/` — the FBC given to `opreg validate` (absent for `not-expressible` cases);
//! * `expect` — `key: value` lines (`#` starts a comment):
//!   * `case: <name>` — upstream's case name (`Error/PackageNoName`), required;
//!   * `verdict: valid | invalid | not-expressible` — what `opm validate` says of the catalog,
//!     or that the Go case tests something no file can express (a Go API, a pointer link);
//!   * `message: <text>` — a fragment of upstream's error that one `error[...]` line of stderr
//!     must contain (repeatable; required for `invalid`);
//!   * `note: <text>` — how the file differs from the Go case and why (repeatable; required for
//!     `not-expressible`).
//!
//! Tables: `declcfg` (alpha/declcfg/declcfg_to_model_test.go), `model`
//! (alpha/model/model_test.go), `property` (alpha/property/*_test.go), and `issue13` (cases
//! derived from upstream's types and code for the typed-property, image, icon and custom-meta
//! rules, which upstream's tables do not cover).
//!
//! The driver runs every case, collects every disagreement, and fails once at the end with the
//! whole list. `CONFORMANCE_FILTER=<substring>` runs only the cases whose path contains it.

use crate::common;
use common::bin;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cases each table must hold, so that a lost fixture directory is noticed.
const TABLES: &[(&str, usize)] = &[
    ("declcfg", 42),
    ("model", 54),
    ("property", 25),
    ("issue13", 37),
];

#[derive(Debug, Default)]
struct Expect {
    case: String,
    verdict: String,
    messages: Vec<String>,
    notes: Vec<String>,
}

fn parse_expect(text: &str) -> Result<Expect, String> {
    let mut e = Expect::default();
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = line
            .split_once(": ")
            .or_else(|| line.strip_suffix(':').map(|k| (k, "")))
            .ok_or_else(|| format!("expect line without a key: {line:?}"))?;
        let v = v.to_string();
        match k {
            "case" => e.case = v,
            "verdict" => e.verdict = v,
            "message" => e.messages.push(v),
            "note" => e.notes.push(v),
            other => return Err(format!("unknown expect key {other:?}")),
        }
    }
    if e.case.is_empty() {
        return Err("expect needs a case: line".into());
    }
    match e.verdict.as_str() {
        "valid" if !e.messages.is_empty() => Err("a valid case cannot expect messages".into()),
        "invalid" if e.messages.is_empty() => Err("an invalid case needs a message: line".into()),
        "not-expressible" if e.notes.is_empty() => {
            Err("a not-expressible case needs a note: line saying why".into())
        }
        "valid" | "invalid" | "not-expressible" => Ok(e),
        other => Err(format!("unknown verdict {other:?}")),
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn cases(table: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(table))
        .unwrap_or_else(|e| panic!("read table {table}: {e}"))
        .map(|d| d.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// Checks one case; `Err` describes the disagreement.
fn check(dir: &Path) -> Result<&'static str, String> {
    let text = std::fs::read_to_string(dir.join("expect")).map_err(|e| format!("expect: {e}"))?;
    let exp = parse_expect(&text)?;
    let catalog = dir.join("catalog");
    if exp.verdict == "not-expressible" {
        if catalog.exists() {
            return Err("a not-expressible case must not have a catalog".into());
        }
        return Ok("not-expressible");
    }
    if !catalog.is_dir() {
        return Err("missing catalog/ directory".into());
    }
    let out = Command::new(bin())
        .arg("validate")
        .arg(&catalog)
        .output()
        .map_err(|e| format!("run opreg: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let code = out.status.code().unwrap_or(-1);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error[")).collect();
    let mut problems = Vec::new();
    if stderr.contains("panicked") || code == 101 {
        problems.push("opreg panicked".to_string());
    }
    match exp.verdict.as_str() {
        "valid" => {
            if code != 0 || !errors.is_empty() {
                problems.push(format!("upstream accepts this catalog; opreg exit {code}"));
            }
        }
        _ => {
            if code != 1 {
                problems.push(format!(
                    "upstream rejects this catalog; opreg exit {code} (want 1)"
                ));
            }
            for m in &exp.messages {
                if !errors.iter().any(|l| l.contains(m.as_str())) {
                    problems.push(format!("no error line contains upstream's {m:?}"));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(if exp.verdict == "valid" {
            "valid"
        } else {
            "invalid"
        })
    } else {
        let shown: String = stderr.lines().take(12).collect::<Vec<_>>().join("\n      ");
        Err(format!(
            "{} [{}]\n    {}\n    stderr:\n      {shown}",
            exp.case,
            exp.verdict,
            problems.join("\n    ")
        ))
    }
}

#[test]
fn upstream_tables_agree() {
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let mut failures = Vec::new();
    let mut summary: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for (table, want) in TABLES {
        let all = cases(table);
        if filter.is_empty() && all.len() != *want {
            failures.push(format!(
                "table {table}: {} cases on disk, expected {want} (update TABLES when adding cases)",
                all.len()
            ));
        }
        for dir in all {
            let rel = dir.strip_prefix(root()).unwrap().display().to_string();
            if !rel.contains(&filter) {
                continue;
            }
            let row = summary.entry(table).or_default();
            match check(&dir) {
                Ok(kind) => *row.entry(kind).or_default() += 1,
                Err(why) => {
                    *row.entry("FAILED").or_default() += 1;
                    failures.push(format!("{rel}: {why}"));
                }
            }
        }
    }
    for (table, row) in &summary {
        eprintln!("{table}: {row:?}");
    }
    assert!(
        failures.is_empty(),
        "{} conformance case(s) disagree with upstream:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn expect_parser_rejects_incomplete_cases() {
    assert!(parse_expect("case: x\nverdict: invalid\n").is_err());
    assert!(parse_expect("case: x\nverdict: not-expressible\n").is_err());
    assert!(parse_expect("case: x\nverdict: valid\nmessage: y\n").is_err());
    assert!(parse_expect("case: x\nverdict: maybe\n").is_err());
    assert!(parse_expect("case: x\nverdict: valid\n").is_ok());
}
