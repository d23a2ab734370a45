//! A server that goes idle gives its memory back (src/memory.rs): the real binary serves the
//! community catalog, four clients stream ListBundles at once, and after the calls end the
//! server logs its trim and its anonymous memory falls well below what the burst used, and so
//! do its resident pages of the binary's code (let go of, to fault back in when run); calls
//! after the trim (on reopened store connections, through code paged in again) answer as
//! before.
#![allow(deprecated)] // GetBundleForChannel is deprecated in the proto, and still used by OLM.

use crate::common;
use common::*;
use opreg::api;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

fn rss_anon_kb(pid: u32) -> u64 {
    proc_status_kib(pid, "RssAnon")
}

fn rss_file_kb(pid: u32) -> u64 {
    proc_status_kib(pid, "RssFile")
}

async fn etcd_head(server: &Server) -> api::Bundle {
    let mut c = server.registry().await;
    c.get_bundle_for_channel(api::GetBundleInChannelRequest {
        pkg_name: "etcd".into(),
        channel_name: "singlenamespace-alpha".into(),
    })
    .await
    .unwrap()
    .into_inner()
}

fn trims(log: &str) -> usize {
    log.matches("idle: memory given back").count()
}

#[test]
fn an_idle_server_gives_back_the_memory_of_a_burst() {
    let catalog = corpus_valid("community-operators.fbc.json");
    let mut server = Server::spawn_env(
        &[catalog.to_str().unwrap()],
        &[("OPREG_LOG", "opreg=debug")],
    );
    server.wait_serving(Duration::from_secs(120));
    let pid = server.child.id();
    let wait_for = |server: &Server, n: usize| {
        let start = Instant::now();
        while trims(&server.log()) < n {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The trims after loading, so that the burst starts from a settled server.
    wait_for(&server, 2);
    let before = trims(&server.log());

    let burst_peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let file_peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (peak, fpeak, stop) = (
        burst_peak.clone(),
        file_peak.clone(),
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    let stop_sampling = stop.clone();
    let sampler = std::thread::spawn(move || {
        while !stop_sampling.load(std::sync::atomic::Ordering::Relaxed) {
            peak.fetch_max(rss_anon_kb(pid), std::sync::atomic::Ordering::Relaxed);
            fpeak.fetch_max(rss_file_kb(pid), std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let first = rt().block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let mut c = server.registry().await;
            tasks.push(tokio::spawn(async move {
                let mut s = c
                    .list_bundles(api::ListBundlesRequest {})
                    .await
                    .unwrap()
                    .into_inner();
                let mut n = 0usize;
                while let Some(b) = s.next().await {
                    b.unwrap();
                    n += 1;
                }
                n
            }));
        }
        let mut counts = Vec::new();
        for t in tasks {
            counts.push(t.await.unwrap());
        }
        assert!(
            counts.iter().all(|&n| n == counts[0] && n > 1000),
            "{counts:?}"
        );
        etcd_head(&server).await
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let burst = burst_peak.load(std::sync::atomic::Ordering::Relaxed);
    let burst_file = file_peak.load(std::sync::atomic::Ordering::Relaxed);

    // Both rounds of the idle period after the burst.
    wait_for(&server, before + 2);
    let after = rss_anon_kb(pid);
    assert!(
        after * 2 < burst,
        "anonymous memory after the trim {after} kB, during the burst {burst} kB"
    );
    let after_file = rss_file_kb(pid);
    assert!(
        after_file * 2 < burst_file,
        "file-backed memory (the binary's code) after the trim {after_file} kB, during the burst {burst_file} kB"
    );
    let again = rt().block_on(etcd_head(&server));
    assert_eq!(again, first);
    assert_eq!(server.terminate(), Some(0));
}
