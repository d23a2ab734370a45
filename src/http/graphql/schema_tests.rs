//! catalogd's schema, loader and execution cases (graphql_test.go, the GraphQL cases of
//! localdir_test.go and graphql_service_test.go), run on a served file through its index.

use super::*;
use crate::http::graphql::discover;
use serde_json::{json, Value};

/// A version whose file holds `objects`, one per line.
fn version(dir: &tempfile::TempDir, lines: &[&str]) -> Arc<Content> {
    let p = dir.path().join("catalog.jsonl");
    let text: String = lines
        .iter()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(v) => format!("{v}\n"),
            Err(_) => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&p, text).unwrap();
    Arc::new(Content::open(&p).unwrap())
}

fn catalog() -> Vec<&'static str> {
    vec![
        r#"{"schema": "olm.package", "name": "test-package", "defaultChannel": "stable", "description": "A test package"}"#,
        r#"{"schema": "olm.bundle", "name": "test-package.v1.0.0", "package": "test-package",
            "image": "registry.io/test@sha256:abc",
            "properties": [{"type": "olm.package", "value": {"packageName": "test-package", "version": "1.0.0"}}],
            "relatedImages": [{"name": "operator", "image": "registry.io/test@sha256:abc"}]}"#,
        r#"{"schema": "olm.channel", "name": "stable", "package": "test-package", "entries": [{"name": "test-package.v1.0.0"}]}"#,
    ]
}

fn run(content: &Arc<Content>, query: &str) -> (Value, Vec<String>) {
    let cs = discover(content).unwrap();
    let schema = build(&cs).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let resp =
        rt.block_on(schema.execute(async_graphql::Request::new(query).data(content.clone())));
    let errors = resp.errors.iter().map(|e| e.message.clone()).collect();
    (serde_json::to_value(&resp.data).unwrap(), errors)
}

#[test]
fn basic_query() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(&dir, &catalog());
    let (data, errors) = run(&c, "{ olmpackages { name defaultChannel } }");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        data,
        json!({"olmpackages": [{"name": "test-package", "defaultChannel": "stable"}]})
    );
}

#[test]
fn pagination_args() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(&dir, &catalog());
    let (data, errors) = run(&c, "{ olmpackages(offset: 100) { name } }");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(data, json!({"olmpackages": []}));
}

#[test]
fn summary_field() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(&dir, &catalog());
    let (data, errors) = run(
        &c,
        "{ summary { totalSchemas schemas { name totalObjects totalFields } } }",
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(data["summary"]["totalSchemas"], 3);
    assert_eq!(
        data["summary"]["schemas"][1],
        json!({"name": "olm.channel", "totalObjects": 1, "totalFields": 4})
    );
}

#[test]
fn introspection_query() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(&dir, &catalog());
    let (data, errors) = run(&c, "{ __schema { queryType { name } } }");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(data, json!({"__schema": {"queryType": {"name": "Query"}}}));
    let (data, _) = run(&c, "{ __schema { queryType { fields { name } } } }");
    let names: Vec<&str> = data["__schema"]["queryType"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["olmbundles", "olmchannels", "olmpackages", "summary"]
    );
}

/// catalogd's in-memory and on-disk loader cases, on the file.
#[test]
fn loader_pagination() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(
        &dir,
        &[
            r#"{"schema":"test","name":"a"}"#,
            "{invalid",
            r#"{"schema":"test","name":"b"}"#,
            r#"{"schema":"test","name":"c"}"#,
        ],
    );
    let n = |offset, limit| load(&c, "test", offset, limit, None).unwrap().len();
    assert_eq!(n(0, 10), 3);
    assert_eq!(n(1, 10), 2);
    assert_eq!(n(0, 2), 2);
    assert_eq!(n(100, 10), 0);
    assert!(load(&c, "nonexistent", 0, 10, None).unwrap().is_empty());
    let names: Vec<Value> = load(&c, "test", 1, 1, None)
        .unwrap()
        .iter()
        .map(|o| o.get("name").unwrap())
        .collect();
    assert_eq!(names, [json!("b")]);
}

#[test]
fn limit_defaults_and_caps_at_100() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..150)
        .map(|i| format!(r#"{{"schema":"x.item","name":"n{i}","n":{i}}}"#))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let c = version(&dir, &refs);
    let count = |q: &str| run(&c, q).0["xitems"].as_array().unwrap().len();
    assert_eq!(count("{ xitems { name } }"), 100);
    assert_eq!(count("{ xitems(limit: 500) { name } }"), 100);
    assert_eq!(count("{ xitems(limit: 0) { name } }"), 100);
    assert_eq!(count("{ xitems(limit: -1) { name } }"), 100);
    assert_eq!(count("{ xitems(limit: 7) { name } }"), 7);
    assert_eq!(count("{ xitems(offset: 140) { name } }"), 10);
    assert_eq!(count("{ xitems(offset: -5, limit: 3) { name } }"), 3);
    let (data, _) = run(&c, "{ xitems(offset: 120, limit: 1) { n } }");
    assert_eq!(data, json!({"xitems": [{"n": 120}]}));
}

#[test]
fn load_and_summarize() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(
        &dir,
        &[
            r#"{"schema":"olm.package","name":"test-pkg","defaultChannel":"stable"}"#,
            r#"{"schema":"olm.channel","name":"stable","package":"test-pkg","entries":[{"name":"test-pkg.v1.0.0"}]}"#,
        ],
    );
    assert_eq!(discover(&c).unwrap().schemas.len(), 2);
    let (data, errors) = run(&c, "{ olmpackages { name } }");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(data, json!({"olmpackages": [{"name": "test-pkg"}]}));
}

#[test]
fn nested_objects_and_scalars() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(
        &dir,
        &[
            r#"{"schema": "olm.bundle", "name": "test.v1.0.0", "package": "test-pkg",
              "properties": [{"type": "olm.package", "value": {"packageName": "test-pkg", "version": "1.0.0"}}]}"#,
        ],
    );
    let (data, errors) = run(&c, "{ olmbundles { name properties { type value } } }");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        data,
        json!({"olmbundles": [{"name": "test.v1.0.0", "properties": [
            {"type": "olm.package", "value": r#"{"packageName":"test-pkg","version":"1.0.0"}"#}
        ]}]})
    );
    let (data, _) = run(&c, "{ __type(name: \"OlmBundleProperties\") { name } }");
    assert_eq!(data["__type"]["name"], "OlmBundleProperties");
}

#[test]
fn unknown_fields_are_graphql_errors() {
    let dir = tempfile::tempdir().unwrap();
    let c = version(&dir, &catalog());
    let (data, errors) = run(&c, "{ olmpackages { nope } }");
    assert_eq!(data, Value::Null);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("nope"), "{errors:?}");
}

#[test]
fn collisions_refuse_the_schema() {
    let mut cs = discover::CatalogSchema::default();
    cs.add_blob("a.b", br#"{"schema":"a.b"}"#);
    cs.add_blob("ab", br#"{"schema":"ab"}"#);
    let e = build(&cs).err().unwrap().to_string();
    assert!(e.contains("collision"), "{e}");
    let mut cs = discover::CatalogSchema::default();
    cs.add_blob("query", br#"{"schema":"query"}"#);
    let e = build(&cs).err().unwrap().to_string();
    assert!(e.contains("type name collision"), "{e}");
}
