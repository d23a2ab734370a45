//! Swapping the served version under clients: GOAWAY to the gRPC connections open at a swap
//! (in-process server, a raw HTTP/2 connection and a tonic channel), and a swap-under-load run
//! against the real binary (SIGHUP reloads, one of them invalid) with gRPC callers, a slow
//! ListBundles stream, an `/api/v1/all` reader and a health poll every 50 ms.
//!
//! Versions are told apart by content: version K has the packages `base`, `extra-1` ...
//! `extra-K`, and every bundle carries a property `opreg.test.version` whose value is K, so an
//! answer mixing two versions shows two values (or a package set of no version).

use crate::common;

use common::{free_port, rt, InProcess, Server};
use opreg::api;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Version `k` as an FBC JSON stream: `base` with `base_bundles` bundles (each padded with
/// `pad` bytes, to make answers large), plus `extra-1` ... `extra-k` with one bundle each.
fn version(k: u32, base_bundles: usize, pad: usize) -> String {
    let mut out = Vec::new();
    let mut pkg = |name: &str, n: usize, pad: usize| {
        out.push(
            serde_json::json!({"schema": "olm.package", "name": name, "defaultChannel": "stable"}),
        );
        let mut entries = Vec::new();
        for i in 0..n {
            let b = format!("{name}.v0.0.{i}");
            let mut e = serde_json::json!({ "name": b });
            if i > 0 {
                e["replaces"] = format!("{name}.v0.0.{}", i - 1).into();
            }
            entries.push(e);
            out.push(serde_json::json!({
                "schema": "olm.bundle", "name": b, "package": name,
                "image": format!("example.com/{name}:{i}"),
                "properties": [
                    {"type": "olm.package", "value": {"packageName": name, "version": format!("0.0.{i}")}},
                    {"type": "opreg.test.version", "value": {"k": k, "pad": "x".repeat(pad)}},
                ],
            }));
        }
        out.push(serde_json::json!({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}));
    };
    pkg("base", base_bundles, pad);
    for e in 1..=k {
        pkg(&format!("extra-{e}"), 1, 0);
    }
    out.iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The package names of version `k`.
fn packages_of(k: u32) -> BTreeSet<String> {
    std::iter::once("base".to_string())
        .chain((1..=k).map(|e| format!("extra-{e}")))
        .collect()
}

/// Which version a package set is, if any.
fn version_of(pkgs: &BTreeSet<String>, max: u32) -> Option<u32> {
    (0..=max).find(|k| packages_of(*k) == *pkgs)
}

/// The `opreg.test.version` value in a bundle's properties.
fn tag_of(props: &[api::Property]) -> Option<u64> {
    props
        .iter()
        .find(|p| p.r#type == "opreg.test.version")
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p.value).ok())
        .and_then(|v| v["k"].as_u64())
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn package_set(
    c: &mut api::registry_client::RegistryClient<tonic::transport::Channel>,
) -> Result<BTreeSet<String>, tonic::Status> {
    let mut s = c
        .list_packages(api::ListPackageRequest {})
        .await?
        .into_inner();
    let mut out = BTreeSet::new();
    while let Some(p) = s.message().await? {
        out.insert(p.name);
    }
    Ok(out)
}

/// A health check sent over a bare HTTP/2 connection (h2), so the test sees the connection
/// itself: its driver ends when the server sends GOAWAY and closes it.
async fn h2_health_check(h2c: &mut h2::client::SendRequest<bytes::Bytes>) -> http::StatusCode {
    let req = http::Request::post("/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (resp, mut body) = h2c.send_request(req, false).unwrap();
    // One gRPC message: uncompressed, length 0 (an empty HealthCheckRequest).
    body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    resp.await.unwrap().status()
}

#[test]
fn a_swap_sends_goaway_and_a_stream_in_flight_finishes_on_its_version() {
    const BASE: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let (v1, v2) = (dir.path().join("v1.json"), dir.path().join("v2.json"));
    // 300 bundles of 16 KiB: more than the flow-control windows hold, so the stream is still
    // being produced when the swap happens.
    std::fs::write(&v1, version(1, BASE, 16 << 10)).unwrap();
    std::fs::write(&v2, version(2, BASE, 16 << 10)).unwrap();
    let db2 = dir.path().join("v2.db");
    common::ingest_in_process(std::slice::from_ref(&v2), &db2);
    let s = InProcess::start(&v1);

    rt().block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            // A bare HTTP/2 connection, opened and used before the swap.
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
                .await
                .unwrap();
            let (mut h2c, conn) = h2::client::handshake(tcp).await.unwrap();
            let conn = tokio::spawn(conn);
            assert_eq!(h2_health_check(&mut h2c).await, http::StatusCode::OK);

            let mut c = s.registry().await;
            assert_eq!(package_set(&mut c).await.unwrap(), packages_of(1));
            let mut stream = c
                .list_bundles(api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner();
            let first = stream.message().await.unwrap().unwrap();
            assert_eq!(tag_of(&first.properties), Some(1));
            assert!(!conn.is_finished(), "the connection closed before any swap");

            let store = opreg::store::Store::open_unverified(&db2).unwrap();
            store.package_index().unwrap();
            s.state.set(store);

            // GOAWAY: the server closes the bare connection (it has nothing in flight).
            let closed = tokio::time::timeout(Duration::from_secs(20), conn).await;
            assert!(
                matches!(closed, Ok(Ok(Ok(())))),
                "the connection open at the swap was not closed with GOAWAY: {closed:?}"
            );

            // The stream started before the swap completes whole, on version 1.
            let mut n = 1;
            let mut pkgs = BTreeSet::from([first.package_name.clone()]);
            while let Some(b) = stream.message().await.unwrap() {
                assert_eq!(
                    tag_of(&b.properties),
                    Some(1),
                    "{} from another version",
                    b.csv_name
                );
                pkgs.insert(b.package_name);
                n += 1;
                if n % 50 == 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            assert_eq!(n, BASE + 1);
            assert_eq!(pkgs, packages_of(1));

            // The same client reconnects and a new call sees version 2.
            assert_eq!(package_set(&mut c).await.unwrap(), packages_of(2));
        })
        .await
        .expect("the test did not finish within 120 s");
    });
}

/// What the load run saw: failures (any failed call, mixed answer or health other than
/// SERVING) and counts of what succeeded.
#[derive(Default)]
struct Seen {
    failures: Mutex<Vec<String>>,
    calls: AtomicUsize,
    streams: AtomicUsize,
    alls: AtomicUsize,
    polls: AtomicUsize,
    /// Calls a GOAWAY refused before processing, sent again.
    retried: AtomicUsize,
    /// The versions answers came from.
    versions: Mutex<BTreeSet<u32>>,
}

impl Seen {
    fn fail(&self, what: String) {
        self.failures.lock().unwrap().push(what);
    }
    fn saw(&self, k: u32) {
        self.versions.lock().unwrap().insert(k);
    }
}

const MAX_VERSION: u32 = 4;
/// One call's bound: a call that takes longer counts as failed (and the test cannot hang).
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// Why a call did not succeed.
enum Fail {
    /// Never processed: the client sent it on a connection that had just been told to go
    /// away (refused by the GOAWAY), or queued it for one that closed before it was sent. grpc-go (OLM's client) retries such calls
    /// transparently; tonic does not, so this test's client does, as grpc-go would.
    Unprocessed,
    Other(String),
}

impl From<tonic::Status> for Fail {
    fn from(s: tonic::Status) -> Fail {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(&s);
        while let Some(x) = e {
            // hyper's "canceled": queued for a connection that closed before it was sent.
            if let Some(h) = x.downcast_ref::<hyper::Error>() {
                if h.is_canceled() {
                    return Fail::Unprocessed;
                }
            }
            if let Some(h) = x.downcast_ref::<h2::Error>() {
                if h.is_go_away() && h.is_remote() && h.reason() == Some(h2::Reason::NO_ERROR) {
                    return Fail::Unprocessed;
                }
            }
            e = x.source();
        }
        Fail::Other(s.to_string())
    }
}

impl From<String> for Fail {
    fn from(s: String) -> Fail {
        Fail::Other(s)
    }
}

/// Runs a call (again, when a GOAWAY refused it unprocessed, at most 3 times), bounded by
/// [`CALL_LIMIT`]; a failure is recorded in `seen`.
async fn bounded<T, F: std::future::Future<Output = Result<T, Fail>>>(
    seen: &Seen,
    what: &str,
    mut call: impl FnMut() -> F,
) -> Option<T> {
    for _ in 0..3 {
        match tokio::time::timeout(CALL_LIMIT, call()).await {
            Ok(Ok(v)) => return Some(v),
            Ok(Err(Fail::Unprocessed)) => {
                seen.retried.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(Fail::Other(e))) => {
                seen.fail(format!("{what}: {e}"));
                return None;
            }
            Err(_) => {
                seen.fail(format!("{what}: no answer within {CALL_LIMIT:?}"));
                return None;
            }
        }
    }
    seen.fail(format!("{what}: refused by GOAWAY 3 times"));
    None
}

/// A ListBundles stream read slowly; it must come whole from one version.
async fn slow_stream(
    c: &mut api::registry_client::RegistryClient<tonic::transport::Channel>,
    base: usize,
) -> Result<u32, Fail> {
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await?
        .into_inner();
    let (mut tags, mut pkgs, mut n) = (BTreeSet::new(), BTreeSet::new(), 0usize);
    while let Some(b) = s.message().await.map_err(|e| Fail::Other(e.to_string()))? {
        tags.insert(tag_of(&b.properties));
        pkgs.insert(b.package_name);
        n += 1;
        if n % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let k = version_of(&pkgs, MAX_VERSION).ok_or(format!("package set {pkgs:?}"))?;
    if tags != BTreeSet::from([Some(u64::from(k))]) || n != base + k as usize {
        return Err(Fail::Other(format!(
            "version {k} stream had tags {tags:?} and {n} bundles"
        )));
    }
    Ok(k)
}

/// `/api/v1/all`: every bundle line from one version, and that version's packages.
fn check_all(body: &str) -> Result<u32, String> {
    let (mut tags, mut pkgs) = (BTreeSet::new(), BTreeSet::new());
    for line in body.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        match v["schema"].as_str() {
            Some("olm.package") => {
                pkgs.insert(v["name"].as_str().unwrap_or_default().to_string());
            }
            Some("olm.bundle") => {
                for p in v["properties"].as_array().into_iter().flatten() {
                    if p["type"] == "opreg.test.version" {
                        tags.insert(p["value"]["k"].as_u64());
                    }
                }
            }
            _ => {}
        }
    }
    let k = version_of(&pkgs, MAX_VERSION).ok_or(format!("/all package set {pkgs:?}"))?;
    if tags != BTreeSet::from([Some(u64::from(k))]) {
        return Err(format!("/all of version {k} had tags {tags:?}"));
    }
    Ok(k)
}

#[test]
fn swap_under_load_fails_no_call_and_mixes_no_answer() {
    const BASE: usize = 150;
    const PAD: usize = 4 << 10;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("catalog");
    std::fs::create_dir(&src).unwrap();
    let file = src.join("catalog.json");
    write_atomically(&file, &version(1, BASE, PAD));
    let http = free_port();
    let server = Server::start(&[
        src.to_str().unwrap(),
        "--http-port",
        &http.to_string(),
        "--no-call-log",
    ]);
    let addr = server.addr();
    let all_url = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1/all");
    let pid = server.child.id() as i32;
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));

    let outcome = rt().block_on(async {
        let mut tasks = Vec::new();
        // Four unary-style callers (ListPackages), each on its own channel.
        for i in 0..4 {
            let (seen, stop, addr) = (seen.clone(), stop.clone(), addr.clone());
            tasks.push(tokio::spawn(async move {
                let c = common::registry_client(&addr).await;
                let call = || {
                    let mut c = c.clone();
                    async move { Ok::<_, Fail>(package_set(&mut c).await?) }
                };
                while !stop.load(Ordering::Relaxed) {
                    if let Some(p) = bounded(&seen, &format!("caller {i}"), call).await {
                        match version_of(&p, MAX_VERSION) {
                            Some(k) => seen.saw(k),
                            None => seen.fail(format!("caller {i}: package set {p:?}")),
                        }
                        seen.calls.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        // A slow ListBundles stream, again and again.
        {
            let (seen, stop, addr) = (seen.clone(), stop.clone(), addr.clone());
            tasks.push(tokio::spawn(async move {
                let c = common::registry_client(&addr).await;
                let call = || {
                    let mut c = c.clone();
                    async move { slow_stream(&mut c, BASE).await }
                };
                while !stop.load(Ordering::Relaxed) {
                    if let Some(k) = bounded(&seen, "stream", call).await {
                        seen.saw(k);
                        seen.streams.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        // An /api/v1/all reader.
        {
            let (seen, stop, url) = (seen.clone(), stop.clone(), all_url.clone());
            tasks.push(tokio::spawn(async move {
                let client = reqwest::Client::new();
                let get = || async {
                    let r = client.get(&url).send().await.map_err(|e| e.to_string())?;
                    if r.status() != 200 {
                        return Err(format!("status {}", r.status()).into());
                    }
                    Ok(check_all(&r.text().await.map_err(|e| e.to_string())?)?)
                };
                while !stop.load(Ordering::Relaxed) {
                    if let Some(k) = bounded(&seen, "/all", get).await {
                        seen.saw(k);
                        seen.alls.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        // Health every 50 ms.
        {
            let (seen, stop, addr) = (seen.clone(), stop.clone(), addr.clone());
            tasks.push(tokio::spawn(async move {
                let ch = tonic::transport::Endpoint::from_shared(addr)
                    .unwrap()
                    .connect_lazy();
                let h = tonic_health::pb::health_client::HealthClient::new(ch);
                let check = || {
                    let mut h = h.clone();
                    async move {
                        Ok::<_, Fail>(
                            h.check(tonic_health::pb::HealthCheckRequest::default())
                                .await?,
                        )
                    }
                };
                let mut tick = tokio::time::interval(Duration::from_millis(50));
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    if let Some(r) = bounded(&seen, "health", check).await {
                        if r.get_ref().status != 1 {
                            seen.fail(format!("health status {}", r.get_ref().status));
                        }
                        seen.polls.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }

        // The swaps: versions 2, then an invalid one, then 3 and 4 (SIGHUP each time).
        let mut c = common::registry_client(&addr).await;
        let mut log_failures = 0;
        for step in ["2", "invalid", "3", "4"] {
            // Let the clients run on the current version first.
            tokio::time::sleep(Duration::from_millis(700)).await;
            if step == "invalid" {
                write_atomically(
                    &file,
                    "{\"schema\": \"olm.bundle\", \"name\": \"orphan\"}\n",
                );
                common::unsafe_kill(pid, 1);
                log_failures += 1;
                let waited = tokio::time::timeout(Duration::from_secs(60), async {
                    while server.log().matches("reload failed").count() < log_failures {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                })
                .await;
                assert!(
                    waited.is_ok(),
                    "the invalid version was not reported:\n{}",
                    server.log()
                );
                continue;
            }
            let k: u32 = step.parse().unwrap();
            write_atomically(&file, &version(k, BASE, PAD));
            common::unsafe_kill(pid, 1);
            let landed = tokio::time::timeout(Duration::from_secs(60), async {
                loop {
                    if let Ok(p) = package_set(&mut c).await {
                        if p == packages_of(k) {
                            return;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await;
            assert!(
                landed.is_ok(),
                "version {k} did not land:\n{}",
                server.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
        stop.store(true, Ordering::Relaxed);
        tokio::time::timeout(Duration::from_secs(90), async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await
    });
    assert!(outcome.is_ok(), "the clients did not stop within 90 s");
    let failures = seen.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}\nserver log:\n{}",
        failures.len(),
        &failures[..failures.len().min(20)],
        server.log()
    );
    let versions = seen.versions.lock().unwrap().clone();
    let counts = (
        seen.calls.load(Ordering::Relaxed),
        seen.streams.load(Ordering::Relaxed),
        seen.alls.load(Ordering::Relaxed),
        seen.polls.load(Ordering::Relaxed),
    );
    assert!(
        counts.1 >= 3 && counts.2 >= 3 && counts.3 >= 20,
        "too little traffic: {counts:?}"
    );
    // Answers came from every version that was served, none from the invalid one.
    assert_eq!(versions, BTreeSet::from([1, 2, 3, 4]), "{counts:?}");
    // Not a failure (see `Fail::Unprocessed`), but worth seeing in the test's output.
    println!(
        "calls, streams, /all reads, health polls: {counts:?}; sent again after GOAWAY: {}",
        seen.retried.load(Ordering::Relaxed)
    );
    assert!(server.log().contains("reload failed"));
    assert_eq!(server.terminate(), Some(0));
}
