//! Memory under load (issue 17): the server's VmRSS during the stress run's load (the heavy
//! test `a_million_mixed_requests_over_64_connections_with_flat_memory` in tests/stress.rs:
//! 64 connections, 2 callers each, its request mix, a full ListBundles every 50,000 requests)
//! and in the 10 s of idle after it. Figures only: errors are counted, nothing is asserted.

use crate::load::connect;
use crate::procs::Server;
use opreg::api::{self, registry_client::RegistryClient};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

pub struct MemLoad {
    pub requests: usize,
    /// A full ListBundles every this many requests.
    pub list_every: usize,
    pub secs: f64,
    pub errors: usize,
    pub first_error: Option<String>,
    pub idle_before_kb: u64,
    pub median_kb: u64,
    pub peak_kb: u64,
    /// (seconds after the load, VmRSS) every 100 ms for 10 s.
    pub idle_after: Vec<(f64, u64)>,
}

/// What the requests ask for, taken from the served catalog.
struct Work {
    packages: Vec<String>,
    heads: Vec<(String, String, String)>,
    replaced: Vec<(String, String, String)>,
    bundles: Vec<(String, String, String)>,
    gvks: Vec<(String, String, String)>,
}

fn status(what: &str, s: tonic::Status) -> String {
    format!("{what}: {:?} {}", s.code(), s.message())
}

async fn work(c: &mut RegistryClient<Channel>) -> Result<Work, String> {
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await
        .map_err(|e| status("ListBundles", e))?
        .into_inner();
    let (mut bundles, mut replaced, mut provided) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(b) = s.next().await {
        let b = b.map_err(|e| status("ListBundles", e))?;
        if !b.replaces.is_empty() {
            replaced.push((
                b.package_name.clone(),
                b.channel_name.clone(),
                b.replaces.clone(),
            ));
        }
        for g in &b.provided_apis {
            if !g.version.is_empty() && !g.kind.is_empty() {
                let gvk = (g.group.clone(), g.version.clone(), g.kind.clone());
                provided.push((b.csv_name.clone(), gvk));
            }
        }
        bundles.push((b.package_name, b.channel_name, b.csv_name));
    }
    let mut packages = Vec::new();
    let mut s = c
        .list_packages(api::ListPackageRequest {})
        .await
        .map_err(|e| status("ListPackages", e))?
        .into_inner();
    while let Some(p) = s.next().await {
        packages.push(p.map_err(|e| status("ListPackages", e))?.name);
    }
    let mut heads = Vec::new();
    for n in &packages {
        let p = c
            .get_package(api::GetPackageRequest { name: n.clone() })
            .await
            .map_err(|e| status("GetPackage", e))?
            .into_inner();
        for ch in p.channels {
            heads.push((n.clone(), ch.name, ch.csv_name));
        }
    }
    // Only APIs some channel head provides: GetLatestChannelEntriesThatProvide answers from
    // the heads, and NOT_FOUND for the rest.
    let head_csvs: std::collections::HashSet<&str> = heads.iter().map(|h| h.2.as_str()).collect();
    let mut gvks: Vec<(String, String, String)> = provided
        .into_iter()
        .filter(|(csv, _)| head_csvs.contains(csv.as_str()))
        .map(|(_, gvk)| gvk)
        .collect();
    gvks.sort();
    gvks.dedup();
    if packages.is_empty() || bundles.is_empty() {
        return Err("the catalog is empty".into());
    }
    Ok(Work {
        packages,
        heads,
        replaced,
        bundles,
        gvks,
    })
}

/// Drains a server stream; the number of messages.
async fn drain<T>(
    s: Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>,
    what: &str,
) -> Result<usize, String> {
    let mut s = s.map_err(|e| status(what, e))?.into_inner();
    let mut n = 0;
    while let Some(m) = s.next().await {
        m.map_err(|e| status(what, e))?;
        n += 1;
    }
    Ok(n)
}

