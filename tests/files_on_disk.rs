//! What `ingest` and `serve` leave on disk, against the real binary: an ingested database's
//! file mode follows the umask and keeps an existing file's; `serve` removes its temporary cache
//! after SIGTERM; a cache built beforehand is served with no writable TMPDIR.

use super::cli_messages::{catalog, s, VALID};
use crate::common;
use common::{bin, free_port, opreg, unsafe_kill, wait_serving};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
        during.iter().any(|n| n.starts_with("opreg-serve-")),
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
        !left.iter().any(|n| n.starts_with("opreg-serve-")),
        "left behind: {left:?}"
    );
}

/// The container runs with a read-only root file system: a cache built beforehand with
/// `--cache-only`, no writable TMPDIR. Serving it must not need a temporary directory
/// (container-smoke caught a server that made one on start-up and exited).
#[test]
fn serve_with_a_prebuilt_cache_needs_no_writable_tmpdir() {
    let (_t, dir) = catalog(&[("index.yaml", VALID)]);
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path().join("cache");
    let (code, _, err) = opreg(&["serve", s(&dir), "--cache-dir", s(&c), "--cache-only"]);
    assert_eq!(code, 0, "{err}");
    let port = free_port();
    let mut child = Command::new(bin())
        .args([
            "serve",
            s(&dir),
            "--cache-dir",
            s(&c),
            "-p",
            &port.to_string(),
        ])
        .args(["-t", "/dev/null"])
        .env("TMPDIR", "/nonexistent-tmpdir")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_serving(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(60),
        || child.try_wait().ok().flatten().map(|s| s.to_string()),
    );
    unsafe_kill(child.id() as i32, 15);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    // Without a cache directory the server says where it needs to write.
    let out = Command::new(bin())
        .args(["serve", s(&dir), "-p", "0", "-t", "/dev/null"])
        .env("TMPDIR", "/nonexistent-tmpdir")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--cache-dir"), "{err}");
}
