//! catalogd's gzip threshold at its boundary. catalogd wraps its handler in klauspost's
//! `gzhttp.GzipHandler` with the defaults: `DefaultMinSize = 1024`, and a body is compressed
//! when its length is at least that. Here two `/api/v1/metas` answers of exactly 1023 and 1024
//! bytes are asked for with `Accept-Encoding: gzip`, over the real binary and reqwest.

use crate::common;

use common::{free_port, Server};

/// A catalog with packages `pa` and `pb` whose `olm.package` lines are `a_len` and `a_len + 1`
/// bytes long (newline included), as catalogd stores them.
fn catalog(dir: &std::path::Path, a_len: usize) -> std::path::PathBuf {
    let write = |pad: usize| {
        let f = dir.join("catalog.json");
        let mut docs = Vec::new();
        for (name, extra) in [("pa", 0), ("pb", 1)] {
            docs.push(serde_json::json!({"schema": "olm.package", "name": name, "defaultChannel": "stable",
                "description": "d".repeat(pad + extra)}));
            docs.push(
                serde_json::json!({"schema": "olm.channel", "package": name, "name": "stable",
                "entries": [{"name": format!("{name}.v1.0.0")}]}),
            );
            docs.push(serde_json::json!({"schema": "olm.bundle", "package": name, "name": format!("{name}.v1.0.0"),
                "image": format!("example.com/{name}:1"),
                "properties": [{"type": "olm.package", "value": {"packageName": name, "version": "1.0.0"}}]}));
        }
        // serde_json writes each object with sorted keys, compact: as catalogd stores it.
        let text: Vec<String> = docs.iter().map(|d| d.to_string()).collect();
        std::fs::write(&f, text.join("\n")).unwrap();
        (f, text[0].len() + 1)
    };
    let (_, trial) = write(100);
    let (f, got) = write(100 + a_len - trial);
    assert_eq!(got, a_len);
    f
}

#[test]
fn gzip_from_1024_bytes_as_catalogd() {
    let dir = tempfile::tempdir().unwrap();
    let src = catalog(dir.path(), 1023);
    let http = free_port();
    let s = Server::start(&[src.to_str().unwrap(), "--http-port", &http.to_string()]);
    let base = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1/metas?schema=olm.package");
    common::rt().block_on(async {
        let client = reqwest::Client::new();
        for (name, len, gzipped) in [("pa", 1023, false), ("pb", 1024, true)] {
            let plain = client
                .get(format!("{base}&name={name}"))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            assert_eq!(plain.len(), len, "{name}");
            let resp = client
                .get(format!("{base}&name={name}"))
                .header("Accept-Encoding", "gzip")
                .send()
                .await
                .unwrap();
            let enc = resp.headers().get("content-encoding").cloned();
            assert_eq!(enc.is_some(), gzipped, "{len} bytes: {enc:?}");
            let body = resp.bytes().await.unwrap();
            let mut out = Vec::new();
            if gzipped {
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut out)
                    .unwrap();
            } else {
                out = body.to_vec();
            }
            assert_eq!(out, plain);
        }
    });
    assert_eq!(s.terminate(), Some(0));
}
