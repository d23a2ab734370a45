//! The rough edges a new user hit (issue 13, "Bugs and rough edges"), each checked against the
//! real binary: file modes of ingested databases, the serve cache's temporary directory after
//! SIGTERM, broken pipes, rendering invalid catalogs, all errors from `serve`, empty catalogs,
//! machine-readable `validate` output, JSON logs, `--version`, the `opm` entry point, the health
//! probe's words, output paths checked first, and messages that say each thing once.

mod common;

use common::{bin, free_port, opreg, unsafe_kill, wait_serving};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small valid FBC: package `demo`, channel `stable` (default) with 1.0.0 ← 1.1.0, and a
/// channel `fast` holding 1.2.0 alone.
const VALID: &str = r#"---
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
fn catalog(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    for (name, content) in files {
        std::fs::write(dir.join(name), content).unwrap();
    }
    (t, dir)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_no_panic(code: i32, stderr: &str) {
    assert_ne!(code, 101, "exit 101 (a panic): {stderr}");
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
}

/// Runs `sh -c 'umask U; exec opreg ARGS'`; returns (exit code, stderr).
fn opreg_with_umask(umask: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[cfg(unix)]
#[test]
fn ingest_respects_the_umask_and_keeps_an_existing_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (t, dir) = catalog(&[("index.yaml", VALID)]);
    let db = t.path().join("out.db");
    let (code, err) = opreg_with_umask("022", &["ingest", "-q", s(&dir), "-o", s(&db)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&db), 0o644, "a new database under umask 022");

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, err) = opreg_with_umask("077", &["ingest", "-q", s(&dir), "-o", s(&db)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&db), 0o640, "an existing database keeps its mode");

    let private = t.path().join("private.db");
    let (code, err) = opreg_with_umask("077", &["ingest", "-q", s(&dir), "-o", s(&private)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&private), 0o600, "a new database under umask 077");
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

/// A private TMPDIR for one `opreg serve`, started on SOURCE; returns the TMPDIR's entries
/// after a SIGTERM and the exit code.
fn serve_then_sigterm(source: &Path) -> (i32, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(bin())
        .args([
            "serve",
            s(source),
            "-p",
            &port.to_string(),
            "-t",
            "/dev/null",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_serving(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(60),
        || child.try_wait().ok().flatten().map(|s| s.to_string()),
    );
    let during: Vec<String> = names(tmp.path());
    assert!(
        during.iter().any(|n| n.starts_with("opreg-serve-cache-")),
        "the cache lives in TMPDIR while serving: {during:?}"
    );
    unsafe_kill(child.id() as i32, 15);
    let start = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, names(tmp.path()))
}

fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect()
}

#[test]
fn serve_removes_its_temporary_cache_after_sigterm() {
    let (_t, dir) = catalog(&[("index.yaml", VALID)]);
    let (code, left) = serve_then_sigterm(&dir);
    assert_eq!(code, 0);
    assert!(
        !left.iter().any(|n| n.starts_with("opreg-serve-cache-")),
        "left behind: {left:?}"
    );
}
