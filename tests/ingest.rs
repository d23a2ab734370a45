//! `opreg ingest`, `validate` and `render` end to end: the upstream manifests, every
//! validation rule, a failed ingest leaving the output untouched, and render stability (kill -9
//! during ingest: tests/crash.rs).

use crate::common;
use common::*;
use rusqlite::Connection;
use std::path::Path;

fn ingest_upstream(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("up.db");
    ingest_ok(&shared("upstream-manifests"), &db);
    db
}

fn rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    let c = Connection::open(db).unwrap();
    let mut st = c.prepare(sql).unwrap();
    let n = st.column_count();
    st.query_map([], |r| {
        (0..n)
            .map(|i| {
                r.get::<_, rusqlite::types::Value>(i).map(|v| match v {
                    rusqlite::types::Value::Text(s) => s,
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    other => format!("{other:?}"),
                })
            })
            .collect()
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn upstream_manifests_packages_channels_and_heads() {
    let tmp = tempfile::tempdir().unwrap();
    let db = ingest_upstream(tmp.path());
    let got = rows(&db, "SELECT c.package, c.name, c.head, p.default_channel FROM channel c JOIN package p ON p.name = c.package ORDER BY 1, 2");
    let want = [
        ["etcd", "alpha", "etcdoperator.v0.9.2", "alpha"],
        ["etcd", "beta", "etcdoperator.v0.9.0", "alpha"],
        ["etcd", "stable", "etcdoperator.v0.9.2", "alpha"],
        [
            "prometheus",
            "preview",
            "prometheusoperator.0.22.2",
            "preview",
        ],
        [
            "strimzi-kafka-operator",
            "alpha",
            "strimzi-cluster-operator.v0.12.2",
            "stable",
        ],
        [
            "strimzi-kafka-operator",
            "beta",
            "strimzi-cluster-operator.v0.12.1",
            "stable",
        ],
        [
            "strimzi-kafka-operator",
            "stable",
            "strimzi-cluster-operator.v0.11.1",
            "stable",
        ],
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        rows(&db, "SELECT count(*) FROM channel_entry"),
        vec![vec!["20".to_string()]]
    );
    assert_eq!(
        rows(&db, "SELECT count(*) FROM bundle"),
        vec![vec!["10".to_string()]]
    );
}

#[test]
fn etcd_alpha_edges_and_verbatim_skip_range() {
    let tmp = tempfile::tempdir().unwrap();
    let db = ingest_upstream(tmp.path());
    let edges = rows(&db, "SELECT from_bundle, to_bundle, kind, synthetic FROM edge WHERE package = 'etcd' AND channel = 'alpha' ORDER BY 1, 2");
    let e = |a: &str, b: &str, k: &str, s: &str| {
        vec![a.to_string(), b.to_string(), k.to_string(), s.to_string()]
    };
    assert_eq!(
        edges,
        vec![
            e(
                "etcdoperator.v0.9.0",
                "etcdoperator.v0.6.1",
                "replaces",
                "0"
            ),
            e(
                "etcdoperator.v0.9.2",
                "etcdoperator.v0.9.0",
                "replaces",
                "0"
            ),
            e("etcdoperator.v0.9.2", "etcdoperator.v0.9.1", "skips", "1"),
        ]
    );
    let sr = rows(&db, "SELECT skip_range FROM channel_entry WHERE package='etcd' AND channel='alpha' AND bundle='etcdoperator.v0.9.2'");
    assert_eq!(sr, vec![vec!["< 0.6.0".to_string()]]);
}

#[test]
fn render_ingest_render_is_byte_stable_on_upstream_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    for fmt in ["json", "yaml"] {
        let (c1, r1, e1) = opreg(&[
            "render",
            shared("upstream-manifests").to_str().unwrap(),
            "-o",
            fmt,
        ]);
        assert_eq!(c1, 0, "{e1}");
        let f = tmp.path().join(format!("r1.{fmt}"));
        std::fs::write(&f, &r1).unwrap();
        let db = tmp.path().join(format!("r1-{fmt}.db"));
        ingest_ok(&f, &db);
        let (c3, r2, e3) = opreg(&["render", db.to_str().unwrap(), "-o", fmt]);
        assert_eq!(c3, 0, "{e3}");
        assert!(r1 == r2, "render is not stable for {fmt}");
        assert!(r1.contains("etcdoperator.v0.9.2"));
    }
}

/// Writes `files` into a fresh directory and runs `opreg validate` on it.
fn validate_files(files: &[(&str, &str)]) -> (tempfile::TempDir, i32, String) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = tmp.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (code, _, err) = opreg(&["validate", tmp.path().to_str().unwrap()]);
    (tmp, code, err)
}

