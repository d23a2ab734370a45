//! The OLM fan-out row (issue 17): N "catalog operator snapshots" at once against one
//! `opreg serve`, plus one packageserver sync, the way a registry pod is hit after a catalog
//! update. A snapshot is what OLM's catalog operator does per namespace: the whole ListBundles,
//! then GetPackage for every package, one call after another on its own connection. The
//! packageserver sync: ListPackages, then GetPackage and GetBundleForChannel for every channel.

use crate::load::connect;
use crate::procs::Server;
use opreg::api::{self, registry_client::RegistryClient};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

/// One fan-out point.
pub struct Point {
    pub n: usize,
    pub wall: Duration,
    /// The server's VmHWM at the end (a fresh server per point).
    pub peak_rss_kb: u64,
    /// Server CPU time over the run.
    pub server_cpu: Duration,
    pub errors: usize,
    pub first_error: Option<String>,
    pub bundles_per_snapshot: u64,
}

type Client = RegistryClient<tonic::transport::Channel>;

async fn snapshot(c: &mut Client) -> Result<u64, String> {
    let e = |what: &str, s: tonic::Status| format!("{what}: {:?} {}", s.code(), s.message());
    let mut s = c
        .list_bundles(api::ListBundlesRequest {})
        .await
        .map_err(|s| e("ListBundles", s))?
        .into_inner();
    let mut packages = std::collections::BTreeSet::new();
    let mut n = 0;
    while let Some(b) = s.next().await {
        let b = b.map_err(|s| e("ListBundles stream", s))?;
        packages.insert(b.package_name);
        n += 1;
    }
    for name in packages {
        c.get_package(api::GetPackageRequest { name })
            .await
            .map_err(|s| e("GetPackage", s))?;
    }
    Ok(n)
}

async fn packageserver_sync(c: &mut Client) -> Result<(), String> {
    let e = |what: &str, s: tonic::Status| format!("{what}: {:?} {}", s.code(), s.message());
    let mut s = c
        .list_packages(api::ListPackageRequest {})
        .await
        .map_err(|s| e("ListPackages", s))?
        .into_inner();
    let mut names = Vec::new();
    while let Some(p) = s.next().await {
        names.push(p.map_err(|s| e("ListPackages stream", s))?.name);
    }
    for name in names {
        let p = c
            .get_package(api::GetPackageRequest { name: name.clone() })
            .await
            .map_err(|s| e("GetPackage", s))?
            .into_inner();
        for ch in p.channels {
            // Deprecated in the proto, and still what packageserver calls.
            #[allow(deprecated)]
            c.get_bundle_for_channel(api::GetBundleInChannelRequest {
                pkg_name: name.clone(),
                channel_name: ch.name,
            })
            .await
            .map_err(|s| e("GetBundleForChannel", s))?;
        }
    }
    Ok(())
}

/// Runs N snapshots and one packageserver sync at once against a fresh server on `db`.
pub fn point(bin: &Path, db: &Path, log: &Path, n: usize) -> Result<Point, String> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut s = Server::spawn(bin, db, None, log);
    rt.block_on(crate::load::wait_serving(&mut s, Duration::from_secs(60)))?;
    s.wait_log("integrity check passed", Duration::from_secs(120));
    let addr = s.addr();
    let cpu0 = s.cpu();
    let (wall, results) = rt.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..=n {
            let ch = connect(&addr).await.map_err(|e| e.to_string())?;
            clients.push(RegistryClient::new(ch).max_decoding_message_size(usize::MAX));
        }
        let t = Instant::now();
        let mut tasks = Vec::new();
        let mut sync = clients.pop().expect("one client for packageserver");
        tasks.push(tokio::spawn(async move {
            packageserver_sync(&mut sync).await.map(|()| None)
        }));
        for mut c in clients {
            tasks.push(tokio::spawn(
                async move { snapshot(&mut c).await.map(Some) },
            ));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
        }
        Ok::<_, String>((t.elapsed(), results))
    })?;
    let server_cpu = s.cpu().saturating_sub(cpu0);
    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let bundles = results
        .iter()
        .find_map(|r| r.as_ref().ok().copied().flatten())
        .unwrap_or(0);
    Ok(Point {
        n,
        wall,
        peak_rss_kb: s.hwm_kb(),
        server_cpu,
        errors: errors.len(),
        first_error: errors.first().map(|e| e.to_string()),
        bundles_per_snapshot: bundles,
    })
}

/// Measures N = 1, 10, 50.
pub fn measure(bin: &Path, db: &Path, work: &Path) -> Result<Vec<Point>, String> {
    let log = work.join("fanout.log");
    [1, 10, 50]
        .iter()
        .map(|&n| {
            let p = point(bin, db, &log, n)?;
            eprintln!(
                "harness: fan-out N={n}: {:.2?}, peak RSS {:.1} MB, {} errors",
                p.wall,
                p.peak_rss_kb as f64 / 1024.0,
                p.errors
            );
            Ok(p)
        })
        .collect()
}

/// The report section, with the targets at N = 50.
pub fn section(w: &mut String, name: &str, points: &Result<Vec<Point>, String>) {
    use std::fmt::Write as _;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let _ = writeln!(w, "\n## OLM fan-out\n\n**{name}**, one `opreg serve` per N (fresh, so its peak RSS is this run's). N catalog-operator snapshots at once, each on its own connection: the whole ListBundles, then GetPackage for every package it named, one call at a time. Together with them, one packageserver sync on one more connection: ListPackages, then GetPackage and GetBundleForChannel for every channel. Wall time: from the first call to the last answer. The client runs in the harness process on {cores} tokio workers and shares the machine's {cores} cores with the server; \"cores used\" in the target is those {cores} cores.\n");
    let pts = match points {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(p) => p,
    };
    let _ = writeln!(w, "| N | bundles per snapshot | wall (s) | wall ÷ N (s) | server CPU (s) | server peak RSS (MB) | errors |\n|---|---|---|---|---|---|---|");
    for p in pts {
        let _ = writeln!(
            w,
            "| {} | {} | {:.2} | {:.3} | {:.2} | {:.1} | {}{} |",
            p.n,
            p.bundles_per_snapshot,
            p.wall.as_secs_f64(),
            p.wall.as_secs_f64() / p.n as f64,
            p.server_cpu.as_secs_f64(),
            p.peak_rss_kb as f64 / 1024.0,
            p.errors,
            p.first_error
                .as_ref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        );
    }
    let (Some(one), Some(fifty)) = (
        pts.iter().find(|p| p.n == 1),
        pts.iter().find(|p| p.n == 50),
    ) else {
        return;
    };
    let limit = 1.2 * 50.0 * one.wall.as_secs_f64() / cores as f64;
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let _ = writeln!(
        w,
        "\n| target at N = 50 | limit | measured | met |\n|---|---|---|---|"
    );
    let _ = writeln!(
        w,
        "| errors | 0 | {} | {} |",
        fifty.errors,
        met(fifty.errors == 0)
    );
    let _ = writeln!(
        w,
        "| wall time | ≤ 1.2 × 50 × {:.2} s ÷ {cores} cores = {limit:.2} s | {:.2} s | {} |",
        one.wall.as_secs_f64(),
        fifty.wall.as_secs_f64(),
        met(fifty.wall.as_secs_f64() <= limit)
    );
    let rss = fifty.peak_rss_kb as f64 / 1024.0;
    let _ = writeln!(
        w,
        "| server peak RSS | < 64 MB | {rss:.1} MB | {} |",
        met(rss < 64.0)
    );
}
