//! catalogd's HTTP API: `/api/v1/all` at 1 and 10 concurrent clients, plain and gzip, against
//! a trivial file server sending a file of the same bytes (its own child process: HTTP/1.1
//! keep-alive, the body copied from the file with `std::io::copy`, which is `sendfile` on
//! Linux), with the same client in the same run; `/api/v1/metas?package=P` for every package;
//! the GraphQL query for package names and default channels; the server's RSS while it
//! serves; and the time from a change of the watched FBC file to the new content being served.

use crate::procs::free_port;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const CLIENTS: usize = 10;

/// One load of `/api/v1/all`: bytes per second of bodies (as sent), opreg and the file server.
pub struct AllLoad {
    pub gzip: bool,
    pub clients: usize,
    pub opreg_bps: f64,
    pub file_bps: f64,
}

pub struct HttpRow {
    pub all_mb: f64,
    pub gzip_mb: f64,
    /// 10 clients, plain (the first), then the other combinations.
    pub loads: Vec<AllLoad>,
    /// `/metas?package=P` for every package: whole answers gzipped (as Go's HTTP client asks
    /// by default), and plain, to the response head and whole.
    pub metas: MetasLatency,
    /// `/all` downloaded by curl processes, against the shared `sendfile` peer
    /// ([`crate::curl_peer`]).
    pub curl: Result<crate::curl_peer::CurlRow, String>,
    /// `/all` over TLS beside plain HTTP, with one client ([`crate::http_tls`]).
    pub tls: Result<Vec<crate::http_tls::TlsLoad>, String>,
    /// `{ olmpackages { name defaultChannel } }`: best and median of 20, response bytes, and
    /// whether the response holds an icon.
    pub graphql: (Duration, Duration, usize, bool),
    /// opreg's RSS, sampled every 20 ms while it serves the 10 clients (KiB).
    pub load_rss_kb: u64,
    /// opreg's peak RSS since its start, including its start-up build (KiB).
    pub hwm_kb: u64,
    /// From the atomic replace of the watched file to the new package in `/api/v1/metas`.
    pub reload: Duration,
}

/// Times over every package: the median, the slowest, and which package that was (with the
/// size of its answer).
#[derive(Default)]
pub struct Spread {
    pub median: Duration,
    pub slowest: Duration,
    pub which: String,
    pub bytes: usize,
}

impl Spread {
    fn of(mut times: Vec<(Duration, String, usize)>) -> Spread {
        times.sort();
        let median = times.get(times.len() / 2).map_or(Duration::ZERO, |t| t.0);
        let (slowest, which, bytes) = times.pop().unwrap_or_default();
        Spread {
            median,
            slowest,
            which,
            bytes,
        }
    }
}

pub struct MetasLatency {
    pub gzip: Spread,
    pub plain_head: Spread,
    pub plain: Spread,
}

