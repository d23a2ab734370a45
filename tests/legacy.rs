//! Legacy SQLite indexes: the upstream schema-5 fixture read back completely (checked against
//! direct SQL on it), served over gRPC, round-tripped through render and ingest, fixtures at
//! every other schema version built by applying the documented migrations, deprecations, and
//! the refusal of SQLite files that are not indexes.

use crate::common;
use crate::legacy_support;

use common::{opreg, Server};
use legacy_support::*;
use opreg::api::registry_client::RegistryClient;
use opreg::api::{GetPackageRequest, ListBundlesRequest, ListPackageRequest};
use opreg::model::{prop, Catalog, Channel};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn load(path: &Path) -> (Catalog, Vec<opreg::diag::Diagnostic>) {
    let mut warnings = Vec::new();
    let cat = opreg::source::load_sources(&[path.to_path_buf()], &mut warnings)
        .unwrap_or_else(|e| panic!("{} does not load: {:?}", path.display(), e.0));
    (cat, warnings)
}

fn strings(conn: &Connection, sql: &str, params: &[&str]) -> Vec<Vec<String>> {
    let mut st = conn.prepare(sql).unwrap();
    let n = st.column_count();
    let rows = st
        .query_map(rusqlite::params_from_iter(params.iter()), |r| {
            (0..n)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => String::new(),
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                        rusqlite::types::ValueRef::Real(f) => f.to_string(),
                    })
                })
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

fn set<T: Ord>(it: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    it.into_iter().collect()
}

fn channel<'a>(cat: &'a Catalog, pkg: &str, ch: &str) -> &'a Channel {
    &cat.packages[pkg].channels[ch]
}

fn gvk_text(g: &str, v: &str, k: &str) -> String {
    opreg::json::canonical(&serde_json::json!({"group": g, "kind": k, "version": v}))
}