/// Request `i` of the mix (per 100: GetPackage 48, Health/Check 20, GetChannelEntriesThatReplace
/// 14, GetPackage of a missing package 6, GetBundleForChannel 3, GetBundleThatReplaces 2,
/// GetBundle 1, GetLatestChannelEntriesThatProvide 3, ListPackages 3), the stress test's mix.
async fn one(
    i: usize,
    c: &mut RegistryClient<Channel>,
    h: &mut HealthClient<Channel>,
    w: &Work,
    list_every: usize,
) -> Result<(), String> {
    let pick = |len: usize| (i / 100).wrapping_mul(2_654_435_761) % len.max(1);
    if i % list_every == list_every - 1 {
        drain(
            c.list_bundles(api::ListBundlesRequest {}).await,
            "ListBundles",
        )
        .await?;
        return Ok(());
    }
    match i % 100 {
        0..=47 => {
            let name = w.packages[pick(w.packages.len())].clone();
            c.get_package(api::GetPackageRequest { name })
                .await
                .map_err(|e| status("GetPackage", e))?;
        }
        48..=67 => {
            h.check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .map_err(|e| status("Health/Check", e))?;
        }
        68..=81 if !w.replaced.is_empty() => {
            let (_, _, csv) = w.replaced[pick(w.replaced.len())].clone();
            drain(
                c.get_channel_entries_that_replace(api::GetAllReplacementsRequest {
                    csv_name: csv,
                })
                .await,
                "GetChannelEntriesThatReplace",
            )
            .await?;
        }
        88..=90 if !w.heads.is_empty() => {
            let (p, ch, _) = w.heads[pick(w.heads.len())].clone();
            // Deprecated in the proto, and still what packageserver calls.
            #[allow(deprecated)]
            c.get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: p,
                channel_name: ch,
            })
            .await
            .map_err(|e| status("GetBundleForChannel", e))?;
        }
        91..=92 if !w.replaced.is_empty() => {
            let (p, ch, csv) = w.replaced[pick(w.replaced.len())].clone();
            c.get_bundle_that_replaces(api::GetReplacementRequest {
                csv_name: csv,
                pkg_name: p,
                channel_name: ch,
            })
            .await
            .map_err(|e| status("GetBundleThatReplaces", e))?;
        }
        93 => {
            let (p, ch, csv) = w.bundles[pick(w.bundles.len())].clone();
            c.get_bundle(api::GetBundleRequest {
                pkg_name: p,
                channel_name: ch,
                csv_name: csv,
            })
            .await
            .map_err(|e| status("GetBundle", e))?;
        }
        94..=96 if !w.gvks.is_empty() => {
            let (group, version, kind) = w.gvks[pick(w.gvks.len())].clone();
            drain(
                c.get_latest_channel_entries_that_provide(api::GetLatestProvidersRequest {
                    group,
                    version,
                    kind,
                    plural: String::new(),
                })
                .await,
                "GetLatestChannelEntriesThatProvide",
            )
            .await?;
        }
        97..=99 => {
            drain(
                c.list_packages(api::ListPackageRequest {}).await,
                "ListPackages",
            )
            .await?;
        }
        _ => {
            let name = format!("no-such-package-{i}");
            match c.get_package(api::GetPackageRequest { name }).await {
                Err(e) if e.code() == tonic::Code::NotFound => {}
                Err(e) => return Err(status("GetPackage (missing)", e)),
                Ok(_) => return Err("GetPackage found a missing package".into()),
            }
        }
    }
    Ok(())
}

