//! What the command line says, against the real binary: rendering an invalid catalog with every
//! problem a warning, every error from `serve` once, empty catalogs, machine-readable `validate`
//! output, JSON logs, `--version`, the `opm` entry point, the health probe's words, output paths
//! checked first, and messages that say each thing once and suggest the nearest names.

use crate::common;
use common::{bin, free_port, opreg, unsafe_kill, wait_serving};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small valid FBC: package `demo`, channel `stable` (default) with 1.0.0 ← 1.1.0, and a
/// channel `fast` holding 1.2.0 alone.
pub(crate) const VALID: &str = r#"---
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: demo.v1.0.0
  - name: demo.v1.1.0
    replaces: demo.v1.0.0
---
schema: olm.channel
package: demo
name: fast
entries:
  - name: demo.v1.2.0
---
schema: olm.bundle
name: demo.v1.0.0
package: demo
image: quay.io/x/demo:v1.0.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.0.0}
---
schema: olm.bundle
name: demo.v1.1.0
package: demo
image: quay.io/x/demo:v1.1.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.1.0}
---
schema: olm.bundle
name: demo.v1.2.0
package: demo
image: quay.io/x/demo:v1.2.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.2.0}
"#;

/// A catalog directory holding `files` (name, content), kept alive by the returned guard.
pub(crate) fn catalog(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    for (name, content) in files {
        std::fs::write(dir.join(name), content).unwrap();
    }
    (t, dir)
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub(crate) fn assert_no_panic(code: i32, stderr: &str) {
    assert_ne!(code, 101, "exit 101 (a panic): {stderr}");
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
}

#[test]
fn ingest_into_a_directory_fails_before_reading_and_says_so_once() {
    let (t, dir) = catalog(&[("index.yaml", VALID)]);
    let out_dir = t.path().join("outdir");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, _, err) = opreg(&["ingest", s(&dir), "-o", s(&out_dir)]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(err.contains(s(&out_dir)), "names the path: {err}");
    // Nothing was left in the directory.
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}

/// VALID with three errors: two heads in `stable`, an entry of `fast` with no bundle, and a
/// bundle in no channel.
fn invalid() -> String {
    VALID
        .replace("    replaces: demo.v1.0.0\n", "")
        .replace("  - name: demo.v1.2.0", "  - name: demo.v1.3.0")
}

#[test]
fn render_renders_an_invalid_catalog_with_every_problem_as_a_warning() {
    let bad = invalid();
    let (_t, dir) = catalog(&[("index.yaml", &bad)]);
    let (code, out, err) = opreg(&["render", s(&dir)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        common::json_lines(&out).lines().count(),
        6,
        "every meta rendered: {out}"
    );
    for rule in ["channel-head", "membership"] {
        assert!(err.contains(&format!("warning[{rule}]")), "{err}");
    }
    assert!(!err.contains("error["), "{err}");
    // A file that cannot be parsed is still an error: there is nothing to render from it.
    let (_t2, broken) = catalog(&[("index.yaml", "schema: [unclosed\n")]);
    let (code, _, err) = opreg(&["render", s(&broken)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[parse]"), "{err}");
}

#[test]
fn serve_and_cache_only_print_every_error_once_each() {
    let bad = invalid();
    let (t, dir) = catalog(&[("index.yaml", &bad)]);
    let cache = t.path().join("cache");
    let port = free_port().to_string();
    for args in [
        vec!["serve", s(&dir), "-p", &port, "-t", "/dev/null"],
        vec!["serve", s(&dir), "--cache-dir", s(&cache), "--cache-only"],
    ] {
        let (code, _, err) = opreg(&args);
        assert_eq!(code, 1, "{err}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("error[") || l.starts_with("error:"))
            .collect();
        assert!(lines.len() >= 4, "three diagnostics and a summary: {err}");
        assert_eq!(
            lines.iter().filter(|l| l.contains("channel-head")).count(),
            1,
            "{err}"
        );
        assert!(!err.contains("error: error["), "prefix said twice: {err}");
    }
}

#[test]
fn empty_catalogs_are_errors_unless_allowed_and_unknown_schemas_warn() {
    let template = "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: x\n";
    let typo = VALID.replace("schema: olm.package", "schema: olm.pakage");
    let (_a, empty) = catalog(&[]);
    let (_b, only_template) = catalog(&[("template.yaml", template)]);
    let (_c, unknown) = catalog(&[("index.yaml", &typo)]);
    for dir in [&empty, &only_template] {
        let (code, _, err) = opreg(&["validate", s(dir)]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("no packages"), "{err}");
        assert!(err.contains("--allow-empty"), "{err}");
        let (code, _, err) = opreg(&["validate", s(dir), "--allow-empty"]);
        assert_eq!(code, 0, "{err}");
        let db = dir.parent().unwrap().join("x.db");
        let (code, _, err) = opreg(&["ingest", s(dir), "-o", s(&db)]);
        assert_eq!(code, 1, "{err}");
        assert!(!db.exists());
    }
    let (_, _, err) = opreg(&["validate", s(&only_template)]);
    assert!(
        err.contains("warning[schema]") && err.contains("olm.template.basic"),
        "{err}"
    );
    let (code, _, err) = opreg(&["validate", s(&unknown)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("unknown schema \"olm.pakage\"") && err.contains("\"olm.package\""),
        "a warning suggesting the nearest schema: {err}"
    );
}

#[test]
fn validate_writes_json_or_yaml_diagnostics_and_can_fail_on_warnings() {
    let bad = invalid();
    let (_t, dir) = catalog(&[("index.yaml", &bad)]);
    let (code, out, err) = opreg(&["validate", s(&dir), "-o", "json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    let diags = v["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 3, "{out}");
    assert_eq!(v["valid"], false);
    let head = diags
        .iter()
        .find(|d| d["rule"] == "channel-head")
        .expect("channel-head");
    assert_eq!(head["severity"], "error");
    assert_eq!(head["file"], s(&dir.join("index.yaml")));
    assert_eq!(head["document"], 2);
    assert_eq!(head["package"], "demo");
    assert_eq!(head["channel"], "stable");
    assert!(head["message"]
        .as_str()
        .unwrap()
        .contains("multiple channel heads"));
    let (code, out, err) = opreg(&["validate", s(&dir), "-o", "yaml"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("rule: channel-head"), "{out}");

    // A catalog with only a warning (an unknown schema): valid, unless warnings are errors.
    let warned = format!("{VALID}---\nschema: olm.pakage\nname: x\n");
    let (_u, wdir) = catalog(&[("index.yaml", &warned)]);
    let (code, out, err) = opreg(&["validate", s(&wdir), "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["diagnostics"][0]["severity"], "warning");
    let (code, _, err) = opreg(&["validate", s(&wdir), "--warnings-as-errors"]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn json_log_format_applies_to_diagnostics_and_errors() {
    let bad = invalid();
    let (_t, dir) = catalog(&[("index.yaml", &bad)]);
    for args in [
        vec!["--log-format", "json", "validate", s(&dir)],
        vec![
            "--log-format",
            "json",
            "ingest",
            s(&dir),
            "-o",
            "/nonexistent/x.db",
        ],
        vec!["--log-format", "json", "graph", s(&dir), "-p", "demo"],
    ] {
        let (code, _, err) = opreg(&args);
        assert_eq!(code, 1, "{err}");
        assert!(!err.is_empty());
        for line in err.lines() {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {line}"));
            assert!(v["level"].is_string(), "{line}");
        }
    }
    let (_, _, err) = opreg(&["--log-format", "json", "validate", s(&dir)]);
    let head = err
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["fields"]["rule"] == "channel-head")
        .expect("a channel-head event");
    assert_eq!(head["fields"]["channel"], "stable");
}

#[test]
fn version_names_the_git_commit() {
    let (code, out, _) = opreg(&["--version"]);
    assert_eq!(code, 0);
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    assert!(out.starts_with("opreg 0."), "{out}");
    assert!(out.contains(&format!("commit {commit}")), "{out}");
}

/// Runs the binary under another name (as the container image installs it).
fn as_named(name: &str, args: &[&str]) -> (i32, String) {
    let t = tempfile::tempdir().unwrap();
    let link = t.path().join(name);
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let mut child = Command::new(&link)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a command that should fail at once must not be left serving.
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn opm_serve_needs_exactly_one_source_and_opreg_serve_warns_about_the_demo() {
    let (code, err) = as_named("opm", &["serve"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("accepts 1 arg(s), received 0"), "{err}");
    let (code, err) = as_named("opm", &["serve", "a", "b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("accepts 1 arg(s), received 2"), "{err}");

    // opreg serve without SOURCE: the demo, with a warning that says so; --pprof-addr is
    // accepted with a warning.
    let port = free_port();
    let mut child = Command::new(bin())
        .args(["serve", "-p", &port.to_string(), "-t", "/dev/null"])
        .args(["--pprof-addr", "localhost:6060"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_serving(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(60),
        || child.try_wait().ok().flatten().map(|s| s.to_string()),
    );
    unsafe_kill(child.id() as i32, 15);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warns: Vec<&str> = err.lines().filter(|l| l.contains("WARN")).collect();
    assert!(warns.iter().any(|l| l.contains("demo")), "{err}");
    assert!(warns.iter().any(|l| l.contains("pprof")), "{err}");
}

#[test]
fn health_probe_names_the_failure_and_speaks_grpc_health_probes_words() {
    let addr = format!("127.0.0.1:{}", free_port());
    let (code, err) = as_named("grpc_health_probe", &[&format!("-addr={addr}")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("connection refused"), "{err}");
    assert!(!err.contains("transport error"), "{err}");
    let (code, _, err) = opreg(&["health-probe", "--addr", &addr]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("connection refused"), "{err}");

    for (args, words) in [
        (
            vec!["-connect-timeout=0s"],
            "-connect-timeout must be greater than zero (specified: 0s)",
        ),
        (
            vec!["-rpc-timeout=0"],
            "-rpc-timeout must be greater than zero (specified: 0s)",
        ),
        (
            vec!["-connect-timeout=abc"],
            "invalid value \"abc\" for flag -connect-timeout: parse error",
        ),
        (vec!["-addr="], "-addr not specified"),
        (vec!["-nope"], "flag provided but not defined: -nope"),
        (vec!["-addr"], "flag needs an argument: -addr"),
    ] {
        let (code, err) = as_named("grpc_health_probe", &args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
    }
}

#[test]
fn messages_say_each_thing_once_and_suggest_the_nearest_names() {
    let (_t, dir) = catalog(&[("index.yaml", VALID)]);
    let d = s(&dir);
    for (args, want) in [
        (
            vec!["upgrade", d, "-p", "dmeo", "--from", "1.0.0"],
            "no package \"dmeo\"; did you mean \"demo\"?",
        ),
        (
            vec![
                "upgrade",
                d,
                "-p",
                "demo",
                "--from",
                "1.0.0",
                "--channel",
                "stabel",
            ],
            "did you mean \"stable\"?",
        ),
        (
            vec!["upgrade", d, "-p", "demo", "--from", "demo.v1.0.1"],
            "did you mean",
        ),
        (vec!["graph", d, "-p", "dmeo"], "did you mean \"demo\"?"),
        (
            vec!["graph", d, "-p", "demo", "-c", "fats"],
            "did you mean \"fast\"?",
        ),
        (
            vec!["graph", d, "-p", "demo", "--from", "7.7.7"],
            "\"7.7.7\" is neither a bundle",
        ),
    ] {
        let (code, _, err) = opreg(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert_eq!(
            err.matches("7.7.7").count().min(1),
            err.matches("7.7.7").count(),
            "{err}"
        );
        assert!(!err.contains("error: error"), "{err}");
    }
}

#[test]
fn upgrade_from_a_bundle_outside_the_default_channel_names_its_channels() {
    let (_t, dir) = catalog(&[("index.yaml", VALID)]);
    let (code, out, err) = opreg(&["upgrade", s(&dir), "-p", "demo", "--from", "1.2.0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("next: none"), "{out}");
    assert!(
        err.contains("not in the default channel \"stable\"")
            && err.contains("\"fast\"")
            && err.contains("--channel fast"),
        "{err}"
    );
    // In its own channel: no such warning.
    let (code, _, err) = opreg(&[
        "upgrade",
        s(&dir),
        "-p",
        "demo",
        "--from",
        "1.2.0",
        "--channel",
        "fast",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
}
