//! catalogd's headers on the HTTP port, as its `gzhttp` wrapper and Go's `http.ServeContent`
//! give them: `Vary: Accept-Encoding` on every answer, zstd preferred when offered, a 304 that
//! keeps `Last-Modified`, a HEAD on `/metas` that claims no length, and catalog names that are
//! DNS-1123 subdomains. Real binary, real HTTP client (reqwest), the demo catalog.

use crate::common;

use common::{free_port, opreg, Server};

/// Every frame of `b`, joined (RFC 8878: a zstd stream is one or more frames).
fn unzstd(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut b).unwrap();
        std::io::Read::read_to_end(&mut frame, &mut out).unwrap();
    }
    out
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).unwrap();
    out
}

#[test]
fn headers_as_catalogd() {
    let http = free_port();
    let s = Server::start(&[
        "--http-port",
        &http.to_string(),
        "--catalog-name",
        "my.catalog",
    ]);
    let root = format!("http://127.0.0.1:{http}");
    let base = format!("{root}/catalogs/my.catalog/api/v1");
    common::rt().block_on(async {
        let c = reqwest::Client::new();
        let get = |url: String, enc: Option<&'static str>| {
            let mut r = c.get(url);
            if let Some(e) = enc {
                r = r.header("Accept-Encoding", e);
            }
            r.send()
        };
        let all = get(format!("{base}/all"), None).await.unwrap();
        assert_eq!(all.status(), 200);
        let lm = all.headers()["last-modified"].clone();
        let plain = all.bytes().await.unwrap();
        assert!(plain.len() > 1024);

        // Vary on every answer: the catalog's, a 404, a 400, health and metrics.
        for path in [
            format!("{base}/all"),
            format!("{base}/metas?schema=olm.package"),
            format!("{root}/catalogs/other/api/v1/all"),
            format!("{root}/catalogs/Bad/api/v1/all"),
            format!("{root}/nope"),
            format!("{root}/healthz"),
            format!("{root}/metrics"),
        ] {
            let r = get(path.clone(), Some("gzip")).await.unwrap();
            assert_eq!(
                r.headers().get("vary").map(|v| v.to_str().unwrap()),
                Some("Accept-Encoding"),
                "{path}"
            );
        }

        // zstd preferred when offered, on /all (precompressed) and on a filtered /metas.
        for (url, want) in [
            (format!("{base}/all"), plain.to_vec()),
            (format!("{base}/metas"), plain.to_vec()),
        ] {
            let r = get(url.clone(), Some("gzip, deflate, br, zstd"))
                .await
                .unwrap();
            assert_eq!(r.headers()["content-encoding"], "zstd", "{url}");
            let len: usize = r.headers()["content-length"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            let body = r.bytes().await.unwrap();
            assert_eq!(body.len(), len);
            assert_eq!(unzstd(&body), want, "{url}");
            let r = get(url.clone(), Some("gzip")).await.unwrap();
            assert_eq!(r.headers()["content-encoding"], "gzip", "{url}");
            assert_eq!(gunzip(&r.bytes().await.unwrap()), want, "{url}");
            let r = get(url.clone(), Some("zstd;q=0, gzip")).await.unwrap();
            assert_eq!(r.headers()["content-encoding"], "gzip", "{url}");
        }
        let metas = get(format!("{base}/metas?schema=olm.bundle"), None)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(metas.len() > 1024, "{}", metas.len());
        let r = get(format!("{base}/metas?schema=olm.bundle"), Some("zstd"))
            .await
            .unwrap();
        assert_eq!(r.headers()["content-encoding"], "zstd");
        assert_eq!(unzstd(&r.bytes().await.unwrap()), metas.to_vec());

        // A 304 on /all (and /metas) keeps Last-Modified.
        for url in [format!("{base}/all"), format!("{base}/metas")] {
            let r = c
                .get(&url)
                .header("If-Modified-Since", lm.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 304, "{url}");
            assert_eq!(r.headers().get("last-modified"), Some(&lm), "{url}");
        }

        // HEAD on /metas claims no length (catalogd writes no body); on /all it is the file's.
        let r = c
            .head(format!("{base}/metas?schema=olm.package"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            r.headers().get("content-length").is_none(),
            "{:?}",
            r.headers()
        );
        assert_eq!(r.headers()["content-type"], "application/jsonl");
        let r = c.head(format!("{base}/all")).send().await.unwrap();
        assert_eq!(
            r.headers()["content-length"].to_str().unwrap(),
            plain.len().to_string()
        );
        // A range is served from the file as it is, even when compression is offered.
        let r = c
            .get(format!("{base}/all"))
            .header("Range", "bytes=5-9")
            .header("Accept-Encoding", "zstd, gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 206);
        assert!(r.headers().get("content-encoding").is_none());
        assert_eq!(r.bytes().await.unwrap(), plain.slice(5..10));
    });
    assert_eq!(s.terminate(), Some(0));
}

#[test]
fn catalog_names_are_dns1123_subdomains() {
    for bad in ["Bad", "-a", "", "a..b", "a_b"] {
        let arg = format!("--catalog-name={bad}");
        let (code, _, err) = opreg(&["serve", "--http-port", "0", &arg]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--catalog-name"), "{err}");
    }
}

/// A `/metas` answer by package or schema is one valid gzip member (or zstd frames) whose
/// compressed runs are bytes of the `/all` copy, decoded here by the `gzip` program.
#[test]
fn compressed_metas_answers_are_cut_from_the_copies() {
    let http = free_port();
    let s = Server::start(&["--http-port", &http.to_string()]);
    let base = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1");
    let gunzip_cli = |b: &[u8]| {
        let mut child = std::process::Command::new("gzip")
            .arg("-dc")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("gzip");
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), b).unwrap();
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "gzip -dc failed");
        out.stdout
    };
    common::rt().block_on(async {
        let c = reqwest::Client::new();
        let get = |url: String, enc: &'static str| {
            let c = c.clone();
            async move {
                let r = c
                    .get(url)
                    .header("Accept-Encoding", enc)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                let coding = r
                    .headers()
                    .get("content-encoding")
                    .map(|v| v.to_str().unwrap().to_string());
                (coding, r.bytes().await.unwrap().to_vec())
            }
        };
        let (_, all_gz) = get(format!("{base}/all"), "gzip").await;
        let (_, all_zst) = get(format!("{base}/all"), "zstd").await;
        let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        let mut compressed = 0;
        // (query, whether its objects are one stretch of the file)
        for (q, one_stretch) in [
            ("package=cve-demo", true),
            ("package=example", true),
            ("package=zstream", true),
            ("schema=olm.bundle&package=zstream", true),
            ("schema=olm.bundle", false),
            ("schema=olm.package", false),
        ] {
            let url = format!("{base}/metas?{q}");
            let (coding, plain) = get(url.clone(), "identity").await;
            assert_eq!(coding, None);
            if plain.len() < 1024 {
                continue;
            }
            compressed += 1;
            let (coding, gz) = get(url.clone(), "gzip").await;
            assert_eq!(coding.as_deref(), Some("gzip"), "{q}");
            assert_eq!(gunzip_cli(&gz), plain, "{q}");
            assert_eq!(gz[..10], all_gz[..10], "{q}: the copy's header");
            assert_eq!(
                contains(&all_gz, &gz[10..gz.len() - 10]),
                one_stretch,
                "{q}"
            );
            let (coding, zst) = get(url.clone(), "zstd").await;
            assert_eq!(coding.as_deref(), Some("zstd"), "{q}");
            assert_eq!(unzstd(&zst), plain, "{q}");
            assert_eq!(contains(&all_zst, &zst), one_stretch, "{q}");
        }
        assert!(compressed >= 3, "only {compressed} answers were compressed");
    });
    assert_eq!(s.terminate(), Some(0));
}
