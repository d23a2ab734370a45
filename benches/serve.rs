//! Serving benchmark: for each built catalog database, the time from process start to health
//! SERVING, idle RSS, the time to stream the whole ListBundles (every message decoded by a
//! tonic client) and RSS during it. Floor: parsing the source JSON with serde_json alone.
//!
//! Run: `cargo bench --bench serve -- <catalog.fbc.json>...` (scripts/bench.sh does this for the
//! corpus and writes BENCHMARKS.md figures). Each catalog is ingested first.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_opreg");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    println!("| catalog | source MB | serde_json parse floor (s) | ingest (s) | start→SERVING (ms) | idle RSS (MB) | ListBundles msgs | ListBundles (s) | RSS during ListBundles (MB) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for src in args {
        let bytes = std::fs::read(&src).unwrap();
        let t = Instant::now();
        let n = serde_json::Deserializer::from_slice(&bytes)
            .into_iter::<serde_json::Value>()
            .filter(|v| v.is_ok())
            .count();
        let floor = t.elapsed().as_secs_f64();
        assert!(n > 0);
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("c.db");
        let t = Instant::now();
        let st = Command::new(bin)
            .args(["ingest", &src, "-o", db.to_str().unwrap(), "-q"])
            .status()
            .unwrap();
        assert!(st.success());
        let ingest = t.elapsed().as_secs_f64();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let t = Instant::now();
        let mut child = Command::new(bin)
            .args([
                "serve",
                db.to_str().unwrap(),
                "-p",
                &port.to_string(),
                "-t",
                "/dev/null",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("http://127.0.0.1:{port}");
        let serving = rt.block_on(async {
            loop {
                if let Ok(ch) = tonic::transport::Endpoint::from_shared(addr.clone())
                    .unwrap()
                    .connect()
                    .await
                {
                    let mut h = tonic_health::pb::health_client::HealthClient::new(ch);
                    if let Ok(r) = h
                        .check(tonic_health::pb::HealthCheckRequest {
                            service: String::new(),
                        })
                        .await
                    {
                        if r.get_ref().status == 1 {
                            return t.elapsed();
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        let idle = rss_kb(child.id());
        let pid = child.id();
        let (msgs, list_time, peak) = rt.block_on(async {
            let ch = tonic::transport::Endpoint::from_shared(addr.clone())
                .unwrap()
                .connect()
                .await
                .unwrap();
            let mut c = opreg::api::registry_client::RegistryClient::new(ch)
                .max_decoding_message_size(usize::MAX);
            let t = Instant::now();
            let mut s = c
                .list_bundles(opreg::api::ListBundlesRequest {})
                .await
                .unwrap()
                .into_inner();
            let (mut n, mut peak) = (0u64, 0u64);
            while let Some(b) = s.next().await {
                b.unwrap();
                n += 1;
                if n % 500 == 0 {
                    peak = peak.max(rss_kb(pid));
                }
            }
            (n, t.elapsed().as_secs_f64(), peak.max(rss_kb(pid)))
        });
        let _ = child.kill();
        let _ = child.wait();
        let name = std::path::Path::new(&src)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        println!(
            "| {name} | {:.1} | {floor:.2} | {ingest:.2} ({:.1}× floor) | {:.0} | {:.1} | {msgs} | {list_time:.2} | {:.1} |",
            bytes.len() as f64 / 1e6,
            ingest / floor,
            serving.as_secs_f64() * 1000.0,
            idle as f64 / 1024.0,
            peak as f64 / 1024.0
        );
    }
}
