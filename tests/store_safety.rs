//! Store safety through the real binary: the server never writes to the database it serves,
//! and refuses, at start-up and with a one-line reason, a database it must not serve (damaged,
//! truncated, empty, foreign, random bytes, or of another schema version).

use crate::common;
use common::*;
use opreg::api;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use tokio_stream::StreamExt;

/// Ingests the upstream manifests plus the deprecations fixture (custom metas for the
/// experimental RPC) into `dir/name`.
fn build_db(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join(name);
    let (code, _, err) = opreg(&[
        "ingest",
        shared("upstream-manifests").to_str().unwrap(),
        fixture("deprecations").to_str().unwrap(),
        "-o",
        db.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 0, "{err}");
    db
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Name, size and mtime of every entry of `dir`.
fn snapshot(dir: &Path) -> Vec<(String, u64, SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The access mode (O_RDONLY 0, O_WRONLY 1, O_RDWR 2) of every descriptor `pid` holds on
/// `file`, from /proc/<pid>/fdinfo.
fn open_modes(pid: u32, file: &Path) -> Vec<u32> {
    let file = std::fs::canonicalize(file).unwrap();
    let mut modes = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let e = e.unwrap();
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if target != file {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            e.file_name().to_string_lossy()
        ))
        .unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
            .expect("fdinfo has flags");
        modes.push(flags & 0o3);
    }
    modes
}

/// Every descriptor of `pid` whose target lies in `dir` and is not `except`.
fn other_files_open_in(pid: u32, dir: &Path, except: &Path) -> Vec<PathBuf> {
    let dir = std::fs::canonicalize(dir).unwrap();
    let except = std::fs::canonicalize(except).unwrap();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
        .filter(|t| t.starts_with(&dir) && *t != except)
        .collect()
}

async fn drain<T>(s: Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>) -> usize {
    let Ok(s) = s else { return 0 };
    let mut s = s.into_inner();
    let mut n = 0;
    while let Some(x) = s.next().await {
        if x.is_ok() {
            n += 1;
        }
    }
    n
}

/// Calls every RPC the server offers, with answers and with errors; returns how many calls
/// produced data, so the caller can tell the database was really read.
async fn call_everything(server: &Server) -> usize {
    let ch = tonic::transport::Endpoint::from_shared(server.addr())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut c =
        api::registry_client::RegistryClient::new(ch.clone()).max_decoding_message_size(64 << 20);
    let mut hits = 0;
    for (pkg, channel, csv) in [
        ("etcd", "alpha", "etcdoperator.v0.9.2"),
        ("kiwi", "stable", "kiwi.v1.0.0"),
        ("no-such-package", "nope", "nope.v1"),
    ] {
        hits += drain(c.list_packages(api::ListPackageRequest {}).await).await;
        hits += c
            .get_package(api::GetPackageRequest { name: pkg.into() })
            .await
            .is_ok() as usize;
        hits += c
            .get_bundle(api::GetBundleRequest {
                pkg_name: pkg.into(),
                channel_name: channel.into(),
                csv_name: csv.into(),
            })
            .await
            .is_ok() as usize;
        #[allow(deprecated)]
        let r = c
            .get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: pkg.into(),
                channel_name: channel.into(),
            })
            .await;
        hits += r.is_ok() as usize;
        hits += drain(
            c.get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                csv_name: "etcdoperator.v0.6.1".into(),
            })
            .await,
        )
        .await;
        hits += c
            .get_bundle_that_replaces(api::GetReplacementRequest {
                csv_name: "etcdoperator.v0.6.1".into(),
                pkg_name: pkg.into(),
                channel_name: channel.into(),
            })
            .await
            .is_ok() as usize;
        let (g, v, k) = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
        hits += drain(
            c.get_channel_entries_that_provide(api::GetAllProvidersRequest {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                plural: String::new(),
            })
            .await,
        )
        .await;
        hits += drain(
            c.get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                plural: String::new(),
            })
            .await,
        )
        .await;
        hits += c
            .get_default_bundle_that_provides(api::GetDefaultProviderRequest {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                plural: String::new(),
            })
            .await
            .is_ok() as usize;
        hits += drain(c.list_bundles(api::ListBundlesRequest {}).await).await;

        let mut x = api::experimental_registry_client::ExperimentalRegistryClient::new(ch.clone());
        for ack in [true, false] {
            let mut r = tonic::Request::new(api::ExperimentalListPackageCustomSchemasRequest {
                schema: "example.notes".into(),
                package_name: pkg.into(),
            });
            if ack {
                r.metadata_mut()
                    .insert("x-acknowledge-experimental", "true".parse().unwrap());
            }
            hits += drain(x.experimental_list_package_custom_schemas(r).await).await;
        }

        let mut u = opreg::upgrades_api::upgrades_client::UpgradesClient::new(ch.clone());
        for semantics in [0, 1, 2] {
            hits += u
                .resolve(opreg::upgrades_api::ResolveRequest {
                    package: pkg.into(),
                    from: "etcdoperator.v0.6.1".into(),
                    semantics,
                    ..Default::default()
                })
                .await
                .is_ok() as usize;
        }

        let mut h = tonic_health::pb::health_client::HealthClient::new(ch.clone());
        for service in ["", "Registry", "api.Registry"] {
            hits += h
                .check(tonic_health::pb::HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .is_ok() as usize;
        }
    }
    hits
}

