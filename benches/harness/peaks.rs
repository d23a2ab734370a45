//! Build peaks: one build path whoever runs it. The peak RSS of `opreg ingest SRC`, of
//! `opreg serve SRC --cache-only` (the same build, from a server's start-up), and of a
//! `--watch` reload above the serving baseline; the serve and reload peaks are held to
//! ingest's (within 10 %). And serving a built database with the HTTP port (catalogd's files
//! written at start-up and at every reload): its peaks at start-up and when a reload swaps in
//! another built database, held under 25 MB.

use crate::measure::{mb, median};
use crate::procs::{free_port, run_child, status_kb, Server};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Peaks {
    /// Peak RSS of each run, KiB.
    pub ingest_kb: Vec<u64>,
    pub cache_only_kb: Vec<u64>,
    /// Each reload's peak RSS less the RSS served just before it, KiB.
    pub reload_above_kb: Vec<u64>,
    /// The serving RSS before the first reload, KiB.
    pub baseline_kb: u64,
    /// `serve DB --http-port --watch`: peak RSS at start-up, and at a reload to another
    /// built database (the peak reset just before), KiB.
    pub http_start_kb: Vec<u64>,
    pub http_reload_kb: Vec<u64>,
}

/// The limit on both peaks of serving a built database with the HTTP port, MB (KiB / 1024).
const HTTP_DB_LIMIT_MB: f64 = 25.0;

/// Measures `runs` of each on `src`, a catalog file, working in `work`.
pub fn measure(bin: &Path, src: &Path, work: &Path, runs: usize) -> Result<Peaks, String> {
    let dir = work.join("peaks");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let errf = dir.join("child.stderr");
    let mut p = Peaks {
        ingest_kb: Vec::new(),
        cache_only_kb: Vec::new(),
        reload_above_kb: Vec::new(),
        baseline_kb: 0,
        http_start_kb: Vec::new(),
        http_reload_kb: Vec::new(),
    };
    // Alternated, so that a drift in the machine's state touches both alike.
    for _ in 0..runs {
        let db = dir.join("ingest.db");
        let _ = std::fs::remove_file(&db);
        let st = run_child(
            Command::new(bin)
                .arg("ingest")
                .arg(src)
                .arg("-o")
                .arg(&db)
                .arg("-q"),
            &errf,
        )?;
        p.ingest_kb.push(st.maxrss_kb);
        let cache = dir.join("cache");
        let _ = std::fs::remove_dir_all(&cache);
        let st = run_child(
            Command::new(bin)
                .arg("serve")
                .arg(src)
                .arg("--cache-dir")
                .arg(&cache)
                .args(["--cache-only", "-t", "/dev/null"])
                .env_remove("OPREG_LOG"),
            &errf,
        )?;
        p.cache_only_kb.push(st.maxrss_kb);
    }
    reloads(bin, src, &dir, runs, &mut p)?;
    http_db(bin, src, &dir, runs, &mut p)?;
    Ok(p)
}

