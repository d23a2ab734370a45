//! Regression tests for what fuzzing found (see fuzz/README.md), through the public API, plus
//! the small legacy indexes the `legacy_index` fuzz target starts from.

use crate::common;
use crate::legacy_support;

use legacy_support::{index_at_version, migrate, open_ro};
use opreg::catalog::{self, fbc, legacy};
use rusqlite::Connection;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Keeps the fields of `v` at the given JSON pointers (and their parents); drops the rest.
fn keep(v: &Value, pointers: &[&str]) -> Value {
    fn put(out: &mut Map<String, Value>, parts: &[&str], x: &Value) {
        match parts {
            [] => {}
            [last] => {
                out.insert(last.to_string(), x.clone());
            }
            [first, rest @ ..] => {
                let child = out
                    .entry(first.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = child {
                    put(m, rest, x);
                }
            }
        }
    }
    let mut out = Map::new();
    for p in pointers {
        if let Some(x) = v.pointer(p) {
            let parts: Vec<&str> = p.trim_start_matches('/').split('/').collect();
            put(&mut out, &parts, x);
        }
    }
    Value::Object(out)
}

/// The graph-relevant part of a CSV: names, version, edges, APIs and images; no prose.
fn small_csv(csv: &Value) -> Value {
    let mut c = keep(
        csv,
        &[
            "/apiVersion",
            "/kind",
            "/metadata/name",
            "/metadata/annotations/olm.skipRange",
            "/spec/version",
            "/spec/replaces",
            "/spec/skips",
            "/spec/customresourcedefinitions/required",
            "/spec/relatedImages",
        ],
    );
    let owned: Vec<Value> = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|o| keep(o, &["/name", "/kind", "/version"]))
                .collect()
        })
        .unwrap_or_default();
    c["spec"]["customresourcedefinitions"]["owned"] = Value::Array(owned);
    let deployments: Vec<Value> = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| {
                    let containers: Vec<Value> = d
                        .pointer("/spec/template/spec/containers")
                        .and_then(Value::as_array)
                        .map(|cs| cs.iter().map(|c| keep(c, &["/name", "/image"])).collect())
                        .unwrap_or_default();
                    json!({"name": d["name"], "spec": {"template": {"spec": {"containers": containers}}}})
                })
                .collect()
        })
        .unwrap_or_default();
    c["spec"]["install"] = json!({"strategy": "deployment", "spec": {"deployments": deployments}});
    c
}

/// A CRD reduced to what the readers look at.
fn small_crd(crd: &Value) -> Value {
    keep(
        crd,
        &[
            "/apiVersion",
            "/kind",
            "/metadata/name",
            "/spec/group",
            "/spec/names/kind",
            "/spec/names/plural",
            "/spec/version",
        ],
    )
}

/// The upstream fixture at schema 0, cut down to the etcd package with small CSVs and bundles.
fn small_v0(dir: &Path) -> std::path::PathBuf {
    let path = index_at_version(dir, 0);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DELETE FROM package WHERE name != 'etcd';
         DELETE FROM channel WHERE package_name != 'etcd';
         DELETE FROM channel_entry WHERE package_name != 'etcd';
         DELETE FROM operatorbundle WHERE name NOT LIKE 'etcdoperator.%';
         DELETE FROM api_provider WHERE channel_entry_id NOT IN (SELECT entry_id FROM channel_entry);
         DELETE FROM api WHERE NOT EXISTS (SELECT 1 FROM api_provider p
             WHERE p.group_name = api.group_name AND p.version = api.version AND p.kind = api.kind);",
    )
    .unwrap();
    let rows: Vec<(String, String, String)> = {
        let mut st = conn
            .prepare("SELECT name, CAST(csv AS TEXT), CAST(bundle AS TEXT) FROM operatorbundle")
            .unwrap();
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        rows.map(Result::unwrap).collect()
    };
    for (name, csv, bundle) in rows {
        let csv = small_csv(&serde_json::from_str(&csv).unwrap());
        let mut objects = vec![csv.to_string()];
        for o in serde_json::Deserializer::from_str(&bundle).into_iter::<Value>() {
            let o = o.unwrap();
            if o["kind"] == "CustomResourceDefinition" {
                objects.push(small_crd(&o).to_string());
            }
        }
        conn.execute(
            "UPDATE operatorbundle SET csv = ?1, bundle = ?2 WHERE name = ?3",
            rusqlite::params![csv.to_string(), objects.concat(), name],
        )
        .unwrap();
    }
    path
}

