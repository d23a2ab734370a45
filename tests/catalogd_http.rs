//! catalogd's HTTP API and metrics, against the real binary (`opreg serve --http-port`)
//! with real HTTP clients (reqwest over HTTP/1.1 and HTTP/2, and curl where installed).
//! The handler tables are catalogd's (`internal/catalogd/storage/localdir_test.go`), with the
//! same verdicts and, where catalogd's tests spell out a body, the same bytes; elsewhere bodies
//! are compared with each YAML document of the source as serde_json writes it (keys sorted,
//! compact), in file order: what catalogd stores. Reloads are tests/catalogd_reloads.rs.

use crate::common;
use common::{free_port, Server};
use std::path::Path;

/// catalogd's test catalog (package renamed: opreg validates, and `_` is not allowed in a
/// package name).
pub(crate) const CATALOG: &str = r#"---
image: quaydock.io/namespace/bundle:0.0.3
name: bundle.v0.0.1
schema: olm.bundle
package: webhook-operator-test
relatedImages:
  - name: test
    image: testimage:latest
properties:
  - type: olm.package
    value: {packageName: webhook-operator-test, version: 0.0.1}
  - type: olm.bundle.object
    value:
      data: dW5pbXBvcnRhbnQK
  - type: some.other
    value:
      data: arbitrary-info
---
defaultChannel: preview_test
name: webhook-operator-test
schema: olm.package
---
schema: olm.channel
package: webhook-operator-test
name: preview_test
entries:
  - name: bundle.v0.0.1
"#;

pub(crate) struct Served {
    pub(crate) server: Server,
    pub(crate) http: u16,
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) src: std::path::PathBuf,
}

pub(crate) fn start(extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("catalog");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("c.yaml"), CATALOG).unwrap();
    let http = free_port();
    let port = http.to_string();
    let mut args = vec![src.to_str().unwrap(), "--http-port", &port];
    args.extend_from_slice(extra);
    let server = Server::start(&args);
    Served {
        server,
        http,
        _dir: dir,
        src,
    }
}

/// The YAML documents of the files in `src` (sorted by name), each as serde_json writes it,
/// one per line: catalogd's `/api/v1/all` for this source, built without opreg's writers.
pub(crate) fn catalogd_lines(src: &Path) -> String {
    use serde::Deserialize;
    let mut files: Vec<_> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut out = String::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in yaml_serde::Deserializer::from_str(&text) {
            let v = serde_json::Value::deserialize(doc).unwrap();
            out.push_str(&serde_json::to_string(&v).unwrap());
            out.push('\n');
        }
    }
    out
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

pub(crate) async fn get(
    url: &str,
    method: reqwest::Method,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut r = client().request(method, url);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let resp = r.send().await.expect("request");
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    (status, h, resp.text().await.unwrap())
}

#[test]
fn server_handler_table_as_catalogd() {
    let s = start(&[]);
    // catalogd's expected body, for this catalog: the objects in file order, keys sorted.
    let want_all = concat!(
        r#"{"image":"quaydock.io/namespace/bundle:0.0.3","name":"bundle.v0.0.1","package":"webhook-operator-test","properties":[{"type":"olm.package","value":{"packageName":"webhook-operator-test","version":"0.0.1"}},{"type":"olm.bundle.object","value":{"data":"dW5pbXBvcnRhbnQK"}},{"type":"some.other","value":{"data":"arbitrary-info"}}],"relatedImages":[{"image":"testimage:latest","name":"test"}],"schema":"olm.bundle"}"#,
        "\n",
        r#"{"defaultChannel":"preview_test","name":"webhook-operator-test","schema":"olm.package"}"#,
        "\n",
        r#"{"entries":[{"name":"bundle.v0.0.1"}],"name":"preview_test","package":"webhook-operator-test","schema":"olm.channel"}"#,
        "\n",
    );
    assert_eq!(want_all, catalogd_lines(&s.src));
    let base = format!("http://127.0.0.1:{}", s.http);
    // (path, status, body) from catalogd's TestLocalDirServerHandler.
    let table: Vec<(&str, u16, String)> = vec![
        ("", 404, "404 page not found".into()),
        ("/", 404, "404 page not found".into()),
        ("/catalogs/", 404, "404 page not found".into()),
        ("/catalogs/catalog/", 404, "404 page not found".into()),
        ("/catalogs/catalog/api/", 404, "404 page not found".into()),
        (
            "/catalogs/catalog/api/v1c",
            404,
            "404 page not found".into(),
        ),
        (
            "/catalogs/catalog/non-existent.txt",
            404,
            "404 page not found".into(),
        ),
        ("/catalogs/catalog.jsonl", 404, "404 page not found".into()),
        (
            "/catalogs/non-existent-catalog/api/v1/all",
            404,
            "404 Not Found".into(),
        ),
        ("/catalogs/catalog/api/v1/all", 200, want_all.to_string()),
    ];
    common::rt().block_on(async {
        for (path, status, body) in table {
            let (got, h, text) = get(
                &format!("{base}{path}"),
                reqwest::Method::GET,
                &[("Accept-Encoding", "gzip")],
            )
            .await;
            assert_eq!(got, status, "{path}");
            if got == 200 {
                assert_eq!(h["content-type"], "application/jsonl", "{path}");
            }
            assert_eq!(text.trim(), body.trim(), "{path}");
        }
    });
}

