//! Paths and interrupts, against the real binary: `ingest` refuses outputs that are not
//! regular files (and follows links), writes into the directory it reads, reopens a database at
//! a path that is not UTF-8, does not pull a missing local-looking name; SIGINT during ingest
//! leaves nothing behind and during serve's first build stops the build.

use super::cli_usage::{catalog, s};
use crate::common;
use common::{bin, corpus_valid, free_port, opreg, unsafe_kill};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