/// Small legacy indexes at every schema version (0–13) read back to the etcd package. With
/// `OPREG_FUZZ_LEGACY_SEEDS=DIR` they are also copied to DIR (`legacy-vNN.db`): the seeds of
/// the `legacy_index` fuzz target, kept small (512-byte pages, no prose) so mutations stay fast.
#[test]
fn small_legacy_indexes_at_every_schema_version_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let v0 = small_v0(tmp.path());
    let out = std::env::var_os("OPREG_FUZZ_LEGACY_SEEDS").map(std::path::PathBuf::from);
    for version in 0..=legacy::MAX_SCHEMA_VERSION {
        let path = tmp.path().join(format!("legacy-v{version:02}.db"));
        open_ro(&v0)
            .execute("VACUUM INTO ?1", [path.to_string_lossy()])
            .unwrap();
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
            migrate(&conn, 0, version);
            conn.execute_batch("PRAGMA page_size = 512; VACUUM;")
                .unwrap();
        }
        let mut warnings = Vec::new();
        let decls = legacy::read_index(&path, &mut warnings)
            .unwrap_or_else(|e| panic!("schema {version}: {e:#}"));
        let mut diags = Vec::new();
        let cat = catalog::build(decls, &mut diags);
        assert!(diags.is_empty(), "schema {version}: {diags:?}");
        let etcd = &cat.packages["etcd"];
        assert_eq!(cat.packages.len(), 1, "schema {version}");
        assert_eq!(
            etcd.bundles.keys().collect::<Vec<_>>(),
            [
                "etcdoperator.v0.6.1",
                "etcdoperator.v0.9.0",
                "etcdoperator.v0.9.2"
            ],
            "schema {version}"
        );
        assert_eq!(
            etcd.channels.keys().collect::<Vec<_>>(),
            ["alpha", "beta", "stable"],
            "schema {version}"
        );
        let errors: Vec<_> = opreg::validate::validate(&cat)
            .into_iter()
            .filter(|d| d.is_error())
            .collect();
        assert!(errors.is_empty(), "schema {version}: {errors:?}");
        if let Some(out) = &out {
            std::fs::create_dir_all(out).unwrap();
            std::fs::copy(&path, out.join(format!("legacy-v{version:02}.db"))).unwrap();
        }
    }
}

/// fbc_stream: the chunked reader ingest uses for FBC files over 1 MiB took a top-level number
/// (or `true`/`false`/`null`) cut by a chunk boundary for two documents (`123` and `45`), so
/// it reported an extra error and numbered every later document differently from the
/// whole-file reader. Every chunk size must give what `decode_bytes` gives.
#[test]
fn chunked_reader_agrees_with_whole_file_reader_at_every_chunk_size() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("catalog.json");
    let text = "{\"schema\":\"olm.package\",\"name\":\"caf\u{e9} \u{1F600}\"}\n\
                {\"schema\":\"x\",\"name\":\"\u{e9}\u{e9}\"} 12345 -1.5e3 true null [1] \"s\"\n\
                {\"schema\":\"y\"}";
    std::fs::write(&path, text).unwrap();
    let mut whole_diags = Vec::new();
    let whole = fbc::decode_bytes(
        text.as_bytes(),
        &path.display().to_string(),
        &mut whole_diags,
    );
    assert_eq!(whole.len(), 3);
    assert_eq!(whole[2].origin.doc, Some(9));
    assert_eq!(whole_diags.len(), 6, "{whole_diags:?}");
    for chunk in 1..=text.len() - 1 {
        let mut diags = Vec::new();
        let chunked = fbc::decode_file_chunked(&path, chunk, &mut diags)
            .unwrap()
            .unwrap_or_else(|| panic!("chunk {chunk}: handed back"));
        assert_eq!(
            format!("{chunked:?}"),
            format!("{whole:?}"),
            "chunk {chunk}: metas differ"
        );
        assert_eq!(diags, whole_diags, "chunk {chunk}: diagnostics differ");
    }
}