#[test]
fn serving_never_writes_to_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    let db = build_db(&dir, "catalog.db");
    // Root ignores these modes (CI runs as root); what is checked below is that opreg does not
    // try: same bytes, same mtime, no journal, WAL or shared-memory file, no writable handle.
    set_mode(&db, 0o444);
    set_mode(&dir, 0o555);
    let bytes = std::fs::read(&db).unwrap();
    let before = snapshot(&dir);

    let server = Server::start(&[db.to_str().unwrap()]);
    let pid = server.child.id();
    let hits = rt().block_on(call_everything(&server));
    assert!(
        hits > 50,
        "the RPCs answered only {hits} times: the database was not really read"
    );
    let modes = open_modes(pid, &db);
    assert!(
        !modes.is_empty(),
        "the server holds no descriptor on {}",
        db.display()
    );
    assert!(
        modes.iter().all(|m| *m == 0),
        "the database is open for writing (access modes {modes:?}, 0 = O_RDONLY)"
    );
    let others = other_files_open_in(pid, &dir, &db);
    assert!(
        others.is_empty(),
        "the server opened other files beside the database: {others:?}"
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "the directory changed while serving"
    );
    assert_eq!(server.terminate(), Some(0), "graceful shutdown exits 0");

    assert_eq!(
        snapshot(&dir),
        before,
        "serving changed the directory (a -journal, -wal or -shm file, or the database's size or mtime)"
    );
    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "serving changed the database's bytes"
    );
    set_mode(&dir, 0o755);
}

/// Runs `opreg serve FILE` with a termination log and waits for it to exit (killing it if it
/// is still up after a generous limit, which fails the test). Returns (exit code, stderr,
/// termination log).
fn serve_expecting_exit(file: &Path, log: &Path) -> (Option<i32>, String, String) {
    let port = free_port().to_string();
    let mut child = Command::new(bin())
        .arg("serve")
        .arg(file)
        .args(["-p", &port, "-t"])
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = reader.join().unwrap();
    let log = std::fs::read_to_string(log).unwrap_or_default();
    (status, err, log)
}

/// Overwrites `n` pages in the middle of the file with a pattern: a damaged database whose
/// header, schema and format marker are intact.
fn damage_middle_pages(bytes: &mut [u8], n: usize) {
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    let pages = bytes.len() / page;
    assert!(
        pages > 2 * n + 4,
        "database too small to damage: {pages} pages"
    );
    let first = pages / 2;
    for (i, b) in bytes[first * page..(first + n) * page]
        .iter_mut()
        .enumerate()
    {
        *b = (i * 7 + 3) as u8;
    }
}

