//! catalogd's HTTP API (issue 15): `/api/v1/all` at 10 concurrent clients against a trivial
//! file server sending a file of the same bytes (its own child process: HTTP/1.1 keep-alive,
//! the body copied from the file with `std::io::copy`, which is `sendfile` on Linux), with the
//! same client in the same run; the server's RSS while it serves; and the time from a change
//! of the watched FBC file to the new content being served.

use crate::procs::free_port;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const CLIENTS: usize = 10;

pub struct HttpRow {
    pub all_mb: f64,
    /// Bytes per second of `/api/v1/all` bodies, opreg and the file server.
    pub opreg_bps: f64,
    pub file_bps: f64,
    /// opreg's RSS, sampled every 20 ms while it serves the 10 clients (KiB).
    pub load_rss_kb: u64,
    /// opreg's peak RSS since its start, including its start-up build (KiB).
    pub hwm_kb: u64,
    /// From the atomic replace of the watched file to the new package in `/api/v1/metas`.
    pub reload: Duration,
}

/// A child process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The hidden `file-server FILE PORT` subcommand: HTTP/1.1 keep-alive, every request answered
/// with FILE.
pub fn file_server(file: &Path, port: u16) {
    let len = std::fs::metadata(file).expect("file").len();
    let l = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind");
    for conn in l.incoming() {
        let Ok(mut s) = conn else { continue };
        let file = file.to_path_buf();
        std::thread::spawn(move || {
            let _ = s.set_nodelay(true);
            let mut r = BufReader::new(s.try_clone().expect("clone socket"));
            loop {
                // Read one request's head.
                let mut line = String::new();
                let mut got = false;
                loop {
                    line.clear();
                    match r.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" || line == "\n" => break,
                        Ok(_) => got = true,
                    }
                }
                if !got {
                    return;
                }
                let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: {len}\r\n\r\n");
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let Ok(mut f) = std::fs::File::open(&file) else {
                    return;
                };
                if std::io::copy(&mut f, &mut s).is_err() {
                    return;
                }
            }
        });
    }
}

fn wait_ok(url: &str, limit: Duration) -> Result<(), String> {
    let t = Instant::now();
    loop {
        if let Ok(r) = ureq::get(url).call() {
            if r.status() == 200 {
                return Ok(());
            }
        }
        if t.elapsed() > limit {
            return Err(format!("{url} did not answer 200 within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 10 clients GET `url` again and again for `dur`; body bytes per second. `sample` is called
/// every 20 ms while they run.
fn load(
    rt: &tokio::runtime::Runtime,
    url: &str,
    dur: Duration,
    mut sample: impl FnMut(),
) -> Result<f64, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .map_err(|e| e.to_string())?;
    let bytes = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_string());
            let (bytes, stop, failed) = (bytes.clone(), stop.clone(), failed.clone());
            rt.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match client.get(&url).send().await {
                        Ok(mut r) => {
                            while let Ok(Some(c)) = r.chunk().await {
                                bytes.fetch_add(c.len() as u64, Ordering::Relaxed);
                            }
                        }
                        Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    while start.elapsed() < dur {
        sample();
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed();
    // Bytes are counted up to the stop; requests still running finish unmeasured.
    let total = bytes.load(Ordering::Relaxed);
    rt.block_on(async {
        for t in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(60), t).await;
        }
    });
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{} requests to {url} failed",
            failed.load(Ordering::Relaxed)
        ));
    }
    Ok(total as f64 / elapsed.as_secs_f64())
}