#[test]
fn fixture_contents_come_through_completely() {
    let fixture = legacy_fixture();
    let db = open_ro(&fixture);
    let (cat, warnings) = load(&fixture);
    assert!(warnings.is_empty(), "clean fixture warns: {warnings:?}");

    // Packages and default channels.
    let pkgs = strings(&db, "SELECT name, default_channel FROM package", &[]);
    assert_eq!(
        set(pkgs.iter().map(|r| (r[0].clone(), r[1].clone()))),
        set(cat
            .packages
            .values()
            .map(|p| (p.name.clone(), p.default_channel.clone())))
    );

    // Channels and their stored heads, which must be the heads FBC computes.
    let chans = strings(
        &db,
        "SELECT package_name, name, head_operatorbundle_name FROM channel",
        &[],
    );
    let model_chans: BTreeSet<(String, String)> = cat
        .packages
        .values()
        .flat_map(|p| p.channels.keys().map(|c| (p.name.clone(), c.clone())))
        .collect();
    assert_eq!(
        set(chans.iter().map(|r| (r[0].clone(), r[1].clone()))),
        model_chans
    );
    for r in &chans {
        let ch = channel(&cat, &r[0], &r[1]);
        assert_eq!(
            opreg::graph::channel_head(ch),
            opreg::graph::Head::One(r[2].as_str()),
            "{}/{}",
            r[0],
            r[1]
        );
        // Members: the real bundles of the channel's entries; synthetic names are not entries.
        let members = strings(
            &db,
            "SELECT DISTINCT e.operatorbundle_name FROM channel_entry e
             JOIN operatorbundle b ON b.name = e.operatorbundle_name
             WHERE e.package_name = ?1 AND e.channel_name = ?2",
            &[&r[0], &r[1]],
        );
        assert_eq!(
            set(members.into_iter().map(|m| m[0].clone())),
            set(ch.entries.iter().map(|e| e.name.clone()))
        );
        // Edges, classified by depth independently of the reader: a pointer to an entry at the
        // same depth is the skip pattern of a materialized walk, a pointer deeper down is replaces.
        let pairs = |cmp: &str| {
            set(strings(
                &db,
                &format!(
                    "SELECT a.operatorbundle_name, b.operatorbundle_name FROM channel_entry a
                     JOIN channel_entry b ON a.replaces = b.entry_id
                     WHERE a.package_name = ?1 AND a.channel_name = ?2 AND b.depth {cmp} a.depth"
                ),
                &[&r[0], &r[1]],
            )
            .into_iter()
            .map(|p| (p[0].clone(), p[1].clone())))
        };
        let model_replaces = set(ch
            .entries
            .iter()
            .filter(|e| !e.replaces.is_empty())
            .map(|e| (e.name.clone(), e.replaces.clone())));
        let model_skips = set(ch
            .entries
            .iter()
            .flat_map(|e| e.skips.iter().map(|s| (e.name.clone(), s.clone()))));
        assert_eq!(pairs(">"), model_replaces, "{}/{} replaces", r[0], r[1]);
        assert_eq!(pairs("="), model_skips, "{}/{} skips", r[0], r[1]);
    }

    // Bundles: every operatorbundle row, with its columns.
    let rows = strings(
        &db,
        "SELECT name, bundlepath, version, skiprange, bundle FROM operatorbundle",
        &[],
    );
    assert_eq!(rows.len(), cat.bundle_count());
    for r in &rows {
        let pkg = &strings(
            &db,
            "SELECT DISTINCT package_name FROM channel_entry WHERE operatorbundle_name = ?1",
            &[&r[0]],
        )[0][0];
        let b = &cat.packages[pkg].bundles[&r[0]];
        assert_eq!(b.image, r[1]);
        assert_eq!(b.version(), r[2]);
        for ch in cat.packages[pkg].channels.values() {
            if let Some(e) = ch.entries.iter().find(|e| e.name == r[0]) {
                assert_eq!(e.skip_range, r[3], "{} skipRange", r[0]);
            }
        }
        let provided = strings(
            &db,
            "SELECT DISTINCT a.group_name, a.version, a.kind FROM api_provider a
             JOIN channel_entry e ON e.entry_id = a.channel_entry_id WHERE e.operatorbundle_name = ?1",
            &[&r[0]],
        );
        assert_eq!(
            set(provided.iter().map(|g| gvk_text(&g[0], &g[1], &g[2]))),
            set(b.properties_of(prop::GVK).map(|p| p.value.clone())),
            "{} provided",
            r[0]
        );
        let required = strings(
            &db,
            "SELECT DISTINCT a.group_name, a.version, a.kind FROM api_requirer a
             JOIN channel_entry e ON e.entry_id = a.channel_entry_id WHERE e.operatorbundle_name = ?1",
            &[&r[0]],
        );
        assert_eq!(
            set(required.iter().map(|g| gvk_text(&g[0], &g[1], &g[2]))),
            set(b.properties_of(prop::GVK_REQUIRED).map(|p| p.value.clone())),
            "{} required",
            r[0]
        );
        let images = strings(
            &db,
            "SELECT image FROM related_image WHERE operatorbundle_name = ?1",
            &[&r[0]],
        );
        assert_eq!(
            set(images.into_iter().map(|i| i[0].clone())),
            set(b.related_images.iter().map(|i| i.image.clone()))
        );
        // Objects: each JSON value of the bundle column, in base64.
        let stored: BTreeSet<String> = serde_json::Deserializer::from_str(&r[4])
            .into_iter::<Value>()
            .map(|v| opreg::json::canonical(&v.unwrap()))
            .collect();
        let objects: BTreeSet<String> = b
            .properties_of(prop::BUNDLE_OBJECT)
            .map(|p| {
                use base64::Engine;
                let v: Value = serde_json::from_str(&p.value).unwrap();
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(v["data"].as_str().unwrap())
                    .unwrap();
                // Kept as upstream encodes manifests (`<`, `>`, `&` escaped): compared as JSON.
                opreg::json::canonical(&serde_json::from_slice::<Value>(&raw).unwrap())
            })
            .collect();
        assert!(!stored.is_empty());
        assert_eq!(stored, objects, "{} objects", r[0]);
    }
    eprintln!(
        "fixture: {} packages, {} channels, {} bundles, {} entries, {} channel_entry rows",
        cat.packages.len(),
        chans.len(),
        cat.bundle_count(),
        cat.entry_count(),
        strings(&db, "SELECT COUNT(*) FROM channel_entry", &[])[0][0]
    );
}

