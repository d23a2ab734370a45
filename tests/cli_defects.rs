//! Defects a new user hit in the command line, each against the real binary: outputs that are
//! not regular files, a database written into the directory it is read from, paths that are
//! not UTF-8, local-looking names that do not exist, signals during ingest and serve's first
//! build, usage errors, `diff`'s exit codes, structured output, man pages, the health probe's
//! Go-style flags, and the smaller messages.

use crate::common;

use common::{bin, corpus_valid, free_port, opreg, unsafe_kill};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CATALOG: &str = r#"{"schema":"olm.package","name":"demo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"demo","name":"stable","entries":[{"name":"demo.v1.0.0"},{"name":"demo.v1.1.0","replaces":"demo.v1.0.0"}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.0.0","image":"quay.io/x/demo:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v1.1.0","image":"quay.io/x/demo:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"1.1.0"}}]}
"#;

/// A temp dir holding `catalog/catalog.json`.
fn catalog() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("catalog.json"), CATALOG).unwrap();
    (t, dir)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[cfg(unix)]
#[test]
fn ingest_refuses_outputs_that_are_not_regular_files_and_follows_links() {
    let (t, dir) = catalog();
    // A device is left alone.
    let (code, _, err) = opreg(&["ingest", s(&dir), "-o", "/dev/full"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    let meta = std::fs::metadata("/dev/full").unwrap();
    assert!(!meta.is_file(), "/dev/full was replaced");
    // A FIFO too.
    let fifo = t.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = opreg(&["ingest", s(&dir), "-o", s(&fifo)]);
    assert_eq!(code, 1, "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A symbolic link: its target is replaced, the link stays a link.
    let target = t.path().join("real.db");
    let link = t.path().join("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, _, err) = opreg(&["ingest", s(&dir), "-o", s(&link), "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(opreg::store::is_opreg_db(&target));
}

#[test]
fn ingest_into_the_directory_it_reads_works_every_time() {
    let (_t, dir) = catalog();
    let db = dir.join("catalog.db");
    for round in 0..2 {
        let (code, _, err) = opreg(&["ingest", s(&dir), "-o", s(&db)]);
        assert_eq!(code, 0, "round {round}: {err}");
        assert!(
            err.contains("1 packages, 2 bundles"),
            "round {round}: {err}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "only the catalog and the database: {names:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_database_at_a_path_that_is_not_utf8_opens_again() {
    use std::os::unix::ffi::OsStrExt;
    let (t, dir) = catalog();
    let db = t
        .path()
        .join(std::ffi::OsStr::from_bytes(b"cat\xffalog %?#.db"));
    let st = Command::new(bin())
        .args(["ingest", s(&dir), "-q", "-o"])
        .arg(&db)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(bin())
        .args(["list", "packages"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("demo"));
}

#[test]
fn a_missing_local_looking_name_is_not_pulled() {
    for name in ["nosuch.json", "nosuch.db", "Catalog.yaml", "configs"] {
        // A proxy that does not exist: any registry request would fail differently.
        let out = Command::new(bin())
            .args(["validate", name])
            .env("HTTPS_PROXY", "http://127.0.0.1:1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}: no such file or directory")),
            "{name}: {err}"
        );
        assert!(err.contains("oci:DIR:TAG"), "{name}: a hint: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
    }
}

/// The temp files an ingest left beside its output.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".opreg-ingest-"))
        .collect()
}

#[test]
fn sigint_during_ingest_leaves_nothing_behind() {
    let community = corpus_valid("community-operators.fbc.json");
    for sig in [2, 15] {
        let out = tempfile::tempdir().unwrap();
        let db = out.path().join("catalog.db");
        let mut child = Command::new(bin())
            .args(["ingest", s(&community), "-q", "-o", s(&db)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signalled once the temporary database exists, while it is being filled.
        let start = Instant::now();
        while temp_files(out.path()).is_empty() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        unsafe_kill(child.id() as i32, sig);
        let code = child.wait().unwrap().code();
        if code == Some(0) {
            // The ingest finished before the signal came: nothing to check this time.
            continue;
        }
        assert_eq!(code, Some(130), "signal {sig}");
        assert!(temp_files(out.path()).is_empty(), "signal {sig}");
        assert!(!db.exists(), "signal {sig}");
    }
}

#[test]
fn sigint_during_serves_first_build_stops_the_build() {
    let community = corpus_valid("community-operators.fbc.json");
    let port = free_port().to_string();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(bin())
        .args(["serve", s(&community), "-p", &port, "-t", "/dev/null"])
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let text = || std::fs::read_to_string(log.path()).unwrap_or_default();
    while !text().contains("listening") && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    unsafe_kill(child.id() as i32, 2);
    let code = child.wait().unwrap().code();
    let log = text();
    assert_eq!(code, Some(0), "{log}");
    let after = &log[log.find("stopping").expect("the stop is logged")..];
    assert!(
        !after.contains("catalog built") && !after.contains("listen addresses"),
        "the build went on after the stop:\n{log}"
    );
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