pub fn measure(bin: &Path, catalog: &Path, work: &Path, dur: Duration) -> Result<HttpRow, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let src = work.join("http-src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    let file = src.join("catalog.json");
    std::fs::copy(catalog, &file).map_err(|e| e.to_string())?;
    let (grpc, http) = (free_port(), free_port());
    let log = work.join("http-serve.log");
    let server = Proc(
        Command::new(bin)
            .arg("serve")
            .arg(&src)
            .args(["-p", &grpc.to_string(), "--http-port", &http.to_string()])
            .args(["--watch", "--no-call-log", "-t", "/dev/null"])
            .env_remove("OPREG_THREADS")
            .env_remove("OPREG_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let pid = server.0.id();
    let base = format!("http://127.0.0.1:{http}/catalogs/catalog/api/v1");
    wait_ok(
        &format!("http://127.0.0.1:{http}/readyz"),
        Duration::from_secs(600),
    )?;
    let all = work.join("http-all.jsonl");
    let mut body = ureq::get(&format!("{base}/all"))
        .call()
        .map_err(|e| e.to_string())?
        .into_body();
    std::io::copy(
        &mut body.as_reader(),
        &mut std::fs::File::create(&all).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let all_len = std::fs::metadata(&all).map_err(|e| e.to_string())?.len();

    let fport = free_port();
    let _files = Proc(
        Command::new(&me)
            .arg("file-server")
            .arg(&all)
            .arg(fport.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    wait_ok(
        &format!("http://127.0.0.1:{fport}/"),
        Duration::from_secs(30),
    )?;

    let rt = crate::load::client_runtime().map_err(|e| e.to_string())?;
    let mut load_rss_kb = 0;
    let opreg_bps = load(&rt, &format!("{base}/all"), dur, || {
        load_rss_kb = load_rss_kb.max(status_kb(pid, "VmRSS:"));
    })?;
    let file_bps = load(&rt, &format!("http://127.0.0.1:{fport}/all"), dur, || {})?;
    let hwm_kb = status_kb(pid, "VmHWM:");

    // A change: one more package, written beside the file and renamed over it.
    let mut text = std::fs::read_to_string(catalog).map_err(|e| e.to_string())?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(concat!(
        r#"{"schema":"olm.package","name":"bench-reload-probe","defaultChannel":"stable"}"#,
        "\n",
        r#"{"schema":"olm.channel","package":"bench-reload-probe","name":"stable","entries":[{"name":"bench-reload-probe.v1.0.0"}]}"#,
        "\n",
        r#"{"schema":"olm.bundle","package":"bench-reload-probe","name":"bench-reload-probe.v1.0.0","image":"example.com/probe:1","properties":[{"type":"olm.package","value":{"packageName":"bench-reload-probe","version":"1.0.0"}}]}"#,
        "\n"
    ));
    let tmp: PathBuf = work.join("http-catalog.json.tmp");
    std::fs::write(&tmp, text).map_err(|e| e.to_string())?;
    let probe = format!("{base}/metas?schema=olm.package&name=bench-reload-probe");
    let t = Instant::now();
    std::fs::rename(&tmp, &file).map_err(|e| e.to_string())?;
    let reload = loop {
        if let Ok(r) = ureq::get(&probe).call() {
            if r.into_body().read_to_string().is_ok_and(|b| !b.is_empty()) {
                break t.elapsed();
            }
        }
        if t.elapsed() > Duration::from_secs(600) {
            return Err("the change was not served within 600 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(HttpRow {
        all_mb: all_len as f64 / 1e6,
        opreg_bps,
        file_bps,
        load_rss_kb,
        hwm_kb,
        reload,
    })
}

/// The report section.
pub fn section(w: &mut String, name: &str, row: &Result<HttpRow, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## catalogd HTTP API\n\n`{name}` served by `opreg serve DIR --http-port P --watch --no-call-log`. `/api/v1/all` (no gzip) fetched again and again by {CLIENTS} concurrent clients (reqwest, HTTP/1.1 keep-alive), next to a trivial file server sending a file of the same bytes (a child process; `std::io::copy`, i.e. sendfile) to the same clients in the same run. RSS while serving: opreg's VmRSS sampled every 20 ms during its load phase; peak since start (VmHWM) includes the start-up build. Change → served: the watched file replaced (rename) with one more package, until `/api/v1/metas` returns it (the watch's 300 ms debounce included). Targets: throughput within 1.5× of the file, RSS while serving < 64 MB.\n");
    match row {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
        }
        Ok(r) => {
            let ratio = r.file_bps / r.opreg_bps.max(1.0);
            let rss = r.load_rss_kb as f64 / 1024.0;
            let _ = writeln!(w, "| /all | opreg | file | file ÷ opreg | RSS while serving | peak RSS since start | change → served |");
            let _ = writeln!(w, "|---|---|---|---|---|---|---|");
            let _ = writeln!(
                w,
                "| {:.1} MB | {:.0} MB/s | {:.0} MB/s | {ratio:.2} ({}) | {rss:.1} MB ({}) | {:.1} MB | {:.2} s |",
                r.all_mb,
                r.opreg_bps / 1e6,
                r.file_bps / 1e6,
                if ratio <= 1.5 { "MET" } else { "NOT MET" },
                if rss < 64.0 { "MET" } else { "NOT MET" },
                r.hwm_kb as f64 / 1024.0,
                r.reload.as_secs_f64()
            );
        }
    }
}
