//! Helpers for the legacy-index and graph tests (the binary and servers come from `common`): the upstream fixtures, a
//! served index, and legacy index databases at other schema versions.
//!
//! The upstream fixture `../shared/testdata/legacy-index/bundles.db` is at schema version 5 and
//! is only ever opened read-only here. Other versions are built in temporary directories by
//! applying upstream's documented schema migrations, written from that description:
//! version 0 is reconstructed from the fixture's version-0 columns, then migrations 1–5 are
//! applied to it (including migration 5's backfill quirk, which inserts nameless rows); versions
//! 6–13 are reached by migrating a temporary copy of the fixture.
#![allow(dead_code)]

use rusqlite::{params, Connection, OpenFlags};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The upstream schema-5 index.
pub fn legacy_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/legacy-index/bundles.db")
}

/// The upstream etcd package-manifest directory.
pub fn etcd_manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/upstream-manifests/etcd")
}

/// Opens a database read-only and immutable, for direct SQL checks that cannot modify it.
pub fn open_ro(path: &Path) -> Connection {
    Connection::open_with_flags(
        format!("file:{}?immutable=1", path.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open read-only")
}

/// SHA-256 of a file, to prove reading leaves it untouched.
pub fn digest(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()))
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A legacy index at `version` (0–13) built from version 0 by applying every migration,
/// including migration 5's nameless-row quirk, whatever the target version.
pub fn index_from_v0(dir: &Path, version: i64) -> PathBuf {
    let path = dir.join(format!("index-from-v0-v{version}.db"));
    let _ = std::fs::remove_file(&path);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
    create_v0_from_fixture(&conn);
    migrate(&conn, 0, version);
    path
}

/// A legacy index at `version` (0–13) in `dir`, built from the upstream fixture's data: from
/// version 0 for versions below 5, from a copy of the fixture for 5 and above.
pub fn index_at_version(dir: &Path, version: i64) -> PathBuf {
    let path = dir.join(format!("index-v{version}.db"));
    let _ = std::fs::remove_file(&path);
    if version < 5 {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        create_v0_from_fixture(&conn);
        migrate(&conn, 0, version);
    } else {
        open_ro(&legacy_fixture())
            .execute("VACUUM INTO ?1", [path.to_string_lossy()])
            .expect("copy the fixture into the temporary directory");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        migrate(&conn, 5, version);
    }
    path
}

/// Migration 0's tables, filled with the fixture's version-0 columns.
fn create_v0_from_fixture(conn: &Connection) {
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version bigint NOT NULL, timestamp DATETIME DEFAULT CURRENT_TIMESTAMP);
         CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT UNIQUE, bundle TEXT);
         CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT,
             FOREIGN KEY(name, default_channel) REFERENCES channel(package_name, name));
         CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT,
             PRIMARY KEY(name, package_name),
             FOREIGN KEY(package_name) REFERENCES package(name),
             FOREIGN KEY(head_operatorbundle_name) REFERENCES operatorbundle(name));
         CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT,
             operatorbundle_name TEXT,
             replaces INTEGER REFERENCES channel_entry(entry_id) DEFERRABLE INITIALLY DEFERRED,
             depth INTEGER,
             FOREIGN KEY(channel_name, package_name) REFERENCES channel(name, package_name));
         CREATE TABLE api (group_name TEXT, version TEXT, kind TEXT, plural TEXT NOT NULL,
             PRIMARY KEY(group_name, version, kind));
         CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, channel_entry_id INTEGER,
             FOREIGN KEY(channel_entry_id) REFERENCES channel_entry(entry_id),
             FOREIGN KEY(group_name, version, kind) REFERENCES api(group_name, version, kind));
         INSERT INTO schema_migrations(version) VALUES (0);",
    )
    .unwrap();
    let src = open_ro(&legacy_fixture());
    let copy = |select: &str, insert: &str, n: usize| {
        let mut st = src.prepare(select).unwrap();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let vals: Vec<rusqlite::types::Value> = (0..n).map(|i| r.get(i).unwrap()).collect();
            conn.execute(insert, rusqlite::params_from_iter(vals))
                .unwrap();
        }
    };
    copy(
        "SELECT name, csv, bundle FROM operatorbundle",
        "INSERT INTO operatorbundle VALUES (?1, ?2, ?3)",
        3,
    );
    copy(
        "SELECT name, default_channel FROM package",
        "INSERT INTO package VALUES (?1, ?2)",
        2,
    );
    copy(
        "SELECT name, package_name, head_operatorbundle_name FROM channel",
        "INSERT INTO channel VALUES (?1, ?2, ?3)",
        3,
    );
    copy(
        "SELECT entry_id, channel_name, package_name, operatorbundle_name, replaces, depth FROM channel_entry",
        "INSERT INTO channel_entry VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        6,
    );
    copy(
        "SELECT group_name, version, kind, plural FROM api",
        "INSERT INTO api VALUES (?1, ?2, ?3, ?4)",
        4,
    );
    copy(
        "SELECT group_name, version, kind, channel_entry_id FROM api_provider",
        "INSERT INTO api_provider VALUES (?1, ?2, ?3, ?4)",
        4,
    );
}

