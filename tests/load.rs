//! Behaviour under load: a stalled ListBundles reader must not delay unary calls on the same
//! connection (OLM's catalog-operator calls GetPackage mid-stream without reading the stream).

mod common;
use common::*;
use opreg::api;
use std::time::Duration;
use tokio_stream::StreamExt;

/// A catalog big enough that its ListBundles stream cannot fit in HTTP/2 flow-control windows.
fn big_catalog(dir: &std::path::Path) -> std::path::PathBuf {
    let mut s = String::new();
    let filler = "x".repeat(8 * 1024);
    for p in 0..20 {
        s.push_str(&format!(
            r#"{{"schema":"olm.package","name":"pkg{p}","defaultChannel":"stable"}}"#
        ));
        let mut entries = Vec::new();
        for b in 0..50 {
            let replaces = if b > 0 {
                format!(r#","replaces":"pkg{p}.v{}.0.0""#, b - 1)
            } else {
                String::new()
            };
            entries.push(format!(r#"{{"name":"pkg{p}.v{b}.0.0"{replaces}}}"#));
            s.push_str(&format!(
                r#"{{"schema":"olm.bundle","name":"pkg{p}.v{b}.0.0","package":"pkg{p}","image":"example.com/pkg{p}:v{b}","properties":[{{"type":"olm.package","value":{{"packageName":"pkg{p}","version":"{b}.0.0"}}}},{{"type":"example.filler","value":"{filler}"}}]}}"#
            ));
        }
        s.push_str(&format!(
            r#"{{"schema":"olm.channel","name":"stable","package":"pkg{p}","entries":[{}]}}"#,
            entries.join(",")
        ));
    }
    let f = dir.join("big.json");
    std::fs::write(&f, s).unwrap();
    f
}

#[test]
fn stalled_list_bundles_does_not_delay_get_package() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&[big_catalog(tmp.path()).to_str().unwrap()]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = server.registry().await; // one HTTP/2 connection, shared by all calls below
        let mut stream = c
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let first = stream.next().await.unwrap().unwrap();
        assert!(first
            .properties
            .iter()
            .any(|p| p.r#type == "example.filler"));
        // Stop reading. Give the producer time to fill every window and block.
        tokio::time::sleep(Duration::from_millis(500)).await;
        // A generous bound: it only detects a stall (a deadlock would hit it), it is not a
        // speed assertion.
        for i in 0..200 {
            let name = format!("pkg{}", i % 20);
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                c.get_package(api::GetPackageRequest { name: name.clone() }),
            )
            .await;
            let p = r
                .expect("GetPackage stalled behind an unread ListBundles stream")
                .unwrap()
                .into_inner();
            assert_eq!(p.name, name);
        }
        // Other streams still complete while the first one is stalled.
        let mut pkgs = c
            .list_packages(api::ListPackageRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while let Some(p) = pkgs.next().await {
            p.unwrap();
            n += 1;
        }
        assert_eq!(n, 20);
        // The stalled stream still delivers everything once read again.
        let mut count = 1;
        while let Some(b) = stream.next().await {
            b.unwrap();
            count += 1;
        }
        assert_eq!(count, 1000);
    });
}
