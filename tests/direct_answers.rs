//! The unary bundle RPCs are answered by `server::direct`, piece by piece, not by tonic's
//! encoder. What reaches the client must be what tonic sends for the same request: the same
//! status line, content type, body bytes and trailers, errors included. tonic still answers a
//! request the direct path does not take as it is: one with a second, empty message after its
//! own (tonic reads the first and answers it), so each request is sent both ways, over a bare
//! HTTP/2 connection, and the two answers compared.

use crate::common;

use bytes::{Bytes, BytesMut};
use common::{fixture, rt, shared, InProcess};
use opreg::api;
use prost::Message;

/// What a client sees of an answer.
#[derive(Debug, PartialEq)]
struct Answer {
    status: http::StatusCode,
    content_type: Option<String>,
    /// grpc-status and grpc-message in the headers (a trailers-only answer).
    header_status: (Option<String>, Option<String>),
    body: Bytes,
    trailers: Option<Vec<(String, String)>>,
}

fn frame(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b.freeze()
}

async fn call(port: u16, path: &str, body: Bytes) -> Answer {
    call_with(port, path, body, None).await
}

/// [`call`], ending the request with `trailers` when given.
async fn call_with(
    port: u16,
    path: &str,
    body: Bytes,
    trailers: Option<http::HeaderMap>,
) -> Answer {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut h2c, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::post(path)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (resp, mut send) = h2c.send_request(req, false).unwrap();
    send.send_data(body, trailers.is_none()).unwrap();
    if let Some(t) = trailers {
        send.send_trailers(t).unwrap();
    }
    let resp = resp.await.unwrap();
    let h = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (status, content_type) = (resp.status(), h("content-type"));
    let header_status = (h("grpc-status"), h("grpc-message"));
    let mut recv = resp.into_body();
    let mut body = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        recv.flow_control().release_capacity(chunk.len()).unwrap();
        body.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await.unwrap().map(|t| {
        let mut v: Vec<(String, String)> = t
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        v.sort();
        v
    });
    Answer {
        status,
        content_type,
        header_status,
        body: body.freeze(),
        trailers,
    }
}

/// Sends `msg` to `rpc` as one message (the direct path) and with an empty message after it
/// (tonic), checks the answers are equal, and returns the gRPC status code.
async fn same_both_ways(port: u16, rpc: &str, msg: &[u8]) -> String {
    let path = format!("/api.Registry/{rpc}");
    let direct = call(port, &path, frame(msg)).await;
    let mut two = BytesMut::from(&frame(msg)[..]);
    two.extend_from_slice(&frame(&[]));
    let tonic = call(port, &path, two.freeze()).await;
    assert_eq!(direct, tonic, "{rpc} {msg:?}");
    match (&direct.header_status.0, &direct.trailers) {
        (Some(code), _) => code.clone(),
        (None, Some(t)) => t
            .iter()
            .find(|(k, _)| k == "grpc-status")
            .map(|(_, v)| v.clone())
            .unwrap(),
        (None, None) => panic!("{rpc}: no grpc-status"),
    }
}

#[test]
fn bundle_answers_are_what_tonic_sends() {
    // A synthesized CSV (its pieces sent twice) and stored manifests.
    let golden = InProcess::start(&fixture("csv-golden/catalog.yaml"));
    let etcd = InProcess::start(&shared("upstream-manifests"));
    rt().block_on(async {
        let get = |p: &str, c: &str, n: &str| {
            api::GetBundleRequest {
                pkg_name: p.into(),
                channel_name: c.into(),
                csv_name: n.into(),
            }
            .encode_to_vec()
        };
        let head = |p: &str, c: &str| {
            api::GetBundleInChannelRequest {
                pkg_name: p.into(),
                channel_name: c.into(),
            }
            .encode_to_vec()
        };
        let replacing = |p: &str, c: &str, n: &str| {
            api::GetReplacementRequest {
                csv_name: n.into(),
                pkg_name: p.into(),
                channel_name: c.into(),
            }
            .encode_to_vec()
        };
        let provider = |g: &str, v: &str, k: &str| {
            api::GetDefaultProviderRequest {
                group: g.into(),
                version: v.into(),
                kind: k.into(),
                plural: String::new(),
            }
            .encode_to_vec()
        };
        let g = golden.port;
        let cases: Vec<(u16, &str, Vec<u8>, &str)> = vec![
            (g, "GetBundle", get("gold", "stable", "gold.v1.1.0"), "0"),
            (g, "GetBundle", get("gold", "stable", "gold.v1.0.0"), "0"),
            (g, "GetBundle", get("gold", "stable", "gold.v9"), "5"),
            (g, "GetBundle", get("gold", "", "gold.v1.0.0"), "3"),
            (g, "GetBundleForChannel", head("gold", "stable"), "0"),
            (g, "GetBundleForChannel", head("gold", "beta"), "5"),
            (
                g,
                "GetBundleThatReplaces",
                replacing("gold", "stable", "gold.v1.0.0"),
                "0",
            ),
            (
                g,
                "GetBundleThatReplaces",
                replacing("gold", "stable", "gold.v1.1.0"),
                "5",
            ),
            (
                etcd.port,
                "GetBundle",
                get("etcd", "alpha", "etcdoperator.v0.9.2"),
                "0",
            ),
            (etcd.port, "GetBundleForChannel", head("etcd", "alpha"), "0"),
            (
                etcd.port,
                "GetDefaultBundleThatProvides",
                provider("etcd.database.coreos.com", "v1beta2", "EtcdCluster"),
                "0",
            ),
            (
                etcd.port,
                "GetDefaultBundleThatProvides",
                provider("no.such", "v1", "Thing"),
                "5",
            ),
            (
                etcd.port,
                "GetDefaultBundleThatProvides",
                provider("", "", ""),
                "3",
            ),
            // Not a request message at all: tonic's decode error, both ways.
            (g, "GetBundle", vec![0xff, 0xff, 0xff], "13"),
        ];
        for (port, rpc, msg, code) in cases {
            assert_eq!(same_both_ways(port, rpc, &msg).await, code, "{rpc} {msg:?}");
        }
    });
}

