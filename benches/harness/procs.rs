//! Child processes: wall time, CPU time (wait4) and peak RSS (its own VmHWM) of a finished
//! child, the serving process's current and peak RSS and CPU time (/proc), and this process's
//! own CPU time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished child cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChildStats {
    pub wall: Duration,
    /// Peak resident set, KiB: the child's VmHWM, read every 2 ms while it runs. Not
    /// `ru_maxrss`: Linux counts in it the peak of the address space the child was spawned
    /// from, i.e. this harness's own (every child read 124 MB once the harness held that).
    pub maxrss_kb: u64,
    pub cpu: Duration,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000)
}

/// Runs `cmd` to completion with stdout discarded and stderr kept in `stderr_file`; fails
/// with the tail of stderr unless it exits 0.
pub fn run_child(cmd: &mut Command, stderr_file: &Path) -> Result<ChildStats, String> {
    let err = File::create(stderr_file).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child, which std has not reaped.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut hwm_kb = 0;
    let wall = loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break t.elapsed();
        }
        if r != 0 {
            return Err(format!("wait4: {}", std::io::Error::last_os_error()));
        }
        hwm_kb = hwm_kb.max(status_kb(pid as u32, "VmHWM"));
        std::thread::sleep(Duration::from_millis(2));
    };
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let text = std::fs::read_to_string(stderr_file).unwrap_or_default();
        let tail: String = text
            .chars()
            .rev()
            .take(2000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!("{cmd:?} failed ({status:#x}): {tail}"));
    }
    Ok(ChildStats {
        wall,
        maxrss_kb: hwm_kb,
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
    })
}

/// This process's CPU time (all threads).
pub fn self_cpu() -> Duration {
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

pub fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// A running `opreg serve`, killed on drop.
/// The `opreg` binary every measurement runs: the one built with the harness, or the one named
/// by `OPREG_BENCH_BIN` (to measure another build, e.g. an older commit's, with the same client).
pub fn opreg_bin() -> PathBuf {
    std::env::var_os("OPREG_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_opreg")))
}

pub struct Server {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    pub started: Instant,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Server {
    /// Starts `opreg serve DB` on a free port; `threads` sets `--threads`.
    pub fn spawn(bin: &Path, db: &Path, threads: Option<usize>, log: &Path) -> Server {
        Self::spawn_wrapped(&[], bin, db, threads, log)
    }

    /// Like [`Server::spawn`], under a wrapper command (e.g. `perf record -g --`).
    pub fn spawn_wrapped(
        wrapper: &[&str],
        bin: &Path,
        db: &Path,
        threads: Option<usize>,
        log: &Path,
    ) -> Server {
        let port = free_port();
        let mut cmd = match wrapper.split_first() {
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("serve")
            .arg(db)
            .args(["-p", &port.to_string(), "-t", "/dev/null"])
            .env_remove("OPREG_THREADS")
            .env_remove("OPREG_LOG");
        if let Some(n) = threads {
            cmd.args(["--threads", &n.to_string()]);
        }
        Self::spawn_command(cmd, port, log)
    }

    /// Starts `cmd`, a server that listens on `port`, with its stderr in `log`.
    pub fn spawn_command(mut cmd: Command, port: u16, log: &Path) -> Server {
        let err = File::create(log).expect("server log file");
        let started = Instant::now();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("spawn a server");
        Server {
            child,
            port,
            log: log.to_path_buf(),
            started,
        }
    }
    pub fn addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn rss_kb(&self) -> u64 {
        status_kb(self.pid(), "VmRSS:")
    }
    /// Peak RSS since start (VmHWM).
    pub fn hwm_kb(&self) -> u64 {
        status_kb(self.pid(), "VmHWM:")
    }
    /// User + system CPU time of the server so far.
    pub fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Duration::from_nanos(ticks * 1_000_000_000 / hz)
    }
    /// Waits until the server's log contains `needle`; false on timeout or exit.
    pub fn wait_log(&mut self, needle: &str, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if std::fs::read_to_string(&self.log)
                .map(|s| s.contains(needle))
                .unwrap_or(false)
            {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
    /// Whether the server has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
    /// SIGINT, then wait for exit (a wrapper such as perf writes its output).
    pub fn interrupt(&mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our live child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let _ = self.child.wait();
    }

    /// The log so far (for error messages).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `elapsed_ms=N` from the log line containing `needle`.
pub fn parse_elapsed(log: &str, needle: &str) -> Option<f64> {
    let log = strip_ansi(log);
    let line = log.lines().find(|l| l.contains(needle))?;
    let at = line.find("elapsed_ms")?;
    let digits: String = line[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// Drops ANSI colour sequences (`ESC [ ... m`), which the server's text log may contain.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
