//! Every printing command stops quietly when its reader has gone: the real binary, its stdout
//! a pipe whose read end is closed before the command starts (so its first write fails), and
//! the list of commands taken from the CLI definition itself, so that a new command without a
//! case here fails the test.

use crate::common;

use super::cli_messages::{assert_no_panic, catalog, VALID};
use clap::CommandFactory;
use common::bin;
use std::process::{Command, Stdio};

/// A small valid FBC with two packages, a default channel and an upgrade edge.
const CATALOG: &str = r#"{"schema":"olm.package","name":"demo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"demo","name":"stable","entries":[{"name":"demo.v1.0.0"},{"name":"demo.v1.1.0","replaces":"demo.v1.0.0"}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.0.0","image":"quay.io/x/demo:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.1.0","image":"quay.io/x/demo:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.1.0"}}]}
"#;

/// Runs opreg with stdout a pipe nobody reads; returns (exit code, stderr).
fn run_into_closed_pipe(args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_printing_command_stops_quietly_on_a_closed_pipe() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("catalog.json"), CATALOG).unwrap();
    let db = t.path().join("catalog.db");
    let (code, err) = run_into_closed_pipe(&["ingest", s(&dir), "-o", s(&db), "-q"]);
    assert_eq!(code, 0, "{err}");
    let template = t.path().join("template.json");
    // A basic template's bundles name only an image (pulled); the package and channel are enough.
    let entries: Vec<&str> = CATALOG
        .lines()
        .filter(|l| !l.contains("olm.bundle"))
        .collect();
    std::fs::write(
        &template,
        format!(
            r#"{{"schema":"olm.template.basic","entries":[{}]}}"#,
            entries.join(",")
        ),
    )
    .unwrap();
    let (d, db) = (s(&dir), s(&db));
    let catalog_file = s(&dir.join("catalog.json")).to_string();
    // Each subcommand, with arguments that make it print on stdout; `None` for the ones that
    // print nothing there (their reports go to stderr) or need a server to say anything.
    let cases: Vec<(&str, Option<Vec<&str>>)> = vec![
        ("ingest", None),
        ("validate", Some(vec!["validate", d, "-o", "json"])),
        ("render", Some(vec!["render", d, "-o", "yaml"])),
        (
            "render-template",
            Some(vec!["render-template", "basic", s(&template)]),
        ),
        ("serve", None),
        (
            "upgrade",
            Some(vec!["upgrade", db, "-p", "demo", "--from", "1.0.0"]),
        ),
        ("graph", Some(vec!["graph", d, "-p", "demo"])),
        ("list", Some(vec!["list", "bundles", db])),
        ("diff", Some(vec!["diff", db, d, "-o", "json"])),
        ("completions", Some(vec!["completions", "bash"])),
        ("man", Some(vec!["man"])),
        ("health-probe", None),
        // Writes image layouts and a Dockerfile; their reports go to stderr.
        ("image", None),
        ("generate", None),
        (
            "init",
            Some(vec!["init", "foo", "-c", "stable", "-o", "yaml"]),
        ),
        (
            "convert-template",
            Some(vec!["convert-template", "basic", &catalog_file]),
        ),
        // Writes a directory tree; nothing on stdout.
        ("migrate", None),
        // Reports on stderr; the plan and the record go to files in the workspace.
        ("mirror", None),
    ];
    let known: Vec<&str> = cases.iter().map(|(n, _)| *n).collect();
    for sub in opreg::cli::Cli::command().get_subcommands() {
        assert!(
            known.contains(&sub.get_name()),
            "subcommand {:?} has no case here: add how it prints",
            sub.get_name()
        );
    }
    for (name, args) in cases {
        let Some(args) = args else { continue };
        let (code, err) = run_into_closed_pipe(&args);
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(code, 0, "{name} {args:?}: {err}");
        assert!(err.trim().is_empty(), "{name}: quiet on EPIPE, got {err}");
    }
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Spawns opreg with the given stream closed on the reading side before it writes anything.
fn run_with_closed(args: &[&str], close_stdout: bool) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    if close_stdout {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    let mut child = cmd.spawn().unwrap();
    let mut err = String::new();
    if close_stdout {
        drop(child.stdout.take());
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
    } else {
        drop(child.stderr.take());
    }
    let st = child.wait().unwrap();
    (st.code().unwrap_or(-1), err)
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let (_t, dir) = catalog(&[("index.yaml", VALID)]);
    let d = s(&dir);
    for args in [
        vec!["graph", d, "--package", "demo"],
        vec![
            "graph",
            d,
            "--package",
            "demo",
            "-f",
            "dot",
            "--from",
            "1.0.0",
        ],
        vec!["render", d],
        vec!["upgrade", d, "-p", "demo", "--from", "1.0.0"],
        vec!["upgrade", d, "-p", "demo", "--from", "1.0.0", "-o", "json"],
    ] {
        let (code, err) = run_with_closed(&args, true);
        assert_no_panic(code, &err);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet on EPIPE, got {err}");
    }
    // Commands that report on stderr: a closed stderr must not turn into a panic either.
    for args in [
        vec!["validate", d, "--upgrades"],
        vec!["ingest", d, "-o", "/nonexistent-dir/x.db"],
        vec!["graph", d, "--package", "nope"],
    ] {
        let (code, _) = run_with_closed(&args, false);
        assert!(code == 0 || code == 1, "{args:?}: exit {code}");
    }
}
