//! catalogd's GraphQL endpoint against the real binary (`opreg serve --http-port`), POSTed over
//! HTTP: catalogd's handler cases (handlers_test.go) with their status codes and messages, its
//! limits with their messages (refused before the query runs), the schema it builds, reloads,
//! `--no-graphql`, and the metrics.

use crate::common;

use common::{free_port, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ICON: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

fn catalog(extra: &str) -> String {
    format!(
        r#"---
schema: olm.package
name: webhook-operator-test
defaultChannel: preview_test
description: A test package
icon:
  base64data: {ICON}
  mediatype: image/png
---
schema: olm.channel
package: webhook-operator-test
name: preview_test
entries:
  - name: bundle.v0.0.1
  - name: bundle.v0.0.2
    replaces: bundle.v0.0.1
---
schema: olm.bundle
name: bundle.v0.0.1
package: webhook-operator-test
image: quaydock.io/namespace/bundle:0.0.1
relatedImages:
  - name: test
    image: testimage:latest
properties:
  - type: olm.package
    value: {{packageName: webhook-operator-test, version: 0.0.1}}
  - type: olm.gvk
    value: {{group: example.com, kind: TestResource, version: v1}}
---
schema: olm.bundle
name: bundle.v0.0.2
package: webhook-operator-test
image: quaydock.io/namespace/bundle:0.0.2
properties:
  - type: olm.package
    value: {{packageName: webhook-operator-test, version: 0.0.2}}
{extra}"#
    )
}

struct Served {
    server: Server,
    http: u16,
    _dir: tempfile::TempDir,
    src: std::path::PathBuf,
}

fn start(extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("catalog");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("c.yaml"), catalog("")).unwrap();
    let http = free_port();
    let port = http.to_string();
    let mut args = vec![src.to_str().unwrap(), "--http-port", &port];
    args.extend_from_slice(extra);
    Served {
        server: Server::start(&args),
        http,
        _dir: dir,
        src,
    }
}