#[test]
fn metas_table_as_catalogd() {
    let s = start(&[]);
    let all = catalogd_lines(&s.src);
    let lines: Vec<&str> = all.lines().collect();
    let obj = |schema: &str| -> String {
        lines
            .iter()
            .find(|l| l.contains(&format!("\"schema\":\"{schema}\"")))
            .unwrap()
            .to_string()
    };
    let (pkg, ch, bundle) = (obj("olm.package"), obj("olm.channel"), obj("olm.bundle"));
    let base = format!("http://127.0.0.1:{}/catalogs/catalog/api/v1/metas", s.http);
    // (query, status, expected lines) from catalogd's TestMetasEndpoint.
    let table: Vec<(&str, u16, Vec<String>)> = vec![
        ("?schema=olm.package", 200, vec![pkg.clone()]),
        (
            "?schema=olm.package&name=webhook-operator-test",
            200,
            vec![pkg.clone()],
        ),
        (
            "?schema=olm.channel&package=webhook-operator-test",
            200,
            vec![ch.clone()],
        ),
        (
            "?schema=olm.bundle&package=webhook-operator-test&name=bundle.v0.0.1",
            200,
            vec![bundle.clone()],
        ),
        ("?schema=olm.package&name=not-present", 200, vec![]),
        (
            "?package=webhook-operator-test&name=bundle.v0.0.1",
            200,
            vec![bundle.clone()],
        ),
        ("?schema=non_existent_schema", 200, vec![]),
        // package=X: X's channels and bundles in file order, not its own olm.package.
        (
            "?package=webhook-operator-test",
            200,
            vec![bundle.clone(), ch.clone()],
        ),
        ("?non-existent=foo", 400, vec!["400 Bad Request".into()]),
        (
            "?schema=olm.bundle&&schema=olm.bundle",
            200,
            vec![bundle.clone()],
        ),
        ("", 200, lines.iter().map(|l| l.to_string()).collect()),
    ];
    common::rt().block_on(async {
        for (q, status, want) in table {
            let url = format!("{base}{q}");
            let (got, h, text) = get(&url, reqwest::Method::GET, &[]).await;
            assert_eq!(got, status, "{q}");
            if got == 200 {
                assert_eq!(h["content-type"], "application/jsonl", "{q}");
            }
            let got_lines: Vec<&str> = text.lines().collect();
            assert_eq!(got_lines, want, "{q}");
            let (head, _, body) = get(&url, reqwest::Method::HEAD, &[]).await;
            assert_eq!(head, status, "HEAD {q}");
            assert!(body.is_empty(), "HEAD {q}");
            for m in [
                reqwest::Method::POST,
                reqwest::Method::PUT,
                reqwest::Method::DELETE,
            ] {
                let (code, _, _) = get(&url, m.clone(), &[]).await;
                assert_eq!(code, 405, "{m} {q}");
            }
        }
        // The cached-response case: If-Modified-Since with the Last-Modified just received.
        let url = format!("{base}?schema=olm.package");
        let (_, h, _) = get(&url, reqwest::Method::GET, &[]).await;
        let lm = h["last-modified"].to_str().unwrap().to_string();
        for m in [reqwest::Method::GET, reqwest::Method::HEAD] {
            let (code, _, body) = get(&url, m, &[("If-Modified-Since", &lm)]).await;
            assert_eq!(code, 304);
            assert!(body.is_empty());
        }
    });
}