/// `runs` times: serves a built database of `src` with the HTTP port, watched; reads the
/// start-up peak; resets it and swaps in another built database (`src` and one more package)
/// by a rename; reads the peak once the reload serves.
fn http_db(bin: &Path, src: &Path, dir: &Path, runs: usize, p: &mut Peaks) -> Result<(), String> {
    let errf = dir.join("child.stderr");
    let ingest = |from: &Path, to: &Path| {
        let _ = std::fs::remove_file(to);
        run_child(
            Command::new(bin)
                .arg("ingest")
                .arg(from)
                .arg("-o")
                .arg(to)
                .arg("-q"),
            &errf,
        )
    };
    let (a, b) = (dir.join("http-a.db"), dir.join("http-b.db"));
    ingest(src, &a)?;
    let mut more = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    more.extend_from_slice(probe(1).as_bytes());
    let more_src = dir.join("http-more.json");
    std::fs::write(&more_src, &more).map_err(|e| e.to_string())?;
    drop(more);
    ingest(&more_src, &b)?;
    let served = dir.join("http-served");
    // As many start-ups as the issue measured (one in a smoke run).
    for _ in 0..if runs > 1 { HTTP_RUNS } else { 1 } {
        let _ = std::fs::remove_dir_all(&served);
        std::fs::create_dir_all(&served).map_err(|e| e.to_string())?;
        let db = served.join("catalog.db");
        std::fs::copy(&a, &db).map_err(|e| e.to_string())?;
        let (port, http) = (free_port(), free_port());
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg(&db)
            .args(["--watch", "--no-call-log", "-t", "/dev/null"])
            .args(["-p", &port.to_string(), "--http-port", &http.to_string()])
            .env_remove("OPREG_LOG");
        let mut s = Server::spawn_command(cmd, port, &dir.join("http-serve.log"));
        p.http_start_kb.push(start_peak(&mut s)?);
        std::fs::write(format!("/proc/{}/clear_refs", s.pid()), "5")
            .map_err(|e| format!("cannot reset the peak RSS: {e}"))?;
        let tmp = served.join(".catalog.db.new");
        std::fs::copy(&b, &tmp).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &db).map_err(|e| e.to_string())?;
        if !wait_reloads(&s, 1) {
            return Err(format!(
                "the reload to another database was not seen: {}",
                s.log_text()
            ));
        }
        p.http_reload_kb.push(status_kb(s.pid(), "VmHWM:"));
        s.interrupt();
    }
    Ok(())
}