/// A child process killed on drop.
pub struct Proc(pub Child);

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
    (clients, gzip): (usize, bool),
    dur: Duration,
    mut sample: impl FnMut(),
) -> Result<f64, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .map_err(|e| e.to_string())?;
    let bytes = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_string());
            let (bytes, stop, failed) = (bytes.clone(), stop.clone(), failed.clone());
            rt.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut req = client.get(&url);
                    if gzip {
                        // Not decoded here (no gzip feature): the bytes as sent are counted.
                        req = req.header("Accept-Encoding", "gzip");
                    }
                    match req.send().await {
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

/// Measures the section on `catalog`; `rounds` of the curl comparison.
pub fn measure(
    bin: &Path,
    catalog: &Path,
    work: &Path,
    dur: Duration,
    rounds: usize,
) -> Result<HttpRow, String> {
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
    let fetch = |url: &str, to: &Path, gzip: bool| -> Result<u64, String> {
        let mut req = ureq::get(url);
        if gzip {
            req = req.header("Accept-Encoding", "gzip");
        }
        let mut body = req.call().map_err(|e| e.to_string())?.into_body();
        std::io::copy(
            &mut body.as_reader(),
            &mut std::fs::File::create(to).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())
    };
    let all = work.join("http-all.jsonl");
    let all_len = fetch(&format!("{base}/all"), &all, false)?;
    // The gzip copy as opreg sends it (reqwest here has no gzip decoder).
    let all_gz = work.join("http-all.jsonl.gz");
    let rt = crate::load::client_runtime().map_err(|e| e.to_string())?;
    let gz_len = rt.block_on(async {
        let r = reqwest::Client::new()
            .get(format!("{base}/all"))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let b = r.bytes().await.map_err(|e| e.to_string())?;
        std::fs::write(&all_gz, &b).map_err(|e| e.to_string())?;
        Ok::<u64, String>(b.len() as u64)
    })?;
    let file_server = |file: &Path| -> Result<(Proc, u16), String> {
        let fport = free_port();
        let p = Proc(
            Command::new(&me)
                .arg("file-server")
                .arg(file)
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
        Ok((p, fport))
    };
    let (_plain_files, plain_port) = file_server(&all)?;
    let (_gzip_files, gzip_port) = file_server(&all_gz)?;

    let mut load_rss_kb = 0;
    let mut loads = Vec::new();
    for (clients, gzip) in [(CLIENTS, false), (1, false), (1, true), (CLIENTS, true)] {
        let opreg_bps = load(&rt, &format!("{base}/all"), (clients, gzip), dur, || {
            load_rss_kb = load_rss_kb.max(status_kb(pid, "VmRSS:"));
        })?;
        let fport = if gzip { gzip_port } else { plain_port };
        let file_bps = load(
            &rt,
            &format!("http://127.0.0.1:{fport}/all"),
            (clients, gzip),
            dur,
            || {},
        )?;
        loads.push(AllLoad {
            gzip,
            clients,
            opreg_bps,
            file_bps,
        });
    }
    let curl = crate::curl_peer::measure(&format!("{base}/all"), &all, rounds);
    let tls = crate::http_tls::measure(bin, &src, work, &format!("{base}/all"), dur);
    let metas = metas_latency(&base, &all)?;
    let graphql = graphql_latency(&base)?;
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
        gzip_mb: gz_len as f64 / 1e6,
        loads,
        metas,
        curl,
        tls,
        graphql,
        load_rss_kb,
        hwm_kb,
        reload,
    })
}

/// `/metas?package=P` for every package named in `all`, one keep-alive client, one request
/// at a time (after one warm-up round): gzipped (`Accept-Encoding: gzip`, the bytes as sent),
/// and plain.
fn metas_latency(base: &str, all: &Path) -> Result<MetasLatency, String> {
    let text = std::fs::read_to_string(all).map_err(|e| e.to_string())?;
    let packages: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["schema"] == "olm.package")
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    if packages.is_empty() {
        return Err("no olm.package in /all".into());
    }
    let agent = ureq::Agent::new_with_defaults();
    let (mut gzip, mut head, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..2 {
        for p in &packages {
            for coded in [true, false] {
                let url = format!("{base}/metas?package={p}");
                let mut req = agent.get(&url);
                if coded {
                    req = req.header("Accept-Encoding", "gzip");
                }
                let t = Instant::now();
                let resp = req.call().map_err(|e| format!("{url}: {e}"))?;
                let to_head = t.elapsed();
                let body = resp.into_body().read_to_vec().map_err(|e| e.to_string())?;
                let whole = t.elapsed();
                if body.is_empty() {
                    return Err(format!("{url} returned nothing"));
                }
                if round == 0 {
                    continue;
                }
                let n = body.len();
                if coded {
                    gzip.push((whole, p.clone(), n));
                } else {
                    head.push((to_head, p.clone(), n));
                    plain.push((whole, p.clone(), n));
                }
            }
        }
    }
    Ok(MetasLatency {
        gzip: Spread::of(gzip),
        plain_head: Spread::of(head),
        plain: Spread::of(plain),
    })
}

/// The package query a console makes, 20 times after a warm-up: best, median, response size,
/// and whether it holds icon data.
fn graphql_latency(base: &str) -> Result<(Duration, Duration, usize, bool), String> {
    let url = format!("{base}/graphql");
    let query = r#"{"query":"{ olmpackages { name defaultChannel } }"}"#;
    let agent = ureq::Agent::new_with_defaults();
    let mut times = Vec::new();
    let mut last = Vec::new();
    for i in 0..21 {
        let t = Instant::now();
        last = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(query)
            .map_err(|e| format!("{url}: {e}"))?
            .into_body()
            .read_to_vec()
            .map_err(|e| e.to_string())?;
        if i > 0 {
            times.push(t.elapsed());
        }
    }
    times.sort();
    let v: serde_json::Value = serde_json::from_slice(&last).map_err(|e| e.to_string())?;
    let n = v["data"]["olmpackages"].as_array().map_or(0, Vec::len);
    if n == 0 {
        return Err(format!("the GraphQL answer lists no package: {v}"));
    }
    let text = String::from_utf8_lossy(&last);
    let icon = text.contains("base64data") || text.contains("mediatype");
    Ok((times[0], times[times.len() / 2], last.len(), icon))
}

