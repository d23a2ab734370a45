//! Single measurements the suite and `probe` share: one unary load point against a server
//! (`probe`, for profiling), the serde_json parse floor (`floor-parse`), the request keys read
//! from a built database, `opreg upgrade`'s timing, and small helpers (median, sizes, digests).

use super::*;

/// The ingest floor: read the file and decode every JSON document, building nothing else.
pub fn floor_parse(file: &Path) {
    let bytes = std::fs::read(file).expect("read");
    let mut n = 0usize;
    for v in serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>() {
        let v = v.expect("valid JSON");
        std::hint::black_box(&v);
        n += 1;
    }
    assert!(n > 0, "no documents");
    println!("{n}");
}

pub fn probe(
    db: &Path,
    rpc: &str,
    callers: usize,
    duration: f64,
    threads: Option<usize>,
    perf: Option<&Path>,
) {
    let list_bundles = rpc == "ListBundles";
    let rpc = match rpc {
        "Empty" | "empty" => Rpc::Empty,
        "GetPackage" => Rpc::GetPackage,
        "GetBundleThatReplaces" => Rpc::GetBundleThatReplaces,
        "GetBundle" => Rpc::GetBundle,
        "GetBundleForChannel" => Rpc::GetBundleForChannel,
        "GetDefaultBundleThatProvides" => Rpc::GetDefaultBundleThatProvides,
        "ListBundles" => Rpc::Empty, // streamed five times below instead
        other => panic!("unknown RPC {other}: Empty, GetPackage, GetBundle, GetBundleForChannel, GetBundleThatReplaces, GetDefaultBundleThatProvides or ListBundles (five whole streams)"),
    };
    let bin = procs::opreg_bin();
    let log = std::env::temp_dir().join("opreg-probe.log");
    let mut s = match perf {
        Some(out) => Server::spawn_wrapped(
            &[
                "perf",
                "record",
                "--call-graph",
                "dwarf,32768",
                "-F",
                "499",
                "-o",
                &out.to_string_lossy(),
                "--",
            ],
            &bin,
            db,
            threads,
            &log,
        ),
        None => Server::spawn(&bin, db, threads, &log),
    };
    let rt = load::client_runtime().expect("client runtime");
    let t = rt
        .block_on(load::wait_serving(&mut s, Duration::from_secs(60)))
        .unwrap_or_else(|e| panic!("{e}"));
    s.wait_log("integrity check passed", Duration::from_secs(120));
    eprintln!(
        "SERVING after {t:.1?}; server pid {}; RSS {:.1} MB",
        s.pid(),
        mb(s.rss_kb())
    );
    if list_bundles {
        for _ in 0..5 {
            let l = rt.block_on(load::list_bundles(&s));
            eprintln!(
                "ListBundles: {} messages in {:.3} s, server RSS peak {:.1} MB",
                l.msgs,
                l.secs,
                mb(l.rss_peak_kb)
            );
        }
        s.interrupt();
        return;
    }
    let keys = Arc::new(read_keys(db));
    let st = rt.block_on(load::unary(
        &s,
        rpc,
        callers,
        keys,
        Duration::from_millis(300),
        Duration::from_secs_f64(duration),
    ));
    eprintln!(
        "{} x{callers}: {:.0}/s p50 {:.3} ms p99 {:.3} ms server CPU {:.0} µs/call client CPU {:.0} µs/call; RSS after {:.1} MB (peak {:.1} MB)",
        rpc.label(),
        st.rps,
        st.p50_us / 1e3,
        st.p99_us / 1e3,
        st.server_cpu_us,
        st.client_cpu_us,
        mb(s.rss_kb()),
        mb(s.hwm_kb())
    );
    if let Some(secs) = std::env::var("HARNESS_IDLE_AFTER")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_secs(secs));
        eprintln!("RSS {secs} s after the load: {:.1} MB", mb(s.rss_kb()));
    }
    if std::env::var_os("HARNESS_SMAPS").is_some() {
        eprintln!(
            "{}",
            std::fs::read_to_string(format!("/proc/{}/smaps_rollup", s.pid())).unwrap_or_default()
        );
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!("grep -E '^[0-9a-f]+-|^Rss' /proc/{}/smaps | paste - - | sort -k3 -n -r -t: | head -15", s.pid()))
            .status();
    }
    s.interrupt();
}

pub fn read_keys(db: &Path) -> Keys {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open db");
    let packages: Vec<String> = c
        .prepare("SELECT name FROM package ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let all: Vec<(String, String, String)> = c
        .prepare(
            "SELECT DISTINCT package, channel, to_bundle FROM edge
             WHERE kind IN ('replaces', 'skips') AND synthetic = 0
             ORDER BY package, channel, to_bundle",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // A deterministic spread of at most 4096 keys.
    let step = all.len().div_ceil(4096).max(1);
    let replaced = all.into_iter().step_by(step).collect();
    let mut keys = Keys {
        packages,
        replaced,
        entries: Vec::new(),
        channels: Vec::new(),
        gvks: Vec::new(),
    };
    floor::read_bundle_keys(&c, &mut keys);
    keys
}

pub struct Upgrade {
    pub package: String,
    pub bundles: i64,
    pub channel: String,
    pub from: String,
    pub hops: usize,
    pub classic_ms: f64,
    pub v1_ms: f64,
}

pub fn measure_upgrade(bin: &Path, db: &Path, errf: &Path, runs: usize) -> Option<Upgrade> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .ok()?;
    let (package, bundles): (String, i64) = c
        .query_row(
            "SELECT package, COUNT(*) FROM bundle GROUP BY package ORDER BY 2 DESC, 1 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()?;
    let channel: String = c
        .query_row(
            "SELECT default_channel FROM package WHERE name = ?1",
            [&package],
            |r| r.get(0),
        )
        .ok()?;
    let from: String = c
        .query_row(
            "SELECT bundle FROM channel_entry WHERE package = ?1 AND channel = ?2
             ORDER BY position DESC, bundle LIMIT 1",
            [&package, &channel],
            |r| r.get(0),
        )
        .ok()?;
    let time = |semantics: &str| -> f64 {
        let v: Vec<f64> = (0..runs)
            .map(|_| {
                procs::run_child(
                    Command::new(bin).arg("upgrade").arg(db).args([
                        "-p",
                        &package,
                        "--from",
                        &from,
                        "--semantics",
                        semantics,
                        "-o",
                        "json",
                    ]),
                    errf,
                )
                .unwrap_or_else(|e| panic!("upgrade: {e}"))
                .wall
                .as_secs_f64()
                    * 1e3
            })
            .collect();
        median(&v)
    };
    let out = Command::new(bin)
        .arg("upgrade")
        .arg(db)
        .args(["-p", &package, "--from", &from, "-o", "json"])
        .output()
        .ok()?;
    let hops = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.get("path").and_then(|p| p.as_array()).map(|p| p.len()))
        .unwrap_or(0);
    Some(Upgrade {
        classic_ms: time("classic"),
        v1_ms: time("v1"),
        package,
        bundles,
        channel,
        from,
        hops,
    })
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

pub fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

pub fn file_mb(p: &Path) -> f64 {
    std::fs::metadata(p)
        .map(|m| m.len() as f64 / 1e6)
        .unwrap_or(0.0)
}

pub fn sha256_file(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).expect("open");
    std::io::copy(&mut f, &mut h).expect("hash");
    format!("{:x}", h.finalize())
}