const PKG: &str = "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n";

fn bundle(name: &str, version: &str) -> String {
    format!(
        "---\nschema: olm.bundle\nname: {name}\npackage: p\nimage: example.com/{name}:latest\nproperties:\n  - type: olm.package\n    value: {{packageName: p, version: {version}}}\n"
    )
}

/// Asserts exit code 1 and a line naming the file and the rule.
fn assert_rule(files: &[(&str, &str)], file: &str, rule: &str, words: &str) {
    let (tmp, code, err) = validate_files(files);
    assert_eq!(
        code, 1,
        "expected an invalid catalog for rule {rule}; stderr:\n{err}"
    );
    let path = tmp.path().join(file);
    let line = err
        .lines()
        .find(|l| l.contains(&format!("error[{rule}]")) && l.contains(words))
        .unwrap_or_else(|| panic!("no error[{rule}] containing {words:?} in:\n{err}"));
    assert!(
        line.contains(path.to_str().unwrap()),
        "error does not name {}: {line}",
        path.display()
    );
}

#[test]
fn rule_one_channel_head() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n  - name: b.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "2.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "channel-head",
        "multiple channel heads found in graph: a.v1, b.v1",
    );
}

#[test]
fn rule_no_head_and_cycle() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n    replaces: b.v1\n  - name: b.v1\n    replaces: a.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "2.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "channel-head",
        "no channel head found in graph",
    );
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: h.v3\n    replaces: a.v1\n  - name: a.v1\n    replaces: b.v1\n  - name: b.v1\n    replaces: a.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "2.0.0"),
        bundle("h.v3", "3.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "replaces-cycle",
        "detected cycle in replaces chain of upgrade graph: a.v1 -> b.v1 -> a.v1",
    );
}

#[test]
fn rule_stranded() {
    // c.v3 replaces and skips b.v2, so the walk stops at c.v3; b.v2 is skipped (fine), but
    // a.v1, which only b.v2 replaces, is neither on the chain nor skipped.
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: c.v3\n    replaces: b.v2\n    skips: [b.v2]\n  - name: b.v2\n    replaces: a.v1\n  - name: a.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v2", "2.0.0"),
        bundle("c.v3", "3.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "stranded",
        "channel contains one or more stranded bundles: a.v1",
    );
}

#[test]
fn rule_default_channel_exists() {
    let pkg = "---\nschema: olm.package\nname: p\ndefaultChannel: nope\n";
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n";
    let text = format!("{pkg}{ch}{}", bundle("a.v1", "1.0.0"));
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "default-channel",
        "default channel \"nope\" not found in channels list",
    );
}

#[test]
fn rule_exactly_one_package_property() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n";
    let b = bundle("a.v1", "1.0.0")
        + "  - type: olm.package\n    value: {packageName: p, version: 1.0.1}\n";
    let text = format!("{PKG}{ch}{b}");
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "package-property",
        "must have exactly 1 \"olm.package\" property, found 2",
    );
}

#[test]
fn rule_duplicates() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: b.v1\n    replaces: a.v1\n  - name: a.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "1.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "duplicate",
        "duplicate versions found in bundles: [{1.0.0: [a.v1, b.v1]}]",
    );
    let text2 = format!(
        "{PKG}{ch}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "2.0.0")
    );
    assert_rule(
        &[("a.yaml", &text2), ("b.yaml", PKG)],
        "b.yaml",
        "duplicate",
        "duplicate package \"p\"",
    );
    assert_rule(
        &[("a.yaml", &text2), ("b.yaml", ch)],
        "b.yaml",
        "duplicate",
        "package \"p\" has duplicate channel \"stable\"",
    );
    assert_rule(
        &[("a.yaml", &text2), ("b.yaml", &bundle("a.v1", "1.0.0"))],
        "b.yaml",
        "duplicate",
        "package \"p\" has duplicate bundle \"a.v1\"",
    );
}

#[test]
fn rule_skip_range_grammar() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: b.v2\n    replaces: a.v1\n    skipRange: \">=1.0, <2.0\"\n  - name: a.v1\n";
    let text = format!(
        "{PKG}{ch}{}{}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v2", "2.0.0")
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "skip-range",
        "invalid skipRange \">=1.0, <2.0\"",
    );
}

#[test]
fn rule_dns1123_package_name() {
    let text = "---\nschema: olm.package\nname: Bad_Name\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: Bad_Name\nname: stable\nentries:\n  - name: a.v1\n---\nschema: olm.bundle\nname: a.v1\npackage: Bad_Name\nimage: x\nproperties:\n  - type: olm.package\n    value: {packageName: Bad_Name, version: 1.0.0}\n";
    assert_rule(
        &[("c.yaml", text)],
        "c.yaml",
        "package-name",
        "invalid package name \"Bad_Name\"",
    );
}