#[test]
fn etcd_skips_come_through_as_skips_not_replaces() {
    let (cat, _) = load(&legacy_fixture());
    let etcd = &cat.packages["etcd"];
    assert!(!etcd.bundles.contains_key("etcdoperator.v0.9.1"));
    for ch in ["alpha", "stable"] {
        let c = channel(&cat, "etcd", ch);
        let head = c
            .entries
            .iter()
            .find(|e| e.name == "etcdoperator.v0.9.2")
            .unwrap();
        assert_eq!(head.replaces, "etcdoperator.v0.9.0");
        assert_eq!(head.skips, vec!["etcdoperator.v0.9.1".to_string()]);
        assert!(c.entries.iter().all(|e| e.name != "etcdoperator.v0.9.1"));
        assert!(c
            .entries
            .iter()
            .all(|e| e.replaces != "etcdoperator.v0.9.1"));
        // Exactly one entry per real bundle, although the walk wrote 0.9.2 twice.
        assert_eq!(c.entries.len(), 3);
    }
}

#[test]
fn serving_the_legacy_fixture_answers_from_its_tables() {
    let fixture = legacy_fixture();
    let before = digest(&fixture);
    let db = open_ro(&fixture);
    let server = Server::start(&[fixture.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = RegistryClient::connect(server.addr()).await.unwrap();

        let mut names = BTreeSet::new();
        let mut s = c
            .list_packages(ListPackageRequest {})
            .await
            .unwrap()
            .into_inner();
        while let Some(p) = s.message().await.unwrap() {
            names.insert(p.name);
        }
        let want = set(strings(&db, "SELECT DISTINCT name FROM package", &[])
            .into_iter()
            .map(|r| r[0].clone()));
        assert_eq!(names, want);

        for name in &want {
            let p = c
                .get_package(GetPackageRequest { name: name.clone() })
                .await
                .unwrap()
                .into_inner();
            let default = &strings(
                &db,
                "SELECT default_channel FROM package WHERE name = ?1",
                &[name],
            )[0][0];
            assert_eq!(&p.default_channel_name, default);
            let chans = strings(
                &db,
                "SELECT name, head_operatorbundle_name FROM channel WHERE package_name = ?1",
                &[name],
            );
            assert_eq!(
                set(p
                    .channels
                    .iter()
                    .map(|c| (c.name.clone(), c.csv_name.clone()))),
                set(chans.into_iter().map(|r| (r[0].clone(), r[1].clone())))
            );
        }

        let mut got = BTreeMap::new();
        let mut s = c
            .list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        while let Some(b) = s.message().await.unwrap() {
            got.insert(
                (
                    b.package_name.clone(),
                    b.channel_name.clone(),
                    b.csv_name.clone(),
                ),
                b,
            );
        }
        let rows = strings(
            &db,
            "SELECT DISTINCT e.package_name, e.channel_name, b.name, b.version, b.bundlepath,
                    COALESCE(b.skiprange, '')
             FROM channel_entry e JOIN operatorbundle b ON b.name = e.operatorbundle_name",
            &[],
        );
        assert_eq!(
            set(got.keys().cloned()),
            set(rows
                .iter()
                .map(|r| (r[0].clone(), r[1].clone(), r[2].clone())))
        );
        for r in &rows {
            let b = &got[&(r[0].clone(), r[1].clone(), r[2].clone())];
            assert_eq!(b.version, r[3]);
            assert_eq!(b.bundle_path, r[4]);
            assert_eq!(b.skip_range, r[5]);
            let provided = strings(
                &db,
                "SELECT DISTINCT a.group_name, a.version, a.kind FROM api_provider a
                 JOIN channel_entry e ON e.entry_id = a.channel_entry_id
                 WHERE e.operatorbundle_name = ?1",
                &[&r[2]],
            );
            assert_eq!(
                set(b.provided_apis.iter().map(|g| (
                    g.group.clone(),
                    g.version.clone(),
                    g.kind.clone()
                ))),
                set(provided
                    .into_iter()
                    .map(|g| (g[0].clone(), g[1].clone(), g[2].clone())))
            );
        }
        for ch in ["alpha", "stable"] {
            let head = &got[&(
                "etcd".to_string(),
                ch.to_string(),
                "etcdoperator.v0.9.2".to_string(),
            )];
            assert_eq!(head.replaces, "etcdoperator.v0.9.0");
            assert_eq!(head.skips, vec!["etcdoperator.v0.9.1".to_string()]);
        }
        assert!(got.keys().all(|k| k.2 != "etcdoperator.v0.9.1"));
    });
    drop(server);
    assert_eq!(digest(&fixture), before, "serving modified the fixture");
}

