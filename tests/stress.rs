//! The server under load, against the real binary on loopback serving the real community
//! catalog: a million mixed requests over 64 HTTP/2 connections with flat memory. Hostile
//! requests are tests/hostile_requests.rs, shutdown with streams in flight
//! tests/graceful_shutdown.rs, stalled stream readers tests/load.rs; the helpers here serve all.
//!
//! The tests of these files take turns (one lock, [`serial`]), so the CPU-heavy load test never
//! shares the machine's two cores with another of them.

#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use crate::common;
use common::*;
use opreg::api;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

/// Channel entries in community-operators.fbc.json (its README), so ListBundles messages.
pub(crate) const COMMUNITY_ENTRIES: usize = 10_047;

pub(crate) const COMMUNITY_PACKAGES: usize = 333;

pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The community catalog, ingested once per run of this test binary.
fn community_db() -> &'static Path {
    static DB: OnceLock<PathBuf> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stress");
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("community.db");
        let src = corpus_valid("community-operators.fbc.json");
        let started = Instant::now();
        ingest_ok(&src, &db);
        eprintln!(
            "ingested {} in {:.1} s",
            src.display(),
            started.elapsed().as_secs_f64()
        );
        db
    })
}

pub(crate) fn community_server(extra: &[&str]) -> Server {
    // A million calls would write a million log lines: the per-call log is off here.
    let mut args = vec![community_db().to_str().unwrap(), "--no-call-log"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One new HTTP/2 connection.
pub(crate) async fn connect(server: &Server) -> Channel {
    Endpoint::from_shared(server.addr())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

type Registry = api::registry_client::RegistryClient<Channel>;

pub(crate) type Health = tonic_health::pb::health_client::HealthClient<Channel>;

pub(crate) fn registry(ch: Channel) -> Registry {
    api::registry_client::RegistryClient::new(ch).max_decoding_message_size(64 << 20)
}

/// The server's resident set size in KiB.
fn rss_kib(pid: u32) -> u64 {
    proc_status_kib(pid, "VmRSS")
}

pub(crate) async fn health_status(ch: Channel) -> Result<i32, tonic::Status> {
    let mut h = Health::new(ch);
    h.check(tonic_health::pb::HealthCheckRequest {
        service: String::new(),
    })
    .await
    .map(|r| r.into_inner().status)
}

/// Reads a stream to its end, returning how many messages arrived and how it ended.
pub(crate) async fn drain<T>(s: &mut tonic::Streaming<T>) -> (usize, Result<(), tonic::Status>) {
    let mut n = 0;
    while let Some(m) = s.next().await {
        match m {
            Ok(_) => n += 1,
            Err(e) => return (n, Err(e)),
        }
    }
    (n, Ok(()))
}

// ---------------------------------------------------------------------------------------------
// Load.

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.trim()
                .replace('_', "")
                .parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

/// What the load test asks for, taken from the served catalog itself.
struct Work {
    packages: Vec<String>,
    /// (package, channel, head CSV)
    heads: Vec<(String, String, String)>,
    /// (package, channel, a CSV that some entry of that channel replaces)
    replaced: Vec<(String, String, String)>,
    /// (package, channel, CSV) of every bundle
    bundles: Vec<(String, String, String)>,
    /// (group, version, kind) provided by some channel head
    gvks: Vec<(String, String, String)>,
}

async fn work_from_catalog(c: &mut Registry) -> Work {
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut bundles = Vec::new();
    let mut replaced = Vec::new();
    while let Some(b) = s.next().await {
        let b = b.unwrap();
        if !b.replaces.is_empty() {
            replaced.push((
                b.package_name.clone(),
                b.channel_name.clone(),
                b.replaces.clone(),
            ));
        }
        bundles.push(b);
    }
    assert_eq!(bundles.len(), COMMUNITY_ENTRIES);
    let mut names = Vec::new();
    let mut p = c
        .list_packages(api::ListPackageRequest {})
        .await
        .unwrap()
        .into_inner();
    while let Some(n) = p.next().await {
        names.push(n.unwrap().name);
    }
    assert_eq!(names.len(), COMMUNITY_PACKAGES);
    let mut heads = Vec::new();
    for n in &names {
        let pkg = c
            .get_package(api::GetPackageRequest { name: n.clone() })
            .await
            .unwrap()
            .into_inner();
        for ch in pkg.channels {
            heads.push((n.clone(), ch.name, ch.csv_name));
        }
    }
    let head_set: std::collections::HashSet<_> = heads.iter().map(|h| h.2.clone()).collect();
    let mut gvks: Vec<_> = bundles
        .iter()
        .filter(|b| head_set.contains(&b.csv_name))
        .flat_map(|b| b.provided_apis.iter())
        .filter(|g| !g.version.is_empty() && !g.kind.is_empty())
        .map(|g| (g.group.clone(), g.version.clone(), g.kind.clone()))
        .collect();
    gvks.sort();
    gvks.dedup();
    assert!(!gvks.is_empty() && !replaced.is_empty());
    Work {
        packages: names,
        heads,
        replaced,
        bundles: bundles
            .into_iter()
            .map(|b| (b.package_name, b.channel_name, b.csv_name))
            .collect(),
        gvks,
    }
}

/// One request of the mix, chosen by its number; Err describes anything unexpected.
async fn one_request(
    i: usize,
    c: &mut Registry,
    h: &mut Health,
    w: &Work,
    list_bundles_every: usize,
) -> Result<&'static str, String> {
    let pick = |len: usize| (i / 100).wrapping_mul(2_654_435_761) % len;
    let err = |what: &str, e: tonic::Status| format!("{what}: {:?} {}", e.code(), e.message());
    if i % list_bundles_every == list_bundles_every - 1 {
        let mut s = c
            .list_bundles(api::ListBundlesRequest {})
            .await
            .map_err(|e| err("ListBundles", e))?
            .into_inner();
        let (n, end) = drain(&mut s).await;
        end.map_err(|e| err("ListBundles stream", e))?;
        return if n == COMMUNITY_ENTRIES {
            Ok("ListBundles")
        } else {
            Err(format!("ListBundles gave {n} bundles"))
        };
    }
    // The mix, per 100 requests: GetPackage 48, Health/Check 20,
    // GetChannelEntriesThatReplace 14, GetPackage of a missing package 6, GetBundleForChannel 3,
    // GetBundleThatReplaces 2, GetBundle 1, GetLatestChannelEntriesThatProvide 3,
    // ListPackages 3 (333 messages). Bundles are the costly answers (tens of KB each, about 8×
    // the CPU of a GetPackage), so they are 6% to keep a million requests within CI's budget.
    match i % 100 {
        0..=47 => {
            let name = &w.packages[pick(w.packages.len())];
            let p = c
                .get_package(api::GetPackageRequest { name: name.clone() })
                .await
                .map_err(|e| err("GetPackage", e))?
                .into_inner();
            (p.name == *name && !p.channels.is_empty())
                .then_some("GetPackage")
                .ok_or_else(|| format!("GetPackage {name}: got {}", p.name))
        }
        88..=90 => {
            let (p, ch, head) = &w.heads[pick(w.heads.len())];
            let b = c
                .get_bundle_for_channel(api::GetBundleInChannelRequest {
                    pkg_name: p.clone(),
                    channel_name: ch.clone(),
                })
                .await
                .map_err(|e| err("GetBundleForChannel", e))?
                .into_inner();
            (b.csv_name == *head)
                .then_some("GetBundleForChannel")
                .ok_or_else(|| format!("GetBundleForChannel {p}/{ch}: {} != {head}", b.csv_name))
        }
        91..=92 => {
            let (p, ch, csv) = &w.replaced[pick(w.replaced.len())];
            let b = c
                .get_bundle_that_replaces(api::GetReplacementRequest {
                    csv_name: csv.clone(),
                    pkg_name: p.clone(),
                    channel_name: ch.clone(),
                })
                .await
                .map_err(|e| err("GetBundleThatReplaces", e))?
                .into_inner();
            (b.package_name == *p && b.channel_name == *ch && b.csv_name != *csv)
                .then_some("GetBundleThatReplaces")
                .ok_or_else(|| format!("GetBundleThatReplaces {p}/{ch}/{csv}: {b:?}"))
        }
        68..=81 => {
            let (_, _, csv) = &w.replaced[pick(w.replaced.len())];
            let mut s = c
                .get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                    csv_name: csv.clone(),
                })
                .await
                .map_err(|e| err("GetChannelEntriesThatReplace", e))?
                .into_inner();
            // Entries that replace or skip it; some entry of the channel replaces it.
            let mut n = 0;
            let mut replacing = 0;
            while let Some(e) = s.next().await {
                let e = e.map_err(|e| err("GetChannelEntriesThatReplace stream", e))?;
                n += 1;
                replacing += usize::from(e.replaces == *csv);
            }
            (n > 0 && replacing > 0)
                .then_some("GetChannelEntriesThatReplace")
                .ok_or_else(|| format!("no entries replace {csv}"))
        }
        93 => {
            let (p, ch, csv) = &w.bundles[pick(w.bundles.len())];
            let b = c
                .get_bundle(api::GetBundleRequest {
                    pkg_name: p.clone(),
                    channel_name: ch.clone(),
                    csv_name: csv.clone(),
                })
                .await
                .map_err(|e| err("GetBundle", e))?
                .into_inner();
            (b.csv_name == *csv && !b.csv_json.is_empty())
                .then_some("GetBundle")
                .ok_or_else(|| format!("GetBundle {p}/{ch}/{csv}: got {}", b.csv_name))
        }
        48..=67 => {
            let r = h
                .check(tonic_health::pb::HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .map_err(|e| err("Health/Check", e))?
                .into_inner();
            (r.status == 1)
                .then_some("Health/Check")
                .ok_or_else(|| format!("health status {}", r.status))
        }
        94..=96 => {
            let (g, v, k) = &w.gvks[pick(w.gvks.len())];
            let mut s = c
                .get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest {
                    group: g.clone(),
                    version: v.clone(),
                    kind: k.clone(),
                    plural: String::new(),
                })
                .await
                .map_err(|e| err("GetLatestChannelEntriesThatProvide", e))?
                .into_inner();
            let (n, end) = drain(&mut s).await;
            end.map_err(|e| err("GetLatestChannelEntriesThatProvide stream", e))?;
            (n > 0)
                .then_some("GetLatestChannelEntriesThatProvide")
                .ok_or_else(|| format!("no providers of {g}/{v}/{k}"))
        }
        97..=99 => {
            let mut s = c
                .list_packages(api::ListPackageRequest {})
                .await
                .map_err(|e| err("ListPackages", e))?
                .into_inner();
            let (n, end) = drain(&mut s).await;
            end.map_err(|e| err("ListPackages stream", e))?;
            (n == COMMUNITY_PACKAGES)
                .then_some("ListPackages")
                .ok_or_else(|| format!("ListPackages gave {n}"))
        }
        _ => {
            // A lookup that must miss: NOT_FOUND is the right answer, anything else is not.
            let name = format!("no-such-package-{i}");
            match c.get_package(api::GetPackageRequest { name }).await {
                Err(e) if e.code() == Code::NotFound => Ok("GetPackage (NOT_FOUND)"),
                Err(e) => Err(err("GetPackage of a missing package", e)),
                Ok(_) => Err("GetPackage found a package that does not exist".into()),
            }
        }
    }
}