#[test]
fn rule_deprecation_references_resolve() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n";
    let dep = "---\nschema: olm.deprecations\npackage: p\nentries:\n  - reference: {schema: olm.bundle, name: ghost.v9}\n    message: gone\n  - reference: {schema: olm.channel, name: nochannel}\n    message: gone\n";
    let text = format!("{PKG}{ch}{}{dep}", bundle("a.v1", "1.0.0"));
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "deprecation",
        "cannot deprecate bundle \"ghost.v9\" for package \"p\": bundle not found",
    );
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "deprecation",
        "cannot deprecate channel \"nochannel\" for package \"p\": channel not found",
    );
}

#[test]
fn rule_unknown_package_and_missing_bundle() {
    let ch = "---\nschema: olm.channel\npackage: other\nname: stable\nentries:\n  - name: a.v1\n";
    let text = format!("{PKG}{ch}");
    assert_rule(
        &[("c.yaml", &text)],
        "c.yaml",
        "unknown-package",
        "unknown package \"other\" for channel \"stable\"",
    );
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n";
    assert_rule(
        &[("c.yaml", &format!("{PKG}{ch}"))],
        "c.yaml",
        "membership",
        "no olm.bundle blobs found in package \"p\" for olm.channel entries [a.v1]",
    );
}

#[test]
fn rule_parse_errors_name_the_document() {
    let (tmp, code, err) =
        validate_files(&[("bad.yaml", "---\nschema: olm.package\nname: [unclosed\n")]);
    assert_eq!(code, 1);
    assert!(err.contains("error[parse]"), "{err}");
    assert!(
        err.contains(&format!(
            "{} (document 1)",
            tmp.path().join("bad.yaml").display()
        )),
        "{err}"
    );
    let (_, code, err) =
        validate_files(&[("c.yaml", "---\nschema: olm.package\nName: p\nname: q\n")]);
    assert_eq!(code, 1);
    assert!(err.contains("duplicate keys for key \"name\""), "{err}");
}

#[test]
fn several_errors_are_all_reported() {
    let ch = "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - name: a.v1\n  - name: b.v1\n    skipRange: \"~1.0\"\n";
    let dep = "---\nschema: olm.deprecations\npackage: p\nentries:\n  - reference: {schema: olm.bundle, name: ghost}\n    message: x\n";
    let text = format!(
        "---\nschema: olm.package\nname: p\ndefaultChannel: missing\n{ch}{}{}{dep}",
        bundle("a.v1", "1.0.0"),
        bundle("b.v1", "1.0.0")
    );
    let (_, code, err) = validate_files(&[("c.yaml", &text)]);
    assert_eq!(code, 1);
    for rule in [
        "default-channel",
        "channel-head",
        "skip-range",
        "duplicate",
        "deprecation",
    ] {
        assert!(
            err.contains(&format!("error[{rule}]")),
            "missing {rule} in:\n{err}"
        );
    }
    assert!(err.contains("5 error(s)"), "{err}");
}

#[test]
fn validate_usage_error_exits_2() {
    let (code, _, _) = opreg(&["validate"]);
    assert_eq!(code, 2);
    let (code, _, _) = opreg(&["validate", "--no-such-flag", "x"]);
    assert_eq!(code, 2);
}

