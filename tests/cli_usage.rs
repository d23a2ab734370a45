//! Usage and output contracts of the command line, against the real binary: usage errors exit
//! 2, `diff`'s exit codes, structured output keeping the help, the bundle and the level, a man
//! page for every subcommand, the health probe's Go-style flags, and the smaller messages.

use crate::common;
use common::{bin, free_port, opreg};
use std::path::{Path, PathBuf};
use std::process::Command;

const CATALOG: &str = r#"{"schema":"olm.package","name":"demo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"demo","name":"stable","entries":[{"name":"demo.v1.0.0"},{"name":"demo.v1.1.0","replaces":"demo.v1.0.0"}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.0.0","image":"quay.io/x/demo:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.1.0","image":"quay.io/x/demo:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.1.0"}}]}
"#;

/// A temp dir holding `catalog/catalog.json`.
pub(crate) fn catalog() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("catalog.json"), CATALOG).unwrap();
    (t, dir)
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn usage_errors_exit_2() {
    let (_t, dir) = catalog();
    let port = free_port().to_string();
    for (args, says) in [
        (
            vec!["serve", s(&dir), "--cache-enforce-integrity"],
            "--cache-dir must be specified",
        ),
        (
            vec![
                "upgrade",
                s(&dir),
                "-p",
                "demo",
                "--from",
                "1.0.0",
                "--version",
                ">=1",
            ],
            "classic OLM has no version constraint",
        ),
        (
            vec!["serve", s(&dir), "-p", &port, "--http-port", &port],
            "--port and --http-port are both",
        ),
    ] {
        let (code, _, err) = opreg(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn diff_tells_an_invalid_new_from_a_stranded_version() {
    let (t, dir) = catalog();
    let bad = t.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\":\"olm.package\"").unwrap();
    let (code, out, err) = opreg(&["diff", s(&dir), s(&bad), "-o", "json"]);
    assert_eq!(code, 3, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{out}");
    // A comparison that ran says `"error": null`, and a stranded version exits 1.
    let newer = t.path().join("newer");
    std::fs::create_dir(&newer).unwrap();
    std::fs::write(
        newer.join("c.json"),
        CATALOG
            .replace(r#",{"name":"demo.v1.1.0","replaces":"demo.v1.0.0"}"#, "")
            .lines()
            .filter(|l| !l.contains(r#""name":"demo.v1.1.0","image""#))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let (code, out, err) = opreg(&["diff", s(&dir), s(&newer), "-o", "json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert!(v["error"].is_null() && !v["stranded"].as_array().unwrap().is_empty());
}

#[test]
fn structured_output_keeps_the_help_the_bundle_and_the_level() {
    let (t, _) = catalog();
    let dir = t.path().join("badrange");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("c.json"),
        CATALOG.replace(
            r#"{"name":"demo.v1.0.0"}"#,
            r#"{"name":"demo.v1.0.0","skipRange":"not a range"}"#,
        ),
    )
    .unwrap();
    let (code, out, _) = opreg(&["validate", s(&dir), "-o", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let diags = v["diagnostics"].as_array().unwrap();
    let range = diags
        .iter()
        .find(|d| d["rule"] == "skip-range")
        .expect(&out);
    assert_eq!(range["bundle"], "demo.v1.0.0", "{out}");
    assert!(diags.iter().all(|d| d.get("help").is_some()), "{out}");
    // A diagnostic with a help line keeps it.
    let (_, out, _) = opreg(&["validate", s(&dir), "-o", "json", "--upgrades"]);
    assert!(out.contains("\"help\""), "{out}");
    // The summary of an invalid catalog is an error event in the JSON log.
    let (_, _, err) = opreg(&["--log-format", "json", "validate", s(&dir)]);
    let summary = err
        .lines()
        .find(|l| l.contains("the catalog is invalid"))
        .expect(&err);
    assert!(summary.contains("\"level\":\"ERROR\""), "{summary}");
}

#[test]
fn man_has_a_page_for_every_subcommand_it_names() {
    let out = tempfile::tempdir().unwrap();
    let (code, _, err) = opreg(&["man", "--out-dir", s(out.path())]);
    assert_eq!(code, 0, "{err}");
    // roff writes a hyphen as `\-`.
    let main = std::fs::read_to_string(out.path().join("opreg.1"))
        .unwrap()
        .replace("\\-", "-");
    let mut named = 0;
    for word in main.split(|c: char| !(c.is_alphanumeric() || c == '-')) {
        if let Some(sub) = word.strip_prefix("opreg-") {
            if !sub.is_empty() {
                named += 1;
                assert!(
                    out.path().join(format!("opreg-{sub}.1")).is_file(),
                    "opreg(1) names opreg-{sub}(1), which is not written"
                );
            }
        }
    }
    assert!(named > 5, "opreg(1) names its subcommands' pages");
    let (code, page, _) = opreg(&["man", "ingest"]);
    assert_eq!(code, 0);
    assert!(page.contains("opreg-ingest"), "{page}");
}

#[test]
fn health_probe_takes_go_style_flags_under_its_own_name() {
    let port = free_port();
    let (code, out, err) = opreg(&["health-probe", &format!("-addr=127.0.0.1:{port}")]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("failed to connect"), "{err}");
}

#[test]
fn the_smaller_messages() {
    let (t, dir) = catalog();
    let db = t.path().join("c.db");
    assert_eq!(opreg(&["ingest", s(&dir), "-q", "-o", s(&db)]).0, 0);
    // list suggests the nearest package.
    let (code, _, err) = opreg(&["list", "bundles", s(&db), "dmeo"]);
    assert_eq!(code, 1);
    assert!(err.contains("did you mean \"demo\""), "{err}");
    // upgrade -o json is camelCase.
    let (code, out, err) = opreg(&[
        "upgrade",
        s(&db),
        "-p",
        "demo",
        "--from",
        "1.0.0",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"inCatalog\""), "{out}");
    assert!(!out.contains("in_catalog"), "{out}");
    // graph --since beyond every bundle.
    let (code, _, err) = opreg(&["graph", s(&dir), "-p", "demo", "--since", "9.9.9"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no bundle of package \"demo\" is that new"),
        "{err}"
    );
    // --cache-dir naming a file.
    let file = t.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = opreg(&["serve", s(&dir), "--cache-dir", s(&file), "--cache-only"]);
    assert_eq!(code, 1);
    assert!(err.contains("is not a directory"), "{err}");
    // validate - reads standard input.
    let out = Command::new(bin())
        .args(["validate", "-"])
        .stdin(std::fs::File::open(dir.join("catalog.json")).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("valid: 1 packages"), "{err}");
}