/// The median of the RSS samples taken while `done` was in `[from, to)`.
fn median_rss(samples: &[(usize, u64)], from: usize, to: usize) -> u64 {
    let mut v: Vec<u64> = samples
        .iter()
        .filter(|(d, _)| *d >= from && *d < to)
        .map(|(_, r)| *r)
        .collect();
    assert!(
        !v.is_empty(),
        "no memory sample between requests {from} and {to}"
    );
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
#[ignore = "heavy tier: cargo test --release -- --ignored (CI runs it)"]
fn a_million_mixed_requests_over_64_connections_with_flat_memory() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let _turn = serial();
    let total = env_usize("OPREG_STRESS_REQUESTS", 1_000_000);
    assert!(
        total >= 10_000,
        "OPREG_STRESS_REQUESTS must be at least 10000"
    );
    const CONNECTIONS: usize = 64;
    const CALLERS_PER_CONNECTION: usize = 2;
    // About 20 full ListBundles streams in a million requests.
    let list_bundles_every = 50_000.min(total / 4);

    let server = community_server(&[]);
    let pid = server.child.id();
    let idle_kib = rss_kib(pid);
    let rt = rt();
    let started = Instant::now();
    let (counts, samples, elapsed) = rt.block_on(async {
        let work = Arc::new(work_from_catalog(&mut registry(connect(&server).await)).await);
        let mut channels = Vec::new();
        for _ in 0..CONNECTIONS {
            channels.push(connect(&server).await); // one Endpoint::connect each: its own TCP + HTTP/2
        }
        let next = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        let error_count = Arc::new(AtomicUsize::new(0));
        let counts = Arc::new(Mutex::new(
            std::collections::BTreeMap::<&'static str, usize>::new(),
        ));
        let load_started = Instant::now();
        let mut tasks = Vec::new();
        for ch in &channels {
            for _ in 0..CALLERS_PER_CONNECTION {
                let (ch, work, next, done) = (ch.clone(), work.clone(), next.clone(), done.clone());
                let (errors, error_count, counts) =
                    (errors.clone(), error_count.clone(), counts.clone());
                tasks.push(tokio::spawn(async move {
                    let mut c = registry(ch.clone());
                    let mut h = Health::new(ch);
                    let mut mine = std::collections::BTreeMap::<&'static str, usize>::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            break;
                        }
                        match one_request(i, &mut c, &mut h, &work, list_bundles_every).await {
                            Ok(kind) => *mine.entry(kind).or_default() += 1,
                            Err(e) => {
                                error_count.fetch_add(1, Ordering::Relaxed);
                                let mut v = errors.lock().unwrap();
                                if v.len() < 20 {
                                    v.push(format!("request {i}: {e}"));
                                }
                            }
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    let mut all = counts.lock().unwrap();
                    for (k, v) in mine {
                        *all.entry(k).or_default() += v;
                    }
                }));
            }
        }
        // The server's RSS every 20 ms, with the number of requests done at that moment.
        let sampler = {
            let done = done.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                loop {
                    let d = done.load(Ordering::Relaxed);
                    samples.push((d, rss_kib(pid)));
                    if d >= total {
                        return samples;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        for t in tasks {
            t.await.unwrap();
        }
        let elapsed = load_started.elapsed();
        let mut samples = sampler.await.unwrap();
        samples.push((total, rss_kib(pid)));
        let errors = errors.lock().unwrap().clone();
        assert!(
            errors.is_empty(),
            "{} of {total} requests failed; first ones:\n{}\nthe server's log ends:\n{}",
            error_count.load(Ordering::Relaxed),
            errors.join("\n"),
            tail(&server.log(), 40)
        );
        // Still healthy after it all, on a fresh connection.
        assert_eq!(health_status(connect(&server).await).await.unwrap(), 1);
        let counts = counts.lock().unwrap().clone();
        (counts, samples, elapsed)
    });
    let served: usize = counts.values().sum();
    eprintln!(
        "load: {served} requests over {CONNECTIONS} connections ({} callers) in {:.1} s ({:.0}/s); whole test {:.1} s",
        CONNECTIONS * CALLERS_PER_CONNECTION,
        elapsed.as_secs_f64(),
        served as f64 / elapsed.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    eprintln!("load: mix {counts:?}");
    assert_eq!(served, total);
    assert!(counts.get("ListBundles").copied().unwrap_or(0) >= 1);

    // Flat memory. RSS moves by tens of MB from moment to moment (allocator arenas, bundle
    // buffers), so windows are compared by their medians: the second fifth of the run (pools
    // and caches have reached their working size by then) against the last fifth, 600,000
    // requests later. The bound is 24 MiB: a leak of 40 bytes per request (less than any
    // leaked String, Status or buffer) would exceed it; measured growth is a few MiB.
    let fifth = total / 5;
    let early = median_rss(&samples, fifth, 2 * fifth);
    let late = median_rss(&samples, 4 * fifth, total + 1);
    let peak = samples.iter().map(|s| s.1).max().unwrap();
    let end = samples.last().unwrap().1;
    eprintln!(
        "load: server VmRSS idle {idle_kib} KiB; median {early} KiB over requests {fifth}..{}, {late} KiB over the last fifth; end {end} KiB; peak {peak} KiB ({} samples)",
        2 * fifth,
        samples.len()
    );
    let tenths: Vec<String> = (0..10)
        .map(|k| {
            format!(
                "{}",
                median_rss(
                    &samples,
                    k * total / 10,
                    (k + 1) * total / 10 + usize::from(k == 9)
                ) / 1024
            )
        })
        .collect();
    eprintln!(
        "load: median server VmRSS per tenth of the run (MiB): {}",
        tenths.join(" ")
    );
    let growth = late.saturating_sub(early);
    assert!(
        growth < 24 * 1024,
        "server RSS grew by {growth} KiB between the second and the last fifth of the run ({early} -> {late} KiB)"
    );
    // And bounded outright: the working set is tens of MB. (With tokio's default of 512
    // blocking threads, this load once took the server to 3.5 GB.)
    assert!(
        peak < 384 * 1024,
        "server RSS peaked at {peak} KiB under load"
    );
    assert_eq!(server.terminate(), Some(0));
}