#[test]
fn failed_ingest_leaves_existing_output_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let db = ingest_upstream(tmp.path());
    let before = std::fs::read(&db).unwrap();
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, "---\nschema: olm.package\nname: p\n").unwrap();
    let (code, _, _) = opreg(&[
        "ingest",
        bad.to_str().unwrap(),
        "-o",
        db.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a failed ingest changed the output"
    );
    let fresh = tmp.path().join("fresh.db");
    let (code, _, _) = opreg(&[
        "ingest",
        bad.to_str().unwrap(),
        "-o",
        fresh.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 1);
    assert!(!fresh.exists(), "a failed ingest created its output");
}

/// A successful ingest removes the temp files that killed ingests left beside its output, but
/// never one a running ingest still holds (locked) or one written in the last minute.
#[test]
fn successful_ingest_removes_stale_temp_files_only() {
    let tmp = tempfile::tempdir().unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let make = |name: &str, old: bool| {
        let p = tmp.path().join(name);
        let f = std::fs::File::create(&p).unwrap();
        if old {
            f.set_modified(hour_ago).unwrap();
        }
        (p, f)
    };
    let (stale, stale_f) = make(".opreg-ingest-stale.db.tmp", true);
    drop(stale_f);
    let (live, live_f) = make(".opreg-ingest-live.db.tmp", true);
    live_f.lock().unwrap();
    let (fresh, fresh_f) = make(".opreg-ingest-fresh.db.tmp", false);
    drop(fresh_f);
    let (other, other_f) = make("unrelated.db.tmp", true);
    drop(other_f);
    let out = tmp.path().join("out.db");
    ingest_ok(&shared("upstream-manifests"), &out);
    assert!(out.exists());
    assert!(!stale.exists(), "the stale temp file is still there");
    assert!(live.exists(), "a locked temp file was removed");
    assert!(fresh.exists(), "a recent temp file was removed");
    assert!(other.exists(), "a file of another name was removed");
    drop(live_f);
}

/// Every table of `db` as sorted text rows, bundles named by package and name instead of row
/// ids (which follow the order bundles were written in); `source_digest` left out.
fn contents(db: &Path) -> Vec<(String, Vec<Vec<String>>)> {
    let by_bundle = |cols: &str, table: &str| {
        format!(
            "SELECT b.package, b.name, {cols} FROM {table} t JOIN bundle b ON b.id = t.bundle_id"
        )
    };
    let queries = [
        ("bundle", "SELECT package, name, version, image, deprecation, wire_core, wire_manifests, csv_template, (SELECT package FROM package_csv c WHERE c.id = csv_parts) FROM bundle".to_string()),
        ("bundle_property", by_bundle("t.seq, t.type, t.value", "bundle_property")),
        ("related_image", by_bundle("t.seq, t.name, t.image", "related_image")),
        ("provided_api", by_bundle("t.api_group, t.version, t.kind", "provided_api")),
        ("package_csv", "SELECT package, description, icon FROM package_csv".to_string()),
        ("catalog_info", "SELECT * FROM catalog_info WHERE key <> 'source_digest'".to_string()),
        ("sqlite_stat1", "SELECT * FROM sqlite_stat1".to_string()),
        ("schema", "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_stat%'".to_string()),
    ];
    let mut out: Vec<(String, Vec<Vec<String>>)> = queries
        .iter()
        .map(|(t, q)| (t.to_string(), rows(db, q)))
        .collect();
    for t in [
        "package",
        "channel",
        "channel_entry",
        "edge",
        "deprecation_entry",
        "custom_meta",
    ] {
        out.push((t.to_string(), rows(db, &format!("SELECT * FROM {t}"))));
    }
    for (_, r) in &mut out {
        r.sort();
    }
    out
}

/// A streamed ingest (bundles written while the catalog is read, their tables analyzed then,
/// property rows in batches, secondary indexes built at the end) stores what
/// `store::write_catalog` stores for the same catalog, planner statistics included, and the
/// schema is the one the migrations declare.
#[test]
fn streamed_ingest_stores_what_write_catalog_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let declared = {
        let c = Connection::open_in_memory().unwrap();
        let mut dirs: Vec<_> =
            std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
        dirs.sort();
        for d in dirs {
            c.execute_batch(&std::fs::read_to_string(d.join("up.sql")).unwrap())
                .unwrap();
        }
        let mut st = c
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema")
            .unwrap();
        let mut v: Vec<Vec<String>> = st
            .query_map([], |r| {
                (0..4)
                    .map(|i| r.get::<_, Option<String>>(i).map(|s| s.unwrap_or_default()))
                    .collect()
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        v.sort();
        v
    };
    for (i, src) in [
        fixture("csv-golden/catalog.yaml"),
        shared("upstream-manifests"),
    ]
    .iter()
    .enumerate()
    {
        let streamed = tmp.path().join(format!("s{i}.db"));
        ingest_ok(src, &streamed);
        let cat = opreg::source::load_sources(std::slice::from_ref(src), &mut Vec::new()).unwrap();
        let cat = opreg::validate::check(cat, &mut Vec::new(), &mut Vec::new()).unwrap();
        let whole = tmp.path().join(format!("w{i}.db"));
        opreg::store::write_catalog(&cat, &whole, "test", &mut |_, _| {}).unwrap();
        let (a, b) = (contents(&streamed), contents(&whole));
        for ((table, x), (_, y)) in a.iter().zip(&b) {
            assert_eq!(x, y, "{table} differs for {}", src.display());
        }
        let schema = &a.iter().find(|(t, _)| t == "schema").unwrap().1;
        let schema: Vec<Vec<String>> = schema
            .iter()
            .map(|r| r.iter().map(|s| s.replace("Null", "")).collect())
            .collect();
        assert_eq!(schema, declared, "schema of {}", src.display());
        assert!(
            !a.iter()
                .find(|(t, _)| t == "sqlite_stat1")
                .unwrap()
                .1
                .is_empty(),
            "no statistics in {}",
            src.display()
        );
    }
}