#[test]
fn all_supports_conditional_range_gzip_and_http2() {
    let s = start(&[]);
    let all = catalogd_lines(&s.src);
    let url = format!("http://127.0.0.1:{}/catalogs/catalog/api/v1/all", s.http);
    common::rt().block_on(async {
        let (code, h, body) = get(&url, reqwest::Method::GET, &[]).await;
        assert_eq!((code, body.as_str()), (200, all.as_str()));
        let lm = h["last-modified"].to_str().unwrap().to_string();
        let (code, _, body) = get(&url, reqwest::Method::GET, &[("If-Modified-Since", &lm)]).await;
        assert_eq!((code, body.as_str()), (304, ""));
        let (code, h, body) = get(&url, reqwest::Method::GET, &[("Range", "bytes=10-19")]).await;
        assert_eq!(code, 206);
        assert_eq!(body, &all[10..20]);
        assert_eq!(
            h["content-range"].to_str().unwrap(),
            format!("bytes 10-19/{}", all.len())
        );
        let (code, _, _) = get(&url, reqwest::Method::GET, &[("Range", "bytes=999999-")]).await;
        assert_eq!(code, 416);
        let (code, h, body) = get(&url, reqwest::Method::HEAD, &[]).await;
        assert_eq!(code, 200);
        assert_eq!(h["content-length"].to_str().unwrap(), all.len().to_string());
        assert!(body.is_empty());
        // HTTP/2 (prior knowledge, as h2c).
        let h2 = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        let resp = h2.get(&url).send().await.unwrap();
        assert_eq!(resp.version(), reqwest::Version::HTTP_2);
        assert_eq!(resp.text().await.unwrap(), all);
    });
}

/// gzip above catalogd's threshold (1024 bytes), not below.
#[test]
fn gzip_above_threshold_only() {
    let http = free_port();
    let port = http.to_string();
    let _s = Server::start(&["--http-port", &port]); // the demo catalog
    let base = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1");
    common::rt().block_on(async {
        let plain = client()
            .get(format!("{base}/all"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(plain.len() > 1024, "{}", plain.len());
        let resp = client()
            .get(format!("{base}/all"))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-encoding"], "gzip");
        let gz = resp.bytes().await.unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut out).unwrap();
        assert_eq!(out, plain);
        // A small answer is sent as it is.
        let resp = client()
            .get(format!("{base}/metas?schema=olm.package&name=none"))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert!(resp.headers().get("content-encoding").is_none());
    });
}

#[test]
fn bad_input_is_answered_not_crashed() {
    let s = start(&[]);
    let base = format!("http://127.0.0.1:{}", s.http);
    common::rt().block_on(async {
        let long = format!(
            "{base}/catalogs/catalog/api/v1/metas?name={}",
            "a".repeat(60_000)
        );
        let (code, _, body) = get(&long, reqwest::Method::GET, &[]).await;
        assert_eq!((code, body.as_str()), (200, ""));
        let long_bad = format!(
            "{base}/catalogs/catalog/api/v1/metas?{}=1",
            "x".repeat(60_000)
        );
        assert_eq!(get(&long_bad, reqwest::Method::GET, &[]).await.0, 400);
        // Percent-encoded bytes that are not UTF-8, in the query and in the catalog name.
        let (code, _, body) = get(
            &format!("{base}/catalogs/catalog/api/v1/metas?name=%ff%fe"),
            reqwest::Method::GET,
            &[],
        )
        .await;
        assert_eq!((code, body.as_str()), (200, ""));
        let (code, _, body) = get(
            &format!("{base}/catalogs/%ff/api/v1/all"),
            reqwest::Method::GET,
            &[],
        )
        .await;
        assert_eq!(code, 400);
        assert!(body.starts_with("invalid catalog name: "), "{body}");
        for p in [
            "/catalogs/catalog/api/v2/all",
            "/x",
            "/catalogs/catalog/api/v1/all/x",
        ] {
            assert_eq!(
                get(&format!("{base}{p}"), reqwest::Method::GET, &[])
                    .await
                    .0,
                404,
                "{p}"
            );
        }
        // A bad If-Modified-Since gets Go's 500 on /metas; the server keeps serving.
        let (code, _, _) = get(
            &format!("{base}/catalogs/catalog/api/v1/metas"),
            reqwest::Method::GET,
            &[("If-Modified-Since", "yesterday")],
        )
        .await;
        assert_eq!(code, 500);
        assert_eq!(
            get(&format!("{base}/healthz"), reqwest::Method::GET, &[])
                .await
                .0,
            200
        );
        assert_eq!(
            get(&format!("{base}/readyz"), reqwest::Method::GET, &[])
                .await
                .0,
            200
        );
    });
}

#[test]
fn custom_catalog_name_and_curl() {
    let s = start(&["--catalog-name", "operatorhub"]);
    let url = format!(
        "http://127.0.0.1:{}/catalogs/operatorhub/api/v1/all",
        s.http
    );
    let all = catalogd_lines(&s.src);
    let body = common::rt().block_on(async { get(&url, reqwest::Method::GET, &[]).await.2 });
    assert_eq!(body, all);
    if let Ok(out) = std::process::Command::new("curl")
        .args(["-sS", "--compressed", &url])
        .output()
    {
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), all);
    }
    let other = format!("http://127.0.0.1:{}/catalogs/catalog/api/v1/all", s.http);
    assert_eq!(
        common::rt().block_on(async { get(&other, reqwest::Method::GET, &[]).await.0 }),
        404
    );
}

