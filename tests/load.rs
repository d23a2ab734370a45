//! Slow consumers: a stalled ListBundles reader must not delay unary calls on the same
//! connection (OLM's catalog-operator calls GetPackage mid-stream without reading the stream),
//! nor anyone on other connections. (The million-request load test is in tests/stress.rs.)

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use crate::common;
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
#[ignore = "heavy tier: cargo test --release -- --ignored (CI runs it)"]
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

/// The server's resident set size in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

async fn open_stalled(
    c: &mut api::registry_client::RegistryClient<tonic::transport::Channel>,
) -> tonic::Streaming<api::Bundle> {
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    s.next().await.unwrap().unwrap();
    s
}

/// Stalled readers, one on a shared connection and many on connections of their own, while
/// other callers on the shared connection and on fresh connections run unary calls and full
/// streams. Everyone succeeds; the stalled streams still deliver everything when read again,
/// and streams abandoned mid-way leave the server serving.
///
/// Only one stalled stream shares a connection: HTTP/2 flow control has a per-connection
/// window as well as per-stream ones, and the Rust client (h2) returns connection window only
/// as the application reads, so a client that leaves two or three big streams unread on one
/// connection starves its own connection (hyper's client defaults: 2 MB per stream, 5 MB per
/// connection). That is the client's doing; the server cannot send past the client's windows.
#[test]
#[ignore = "heavy tier: cargo test --release -- --ignored (CI runs it)"]
fn stalled_readers_on_own_and_shared_connections_delay_no_one() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&[big_catalog(tmp.path()).to_str().unwrap()]);
    let pid = server.child.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = async {
        let idle = rss_kib(pid);
        let mut shared = server.registry().await; // one stalled reader and busy callers
        let mut stalled = vec![open_stalled(&mut shared).await];
        let mut own = Vec::new();
        for _ in 0..24 {
            let mut c = server.registry().await; // a connection for one stalled reader alone
            stalled.push(open_stalled(&mut c).await);
            own.push(c);
        }
        // More stalled streams, each on a connection of its own, to be abandoned.
        let mut abandoned = Vec::new();
        for _ in 0..8 {
            let mut c = server.registry().await;
            abandoned.push((open_stalled(&mut c).await, c));
        }
        tokio::time::sleep(Duration::from_millis(500)).await; // let every window fill
        let stalled_rss = rss_kib(pid);

        let mut callers = Vec::new();
        for k in 0..8 {
            // Half the callers share the connection with a stalled reader.
            let mut c = if k % 2 == 0 {
                shared.clone()
            } else {
                server.registry().await
            };
            callers.push(tokio::spawn(async move {
                for i in 0..100 {
                    let name = format!("pkg{}", (i + k) % 20);
                    let p = c
                        .get_package(api::GetPackageRequest { name: name.clone() })
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(p.name, name);
                    let b = c
                        .get_bundle_for_channel(api::GetBundleInChannelRequest {
                            pkg_name: name.clone(),
                            channel_name: "stable".into(),
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(b.csv_name, format!("{name}.v49.0.0"));
                }
                let mut s = c
                    .list_bundles(api::ListBundlesRequest {})
                    .await
                    .unwrap()
                    .into_inner();
                let mut n = 0;
                while let Some(b) = s.next().await {
                    b.unwrap();
                    n += 1;
                }
                assert_eq!(n, 1000);
            }));
        }
        for c in callers {
            c.await.unwrap();
        }
        // Abandoned streams: the clients go away without reading; the server's producers
        // notice and stop, and serving goes on.
        drop(abandoned);
        let p = own[0]
            .get_package(api::GetPackageRequest {
                name: "pkg3".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.name, "pkg3");
        // Every stalled stream still delivers everything once read again.
        for (i, s) in stalled.iter_mut().enumerate() {
            let mut count = 1;
            while let Some(b) = s.next().await {
                b.unwrap();
                count += 1;
            }
            assert_eq!(count, 1000, "stalled stream {i}");
        }
        let after = rss_kib(pid);
        eprintln!(
            "slow consumers: server VmRSS idle {idle} KiB, with 33 stalled streams {stalled_rss} KiB, after {after} KiB"
        );
        // Bounded buffering: 33 stalled streams of an 8 MB catalog must not each buffer the
        // catalog in the server (that would be over 250 MB).
        assert!(
            stalled_rss < idle + 128 * 1024,
            "33 stalled streams grew the server from {idle} to {stalled_rss} KiB"
        );
    };
    // A generous bound that only turns a deadlock into a failure instead of a hung CI job.
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(300), body)
            .await
            .expect("stalled: callers or streams never completed")
    });
    assert_eq!(server.terminate(), Some(0));
}