#[test]
fn requests_the_direct_path_leaves_alone_get_tonics_answers() {
    let s = InProcess::start(&fixture("csv-golden/catalog.yaml"));
    rt().block_on(async {
        let path = "/api.Registry/GetBundleForChannel";
        // A message declared larger than tonic's 4 MiB limit: tonic refuses it from its
        // header alone (OUT_OF_RANGE).
        let mut big = BytesMut::new();
        big.extend_from_slice(&[0]);
        big.extend_from_slice(&((4u32 << 20) + 1).to_be_bytes());
        big.extend_from_slice(b"partial");
        let a = call(s.port, path, big.freeze()).await;
        assert_eq!(a.header_status.0.as_deref(), Some("11"), "{a:?}");
        // The compressed flag without a grpc-encoding: tonic's INTERNAL.
        let mut flagged = BytesMut::from(&frame(b"")[..]);
        flagged[0] = 1;
        let a = call(s.port, path, flagged.freeze()).await;
        assert_eq!(a.header_status.0.as_deref(), Some("13"), "{a:?}");
        // No message at all.
        let a = call(s.port, path, Bytes::new()).await;
        assert_eq!(a.header_status.0.as_deref(), Some("13"), "{a:?}");
        // A message followed by request trailers: tonic answers it, as the direct path does
        // the same message alone.
        let msg = api::GetBundleInChannelRequest {
            pkg_name: "gold".into(),
            channel_name: "stable".into(),
        }
        .encode_to_vec();
        let mut t = http::HeaderMap::new();
        t.insert("x-note", http::HeaderValue::from_static("1"));
        let with = call_with(s.port, path, frame(&msg), Some(t)).await;
        let alone = call(s.port, path, frame(&msg)).await;
        assert_eq!(with, alone);
        assert!(with.body.len() > 1000, "{with:?}");
    });
}

/// A package whose first bundle's CSV template (about 250 KB) spans many database pages and
/// far exceeds the direct path's small pieces, and whose second's is small.
fn large_template_catalog(dir: &std::path::Path) -> std::path::PathBuf {
    let long: String = (0..6000)
        .map(|i| format!("line {i} of a long <description> & more\n"))
        .collect();
    let bundle = |v: &str, desc: &str| {
        serde_json::json!({
            "schema": "olm.bundle", "package": "big", "name": format!("big.v{v}"),
            "image": format!("quay.io/x/big:{v}"),
            "properties": [
                {"type": "olm.package", "value": {"packageName": "big", "version": v}},
                {"type": "olm.csv.metadata", "value": {"description": desc, "displayName": "Big"}},
            ],
        })
    };
    let docs = [
        serde_json::json!({"schema": "olm.package", "name": "big", "defaultChannel": "stable",
            "description": "the package's own", "icon": {"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}}),
        serde_json::json!({"schema": "olm.channel", "package": "big", "name": "stable",
            "entries": [{"name": "big.v1.0.0"}, {"name": "big.v2.0.0", "replaces": "big.v1.0.0"}]}),
        bundle("1.0.0", &long),
        bundle("2.0.0", "short"),
    ];
    let path = dir.join("big.json");
    let text: Vec<String> = docs.iter().map(|d| d.to_string()).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

#[test]
fn a_large_csv_template_is_answered_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = large_template_catalog(dir.path());
    let cat = opreg::source::load_sources(std::slice::from_ref(&src), &mut Vec::new()).unwrap();
    let pkg = &cat.packages["big"];
    let s = InProcess::start(&src);
    rt().block_on(async {
        let mut c = s.registry().await;
        for name in ["big.v1.0.0", "big.v2.0.0"] {
            let req = api::GetBundleRequest {
                pkg_name: "big".into(),
                channel_name: "stable".into(),
                csv_name: name.into(),
            };
            assert_eq!(
                same_both_ways(s.port, "GetBundle", &req.encode_to_vec()).await,
                "0"
            );
            let got = c.get_bundle(req).await.unwrap().into_inner();
            let want = opreg::wire::full_wire(pkg, &pkg.bundles[name]);
            assert_eq!(got.csv_json, want.csv_json, "{name}");
            assert_eq!(got.object, want.object, "{name}");
        }
        let v1 = &c
            .get_bundle_that_replaces(api::GetReplacementRequest {
                csv_name: "big.v1.0.0".into(),
                pkg_name: "big".into(),
                channel_name: "stable".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(v1.csv_name, "big.v2.0.0");
    });
    // The first template is large (it overflows many pages, and its pieces are sent as they
    // are), the second smaller than the pieces `server::direct` sends on their own (4 KiB): its
    // pieces are coalesced.
    let db = dir.path().join("big.db");
    common::ingest_in_process(std::slice::from_ref(&src), &db);
    let sizes: Vec<i64> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT octet_length(csv_template) FROM bundle ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(sizes[0] > 64 << 10 && sizes[1] < 4 << 10, "{sizes:?}");
}