impl Served {
    fn url(&self, catalog: &str) -> String {
        format!(
            "http://127.0.0.1:{}/catalogs/{catalog}/api/v1/graphql",
            self.http
        )
    }
    /// POSTs `body` to `catalog`'s endpoint: (status, content type, body).
    fn post_to(&self, catalog: &str, body: impl Into<reqwest::Body>) -> (u16, String, String) {
        self.request(reqwest::Method::POST, catalog, body.into())
    }
    fn request(
        &self,
        m: reqwest::Method,
        catalog: &str,
        body: reqwest::Body,
    ) -> (u16, String, String) {
        let url = self.url(catalog);
        common::rt().block_on(async move {
            let resp = reqwest::Client::new()
                .request(m, url)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .expect("request");
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default();
            (status, ct, resp.text().await.unwrap())
        })
    }
    /// Runs `query` on the served catalog; the answer must be a 200 JSON document.
    fn query(&self, query: &str) -> Value {
        self.query_body(json!({ "query": query }))
    }
    fn query_body(&self, body: Value) -> Value {
        let (status, ct, text) = self.post_to("catalog", body.to_string());
        assert_eq!(status, 200, "{text}");
        assert_eq!(ct, "application/json");
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn handler_cases_as_catalogd() {
    let s = start(&[]);
    // TestHandleV1GraphQL_MethodNotAllowed, and every other method.
    for m in ["GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let m = reqwest::Method::from_bytes(m.as_bytes()).unwrap();
        let (status, _, text) = s.request(m.clone(), "catalog", reqwest::Body::from(""));
        assert_eq!(status, 405, "{m}");
        if m != reqwest::Method::HEAD {
            assert_eq!(text, "Method Not Allowed\n");
        }
    }
    // _InvalidCatalogName
    let (status, _, text) = s.post_to(
        "INVALID-CATALOG-NAME",
        r#"{"query": "{ summary { totalSchemas } }"}"#,
    );
    assert_eq!(status, 400);
    assert!(
        text.starts_with("invalid catalog name: a lowercase RFC 1123 subdomain"),
        "{text}"
    );
    // _InvalidJSON, _EmptyQuery, _QueryTooLarge, _BodyTooLarge
    let big_query = format!(r#"{{"query": "{}"}}"#, "a".repeat(100_001));
    let cases: Vec<(String, &str)> = vec![
        ("{invalid json".into(), "Invalid request body"),
        (r#"{"query": ""}"#.into(), "Query cannot be empty"),
        (big_query, "Query too large"),
        ("a".repeat((1 << 20) + 1), "Invalid request body"),
        (r#"{"query": 5}"#.into(), "Invalid request body"),
    ];
    for (body, want) in cases {
        let (status, ct, text) = s.post_to("catalog", body);
        assert_eq!((status, text.as_str()), (400, &*format!("{want}\n")));
        assert_eq!(ct, "text/plain; charset=utf-8");
    }
    // _Success
    let v = s.query("{ summary { totalSchemas } }");
    assert_eq!(v, json!({"data": {"summary": {"totalSchemas": 3}}}));
    // _CatalogNotFoundError
    let (status, _, text) = s.post_to("other", r#"{"query": "{ summary { totalSchemas } }"}"#);
    assert_eq!((status, text.as_str()), (404, "404 Not Found\n"));
    // A body of exactly 1 MiB whose query is complete is read.
    let pad = " ".repeat((1 << 20) - 40);
    let (status, _, _) = s.post_to("catalog", format!(r#"{{"query":"{{ __typename }}"}}{pad}"#));
    assert_eq!(status, 200);
}

#[test]
fn limits_are_refused_before_the_query_runs() {
    let s = start(&[]);
    let deep = format!("{{ {}leaf{} }}", "f { ".repeat(11), " }".repeat(11));
    let aliases: String = (0..=50).map(|i| format!("a{i}: name ")).collect();
    let fields: String = (0..=500).map(|i| format!("f{i} ")).collect();
    for (q, msg) in [
        (deep, "query exceeds maximum depth of 10"),
        (
            format!("{{ {aliases} }}"),
            "query exceeds maximum alias count of 50",
        ),
        (
            format!("{{ {fields} }}"),
            "query exceeds maximum field count of 500",
        ),
    ] {
        // The fields do not exist: had the query run (or been validated), the error would say so.
        let want = json!({"data": null, "errors": [{"message": msg, "locations": []}]});
        assert_eq!(s.query(&q), want);
        // Checked before the catalog is even looked up, as catalogd does.
        let (status, _, text) = s.post_to("other", json!({ "query": q }).to_string());
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), want);
    }
    // At the limits: answered.
    let at: String = (0..50).map(|i| format!("a{i}: name ")).collect();
    let v = s.query(&format!("{{ olmpackages {{ {at} }} }}"));
    assert_eq!(v["data"]["olmpackages"][0]["a49"], "webhook-operator-test");
    let v = s.query("{ invalid query {{{{");
    let msg = v["errors"][0]["message"].as_str().unwrap();
    assert!(msg.starts_with("query parse error: "), "{msg}");
    assert_eq!(v["data"], Value::Null);
}

#[test]
fn the_schema_is_catalogds() {
    let s = start(&[]);
    // olmpackages { name defaultChannel }: no icon bytes; keys sorted, as catalogd writes them.
    let (status, _, text) = s.post_to(
        "catalog",
        json!({"query": "{ olmpackages { name defaultChannel } }"}).to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        text,
        "{\"data\":{\"olmpackages\":[{\"defaultChannel\":\"preview_test\",\"name\":\"webhook-operator-test\"}]}}\n"
    );
    assert!(!text.contains(ICON));
    // The icon, asked for, is JSON text (keys sorted).
    let v = s.query("{ olmpackages { icon } }");
    let icon: Value =
        serde_json::from_str(v["data"]["olmpackages"][0]["icon"].as_str().unwrap()).unwrap();
    assert_eq!(icon, json!({"base64data": ICON, "mediatype": "image/png"}));
    // Arrays of objects are nested types; limit and offset page in file order.
    let v = s.query(
        "{ olmbundles(limit: 1, offset: 1) { name package properties { type value } } \
           olmchannels { entries { name replaces } } }",
    );
    assert_eq!(v["data"]["olmbundles"].as_array().unwrap().len(), 1);
    let b = &v["data"]["olmbundles"][0];
    assert_eq!(b["package"], "webhook-operator-test");
    assert_eq!(b["properties"][0]["type"], "olm.package");
    assert_eq!(
        v["data"]["olmchannels"][0]["entries"][1],
        json!({"name": "bundle.v0.0.2", "replaces": "bundle.v0.0.1"})
    );
    // summary
    let v = s.query("{ summary { totalSchemas schemas { name totalObjects } } }");
    assert_eq!(
        v["data"]["summary"],
        json!({"totalSchemas": 3, "schemas": [
            {"name": "olm.bundle", "totalObjects": 2},
            {"name": "olm.channel", "totalObjects": 1},
            {"name": "olm.package", "totalObjects": 1},
        ]})
    );
    // Introspection: the root fields and the arguments' defaults.
    let v = s.query(
        "{ __schema { queryType { fields { name args { name defaultValue description } } } } }",
    );
    let fields = v["data"]["__schema"]["queryType"]["fields"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["olmbundles", "olmchannels", "olmpackages", "summary"]
    );
    assert_eq!(
        fields[0]["args"],
        json!([
            {"name": "limit", "defaultValue": "100", "description": "Maximum number of items to return"},
            {"name": "offset", "defaultValue": "0", "description": "Number of items to skip"},
        ])
    );
    // An unknown field: the GraphQL library's validation error, with its location.
    let v = s.query("{ olmpackages { nope } }");
    assert_eq!(v["data"], Value::Null);
    assert!(v["errors"][0]["message"].as_str().unwrap().contains("nope"));
    assert_eq!(
        v["errors"][0]["locations"],
        json!([{"line": 1, "column": 17}])
    );
}

#[test]
fn variables_and_operation_name() {
    let s = start(&[]);
    let v = s.query_body(json!({
        "query": "query A($n: Int) { olmbundles(limit: $n) { name } } query B { summary { totalSchemas } }",
        "variables": {"n": 1},
        "operationName": "A",
    }));
    assert_eq!(
        v,
        json!({"data": {"olmbundles": [{"name": "bundle.v0.0.1"}]}})
    );
}

#[test]
fn no_graphql_turns_it_off() {
    let s = start(&["--no-graphql"]);
    let (status, _, text) = s.post_to("catalog", r#"{"query": "{ summary { totalSchemas } }"}"#);
    assert_eq!((status, text.as_str()), (404, "404 page not found\n"));
}

#[test]
fn a_reload_swaps_the_schema_with_the_catalog() {
    let s = start(&[]);
    assert_eq!(
        s.query("{ summary { totalSchemas } }")["data"]["summary"]["totalSchemas"],
        3
    );
    std::fs::write(
        s.src.join("c.yaml"),
        catalog("---\nschema: example.note\nname: n1\npackage: webhook-operator-test\nsize: 3\n"),
    )
    .unwrap();
    common::unsafe_kill(s.server.child.id() as i32, 1);
    let start = Instant::now();
    loop {
        let v = s.query("{ summary { totalSchemas } }");
        if v["data"]["summary"]["totalSchemas"] == 4 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no reload: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let v = s.query("{ examplenotes { name size } }");
    assert_eq!(
        v,
        json!({"data": {"examplenotes": [{"name": "n1", "size": 3}]}})
    );
}

#[test]
fn metrics_count_graphql_and_answer_to_catalogds_name() {
    let s = start(&[]);
    s.query("{ summary { totalSchemas } }");
    s.post_to("catalog", "{invalid");
    let url = format!("http://127.0.0.1:{}/metrics", s.http);
    let text =
        common::rt().block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() });
    let has = |prefix: &str| text.lines().any(|l| l.starts_with(prefix));
    let route = "route=\"/catalogs/{catalog}/api/v1/graphql\"";
    assert!(
        has(&format!(
            "opreg_http_requests_total{{{route},code=\"200\"}} 1"
        )),
        "{text}"
    );
    assert!(
        has(&format!(
            "opreg_http_requests_total{{{route},code=\"400\"}} 1"
        )),
        "{text}"
    );
    assert!(has(&format!(
        "opreg_http_request_duration_seconds_count{{{route},code=\"200\"}} 1"
    )));
    assert!(
        has("catalogd_http_request_duration_seconds_bucket{le=\"0.5\",code=\"200\"}"),
        "{text}"
    );
    assert!(
        has("catalogd_http_request_duration_seconds_count{code=\"400\"} 1"),
        "{text}"
    );
}

/// A nullable list an object lacks is `null`, with no error (GraphQL's rule for a nullable
/// field); a number field holding `1` and `2.5` is `Float` and answers `2.5`.
#[test]
fn missing_lists_are_null_and_numbers_are_typed_from_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("catalog");
    std::fs::create_dir(&src).unwrap();
    let extra = "---\nschema: olm.channel\npackage: webhook-operator-test\nname: fast\nentries:\n  - name: bundle.v0.0.1\n  - name: bundle.v0.0.2\n    skips: [bundle.v0.0.1]\n---\nschema: example.note\nname: a\nn: 1\n---\nschema: example.note\nname: b\nn: 2.5\n";
    std::fs::write(src.join("c.yaml"), catalog(extra)).unwrap();
    let http = free_port();
    let port = http.to_string();
    let s = Served {
        server: Server::start(&[src.to_str().unwrap(), "--http-port", &port]),
        http,
        _dir: dir,
        src,
    };
    let v = s.query("{ olmchannels { name entries { name skips } } }");
    assert!(v.get("errors").is_none(), "{v}");
    assert_eq!(
        v["data"]["olmchannels"],
        json!([
            {"name": "preview_test", "entries": [
                {"name": "bundle.v0.0.1", "skips": null},
                {"name": "bundle.v0.0.2", "skips": null}]},
            {"name": "fast", "entries": [
                {"name": "bundle.v0.0.1", "skips": null},
                {"name": "bundle.v0.0.2", "skips": ["bundle.v0.0.1"]}]}
        ])
    );
    let v = s.query("{ examplenotes { name n } }");
    assert_eq!(
        v,
        json!({"data": {"examplenotes": [{"name": "a", "n": 1}, {"name": "b", "n": 2.5}]}})
    );
    let t = s.query(r#"{ __type(name: "ExampleNote") { fields { name type { name } } } }"#);
    let n = t["data"]["__type"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "n")
        .cloned();
    assert_eq!(n.unwrap()["type"]["name"], "Float", "{t}");
}
