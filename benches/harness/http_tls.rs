//! `/api/v1/all` over TLS, beside the same client over plain HTTP: opreg serving the same
//! catalog with `--tls-cert/--tls-key` (a self-signed certificate made by openssl), fetched
//! again and again by 1 and by 10 ureq clients (one thread each, keep-alive), then the plain
//! HTTP port of the main run fetched by the same clients. There is no kernel TLS here, so TLS
//! costs user-space encryption and a copy; this is reported, not held to a target.

use crate::http::Proc;
use crate::procs::free_port;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One case: clients, TLS and plain bytes per second (same client).
pub struct TlsLoad {
    pub clients: usize,
    pub tls_bps: f64,
    pub plain_bps: f64,
}

/// Serves `src` over TLS and measures it against `plain_all` (the main run's `/all` URL).
pub fn measure(
    bin: &Path,
    src: &Path,
    work: &Path,
    plain_all: &str,
    dur: Duration,
) -> Result<Vec<TlsLoad>, String> {
    let (cert, key) = (work.join("tls-cert.pem"), work.join("tls-key.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "openssl: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let pem = std::fs::read(&cert).map_err(|e| e.to_string())?;
    let root = ureq::tls::Certificate::from_pem(&pem).map_err(|e| e.to_string())?;
    let (grpc, http) = (free_port(), free_port());
    let _server = Proc(
        Command::new(bin)
            .arg("serve")
            .arg(src)
            .args(["-p", &grpc.to_string(), "--http-port", &http.to_string()])
            .arg("--tls-cert")
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .args(["--no-call-log", "-t", "/dev/null"])
            .env_remove("OPREG_THREADS")
            .env_remove("OPREG_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![root])))
                .build(),
        )
        .max_idle_connections_per_host(16)
        .build()
        .into();
    let ready = format!("https://127.0.0.1:{http}/readyz");
    let t = Instant::now();
    while !matches!(agent.get(&ready).call(), Ok(r) if r.status() == 200) {
        if t.elapsed() > Duration::from_secs(600) {
            return Err(format!("{ready} did not answer 200 within 600 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tls_all = format!("https://127.0.0.1:{http}/catalogs/catalog/api/v1/all");
    let mut rows = Vec::new();
    for clients in [1, 10] {
        let tls_bps = load(&agent, &tls_all, clients, dur)?;
        let plain_bps = load(&agent, plain_all, clients, dur)?;
        rows.push(TlsLoad {
            clients,
            tls_bps,
            plain_bps,
        });
    }
    Ok(rows)
}

/// `clients` threads GET `url` again and again for `dur`; body bytes per second.
fn load(agent: &ureq::Agent, url: &str, clients: usize, dur: Duration) -> Result<f64, String> {
    let bytes = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (agent, url) = (agent.clone(), url.to_string());
            let (bytes, stop) = (bytes.clone(), stop.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut buf = vec![0u8; 1 << 16];
                while !stop.load(Ordering::Relaxed) {
                    let resp = agent.get(&url).call().map_err(|e| format!("{url}: {e}"))?;
                    let mut body = resp.into_body();
                    let mut r = body.as_reader();
                    loop {
                        match std::io::Read::read(&mut r, &mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                bytes.fetch_add(n as u64, Ordering::Relaxed);
                            }
                            Err(e) => return Err(format!("{url}: {e}")),
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    while start.elapsed() < dur {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed();
    // Bytes are counted up to the stop; requests still running finish unmeasured.
    let total = bytes.load(Ordering::Relaxed);
    for t in threads {
        t.join()
            .map_err(|_| "a client thread panicked".to_string())??;
    }
    Ok(total as f64 / elapsed.as_secs_f64())
}

/// The report's table (under the `/all` table of the HTTP section).
pub fn section(w: &mut String, rows: &Result<Vec<TlsLoad>, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n`/all` over TLS (`--tls-cert`, ECDSA P-256, rustls; no kernel TLS), beside plain HTTP fetched by the same client (ureq, one thread per client, keep-alive); reported, no target:\n");
    let rows = match rows {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(r) => r,
    };
    let _ = writeln!(w, "| clients | TLS | plain HTTP | TLS ÷ plain |");
    let _ = writeln!(w, "|---|---|---|---|");
    for r in rows {
        let _ = writeln!(
            w,
            "| {} | {:.0} MB/s | {:.0} MB/s | {:.2} |",
            r.clients,
            r.tls_bps / 1e6,
            r.plain_bps / 1e6,
            r.tls_bps / r.plain_bps.max(1.0)
        );
    }
}