pub(crate) fn metric(text: &str, line_prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(line_prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn metrics_count_calls_and_describe_the_catalog() {
    let s = start(&[]);
    let base = format!("http://127.0.0.1:{}", s.http);
    common::rt().block_on(async {
        let mut reg = s.server.registry().await;
        for _ in 0..3 {
            reg.list_packages(opreg::api::ListPackageRequest {})
                .await
                .unwrap();
        }
        let missing = reg
            .get_package(opreg::api::GetPackageRequest {
                name: "nope".into(),
            })
            .await;
        assert!(missing.is_err());
        get(
            &format!("{base}/catalogs/catalog/api/v1/all"),
            reqwest::Method::GET,
            &[],
        )
        .await;
        let (_, _, text) = get(&format!("{base}/metrics"), reqwest::Method::GET, &[]).await;
        let m = |p: &str| metric(&text, p);
        assert_eq!(
            m("opreg_grpc_requests_total{method=\"/api.Registry/ListPackages\",code=\"OK\"}"),
            Some(3.0)
        );
        assert_eq!(
            m("opreg_grpc_requests_total{method=\"/api.Registry/GetPackage\",code=\"NotFound\"}"),
            Some(1.0)
        );
        assert!(
            m("opreg_grpc_response_bytes_total{method=\"/api.Registry/ListPackages\",code=\"OK\"}")
                .unwrap()
                > 0.0
        );
        assert_eq!(
            m("opreg_http_requests_total{route=\"/catalogs/{catalog}/api/v1/all\",code=\"200\"}"),
            Some(1.0)
        );
        assert_eq!(m("opreg_catalog_packages"), Some(1.0));
        assert_eq!(m("opreg_catalog_channels"), Some(1.0));
        assert_eq!(m("opreg_catalog_bundles"), Some(1.0));
        assert!(m("process_resident_memory_bytes").unwrap() > 1e6);
        // CPU time is the counter Prometheus' process collector exports, which dashboards rate().
        assert!(
            text.contains("# TYPE process_cpu_seconds counter\n"),
            "{text}"
        );
        assert!(m("process_cpu_seconds_total").unwrap() >= 0.0, "{text}");
        assert!(!text.contains("gauge process_cpu"), "{text}");
        assert!(text.contains("opreg_catalog_source_info{source="));
        assert!(text.contains("opreg_grpc_request_duration_seconds_bucket{"));
    });
}

/// gRPC calls to methods the server does not have share one label value, as unknown HTTP
/// paths do: a client sending made-up method names cannot grow `/metrics` (3,000 of them once
/// made it 6 MB), nor can it write label values of its choosing.
#[test]
fn unknown_grpc_methods_share_one_metrics_label() {
    let s = start(&[]);
    let base = format!("http://127.0.0.1:{}", s.http);
    let grpc = s.server.addr();
    common::rt().block_on(async {
        let h2 = reqwest::Client::builder()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        let empty_message = vec![0u8; 5];
        const CALLS: usize = 200;
        for i in 0..CALLS {
            let path = match i % 2 {
                0 => format!("/api.Registry/Made{i}Up"),
                _ => format!("/made{i}.Up/Method"),
            };
            let resp = h2
                .post(format!("{grpc}{path}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(empty_message.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.headers()["grpc-status"], "12", "{path}: UNIMPLEMENTED");
        }
        let (_, _, text) = get(&format!("{base}/metrics"), reqwest::Method::GET, &[]).await;
        assert!(
            !text.to_lowercase().contains("made"),
            "a made-up method reached /metrics"
        );
        assert_eq!(
            metric(
                &text,
                "opreg_grpc_requests_total{method=\"other\",code=\"Unimplemented\"}"
            ),
            Some(CALLS as f64)
        );
        // One series per metric for all of them, not one per name.
        let series = text
            .lines()
            .filter(|l| l.starts_with("opreg_grpc_requests_total{"))
            .count();
        assert!(series <= 2, "{series} request series:\n{text}");
    });
}