fn set_user_version(db: &Path, v: i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.pragma_update(None, "user_version", v).unwrap();
}

fn user_version(db: &Path) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    c.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn unusable_databases_are_refused_at_start_up_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let good = build_db(tmp.path(), "good.db");
    let bytes = std::fs::read(&good).unwrap();
    let version = user_version(&good);
    assert!(version >= 1);

    // (file name, contents, the reason the message must give: any of these words)
    let mut cases: Vec<(&str, Vec<u8>, &[&str])> = Vec::new();
    let mut damaged = bytes.clone();
    damage_middle_pages(&mut damaged, 3);
    cases.push(("damaged.db", damaged, &["damaged", "malformed", "corrupt"]));
    cases.push((
        "truncated.db",
        bytes[..bytes.len() / 2].to_vec(),
        &["truncated", "malformed", "damaged"],
    ));
    cases.push(("empty.db", Vec::new(), &["empty (0 bytes)"]));
    let random: Vec<u8> = (0..65_536u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    cases.push(("random.db", random, &["no SQLite header"]));
    // A SQLite header followed by garbage.
    let mut garbage = bytes[..100].to_vec();
    garbage.extend((0..40_000u32).map(|i| (i * 31 + 7) as u8));
    cases.push((
        "garbage.db",
        garbage,
        &["not a database", "malformed", "damaged"],
    ));
    for (name, contents, _) in &cases {
        std::fs::write(tmp.path().join(name), contents).unwrap();
    }
    // A valid SQLite database that is not a catalog (nor an upstream index, which is a
    // supported source).
    let foreign = tmp.path().join("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch(
            "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT);
             INSERT INTO accounts (owner) VALUES ('someone');",
        )
        .unwrap();
    }
    let newer = tmp.path().join("newer.db");
    std::fs::copy(&good, &newer).unwrap();
    set_user_version(&newer, version + 1);
    let older = tmp.path().join("older.db");
    std::fs::copy(&good, &older).unwrap();
    set_user_version(&older, version - 1);
    let newer_words = format!("schema version {}", version + 1);

    let mut all: Vec<(PathBuf, Vec<&str>)> = cases
        .iter()
        .map(|(n, _, w)| (tmp.path().join(n), w.to_vec()))
        .collect();
    all.push((
        foreign,
        vec!["not an operator-registry index", "not an opreg"],
    ));
    all.push((newer, vec!["newer opreg"]));
    all.push((older, vec!["older than this opreg"]));

    let mut failures = Vec::new();
    for (file, words) in &all {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let before = std::fs::read(file).unwrap();
        let log = tmp.path().join(format!("{name}.termination-log"));
        let (code, err, reason) = serve_expecting_exit(file, &log);
        let problem = (|| {
            if code != Some(1) {
                return Some(format!("exit code {code:?}, expected 1"));
            }
            if err.contains("panicked") {
                return Some("panicked".into());
            }
            let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
            if errors.len() != 1 {
                return Some(format!("{} error lines, expected one", errors.len()));
            }
            let line = errors[0];
            if !line.contains(&file.display().to_string()) {
                return Some(format!("the error does not name {}", file.display()));
            }
            if !words.iter().any(|w| line.contains(w)) {
                return Some(format!("the error gives none of the reasons {words:?}"));
            }
            if name == "newer.db" && !line.contains(&newer_words) {
                return Some(format!("the error does not say {newer_words:?}"));
            }
            if reason.trim_end().lines().count() != 1 || !line.contains(reason.trim_end()) {
                return Some(format!(
                    "the termination log is not the one-line reason: {reason:?}"
                ));
            }
            if std::fs::read(file).unwrap() != before {
                return Some("serve changed the file".into());
            }
            None
        })();
        if let Some(p) = problem {
            failures.push(format!(
                "{name}: {p}\n  stderr: {}\n  termination log: {reason:?}",
                err.trim_end().replace('\n', "\n          ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} unusable databases were not refused properly:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn a_damaged_database_is_refused_as_an_ingest_source_too() {
    // Merging a damaged database into a new one must fail naming it, and write nothing.
    let tmp = tempfile::tempdir().unwrap();
    let good = build_db(tmp.path(), "good.db");
    let mut bytes = std::fs::read(&good).unwrap();
    damage_middle_pages(&mut bytes, 3);
    let damaged = tmp.path().join("damaged.db");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = tmp.path().join("out").join("merged.db");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let (code, _, err) = opreg(&[
        "ingest",
        damaged.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error[parse]"))
        .unwrap_or_else(|| panic!("no parse error:\n{err}"));
    assert!(line.contains(damaged.to_str().unwrap()), "{line}");
    assert!(
        ["damaged", "malformed", "corrupt"]
            .iter()
            .any(|w| line.contains(w)),
        "{line}"
    );
    assert_eq!(
        std::fs::read_dir(out.parent().unwrap()).unwrap().count(),
        0,
        "a failed ingest left files behind"
    );
}

/// `opreg upgrade` on a built database reads a few pages without checking every page first (a
/// server's start-up check); a database it must not read is still refused with one error line
/// naming it, and a damaged page it reads is an error, not a wrong answer.
#[test]
fn upgrade_refuses_an_unusable_database_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let good = build_db(tmp.path(), "good.db");
    let bytes = std::fs::read(&good).unwrap();
    let args = |db: &Path| {
        let (code, out, err) = opreg(&[
            "upgrade",
            db.to_str().unwrap(),
            "-p",
            "etcd",
            "--from",
            "etcdoperator.v0.9.0",
            "-o",
            "json",
        ]);
        (code, out, err)
    };
    let (code, out, err) = args(&good);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("etcdoperator.v0.9.2"), "{out}");

    let truncated = tmp.path().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let newer = tmp.path().join("newer.db");
    std::fs::copy(&good, &newer).unwrap();
    set_user_version(&newer, user_version(&good) + 1);
    // Every page after the first damaged: whatever upgrade reads is damaged.
    let mut wrecked = bytes.clone();
    for (i, b) in wrecked[4096..].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let damaged = tmp.path().join("damaged.db");
    std::fs::write(&damaged, &wrecked).unwrap();
    for (db, words) in [
        (&truncated, &["truncated"][..]),
        (&newer, &["newer opreg"][..]),
        (
            &damaged,
            &["malformed", "damaged", "corrupt", "not a database"][..],
        ),
    ] {
        let (code, _, err) = args(db);
        assert_eq!(code, 1, "{}: {err}", db.display());
        assert!(!err.contains("panicked"), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(lines.len(), 1, "{}: {err}", db.display());
        assert!(lines[0].contains(&db.display().to_string()), "{err}");
        assert!(words.iter().any(|w| lines[0].contains(w)), "{err}");
    }
}

/// A stored column the builder never writes is an error where the catalog is read back, not a
/// default: an icon with data but no media type (`render`), and a bundle in no channel
/// (`upgrade`).
#[test]
fn a_bad_column_is_an_error_not_a_default() {
    let tmp = tempfile::tempdir().unwrap();
    let good = build_db(tmp.path(), "good.db");
    let damage = |name: &str, sql: &str| {
        let db = tmp.path().join(name);
        std::fs::copy(&good, &db).unwrap();
        let c = rusqlite::Connection::open(&db).unwrap();
        assert!(c.execute(sql, []).unwrap() > 0, "{sql}");
        db
    };
    let no_mediatype = damage(
        "no-mediatype.db",
        "UPDATE package SET icon_data = 'aGk=', icon_mediatype = NULL WHERE name = 'etcd'",
    );
    let (code, _, err) = opreg(&["render", no_mediatype.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("icon_mediatype"), "{err}");

    let no_channel = damage(
        "no-channel.db",
        "DELETE FROM channel_entry WHERE package = 'etcd' AND bundle = 'etcdoperator.v0.9.0'",
    );
    let (code, _, err) = opreg(&[
        "upgrade",
        no_channel.to_str().unwrap(),
        "-p",
        "etcd",
        "--from",
        "etcdoperator.v0.9.0",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is in no channel"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