/// The report section.
pub fn section(w: &mut String, name: &str, row: &Result<HttpRow, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## catalogd HTTP API\n\n`{name}` served by `opreg serve DIR --http-port P --watch --no-call-log`. `/api/v1/all` fetched again and again by 1 and by {CLIENTS} concurrent clients (reqwest, HTTP/1.1 keep-alive), plain and with `Accept-Encoding: gzip` (opreg's gzip copy, written once per version; the bytes as sent are counted), next to a trivial file server sending a file of the same bytes (a child process; `std::io::copy`, i.e. sendfile) to the same clients in the same run. `/metas?package=P`: every package of the catalog in turn, one keep-alive client, after a warm-up round, with `Accept-Encoding: gzip` (what Go's HTTP client sends unless told not to; the answer cut from the gzip copy, timed whole as sent) and plain (timed to the response head, and whole: a plain answer of several MB is as fast as loopback carries it). GraphQL: `{{ olmpackages {{ name defaultChannel }} }}` posted 20 times after a warm-up. RSS while serving: opreg's VmRSS sampled every 20 ms during its `/all` loads; peak since start (VmHWM) includes the start-up build. Change → served: the watched file replaced (rename) with one more package, until `/api/v1/metas` returns it (the watch's 300 ms debounce included). Targets: `/all` at least 0.95 × the file server's throughput in each case; `/metas?package=P` under 1 ms for every package, whole when gzipped and to the head when plain; the GraphQL query under 50 ms with no icon bytes (the whole answer timed in both); RSS while serving < 64 MB.\n");
    let r = match row {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(r) => r,
    };
    let met = |ok: bool| if ok { "MET" } else { "NOT MET" };
    let _ = writeln!(w, "| /all | clients | body | opreg | file | opreg ÷ file |");
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    for l in &r.loads {
        let ratio = l.opreg_bps / l.file_bps.max(1.0);
        let _ = writeln!(
            w,
            "| {} | {} | {:.1} MB | {:.0} MB/s | {:.0} MB/s | {ratio:.2} ({}) |",
            if l.gzip { "gzip" } else { "plain" },
            l.clients,
            if l.gzip { r.gzip_mb } else { r.all_mb },
            l.opreg_bps / 1e6,
            l.file_bps / 1e6,
            met(ratio >= 0.95)
        );
    }
    crate::curl_peer::section(w, &r.curl);
    crate::http_tls::section(w, &r.tls);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let m = &r.metas;
    let _ = writeln!(w, "\n| /metas?package=P | median | slowest | target |");
    let _ = writeln!(w, "|---|---|---|---|");
    for (what, spread, target) in [
        ("gzip, whole", &m.gzip, true),
        ("plain, to the head", &m.plain_head, true),
        ("plain, whole", &m.plain, false),
    ] {
        let _ = writeln!(
            w,
            "| {what} | {:.3} ms | {:.3} ms, `{}` ({} bytes) | {} |",
            ms(spread.median),
            ms(spread.slowest),
            spread.which,
            spread.bytes,
            if target {
                format!("< 1 ms ({})", met(ms(spread.slowest) < 1.0))
            } else {
                "report".to_string()
            }
        );
    }
    let (best, gmed, bytes, icon) = r.graphql;
    let rss = r.load_rss_kb as f64 / 1024.0;
    let _ = writeln!(w, "\n| GraphQL packages best / median | answer | RSS while serving | peak RSS since start | change → served |");
    let _ = writeln!(w, "|---|---|---|---|---|");
    let _ = writeln!(
        w,
        "| {:.1} / {:.1} ms ({}) | {bytes} bytes, {} | {rss:.1} MB ({}) | {:.1} MB | {:.2} s |",
        ms(best),
        ms(gmed),
        met(ms(gmed) < 50.0 && !icon),
        if icon {
            "icon data (NOT MET)"
        } else {
            "no icon data"
        },
        met(rss < 64.0),
        r.hwm_kb as f64 / 1024.0,
        r.reload.as_secs_f64()
    );
}