/// The same through `opreg validate`: a number straddling the 1 MiB chunk boundary of a large
/// JSON catalog is one bad document (the third), not two.
#[test]
fn validate_reports_one_document_for_a_number_across_the_chunk_boundary() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("catalog.json");
    let head = "{\"schema\":\"olm.package\",\"name\":\"p\",\"description\":\"";
    let first = format!(
        "{head}{}\"}}\n{{\"schema\":\"custom\",\"name\":\"n\"}}\n",
        "d".repeat(1 << 19)
    );
    let pad = (1 << 20) - 2 - first.len();
    let text = format!(
        "{first}{}12345\n{{\"schema\":\"custom\",\"name\":\"m\"}}\n",
        " ".repeat(pad)
    );
    assert_eq!(&text[(1 << 20) - 2..(1 << 20) + 3], "12345");
    std::fs::write(&path, &text).unwrap();
    let (code, _, stderr) = common::opreg(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    let scalars: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("found a scalar"))
        .collect();
    assert_eq!(scalars.len(), 1, "{stderr}");
    assert!(scalars[0].contains("(document 3)"), "{stderr}");
}

/// A broken object in a large JSON stream was reported at its line within the chunk read last
/// (`(document 3001) ... at line 487`), not the file's. Every chunk size must name the line
/// and column the whole-file reader names: the file's.
#[test]
fn chunked_reader_names_the_files_line_and_column_of_a_json_error() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("catalog.json");
    let text = "{\"schema\":\"olm.package\",\"name\":\"a\"}\n\
                {\"schema\":\"x\",\n \"name\":\"b\"} {\"schema\":\"y\"}\n\
                {\"schema\":\"z\"}\n\
                {\"schema\":\"w\", \"name\": \"c\" \"oops\": 1}\n";
    std::fs::write(&path, text).unwrap();
    let mut whole_diags = Vec::new();
    fbc::decode_bytes(
        text.as_bytes(),
        &path.display().to_string(),
        &mut whole_diags,
    );
    assert_eq!(whole_diags.len(), 1, "{whole_diags:?}");
    let message = whole_diags[0].to_string();
    assert!(message.contains("at line 5 column 28"), "{message}");
    for chunk in 1..=text.len() - 1 {
        let mut diags = Vec::new();
        let got = fbc::decode_file_chunked(&path, chunk, &mut diags).unwrap();
        assert!(got.is_some(), "chunk {chunk}: handed back");
        assert_eq!(diags, whole_diags, "chunk {chunk}: diagnostics differ");
    }
}

/// The same through `opreg validate` on a file of 3,000 lines of 2 KB (read in 1 MiB chunks).
#[test]
fn validate_names_the_files_line_of_a_json_error_in_a_large_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("catalog.json");
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!(
            "{{\"schema\":\"custom\",\"name\":\"n{i}\",\"pad\":\"{}\"}}\n",
            "p".repeat(2000)
        ));
    }
    text.push_str("{\"schema\":\"custom\",\"name\":\"bad\" \"x\":1}\n");
    std::fs::write(&path, &text).unwrap();
    let (code, _, stderr) = common::opreg(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("(document 3001)"), "{stderr}");
    assert!(stderr.contains("at line 3001 column 33"), "{stderr}");
}