#[test]
fn legacy_render_ingest_render_is_stable() {
    let fixture = legacy_fixture();
    let before = digest(&fixture);
    let dir = tempfile::tempdir().unwrap();
    let f = fixture.to_str().unwrap();
    let (code, _, err) = opreg(&["validate", f]);
    assert_eq!(code, 0, "{err}");
    let (code, first, err) = opreg(&["render", f]);
    assert_eq!(code, 0, "{err}");
    let fbc = dir.path().join("catalog.json");
    std::fs::write(&fbc, &first).unwrap();
    let db = dir.path().join("out.db");
    let (code, _, err) = opreg(&["ingest", fbc.to_str().unwrap(), "-o", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, second, err) = opreg(&["render", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(first, second);
    // Ingesting the index itself gives the same catalog too.
    let db2 = dir.path().join("direct.db");
    let (code, _, err) = opreg(&["ingest", f, "-o", db2.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, third, _) = opreg(&["render", db2.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(first, third);
    assert_eq!(digest(&fixture), before, "reading modified the fixture");
}

/// What every schema version must agree on.
fn core(cat: &Catalog, with_required: bool) -> Vec<String> {
    let mut out = Vec::new();
    for p in cat.packages.values() {
        out.push(format!("package {} default {}", p.name, p.default_channel));
        for c in p.channels.values() {
            for e in &c.entries {
                out.push(format!(
                    "entry {}/{} {} replaces {:?} skips {:?} range {:?}",
                    p.name, c.name, e.name, e.replaces, e.skips, e.skip_range
                ));
            }
        }
        for b in p.bundles.values() {
            let props = |ty| {
                let mut v: Vec<&str> = b.properties_of(ty).map(|p| p.value.as_str()).collect();
                v.sort();
                v.join(" ")
            };
            out.push(format!(
                "bundle {} {} package {} gvk {} objects {}",
                p.name,
                b.name,
                props(prop::PACKAGE),
                props(prop::GVK),
                props(prop::BUNDLE_OBJECT)
            ));
            if with_required {
                out.push(format!("required {} {}", b.name, props(prop::GVK_REQUIRED)));
            }
        }
    }
    out
}

#[test]
fn every_schema_version_reads_back_the_same_catalog() {
    let (want, _) = load(&legacy_fixture());
    let dir = tempfile::tempdir().unwrap();
    let mut built: Vec<(i64, std::path::PathBuf)> = (0..=13)
        .filter(|v| *v != 5)
        .map(|v| (v, index_at_version(dir.path(), v)))
        .collect();
    built.push((13, index_from_v0(dir.path(), 13)));
    for (v, path) in built {
        let before = digest(&path);
        let conn = open_ro(&path);
        assert_eq!(
            opreg::catalog::legacy::schema_version(&conn, &path).unwrap(),
            v
        );
        drop(conn);
        let (got, warnings) = load(&path);
        assert_eq!(
            core(&got, v >= 3),
            core(&want, v >= 3),
            "schema {v} ({})",
            path.display()
        );
        let from_v0 = path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("index-from-v0");
        for (name, p) in &want.packages {
            for (b, wb) in &p.bundles {
                let image = &got.packages[name].bundles[b].image;
                if v > 5 && !from_v0 {
                    assert_eq!(image, &wb.image, "schema {v}");
                } else {
                    // Built from version 0, which has no bundlepath.
                    assert_eq!(image, "", "schema {v}");
                }
            }
        }
        // Chains that went through migration 5 carry its nameless rows; that is said.
        assert_eq!(
            warnings.iter().any(|w| w.message.contains("migration 5")),
            from_v0 && v >= 5,
            "schema {v}: {warnings:?}"
        );
        // The rendered FBC of every version is valid.
        let (code, _, err) = opreg(&["validate", path.to_str().unwrap()]);
        assert_eq!(code, 0, "schema {v}: {err}");
        assert_eq!(digest(&path), before, "reading modified schema {v}");
    }
}

#[test]
fn deprecated_bundles_become_olm_deprecations() {
    let dir = tempfile::tempdir().unwrap();
    let path = index_at_version(dir.path(), 11);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO properties(type, value, operatorbundle_name, operatorbundle_version, operatorbundle_path)
                 SELECT 'olm.deprecated', '{}', name, version, bundlepath FROM operatorbundle
                 WHERE name = 'etcdoperator.v0.6.1';
             INSERT INTO properties(type, value, operatorbundle_name)
                 VALUES ('olm.deprecated', '{}', 'gone.v1.0.0');",
        )
        .unwrap();
        migrate(&conn, 11, 12);
    }
    for v in [12, 13] {
        if v == 13 {
            let conn = Connection::open(&path).unwrap();
            let dangling = |c: &Connection| {
                c.query_row(
                    "SELECT COUNT(*) FROM deprecated WHERE operatorbundle_name = 'gone.v1.0.0'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
            };
            assert_eq!(dangling(&conn), 1);
            migrate(&conn, 12, 13);
            assert_eq!(dangling(&conn), 0);
        }
        let (cat, _) = load(&path);
        let deps = cat.packages["etcd"]
            .deprecations
            .as_ref()
            .expect("etcd deprecations");
        assert_eq!(deps.entries.len(), 1, "schema {v}");
        assert_eq!(deps.entries[0].schema, "olm.bundle");
        assert_eq!(deps.entries[0].name, "etcdoperator.v0.6.1");
        assert!(!deps.entries[0].message.is_empty());
        let b = &cat.packages["etcd"].bundles["etcdoperator.v0.6.1"];
        assert!(b.properties_of("olm.deprecated").next().is_none());
        for other in ["prometheus", "strimzi-kafka-operator"] {
            assert!(cat.packages[other].deprecations.is_none());
        }
        let (code, out, err) = opreg(&["render", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(common::json_lines(&out).contains(r#""schema":"olm.deprecations""#));
    }
}

#[test]
fn sqlite_files_that_are_not_indexes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.db");
    Connection::open(&plain)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
        .unwrap();
    for cmd in ["render", "validate"] {
        let (code, out, err) = opreg(&[cmd, plain.to_str().unwrap()]);
        assert_eq!(code, 1, "{cmd}");
        assert!(out.is_empty());
        assert!(
            err.contains("not an operator-registry index") && err.contains("schema_migrations"),
            "{err}"
        );
    }
    let future = dir.path().join("future.db");
    Connection::open(&future)
        .unwrap()
        .execute_batch(
            "CREATE TABLE schema_migrations (version bigint NOT NULL, timestamp DATETIME);
             INSERT INTO schema_migrations(version) VALUES (42);",
        )
        .unwrap();
    let (code, _, err) = opreg(&["render", future.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown index schema version 42"), "{err}");
    // A schema that claims version 9 without the tables version 9 has.
    let hollow = dir.path().join("hollow.db");
    Connection::open(&hollow)
        .unwrap()
        .execute_batch(
            "CREATE TABLE schema_migrations (version bigint NOT NULL, timestamp DATETIME);
             INSERT INTO schema_migrations(version) VALUES (9);",
        )
        .unwrap();
    let (code, _, err) = opreg(&["render", hollow.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("should have table"), "{err}");
}
