//! Bundle objects are served as they were given: an `olm.bundle.object` whose data is JSON
//! reaches `csvJson` and `object` byte for byte (key order, spacing, escapes, integers above
//! 2^53), from GetBundle, GetBundleForChannel and ListBundles, as upstream's loader keeps JSON
//! input unchanged. A YAML object is converted to JSON (sorted keys, Go's HTML escapes).
//! The server runs in this process on a free port; the client is tonic's.

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use crate::common;

use base64::Engine;
use common::{rt, InProcess};
use opreg::api;

/// A CSV as an author might write it: keys not sorted, odd spacing, an escaped and an
/// unescaped `<`, a `\/`, and integers no float64 holds.
const CSV: &str = "  {\"kind\":  \"ClusterServiceVersion\", \"apiVersion\":\"operators.coreos.com/v1alpha1\",\n\
  \"metadata\": {\"name\": \"big.v1.0.0\", \"annotations\": {\"z\": \"a\\u003cb <c> \\/ \\u00e9\", \"a\": \"1\"}},\n\
  \"spec\": {\"version\": \"1.0.0\", \"maximum\": 12345678901234567890, \"huge\": 123456789012345678901234567890,\n\
           \"exact\": 9007199254740993, \"float\": 1.50, \"exp\": 1E3 }\n}\n";

/// A second object, JSON on one line with its keys in reverse order.
const SERVICE: &str = r#"{"spec":{"ports":[{"port":8443,"name":"https"}]},"metadata":{"name":"svc"},"kind":"Service","apiVersion":"v1"}"#;

/// A YAML object: converted, with sorted keys and `<` escaped as Go's encoder does.
const CONFIG_MAP: &str =
    "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: cm\ndata:\n  x: \"<y>\"\n";
const CONFIG_MAP_JSON: &str = r#"{"apiVersion":"v1","data":{"x":"\u003cy\u003e"},"kind":"ConfigMap","metadata":{"name":"cm"}}"#;

fn object(data: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(data);
    format!(r#"{{"type":"olm.bundle.object","value":{{"data":"{b64}"}}}}"#)
}

fn catalog(dir: &std::path::Path) {
    let docs = [
        r#"{"schema":"olm.package","name":"big","defaultChannel":"stable"}"#.to_string(),
        r#"{"schema":"olm.channel","package":"big","name":"stable","entries":[{"name":"big.v1.0.0"}]}"#
            .to_string(),
        format!(
            r#"{{"schema":"olm.bundle","package":"big","name":"big.v1.0.0","image":"","properties":[{{"type":"olm.package","value":{{"packageName":"big","version":"1.0.0"}}}},{},{},{}]}}"#,
            object(CSV),
            object(SERVICE),
            object(CONFIG_MAP)
        ),
    ];
    std::fs::write(dir.join("catalog.json"), docs.join("\n")).unwrap();
}

fn check(rpc: &str, b: &api::Bundle) {
    assert_eq!(b.csv_json, CSV, "{rpc}: csvJson");
    assert_eq!(
        b.object,
        [CSV, SERVICE, CONFIG_MAP_JSON],
        "{rpc}: object, in property order"
    );
}

#[test]
fn json_bundle_objects_are_served_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    catalog(dir.path());
    let server = InProcess::start(dir.path());
    rt().block_on(async {
        let mut c = server.registry().await;
        let b = c
            .get_bundle(api::GetBundleRequest {
                pkg_name: "big".into(),
                channel_name: "stable".into(),
                csv_name: "big.v1.0.0".into(),
            })
            .await
            .unwrap()
            .into_inner();
        check("GetBundle", &b);
        let b = c
            .get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: "big".into(),
                channel_name: "stable".into(),
            })
            .await
            .unwrap()
            .into_inner();
        check("GetBundleForChannel", &b);
        let mut s = c
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while let Some(b) = tokio_stream::StreamExt::next(&mut s).await {
            check("ListBundles", &b.unwrap());
            n += 1;
        }
        assert_eq!(n, 1);
    });
}

/// The same manifests round-trip through `render`: each `olm.bundle.object` written (JSON and
/// YAML forms alike) holds the bytes it was given, and rendering the rendered catalog again
/// gives the same bytes.
#[test]
fn bundle_objects_round_trip_through_render() {
    let dir = tempfile::tempdir().unwrap();
    catalog(dir.path());
    let src = dir.path().join("catalog.json");
    let render = |path: &std::path::Path| {
        let (code, out, err) = common::opreg(&["render", path.to_str().unwrap(), "-o", "json"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let first = render(&src);
    let mut objects = Vec::new();
    let stream = serde_json::Deserializer::from_str(&first).into_iter::<serde_json::Value>();
    for doc in stream {
        let doc = doc.unwrap();
        for p in doc["properties"].as_array().into_iter().flatten() {
            if p["type"] == "olm.bundle.object" {
                let data = p["value"]["data"].as_str().unwrap();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap();
                objects.push(String::from_utf8(bytes).unwrap());
            }
        }
    }
    assert_eq!(objects, [CSV, SERVICE, CONFIG_MAP]);
    let again = dir.path().join("rendered.json");
    std::fs::write(&again, &first).unwrap();
    assert_eq!(render(&again), first);
}