/// Runs `total` requests against a fresh server on `db`, sampling its VmRSS every 20 ms, then
/// `idle_secs` of idle.
pub fn measure(
    bin: &Path,
    db: &Path,
    work_dir: &Path,
    total: usize,
    idle_secs: u64,
) -> Result<MemLoad, String> {
    const CONNECTIONS: usize = 64;
    const CALLERS_PER_CONNECTION: usize = 2;
    let list_every = 50_000.min(total / 4).max(1);
    let rt = crate::load::client_runtime().map_err(|e| e.to_string())?;
    let log = work_dir.join("memload.log");
    let mut server = Server::spawn(bin, db, None, &log);
    rt.block_on(crate::load::wait_serving(
        &mut server,
        Duration::from_secs(60),
    ))?;
    server.wait_log("integrity check passed", Duration::from_secs(120));
    std::thread::sleep(Duration::from_millis(500));
    let idle_before_kb = server.rss_kb();
    let pid = server.pid();
    let rss = move || crate::procs::status_kb(pid, "VmRSS:");
    let addr = server.addr();
    let (secs, errors, first_error, samples) = rt.block_on(async {
        let w = Arc::new(
            work(
                &mut RegistryClient::new(connect(&addr).await.map_err(|e| e.to_string())?)
                    .max_decoding_message_size(usize::MAX),
            )
            .await?,
        );
        let mut chans = Vec::new();
        for _ in 0..CONNECTIONS {
            chans.push(connect(&addr).await.map_err(|e| e.to_string())?);
        }
        let next = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let errors = Arc::new(AtomicUsize::new(0));
        let first = Arc::new(std::sync::Mutex::new(None::<String>));
        let t = Instant::now();
        let mut tasks = Vec::new();
        for ch in &chans {
            for _ in 0..CALLERS_PER_CONNECTION {
                let (ch, w, next, done) = (ch.clone(), w.clone(), next.clone(), done.clone());
                let (errors, first) = (errors.clone(), first.clone());
                tasks.push(tokio::spawn(async move {
                    let mut c =
                        RegistryClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
                    let mut h = HealthClient::new(ch);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            break;
                        }
                        if let Err(e) = one(i, &mut c, &mut h, &w, list_every).await {
                            errors.fetch_add(1, Ordering::Relaxed);
                            first
                                .lock()
                                .expect("lock")
                                .get_or_insert(format!("request {i}: {e}"));
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
        }
        let sampler = {
            let done = done.clone();
            tokio::spawn(async move {
                let mut v = Vec::new();
                while done.load(Ordering::Relaxed) < total {
                    v.push(rss());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                v
            })
        };
        for t in tasks {
            let _ = t.await;
        }
        let secs = t.elapsed().as_secs_f64();
        let samples = sampler.await.unwrap_or_default();
        let first = first.lock().expect("lock").clone();
        Ok::<_, String>((secs, errors.load(Ordering::Relaxed), first, samples))
    })?;
    // Idle: every 100 ms for 10 s, all connections closed.
    let t = Instant::now();
    let mut idle_after = Vec::new();
    while t.elapsed() < Duration::from_secs(idle_secs) {
        idle_after.push((t.elapsed().as_secs_f64(), server.rss_kb()));
        std::thread::sleep(Duration::from_millis(100));
    }
    idle_after.push((t.elapsed().as_secs_f64(), server.rss_kb()));
    let mut sorted = samples.clone();
    sorted.sort_unstable();
    Ok(MemLoad {
        requests: total,
        list_every,
        secs,
        errors,
        first_error,
        idle_before_kb,
        median_kb: sorted.get(sorted.len() / 2).copied().unwrap_or(0),
        peak_kb: sorted.last().copied().unwrap_or(0),
        idle_after,
    })
}

/// The report section with its two targets.
pub fn section(w: &mut String, name: &str, m: &Result<MemLoad, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## Memory under load\n\n**{name}**: the stress run's load (tests/stress.rs, heavy tier) from the harness: 64 HTTP/2 connections with 2 closed-loop callers each, the same request mix (GetPackage 48 %, Health/Check 20 %, GetChannelEntriesThatReplace 14 %, missing packages 6 %, bundle RPCs 6 %, GetLatestChannelEntriesThatProvide 3 %, ListPackages 3 %, and a full ListBundles every 50,000 requests, or every quarter of a shorter run), against a fresh `opreg serve` with its default settings. VmRSS from /proc every 20 ms during the load, then every 100 ms with every connection closed.\n");
    let m = match m {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(m) => m,
    };
    let window = m.idle_after.last().map_or(0.0, |(s, _)| *s).round();
    let mb = |kb: u64| kb as f64 / 1024.0;
    let under = m
        .idle_after
        .iter()
        .find(|(_, kb)| mb(*kb) < 15.0)
        .map(|(s, _)| *s);
    let last = m.idle_after.last().map_or(0, |(_, kb)| *kb);
    let _ = writeln!(w, "| requests | full ListBundles every | time (s) | calls/s | errors | idle RSS before (MB) | median RSS during (MB) | peak RSS during (MB) | RSS at the end of the idle window (MB) | first under 15 MB |\n|---|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(
        w,
        "| {} | {} | {:.1} | {:.0} | {}{} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
        m.requests,
        m.list_every,
        m.secs,
        m.requests as f64 / m.secs.max(1e-9),
        m.errors,
        m.first_error
            .as_ref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
        mb(m.idle_before_kb),
        mb(m.median_kb),
        mb(m.peak_kb),
        mb(last),
        under
            .map(|s| format!("after {s:.1} s"))
            .unwrap_or_else(|| format!("not within {window:.0} s"))
    );
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let _ = writeln!(
        w,
        "\n| target | limit | measured | met |\n|---|---|---|---|"
    );
    let _ = writeln!(
        w,
        "| RSS during the load (peak) | ≤ 30 MB | {:.1} MB | {} |",
        mb(m.peak_kb),
        met(mb(m.peak_kb) <= 30.0)
    );
    let _ = writeln!(
        w,
        "| back under 15 MB after the load | within 10 s | {} | {} |",
        under
            .map(|s| format!("{s:.1} s"))
            .unwrap_or_else(|| format!("no: {:.1} MB after {window:.0} s", mb(last))),
        met(under.is_some_and(|s| s <= 10.0))
    );
}