/// The start-up peak of a server just spawned, as the issue measured it: VmHWM read every
/// 50 ms over its first 4 s, and on until 2 s after its version is built should that take
/// longer here.
fn start_peak(s: &mut Server) -> Result<u64, String> {
    let mut peak = 0;
    let mut built: Option<Instant> = None;
    loop {
        peak = peak.max(status_kb(s.pid(), "VmHWM:"));
        if built.is_none() && s.log_text().contains("catalog built") {
            built = Some(Instant::now());
        }
        let settled = built.is_some_and(|t| t.elapsed() >= Duration::from_secs(2));
        let in_window = built.is_some_and(|t| t < s.started + START_WINDOW);
        if s.started.elapsed() >= START_WINDOW && (settled || in_window) {
            return Ok(peak);
        }
        if s.started.elapsed() > Duration::from_secs(300) || s.exited() {
            return Err(format!(
                "serve DB --http-port did not start: {}",
                s.log_text()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start-ups of `serve DB --http-port` measured.
const HTTP_RUNS: usize = 5;

/// How long the start-up peak is watched at least.
const START_WINDOW: Duration = Duration::from_secs(4);

/// Serves a watched copy of `src`, then replaces it `runs` times with one more package each
/// time; each reload's peak is the process's VmHWM, reset to the current RSS just before
/// (`/proc/PID/clear_refs`, value 5).
fn reloads(bin: &Path, src: &Path, dir: &Path, runs: usize, p: &mut Peaks) -> Result<(), String> {
    let watched = dir.join("watched");
    std::fs::create_dir_all(&watched).map_err(|e| e.to_string())?;
    let base = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let file = watched.join("catalog.json");
    std::fs::write(&file, &base).map_err(|e| e.to_string())?;
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .arg(&watched)
        .args(["--watch", "--no-call-log", "-t", "/dev/null"])
        .args(["-p", &port.to_string()])
        .env_remove("OPREG_LOG");
    let mut s = Server::spawn_command(cmd, port, &dir.join("serve.log"));
    if !s.wait_log("catalog built", Duration::from_secs(300)) {
        return Err(format!("serve --watch did not start: {}", s.log_text()));
    }
    settle();
    p.baseline_kb = s.rss_kb();
    for n in 1..=runs {
        let before = s.rss_kb();
        std::fs::write(format!("/proc/{}/clear_refs", s.pid()), "5")
            .map_err(|e| format!("cannot reset the peak RSS: {e}"))?;
        let mut next = base.clone();
        for i in 1..=n {
            next.extend_from_slice(probe(i).as_bytes());
        }
        let tmp = watched.join(".catalog.json.new");
        std::fs::write(&tmp, &next).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &file).map_err(|e| e.to_string())?;
        if !wait_reloads(&s, n) {
            return Err(format!("reload {n} not seen: {}", s.log_text()));
        }
        p.reload_above_kb
            .push(status_kb(s.pid(), "VmHWM:").saturating_sub(before));
        settle();
    }
    Ok(())
}

fn settle() {
    std::thread::sleep(Duration::from_secs(2));
}

fn wait_reloads(s: &Server, n: usize) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(300);
    while std::time::Instant::now() < end {
        if s.log_text()
            .matches("reloaded: serving the new version")
            .count()
            >= n
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// One more package, valid on its own.
fn probe(i: usize) -> String {
    let name = format!("bench-peaks-probe-{i}");
    format!(
        "\n{{\"schema\":\"olm.package\",\"name\":\"{name}\",\"defaultChannel\":\"stable\"}}\n\
         {{\"schema\":\"olm.channel\",\"package\":\"{name}\",\"name\":\"stable\",\"entries\":[{{\"name\":\"{name}.v1.0.0\"}}]}}\n\
         {{\"schema\":\"olm.bundle\",\"package\":\"{name}\",\"name\":\"{name}.v1.0.0\",\"image\":\"example.com/probe:1\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"{name}\",\"version\":\"1.0.0\"}}}}]}}\n"
    )
}

/// The report section.
pub fn section(w: &mut String, name: &str, peaks: &Result<Peaks, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n## Build peaks\n\n`{name}`: the peak RSS (VmHWM, sampled every 2 ms) of `opreg ingest SRC -o DB`, of `opreg serve SRC --cache-dir D --cache-only` (the same build, run by the server's start-up, then exit) and of a `opreg serve DIR --watch` reload, above the RSS served just before it (the peak reset through `/proc/PID/clear_refs` before each change; the watched file replaced with one more package each time). Medians of the runs, alternating ingest and serve. Target: both within 10 % of ingest's.\n");
    let p = match peaks {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(p) => p,
    };
    let med = |v: &[u64]| median(&v.iter().map(|&k| k as f64).collect::<Vec<_>>());
    let ingest = med(&p.ingest_kb);
    let runs = |v: &[u64]| {
        v.iter()
            .map(|&k| format!("{:.1}", mb(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(w, "| build | runs (MB) | median | ÷ ingest | limit | met |");
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    let _ = writeln!(
        w,
        "| `ingest` | {} | {:.1} MB | 1.00 | | |",
        runs(&p.ingest_kb),
        ingest / 1024.0
    );
    for (what, v) in [
        ("`serve --cache-only`", &p.cache_only_kb),
        (
            "`--watch` reload, above the serving baseline",
            &p.reload_above_kb,
        ),
    ] {
        let m = med(v);
        let ratio = m / ingest.max(1.0);
        let _ = writeln!(
            w,
            "| {what} | {} | {:.1} MB | {ratio:.2} | 1.10 | {} |",
            runs(v),
            m / 1024.0,
            if ratio <= 1.10 { "MET" } else { "NOT MET" }
        );
    }
    let _ = writeln!(
        w,
        "\nServing baseline before the first reload: {:.1} MB.",
        mb(p.baseline_kb)
    );
    let _ = writeln!(w, "\nServing the built database of `{name}` with the HTTP port (`opreg serve DB --http-port P --watch`, which writes catalogd's files for `/api/v1/all` at start-up and at every reload): the peak RSS (VmHWM) at start-up, read every 50 ms over its first 4 s (on until 2 s after its version is built, should that take longer), {} start(s), and at a reload that swaps in another built database (the same catalog and one more package, renamed over the served file; the peak reset just before). Limit: {HTTP_DB_LIMIT_MB:.0} MB each.\n", p.http_start_kb.len());
    let _ = writeln!(
        w,
        "| serving a built database | runs (MB) | median | limit | met |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|");
    for (what, v) in [
        ("start-up", &p.http_start_kb),
        ("reload to another database", &p.http_reload_kb),
    ] {
        let m = med(v) / 1024.0;
        let _ = writeln!(
            w,
            "| {what} | {} | {m:.1} MB | {HTTP_DB_LIMIT_MB:.0} MB | {} |",
            runs(v),
            if m < HTTP_DB_LIMIT_MB {
                "MET"
            } else {
                "NOT MET"
            }
        );
    }
}
