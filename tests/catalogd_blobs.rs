//! catalogd's `/api/v1/all` and `/api/v1/metas` serve each meta of an FBC source as catalogd
//! stores it: the whole object (fields opreg does not know kept, in the OLM schemas and in
//! custom ones), keys sorted at every level, compact, no HTML escaping, one per line, in the
//! order the files are walked. Integers keep their value (catalogd's decoder rounds those
//! above 2^53). The expected lines are written out by hand.

use crate::common;

use common::{free_port, Server};

/// Two files, walked in name order: `a.json` (unsorted keys, odd spacing, unknown fields, a
/// big integer, HTML characters) and `b/c.yaml` (a custom schema and a channel).
fn source(dir: &std::path::Path) -> std::path::PathBuf {
    let src = dir.join("catalog");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(
        src.join("a.json"),
        r#"{ "schema" : "olm.package", "name": "p", "defaultChannel": "s",
  "description": "<b>Tom & Jerry</b>", "x-extra": {"z": 1, "a": [3, 2, 1]} }
{"schema":"olm.bundle","package":"p","name":"p.v1","image":"example.com/p:v1",
 "x-bundle-note":{"b":"second","a":"first"},
 "properties":[{"type":"olm.package","value":{"version":"1.0.0","packageName":"p"}},
   {"type":"example.big","value":{"n":12345678901234567890,"m":9007199254740993,"f":1.5}}]}
"#,
    )
    .unwrap();
    std::fs::write(
        src.join("b").join("c.yaml"),
        "schema: olm.channel\npackage: p\nname: s\nentries:\n  - name: p.v1\n    x-entry-note: kept\nx-channel-note: also kept\n---\nschema: example.custom\npackage: p\nname: extra\nzeta: [1, 2]\nalpha: {y: 2, x: 1}\n",
    )
    .unwrap();
    src
}

const PACKAGE: &str = r#"{"defaultChannel":"s","description":"<b>Tom & Jerry</b>","name":"p","schema":"olm.package","x-extra":{"a":[3,2,1],"z":1}}"#;
const BUNDLE: &str = r#"{"image":"example.com/p:v1","name":"p.v1","package":"p","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"example.big","value":{"f":1.5,"m":9007199254740993,"n":12345678901234567890}}],"schema":"olm.bundle","x-bundle-note":{"a":"first","b":"second"}}"#;
const CHANNEL: &str = r#"{"entries":[{"name":"p.v1","x-entry-note":"kept"}],"name":"s","package":"p","schema":"olm.channel","x-channel-note":"also kept"}"#;
const CUSTOM: &str = r#"{"alpha":{"x":1,"y":2},"name":"extra","package":"p","schema":"example.custom","zeta":[1,2]}"#;

async fn get(url: &str) -> (u16, String) {
    let resp = reqwest::get(url).await.expect("request");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[test]
fn all_and_metas_serve_every_meta_as_given_in_walk_order() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let http = free_port();
    let port = http.to_string();
    let server = Server::start(&[src.to_str().unwrap(), "--http-port", &port]);
    let base = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1");
    common::rt().block_on(async {
        let (code, all) = get(&format!("{base}/all")).await;
        assert_eq!(code, 200, "{}", server.log());
        let want = [PACKAGE, BUNDLE, CHANNEL, CUSTOM].join("\n") + "\n";
        assert_eq!(all, want);
        for (query, want) in [
            ("schema=olm.package", vec![PACKAGE]),
            ("schema=olm.bundle&name=p.v1", vec![BUNDLE]),
            ("package=p", vec![BUNDLE, CHANNEL, CUSTOM]),
            ("schema=example.custom", vec![CUSTOM]),
        ] {
            let (code, body) = get(&format!("{base}/metas?{query}")).await;
            assert_eq!(code, 200, "{query}");
            assert_eq!(body.lines().collect::<Vec<_>>(), want, "{query}");
        }
    });
    // gRPC keeps reading the typed catalog: the unknown fields are only catalogd's.
    common::rt().block_on(async {
        let mut reg = server.registry().await;
        let p = reg
            .get_package(opreg::api::GetPackageRequest { name: "p".into() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.default_channel_name, "s");
    });
}

#[test]
fn a_database_source_is_served_as_its_catalog_renders() {
    // An opreg database has no FBC to give back: its catalog is written as render orders it,
    // package by package (read back one package at a time), the metas of no package last.
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    std::fs::write(
        src.join("0-more.yaml"),
        "schema: example.root\nname: r\nnote: of no package\n---\nschema: olm.package\nname: a\ndefaultChannel: c\n---\nschema: olm.channel\npackage: a\nname: c\nentries:\n  - name: a.v2\n    replaces: a.v1\n  - name: a.v1\n---\nschema: olm.bundle\npackage: a\nname: a.v1\nimage: example.com/a:v1\nproperties:\n  - {type: olm.package, value: {packageName: a, version: 1.0.0}}\n---\nschema: olm.bundle\npackage: a\nname: a.v2\nimage: example.com/a:v2\nproperties:\n  - {type: olm.package, value: {packageName: a, version: 2.0.0}}\n  - {type: olm.gvk, value: {group: a.example.com, kind: A, version: v1}}\nrelatedImages:\n  - {name: op, image: example.com/a-op:v2}\n---\nschema: olm.deprecations\npackage: p\nentries:\n  - reference: {schema: olm.bundle, name: p.v1}\n    message: p.v1 is gone\n---\nschema: example.custom\npackage: q\nname: of a package with no olm.package\n",
    )
    .unwrap();
    let db = dir.path().join("c.db");
    let (code, _, err) =
        common::opreg(&["ingest", src.to_str().unwrap(), "-o", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let http = free_port();
    let port = http.to_string();
    let server = Server::start(&[db.to_str().unwrap(), "--http-port", &port]);
    let url = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1/all");
    let (code, all) = common::rt().block_on(get(&url));
    assert_eq!(code, 200, "{}", server.log());
    let served: Vec<serde_json::Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The oracle: `render` of the same database, which reads the whole catalog at once.
    let (code, rendered, err) = common::opreg(&["render", db.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let rendered: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&rendered)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(served, rendered);
    let order: Vec<(String, String)> = served
        .iter()
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (
                s("schema"),
                if s("package").is_empty() {
                    s("name")
                } else {
                    s("package")
                },
            )
        })
        .collect();
    let want = [
        ("olm.package", "a"),
        ("olm.channel", "a"),
        ("olm.bundle", "a"),
        ("olm.bundle", "a"),
        ("olm.package", "p"),
        ("olm.channel", "p"),
        ("olm.bundle", "p"),
        ("example.custom", "p"),
        ("olm.deprecations", "p"),
        ("example.custom", "q"),
        ("example.root", "r"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(order, want);
}
