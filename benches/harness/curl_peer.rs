//! `/api/v1/all` against the shared `sendfile` peer, with curl processes as the clients: the
//! measurement of the issue "What a new user hit". 10 `curl` processes at once, each
//! downloading the body 3 times over one keep-alive connection (`curl URL -o /dev/null`, three
//! times in one command line), timed from the first spawn to the last exit; opreg's `/all` and
//! `../shared/bench/sendfile_server.py` (used as it is, so that figures compare across runs)
//! serving a file of the same bytes, alternately, 3 rounds, the best round of each counting.
//! Unlike the reqwest load of `http.rs`, whose client shares the harness process, every
//! download here costs a process of its own on the shared cores, as a user's clients do.

use crate::http::Proc;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Concurrent curl processes.
pub const CLIENTS: usize = 10;
/// Downloads per curl process, over one connection.
pub const DOWNLOADS: usize = 3;
/// Ratio of the peer's best time to opreg's that the target asks for.
pub const TARGET: f64 = 0.95;

/// Each side's round times (opreg, peer, alternately measured) and the body size.
pub struct CurlRow {
    pub bytes: u64,
    pub opreg: Vec<Duration>,
    pub peer: Vec<Duration>,
}

impl CurlRow {
    pub fn best(v: &[Duration]) -> Duration {
        v.iter().copied().min().unwrap_or_default()
    }
    /// opreg's throughput over the peer's: the peer's best time over opreg's.
    pub fn ratio(&self) -> f64 {
        Self::best(&self.peer).as_secs_f64() / Self::best(&self.opreg).as_secs_f64().max(1e-9)
    }
}

/// The peer script, beside this repository.
fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/sendfile_server.py")
}

/// Starts the peer on `file`; it prints its port first.
fn start_peer(file: &Path) -> Result<(Proc, u16), String> {
    let script = peer_script();
    if !script.is_file() {
        return Err(format!("no peer at {}", script.display()));
    }
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("python3 {}: {e}", script.display()))?;
    let out = child.stdout.take().ok_or("no stdout from the peer")?;
    let proc = Proc(child);
    let mut line = String::new();
    std::io::BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let port = line
        .trim()
        .parse()
        .map_err(|_| format!("the peer printed {line:?}, not a port"))?;
    Ok((proc, port))
}

/// One round: [`CLIENTS`] curl processes, each [`DOWNLOADS`] downloads of `url`; the wall
/// time, and a check that every download was whole.
fn round(url: &str, size: u64) -> Result<Duration, String> {
    let t = Instant::now();
    let children: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let mut c = Command::new("curl");
            c.args(["-s", "--fail", "-w", "%{size_download}\\n"]);
            for _ in 0..DOWNLOADS {
                c.args([url, "-o", "/dev/null"]);
            }
            c.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("curl: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut outs = Vec::new();
    for c in children {
        outs.push(c.wait_with_output().map_err(|e| e.to_string())?);
    }
    let took = t.elapsed();
    for o in outs {
        let sizes = String::from_utf8_lossy(&o.stdout);
        let whole = sizes
            .lines()
            .filter(|l| l.trim() == size.to_string())
            .count();
        if !o.status.success() || whole != DOWNLOADS {
            return Err(format!(
                "curl {url}: {} ({sizes:?} bytes; {})",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
    }
    Ok(took)
}

/// Measures opreg's `/all` at `url` against the peer serving `file` (the same bytes),
/// alternately, `rounds` rounds each.
pub fn measure(url: &str, file: &Path, rounds: usize) -> Result<CurlRow, String> {
    Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("curl: {e}"))?;
    let bytes = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    let (_peer, port) = start_peer(file)?;
    let peer_url = format!("http://127.0.0.1:{port}/all");
    let mut row = CurlRow {
        bytes,
        opreg: Vec::new(),
        peer: Vec::new(),
    };
    // A warm-up download of each, so that neither round 1 pays for a cold cache.
    for u in [url, peer_url.as_str()] {
        let ok = Command::new("curl")
            .args(["-s", "--fail", u, "-o", "/dev/null"])
            .status()
            .map_err(|e| e.to_string())?;
        if !ok.success() {
            return Err(format!("curl {u}: {ok}"));
        }
    }
    for _ in 0..rounds.max(1) {
        row.opreg.push(round(url, bytes)?);
        row.peer.push(round(&peer_url, bytes)?);
    }
    Ok(row)
}

/// The table, under the catalogd HTTP API section.
pub fn section(w: &mut String, row: &Result<CurlRow, String>) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "\n`/all` against the issue's peer: `../shared/bench/sendfile_server.py` (Python, `sendfile`, one thread per connection) serving a file of the same bytes, and opreg's plain HTTP port, each downloaded by {CLIENTS} `curl` processes at once, {DOWNLOADS} downloads each over one keep-alive connection; wall time from the first spawn to the last exit, the two alternately, best of the rounds. Target: opreg's throughput at least {TARGET} × the peer's.\n");
    let r = match row {
        Err(e) => {
            let _ = writeln!(w, "Not measured: {e}");
            return;
        }
        Ok(r) => r,
    };
    let secs = |v: &[Duration]| {
        v.iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ratio = r.ratio();
    let _ = writeln!(
        w,
        "| /all, curl × {CLIENTS} × {DOWNLOADS} | body | opreg rounds (s) | peer rounds (s) | opreg best | peer best | peer ÷ opreg |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        w,
        "| plain | {:.1} MB | {} | {} | {:.2} s | {:.2} s | {ratio:.2} ({}) |",
        r.bytes as f64 / 1e6,
        secs(&r.opreg),
        secs(&r.peer),
        CurlRow::best(&r.opreg).as_secs_f64(),
        CurlRow::best(&r.peer).as_secs_f64(),
        if ratio >= TARGET { "MET" } else { "NOT MET" }
    );
}