/// Every bundle's CSV, decoded (the column may hold TEXT or BLOB).
fn csvs(conn: &Connection) -> Vec<(String, Value)> {
    let mut st = conn
        .prepare("SELECT name, CAST(csv AS TEXT) FROM operatorbundle WHERE name IS NOT NULL")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .unwrap();
    rows.filter_map(|r| {
        let (n, c) = r.unwrap();
        c.and_then(|c| serde_json::from_str(&c).ok())
            .map(|v| (n, v))
    })
    .collect()
}

fn strs<'a>(v: &'a Value, ptr: &str) -> Vec<&'a Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Applies migrations `from+1 ..= to`, one transaction each.
pub fn migrate(conn: &Connection, from: i64, to: i64) {
    for id in from + 1..=to {
        conn.execute_batch("BEGIN").unwrap();
        apply(conn, id);
        conn.execute("UPDATE schema_migrations SET version = ?1", [id])
            .unwrap();
        conn.execute_batch("COMMIT").unwrap();
    }
}

fn apply(conn: &Connection, id: i64) {
    match id {
        1 => {
            // related_image, backfilled with the operator images and relatedImages of each CSV.
            conn.execute_batch(
                "CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT,
                     FOREIGN KEY(operatorbundle_name) REFERENCES operatorbundle(name));",
            )
            .unwrap();
            for (name, csv) in csvs(conn) {
                let mut images = Vec::new();
                for d in strs(&csv, "/spec/install/spec/deployments") {
                    for key in ["initContainers", "containers"] {
                        for c in strs(d, &format!("/spec/template/spec/{key}")) {
                            images.push(s(c, "image").to_string());
                        }
                    }
                }
                for r in strs(&csv, "/spec/relatedImages") {
                    images.push(s(r, "image").to_string());
                }
                for i in images.into_iter().filter(|i| !i.is_empty()) {
                    conn.execute("INSERT INTO related_image VALUES (?1, ?2)", params![i, name])
                        .unwrap();
                }
            }
        }
        2 => conn
            .execute_batch("ALTER TABLE operatorbundle ADD COLUMN bundlepath TEXT;")
            .unwrap(),
        3 => {
            // api_requirer, backfilled per channel entry from CSV required CRDs and APIServices.
            conn.execute_batch(
                "CREATE TABLE api_requirer (group_name TEXT, version TEXT, kind TEXT, channel_entry_id INTEGER,
                     FOREIGN KEY(channel_entry_id) REFERENCES channel_entry(entry_id),
                     FOREIGN KEY(group_name, version, kind) REFERENCES api(group_name, version, kind));",
            )
            .unwrap();
            for (name, csv) in csvs(conn) {
                let mut gvks = Vec::new();
                for r in strs(&csv, "/spec/customresourcedefinitions/required") {
                    let (plural, group) = s(r, "name").split_once('.').unwrap_or(("", ""));
                    gvks.push((group.to_string(), s(r, "version").to_string(), s(r, "kind").to_string(), plural.to_string()));
                }
                for a in strs(&csv, "/spec/apiservicedefinitions/required") {
                    gvks.push((s(a, "group").into(), s(a, "version").into(), s(a, "kind").into(), s(a, "name").into()));
                }
                for (g, v, k, plural) in gvks {
                    conn.execute(
                        "INSERT OR IGNORE INTO api VALUES (?1, ?2, ?3, ?4)",
                        params![g, v, k, plural],
                    )
                    .unwrap();
                    conn.execute(
                        "INSERT INTO api_requirer SELECT ?1, ?2, ?3, entry_id FROM channel_entry WHERE operatorbundle_name = ?4",
                        params![g, v, k, name],
                    )
                    .unwrap();
                }
            }
        }
        4 => {
            // Rebuild with cascading foreign keys; csv loses UNIQUE, channel loses its package FK,
            // and the API link tables get (g, v, k, channel_entry_id) primary keys.
            conn.execute_batch(
                "CREATE TABLE operatorbundle_new (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT);
                 INSERT INTO operatorbundle_new SELECT name, csv, bundle, bundlepath FROM operatorbundle;
                 DROP TABLE operatorbundle;
                 ALTER TABLE operatorbundle_new RENAME TO operatorbundle;
                 CREATE TABLE channel_new (name TEXT, package_name TEXT, head_operatorbundle_name TEXT,
                     PRIMARY KEY(name, package_name),
                     FOREIGN KEY(head_operatorbundle_name) REFERENCES operatorbundle(name) ON DELETE CASCADE);
                 INSERT INTO channel_new SELECT * FROM channel;
                 DROP TABLE channel;
                 ALTER TABLE channel_new RENAME TO channel;
                 CREATE TABLE api_provider_new (group_name TEXT, version TEXT, kind TEXT, channel_entry_id INTEGER,
                     PRIMARY KEY(group_name, version, kind, channel_entry_id),
                     FOREIGN KEY(channel_entry_id) REFERENCES channel_entry(entry_id) ON DELETE CASCADE);
                 INSERT OR IGNORE INTO api_provider_new SELECT * FROM api_provider;
                 DROP TABLE api_provider;
                 ALTER TABLE api_provider_new RENAME TO api_provider;
                 CREATE TABLE api_requirer_new (group_name TEXT, version TEXT, kind TEXT, channel_entry_id INTEGER,
                     PRIMARY KEY(group_name, version, kind, channel_entry_id),
                     FOREIGN KEY(channel_entry_id) REFERENCES channel_entry(entry_id) ON DELETE CASCADE);
                 INSERT OR IGNORE INTO api_requirer_new SELECT * FROM api_requirer;
                 DROP TABLE api_requirer;
                 ALTER TABLE api_requirer_new RENAME TO api_requirer;",
            )
            .unwrap();
        }
        5 => {
            // version and skiprange; the backfill *inserts* new, nameless rows (upstream quirk).
            conn.execute_batch(
                "ALTER TABLE operatorbundle ADD COLUMN skiprange TEXT;
                 ALTER TABLE operatorbundle ADD COLUMN version TEXT;",
            )
            .unwrap();
            for (_, csv) in csvs(conn) {
                let version = s(csv.pointer("/spec").unwrap_or(&Value::Null), "version").to_string();
                let range = csv
                    .pointer("/metadata/annotations/olm.skipRange")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                conn.execute(
                    "INSERT INTO operatorbundle(version, skiprange) VALUES (?1, ?2)",
                    params![version, range],
                )
                .unwrap();
            }
        }
        6 => {
            // API links re-keyed from channel entries to (bundle name, version, path).
            conn.execute_batch(
                "CREATE TABLE api_provider_new (group_name TEXT, version TEXT, kind TEXT,
                     operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT,
                     FOREIGN KEY(operatorbundle_name, operatorbundle_version, operatorbundle_path)
                         REFERENCES operatorbundle(name, version, bundlepath) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED);
                 INSERT INTO api_provider_new
                     SELECT DISTINCT a.group_name, a.version, a.kind, b.name, b.version, b.bundlepath
                     FROM api_provider a JOIN channel_entry e ON a.channel_entry_id = e.entry_id
                     JOIN operatorbundle b ON b.name = e.operatorbundle_name;
                 DROP TABLE api_provider;
                 ALTER TABLE api_provider_new RENAME TO api_provider;
                 CREATE TABLE api_requirer_new (group_name TEXT, version TEXT, kind TEXT,
                     operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT,
                     FOREIGN KEY(operatorbundle_name, operatorbundle_version, operatorbundle_path)
                         REFERENCES operatorbundle(name, version, bundlepath) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED);
                 INSERT INTO api_requirer_new
                     SELECT DISTINCT a.group_name, a.version, a.kind, b.name, b.version, b.bundlepath
                     FROM api_requirer a JOIN channel_entry e ON a.channel_entry_id = e.entry_id
                     JOIN operatorbundle b ON b.name = e.operatorbundle_name;
                 DROP TABLE api_requirer;
                 ALTER TABLE api_requirer_new RENAME TO api_requirer;
                 CREATE UNIQUE INDEX pk ON operatorbundle(name, version, bundlepath);",
            )
            .unwrap();
        }
        7 => {
            // replaces/skips columns, backfilled from the bundle's entries in depth order: the
            // first target is replaces, the rest are skips.
            conn.execute_batch(
                "ALTER TABLE operatorbundle ADD COLUMN replaces TEXT;
                 ALTER TABLE operatorbundle ADD COLUMN skips TEXT;",
            )
            .unwrap();
            let names: Vec<String> = {
                let mut st = conn
                    .prepare("SELECT name FROM operatorbundle WHERE name IS NOT NULL")
                    .unwrap();
                let rows = st.query_map([], |r| r.get(0)).unwrap();
                rows.map(Result::unwrap).collect()
            };
            for n in names {
                let mut st = conn
                    .prepare(
                        "SELECT t.operatorbundle_name FROM channel_entry e
                         JOIN channel_entry t ON e.replaces = t.entry_id
                         WHERE e.operatorbundle_name = ?1 ORDER BY e.depth, e.entry_id",
                    )
                    .unwrap();
                let mut targets: Vec<String> = Vec::new();
                for t in st.query_map([&n], |r| r.get::<_, String>(0)).unwrap() {
                    let t = t.unwrap();
                    if !targets.contains(&t) {
                        targets.push(t);
                    }
                }
                let replaces = targets.first().cloned().unwrap_or_default();
                let skips = targets.iter().skip(1).cloned().collect::<Vec<_>>().join(",");
                conn.execute(
                    "UPDATE operatorbundle SET replaces = ?1, skips = ?2 WHERE name = ?3",
                    params![replaces, skips, n],
                )
                .unwrap();
            }
        }
        8 => conn
            .execute_batch(
                "CREATE TABLE dependencies (type TEXT, value TEXT,
                     operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT,
                     FOREIGN KEY(operatorbundle_name, operatorbundle_version, operatorbundle_path)
                         REFERENCES operatorbundle(name, version, bundlepath) ON DELETE CASCADE);
                 INSERT INTO dependencies
                     SELECT 'olm.gvk',
                            json_object('type', 'olm.gvk', 'group', group_name, 'kind', kind, 'version', version),
                            operatorbundle_name, operatorbundle_version, operatorbundle_path
                     FROM api_requirer;",
            )
            .unwrap(),
        9 => conn
            .execute_batch(
                "CREATE TABLE properties (type TEXT, value TEXT,
                     operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT,
                     FOREIGN KEY(operatorbundle_name, operatorbundle_version, operatorbundle_path)
                         REFERENCES operatorbundle(name, version, bundlepath) ON DELETE CASCADE);
                 INSERT INTO properties
                     SELECT DISTINCT 'olm.package',
                            json_object('packageName', e.package_name, 'version', b.version),
                            b.name, b.version, b.bundlepath
                     FROM operatorbundle b JOIN channel_entry e ON e.operatorbundle_name = b.name;
                 INSERT INTO properties
                     SELECT 'olm.gvk', json_object('group', group_name, 'kind', kind, 'version', version),
                            operatorbundle_name, operatorbundle_version, operatorbundle_path
                     FROM api_provider;
                 -- The quirk: the subquery is not correlated with the row being updated.
                 UPDATE dependencies SET value =
                     (SELECT json_remove(value, '$.type') FROM dependencies WHERE type = 'olm.gvk')
                 WHERE type = 'olm.gvk';",
            )
            .unwrap(),
        10 => conn
            .execute_batch(
                "UPDATE properties SET operatorbundle_path =
                     (SELECT bundlepath FROM operatorbundle WHERE name = properties.operatorbundle_name);",
            )
            .unwrap(),
        11 => conn
            .execute_batch("ALTER TABLE operatorbundle ADD COLUMN substitutesfor TEXT;")
            .unwrap(),
        12 => conn
            .execute_batch(
                "CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY);
                 INSERT OR IGNORE INTO deprecated
                     SELECT operatorbundle_name FROM properties WHERE type = 'olm.deprecated';",
            )
            .unwrap(),
        13 => conn
            .execute_batch(
                "DELETE FROM deprecated
                 WHERE operatorbundle_name NOT IN (SELECT name FROM operatorbundle WHERE name IS NOT NULL);",
            )
            .unwrap(),
        other => panic!("no migration {other}"),
    }
}
