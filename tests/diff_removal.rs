//! `opreg diff --fail-on-removal` with the real binary: a removed channel entry fails, the same
//! removal in a `candidate-v1` channel passes, `--allow-removal` replaces the pattern, a missing
//! package is a removal unless `--fragment`, each removal is listed in text and JSON, and the
//! exit codes stay diff's.

use crate::common::opreg;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Package `p` with `channels` (name, entry names, each skipping every lower version of any
/// channel, so that no entry removal strands anything), and package `q` when `with_q`: the
/// diff tests' catalog, with these entries.
fn catalog(dir: &Path, name: &str, channels: &[(&str, &[&str])], with_q: bool) -> PathBuf {
    let versions: std::collections::BTreeSet<&str> =
        channels.iter().flat_map(|c| c.1.iter().copied()).collect();
    let entries: Vec<(&str, String)> = channels
        .iter()
        .map(|(ch, names)| {
            let mut e = String::new();
            for v in names.iter() {
                e += &format!("  - name: p.v{v}\n");
                let lower: Vec<String> = versions.range(..*v).map(|x| format!("p.v{x}")).collect();
                if !lower.is_empty() {
                    e += &format!("    skips: [{}]\n", lower.join(", "));
                }
            }
            (*ch, e)
        })
        .collect();
    let entries: Vec<(&str, &str)> = entries.iter().map(|(c, e)| (*c, e.as_str())).collect();
    let versions: Vec<&str> = versions.into_iter().collect();
    crate::diff_cli::catalog(dir, name, &entries, &versions, with_q)
}

fn run(old: &Path, new: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["diff", old.to_str().unwrap(), new.to_str().unwrap()];
    args.extend_from_slice(&["-o", "json"]);
    args.extend_from_slice(extra);
    let (code, out, err) = opreg(&args);
    assert!(!err.contains("panicked"), "{err}");
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

const OLD_CH: &[(&str, &[&str])] = &[
    ("stable", &["1.0.0", "1.1.0", "1.2.0"]),
    ("candidate-v1", &["1.0.0", "1.1.0", "1.2.0"]),
];

#[test]
fn a_removed_entry_fails_and_the_same_removal_in_a_candidate_channel_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let old = catalog(tmp.path(), "old", OLD_CH, true);
    // 1.1.0 leaves candidate-v1 only: allowed by the default pattern.
    let cand = catalog(
        tmp.path(),
        "cand",
        &[
            ("stable", &["1.0.0", "1.1.0", "1.2.0"]),
            ("candidate-v1", &["1.0.0", "1.2.0"]),
        ],
        true,
    );
    let (code, v) = run(&old, &cand, &["--fail-on-removal"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["stranded"], json!([]));
    assert_eq!(
        v["removals"],
        json!([{"package": "p", "channel": "candidate-v1", "bundle": "p.v1.1.0",
                "removed": "entry", "allowed": true}])
    );
    // The same removal from stable fails the gate, and only with the gate on.
    let stable = catalog(
        tmp.path(),
        "stable",
        &[
            ("stable", &["1.0.0", "1.2.0"]),
            ("candidate-v1", &["1.0.0", "1.1.0", "1.2.0"]),
        ],
        true,
    );
    let (code, v) = run(&old, &stable, &["--fail-on-removal"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["stranded"], json!([]), "skips keep 1.1.0 upgradable");
    assert_eq!(
        v["removals"],
        json!([{"package": "p", "channel": "stable", "bundle": "p.v1.1.0",
                "removed": "entry", "allowed": false}])
    );
    let (code, _) = run(&old, &stable, &[]);
    assert_eq!(
        code, 0,
        "without --fail-on-removal a removal is reported, not a failure"
    );
    // Text lists it.
    let (code, out, _) = opreg(&[
        "diff",
        old.to_str().unwrap(),
        stable.to_str().unwrap(),
        "--fail-on-removal",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("REMOVED: 1 channel(s) or channel entries removed outside allowed channels\n  p/stable: entry p.v1.1.0 removed\n"),
        "{out}"
    );
    // --allow-removal replaces the pattern: stable is allowed, candidate no longer is.
    let (code, v) = run(
        &old,
        &stable,
        &["--fail-on-removal", "--allow-removal", "^sta"],
    );
    assert_eq!(code, 0, "{v}");
    let (code, _) = run(
        &old,
        &cand,
        &["--fail-on-removal", "--allow-removal", "^sta"],
    );
    assert_eq!(code, 1);
}

#[test]
fn a_removed_channel_or_package_fails_unless_new_is_a_fragment() {
    let tmp = tempfile::tempdir().unwrap();
    let old = catalog(tmp.path(), "old", OLD_CH, true);
    // candidate-v1 removed entirely: allowed; q missing: a removal (and stranded).
    let no_q = catalog(
        tmp.path(),
        "noq",
        &[("stable", &["1.0.0", "1.1.0", "1.2.0"])],
        false,
    );
    let (code, v) = run(&old, &no_q, &["--fail-on-removal"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        v["removals"],
        json!([
            {"package": "p", "channel": "candidate-v1", "removed": "channel", "allowed": true},
            {"package": "q", "channel": "c", "removed": "package", "allowed": false}
        ])
    );
    let (code, out, _) = opreg(&[
        "diff",
        old.to_str().unwrap(),
        no_q.to_str().unwrap(),
        "--fail-on-removal",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("  q/c: package removed\n"), "{out}");
    assert!(
        out.contains("removals in allowed channels (1):\n  p/candidate-v1: channel removed\n"),
        "{out}"
    );
    // A fragment holding only p: q is not compared at all, neither removed nor stranded.
    let (code, v) = run(&old, &no_q, &["--fail-on-removal", "--fragment"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["stranded"], json!([]));
    assert_eq!(v["packages"]["removed"], json!([]));
    assert_eq!(v["removals"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn a_bad_pattern_is_a_usage_error_and_an_unreadable_source_stays_3() {
    let tmp = tempfile::tempdir().unwrap();
    let old = catalog(tmp.path(), "old", OLD_CH, true);
    let o = old.to_str().unwrap();
    let (code, _, err) = opreg(&["diff", o, o, "--fail-on-removal", "--allow-removal", "("]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-removal \"(\""), "{err}");
    let (code, _, _) = opreg(&["diff", o, "/nonexistent/new", "--fail-on-removal"]);
    assert_eq!(code, 3);
}
